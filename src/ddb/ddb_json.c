/* ddb_json: items to and from DynamoDB's JSON (AttributeValues, B as
 * base64, maps kept as JSON), so that cJSON stays inside src/ddb and
 * src/aws. No shared state; an item belongs to the thread that holds it. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

static const char b64_chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* malloc'd NUL-terminated text, or NULL. */
static char *b64_encode(const unsigned char *in, size_t len)
{
	size_t out_len, i, o = 0;
	char *out;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out_len = (len + 2) / 3 * 4;
	out = malloc(out_len + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];

		out[o++] = b64_chars[v >> 18];
		out[o++] = b64_chars[(v >> 12) & 63];
		out[o++] = b64_chars[(v >> 6) & 63];
		out[o++] = b64_chars[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = b64_chars[v >> 18];
		out[o++] = b64_chars[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64_chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Strict decoding: length a multiple of 4, padding only at the end, unused
 * bits zero. *out is malloc'd with a NUL after *out_len bytes. */
static int b64_decode(const char *in, size_t len, unsigned char **out,
		      size_t *out_len)
{
	size_t pad = 0, n, i, o = 0;
	unsigned char *buf;

	if (len % 4)
		return -EINVAL;
	if (len && in[len - 1] == '=')
		pad = len >= 2 && in[len - 2] == '=' ? 2 : 1;
	n = len / 4 * 3 - pad;
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int v[4], k;
		uint32_t w = 0;

		for (k = 0; k < 4; k++) {
			v[k] = b64_value(in[i + k]);
			if (v[k] < 0) {
				if (in[i + k] != '=' || !last ||
				    k < 4 - (int)pad)
					goto bad;
				v[k] = 0;
			}
			w = w << 6 | (uint32_t)v[k];
		}
		buf[o++] = (unsigned char)(w >> 16);
		if (!last || pad < 2)
			buf[o++] = (unsigned char)(w >> 8);
		if (!last || pad < 1)
			buf[o++] = (unsigned char)w;
		if (last &&
		    ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff))))
			goto bad;
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}

/* ---- items <-> JSON ------------------------------------------------- */

static cJSON *attr_to_json(const struct ddb_attr *a)
{
	cJSON *v, *inner = NULL;
	char *b64;

	if (a->type == DDB_T_OTHER)
		return cJSON_Duplicate(a->other, 1);
	v = cJSON_CreateObject();
	if (!v)
		return NULL;
	switch (a->type) {
	case DDB_T_S:
		inner = cJSON_AddStringToObject(v, "S", a->text);
		break;
	case DDB_T_N:
		inner = cJSON_AddStringToObject(v, "N", a->text);
		break;
	case DDB_T_B:
		b64 = b64_encode((const unsigned char *)a->text, a->len);
		if (b64)
			inner = cJSON_AddStringToObject(v, "B", b64);
		free(b64);
		break;
	case DDB_T_BOOL:
		inner = cJSON_AddBoolToObject(v, "BOOL", a->flag);
		break;
	case DDB_T_NULL:
		inner = cJSON_AddTrueToObject(v, "NULL");
		break;
	default:
		break;
	}
	if (!inner) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* A JSON object {"name": AttributeValue, ...}, or NULL on ENOMEM. */
cJSON *ddb_json_from_item(const struct ddb_item *it)
{
	cJSON *obj = cJSON_CreateObject();
	size_t i;

	if (!obj)
		return NULL;
	for (i = 0; it && i < it->n; i++) {
		cJSON *v = attr_to_json(&it->attrs[i]);

		if (!v || !cJSON_AddItemToObject(obj, it->attrs[i].name, v)) {
			cJSON_Delete(v);
			cJSON_Delete(obj);
			return NULL;
		}
	}
	return obj;
}

/* One AttributeValue ({"S": "x"} and friends) into *a (name not set).
 * -EPROTO when the shape is wrong, -ENOMEM. */
static int attr_from_json(const cJSON *v, struct ddb_attr *a)
{
	const cJSON *t;
	const char *s;
	size_t len;
	struct ddb_num p;

	if (!cJSON_IsObject(v) || !v->child || v->child->next ||
	    !v->child->string)
		return -EPROTO;
	t = v->child;
	if (!strcmp(t->string, "S") || !strcmp(t->string, "N") ||
	    !strcmp(t->string, "B")) {
		if (!cJSON_IsString(t) || !t->valuestring)
			return -EPROTO;
		s = t->valuestring;
		len = strlen(s);
	} else {
		s = NULL;
		len = 0;
	}
	if (!strcmp(t->string, "S")) {
		if (!text_utf8_valid(s, len))
			return -EPROTO;
		a->type = DDB_T_S;
	} else if (!strcmp(t->string, "N")) {
		if (ddb_num_parse(s, len, &p))
			return -EPROTO;
		a->type = DDB_T_N;
	} else if (!strcmp(t->string, "B")) {
		unsigned char *bytes;
		int rc = b64_decode(s, len, &bytes, &a->len);

		if (rc)
			return rc == -ENOMEM ? rc : -EPROTO;
		a->type = DDB_T_B;
		a->text = (char *)bytes;
		return 0;
	} else if (!strcmp(t->string, "BOOL")) {
		if (!cJSON_IsBool(t))
			return -EPROTO;
		a->type = DDB_T_BOOL;
		a->flag = cJSON_IsTrue(t);
		return 0;
	} else if (!strcmp(t->string, "NULL")) {
		if (!cJSON_IsTrue(t))
			return -EPROTO;
		a->type = DDB_T_NULL;
		return 0;
	} else {
		/* SS, NS, BS, L, M, or a type newer than this code: kept
		 * as JSON so that it can be written back unchanged. */
		a->type = DDB_T_OTHER;
		a->other = cJSON_Duplicate(v, 1);
		return a->other ? 0 : -ENOMEM;
	}
	a->text = malloc(len + 1);
	if (!a->text)
		return -ENOMEM;
	memcpy(a->text, s, len + 1);
	a->len = len;
	return 0;
}

static int cmp_attr_seq(const void *x, const void *y)
{
	const struct ddb_attr *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* An item from a JSON object of AttributeValues. A repeated name keeps its
 * last value (as JSON parsers usually do). */
int ddb_json_to_item(const cJSON *obj, struct ddb_item **out)
{
	struct ddb_item *it;
	const cJSON *m;
	size_t count, i, w;
	int rc;

	*out = NULL;
	if (!cJSON_IsObject(obj))
		return -EPROTO;
	it = ddb_item_new();
	if (!it)
		return -ENOMEM;
	count = (size_t)cJSON_GetArraySize(obj);
	if (ddb_item_reserve(it, count)) {
		rc = -ENOMEM;
		goto fail;
	}
	cJSON_ArrayForEach(m, obj)
	{
		struct ddb_attr *a = &it->attrs[it->n];

		memset(a, 0, sizeof(*a));
		if (!m->string || !m->string[0]) {
			rc = -EPROTO;
			goto fail;
		}
		rc = attr_from_json(m, a);
		if (!rc) {
			a->name = strdup(m->string);
			if (!a->name)
				rc = -ENOMEM;
		}
		if (rc) {
			ddb_attr_fini(a);
			goto fail;
		}
		a->seq = it->n++;
	}
	/* Sort, then keep the last of each run of equal names. */
	if (it->n > 1)
		qsort(it->attrs, it->n, sizeof(*it->attrs), cmp_attr_seq);
	for (i = 0, w = 0; i < it->n; i++) {
		if (i + 1 < it->n &&
		    !strcmp(it->attrs[i].name, it->attrs[i + 1].name)) {
			ddb_attr_fini(&it->attrs[i]);
			continue;
		}
		it->attrs[w++] = it->attrs[i];
	}
	it->n = w;
	*out = it;
	return 0;
fail:
	ddb_item_free(it);
	return rc;
}

int ddb_item_set_m(struct ddb_item *it, const char *name,
		   const struct ddb_item *map)
{
	struct ddb_attr a = { .type = DDB_T_OTHER };
	cJSON *inner;
	int rc;

	if (!it || !map || !ddb_name_ok(name))
		return -EINVAL;
	inner = ddb_json_from_item(map);
	a.other = inner ? cJSON_CreateObject() : NULL;
	if (!a.other || !cJSON_AddItemToObject(a.other, "M", inner)) {
		if (!a.other)
			cJSON_Delete(inner);
		ddb_attr_fini(&a);
		return -ENOMEM;
	}
	a.name = strdup(name);
	if (!a.name) {
		ddb_attr_fini(&a);
		return -ENOMEM;
	}
	rc = ddb_item_put(it, &a);
	if (rc)
		ddb_attr_fini(&a);
	return rc;
}

int ddb_item_get_m(const struct ddb_item *it, const char *name,
		   struct ddb_item **out)
{
	const struct ddb_attr *a = ddb_item_find(it, name);
	const cJSON *m;
	int rc;

	*out = NULL;
	if (!a)
		return -ENOENT;
	if (a->type != DDB_T_OTHER || !a->other || !a->other->child ||
	    a->other->child->next || !a->other->child->string ||
	    strcmp(a->other->child->string, "M"))
		return -EINVAL;
	m = a->other->child;
	rc = ddb_json_to_item(m, out);
	return rc == -EPROTO ? -EINVAL : rc;
}

char *ddb_item_to_json(const struct ddb_item *it)
{
	cJSON *obj = ddb_json_from_item(it);
	char *text, *copy = NULL;

	if (!obj)
		return NULL;
	text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (text)
		copy = strdup(text);
	cJSON_free(text);
	return copy;
}

/* Parses len bytes as one JSON object. -EPROTO or -ENOMEM. */
int ddb_json_parse(const char *json, size_t len, cJSON **root)
{
	*root = NULL;
	if (!json || !len)
		return -EPROTO;
	*root = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		return -EPROTO;
	}
	return 0;
}

int ddb_item_from_json(const char *json, size_t len, struct ddb_item **out)
{
	cJSON *root;
	int rc;

	*out = NULL;
	rc = ddb_json_parse(json, len, &root);
	if (rc)
		return rc;
	rc = ddb_json_to_item(root, out);
	cJSON_Delete(root);
	return rc;
}
