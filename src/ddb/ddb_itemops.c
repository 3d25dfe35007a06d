/* ddb_itemops: the item operations GetItem, PutItem, UpdateItem and
 * DeleteItem, conditional writes returning the current item on a failed
 * condition. Any thread; no state of its own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

static int answer_item(const char *body, size_t len, void *item_out)
{
	return ddb_parse_get_item(body, len, item_out);
}

int ddb_get_item(struct ddb *d, const char *table, const struct ddb_item *key,
		 bool consistent, struct ddb_item **item_out,
		 struct ddb_call *call)
{
	struct ddb_call scratch;
	cJSON *req;
	int rc;

	call = ddb_call_begin(call, &scratch);
	if (item_out)
		*item_out = NULL;
	if (!d || !table || !key)
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	rc = req ? ddb_call_add_item(req, "Key", key) : -ENOMEM;
	if (!rc && consistent && !cJSON_AddTrueToObject(req, "ConsistentRead"))
		rc = -ENOMEM;
	return ddb_call_run(d, DDB_OP_GET_ITEM, req, rc, NULL, answer_item,
			    item_out, NULL, call);
}

static int answer_attributes(const char *body, size_t len, void *out)
{
	return ddb_parse_attributes(body, len, out);
}

/* PutItem, UpdateItem and DeleteItem: one write of the item (or key) under
 * field, conditional when expr has a condition. On success *out gets the
 * Attributes asked for with rv_name (NULL: none asked, *out stays NULL);
 * on -ECANCELED, the item as it is now. */
static int write_item(struct ddb *d, enum ddb_op op, const char *table,
		      const char *field, const struct ddb_item *item,
		      const struct ddb_expr *expr, const char *rv_name,
		      struct ddb_item **out, struct ddb_call *call)
{
	cJSON *req = ddb_call_request(table);
	int rc = req ? ddb_call_add_item(req, field, item) : -ENOMEM;

	if (!rc)
		rc = ddb_call_add_expr(req, expr);
	if (!rc && rv_name)
		rc = ddb_call_add_string(req, "ReturnValues", rv_name);
	return ddb_call_run(d, op, req, rc, NULL,
			    rv_name ? answer_attributes : NULL, out, out, call);
}

int ddb_put_item(struct ddb *d, const char *table, const struct ddb_item *item,
		 const struct ddb_expr *cond, struct ddb_item **old_out,
		 struct ddb_call *call)
{
	struct ddb_call scratch;

	call = ddb_call_begin(call, &scratch);
	if (old_out)
		*old_out = NULL;
	if (!d || !table || !item || (cond && cond->update))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	return write_item(d, DDB_OP_PUT_ITEM, table, "Item", item, cond, NULL,
			  old_out, call);
}

int ddb_update_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *expr,
		    enum ddb_return rv, struct ddb_item **out,
		    struct ddb_call *call)
{
	struct ddb_call scratch;
	const char *rv_name = return_name(rv);

	call = ddb_call_begin(call, &scratch);
	if (out)
		*out = NULL;
	if (!d || !table || !key || !expr || !expr->update ||
	    (rv != DDB_RETURN_NONE && !rv_name))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	return write_item(d, DDB_OP_UPDATE_ITEM, table, "Key", key, expr,
			  rv_name, out, call);
}

int ddb_delete_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *cond,
		    enum ddb_return rv, struct ddb_item **old_out,
		    struct ddb_call *call)
{
	struct ddb_call scratch;

	call = ddb_call_begin(call, &scratch);
	if (old_out)
		*old_out = NULL;
	if (!d || !table || !key || (cond && cond->update) ||
	    (rv != DDB_RETURN_NONE && rv != DDB_RETURN_ALL_OLD))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	return write_item(d, DDB_OP_DELETE_ITEM, table, "Key", key, cond,
			  rv == DDB_RETURN_ALL_OLD ? "ALL_OLD" : NULL, old_out,
			  call);
}
