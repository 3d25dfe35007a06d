/* ddb_read: Query and Scan, one page per call. Any thread; no state of
 * its own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

static int answer_page(const char *body, size_t len, void *page)
{
	return ddb_parse_page(body, len, page);
}

static int read_page(struct ddb *d, enum ddb_op op, const char *table,
		     const struct ddb_read *rd,
		     const struct ddb_item *start_key, struct ddb_page *page,
		     struct ddb_call *call)
{
	struct ddb_call scratch;
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
	if (!rc && rd->index)
		rc = ddb_call_add_string(req, "IndexName", rd->index);
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
	return ddb_call_run(d, op, req, rc, "cannot build request", answer_page,
			    page, NULL, call);
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
