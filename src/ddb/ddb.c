/* ddb: DynamoDB JSON 1.0 operations (items, queries, tables)
 * and the AttributeValue item model, so that cJSON stays in this file and
 * awsreq.c. Items and pages belong to the thread that holds them; struct ddb
 * is immutable after ddb_new and used from any thread (the network state is
 * in the awsreq, per thread). */
#include "ddb.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clk.h"
#include "log.h"
#include "text.h"

#define DDB_TARGET_PREFIX "DynamoDB_20120810."
/* Table waits: DescribeTable every POLL_MIN_MS, growing to POLL_MAX_MS. */
#define DDB_POLL_MIN_MS	    50
#define DDB_POLL_MAX_MS	    1000
#define DDB_POLL_MAX_COUNT  1000
#define DDB_WAIT_DEFAULT_MS 60000
/* Responses larger than this are refused by the HTTP layer anyway. */
#define DDB_NUM_MAX_DIGITS 38
#define DDB_NUM_MIN_EXP	   (-130)
#define DDB_NUM_MAX_EXP	   125

/* ---- items ---------------------------------------------------------- */

struct ddb_attr {
	char *name;
	enum ddb_type type;
	char *text;   /* S, N: the text; B: the bytes plus a NUL */
	size_t len;   /* S, N, B: byte length of text */
	bool flag;    /* BOOL */
	cJSON *other; /* DDB_T_OTHER: the whole AttributeValue object */
	size_t seq;   /* parse order, only while an item is being parsed */
};

/* Attributes sorted by name (strcmp), names unique. */
struct ddb_item {
	struct ddb_attr *attrs;
	size_t n;
	size_t cap;
};

struct ddb_item *ddb_item_new(void)
{
	return calloc(1, sizeof(struct ddb_item));
}

static void attr_fini(struct ddb_attr *a)
{
	free(a->name);
	free(a->text);
	cJSON_Delete(a->other);
	memset(a, 0, sizeof(*a));
}

void ddb_item_free(struct ddb_item *it)
{
	size_t i;

	if (!it)
		return;
	for (i = 0; i < it->n; i++)
		attr_fini(&it->attrs[i]);
	free(it->attrs);
	free(it);
}

size_t ddb_item_count(const struct ddb_item *it)
{
	return it ? it->n : 0;
}

/* Index of name, or where it would be inserted (with *found false). */
static size_t find_slot(const struct ddb_item *it, const char *name,
			bool *found)
{
	size_t lo = 0, hi = it->n;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(it->attrs[mid].name, name);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct ddb_attr *find_attr(const struct ddb_item *it,
					const char *name)
{
	bool found;
	size_t i;

	if (!it || !name)
		return NULL;
	i = find_slot(it, name, &found);
	return found ? &it->attrs[i] : NULL;
}

static int reserve(struct ddb_item *it, size_t want)
{
	struct ddb_attr *p;
	size_t cap;

	if (want <= it->cap)
		return 0;
	cap = it->cap ? it->cap * 2 : 8;
	while (cap < want)
		cap *= 2;
	p = realloc(it->attrs, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	it->attrs = p;
	it->cap = cap;
	return 0;
}

/* Moves *a (whose name is set) into the item, replacing an attribute of the
 * same name. On failure *a is left for the caller to release. */
static int put_attr(struct ddb_item *it, struct ddb_attr *a)
{
	bool found;
	size_t i = find_slot(it, a->name, &found);

	if (found) {
		attr_fini(&it->attrs[i]);
		it->attrs[i] = *a;
		return 0;
	}
	if (reserve(it, it->n + 1))
		return -ENOMEM;
	memmove(&it->attrs[i + 1], &it->attrs[i],
		(it->n - i) * sizeof(*it->attrs));
	it->attrs[i] = *a;
	it->n++;
	return 0;
}

static bool name_ok(const char *name)
{
	return name && name[0] && text_utf8_valid(name, strlen(name));
}

/* Builds an attribute with a copy of name and of len bytes of data (plus a
 * NUL) and stores it. */
static int set_bytes(struct ddb_item *it, const char *name, enum ddb_type t,
		     const void *data, size_t len)
{
	struct ddb_attr a = { .type = t, .len = len };
	int rc;

	if (!it || !name_ok(name))
		return -EINVAL;
	a.name = strdup(name);
	a.text = malloc(len + 1);
	if (!a.name || !a.text) {
		attr_fini(&a);
		return -ENOMEM;
	}
	if (len)
		memcpy(a.text, data, len);
	a.text[len] = '\0';
	rc = put_attr(it, &a);
	if (rc)
		attr_fini(&a);
	return rc;
}

int ddb_item_set_s_len(struct ddb_item *it, const char *name, const char *value,
		       size_t len)
{
	if (!value || !text_utf8_valid(value, len))
		return -EINVAL;
	return set_bytes(it, name, DDB_T_S, value, len);
}

int ddb_item_set_s(struct ddb_item *it, const char *name, const char *value)
{
	if (!value)
		return -EINVAL;
	return ddb_item_set_s_len(it, name, value, strlen(value));
}

/* A DynamoDB number, split up: sign, significant digits, and the decimal
 * exponent of the first significant digit (value = d.ddd * 10^exp10). */
struct num_parts {
	bool negative;
	char digits[DDB_NUM_MAX_DIGITS + 1];
	int n_digits; /* 0 for zero */
	long exp10;
};

/* Parses [+-]digits[.digits][(e|E)[+-]digits] with at most 38 significant
 * digits and a magnitude DynamoDB accepts (1E-130 .. 9.99..E+125). */
static int num_parse(const char *s, size_t len, struct num_parts *out)
{
	size_t i = 0, int_start, int_len, frac_start = 0, frac_len = 0;
	long exp = 0, pos = 0, first = -1;
	bool exp_neg = false, seen_point;
	int n = 0, trailing;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (i < len && (s[i] == '-' || s[i] == '+'))
		out->negative = s[i++] == '-';
	int_start = i;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	int_len = i - int_start;
	seen_point = i < len && s[i] == '.';
	if (seen_point) {
		frac_start = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		frac_len = i - frac_start;
	}
	if (!int_len && !frac_len)
		return -EINVAL;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t exp_start;

		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			exp_neg = s[i++] == '-';
		exp_start = i;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (exp > 100000)
				return -EINVAL;
			exp = exp * 10 + (s[i] - '0');
			i++;
		}
		if (i == exp_start)
			return -EINVAL;
		if (exp_neg)
			exp = -exp;
	}
	if (i != len)
		return -EINVAL;
	/* Collect significant digits; pos counts digits before the point
	 * (positive) or after it (negative) for the first one. */
	for (k = 0; k < int_len + frac_len; k++) {
		char c = k < int_len ? s[int_start + k]
				     : s[frac_start + (k - int_len)];

		if (first < 0 && c == '0')
			continue;
		if (first < 0) {
			first = (long)k;
			pos = (long)int_len - 1 - (long)k;
		}
		if (n >= DDB_NUM_MAX_DIGITS) {
			/* Only trailing zeros may follow 38 digits. */
			if (c != '0')
				return -EINVAL;
			continue;
		}
		out->digits[n++] = c;
	}
	trailing = n;
	while (trailing > 0 && out->digits[trailing - 1] == '0')
		trailing--;
	out->n_digits = trailing;
	out->digits[trailing] = '\0';
	if (!trailing) {
		out->negative = false;
		return 0;
	}
	out->exp10 = pos + exp;
	if (out->exp10 < DDB_NUM_MIN_EXP || out->exp10 > DDB_NUM_MAX_EXP)
		return -EINVAL;
	return 0;
}

/* The number as an int64, if it is an integer in range. */
static int num_to_i64(const struct num_parts *p, int64_t *out)
{
	uint64_t v = 0, limit;
	long i;

	if (!p->n_digits) {
		*out = 0;
		return 0;
	}
	/* Integer only if no significant digit lies after the point. */
	if (p->exp10 < 0 || p->n_digits > p->exp10 + 1 || p->exp10 > 18)
		return -EINVAL;
	limit = p->negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (i = 0; i <= p->exp10; i++) {
		unsigned d =
			i < p->n_digits ? (unsigned)(p->digits[i] - '0') : 0;

		if (v > (limit - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (p->negative)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}

int ddb_item_set_n_text(struct ddb_item *it, const char *name,
			const char *decimal)
{
	struct num_parts p;

	if (!decimal || num_parse(decimal, strlen(decimal), &p))
		return -EINVAL;
	return set_bytes(it, name, DDB_T_N, decimal, strlen(decimal));
}

int ddb_item_set_n(struct ddb_item *it, const char *name, int64_t value)
{
	char text[32];

	snprintf(text, sizeof(text), "%lld", (long long)value);
	return set_bytes(it, name, DDB_T_N, text, strlen(text));
}

int ddb_item_set_b(struct ddb_item *it, const char *name, const void *data,
		   size_t len)
{
	if (!data && len)
		return -EINVAL;
	return set_bytes(it, name, DDB_T_B, data, len);
}

int ddb_item_set_bool(struct ddb_item *it, const char *name, bool value)
{
	struct ddb_attr a = { .type = DDB_T_BOOL, .flag = value };
	int rc;

	if (!it || !name_ok(name))
		return -EINVAL;
	a.name = strdup(name);
	if (!a.name)
		return -ENOMEM;
	rc = put_attr(it, &a);
	if (rc)
		attr_fini(&a);
	return rc;
}

void ddb_item_remove(struct ddb_item *it, const char *name)
{
	bool found;
	size_t i;

	if (!it || !name)
		return;
	i = find_slot(it, name, &found);
	if (!found)
		return;
	attr_fini(&it->attrs[i]);
	memmove(&it->attrs[i], &it->attrs[i + 1],
		(it->n - i - 1) * sizeof(*it->attrs));
	it->n--;
}

enum ddb_type ddb_item_type(const struct ddb_item *it, const char *name)
{
	const struct ddb_attr *a = find_attr(it, name);

	return a ? a->type : DDB_T_ABSENT;
}

static int get_typed(const struct ddb_item *it, const char *name,
		     enum ddb_type t, const struct ddb_attr **out)
{
	const struct ddb_attr *a = find_attr(it, name);

	if (!a)
		return -ENOENT;
	if (a->type != t)
		return -EINVAL;
	*out = a;
	return 0;
}

int ddb_item_get_s(const struct ddb_item *it, const char *name,
		   const char **out)
{
	const struct ddb_attr *a;
	int rc = get_typed(it, name, DDB_T_S, &a);

	if (!rc)
		*out = a->text;
	return rc;
}

int ddb_item_get_n_text(const struct ddb_item *it, const char *name,
			const char **out)
{
	const struct ddb_attr *a;
	int rc = get_typed(it, name, DDB_T_N, &a);

	if (!rc)
		*out = a->text;
	return rc;
}

int ddb_item_get_n(const struct ddb_item *it, const char *name, int64_t *out)
{
	const struct ddb_attr *a;
	struct num_parts p;
	int rc = get_typed(it, name, DDB_T_N, &a);

	if (rc)
		return rc;
	if (num_parse(a->text, a->len, &p))
		return -EINVAL;
	return num_to_i64(&p, out);
}

int ddb_item_get_b(const struct ddb_item *it, const char *name, void **data,
		   size_t *len)
{
	const struct ddb_attr *a;
	int rc = get_typed(it, name, DDB_T_B, &a);
	char *copy;

	if (rc)
		return rc;
	copy = malloc(a->len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, a->text, a->len + 1);
	*data = copy;
	*len = a->len;
	return 0;
}

int ddb_item_get_bool(const struct ddb_item *it, const char *name, bool *out)
{
	const struct ddb_attr *a;
	int rc = get_typed(it, name, DDB_T_BOOL, &a);

	if (!rc)
		*out = a->flag;
	return rc;
}

static int attr_copy(struct ddb_attr *dst, const struct ddb_attr *src)
{
	*dst = *src;
	dst->name = strdup(src->name);
	dst->text = NULL;
	dst->other = NULL;
	if (src->text) {
		dst->text = malloc(src->len + 1);
		if (dst->text)
			memcpy(dst->text, src->text, src->len + 1);
	}
	if (src->other)
		dst->other = cJSON_Duplicate(src->other, 1);
	if (!dst->name || (src->text && !dst->text) ||
	    (src->other && !dst->other)) {
		attr_fini(dst);
		return -ENOMEM;
	}
	return 0;
}

struct ddb_item *ddb_item_dup(const struct ddb_item *it)
{
	struct ddb_item *copy;
	size_t i;

	if (!it)
		return NULL;
	copy = ddb_item_new();
	if (!copy || reserve(copy, it->n))
		goto fail;
	for (i = 0; i < it->n; i++) {
		if (attr_copy(&copy->attrs[i], &it->attrs[i]))
			goto fail;
		copy->n++;
	}
	return copy;
fail:
	ddb_item_free(copy);
	return NULL;
}

/* ---- base64 (B values travel as standard base64 with padding) -------- */

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
static cJSON *item_to_json(const struct ddb_item *it)
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
	struct num_parts p;

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
		if (num_parse(s, len, &p))
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
static int item_from_json(const cJSON *obj, struct ddb_item **out)
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
	if (reserve(it, count)) {
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
			attr_fini(a);
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
			attr_fini(&it->attrs[i]);
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

	if (!it || !map || !name_ok(name))
		return -EINVAL;
	inner = item_to_json(map);
	a.other = inner ? cJSON_CreateObject() : NULL;
	if (!a.other || !cJSON_AddItemToObject(a.other, "M", inner)) {
		if (!a.other)
			cJSON_Delete(inner);
		attr_fini(&a);
		return -ENOMEM;
	}
	a.name = strdup(name);
	if (!a.name) {
		attr_fini(&a);
		return -ENOMEM;
	}
	rc = put_attr(it, &a);
	if (rc)
		attr_fini(&a);
	return rc;
}

int ddb_item_get_m(const struct ddb_item *it, const char *name,
		   struct ddb_item **out)
{
	const struct ddb_attr *a = find_attr(it, name);
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
	rc = item_from_json(m, out);
	return rc == -EPROTO ? -EINVAL : rc;
}

const char *ddb_item_name_at(const struct ddb_item *it, size_t i)
{
	return it && i < it->n ? it->attrs[i].name : NULL;
}

char *ddb_item_to_json(const struct ddb_item *it)
{
	cJSON *obj = item_to_json(it);
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
static int parse_object(const char *json, size_t len, cJSON **root)
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
	rc = parse_object(json, len, &root);
	if (rc)
		return rc;
	rc = item_from_json(root, out);
	cJSON_Delete(root);
	return rc;
}

/* ---- response parsers ----------------------------------------------- */

static const cJSON *member(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

static const char *member_string(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An optional item member: absent or null gives NULL. */
static int optional_item(const cJSON *obj, const char *name,
			 struct ddb_item **out)
{
	const cJSON *v = member(obj, name);
	struct ddb_item *it = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	rc = item_from_json(v, &it);
	if (rc)
		return rc;
	if (out)
		*out = it;
	else
		ddb_item_free(it);
	return 0;
}

int ddb_parse_get_item(const char *body, size_t len, struct ddb_item **item_out)
{
	struct ddb_item *it = NULL;
	cJSON *root;
	int rc;

	if (item_out)
		*item_out = NULL;
	rc = parse_object(body, len, &root);
	if (rc)
		return rc;
	rc = optional_item(root, "Item", &it);
	cJSON_Delete(root);
	if (rc)
		return rc;
	if (!it)
		return -ENOENT;
	if (item_out)
		*item_out = it;
	else
		ddb_item_free(it);
	return 0;
}

/* The item under field of a JSON answer, if there is one. */
static int parse_field_item(const char *body, size_t len, const char *field,
			    struct ddb_item **out)
{
	cJSON *root;
	int rc;

	if (out)
		*out = NULL;
	rc = parse_object(body, len, &root);
	if (rc)
		return rc;
	rc = optional_item(root, field, out);
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_attributes(const char *body, size_t len, struct ddb_item **out)
{
	return parse_field_item(body, len, "Attributes", out);
}

void ddb_page_fini(struct ddb_page *page)
{
	size_t i;

	if (!page)
		return;
	for (i = 0; i < page->n; i++)
		ddb_item_free(page->items[i]);
	free(page->items);
	ddb_item_free(page->last_key);
	memset(page, 0, sizeof(*page));
}

int ddb_parse_page(const char *body, size_t len, struct ddb_page *page)
{
	const cJSON *items, *m, *scanned;
	cJSON *root;
	size_t count;
	int rc;

	memset(page, 0, sizeof(*page));
	rc = parse_object(body, len, &root);
	if (rc)
		return rc;
	items = member(root, "Items");
	if (items && !cJSON_IsArray(items)) {
		rc = -EPROTO;
		goto out;
	}
	count = (size_t)cJSON_GetArraySize(items);
	if (count) {
		page->items = calloc(count, sizeof(*page->items));
		if (!page->items) {
			rc = -ENOMEM;
			goto out;
		}
	}
	cJSON_ArrayForEach(m, items)
	{
		rc = item_from_json(m, &page->items[page->n]);
		if (rc)
			goto out;
		page->n++;
	}
	rc = optional_item(root, "LastEvaluatedKey", &page->last_key);
	if (rc)
		goto out;
	scanned = member(root, "ScannedCount");
	if (cJSON_IsNumber(scanned) && scanned->valuedouble >= 0 &&
	    scanned->valuedouble <= (double)LONG_MAX / 2)
		page->scanned = (long)scanned->valuedouble;
	else if (scanned)
		rc = -EPROTO;
	else
		page->scanned = (long)page->n;
out:
	cJSON_Delete(root);
	if (rc)
		ddb_page_fini(page);
	return rc;
}

static int copy_field(char *out, size_t outlen, const char *s)
{
	return s && !text_copy(out, outlen, s) ? 0 : -EPROTO;
}

/* KeySchema and AttributeDefinitions into the key fields of *out. */
static int parse_key_schema(const cJSON *desc, struct ddb_table_info *out)
{
	const cJSON *schema = member(desc, "KeySchema");
	const cJSON *defs = member(desc, "AttributeDefinitions");
	const cJSON *k, *def;

	if (!cJSON_IsArray(schema) || (defs && !cJSON_IsArray(defs)))
		return -EPROTO;
	cJSON_ArrayForEach(k, schema)
	{
		const char *name = member_string(k, "AttributeName");
		const char *kind = member_string(k, "KeyType");
		char *name_out, *type_out;
		size_t type_len;

		if (!name || !kind)
			return -EPROTO;
		if (!strcmp(kind, "HASH")) {
			name_out = out->hash_name;
			type_out = out->hash_type;
			type_len = sizeof(out->hash_type);
		} else if (!strcmp(kind, "RANGE")) {
			name_out = out->range_name;
			type_out = out->range_type;
			type_len = sizeof(out->range_type);
		} else {
			return -EPROTO;
		}
		if (copy_field(name_out, sizeof(out->hash_name), name))
			return -EPROTO;
		cJSON_ArrayForEach(def, defs)
		{
			const char *dn = member_string(def, "AttributeName");
			const char *dt = member_string(def, "AttributeType");

			if (dn && dt && !strcmp(dn, name) &&
			    copy_field(type_out, type_len, dt))
				return -EPROTO;
		}
	}
	return out->hash_name[0] ? 0 : -EPROTO;
}

int ddb_parse_table(const char *body, size_t len, struct ddb_table_info *out)
{
	struct ddb_table_info info;
	const cJSON *desc, *count;
	cJSON *root;
	int rc;

	memset(&info, 0, sizeof(info));
	rc = parse_object(body, len, &root);
	if (rc)
		return rc;
	desc = member(root, "Table");
	if (!desc)
		desc = member(root, "TableDescription");
	rc = -EPROTO;
	if (!cJSON_IsObject(desc) ||
	    copy_field(info.status, sizeof(info.status),
		       member_string(desc, "TableStatus")) ||
	    parse_key_schema(desc, &info))
		goto out;
	count = member(desc, "ItemCount");
	if (count && (!cJSON_IsNumber(count) || count->valuedouble < 0 ||
		      count->valuedouble > 9e15))
		goto out;
	info.item_count = count ? (long long)count->valuedouble : 0;
	rc = 0;
	if (out)
		*out = info;
out:
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_ttl(const char *body, size_t len, char *status, size_t status_len,
		  char *attr, size_t attr_len)
{
	const cJSON *desc;
	const char *st, *name;
	cJSON *root;
	int rc;

	rc = parse_object(body, len, &root);
	if (rc)
		return rc;
	desc = member(root, "TimeToLiveDescription");
	st = member_string(desc, "TimeToLiveStatus");
	name = member_string(desc, "AttributeName");
	rc = -EPROTO;
	if (!cJSON_IsObject(desc) || !st)
		goto out;
	if (status && status_len && copy_field(status, status_len, st))
		goto out;
	if (attr && attr_len && copy_field(attr, attr_len, name ? name : ""))
		goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_condition_failure(const char *body, size_t len,
				struct ddb_item **old_out)
{
	return parse_field_item(body, len, "Item", old_out);
}

/* ---- calls ---------------------------------------------------------- */

struct ddb {
	struct awsreq *req; /* not owned */
};

struct ddb *ddb_new(struct awsreq *req)
{
	struct ddb *d;

	if (!req)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d)
		d->req = req;
	return d;
}

void ddb_free(struct ddb *d)
{
	free(d);
}

/* Starts a call: a caller without a struct ddb_call gets a scratch one. */
static struct ddb_call *call_begin(struct ddb_call *call,
				   struct ddb_call *scratch)
{
	if (!call) {
		memset(scratch, 0, sizeof(*scratch));
		call = scratch;
	}
	awserr_clear(&call->err);
	call->attempts = 0;
	return call;
}

static int local_error(struct ddb_call *call, int err, const char *why)
{
	awserr_clear(&call->err);
	text_copy(call->err.message, sizeof(call->err.message), why);
	return err;
}

/* An answer arrived but could not be used: keeps the status and type of
 * the answer and says what was wrong. */
static int unreadable(struct ddb_call *call, int rc, const char *what)
{
	if (rc == -ENOMEM)
		return local_error(call, rc, "out of memory");
	snprintf(call->err.message, sizeof(call->err.message),
		 "unreadable %s answer", what);
	return -EPROTO;
}

static int add_string(cJSON *obj, const char *name, const char *value)
{
	return cJSON_AddStringToObject(obj, name, value) ? 0 : -ENOMEM;
}

static int add_item(cJSON *obj, const char *name, const struct ddb_item *it)
{
	cJSON *v = item_to_json(it);

	if (!v)
		return -ENOMEM;
	if (!cJSON_AddItemToObject(obj, name, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

/* ExpressionAttributeNames from {"#a", "name", ..., NULL} and
 * ExpressionAttributeValues, each only when non-empty (DynamoDB refuses
 * empty maps). */
static int add_placeholders(cJSON *obj, const char *const *names,
			    const struct ddb_item *values)
{
	cJSON *m;
	size_t i;

	if (names && names[0]) {
		m = cJSON_AddObjectToObject(obj, "ExpressionAttributeNames");
		if (!m)
			return -ENOMEM;
		for (i = 0; names[i]; i += 2) {
			if (!names[i + 1] || names[i][0] != '#' ||
			    !names[i + 1][0])
				return -EINVAL;
			if (!cJSON_AddStringToObject(m, names[i], names[i + 1]))
				return -ENOMEM;
		}
	}
	if (ddb_item_count(values))
		return add_item(obj, "ExpressionAttributeValues", values);
	return 0;
}

/* Condition, update and placeholders of e; a condition always asks for
 * the current item when it fails. */
static int add_expr(cJSON *obj, const struct ddb_expr *e)
{
	int rc;

	if (!e)
		return 0;
	if (e->condition) {
		rc = add_string(obj, "ConditionExpression", e->condition);
		if (!rc)
			rc = add_string(obj,
					"ReturnValuesOnConditionCheckFailure",
					"ALL_OLD");
		if (rc)
			return rc;
	}
	if (e->update) {
		rc = add_string(obj, "UpdateExpression", e->update);
		if (rc)
			return rc;
	}
	return add_placeholders(obj, e->names, e->values);
}

static const char *return_name(enum ddb_return rv)
{
	switch (rv) {
	case DDB_RETURN_ALL_OLD:
		return "ALL_OLD";
	case DDB_RETURN_ALL_NEW:
		return "ALL_NEW";
	case DDB_RETURN_UPDATED_NEW:
		return "UPDATED_NEW";
	case DDB_RETURN_UPDATED_OLD:
		return "UPDATED_OLD";
	default:
		return NULL;
	}
}

/* The hash key of a lockfs table (store_ddb checks the schema): the one
 * attribute -d shows of an item. */
#define DDB_LOG_KEY "lock_key"

/* The string DDB_LOG_KEY of an item or key object, or NULL. */
static const char *key_of(const cJSON *obj)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, DDB_LOG_KEY);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(k, "S");

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* What a request is about, for -d: "key=K" (the Item or Key of a write or
 * read, a Query's :k), "prefix=P" (a
 * Scan's :p), else "table=T". Never another attribute's value (data). */
static void request_subject(const cJSON *req, char *out, size_t len)
{
	const cJSON *vals, *v;
	const char *k;

	k = key_of(cJSON_GetObjectItemCaseSensitive(req, "Item"));
	if (!k)
		k = key_of(cJSON_GetObjectItemCaseSensitive(req, "Key"));
	vals = cJSON_GetObjectItemCaseSensitive(req,
						"ExpressionAttributeValues");
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(vals, ":k"), "S");
	if (!k && cJSON_IsString(v))
		k = v->valuestring;
	if (k) {
		snprintf(out, len, "key=%s", k);
		return;
	}
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(vals, ":p"), "S");
	if (cJSON_IsString(v)) {
		snprintf(out, len, "prefix=%s", v->valuestring);
		return;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "TableName");
	snprintf(out, len, "table=%s",
		 cJSON_IsString(v) ? v->valuestring : "?");
}

/* One -d line per call: operation, subject, HTTP status, milliseconds,
 * retries, and the error if any (awserr_format: never a credential). */
static void log_request(const char *name, const cJSON *req, int rc,
			const struct ddb_call *call, int attempts, int64_t us)
{
	char subject[300], status[24] = "-", why[400] = "";

	request_subject(req, subject, sizeof(subject));
	if (call->err.http_status)
		snprintf(status, sizeof(status), "%ld", call->err.http_status);
	if (rc) {
		why[0] = ':';
		why[1] = ' ';
		awserr_format(&call->err, why + 2, sizeof(why) - 2);
	}
	log_debug("ddb", "%s %s status=%s ms=%lld retries=%d%s", name, subject,
		  status, (long long)(us / 1000),
		  attempts > 1 ? attempts - 1 : 0, why);
}

/* Sends req as operation name; the answer's body is left in resp. */
static int send_request(struct ddb *d, enum ddb_op op, const char *name,
			cJSON *req, struct buf *resp, struct ddb_call *call)
{
	char target[64];
	char *body;
	int attempts = 0, rc;
	int64_t start_us = clk_sys_mono_us();

	body = cJSON_PrintUnformatted(req);
	if (!body)
		return local_error(call, -ENOMEM, "out of memory");
	snprintf(target, sizeof(target), DDB_TARGET_PREFIX "%s", name);
	rc = awsreq_json(d->req, op, target, body, strlen(body),
			 call->deadline_mono_ms, resp, &call->err, &attempts);
	call->attempts += attempts;
	cJSON_free(body);
	if (log_enabled(LOGL_DEBUG))
		log_request(name, req, rc, call, attempts,
			    clk_sys_mono_us() - start_us);
	return rc;
}

/* A new request object with TableName, or NULL. */
static cJSON *new_request(const char *table)
{
	cJSON *req = cJSON_CreateObject();

	if (req && add_string(req, "TableName", table)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* After a write failed its condition: the current item into *old_out. */
static int condition_failed(const struct buf *resp, struct ddb_call *call,
			    const char *op, struct ddb_item **old_out)
{
	int rc = ddb_parse_condition_failure(resp->data, resp->len, old_out);

	return rc ? unreadable(call, rc, op) : -ECANCELED;
}

int ddb_get_item(struct ddb *d, const char *table, const struct ddb_item *key,
		 bool consistent, struct ddb_item **item_out,
		 struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req;
	int rc;

	call = call_begin(call, &scratch);
	if (item_out)
		*item_out = NULL;
	if (!d || !table || !key)
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	rc = req ? add_item(req, "Key", key) : -ENOMEM;
	if (!rc && consistent && !cJSON_AddTrueToObject(req, "ConsistentRead"))
		rc = -ENOMEM;
	if (rc) {
		rc = local_error(call, rc, "cannot build GetItem");
		goto out;
	}
	rc = send_request(d, DDB_OP_GET_ITEM, "GetItem", req, &resp, call);
	if (!rc) {
		rc = ddb_parse_get_item(resp.data, resp.len, item_out);
		if (rc && rc != -ENOENT)
			rc = unreadable(call, rc, "GetItem");
	}
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

/* PutItem, UpdateItem and DeleteItem: one write of the item (or key) under
 * field, conditional when expr has a condition. On success *out gets the
 * Attributes asked for with rv_name (NULL: none asked, *out stays NULL);
 * on -ECANCELED, the item as it is now. */
static int write_item(struct ddb *d, enum ddb_op op, const char *name,
		      const char *table, const char *field,
		      const struct ddb_item *item, const struct ddb_expr *expr,
		      const char *rv_name, struct ddb_item **out,
		      struct ddb_call *call)
{
	struct buf resp = BUF_INIT;
	cJSON *req = new_request(table);
	char why[64];
	int rc = req ? add_item(req, field, item) : -ENOMEM;

	if (!rc)
		rc = add_expr(req, expr);
	if (!rc && rv_name)
		rc = add_string(req, "ReturnValues", rv_name);
	if (rc) {
		snprintf(why, sizeof(why), "cannot build %s", name);
		rc = local_error(call, rc, why);
		goto out;
	}
	rc = send_request(d, op, name, req, &resp, call);
	if (rc == -ECANCELED) {
		rc = condition_failed(&resp, call, name, out);
	} else if (!rc && rv_name) {
		rc = ddb_parse_attributes(resp.data, resp.len, out);
		if (rc)
			rc = unreadable(call, rc, name);
	}
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

int ddb_put_item(struct ddb *d, const char *table, const struct ddb_item *item,
		 const struct ddb_expr *cond, struct ddb_item **old_out,
		 struct ddb_call *call)
{
	struct ddb_call scratch;

	call = call_begin(call, &scratch);
	if (old_out)
		*old_out = NULL;
	if (!d || !table || !item || (cond && cond->update))
		return local_error(call, -EINVAL, "invalid argument");
	return write_item(d, DDB_OP_PUT_ITEM, "PutItem", table, "Item", item,
			  cond, NULL, old_out, call);
}

int ddb_update_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *expr,
		    enum ddb_return rv, struct ddb_item **out,
		    struct ddb_call *call)
{
	struct ddb_call scratch;
	const char *rv_name = return_name(rv);

	call = call_begin(call, &scratch);
	if (out)
		*out = NULL;
	if (!d || !table || !key || !expr || !expr->update ||
	    (rv != DDB_RETURN_NONE && !rv_name))
		return local_error(call, -EINVAL, "invalid argument");
	return write_item(d, DDB_OP_UPDATE_ITEM, "UpdateItem", table, "Key",
			  key, expr, rv_name, out, call);
}

int ddb_delete_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *cond,
		    enum ddb_return rv, struct ddb_item **old_out,
		    struct ddb_call *call)
{
	struct ddb_call scratch;

	call = call_begin(call, &scratch);
	if (old_out)
		*old_out = NULL;
	if (!d || !table || !key || (cond && cond->update) ||
	    (rv != DDB_RETURN_NONE && rv != DDB_RETURN_ALL_OLD))
		return local_error(call, -EINVAL, "invalid argument");
	return write_item(
		d, DDB_OP_DELETE_ITEM, "DeleteItem", table, "Key", key, cond,
		rv == DDB_RETURN_ALL_OLD ? "ALL_OLD" : NULL, old_out, call);
}

static int read_page(struct ddb *d, enum ddb_op op, const char *name,
		     const char *table, const struct ddb_read *rd,
		     const struct ddb_item *start_key, struct ddb_page *page,
		     struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req;
	int rc = 0;

	call = call_begin(call, &scratch);
	if (page)
		memset(page, 0, sizeof(*page));
	if (!d || !table || !rd || !page || rd->limit < 0 ||
	    (op == DDB_OP_QUERY && !rd->key_condition))
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	if (!req)
		rc = -ENOMEM;
	if (!rc && op == DDB_OP_QUERY)
		rc = add_string(req, "KeyConditionExpression",
				rd->key_condition);
	if (!rc && rd->filter)
		rc = add_string(req, "FilterExpression", rd->filter);
	if (!rc && rd->projection)
		rc = add_string(req, "ProjectionExpression", rd->projection);
	if (!rc)
		rc = add_placeholders(req, rd->names, rd->values);
	if (!rc && rd->consistent &&
	    !cJSON_AddTrueToObject(req, "ConsistentRead"))
		rc = -ENOMEM;
	if (!rc && rd->limit &&
	    !cJSON_AddNumberToObject(req, "Limit", rd->limit))
		rc = -ENOMEM;
	if (!rc && start_key)
		rc = add_item(req, "ExclusiveStartKey", start_key);
	if (rc) {
		rc = local_error(call, rc, "cannot build request");
		goto out;
	}
	rc = send_request(d, op, name, req, &resp, call);
	if (!rc) {
		rc = ddb_parse_page(resp.data, resp.len, page);
		if (rc)
			rc = unreadable(call, rc, name);
	}
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

int ddb_query(struct ddb *d, const char *table, const struct ddb_read *rd,
	      const struct ddb_item *start_key, struct ddb_page *page,
	      struct ddb_call *call)
{
	return read_page(d, DDB_OP_QUERY, "Query", table, rd, start_key, page,
			 call);
}

int ddb_scan(struct ddb *d, const char *table, const struct ddb_read *rd,
	     const struct ddb_item *start_key, struct ddb_page *page,
	     struct ddb_call *call)
{
	return read_page(d, DDB_OP_SCAN, "Scan", table, rd, start_key, page,
			 call);
}

/* ---- tables --------------------------------------------------------- */

static int add_key_attr(cJSON *defs, cJSON *schema, const char *name,
			const char *kind)
{
	cJSON *def = cJSON_CreateObject(), *key = cJSON_CreateObject();

	if (!def || !key || add_string(def, "AttributeName", name) ||
	    add_string(def, "AttributeType", "S") ||
	    add_string(key, "AttributeName", name) ||
	    add_string(key, "KeyType", kind)) {
		cJSON_Delete(def);
		cJSON_Delete(key);
		return -ENOMEM;
	}
	cJSON_AddItemToArray(defs, def);
	cJSON_AddItemToArray(schema, key);
	return 0;
}

int ddb_create_table(struct ddb *d, const char *table, const char *hash_name,
		     const char *range_name, struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req, *defs = NULL, *schema = NULL;
	int rc;

	call = call_begin(call, &scratch);
	if (!d || !table || !name_ok(hash_name) ||
	    (range_name && !name_ok(range_name)))
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	if (req) {
		defs = cJSON_AddArrayToObject(req, "AttributeDefinitions");
		schema = cJSON_AddArrayToObject(req, "KeySchema");
	}
	rc = defs && schema ? add_key_attr(defs, schema, hash_name, "HASH")
			    : -ENOMEM;
	if (!rc && range_name)
		rc = add_key_attr(defs, schema, range_name, "RANGE");
	if (!rc)
		rc = add_string(req, "BillingMode", "PAY_PER_REQUEST");
	if (rc) {
		rc = local_error(call, rc, "out of memory");
		goto out;
	}
	rc = send_request(d, DDB_OP_CREATE_TABLE, "CreateTable", req, &resp,
			  call);
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

int ddb_describe_table(struct ddb *d, const char *table,
		       struct ddb_table_info *out, struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req;
	int rc;

	call = call_begin(call, &scratch);
	if (!d || !table)
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	if (!req)
		return local_error(call, -ENOMEM, "out of memory");
	rc = send_request(d, DDB_OP_DESCRIBE_TABLE, "DescribeTable", req, &resp,
			  call);
	if (!rc) {
		rc = ddb_parse_table(resp.data, resp.len, out);
		if (rc)
			rc = unreadable(call, rc, "DescribeTable");
	}
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

int ddb_wait_table_active(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, struct ddb_call *call)
{
	const struct clk *clock;
	struct ddb_call scratch, one;
	struct ddb_table_info info;
	int64_t poll_ms = DDB_POLL_MIN_MS, now;
	int polls, rc = -ETIMEDOUT;

	call = call_begin(call, &scratch);
	if (!d || !table)
		return local_error(call, -EINVAL, "invalid argument");
	clock = awsreq_clock(d->req);
	now = clk_mono_ms(clock);
	if (!deadline_mono_ms)
		deadline_mono_ms = now + DDB_WAIT_DEFAULT_MS;
	if (call->deadline_mono_ms && call->deadline_mono_ms < deadline_mono_ms)
		deadline_mono_ms = call->deadline_mono_ms;
	for (polls = 0; polls < DDB_POLL_MAX_COUNT; polls++) {
		memset(&one, 0, sizeof(one));
		one.deadline_mono_ms = deadline_mono_ms;
		rc = ddb_describe_table(d, table, &info, &one);
		call->attempts += one.attempts;
		call->err = one.err;
		if (!rc && !strcmp(info.status, "ACTIVE"))
			return 0;
		/* A table just created may not be visible at once. */
		if (rc && rc != -ENXIO)
			return rc;
		now = clk_mono_ms(clock);
		if (now + poll_ms >= deadline_mono_ms)
			break;
		retry_sleep_ms(poll_ms);
		poll_ms = poll_ms * 2 > DDB_POLL_MAX_MS ? DDB_POLL_MAX_MS
							: poll_ms * 2;
	}
	if (rc)
		return rc;
	snprintf(call->err.message, sizeof(call->err.message),
		 "table %.64s is still %.31s", table, info.status);
	return -ETIMEDOUT;
}

int ddb_describe_ttl(struct ddb *d, const char *table, char *status,
		     size_t status_len, char *attr, size_t attr_len,
		     struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req;
	int rc;

	call = call_begin(call, &scratch);
	if (!d || !table)
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	if (!req)
		return local_error(call, -ENOMEM, "out of memory");
	rc = send_request(d, DDB_OP_DESCRIBE_TTL, "DescribeTimeToLive", req,
			  &resp, call);
	if (!rc) {
		rc = ddb_parse_ttl(resp.data, resp.len, status, status_len,
				   attr, attr_len);
		if (rc)
			rc = unreadable(call, rc, "DescribeTimeToLive");
	}
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}

/* After UpdateTimeToLive was refused: true if the table already has the
 * state that was asked for (DynamoDB refuses to enable TTL twice). */
static bool ttl_already(struct ddb *d, const char *table, const char *attr,
			bool enabled, struct ddb_call *call)
{
	struct ddb_call one = { .deadline_mono_ms = call->deadline_mono_ms };
	char status[32], name[256];
	bool same;

	if (ddb_describe_ttl(d, table, status, sizeof(status), name,
			     sizeof(name), &one))
		return false;
	call->attempts += one.attempts;
	if (enabled)
		same = (!strcmp(status, "ENABLED") ||
			!strcmp(status, "ENABLING")) &&
		       !strcmp(name, attr);
	else
		same = !strcmp(status, "DISABLED") ||
		       !strcmp(status, "DISABLING");
	return same;
}

int ddb_update_ttl(struct ddb *d, const char *table, const char *attr,
		   bool enabled, struct ddb_call *call)
{
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req, *spec = NULL;
	int rc;

	call = call_begin(call, &scratch);
	if (!d || !table || !name_ok(attr))
		return local_error(call, -EINVAL, "invalid argument");
	req = new_request(table);
	if (req)
		spec = cJSON_AddObjectToObject(req, "TimeToLiveSpecification");
	if (!spec || add_string(spec, "AttributeName", attr) ||
	    !cJSON_AddBoolToObject(spec, "Enabled", enabled)) {
		rc = local_error(call, -ENOMEM, "out of memory");
		goto out;
	}
	rc = send_request(d, DDB_OP_UPDATE_TTL, "UpdateTimeToLive", req, &resp,
			  call);
	if (rc == -EINVAL && !strcmp(call->err.type, "ValidationException") &&
	    ttl_already(d, table, attr, enabled, call)) {
		awserr_clear(&call->err);
		rc = 0;
	}
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}
