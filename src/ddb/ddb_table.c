/* ddb_table: CreateTable, DescribeTable, waiting for a table to be
 * ACTIVE, and Time to Live. Any thread (start-up and tests); no state of
 * its own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clk.h"
#include "retry.h"

/* Table waits: DescribeTable every POLL_MIN_MS, growing to POLL_MAX_MS. */
#define DDB_POLL_MIN_MS	    50
#define DDB_POLL_MAX_MS	    1000
#define DDB_POLL_MAX_COUNT  1000
#define DDB_WAIT_DEFAULT_MS 60000

static int add_key_attr(cJSON *defs, cJSON *schema, const char *name,
			const char *kind)
{
	cJSON *def = cJSON_CreateObject(), *key = cJSON_CreateObject();

	if (!def || !key || ddb_call_add_string(def, "AttributeName", name) ||
	    ddb_call_add_string(def, "AttributeType", "S") ||
	    ddb_call_add_string(key, "AttributeName", name) ||
	    ddb_call_add_string(key, "KeyType", kind)) {
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
	return ddb_create_table_gsi(d, table, hash_name, range_name, NULL,
				    call);
}

int ddb_create_table_gsi(struct ddb *d, const char *table,
			 const char *hash_name, const char *range_name,
			 const struct ddb_gsi *gsi, struct ddb_call *call)
{
	struct ddb_call scratch;
	cJSON *req, *defs = NULL, *schema = NULL;
	int rc;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table || !ddb_name_ok(hash_name) ||
	    (range_name && !ddb_name_ok(range_name)) ||
	    (gsi && !ddb_gsi_ok(gsi)))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	if (req) {
		defs = cJSON_AddArrayToObject(req, "AttributeDefinitions");
		schema = cJSON_AddArrayToObject(req, "KeySchema");
	}
	rc = defs && schema ? add_key_attr(defs, schema, hash_name, "HASH")
			    : -ENOMEM;
	if (!rc && range_name)
		rc = add_key_attr(defs, schema, range_name, "RANGE");
	if (!rc && gsi)
		rc = ddb_gsi_add_json(req, defs, gsi, false);
	if (!rc)
		rc = ddb_call_add_string(req, "BillingMode", "PAY_PER_REQUEST");
	return ddb_call_run(d, DDB_OP_CREATE_TABLE, req, rc, "out of memory",
			    NULL, NULL, NULL, call);
}

static int answer_table(const char *body, size_t len, void *out)
{
	return ddb_parse_table(body, len, out);
}

/* A request that names only the table (Describe*), its answer to answer. */
static int describe(struct ddb *d, enum ddb_op op, const char *table,
		    int (*answer)(const char *body, size_t len, void *arg),
		    void *arg, struct ddb_call *call)
{
	struct ddb_call scratch;
	cJSON *req;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table)
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	return ddb_call_run(d, op, req, req ? 0 : -ENOMEM, "out of memory",
			    answer, arg, NULL, call);
}

int ddb_describe_table(struct ddb *d, const char *table,
		       struct ddb_table_info *out, struct ddb_call *call)
{
	return describe(d, DDB_OP_DESCRIBE_TABLE, table, answer_table, out,
			call);
}

int ddb_poll_table(struct ddb *d, const char *table, int64_t deadline_mono_ms,
		   int64_t default_ms, int64_t max_poll_ms, ddb_poll_fn done,
		   void *arg, struct ddb_table_info *info,
		   struct ddb_call *call)
{
	const struct clk *clock = awsreq_clock(d->req);
	struct ddb_call one;
	int64_t poll_ms = DDB_POLL_MIN_MS, now = clk_mono_ms(clock);
	int polls, rc = 0, verdict;

	memset(info, 0, sizeof(*info));
	if (!deadline_mono_ms)
		deadline_mono_ms = now + default_ms;
	if (call->deadline_mono_ms && call->deadline_mono_ms < deadline_mono_ms)
		deadline_mono_ms = call->deadline_mono_ms;
	for (polls = 0; polls < DDB_POLL_MAX_COUNT; polls++) {
		memset(&one, 0, sizeof(one));
		one.deadline_mono_ms = deadline_mono_ms;
		rc = ddb_describe_table(d, table, info, &one);
		call->attempts += one.attempts;
		call->err = one.err;
		verdict = done(rc, info, arg);
		if (verdict <= 0)
			return verdict;
		now = clk_mono_ms(clock);
		if (now + poll_ms >= deadline_mono_ms)
			break;
		retry_sleep_ms(poll_ms);
		poll_ms = poll_ms * 2 > max_poll_ms ? max_poll_ms : poll_ms * 2;
	}
	return rc ? rc : -ETIMEDOUT;
}

/* ACTIVE; a table just created may not be visible at once (-ENXIO). */
static int table_done(int rc, const struct ddb_table_info *info, void *arg)
{
	(void)arg;
	if (!rc && !strcmp(info->status, "ACTIVE"))
		return 0;
	return rc && rc != -ENXIO ? rc : 1;
}

int ddb_wait_table_active(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, struct ddb_call *call)
{
	struct ddb_call scratch;
	struct ddb_table_info info;
	int rc;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table)
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	rc = ddb_poll_table(d, table, deadline_mono_ms, DDB_WAIT_DEFAULT_MS,
			    DDB_POLL_MAX_MS, table_done, NULL, &info, call);
	if (rc == -ETIMEDOUT)
		snprintf(call->err.message, sizeof(call->err.message),
			 "table %.64s is still %.31s", table, info.status);
	return rc;
}

struct ttl_answer {
	char *status, *attr;
	size_t status_len, attr_len;
};

static int answer_ttl(const char *body, size_t len, void *arg)
{
	struct ttl_answer *a = arg;

	return ddb_parse_ttl(body, len, a->status, a->status_len, a->attr,
			     a->attr_len);
}

int ddb_describe_ttl(struct ddb *d, const char *table, char *status,
		     size_t status_len, char *attr, size_t attr_len,
		     struct ddb_call *call)
{
	struct ttl_answer a = { status, attr, status_len, attr_len };

	return describe(d, DDB_OP_DESCRIBE_TTL, table, answer_ttl, &a, call);
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
	cJSON *req, *spec = NULL;
	int rc = 0;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table || !ddb_name_ok(attr))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	if (req)
		spec = cJSON_AddObjectToObject(req, "TimeToLiveSpecification");
	if (!spec || ddb_call_add_string(spec, "AttributeName", attr) ||
	    !cJSON_AddBoolToObject(spec, "Enabled", enabled))
		rc = -ENOMEM;
	rc = ddb_call_run(d, DDB_OP_UPDATE_TTL, req, rc, "out of memory", NULL,
			  NULL, NULL, call);
	if (rc == -EINVAL && !strcmp(call->err.type, "ValidationException") &&
	    ttl_already(d, table, attr, enabled, call)) {
		awserr_clear(&call->err);
		rc = 0;
	}
	return rc;
}
