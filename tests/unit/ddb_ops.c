/* ddb_ops: every DynamoDB operation against a scripted loopback server:
 * the JSON each request carries (parsed back with cJSON), the target, how
 * each answer shape comes back to the caller (items, old items on failed
 * conditions in both message spellings, pages, table and TTL
 * descriptions), pagination, and a retried write whose first attempt timed
 * out; BatchGetItem's request and answers. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddb.h"
#include "fake_aws.h"
#include "fakehttp.h"

#define MAX_SEEN 32

struct answer {
	int status;
	const char *body;
	int delay_ms;
};

/* The script of answers and what the server saw, protected by mu. */
static struct {
	pthread_mutex_t mu;
	struct answer answers[8];
	int n_answers;
	int next;
	char target[MAX_SEEN][64];
	char *body[MAX_SEEN];
	int n_seen;
} fx = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	struct answer a = { 200, "{}", 0 };

	(void)arg;
	pthread_mutex_lock(&fx.mu);
	if (fx.n_seen < MAX_SEEN) {
		if (fakehttp_header(req, "X-Amz-Target", fx.target[fx.n_seen],
				    sizeof(fx.target[0])))
			fx.target[fx.n_seen][0] = '\0';
		fx.body[fx.n_seen++] = strdup(req->body);
	}
	if (fx.n_answers)
		a = fx.answers[fx.next < fx.n_answers ? fx.next
						      : fx.n_answers - 1];
	fx.next++;
	pthread_mutex_unlock(&fx.mu);
	resp->status = a.status ? a.status : 200;
	resp->body = a.body;
	resp->delay_ms = a.delay_ms;
}

/* Sets the answers for the next requests and forgets what was seen. */
static void script(const struct answer *a, int n)
{
	int i;

	pthread_mutex_lock(&fx.mu);
	for (i = 0; i < fx.n_seen; i++)
		free(fx.body[i]);
	if (n)
		memcpy(fx.answers, a, (size_t)n * sizeof(*a));
	fx.n_answers = n;
	fx.next = 0;
	fx.n_seen = 0;
	pthread_mutex_unlock(&fx.mu);
}

static void answer1(int status, const char *body)
{
	struct answer a = { status, body, 0 };

	script(&a, 1);
}

static int seen(void)
{
	int n;

	pthread_mutex_lock(&fx.mu);
	n = fx.n_seen;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

/* Request i as JSON (the caller deletes it); checks its target. */
static cJSON *request(int i, const char *op)
{
	char want[64];
	cJSON *j;

	CHECK(i < seen());
	snprintf(want, sizeof(want), "DynamoDB_20120810.%s", op);
	CHECK_STR(fx.target[i], want);
	j = cJSON_Parse(fx.body[i]);
	CHECK(cJSON_IsObject(j));
	return j;
}

static const char *jstr(const cJSON *obj, const char *path)
{
	char buf[256], *save = NULL, *part;
	const cJSON *cur = obj;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, ".", &save); part && cur;
	     part = strtok_r(NULL, ".", &save)) {
		if (cJSON_IsArray(cur))
			cur = cJSON_GetArrayItem(cur, atoi(part));
		else
			cur = cJSON_GetObjectItemCaseSensitive(cur, part);
	}
	return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

static const cJSON *jget(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* JSON text of a member, for exact comparisons. */
static void check_member_json(const cJSON *obj, const char *name,
			      const char *want)
{
	char *text = cJSON_PrintUnformatted(jget(obj, name));

	CHECK_STR(text, want);
	cJSON_free(text);
}

static struct ddb_item *lock_key(const char *k)
{
	struct ddb_item *key = ddb_item_new();

	CHECK_INT(ddb_item_set_s(key, "lock_key", k), 0);
	CHECK_INT(ddb_item_set_s(key, "sort_key", "-"), 0);
	return key;
}

#define CCF_TYPE                                                               \
	"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"

static void check_get(struct ddb *d)
{
	struct ddb_item *key = lock_key("a/b"), *it;
	struct ddb_call call = { 0 };
	const char *s;
	cJSON *j;

	answer1(200, "{\"Item\":{\"lock_key\":{\"S\":\"a/b\"},"
		     "\"owner_name\":{\"S\":\"me\"}}}");
	CHECK_INT(ddb_get_item(d, "locks", key, true, &it, &call), 0);
	CHECK_INT(call.attempts, 1);
	CHECK_INT(ddb_item_get_s(it, "owner_name", &s), 0);
	CHECK_STR(s, "me");
	ddb_item_free(it);
	j = request(0, "GetItem");
	CHECK_STR(jstr(j, "TableName"), "locks");
	check_member_json(j, "Key",
			  "{\"lock_key\":{\"S\":\"a/b\"},"
			  "\"sort_key\":{\"S\":\"-\"}}");
	CHECK(cJSON_IsTrue(jget(j, "ConsistentRead")));
	cJSON_Delete(j);

	answer1(200, "{}");
	it = (struct ddb_item *)1;
	CHECK_INT(ddb_get_item(d, "locks", key, false, &it, NULL), -ENOENT);
	CHECK(!it);
	j = request(0, "GetItem");
	CHECK(!jget(j, "ConsistentRead"));
	cJSON_Delete(j);

	/* An unreadable success is asked again, twice more at most. */
	answer1(200, "{\"Item\":{\"a\":{\"S\":5}}}");
	CHECK_INT(ddb_get_item(d, "locks", key, true, &it, &call), -EPROTO);
	CHECK(!it);
	CHECK(strstr(call.err.message, "GetItem"));
	CHECK_INT(seen(), 3);
	CHECK_INT(call.attempts, 3);
	{
		struct answer page_then_item[] = {
			{ 200, "<html>proxy</html>", 0 },
			{ 200, "{\"Item\":{\"a\":{\"S\":5}}}", 0 },
			{ 200, "{\"Item\":{\"lock_key\":{\"S\":\"k\"}}}", 0 },
		};

		script(page_then_item, 3);
		CHECK_INT(ddb_get_item(d, "locks", key, true, &it, &call), 0);
		CHECK(ddb_item_count(it) == 1);
		ddb_item_free(it);
		CHECK_INT(seen(), 3);
	}

	answer1(400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
		     "ResourceNotFoundException\",\"message\":\"Requested "
		     "resource not found\"}");
	CHECK_INT(ddb_get_item(d, "missing", key, true, &it, &call), -ENXIO);
	CHECK_STR(call.err.type, "ResourceNotFoundException");

	CHECK_INT(ddb_get_item(d, NULL, key, true, &it, &call), -EINVAL);
	ddb_item_free(key);
}

/* BatchGetItem: the request (RequestItems with the keys, ConsistentRead
 * only when asked), its items matched to the keys, a throttled batch
 * retried, a failed one every key's error. */
static void check_batch(struct ddb *d)
{
	struct ddb_item *k[3] = { lock_key("x"), lock_key("y"), lock_key("z") };
	const struct ddb_item *const *keys = (const struct ddb_item *const *)k;
	struct ddb_item *items[DDB_BATCH_GET_MAX + 1];
	struct ddb_call call = { 0 };
	int rcs[DDB_BATCH_GET_MAX + 1], i;
	struct answer a[] = {
		{ 400,
		  "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
		  "ProvisionedThroughputExceededException\",\"message\":\"x\"}",
		  0 },
		{ 200,
		  "{\"Responses\":{\"locks\":[{\"lock_key\":{\"S\":\"z\"},"
		  "\"sort_key\":{\"S\":\"-\"}}]},\"UnprocessedKeys\":{"
		  "\"locks\":{\"Keys\":[{\"lock_key\":{\"S\":\"x\"},"
		  "\"sort_key\":{\"S\":\"-\"}}]}}}",
		  0 },
	};
	cJSON *j;

	script(a, 2);
	CHECK_INT(ddb_batch_get_item(d, "locks", keys, 3, true, items, rcs,
				     &call),
		  0);
	CHECK_INT(call.attempts, 2);
	CHECK_INT(rcs[0], -EAGAIN);
	CHECK_INT(rcs[1], -ENOENT);
	CHECK_INT(rcs[2], 0);
	CHECK(!items[0] && !items[1] && items[2]);
	ddb_item_free(items[2]);
	j = request(1, "BatchGetItem");
	CHECK(!jget(j, "TableName"));
	check_member_json(jget(j, "RequestItems"), "locks",
			  "{\"Keys\":[{\"lock_key\":{\"S\":\"x\"},"
			  "\"sort_key\":{\"S\":\"-\"}},{\"lock_key\":{\"S\":"
			  "\"y\"},\"sort_key\":{\"S\":\"-\"}},{\"lock_key\":"
			  "{\"S\":\"z\"},\"sort_key\":{\"S\":\"-\"}}],"
			  "\"ConsistentRead\":true}");
	cJSON_Delete(j);

	answer1(200, "{\"Responses\":{\"locks\":[]}}");
	CHECK_INT(ddb_batch_get_item(d, "locks", keys, 2, false, items, rcs,
				     NULL),
		  0);
	CHECK_INT(rcs[0], -ENOENT);
	CHECK_INT(rcs[1], -ENOENT);
	j = request(0, "BatchGetItem");
	CHECK(!jget(jget(jget(j, "RequestItems"), "locks"), "ConsistentRead"));
	cJSON_Delete(j);

	/* An item for no key asked for: nothing is believed. */
	answer1(200, "{\"Responses\":{\"locks\":[{\"lock_key\":{\"S\":"
		     "\"w\"},\"sort_key\":{\"S\":\"-\"}}]}}");
	CHECK_INT(ddb_batch_get_item(d, "locks", keys, 3, true, items, rcs,
				     &call),
		  -EPROTO);
	CHECK(strstr(call.err.message, "BatchGetItem"));
	for (i = 0; i < 3; i++)
		CHECK(rcs[i] == -EPROTO && !items[i]);
	CHECK_INT(seen(), 3);

	answer1(400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
		     "ResourceNotFoundException\",\"message\":\"no\"}");
	CHECK_INT(ddb_batch_get_item(d, "missing", keys, 3, true, items, rcs,
				     &call),
		  -ENXIO);
	for (i = 0; i < 3; i++)
		CHECK(rcs[i] == -ENXIO && !items[i]);
	CHECK_INT(ddb_batch_get_item(d, "locks", keys, 0, true, items, rcs,
				     &call),
		  -EINVAL);
	CHECK_INT(ddb_batch_get_item(d, "locks", keys, DDB_BATCH_GET_MAX + 1,
				     true, items, rcs, &call),
		  -EINVAL); /* keys not read: n is refused first */
	CHECK_INT(rcs[DDB_BATCH_GET_MAX], -EINVAL);
	for (i = 0; i < 3; i++)
		ddb_item_free(k[i]);
}

static void check_put(struct ddb *d)
{
	static const char *const names[] = { "#k", "lock_key", "#r",
					     "record_version_number", NULL };
	struct ddb_item *item = lock_key("a"), *values = ddb_item_new(), *old;
	struct ddb_expr cond = { .condition = "attribute_not_exists(#k) OR "
					      "#r = :rvn",
				 .names = names,
				 .values = values };
	struct ddb_call call = { 0 };
	const char *s;
	cJSON *j;

	CHECK_INT(ddb_item_set_s(item, "record_version_number", "mine"), 0);
	CHECK_INT(ddb_item_set_n(item, "lease_duration", 30), 0);
	CHECK_INT(ddb_item_set_b(item, "data", "\x00\x01\xff", 3), 0);
	CHECK_INT(ddb_item_set_s(values, ":rvn", "seen"), 0);

	/* Refused, with the old item; DynamoDB Local spells Message. */
	answer1(400,
		"{\"__type\":\"" CCF_TYPE "\",\"Message\":\"The "
		"conditional request failed\",\"Item\":{\"lock_key\":"
		"{\"S\":\"a\"},\"record_version_number\":{\"S\":\"theirs\"}}}");
	CHECK_INT(ddb_put_item(d, "locks", item, &cond, &old, &call),
		  -ECANCELED);
	CHECK_INT(seen(), 1);
	CHECK_INT(call.attempts, 1);
	CHECK_STR(call.err.message, "The conditional request failed");
	CHECK_INT(ddb_item_get_s(old, "record_version_number", &s), 0);
	CHECK_STR(s, "theirs");
	ddb_item_free(old);
	j = request(0, "PutItem");
	CHECK_STR(jstr(j, "TableName"), "locks");
	CHECK_STR(jstr(j, "ConditionExpression"),
		  "attribute_not_exists(#k) OR #r = :rvn");
	CHECK_STR(jstr(j, "ReturnValuesOnConditionCheckFailure"), "ALL_OLD");
	check_member_json(
		j, "ExpressionAttributeNames",
		"{\"#k\":\"lock_key\",\"#r\":\"record_version_number\"}");
	check_member_json(j, "ExpressionAttributeValues",
			  "{\":rvn\":{\"S\":\"seen\"}}");
	check_member_json(
		j, "Item",
		"{\"data\":{\"B\":\"AAH/\"},\"lease_duration\":{\"N\":"
		"\"30\"},\"lock_key\":{\"S\":\"a\"},"
		"\"record_version_number\":{\"S\":\"mine\"},"
		"\"sort_key\":{\"S\":\"-\"}}");
	CHECK(!jget(j, "ReturnValues"));
	cJSON_Delete(j);

	/* The other spelling, and no Item at all. */
	answer1(400, "{\"__type\":\"" CCF_TYPE "\",\"message\":\"The "
		     "conditional request failed\",\"Item\":{\"x\":{\"N\":"
		     "\"1\"}}}");
	CHECK_INT(ddb_put_item(d, "locks", item, &cond, &old, &call),
		  -ECANCELED);
	CHECK_STR(call.err.message, "The conditional request failed");
	CHECK_INT(ddb_item_count(old), 1);
	ddb_item_free(old);
	answer1(400, "{\"__type\":\"" CCF_TYPE "\"}");
	CHECK_INT(ddb_put_item(d, "locks", item, &cond, &old, &call),
		  -ECANCELED);
	CHECK(!old);
	/* An unreadable Item is never taken for "no item". */
	answer1(400, "{\"__type\":\"" CCF_TYPE "\",\"Item\":{\"x\":7}}");
	CHECK_INT(ddb_put_item(d, "locks", item, &cond, &old, &call), -EPROTO);
	CHECK(!old);

	/* Unconditional: none of the condition fields. */
	answer1(200, "{}");
	CHECK_INT(ddb_put_item(d, "locks", item, NULL, &old, &call), 0);
	CHECK(!old);
	j = request(0, "PutItem");
	CHECK(!jget(j, "ConditionExpression"));
	CHECK(!jget(j, "ReturnValuesOnConditionCheckFailure"));
	CHECK(!jget(j, "ExpressionAttributeNames"));
	CHECK(!jget(j, "ExpressionAttributeValues"));
	cJSON_Delete(j);

	/* A condition without placeholders sends no empty maps. */
	struct ddb_expr plain = { .condition =
					  "attribute_not_exists(lock_key)" };
	CHECK_INT(ddb_put_item(d, "locks", item, &plain, NULL, NULL), 0);
	j = request(0, "PutItem");
	CHECK(!jget(j, "ExpressionAttributeNames"));
	CHECK(!jget(j, "ExpressionAttributeValues"));
	cJSON_Delete(j);

	/* Odd name lists are refused before sending. */
	static const char *const odd[] = { "#k", NULL };
	struct ddb_expr bad = { .condition = "x", .names = odd };
	answer1(200, "{}");
	CHECK_INT(ddb_put_item(d, "locks", item, &bad, NULL, &call), -EINVAL);
	CHECK_INT(seen(), 0);
	ddb_item_free(values);
	ddb_item_free(item);
}

/* A write whose first attempt timed out after the server may have applied
 * it: the retry fails its condition and the caller gets the item as it is
 * now, to see that the write was its own. */
static void check_retried_write(struct ddb *d)
{
	struct ddb_item *item = lock_key("r"), *old;
	struct ddb_expr cond = { .condition =
					 "attribute_not_exists(lock_key)" };
	struct ddb_call call = { 0 };
	const char *s;
	struct answer a[] = {
		{ 200, "{}", 600 },
		{ 400,
		  "{\"__type\":\"" CCF_TYPE "\",\"Message\":\"The "
		  "conditional request failed\",\"Item\":{\"lock_key\":"
		  "{\"S\":\"r\"},\"record_version_number\":{\"S\":"
		  "\"mine\"}}}",
		  0 },
	};

	CHECK_INT(ddb_item_set_s(item, "record_version_number", "mine"), 0);
	script(a, 2);
	CHECK_INT(ddb_put_item(d, "locks", item, &cond, &old, &call),
		  -ECANCELED);
	CHECK_INT(call.attempts, 2);
	CHECK_INT(ddb_item_get_s(old, "record_version_number", &s), 0);
	CHECK_STR(s, "mine");
	ddb_item_free(old);
	ddb_item_free(item);
}

static void check_update(struct ddb *d)
{
	static const char *const names[] = { "#r", "record_version_number",
					     NULL };
	struct ddb_item *key = lock_key("u"), *values = ddb_item_new(), *out;
	struct ddb_expr e = { .condition = "#r = :mine",
			      .update = "SET #r = :new, expiry_time = :exp",
			      .names = names,
			      .values = values };
	struct ddb_call call = { 0 };
	const char *s;
	cJSON *j;

	ddb_item_set_s(values, ":mine", "v1");
	ddb_item_set_s(values, ":new", "v2");
	ddb_item_set_n(values, ":exp", 1700000000);
	answer1(200, "{\"Attributes\":{\"record_version_number\":{\"S\":"
		     "\"v2\"}}}");
	CHECK_INT(ddb_update_item(d, "locks", key, &e, DDB_RETURN_ALL_NEW, &out,
				  &call),
		  0);
	CHECK_INT(ddb_item_get_s(out, "record_version_number", &s), 0);
	CHECK_STR(s, "v2");
	ddb_item_free(out);
	j = request(0, "UpdateItem");
	CHECK_STR(jstr(j, "UpdateExpression"),
		  "SET #r = :new, expiry_time = :exp");
	CHECK_STR(jstr(j, "ConditionExpression"), "#r = :mine");
	CHECK_STR(jstr(j, "ReturnValues"), "ALL_NEW");
	CHECK_STR(jstr(j, "ReturnValuesOnConditionCheckFailure"), "ALL_OLD");
	CHECK_STR(jstr(j, "ExpressionAttributeValues.:exp.N"), "1700000000");
	check_member_json(j, "Key",
			  "{\"lock_key\":{\"S\":\"u\"},"
			  "\"sort_key\":{\"S\":\"-\"}}");
	cJSON_Delete(j);

	answer1(400, "{\"__type\":\"" CCF_TYPE "\",\"Message\":\"x\","
		     "\"Item\":{\"record_version_number\":{\"S\":\"v9\"}}}");
	CHECK_INT(ddb_update_item(d, "locks", key, &e, DDB_RETURN_NONE, &out,
				  &call),
		  -ECANCELED);
	CHECK_INT(ddb_item_get_s(out, "record_version_number", &s), 0);
	CHECK_STR(s, "v9");
	ddb_item_free(out);
	j = request(0, "UpdateItem");
	CHECK(!jget(j, "ReturnValues"));
	cJSON_Delete(j);

	answer1(200, "{}");
	CHECK_INT(ddb_update_item(d, "locks", key, &e, DDB_RETURN_UPDATED_OLD,
				  &out, &call),
		  0);
	CHECK(!out);
	j = request(0, "UpdateItem");
	CHECK_STR(jstr(j, "ReturnValues"), "UPDATED_OLD");
	cJSON_Delete(j);

	struct ddb_expr no_update = { .condition = "x" };
	CHECK_INT(ddb_update_item(d, "locks", key, &no_update, DDB_RETURN_NONE,
				  &out, &call),
		  -EINVAL);
	CHECK_INT(ddb_update_item(d, "locks", key, NULL, DDB_RETURN_NONE, &out,
				  &call),
		  -EINVAL);
	ddb_item_free(values);
	ddb_item_free(key);
}

static void check_delete(struct ddb *d)
{
	struct ddb_item *key = lock_key("d"), *values = ddb_item_new(), *old;
	struct ddb_expr cond = { .condition = "record_version_number = :mine",
				 .values = values };
	struct ddb_call call = { 0 };
	const char *s;
	cJSON *j;

	ddb_item_set_s(values, ":mine", "v1");
	answer1(200, "{\"Attributes\":{\"owner_name\":{\"S\":\"me\"}}}");
	CHECK_INT(ddb_delete_item(d, "locks", key, &cond, DDB_RETURN_ALL_OLD,
				  &old, &call),
		  0);
	CHECK_INT(ddb_item_get_s(old, "owner_name", &s), 0);
	CHECK_STR(s, "me");
	ddb_item_free(old);
	j = request(0, "DeleteItem");
	CHECK_STR(jstr(j, "ReturnValues"), "ALL_OLD");
	CHECK_STR(jstr(j, "ConditionExpression"),
		  "record_version_number = :mine");
	CHECK_STR(jstr(j, "ReturnValuesOnConditionCheckFailure"), "ALL_OLD");
	cJSON_Delete(j);

	/* A write's unreadable success is not sent again: it landed. */
	answer1(200, "{\"Attributes\":{\"owner_name\":{\"S\":5}}}");
	CHECK_INT(ddb_delete_item(d, "locks", key, &cond, DDB_RETURN_ALL_OLD,
				  &old, &call),
		  -EPROTO);
	CHECK(!old);
	CHECK_INT(seen(), 1);
	answer1(200, "<html>proxy</html>");
	CHECK(ddb_delete_item(d, "locks", key, &cond, DDB_RETURN_NONE, &old,
			      &call) < 0);
	CHECK_INT(seen(), 1);

	answer1(400, "{\"__type\":\"" CCF_TYPE "\",\"message\":\"x\","
		     "\"Item\":{\"owner_name\":{\"S\":\"other\"}}}");
	CHECK_INT(ddb_delete_item(d, "locks", key, &cond, DDB_RETURN_NONE, &old,
				  &call),
		  -ECANCELED);
	CHECK_INT(ddb_item_get_s(old, "owner_name", &s), 0);
	CHECK_STR(s, "other");
	ddb_item_free(old);

	answer1(200, "{}");
	CHECK_INT(ddb_delete_item(d, "locks", key, NULL, DDB_RETURN_ALL_OLD,
				  &old, &call),
		  0);
	CHECK(!old);
	CHECK_INT(ddb_delete_item(d, "locks", key, NULL, DDB_RETURN_ALL_NEW,
				  &old, &call),
		  -EINVAL);
	ddb_item_free(values);
	ddb_item_free(key);
}

static void check_pages(struct ddb *d)
{
	static const char *const names[] = { "#k", "lock_key", NULL };
	struct ddb_item *values = ddb_item_new(), *start = NULL;
	struct ddb_read rd = { .key_condition = "#k = :k",
			       .filter = "begins_with(owner_name, :o)",
			       .projection = "#k, sort_key",
			       .names = names,
			       .values = values,
			       .consistent = true,
			       .limit = 2 };
	struct answer a[] = {
		{ 200,
		  "{\"Items\":[{\"sort_key\":{\"S\":\"1\"}},{\"sort_key\":"
		  "{\"S\":\"2\"}}],\"Count\":2,\"ScannedCount\":2,"
		  "\"LastEvaluatedKey\":{\"lock_key\":{\"S\":\"q\"},"
		  "\"sort_key\":{\"S\":\"2\"}}}",
		  0 },
		{ 200,
		  "{\"Items\":[{\"sort_key\":{\"S\":\"3\"}}],\"Count\":1,"
		  "\"ScannedCount\":2,\"LastEvaluatedKey\":{\"lock_key\":"
		  "{\"S\":\"q\"},\"sort_key\":{\"S\":\"4\"}}}",
		  0 },
		{ 200,
		  "{\"Items\":[{\"sort_key\":{\"S\":\"5\"}}],\"Count\":1,"
		  "\"ScannedCount\":1}",
		  0 },
	};
	struct ddb_page page;
	struct ddb_call call = { 0 };
	char got[64] = "";
	int pages = 0;
	size_t i;
	cJSON *j;

	ddb_item_set_s(values, ":k", "q");
	ddb_item_set_s(values, ":o", "host");
	script(a, 3);
	do {
		const char *s;

		CHECK_INT(ddb_query(d, "locks", &rd, start, &page, &call), 0);
		for (i = 0; i < page.n; i++) {
			CHECK_INT(ddb_item_get_s(page.items[i], "sort_key", &s),
				  0);
			strcat(got, s);
		}
		ddb_item_free(start);
		start = page.last_key;
		page.last_key = NULL;
		ddb_page_fini(&page);
		pages++;
	} while (start && pages < 10);
	CHECK_INT(pages, 3);
	CHECK_STR(got, "1235");
	CHECK_INT(seen(), 3);
	j = request(0, "Query");
	CHECK_STR(jstr(j, "KeyConditionExpression"), "#k = :k");
	CHECK_STR(jstr(j, "FilterExpression"), "begins_with(owner_name, :o)");
	CHECK_STR(jstr(j, "ProjectionExpression"), "#k, sort_key");
	CHECK_STR(jstr(j, "ExpressionAttributeNames.#k"), "lock_key");
	CHECK_STR(jstr(j, "ExpressionAttributeValues.:o.S"), "host");
	CHECK(cJSON_IsTrue(jget(j, "ConsistentRead")));
	CHECK_INT(jget(j, "Limit")->valueint, 2);
	CHECK(!jget(j, "ExclusiveStartKey"));
	cJSON_Delete(j);
	j = request(1, "Query");
	check_member_json(j, "ExclusiveStartKey",
			  "{\"lock_key\":{\"S\":\"q\"},\"sort_key\":{\"S\":"
			  "\"2\"}}");
	cJSON_Delete(j);
	j = request(2, "Query");
	CHECK_STR(jstr(j, "ExclusiveStartKey.sort_key.S"), "4");
	cJSON_Delete(j);

	/* Scan: no key condition, Limit only when asked. */
	struct ddb_read scan = { .filter = "begins_with(lock_key, :p)",
				 .values = values };
	ddb_item_remove(values, ":k");
	ddb_item_remove(values, ":o");
	ddb_item_set_s(values, ":p", "dir/");
	answer1(200, "{\"Items\":[],\"Count\":0,\"ScannedCount\":7}");
	CHECK_INT(ddb_scan(d, "locks", &scan, NULL, &page, &call), 0);
	CHECK_INT(page.n, 0);
	CHECK_INT(page.scanned, 7);
	CHECK(!page.last_key);
	ddb_page_fini(&page);
	j = request(0, "Scan");
	CHECK(!jget(j, "KeyConditionExpression"));
	CHECK(!jget(j, "Limit"));
	CHECK(!jget(j, "ConsistentRead"));
	CHECK_STR(jstr(j, "FilterExpression"), "begins_with(lock_key, :p)");
	cJSON_Delete(j);

	answer1(200, "{\"Items\":[{\"a\":{\"N\":\"x\"}}]}");
	CHECK_INT(ddb_scan(d, "locks", &scan, NULL, &page, &call), -EPROTO);
	CHECK(!page.n && !page.items);
	CHECK_INT(seen(), 3);
	{
		struct answer bad_then_page[] = {
			{ 200, "{\"Items\":[{\"a\":{\"N\":\"x\"}}]}", 0 },
			{ 200,
			  "{\"Items\":[{\"a\":{\"N\":\"1\"}}],"
			  "\"ScannedCount\":1}",
			  0 },
		};

		script(bad_then_page, 2);
		CHECK_INT(ddb_scan(d, "locks", &scan, NULL, &page, &call), 0);
		CHECK_INT(page.n, 1);
		CHECK_INT(seen(), 2);
		ddb_page_fini(&page);
	}
	rd.key_condition = NULL;
	CHECK_INT(ddb_query(d, "locks", &rd, NULL, &page, &call), -EINVAL);
	ddb_item_free(values);
}

#define TABLE_JSON(status)                                                     \
	"{\"Table\":{\"TableName\":\"locks\",\"TableStatus\":\"" status "\","  \
	"\"KeySchema\":[{\"AttributeName\":\"lock_key\",\"KeyType\":"          \
	"\"HASH\"},{\"AttributeName\":\"sort_key\",\"KeyType\":\"RANGE\"}],"   \
	"\"AttributeDefinitions\":[{\"AttributeName\":\"lock_key\","           \
	"\"AttributeType\":\"S\"},{\"AttributeName\":\"sort_key\","            \
	"\"AttributeType\":\"S\"}],\"ItemCount\":3}}"
#define NOT_FOUND                                                              \
	"{\"__type\":\"com.amazonaws.dynamodb.v20120810#"                      \
	"ResourceNotFoundException\",\"message\":\"Requested resource not "    \
	"found\"}"

static void check_tables(struct ddb *d)
{
	struct ddb_table_info info;
	struct ddb_call call = { 0 };
	char status[32], attr[64];
	int64_t start;
	cJSON *j;

	answer1(200, "{\"TableDescription\":{\"TableStatus\":\"CREATING\"}}");
	CHECK_INT(ddb_create_table(d, "locks", "lock_key", "sort_key", &call),
		  0);
	j = request(0, "CreateTable");
	CHECK_STR(jstr(j, "TableName"), "locks");
	CHECK_STR(jstr(j, "BillingMode"), "PAY_PER_REQUEST");
	check_member_json(j, "AttributeDefinitions",
			  "[{\"AttributeName\":\"lock_key\",\"AttributeType\":"
			  "\"S\"},{\"AttributeName\":\"sort_key\","
			  "\"AttributeType\":\"S\"}]");
	check_member_json(j, "KeySchema",
			  "[{\"AttributeName\":\"lock_key\",\"KeyType\":"
			  "\"HASH\"},{\"AttributeName\":\"sort_key\","
			  "\"KeyType\":\"RANGE\"}]");
	CHECK(!jget(j, "ProvisionedThroughput"));
	cJSON_Delete(j);
	answer1(400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
		     "ResourceInUseException\",\"message\":\"Table already "
		     "exists: locks\"}");
	CHECK_INT(ddb_create_table(d, "locks", "lock_key", "sort_key", &call),
		  -EEXIST);

	answer1(200, TABLE_JSON("ACTIVE"));
	CHECK_INT(ddb_describe_table(d, "locks", &info, &call), 0);
	CHECK_STR(info.status, "ACTIVE");
	CHECK_STR(info.hash_name, "lock_key");
	CHECK_STR(info.range_name, "sort_key");
	CHECK_STR(info.range_type, "S");
	CHECK_INT(info.item_count, 3);
	answer1(400, NOT_FOUND);
	CHECK_INT(ddb_describe_table(d, "nope", &info, &call), -ENXIO);

	/* Waiting: not visible yet, creating, active. */
	struct answer w[] = { { 400, NOT_FOUND, 0 },
			      { 200, TABLE_JSON("CREATING"), 0 },
			      { 200, TABLE_JSON("ACTIVE"), 0 } };
	script(w, 3);
	CHECK_INT(ddb_wait_table_active(d, "locks", 0, &call), 0);
	CHECK_INT(seen(), 3);
	CHECK_INT(call.attempts, 3);
	answer1(200, TABLE_JSON("CREATING"));
	start = clk_sys_mono_ms();
	CHECK_INT(ddb_wait_table_active(d, "locks", start + 300, &call),
		  -ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - start < 1000);
	CHECK(seen() >= 2);
	CHECK(strstr(call.err.message, "CREATING"));
	answer1(400, NOT_FOUND);
	CHECK_INT(ddb_wait_table_active(d, "locks", clk_sys_mono_ms() + 200,
					&call),
		  -ENXIO);
	answer1(400, "{\"__type\":\"x#AccessDeniedException\"}");
	CHECK_INT(ddb_wait_table_active(d, "locks", 0, &call), -EACCES);
	CHECK_INT(seen(), 1);

	/* TTL. */
	answer1(200, "{\"TimeToLiveSpecification\":{\"AttributeName\":"
		     "\"expiry_time\",\"Enabled\":true}}");
	CHECK_INT(ddb_update_ttl(d, "locks", "expiry_time", true, &call), 0);
	j = request(0, "UpdateTimeToLive");
	CHECK_STR(jstr(j, "TimeToLiveSpecification.AttributeName"),
		  "expiry_time");
	CHECK(cJSON_IsTrue(
		jget(jget(j, "TimeToLiveSpecification"), "Enabled")));
	cJSON_Delete(j);

	struct answer again[] = {
		{ 400,
		  "{\"__type\":\"com.amazon.coral.validate#"
		  "ValidationException\",\"message\":\"TimeToLive is "
		  "already enabled\"}",
		  0 },
		{ 200,
		  "{\"TimeToLiveDescription\":{\"AttributeName\":"
		  "\"expiry_time\",\"TimeToLiveStatus\":\"ENABLED\"}}",
		  0 },
	};
	script(again, 2);
	CHECK_INT(ddb_update_ttl(d, "locks", "expiry_time", true, &call), 0);
	CHECK_INT(call.attempts, 2);
	CHECK_STR(call.err.type, "");
	j = request(1, "DescribeTimeToLive");
	CHECK_STR(jstr(j, "TableName"), "locks");
	cJSON_Delete(j);
	script(again, 2);
	CHECK_INT(ddb_update_ttl(d, "locks", "other_attr", true, &call),
		  -EINVAL);
	CHECK_STR(call.err.type, "ValidationException");

	answer1(200, "{\"TimeToLiveDescription\":{\"AttributeName\":"
		     "\"expiry_time\",\"TimeToLiveStatus\":\"ENABLING\"}}");
	CHECK_INT(ddb_describe_ttl(d, "locks", status, sizeof(status), attr,
				   sizeof(attr), &call),
		  0);
	CHECK_STR(status, "ENABLING");
	CHECK_STR(attr, "expiry_time");
	answer1(200, "{\"TimeToLiveDescription\":{}}");
	CHECK_INT(ddb_describe_ttl(d, "locks", status, sizeof(status), attr,
				   sizeof(attr), &call),
		  -EPROTO);
}

int main(int argc, char **argv)
{
	struct creds_chain *chain;
	struct fakehttp *s;
	struct awsreq *r, *r_short;
	struct ddb *d, *d_short;

	CHECK_INT(http_global_init(), 0);
	chain = fake_aws_creds();
	CHECK(chain);
	s = fakehttp_start(handler, NULL);
	CHECK(s);
	struct awsreq_config cfg = fake_aws_ddb_config(s, chain);
	r = awsreq_new(&cfg);
	cfg.attempt_timeout_ms = 200;
	r_short = awsreq_new(&cfg);
	d = ddb_new(r);
	d_short = ddb_new(r_short);
	CHECK(d && d_short);
	CHECK(!ddb_new(NULL));

	check_cases(argc, argv);
	CHECK_CASE(check_get, d);
	CHECK_CASE(check_batch, d);
	CHECK_CASE(check_put, d);
	CHECK_CASE(check_retried_write, d_short);
	CHECK_CASE(check_update, d);
	CHECK_CASE(check_delete, d);
	CHECK_CASE(check_pages, d);
	CHECK_CASE(check_tables, d);
	script(NULL, 0);
	ddb_free(d);
	ddb_free(d_short);
	ddb_free(NULL);
	awsreq_free(r);
	awsreq_free(r_short);
	fakehttp_stop(s);
	creds_chain_free(chain);
	http_global_cleanup();
	CHECK_DONE();
}
