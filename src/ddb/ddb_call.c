/* ddb_call: struct ddb and the request envelope every operation shares:
 * the request object and its expressions, the X-Amz-Target, sending with
 * awsreq and reading the answer (ddb_call_run), the -d log line, local and
 * unreadable-answer errors, and the operations' names (also the metrics'
 * request kinds). struct ddb is immutable after ddb_new and used from any
 * thread (the network state is in the awsreq, per thread). */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "log.h"
#include "text.h"

#define DDB_TARGET_PREFIX "DynamoDB_20120810."

static const char *const op_names[DDB_OP__COUNT] = {
	[DDB_OP_GET_ITEM] = "GetItem",
	[DDB_OP_PUT_ITEM] = "PutItem",
	[DDB_OP_UPDATE_ITEM] = "UpdateItem",
	[DDB_OP_DELETE_ITEM] = "DeleteItem",
	[DDB_OP_QUERY] = "Query",
	[DDB_OP_SCAN] = "Scan",
	[DDB_OP_CREATE_TABLE] = "CreateTable",
	[DDB_OP_DESCRIBE_TABLE] = "DescribeTable",
	[DDB_OP_UPDATE_TTL] = "UpdateTimeToLive",
	[DDB_OP_DESCRIBE_TTL] = "DescribeTimeToLive",
	[DDB_OP_UPDATE_TABLE] = "UpdateTable",
	[DDB_OP_BATCH_GET_ITEM] = "BatchGetItem",
};

const char *ddb_op_name(enum ddb_op op)
{
	return (unsigned)op < DDB_OP__COUNT ? op_names[op] : "?";
}

void ddb_name_metrics(struct metrics *m)
{
	metrics_name_kinds(m, op_names, DDB_OP__COUNT);
}

struct ddb *ddb_new(struct awsreq *req)
{
	struct ddb *d;

	if (!req)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->req = req;
	d->failures = (struct log_burst){
		.level = LOGL_WARN,
		.tag = "ddb",
		.what = "failed DynamoDB calls",
		.hint = " (-d shows every call)",
	};
	return d;
}

void ddb_log_failures(struct ddb *d)
{
	if (d)
		atomic_store(&d->log_failures, true);
}

void ddb_free(struct ddb *d)
{
	free(d);
}

/* Starts a call: a caller without a struct ddb_call gets a scratch one. */
struct ddb_call *ddb_call_begin(struct ddb_call *call, struct ddb_call *scratch)
{
	if (!call) {
		memset(scratch, 0, sizeof(*scratch));
		call = scratch;
	}
	awserr_clear(&call->err);
	call->attempts = 0;
	call->unanswered = 0;
	return call;
}

int ddb_call_fail(struct ddb_call *call, int err, const char *why)
{
	awserr_clear(&call->err);
	text_copy(call->err.message, sizeof(call->err.message), why);
	return err;
}

/* An answer arrived but could not be used: keeps the status and type of
 * the answer and says what was wrong. */
int ddb_call_unreadable(struct ddb_call *call, int rc, const char *what)
{
	if (rc == -ENOMEM)
		return ddb_call_fail(call, rc, "out of memory");
	snprintf(call->err.message, sizeof(call->err.message),
		 "unreadable %s answer", what);
	return -EPROTO;
}

int ddb_call_add_string(cJSON *obj, const char *name, const char *value)
{
	return cJSON_AddStringToObject(obj, name, value) ? 0 : -ENOMEM;
}

int ddb_call_add_item(cJSON *obj, const char *name, const struct ddb_item *it)
{
	cJSON *v = ddb_json_from_item(it);

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
int ddb_call_add_placeholders(cJSON *obj, const char *const *names,
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
		return ddb_call_add_item(obj, "ExpressionAttributeValues",
					 values);
	return 0;
}

/* Condition, update and placeholders of e; a condition always asks for
 * the current item when it fails. */
int ddb_call_add_expr(cJSON *obj, const struct ddb_expr *e)
{
	int rc;

	if (!e)
		return 0;
	if (e->condition) {
		rc = ddb_call_add_string(obj, "ConditionExpression",
					 e->condition);
		if (!rc)
			rc = ddb_call_add_string(
				obj, "ReturnValuesOnConditionCheckFailure",
				"ALL_OLD");
		if (rc)
			return rc;
	}
	if (e->update) {
		rc = ddb_call_add_string(obj, "UpdateExpression", e->update);
		if (rc)
			return rc;
	}
	return ddb_call_add_placeholders(obj, e->names, e->values);
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
 * read, a Query's :k), "prefix=P" (a Scan's :p), "table=T keys=N" (a
 * BatchGetItem), else "table=T". Never another attribute's value (data). */
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
	if (!v) {
		/* BatchGetItem: the table and how many keys. */
		const cJSON *t =
			cJSON_GetObjectItemCaseSensitive(req, "RequestItems");

		t = t ? t->child : NULL;
		if (t && t->string) {
			snprintf(out, len, "table=%s keys=%d", t->string,
				 cJSON_GetArraySize(
					 cJSON_GetObjectItemCaseSensitive(
						 t, "Keys")));
			return;
		}
	}
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

/* Whether a failed call is said in the log with DynamoDB's detail (the
 * caller's own line has only the errno): an item call of a running mount,
 * not a refused condition, which is an answer. */
static bool worth_saying(const struct ddb *d, enum ddb_op op, int rc)
{
	if (!rc || rc == -ECANCELED || !atomic_load(&d->log_failures))
		return false;
	switch (op) {
	case DDB_OP_GET_ITEM:
	case DDB_OP_PUT_ITEM:
	case DDB_OP_UPDATE_ITEM:
	case DDB_OP_DELETE_ITEM:
	case DDB_OP_QUERY:
	case DDB_OP_SCAN:
	case DDB_OP_BATCH_GET_ITEM:
		return true;
	default:
		return false;
	}
}

/* Sends req as operation op; the answer's body is left in resp. */
int ddb_call_send(struct ddb *d, enum ddb_op op, cJSON *req, struct buf *resp,
		  struct ddb_call *call)
{
	const char *name = ddb_op_name(op);
	char target[64], why[384];
	char *body;
	int attempts = 0, unanswered = 0, rc;
	int64_t start_us = clk_sys_mono_us();

	body = cJSON_PrintUnformatted(req);
	if (!body)
		return ddb_call_fail(call, -ENOMEM, "out of memory");
	snprintf(target, sizeof(target), DDB_TARGET_PREFIX "%s", name);
	rc = awsreq_json(d->req, op, target, body, strlen(body),
			 call->deadline_mono_ms, resp, &call->err, &attempts,
			 &unanswered);
	call->attempts += attempts;
	call->unanswered += unanswered;
	cJSON_free(body);
	if (log_enabled(LOGL_DEBUG))
		log_request(name, req, rc, call, attempts,
			    clk_sys_mono_us() - start_us);
	else if (worth_saying(d, op, rc) &&
		 log_burst_take(&d->failures, clk_sys_mono_ms()))
		log_warn("ddb", "%s failed after %d attempt%s: %s", name,
			 attempts, attempts == 1 ? "" : "s",
			 awserr_format(&call->err, why, sizeof(why)));
	return rc;
}

/* A new request object with TableName, or NULL. */
cJSON *ddb_call_request(const char *table)
{
	cJSON *req = cJSON_CreateObject();

	if (req && ddb_call_add_string(req, "TableName", table)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* After a write failed its condition: the current item into *old_out. */
int ddb_call_condition_failed(const struct buf *resp, struct ddb_call *call,
			      const char *op, struct ddb_item **old_out)
{
	int rc = ddb_parse_condition_failure(resp->data, resp->len, old_out);

	return rc ? ddb_call_unreadable(call, rc, op) : -ECANCELED;
}

/* Whether op only reads: sending it again changes nothing. */
static bool op_reads(enum ddb_op op)
{
	switch (op) {
	case DDB_OP_GET_ITEM:
	case DDB_OP_QUERY:
	case DDB_OP_SCAN:
	case DDB_OP_BATCH_GET_ITEM:
	case DDB_OP_DESCRIBE_TABLE:
	case DDB_OP_DESCRIBE_TTL:
		return true;
	default:
		return false;
	}
}

/* Whether a read failed on a success (2xx) whose body could not be read
 * (a proxy's page, a cut or mangled answer): worth asking again, as a
 * read changes nothing. A write's such answer is not: its write landed,
 * and its caller reads the row back. */
static bool read_unreadable(enum ddb_op op, int rc, const struct ddb_call *call)
{
	return rc && rc != -ENOENT && rc != -ENOMEM && op_reads(op) &&
	       call->err.http_status >= 200 && call->err.http_status < 300;
}

int ddb_call_run(struct ddb *d, enum ddb_op op, cJSON *req, int rc,
		 const char *why, ddb_answer_fn answer, void *arg,
		 struct ddb_item **old_out, struct ddb_call *call)
{
	const char *name = ddb_op_name(op);
	struct buf resp = BUF_INIT;
	char built[64];
	int resends = 0;

	if (rc) {
		snprintf(built, sizeof(built), "cannot build %s", name);
		rc = ddb_call_fail(call, rc, why ? why : built);
		goto out;
	}
	for (;;) {
		rc = ddb_call_send(d, op, req, &resp, call);
		if (rc == -ECANCELED) {
			rc = ddb_call_condition_failed(&resp, call, name,
						       old_out);
		} else if (!rc && answer) {
			rc = answer(resp.data, resp.len, arg);
			if (rc && rc != -ENOENT)
				rc = ddb_call_unreadable(call, rc, name);
		}
		/* Bounded by count, and by the call's deadline in awsreq. */
		if (!read_unreadable(op, rc, call) ||
		    resends++ >= DDB_UNREADABLE_RESENDS)
			break;
		log_debug("ddb", "%s: unreadable answer (%s), asking again",
			  name, call->err.message);
		buf_reset(&resp);
	}
out:
	cJSON_Delete(req);
	buf_fini(&resp);
	return rc;
}
