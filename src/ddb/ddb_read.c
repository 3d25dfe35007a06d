/* ddb_read: Query and Scan, one page per call. Any thread; no state of
 * its own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

static int read_page(struct ddb *d, enum ddb_op op, const char *table,
		     const struct ddb_read *rd,
		     const struct ddb_item *start_key, struct ddb_page *page,
		     struct ddb_call *call)
{
	const char *name = ddb_op_name(op);
	struct ddb_call scratch;
	struct buf resp = BUF_INIT;
	cJSON *req;
	int rc = 0;

	call = ddb_call_begin(call, &scratch);
	if (page)
		memset(page, 0, sizeof(*page));
	if (!d || !table || !rd || !page || rd->limit < 0 ||
	    (op == DDB_OP_QUERY && !rd->key_condition))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	if (!req)
		rc = -ENOMEM;
	if (!rc && op == DDB_OP_QUERY)
		rc = ddb_call_add_string(req, "KeyConditionExpression",
					 rd->key_condition);
	if (!rc && rd->filter)
		rc = ddb_call_add_string(req, "FilterExpression", rd->filter);
	if (!rc && rd->projection)
		rc = ddb_call_add_string(req, "ProjectionExpression",
					 rd->projection);
	if (!rc)
		rc = ddb_call_add_placeholders(req, rd->names, rd->values);
	if (!rc && rd->consistent &&
	    !cJSON_AddTrueToObject(req, "ConsistentRead"))
		rc = -ENOMEM;
	if (!rc && rd->limit &&
	    !cJSON_AddNumberToObject(req, "Limit", rd->limit))
		rc = -ENOMEM;
	if (!rc && start_key)
		rc = ddb_call_add_item(req, "ExclusiveStartKey", start_key);
	if (rc) {
		rc = ddb_call_fail(call, rc, "cannot build request");
		goto out;
	}
	rc = ddb_call_send(d, op, req, &resp, call);
	if (!rc) {
		rc = ddb_parse_page(resp.data, resp.len, page);
		if (rc)
			rc = ddb_call_unreadable(call, rc, name);
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
	return read_page(d, DDB_OP_QUERY, table, rd, start_key, page, call);
}

int ddb_scan(struct ddb *d, const char *table, const struct ddb_read *rd,
	     const struct ddb_item *start_key, struct ddb_page *page,
	     struct ddb_call *call)
{
	return read_page(d, DDB_OP_SCAN, table, rd, start_key, page, call);
}
