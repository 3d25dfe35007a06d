/* ddb_awsreq: one signed JSON 1.0 call against a loopback fake server:
 * the headers sent and what was signed, retries of throttling and 5xx,
 * retries bounded by attempts and by the deadline, no retry of refused
 * conditions or validation errors, the answer body kept on failure,
 * malformed and oversize answers, refused connections, per-thread clients,
 * the retry quota shared by calls, and metrics. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awsreq.h"
#include "ddb.h"
#include "check.h"
#include "clk.h"
#include "fakehttp.h"
#include "retry_quota.h"
#include "sigv4.h"

#define TARGET "DynamoDB_20120810.GetItem"
#define BODY   "{\"TableName\":\"t\"}"

/* What the handler does, chosen by each scenario. */
enum mode {
	M_ECHO_HEADERS, /* 200 with a JSON object; remembers the request */
	M_THROTTLE_2,	/* 2x ThrottlingException, then 200 */
	M_PTE_1,	/* ProvisionedThroughputExceeded, then 200 */
	M_5XX_2,	/* 500, 503, then 200 */
	M_ALWAYS_503,
	M_CONDITION, /* ConditionalCheckFailedException with an Item */
	M_VALIDATION,
	M_NOT_JSON, /* 200 with text */
	M_EMPTY,    /* 200 with an empty body */
	M_BIG,	    /* 200 with 5000 bytes */
	M_SLOW,	    /* answers after 1500 ms */
	M_DROP_1,   /* closes the first connection, then 200 */
	M_OK,
};

struct scenario {
	atomic_int mode;
	pthread_mutex_t mu;
	char headers[16384]; /* of the last request, protected by mu */
	char body[4096];
};

static char big[5001];

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	struct scenario *sc = arg;

	switch (atomic_load(&sc->mode)) {
	case M_ECHO_HEADERS:
		pthread_mutex_lock(&sc->mu);
		snprintf(sc->headers, sizeof(sc->headers), "%s", req->headers);
		snprintf(sc->body, sizeof(sc->body), "%s", req->body);
		pthread_mutex_unlock(&sc->mu);
		resp->body = "{\"ok\":true}";
		break;
	case M_THROTTLE_2:
		if (req->index < 2) {
			resp->status = 400;
			resp->body = "{\"__type\":\"com.amazonaws.dynamodb."
				     "v20120810#ThrottlingException\","
				     "\"message\":\"Rate exceeded\"}";
		} else {
			resp->body = "{}";
		}
		break;
	case M_PTE_1:
		if (req->index < 1) {
			resp->status = 400;
			resp->body = "{\"__type\":\"com.amazonaws.dynamodb."
				     "v20120810#"
				     "ProvisionedThroughputExceededException\","
				     "\"message\":\"slow down\"}";
		} else {
			resp->body = "{}";
		}
		break;
	case M_5XX_2:
		if (req->index == 0) {
			resp->status = 500;
			resp->body = "{\"__type\":\"com.amazonaws.dynamodb."
				     "v20120810#InternalServerError\"}";
		} else if (req->index == 1) {
			resp->status = 503;
			resp->content_type = "text/html";
			resp->body = "<html>unavailable</html>";
		} else {
			resp->body = "{}";
		}
		break;
	case M_ALWAYS_503:
		resp->status = 503;
		resp->body = "{\"__type\":\"x#ServiceUnavailable\"}";
		break;
	case M_CONDITION:
		resp->status = 400;
		resp->body = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
			     "ConditionalCheckFailedException\",\"Message\":"
			     "\"The conditional request failed\",\"Item\":"
			     "{\"k\":{\"S\":\"v\"}}}";
		break;
	case M_VALIDATION:
		resp->status = 400;
		resp->body = "{\"__type\":\"com.amazon.coral.validate#"
			     "ValidationException\",\"message\":\"bad\"}";
		break;
	case M_NOT_JSON:
		resp->content_type = "text/html";
		resp->body = "<html>proxy says hi</html>";
		break;
	case M_EMPTY:
		resp->body = "";
		break;
	case M_BIG:
		resp->body = big;
		break;
	case M_SLOW:
		resp->delay_ms = 1500;
		resp->body = "{}";
		break;
	case M_DROP_1:
		if (req->index == 0)
			resp->drop = 1;
		else
			resp->body = "{}";
		break;
	default:
		resp->body = "{}";
		break;
	}
}

static struct creds_chain *chain;
static struct metrics metrics;
static int64_t last_call_ms; /* duration of the last awsreq_json of run() */
static int last_unanswered;  /* its attempts without an HTTP answer */

static struct awsreq *new_req(const char *url, int max_attempts,
			      long attempt_ms)
{
	struct awsreq_config cfg = {
		.endpoint = url,
		.region = "us-east-1",
		.service = "dynamodb",
		.creds = chain,
		.http = { .max_response_bytes = 1000 },
		.attempt_timeout_ms = attempt_ms,
		.retry = { .max_attempts = max_attempts,
			   .base_ms = 5,
			   .cap_ms = 20 },
		.metrics = &metrics,
	};

	return awsreq_new(&cfg);
}

/* One GetItem on r with the default deadline; *attempts (may be NULL)
 * gets its HTTP exchanges. */
static int get_item(struct awsreq *r, struct buf *resp, struct aws_error *err,
		    int *attempts)
{
	return awsreq_json(r, DDB_OP_GET_ITEM, TARGET, BODY, strlen(BODY), 0,
			   resp, err, attempts, NULL);
}

/* Runs one call against a fresh server in the given mode. */
static int run(struct scenario *sc, enum mode mode, int max_attempts,
	       int64_t deadline_mono_ms, struct buf *resp,
	       struct aws_error *err, int *attempts, int *requests)
{
	struct fakehttp *s;
	struct awsreq *r;
	int rc;

	atomic_store(&sc->mode, mode);
	s = fakehttp_start(handler, sc);
	CHECK(s);
	r = new_req(fakehttp_url(s), max_attempts, 0);
	CHECK(r);
	last_call_ms = clk_sys_mono_ms();
	rc = awsreq_json(r, DDB_OP_GET_ITEM, TARGET, BODY, strlen(BODY),
			 deadline_mono_ms, resp, err, attempts,
			 &last_unanswered);
	last_call_ms = clk_sys_mono_ms() - last_call_ms;
	*requests = fakehttp_requests(s);
	awsreq_free(r);
	fakehttp_stop(s);
	return rc;
}

static void check_signed_headers(struct scenario *sc)
{
	struct fakehttp_request fake = { 0 };
	struct buf resp = BUF_INIT, want = BUF_INIT;
	struct aws_error err;
	char ctype[64], target[64], date[32], host[64], token[64], authz[512],
		expect_host[64];
	int attempts, requests;
	struct fakehttp *s;
	struct awsreq *r;

	atomic_store(&sc->mode, M_ECHO_HEADERS);
	s = fakehttp_start(handler, sc);
	CHECK(s);
	r = new_req(fakehttp_url(s), 0, 0);
	CHECK(r);
	CHECK_INT(get_item(r, &resp, &err, &attempts), 0);
	CHECK_INT(attempts, 1);
	CHECK_INT(err.http_status, 200);
	CHECK_STR(buf_str(&resp), "{\"ok\":true}");
	requests = fakehttp_requests(s);
	CHECK_INT(requests, 1);

	snprintf(fake.headers, sizeof(fake.headers), "%s", sc->headers);
	CHECK_STR(sc->body, BODY);
	CHECK_INT(fakehttp_header(&fake, "Content-Type", ctype, sizeof(ctype)),
		  0);
	CHECK_STR(ctype, "application/x-amz-json-1.0");
	CHECK_INT(
		fakehttp_header(&fake, "X-Amz-Target", target, sizeof(target)),
		0);
	CHECK_STR(target, TARGET);
	CHECK_INT(fakehttp_header(&fake, "Host", host, sizeof(host)), 0);
	snprintf(expect_host, sizeof(expect_host), "127.0.0.1:%d",
		 fakehttp_port(s));
	CHECK_STR(host, expect_host);
	CHECK_INT(fakehttp_header(&fake, "X-Amz-Date", date, sizeof(date)), 0);
	CHECK_INT(strlen(date), 16);
	CHECK(date[8] == 'T' && date[15] == 'Z');
	CHECK_INT(fakehttp_header(&fake, "X-Amz-Security-Token", token,
				  sizeof(token)),
		  0);
	CHECK_STR(token, "the-session-token");
	CHECK_INT(fakehttp_header(&fake, "Authorization", authz, sizeof(authz)),
		  0);

	/* The Authorization is exactly the signature of what was sent. */
	struct sigv4_header sh[] = {
		{ "Content-Type", ctype },
		{ "Host", host },
		{ "X-Amz-Date", date },
		{ "X-Amz-Target", target },
		{ "X-Amz-Security-Token", token },
	};
	struct sigv4_creds cr = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG",
				  "the-session-token" };
	struct sigv4_params params = { "us-east-1", "dynamodb", date, false };
	CHECK_INT(sigv4_sign("POST", "/", NULL, sh, 5, BODY, strlen(BODY), &cr,
			     &params, &want),
		  0);
	CHECK_STR(authz, buf_str(&want));
	CHECK(strstr(authz, "SignedHeaders=content-type;host;x-amz-date;"
			    "x-amz-security-token;x-amz-target,"));
	CHECK(!strncmp(authz, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 40));
	CHECK(!strstr(sc->headers, "wJalrXUtnFEMI"));

	/* Many calls on one thread reuse the keep-alive connection: the fake
	 * server has 64 connection slots and never reuses one. */
	for (int i = 0; i < 100; i++)
		CHECK_INT(get_item(r, &resp, &err, NULL), 0);
	CHECK_INT(fakehttp_requests(s), 101);
	CHECK_INT(metrics.req[DDB_OP_GET_ITEM].count, 101);
	CHECK_INT(metrics.req[DDB_OP_GET_ITEM].errors, 0);
	awsreq_free(r);
	fakehttp_stop(s);
	buf_fini(&resp);
	buf_fini(&want);
}

static void check_retries(struct scenario *sc)
{
	struct buf resp = BUF_INIT;
	struct aws_error err;
	int attempts, requests, rc;
	uint64_t retries = metrics_get(&metrics, MC_DDB_RETRIES);
	uint64_t throttles = metrics_get(&metrics, MC_DDB_THROTTLES);

	rc = run(sc, M_THROTTLE_2, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, 0);
	CHECK_INT(attempts, 3);
	CHECK_INT(requests, 3);
	CHECK_INT(last_unanswered, 0); /* throttles are answers */
	CHECK_INT(metrics_get(&metrics, MC_DDB_RETRIES), retries + 2);
	CHECK_INT(metrics_get(&metrics, MC_DDB_THROTTLES), throttles + 2);

	rc = run(sc, M_PTE_1, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(metrics_get(&metrics, MC_DDB_THROTTLES), throttles + 3);

	rc = run(sc, M_5XX_2, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, 0);
	CHECK_INT(attempts, 3);
	CHECK_INT(requests, 3);
	CHECK_STR(buf_str(&resp), "{}");

	/* A dropped connection is retried on a new one. */
	rc = run(sc, M_DROP_1, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, 0);
	CHECK_INT(attempts, 2);

	/* Bounded by max_attempts: the last error is reported. */
	rc = run(sc, M_ALWAYS_503, 4, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -EIO);
	CHECK_INT(attempts, 4);
	CHECK_INT(requests, 4);
	CHECK_INT(err.http_status, 503);
	CHECK_STR(err.type, "ServiceUnavailable");

	/* Never retried: a failed condition (its body is kept) and a
	 * validation error. */
	rc = run(sc, M_CONDITION, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -ECANCELED);
	CHECK_INT(attempts, 1);
	CHECK_INT(requests, 1);
	CHECK_STR(err.type, "ConditionalCheckFailedException");
	CHECK_STR(err.message, "The conditional request failed");
	CHECK(strstr(buf_str(&resp), "\"Item\":{\"k\":{\"S\":\"v\"}}"));
	rc = run(sc, M_VALIDATION, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -EINVAL);
	CHECK_INT(requests, 1);
	CHECK_STR(err.type, "ValidationException");
	buf_fini(&resp);
}

/* The retry quota: shared by every call of one client, spent by calls
 * that keep failing (5 a retry), then no call retries (each makes one
 * attempt, counted as refused) until successes give tokens back (1 each,
 * or what the last retry took). Its default (500) is the AWS SDKs'. */
static void check_retry_quota(struct scenario *sc)
{
	struct awsreq_config cfg = {
		.region = "us-east-1",
		.service = "dynamodb",
		.creds = chain,
		.http = { .max_response_bytes = 1000 },
		.retry = { .max_attempts = 4, .base_ms = 1, .cap_ms = 2 },
		.retry_quota = 12, /* two retries */
		.metrics = &metrics,
	};
	uint64_t refused = metrics_get(&metrics, MC_DDB_RETRIES_REFUSED);
	struct buf resp = BUF_INIT;
	struct aws_error err;
	struct fakehttp *s;
	struct awsreq *r;
	int attempts, i;

	atomic_store(&sc->mode, M_ALWAYS_503);
	s = fakehttp_start(handler, sc);
	CHECK(s);
	cfg.endpoint = fakehttp_url(s);
	r = awsreq_new(&cfg);
	CHECK(r);
	/* 12 tokens pay two retries of 5: the first call makes 3 attempts
	 * and is refused its fourth. */
	CHECK_INT(get_item(r, &resp, &err, &attempts), -EIO);
	CHECK_INT(attempts, 3);
	CHECK_INT(err.http_status, 503);
	CHECK_INT(metrics_get(&metrics, MC_DDB_RETRIES_REFUSED), refused + 1);
	/* The quota is the client's, not the call's: the next calls make one
	 * attempt each. */
	for (i = 0; i < 3; i++) {
		CHECK_INT(get_item(r, &resp, &err, &attempts), -EIO);
		CHECK_INT(attempts, 1);
	}
	CHECK_INT(fakehttp_requests(s), 6);
	CHECK_INT(metrics_get(&metrics, MC_DDB_RETRIES_REFUSED), refused + 4);
	/* Two tokens left; three successes at once give three back: 5,
	 * enough for one retry again. */
	atomic_store(&sc->mode, M_OK);
	for (i = 0; i < 3; i++)
		CHECK_INT(get_item(r, &resp, &err, &attempts), 0);
	atomic_store(&sc->mode, M_ALWAYS_503);
	CHECK_INT(get_item(r, &resp, &err, &attempts), -EIO);
	CHECK_INT(attempts, 2);
	awsreq_free(r);
	fakehttp_stop(s);

	/* retry_quota < 0: no quota, as before it. */
	cfg.retry_quota = -1;
	atomic_store(&sc->mode, M_ALWAYS_503);
	s = fakehttp_start(handler, sc);
	CHECK(s);
	cfg.endpoint = fakehttp_url(s);
	r = awsreq_new(&cfg);
	CHECK(r);
	for (i = 0; i < 5; i++) {
		CHECK_INT(get_item(r, &resp, &err, &attempts), -EIO);
		CHECK_INT(attempts, 4);
	}
	awsreq_free(r);
	fakehttp_stop(s);
	buf_fini(&resp);
}

/* The quota's own arithmetic: a timeout's retry costs 10; a success
 * after retries gives back what its last retry took, one at once gives 1;
 * never above the start; several threads never spend more than it holds. */
static void *spend(void *arg)
{
	struct retry_quota *q = arg;
	intptr_t n = 0;

	while (retry_quota_take(q, false))
		n++;
	return (void *)n;
}

static void check_retry_quota_arithmetic(struct scenario *sc)
{
	struct retry_quota q;
	pthread_t th[4];
	intptr_t total = 0;
	void *n;
	int i;

	(void)sc;
	retry_quota_init(&q, 0);
	CHECK_INT(retry_quota_left(&q), RETRY_QUOTA_DEFAULT);
	CHECK_INT(retry_quota_take(&q, true), RETRY_QUOTA_TIMEOUT_COST);
	CHECK_INT(retry_quota_take(&q, false), RETRY_QUOTA_COST);
	CHECK_INT(retry_quota_left(&q), 485);
	retry_quota_give(&q, RETRY_QUOTA_COST);
	CHECK_INT(retry_quota_left(&q), 490);
	retry_quota_give(&q, 0);
	CHECK_INT(retry_quota_left(&q), 491);
	for (i = 0; i < 20; i++)
		retry_quota_give(&q, RETRY_QUOTA_TIMEOUT_COST);
	CHECK_INT(retry_quota_left(&q), RETRY_QUOTA_DEFAULT);

	for (i = 0; i < 4; i++)
		CHECK_INT(pthread_create(&th[i], NULL, spend, &q), 0);
	for (i = 0; i < 4; i++) {
		CHECK_INT(pthread_join(th[i], &n), 0);
		total += (intptr_t)n;
	}
	CHECK_INT(total, RETRY_QUOTA_DEFAULT / RETRY_QUOTA_COST);
	CHECK_INT(retry_quota_left(&q), 0);
	CHECK_INT(retry_quota_take(&q, false), 0);

	retry_quota_init(&q, -1);
	for (i = 0; i < 1000; i++)
		CHECK_INT(retry_quota_take(&q, false), RETRY_QUOTA_COST);
}

static void check_deadlines(struct scenario *sc)
{
	struct buf resp = BUF_INIT;
	struct aws_error err;
	int attempts, requests, rc, unanswered;
	int64_t start = clk_sys_mono_ms(), elapsed;

	/* Endless 503 with many attempts allowed: the deadline stops it (the
	 * last attempt may be cut by the deadline itself). */
	rc = run(sc, M_ALWAYS_503, 1000, start + 300, &resp, &err, &attempts,
		 &requests);
	elapsed = last_call_ms;
	CHECK(rc == -EIO || rc == -ETIMEDOUT);
	CHECK(attempts > 2);
	CHECK(attempts < 1000);
	CHECK(elapsed <= 700);

	/* A slow server: the attempt's timeout is cut at the deadline. */
	start = clk_sys_mono_ms();
	rc = run(sc, M_SLOW, 1000, start + 400, &resp, &err, &attempts,
		 &requests);
	elapsed = last_call_ms;
	CHECK_INT(rc, -ETIMEDOUT);
	CHECK_INT(err.transport, -ETIMEDOUT);
	CHECK_INT(attempts, 1);
	CHECK_INT(last_unanswered, 1);
	CHECK(elapsed >= 350);
	CHECK(elapsed < 1200);

	/* A deadline already passed: nothing is sent. */
	rc = run(sc, M_OK, 0, clk_sys_mono_ms() - 1, &resp, &err, &attempts,
		 &requests);
	CHECK_INT(rc, -ETIMEDOUT);
	CHECK_INT(attempts, 0);
	CHECK_INT(requests, 0);

	/* Per-attempt timeout shorter than the answer: retried, then the
	 * deadline ends it. */
	{
		struct fakehttp *s;
		struct awsreq *r;

		atomic_store(&sc->mode, M_SLOW);
		s = fakehttp_start(handler, sc);
		r = new_req(fakehttp_url(s), 3, 100);
		start = clk_sys_mono_ms();
		rc = awsreq_json(r, DDB_OP_GET_ITEM, TARGET, BODY, strlen(BODY),
				 start + 5000, &resp, &err, &attempts,
				 &unanswered);
		elapsed = clk_sys_mono_ms() - start;
		CHECK_INT(rc, -ETIMEDOUT);
		CHECK_INT(attempts, 3);
		CHECK_INT(unanswered, 3); /* each may reach the server yet */
		CHECK(elapsed < 1000);
		awsreq_free(r);
		fakehttp_stop(s);
	}
	buf_fini(&resp);
}

static void check_bad_answers(struct scenario *sc)
{
	struct buf resp = BUF_INIT;
	struct aws_error err;
	int attempts, requests, rc, unanswered;
	int64_t start;

	/* A success whose answer cannot be read is no answer: the write it
	 * reports landed, so the caller must find out (an acquire that took
	 * it for one never sent left its row behind for a lease). */
	rc = run(sc, M_NOT_JSON, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -EPROTO);
	CHECK_INT(attempts, 1);
	CHECK_INT(err.http_status, 200);
	CHECK(err.message[0]);
	CHECK_INT(last_unanswered, 1);
	rc = run(sc, M_EMPTY, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -EPROTO);
	CHECK_INT(last_unanswered, 1);
	rc = run(sc, M_VALIDATION, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(last_unanswered, 0); /* a refusal is an answer */

	/* Over the 1000-byte cap: -EMSGSIZE, not retried, nothing beyond the
	 * cap kept. */
	rc = run(sc, M_BIG, 0, 0, &resp, &err, &attempts, &requests);
	CHECK_INT(rc, -EMSGSIZE);
	CHECK_INT(attempts, 1);
	CHECK(resp.len <= 1000);

	/* Nothing listens on port 1: refused, retried a bounded number of
	 * times; none of them left, so none can land later. */
	{
		struct awsreq *r = new_req("http://127.0.0.1:1", 3, 0);

		start = clk_sys_mono_ms();
		rc = awsreq_json(r, DDB_OP_PUT_ITEM, TARGET, BODY, strlen(BODY),
				 0, &resp, &err, &attempts, &unanswered);
		CHECK_INT(rc, -ECONNREFUSED);
		CHECK_INT(unanswered, 0);
		CHECK_INT(err.transport, -ECONNREFUSED);
		CHECK_INT(attempts, 3);
		CHECK(clk_sys_mono_ms() - start < 2000);
		CHECK_INT(resp.len, 0);
		awsreq_free(r);
	}

	/* Bad endpoints are refused at creation. */
	CHECK(!new_req("ftp://127.0.0.1/", 0, 0));
	CHECK(!new_req("127.0.0.1:8000", 0, 0));
	buf_fini(&resp);
}

struct worker {
	struct awsreq *r;
	int ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct buf resp = BUF_INIT;
	struct aws_error err;
	int i;

	for (i = 0; i < 20; i++)
		if (!awsreq_json(w->r, DDB_OP_QUERY, TARGET, BODY, strlen(BODY),
				 0, &resp, &err, NULL, NULL))
			w->ok++;
	buf_fini(&resp);
	return NULL;
}

/* Threads that use the awsreq and exit (their clients are freed then), and
 * threads still alive at awsreq_free (freed there): ASan sees no leak. */
static void check_threads(struct scenario *sc)
{
	struct worker w[4];
	pthread_t th[4];
	struct fakehttp *s;
	struct awsreq *r;
	int i;

	atomic_store(&sc->mode, M_OK);
	s = fakehttp_start(handler, sc);
	r = new_req(fakehttp_url(s), 0, 0);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .r = r };
		CHECK_INT(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(w[i].ok, 20);
	}
	CHECK_INT(fakehttp_requests(s), 80);
	/* This thread keeps its client until awsreq_free. */
	w[0] = (struct worker){ .r = r };
	worker_main(&w[0]);
	CHECK_INT(w[0].ok, 20);
	awsreq_free(r);
	fakehttp_stop(s);
}

static void check_no_credentials(struct scenario *sc)
{
	struct creds_config cc = { 0 };
	struct creds_chain *none;
	struct buf resp = BUF_INIT;
	struct aws_error err;
	struct fakehttp *s;
	struct awsreq *r;
	int attempts;

	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	none = creds_chain_new(&cc);
	CHECK(none);
	atomic_store(&sc->mode, M_OK);
	s = fakehttp_start(handler, sc);
	struct awsreq_config cfg = { .endpoint = fakehttp_url(s),
				     .region = "us-east-1",
				     .service = "dynamodb",
				     .creds = none };
	r = awsreq_new(&cfg);
	CHECK(r);
	CHECK_INT(get_item(r, &resp, &err, &attempts), -ENOKEY);
	CHECK_INT(attempts, 0);
	CHECK_INT(fakehttp_requests(s), 0);
	awsreq_free(r);
	fakehttp_stop(s);
	creds_chain_free(none);
	buf_fini(&resp);
}

int main(int argc, char **argv)
{
	static struct scenario sc = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct creds_config cc = { 0 };

	memset(big, 'x', sizeof(big) - 1);
	big[0] = '{';
	metrics_init(&metrics);
	ddb_name_metrics(&metrics);
	CHECK_INT(http_global_init(), 0);
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG", 1);
	setenv("AWS_SESSION_TOKEN", "the-session-token", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	chain = creds_chain_new(&cc);
	CHECK(chain);

	check_cases(argc, argv);
	CHECK_CASE(check_signed_headers, &sc);
	CHECK_CASE(check_retries, &sc);
	CHECK_CASE(check_retry_quota, &sc);
	CHECK_CASE(check_retry_quota_arithmetic, &sc);
	CHECK_CASE(check_deadlines, &sc);
	CHECK_CASE(check_bad_answers, &sc);
	CHECK_CASE(check_threads, &sc);
	creds_chain_free(chain);
	CHECK_CASE(check_no_credentials, &sc);
	http_global_cleanup();
	CHECK_DONE();
}
