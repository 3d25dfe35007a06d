/* ddb_item: the AttributeValue item model: an item is a map from attribute
 * names to typed values kept sorted by name; setters validate names, UTF-8
 * and DynamoDB's numbers. An item belongs to the thread that holds it. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

struct ddb_item *ddb_item_new(void)
{
	return calloc(1, sizeof(struct ddb_item));
}

void ddb_attr_fini(struct ddb_attr *a)
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
		ddb_attr_fini(&it->attrs[i]);
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

const struct ddb_attr *ddb_item_find(const struct ddb_item *it,
				     const char *name)
{
	bool found;
	size_t i;

	if (!it || !name)
		return NULL;
	i = find_slot(it, name, &found);
	return found ? &it->attrs[i] : NULL;
}

int ddb_item_reserve(struct ddb_item *it, size_t want)
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
int ddb_item_put(struct ddb_item *it, struct ddb_attr *a)
{
	bool found;
	size_t i = find_slot(it, a->name, &found);

	if (found) {
		ddb_attr_fini(&it->attrs[i]);
		it->attrs[i] = *a;
		return 0;
	}
	if (ddb_item_reserve(it, it->n + 1))
		return -ENOMEM;
	memmove(&it->attrs[i + 1], &it->attrs[i],
		(it->n - i) * sizeof(*it->attrs));
	it->attrs[i] = *a;
	it->n++;
	return 0;
}

bool ddb_name_ok(const char *name)
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

	if (!it || !ddb_name_ok(name))
		return -EINVAL;
	a.name = strdup(name);
	a.text = malloc(len + 1);
	if (!a.name || !a.text) {
		ddb_attr_fini(&a);
		return -ENOMEM;
	}
	if (len)
		memcpy(a.text, data, len);
	a.text[len] = '\0';
	rc = ddb_item_put(it, &a);
	if (rc)
		ddb_attr_fini(&a);
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

/* Parses [+-]digits[.digits][(e|E)[+-]digits] with at most 38 significant
 * digits and a magnitude DynamoDB accepts (1E-130 .. 9.99..E+125). */
int ddb_num_parse(const char *s, size_t len, struct ddb_num *out)
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
static int num_to_i64(const struct ddb_num *p, int64_t *out)
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
	struct ddb_num p;

	if (!decimal || ddb_num_parse(decimal, strlen(decimal), &p))
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

	if (!it || !ddb_name_ok(name))
		return -EINVAL;
	a.name = strdup(name);
	if (!a.name)
		return -ENOMEM;
	rc = ddb_item_put(it, &a);
	if (rc)
		ddb_attr_fini(&a);
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
	ddb_attr_fini(&it->attrs[i]);
	memmove(&it->attrs[i], &it->attrs[i + 1],
		(it->n - i - 1) * sizeof(*it->attrs));
	it->n--;
}

enum ddb_type ddb_item_type(const struct ddb_item *it, const char *name)
{
	const struct ddb_attr *a = ddb_item_find(it, name);

	return a ? a->type : DDB_T_ABSENT;
}

static int get_typed(const struct ddb_item *it, const char *name,
		     enum ddb_type t, const struct ddb_attr **out)
{
	const struct ddb_attr *a = ddb_item_find(it, name);

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
	struct ddb_num p;
	int rc = get_typed(it, name, DDB_T_N, &a);

	if (rc)
		return rc;
	if (ddb_num_parse(a->text, a->len, &p))
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
		ddb_attr_fini(dst);
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
	if (!copy || ddb_item_reserve(copy, it->n))
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

const char *ddb_item_name_at(const struct ddb_item *it, size_t i)
{
	return it && i < it->n ? it->attrs[i].name : NULL;
}
