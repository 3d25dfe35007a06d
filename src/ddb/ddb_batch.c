/* ddb_batch: BatchGetItem of up to DDB_BATCH_GET_MAX keys of one table in
 * one request, and the parser of its answer, which matches the items
 * (Responses, in no particular order) and the keys left unread
 * (UnprocessedKeys) to the keys asked for, so that each key gets what a
 * GetItem of it would have given, or -EAGAIN. Any thread; no state of its
 * own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *member(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* A key attribute (S, N or B) of the same type and bytes. Numbers are
 * compared as text: DynamoDB gives a key back as it was sent. */
static bool attr_same(const struct ddb_attr *a, const struct ddb_attr *b)
{
	if (!a || !b || a->type != b->type)
		return false;
	if (a->type != DDB_T_S && a->type != DDB_T_N && a->type != DDB_T_B)
		return false;
	return a->len == b->len && !memcmp(a->text, b->text, a->len);
}

/* Whether it carries every attribute of key with the key's value; exact:
 * it has no other attribute either (an unprocessed key). */
static bool item_has_key(const struct ddb_item *it, const struct ddb_item *key,
			 bool exact)
{
	size_t i;

	if (!key->n || (exact && it->n != key->n))
		return false;
	for (i = 0; i < key->n; i++)
		if (!attr_same(ddb_item_find(it, key->attrs[i].name),
			       &key->attrs[i]))
			return false;
	return true;
}

/* The index of the key it belongs to, or -1. */
static long key_index(const struct ddb_item *it,
		      const struct ddb_item *const *keys, size_t n, bool exact)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (item_has_key(it, keys[i], exact))
			return (long)i;
	return -1;
}

/* The only member of obj, which must be table's (an answer about another
 * table is not one to this request), or NULL when obj is empty. */
static int table_member(const cJSON *obj, const char *table, const cJSON **out)
{
	const cJSON *m;

	*out = NULL;
	if (!cJSON_IsObject(obj))
		return -EPROTO;
	cJSON_ArrayForEach(m, obj)
	{
		if (*out || !m->string || strcmp(m->string, table))
			return -EPROTO;
		*out = m;
	}
	return 0;
}

/* Responses.<table>: each item to the slot of its key, none twice. */
static int take_items(const cJSON *list, const struct ddb_item *const *keys,
		      size_t n, struct ddb_item **items, int *rcs)
{
	const cJSON *m;
	int rc;

	if (list && !cJSON_IsArray(list))
		return -EPROTO;
	cJSON_ArrayForEach(m, list)
	{
		struct ddb_item *it;
		long k;

		rc = ddb_json_to_item(m, &it);
		if (rc)
			return rc;
		k = key_index(it, keys, n, false);
		if (k < 0 || rcs[k] != -ENOENT) {
			ddb_item_free(it);
			return -EPROTO;
		}
		items[k] = it;
		rcs[k] = 0;
	}
	return 0;
}

/* UnprocessedKeys.<table>.Keys: each key -EAGAIN, one not asked for or
 * already answered is -EPROTO. */
static int take_unprocessed(const cJSON *entry,
			    const struct ddb_item *const *keys, size_t n,
			    int *rcs)
{
	const cJSON *list, *m;
	int rc;

	if (!entry)
		return 0;
	list = member(entry, "Keys");
	if (!cJSON_IsObject(entry) || !cJSON_IsArray(list))
		return -EPROTO;
	cJSON_ArrayForEach(m, list)
	{
		struct ddb_item *k_item;
		long k;

		rc = ddb_json_to_item(m, &k_item);
		if (rc)
			return rc;
		k = key_index(k_item, keys, n, true);
		ddb_item_free(k_item);
		if (k < 0 || rcs[k] != -ENOENT)
			return -EPROTO;
		rcs[k] = -EAGAIN;
	}
	return 0;
}

/* Keys to ask for: each with attributes, all of a key's type (S, N, B). */
static bool keys_ok(const struct ddb_item *const *keys, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (!keys[i] || !keys[i]->n)
			return false;
		for (j = 0; j < keys[i]->n; j++)
			if (keys[i]->attrs[j].type != DDB_T_S &&
			    keys[i]->attrs[j].type != DDB_T_N &&
			    keys[i]->attrs[j].type != DDB_T_B)
				return false;
	}
	return true;
}

/* Every key's answer rc with no item; free: the items are ours to free
 * (else the caller's pointers are only overwritten). */
static void set_results(struct ddb_item **items, int *rcs, size_t n, int rc,
			bool free_items)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (items) {
			if (free_items)
				ddb_item_free(items[i]);
			items[i] = NULL;
		}
		if (rcs)
			rcs[i] = rc;
	}
}

int ddb_parse_batch_get(const char *body, size_t len, const char *table,
			const struct ddb_item *const *keys, size_t n,
			struct ddb_item **items, int *rcs)
{
	const cJSON *list, *unprocessed;
	cJSON *root = NULL;
	int rc;

	set_results(items, rcs, n, -ENOENT, false);
	if (!table || (n && (!keys || !items || !rcs)) ||
	    (n && !keys_ok(keys, n))) {
		set_results(items, rcs, n, -EINVAL, false);
		return -EINVAL;
	}
	rc = ddb_json_parse(body, len, &root);
	if (!rc)
		rc = table_member(member(root, "Responses"), table, &list);
	if (!rc)
		rc = take_items(list, keys, n, items, rcs);
	unprocessed = member(root, "UnprocessedKeys");
	if (!rc && unprocessed && !cJSON_IsNull(unprocessed))
		rc = table_member(unprocessed, table, &unprocessed);
	else
		unprocessed = NULL;
	if (!rc)
		rc = take_unprocessed(unprocessed, keys, n, rcs);
	cJSON_Delete(root);
	if (rc)
		set_results(items, rcs, n, rc, true);
	return rc;
}

struct batch_answer {
	const char *table;
	const struct ddb_item *const *keys;
	size_t n;
	struct ddb_item **items;
	int *rcs;
};

static int answer_batch(const char *body, size_t len, void *arg)
{
	struct batch_answer *a = arg;

	return ddb_parse_batch_get(body, len, a->table, a->keys, a->n, a->items,
				   a->rcs);
}

/* {"RequestItems": {table: {"Keys": [...], "ConsistentRead": true}}} */
static int batch_request(const char *table, const struct ddb_item *const *keys,
			 size_t n, bool consistent, cJSON **out)
{
	cJSON *req = cJSON_CreateObject(), *items, *entry, *list;
	size_t i;

	*out = req;
	items = req ? cJSON_AddObjectToObject(req, "RequestItems") : NULL;
	entry = items ? cJSON_AddObjectToObject(items, table) : NULL;
	list = entry ? cJSON_AddArrayToObject(entry, "Keys") : NULL;
	if (!list)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		cJSON *k = ddb_json_from_item(keys[i]);

		if (!k || !cJSON_AddItemToArray(list, k)) {
			cJSON_Delete(k);
			return -ENOMEM;
		}
	}
	if (consistent && !cJSON_AddTrueToObject(entry, "ConsistentRead"))
		return -ENOMEM;
	return 0;
}

int ddb_batch_get_item(struct ddb *d, const char *table,
		       const struct ddb_item *const *keys, size_t n,
		       bool consistent, struct ddb_item **items, int *rcs,
		       struct ddb_call *call)
{
	struct batch_answer a = { table, keys, n, items, rcs };
	struct ddb_call scratch;
	cJSON *req = NULL;
	int rc;

	call = ddb_call_begin(call, &scratch);
	set_results(items, rcs, n, -ENOENT, false);
	if (!d || !table || !keys || !items || !rcs || !n ||
	    n > DDB_BATCH_GET_MAX || !keys_ok(keys, n)) {
		set_results(items, rcs, n, -EINVAL, false);
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	}
	rc = batch_request(table, keys, n, consistent, &req);
	rc = ddb_call_run(d, DDB_OP_BATCH_GET_ITEM, req, rc, NULL, answer_batch,
			  &a, NULL, call);
	if (rc)
		set_results(items, rcs, n, rc, true);
	return rc;
}
