/* store_batch: the DynamoDB store's get_locks against a scripted loopback
 * server, for the answers DynamoDB Local never gives: one BatchGetItem for
 * many keys whose answer holds a lock row, a directory marker (no lock),
 * an unprocessed key (-EAGAIN for it alone) and an absent key; a single key
 * read by GetItem as get_lock does; a failed request every key's error;
 * a malformed answer nothing believed; an answer over the response cap
 * asked for in halves; a BatchGetItem the policy refuses, the keys read
 * one by one instead. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "ddb.h"
#include "fake_aws.h"
#include "fakehttp.h"
#include "record.h"
#include "store_ddb.h"

/* What the server answers, by operation, and how many of each it saw. */
static struct {
	pthread_mutex_t mu;
	int status;
	const char *body;
	int batch_status; /* BatchGetItem's own answer, when set */
	const char *batch_body;
	int gets, batches;
} fx = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	char target[64] = "";

	(void)arg;
	fakehttp_header(req, "X-Amz-Target", target, sizeof(target));
	pthread_mutex_lock(&fx.mu);
	resp->status = fx.status;
	resp->body = fx.body;
	if (strstr(target, ".BatchGetItem")) {
		fx.batches++;
		if (fx.batch_status) {
			resp->status = fx.batch_status;
			resp->body = fx.batch_body;
		}
	} else if (strstr(target, ".GetItem")) {
		fx.gets++;
	}
	pthread_mutex_unlock(&fx.mu);
}

static void answer(int status, const char *body)
{
	pthread_mutex_lock(&fx.mu);
	fx.status = status;
	fx.body = body;
	fx.gets = fx.batches = 0;
	pthread_mutex_unlock(&fx.mu);
}

/* How many requests of an operation the server saw (batch, else GetItem). */
static int seen(bool batch)
{
	int n;

	pthread_mutex_lock(&fx.mu);
	n = batch ? fx.batches : fx.gets;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

#define KEYS(k) "\"lock_key\":{\"S\":\"" k "\"},\"sort_key\":{\"S\":\"-\"}"
#define ROW(k, rvn)                                                            \
	"{" KEYS(k) ",\"owner_name\":{\"S\":\"h:1\"},\"lease_duration\":{"     \
		    "\"N\":\"20\"},\"record_version_number\":{\"S\":\"" rvn    \
		    "\"},\"expiry_time\":{\"N\":\"1795322152\"}}"

static const char *const keys[] = { "held", "dir", "busy", "none" };
#define N 4

static struct lock_record outs[N];
static int rcs[N];

static void get_locks(struct store *st, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		record_init(&outs[i]);
		rcs[i] = 1;
	}
	st->ops->get_locks(st, keys, n, 0, outs, rcs);
}

static void fini_outs(size_t n)
{
	for (size_t i = 0; i < n; i++)
		record_fini(&outs[i]);
}

static void check_batch(struct store *st)
{
	CHECK(st->ops->get_locks);
	answer(200, "{\"Responses\":{\"t\":[{" KEYS(
			    "dir") ",\"lockfs_kind\":{\"S\":"
				   "\"dir\"}}," ROW(
					   "held",
					   "r1") "]},"
						 "\"Unproces"
						 "sedKeys\":"
						 "{\"t\":{"
						 "\"Keys\":["
						 "{" KEYS("bu"
							  "s"
							  "y") "}],"
							       "\"ConsistentRea"
							       "d\":true}}}");
	get_locks(st, N);
	CHECK_INT(seen(true), 1);
	CHECK_INT(seen(false), 0);
	CHECK_INT(rcs[0], 0);
	CHECK_STR(outs[0].key, "held");
	CHECK_STR(outs[0].rvn, "r1");
	CHECK_STR(outs[0].owner, "h:1");
	CHECK_INT(outs[0].lease_ms, 20000);
	CHECK_INT(rcs[1], -ENOENT); /* a namespace: no lock */
	CHECK_INT(rcs[2], -EAGAIN);
	CHECK_INT(rcs[3], -ENOENT);
	fini_outs(N);
}

/* One key: a GetItem, exactly as get_lock. */
static void check_single(struct store *st)
{
	answer(200, "{\"Item\":" ROW("held", "r2") "}");
	get_locks(st, 1);
	CHECK_INT(seen(false), 1);
	CHECK_INT(seen(true), 0);
	CHECK_INT(rcs[0], 0);
	CHECK_STR(outs[0].rvn, "r2");
	fini_outs(1);
}

/* A request that fails, or an answer that cannot be read: every key. */
static void check_failures(struct store *st)
{
	answer(400, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
		    "ResourceNotFoundException\",\"message\":\"no table\"}");
	get_locks(st, N);
	CHECK_INT(seen(true), 1);
	for (size_t i = 0; i < N; i++)
		CHECK_INT(rcs[i], -ENXIO);
	fini_outs(N);
	answer(200, "{\"Responses\":{\"t\":[" ROW("held", "r1") "," ROW(
			    "other", "r9") "]}}");
	get_locks(st, N);
	for (size_t i = 0; i < N; i++)
		CHECK_INT(rcs[i], -EPROTO);
	fini_outs(N);
}

/* An answer bigger than the response cap (4 MiB: rows with big data):
 * asked for again in halves, then one GetItem per key; every key gets its
 * row. */
static void check_too_big(struct store *st)
{
	static char big[5 << 20];

	memset(big, ' ', sizeof(big) - 1);
	answer(200, "{\"Item\":" ROW("held", "r4") "}");
	pthread_mutex_lock(&fx.mu);
	fx.batch_status = 200;
	fx.batch_body = big;
	pthread_mutex_unlock(&fx.mu);
	get_locks(st, N);
	CHECK_INT(seen(true), 3); /* all four, then two and two */
	CHECK_INT(seen(false), N);
	for (size_t i = 0; i < N; i++) {
		CHECK_INT(rcs[i], 0);
		CHECK_STR(outs[i].rvn, "r4");
	}
	fini_outs(N);
	pthread_mutex_lock(&fx.mu);
	fx.batch_status = 0;
	pthread_mutex_unlock(&fx.mu);
}

/* A policy without dynamodb:BatchGetItem (AccessDenied): the keys are
 * read with a GetItem each, at once and from then on (no BatchGetItem
 * again). Run last: the store remembers the refusal. */
static void check_refused(struct store *st)
{
	answer(200, "{\"Item\":" ROW("held", "r3") "}");
	pthread_mutex_lock(&fx.mu);
	fx.batch_status = 400;
	fx.batch_body = "{\"__type\":\"com.amazon.coral.service#"
			"AccessDeniedException\",\"message\":\"no\"}";
	pthread_mutex_unlock(&fx.mu);
	get_locks(st, N);
	CHECK_INT(seen(true), 1);
	CHECK_INT(seen(false), N);
	for (size_t i = 0; i < N; i++)
		CHECK_INT(rcs[i], 0);
	fini_outs(N);
	answer(200, "{\"Item\":" ROW("held", "r3") "}");
	get_locks(st, N);
	CHECK_INT(seen(true), 0);
	CHECK_INT(seen(false), N);
	for (size_t i = 0; i < N; i++)
		CHECK_INT(rcs[i], 0);
	fini_outs(N);
}

int main(int argc, char **argv)
{
	struct creds_chain *chain;
	struct fakehttp *s;
	struct awsreq *r;
	struct ddb *d;
	struct store *st;

	CHECK_INT(http_global_init(), 0);
	chain = fake_aws_creds();
	CHECK(chain);
	s = fakehttp_start(handler, NULL);
	CHECK(s);
	struct awsreq_config cfg = fake_aws_ddb_config(s, chain);
	r = awsreq_new(&cfg);
	d = r ? ddb_new(r) : NULL;
	st = d ? store_ddb_new(d, "t", 30000) : NULL;
	CHECK(st);

	check_cases(argc, argv);
	CHECK_CASE(check_batch, st);
	CHECK_CASE(check_single, st);
	CHECK_CASE(check_failures, st);
	CHECK_CASE(check_too_big, st);
	CHECK_CASE(check_refused, st);
	store_free(st);
	ddb_free(d);
	awsreq_free(r);
	fakehttp_stop(s);
	creds_chain_free(chain);
	http_global_cleanup();
	CHECK_DONE();
}
