/* ddb_skew: requests signed with the server's time. A loopback server that
 * behaves as AWS does (checks the SigV4 signature, refuses an X-Amz-Date
 * more than 5 minutes from its own clock, and sends a Date with every
 * answer) and a client whose wall clock is hours off (an injected clock):
 * with a server clock the call succeeds after one correction and later
 * calls need none; without it the call fails. Every refusal the AWS SDKs
 * treat as clock skew is recognised (RequestTimeTooSkewed, DynamoDB's
 * InvalidSignatureException "Signature expired" / "not yet current", an
 * authentication error whose Date is far from our signing time); an
 * authentication error that is not about time, a refusal without a Date
 * and a server that keeps refusing are sent once more at most. Threads:
 * the test's and the fake server's. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awsreq.h"
#include "ddb.h"
#include "check.h"
#include "clk.h"
#include "fakehttp.h"
#include "log.h"
#include "sigv4.h"
#include "srvclk.h"

#define TARGET	  "DynamoDB_20120810.PutItem"
#define BODY	  "{\"TableName\":\"t\"}"
#define ACCESS	  "AKIDEXAMPLE"
#define SECRET	  "wJalrXUtnFEMI/K7MDENG"
#define WINDOW_MS (5 * 60 * 1000)

enum refusal {
	R_TOO_SKEWED,  /* RequestTimeTooSkewed */
	R_DDB_MESSAGE, /* InvalidSignatureException "Signature expired" */
	R_AUTH_PLAIN,  /* InvalidSignatureException, nothing about time */
	R_NO_DATE,     /* RequestTimeTooSkewed, but no Date header */
	R_ALWAYS,      /* RequestTimeTooSkewed whatever the time */
	R_AUTH_ALWAYS, /* InvalidSignatureException whatever the time */
	R_NEVER,       /* accepts any time */
	R_ODD,	       /* accepts, but refuses every other request for its
			* time with a Date two days old (a broken proxy) */
};

struct server {
	atomic_int refusal;
	atomic_int refused; /* answers that refused the time */
	atomic_int bad_signatures;
	atomic_int requests; /* for R_ODD */
	pthread_mutex_t mu;
	char last_amz_date[32]; /* mu */
};

static struct server srv = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int64_t amz_date_ms(const char *d)
{
	struct tm tm = { 0 };

	if (strlen(d) != 16 || !strptime(d, "%Y%m%dT%H%M%SZ", &tm))
		return 0;
	return (int64_t)timegm(&tm) * 1000;
}

/* The answer is exactly what AWS would say: SigV4 checked first. */
static bool signature_ok(const struct fakehttp_request *req, const char *date)
{
	char ctype[64], host[64], target[64], authz[512];
	struct buf want = BUF_INIT;
	bool ok;

	if (fakehttp_header(req, "Content-Type", ctype, sizeof(ctype)) ||
	    fakehttp_header(req, "Host", host, sizeof(host)) ||
	    fakehttp_header(req, "X-Amz-Target", target, sizeof(target)) ||
	    fakehttp_header(req, "Authorization", authz, sizeof(authz)))
		return false;
	struct sigv4_header sh[] = {
		{ "Content-Type", ctype },
		{ "Host", host },
		{ "X-Amz-Date", date },
		{ "X-Amz-Target", target },
	};
	struct sigv4_creds cr = { ACCESS, SECRET, NULL };
	struct sigv4_params params = { "us-east-1", "dynamodb", date, false };

	ok = !sigv4_sign("POST", "/", NULL, sh, 4, req->body, req->body_len,
			 &cr, &params, &want) &&
	     !strcmp(authz, buf_str(&want));
	buf_fini(&want);
	return ok;
}

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	static __thread char hdr[96], body[512];
	int refusal = atomic_load(&srv.refusal);
	int64_t now = clk_sys_real_ms(), signed_ms;
	char date[32], httpdate[40];
	time_t t = (time_t)(now / 1000);
	struct tm tm;
	bool skewed;

	(void)arg;
	if (refusal == R_ODD && atomic_fetch_add(&srv.requests, 1) % 2)
		t -= 2 * 86400;
	gmtime_r(&t, &tm);
	strftime(httpdate, sizeof(httpdate), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	snprintf(hdr, sizeof(hdr), "Date: %s\r\n", httpdate);
	resp->extra_headers = refusal == R_NO_DATE ? NULL : hdr;
	if (fakehttp_header(req, "X-Amz-Date", date, sizeof(date)))
		date[0] = '\0';
	pthread_mutex_lock(&srv.mu);
	snprintf(srv.last_amz_date, sizeof(srv.last_amz_date), "%s", date);
	pthread_mutex_unlock(&srv.mu);
	if (!signature_ok(req, date)) {
		atomic_fetch_add(&srv.bad_signatures, 1);
		resp->status = 403;
		resp->body = "{\"__type\":\"com.amazon.coral.service#"
			     "SignatureDoesNotMatch\",\"message\":\"bad\"}";
		return;
	}
	signed_ms = amz_date_ms(date);
	skewed = llabs(signed_ms - now) > WINDOW_MS;
	if (refusal == R_ALWAYS || refusal == R_AUTH_ALWAYS)
		skewed = true;
	if (refusal == R_ODD) {
		skewed = t != (time_t)(now / 1000); /* the odd Date's */
		signed_ms = now - WINDOW_MS - 1000; /* "expired" */
		refusal = R_DDB_MESSAGE;
	}
	if (refusal == R_NEVER || !skewed) {
		resp->body = "{}";
		return;
	}
	atomic_fetch_add(&srv.refused, 1);
	resp->status = 400;
	switch (refusal) {
	case R_DDB_MESSAGE:
		/* DynamoDB's own words. */
		snprintf(body, sizeof(body),
			 "{\"__type\":\"com.amazon.coral.service#"
			 "InvalidSignatureException\",\"message\":\"Signature "
			 "%s: %s is now %s than ... (... %s 5 min.)\"}",
			 signed_ms < now ? "expired" : "not yet current", date,
			 signed_ms < now ? "earlier" : "later",
			 signed_ms < now ? "-" : "+");
		break;
	case R_AUTH_PLAIN:
	case R_AUTH_ALWAYS:
		snprintf(
			body, sizeof(body), "%s",
			"{\"__type\":\"com.amazon.coral.service#"
			"InvalidSignatureException\",\"message\":\"The request "
			"signature we calculated does not match the signature "
			"you provided.\"}");
		break;
	default:
		snprintf(body, sizeof(body), "%s",
			 "{\"__type\":\"com.amazon.coral.service#"
			 "RequestTimeTooSkewed\",\"message\":\"The difference "
			 "between the request time and the current time is too "
			 "large.\"}");
		break;
	}
	resp->body = body;
}

/* The client's clocks: the system's, its wall clock moved by skew_ms. */
struct skewed_clock {
	struct clk clk;
	int64_t skew_ms;
};

static int64_t skewed_mono(const struct clk *c)
{
	(void)c;
	return clk_sys_mono_ms();
}

static int64_t skewed_real(const struct clk *c)
{
	const struct skewed_clock *s = c->ctx;

	return clk_sys_real_ms() + s->skew_ms;
}

static void skewed_init(struct skewed_clock *s, int64_t skew_ms)
{
	s->clk = (struct clk){ skewed_mono, skewed_real, s };
	s->skew_ms = skew_ms;
}

static struct creds_chain *chain;

struct client {
	struct skewed_clock base;
	struct srvclk *sc;
	struct awsreq *r;
	struct fakehttp *s;
};

/* A client with its wall clock skew_ms off, with a server clock or not. */
static void client_open(struct client *c, int64_t skew_ms, bool server_clock)
{
	skewed_init(&c->base, skew_ms);
	c->sc = server_clock ? srvclk_new(&c->base.clk) : NULL;
	c->s = fakehttp_start(handler, NULL);
	CHECK(c->s);
	struct awsreq_config cfg = {
		.endpoint = fakehttp_url(c->s),
		.region = "us-east-1",
		.service = "dynamodb",
		.creds = chain,
		.retry = { .max_attempts = 5, .base_ms = 5, .cap_ms = 20 },
		/* Without a server clock: the skewed clock signs. */
		.clock = server_clock ? NULL : &c->base.clk,
		.server_clock = c->sc,
	};
	c->r = awsreq_new(&cfg);
	CHECK(c->r);
	atomic_store(&srv.refused, 0);
}

static void client_close(struct client *c)
{
	awsreq_free(c->r);
	fakehttp_stop(c->s);
	srvclk_free(c->sc);
	CHECK_INT(atomic_load(&srv.bad_signatures), 0);
}

static int call(struct client *c, int *attempts, struct aws_error *err)
{
	struct buf resp = BUF_INIT;
	int rc;

	rc = awsreq_json(c->r, DDB_OP_PUT_ITEM, TARGET, BODY, strlen(BODY), 0,
			 &resp, err, attempts, NULL);
	buf_fini(&resp);
	return rc;
}

/* The X-Amz-Date the server saw last, against the real time. */
static int64_t last_signed_off_ms(void)
{
	int64_t ms;

	pthread_mutex_lock(&srv.mu);
	ms = amz_date_ms(srv.last_amz_date);
	pthread_mutex_unlock(&srv.mu);
	return ms - clk_sys_real_ms();
}

/* A client whose clock is skew_ms off succeeds after one correction, and
 * the next calls need none. */
static void check_corrected(enum refusal refusal, int64_t skew_ms)
{
	struct aws_error err;
	struct client c;
	int attempts, i;

	atomic_store(&srv.refusal, refusal);
	client_open(&c, skew_ms, true);
	CHECK_INT(call(&c, &attempts, &err), 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(fakehttp_requests(c.s), 2);
	CHECK_INT(atomic_load(&srv.refused), 1);
	/* The retry was signed with the server's time, to the second. */
	CHECK(llabs(last_signed_off_ms()) <= 2000);
	/* The server clock knows how far off the host is. */
	CHECK(llabs(srvclk_skew_ms(c.sc) + skew_ms) <= 1500);
	CHECK(llabs(clk_real_ms(srvclk_clock(c.sc)) - clk_sys_real_ms()) <=
	      1500);
	for (i = 0; i < 5; i++) {
		CHECK_INT(call(&c, &attempts, &err), 0);
		CHECK_INT(attempts, 1);
	}
	CHECK_INT(fakehttp_requests(c.s), 7);
	CHECK_INT(atomic_load(&srv.refused), 1);
	CHECK(srvclk_samples(c.sc) >= 5);
	client_close(&c);
}

/* The same client without a server clock fails: what it did before. */
static void check_uncorrected(void)
{
	struct aws_error err;
	struct client c;
	int attempts;

	atomic_store(&srv.refusal, R_TOO_SKEWED);
	client_open(&c, -7200 * 1000, false);
	CHECK(call(&c, &attempts, &err) < 0);
	CHECK_INT(attempts, 1);
	CHECK_INT(fakehttp_requests(c.s), 1);
	CHECK_STR(err.type, "RequestTimeTooSkewed");
	CHECK_INT(err.http_status, 400);
	CHECK(llabs(last_signed_off_ms() + 7200 * 1000) <= 2000);
	client_close(&c);
}

/* Refusals that a correction cannot help are sent once more at most. */
static void check_not_corrected(void)
{
	struct aws_error err;
	struct client c;
	int attempts;

	/* An authentication error about something else, our clock right:
	 * not about time, not sent again. */
	atomic_store(&srv.refusal, R_AUTH_ALWAYS);
	client_open(&c, 0, true);
	CHECK_INT(call(&c, &attempts, &err), -EACCES);
	CHECK_INT(attempts, 1);
	CHECK_INT(fakehttp_requests(c.s), 1);
	CHECK_STR(err.type, "InvalidSignatureException");
	client_close(&c);

	/* No Date to correct from: not sent again. */
	atomic_store(&srv.refusal, R_NO_DATE);
	client_open(&c, -7200 * 1000, true);
	CHECK(call(&c, &attempts, &err) < 0);
	CHECK_INT(attempts, 1);
	CHECK_STR(err.type, "RequestTimeTooSkewed");
	CHECK_INT(srvclk_samples(c.sc), 0);
	client_close(&c);

	/* A server that refuses whatever the time: one correction, then the
	 * refusal is the answer (no loop). */
	atomic_store(&srv.refusal, R_ALWAYS);
	client_open(&c, 0, true);
	CHECK(call(&c, &attempts, &err) < 0);
	CHECK_INT(attempts, 2);
	CHECK_INT(fakehttp_requests(c.s), 2);
	CHECK(call(&c, &attempts, &err) < 0);
	CHECK_INT(attempts, 2); /* once per call */
	CHECK_INT(fakehttp_requests(c.s), 4);
	client_close(&c);
}

/* A refusal for the time whose Date is far behind the time that recent
 * accepted answers agree on is an odd answer: it moves the clock nowhere
 * (it made it two days early, every row's expiry_time with it, and
 * DynamoDB's TTL deleted a live lock), and is not sent again. Odd refusals
 * are not samples either, so that many of them cannot outvote the good
 * answers. */
static void check_odd_refusals(void)
{
	struct aws_error err;
	struct client c;
	int attempts, i, refused = 0;

	atomic_store(&srv.refusal, R_NEVER);
	client_open(&c, 0, true);
	for (i = 0; i < SRVCLK_SAMPLES; i++)
		CHECK_INT(call(&c, &attempts, &err), 0);
	atomic_store(&srv.requests, 0);
	atomic_store(&srv.refusal, R_ODD);
	for (i = 0; i < 4 * SRVCLK_SAMPLES; i++) {
		if (call(&c, &attempts, &err)) {
			refused++;
			CHECK_STR(err.type, "InvalidSignatureException");
		}
		CHECK_INT(attempts, 1);
		CHECK(llabs(clk_real_ms(srvclk_clock(c.sc)) -
			    clk_sys_real_ms()) <= 2500);
	}
	CHECK_INT(refused, 2 * SRVCLK_SAMPLES);
	client_close(&c);
}

/* Every accepted answer's Date feeds the server clock: a client whose
 * clock is off learns the server's time from its first answer. */
static void check_learns_from_answers(void)
{
	struct aws_error err;
	struct client c;
	int attempts;

	atomic_store(&srv.refusal, R_NEVER);
	client_open(&c, -7200 * 1000, true);
	CHECK_INT(clk_real_ms(srvclk_clock(c.sc)) - clk_sys_real_ms() <
			  -7000 * 1000,
		  1);
	CHECK_INT(call(&c, &attempts, &err), 0);
	CHECK_INT(attempts, 1);
	CHECK(llabs(last_signed_off_ms() + 7200 * 1000) <= 2000);
	CHECK_INT(srvclk_samples(c.sc), 1);
	CHECK(llabs(clk_real_ms(srvclk_clock(c.sc)) - clk_sys_real_ms()) <=
	      1500);
	CHECK_INT(call(&c, &attempts, &err), 0);
	CHECK(llabs(last_signed_off_ms()) <= 2000);
	client_close(&c);
}

int main(int argc, char **argv)
{
	struct creds_config cc = { 0 };

	log_setup(LOGL_ERR, false, "ddb_skew");
	CHECK_INT(http_global_init(), 0);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	setenv("AWS_ACCESS_KEY_ID", ACCESS, 1);
	setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	chain = creds_chain_new(&cc);
	CHECK(chain);

	check_cases(argc, argv);
	CHECK_CASE(check_uncorrected);
	/* Behind by 2 h and ahead by 2 h, each refusal's wording. */
	check_corrected(R_TOO_SKEWED, -7200 * 1000);
	check_corrected(R_TOO_SKEWED, 7200 * 1000);
	check_corrected(R_DDB_MESSAGE, -7200 * 1000);
	check_corrected(R_DDB_MESSAGE, 7200 * 1000);
	check_corrected(R_AUTH_PLAIN, -7200 * 1000);
	/* Just over the window, and a host clock at the epoch (no RTC). */
	check_corrected(R_TOO_SKEWED, -(WINDOW_MS + 30 * 1000));
	check_corrected(R_TOO_SKEWED, -clk_sys_real_ms());
	CHECK_CASE(check_not_corrected);
	CHECK_CASE(check_learns_from_answers);
	CHECK_CASE(check_odd_refusals);
	creds_chain_free(chain);
	http_global_cleanup();
	CHECK_DONE();
}
