/* awsreq: one signed AWS JSON 1.0 call with retries. Owns the copied
 * configuration and, per calling thread, an HTTP client (a curl handle with
 * its keep-alive connection) and a jitter random state, kept under a pthread
 * key: the owning thread alone uses them; the list of them (for
 * awsreq_free) is protected by mu. Any thread may call awsreq_json; no lock
 * is held across the network exchange. Every answer's Date feeds the
 * configured server clock (itself thread-safe), which signs the requests. */
#include "awsreq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "log.h"
#include "retry_quota.h"
#include "sigv4.h"
#include "text.h"

#define AWSREQ_DEFAULT_ATTEMPT_MS  5000
#define AWSREQ_DEFAULT_DEADLINE_MS 15000
/* A retry is not started with less time than this before the deadline: it
 * would only replace the real error with a timeout. */
#define AWSREQ_MIN_ATTEMPT_MS 20
/* How often a spent retry quota is said in the log, at most. */
#define AWSREQ_QUOTA_WARN_MS 60000
#define AWSREQ_CONTENT_TYPE  "application/x-amz-json-1.0"

struct awsreq_thread {
	struct awsreq *r;
	struct http_client *client;
	uint64_t rng;
	struct awsreq_thread *prev, *next; /* protected by r->mu */
};

struct awsreq {
	struct awsreq_config cfg; /* strings point at the copies below */
	char *endpoint;
	char *region;
	char *service;
	char *ca_file;
	char host[256];	 /* the Host header curl sends for the endpoint */
	char path[1024]; /* the path signed and requested */
	pthread_key_t key;
	pthread_mutex_t mu;
	struct awsreq_thread *threads; /* protected by mu */
	struct retry_quota quota;      /* every thread's calls */
	int64_t quota_warned_mono_ms;  /* protected by mu */
};

static void thread_unlink(struct awsreq_thread *t)
{
	struct awsreq *r = t->r;

	if (t->prev)
		t->prev->next = t->next;
	else
		r->threads = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

/* Runs in a thread that exits while it holds a client of this awsreq. */
static void thread_exit(void *p)
{
	struct awsreq_thread *t = p;

	pthread_mutex_lock(&t->r->mu);
	thread_unlink(t);
	pthread_mutex_unlock(&t->r->mu);
	http_client_free(t->client);
	free(t);
}

static struct awsreq_thread *thread_state(struct awsreq *r)
{
	struct awsreq_thread *t = pthread_getspecific(r->key);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->r = r;
	t->client = http_client_new(&r->cfg.http);
	if (!t->client)
		goto fail;
	if (getrandom(&t->rng, sizeof(t->rng), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(t->rng))
		t->rng = (uint64_t)clk_sys_mono_us() ^ (uint64_t)(uintptr_t)t;
	if (pthread_setspecific(r->key, t))
		goto fail;
	pthread_mutex_lock(&r->mu);
	t->next = r->threads;
	if (t->next)
		t->next->prev = t;
	r->threads = t;
	pthread_mutex_unlock(&r->mu);
	return t;
fail:
	http_client_free(t->client);
	free(t);
	return NULL;
}

static int dup_string(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

struct awsreq *awsreq_new(const struct awsreq_config *cfg)
{
	struct awsreq *r;

	if (!cfg || !cfg->endpoint || !cfg->region || !cfg->service)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *cfg;
	if (dup_string(&r->endpoint, cfg->endpoint) ||
	    dup_string(&r->region, cfg->region) ||
	    dup_string(&r->service, cfg->service) ||
	    dup_string(&r->ca_file, cfg->http.ca_file))
		goto fail;
	r->cfg.endpoint = r->endpoint;
	r->cfg.region = r->region;
	r->cfg.service = r->service;
	r->cfg.http.ca_file = r->ca_file;
	if (!r->cfg.attempt_timeout_ms)
		r->cfg.attempt_timeout_ms = AWSREQ_DEFAULT_ATTEMPT_MS;
	if (!r->cfg.default_deadline_ms)
		r->cfg.default_deadline_ms = AWSREQ_DEFAULT_DEADLINE_MS;
	retry_quota_init(&r->quota, cfg->retry_quota);
	if (!r->cfg.clock)
		r->cfg.clock = r->cfg.server_clock
				       ? srvclk_clock(r->cfg.server_clock)
				       : &clk_system;
	if (http_url_host_path(r->endpoint, r->host, sizeof(r->host), r->path,
			       sizeof(r->path)))
		goto fail;
	if (pthread_key_create(&r->key, thread_exit))
		goto fail;
	pthread_mutex_init(&r->mu, NULL);
	return r;
fail:
	free(r->endpoint);
	free(r->region);
	free(r->service);
	free(r->ca_file);
	free(r);
	return NULL;
}

void awsreq_free(struct awsreq *r)
{
	struct awsreq_thread *t, *next;

	if (!r)
		return;
	/* After this no thread-exit cleanup runs for r: free them all here. */
	pthread_key_delete(r->key);
	pthread_mutex_lock(&r->mu);
	for (t = r->threads; t; t = next) {
		next = t->next;
		http_client_free(t->client);
		free(t);
	}
	r->threads = NULL;
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_destroy(&r->mu);
	free(r->endpoint);
	free(r->region);
	free(r->service);
	free(r->ca_file);
	free(r);
}

const struct clk *awsreq_clock(const struct awsreq *r)
{
	return r->cfg.clock;
}

/* True if the body starts (after white space) with '{': the least a JSON
 * 1.0 success answer is. The callers parse it fully. */
static bool looks_like_object(const struct buf *b)
{
	size_t i;

	for (i = 0; i < b->len; i++) {
		char c = b->data[i];

		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return c == '{';
	}
	return false;
}

/* The times of one exchange, for the server clock. */
struct exchange_time {
	int64_t signed_real_ms; /* the signing time sent (X-Amz-Date) */
	int64_t sent_mono_ms, recv_mono_ms;
	char date[sizeof(((struct http_response *)0)->date)]; /* "": none */
	bool went_out; /* the request left on a connection (http's sent) */
};

/* The clock requests are signed with. */
static const struct clk *signing_clock(const struct awsreq *r)
{
	return r->cfg.server_clock ? srvclk_clock(r->cfg.server_clock)
				   : r->cfg.clock;
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* Error codes of refused requests: for their signing time (the AWS SDKs'
 * clock-skew list), for their signature (which, with DynamoDB, may be its
 * time too: refused_for_time), and for their credentials. */
static const char *const time_codes[] = { "RequestTimeTooSkewed",
					  "RequestExpired",
					  "RequestInTheFuture", NULL };
static const char *const auth_codes[] = { "InvalidSignatureException",
					  "SignatureDoesNotMatch",
					  "AuthFailure", NULL };
static const char *const credential_codes[] = {
	"IncompleteSignatureException", "UnrecognizedClientException",
	"MissingAuthenticationTokenException", "ExpiredTokenException", NULL
};

static bool refused_4xx(const struct aws_error *err)
{
	return err->http_status >= 400 && err->http_status < 500;
}

/* Whether an error answer refused the request's signature, its time or
 * its credentials: the service did not accept the time it was signed
 * with, so the answer's Date is no ordinary sample of its clock. */
static bool signature_refused(const struct aws_error *err)
{
	return refused_4xx(err) && (in_list(err->type, time_codes) ||
				    in_list(err->type, auth_codes) ||
				    in_list(err->type, credential_codes));
}

/* One signed exchange. Fills err and returns 0 or -errno; *sent tells
 * whether the request went out (credentials and signing come first); xt
 * gets its times and the answer's Date, which feeds the server clock. */
static int attempt(struct awsreq *r, struct awsreq_thread *t, int kind,
		   const char *target, const char *body, size_t len,
		   long timeout_ms, struct buf *resp, struct aws_error *err,
		   bool *sent, struct exchange_time *xt)
{
	const struct clk *sclk = signing_clock(r);
	struct aws_creds creds = { 0 };
	struct buf authz = BUF_INIT;
	struct sigv4_header sh[5];
	struct http_header hh[6];
	struct http_response hr;
	char amz_date[17];
	size_t n = 0, i;
	int64_t start_us;
	int rc;

	*sent = false;
	xt->date[0] = '\0';
	/* Never a credential refresh here once the chain's refresher runs
	 * (creds.h): at most a bounded wait when nothing usable is cached,
	 * so that a renewal cannot stall behind a slow credential_process. */
	rc = creds_chain_get_wait(r->cfg.creds, &creds, err, timeout_ms);
	if (rc) {
		buf_reset(resp);
		return rc;
	}
	xt->signed_real_ms = clk_real_ms(sclk);
	sigv4_amz_date(xt->signed_real_ms, amz_date);
	sh[n++] = (struct sigv4_header){ "Content-Type", AWSREQ_CONTENT_TYPE };
	sh[n++] = (struct sigv4_header){ "Host", r->host };
	sh[n++] = (struct sigv4_header){ "X-Amz-Date", amz_date };
	sh[n++] = (struct sigv4_header){ "X-Amz-Target", target };
	if (creds.session_token && creds.session_token[0])
		sh[n++] = (struct sigv4_header){ "X-Amz-Security-Token",
						 creds.session_token };
	struct sigv4_creds sc = {
		.access_key_id = creds.access_key_id,
		.secret_access_key = creds.secret_access_key,
		.session_token = creds.session_token,
	};
	struct sigv4_params params = {
		.region = r->cfg.region,
		.service = r->cfg.service,
		.amz_date = amz_date,
	};
	rc = sigv4_sign("POST", r->path, NULL, sh, n, body, len, &sc, &params,
			&authz);
	if (rc) {
		awserr_set(err, 0, NULL, "cannot sign the request");
		buf_reset(resp);
		goto out;
	}
	for (i = 0; i < n; i++)
		hh[i] = (struct http_header){ sh[i].name, sh[i].value };
	hh[n] = (struct http_header){ "Authorization", buf_str(&authz) };
	struct http_request req = {
		.method = "POST",
		.url = r->endpoint,
		.headers = hh,
		.n_headers = n + 1,
		.body = body,
		.body_len = len,
		.timeout_ms = timeout_ms,
	};

	/* The caller's buffer receives the answer directly. */
	hr.status = 0;
	hr.error[0] = '\0';
	hr.body = *resp;
	start_us = clk_sys_mono_us();
	xt->sent_mono_ms = clk_mono_ms(sclk);
	xt->date[0] = '\0';
	rc = http_perform(t->client, &req, &hr);
	xt->recv_mono_ms = clk_mono_ms(sclk);
	xt->went_out = hr.sent;
	*resp = hr.body;
	*sent = true;
	if (!rc)
		memcpy(xt->date, hr.date, sizeof(xt->date));
	if (rc) {
		awserr_set_transport_why(err, rc, hr.error);
	} else if (hr.status >= 200 && hr.status < 300) {
		awserr_clear(err);
		err->http_status = hr.status;
		if (!looks_like_object(resp)) {
			awserr_set(err, hr.status, NULL,
				   "answer is not a JSON object");
			rc = awserr_to_errno(err);
		}
	} else {
		awserr_from_json(err, hr.status, resp->data, resp->len);
		rc = awserr_to_errno(err);
	}
	/* Only an answer to a request whose signature the service accepted
	 * speaks for its clock: a refusal's Date is weighed by
	 * correct_clock, so that odd refusals cannot outvote good answers. */
	if (r->cfg.server_clock && xt->date[0] && !signature_refused(err))
		srvclk_observe(r->cfg.server_clock, xt->date, strlen(xt->date),
			       xt->sent_mono_ms, xt->recv_mono_ms);
	/* A refused condition is an answer as designed, not a failure. */
	metrics_observe(r->cfg.metrics, kind, clk_sys_mono_us() - start_us,
			!rc || awserr_is_condition_failed(err));
out:
	buf_fini(&authz);
	aws_creds_clear(&creds);
	return rc;
}

/* Whether an error answer refused the request for its signing time. The
 * time codes always count; the signature ones only when their message
 * speaks of the time (DynamoDB: "Signature expired: ... is now earlier
 * than ...", "Signature not yet current") or the answer's Date is more
 * than 4 minutes from the time we signed with (the service allows 5). */
static bool refused_for_time(const struct aws_error *err,
			     const struct exchange_time *xt)
{
	int64_t date_s;

	if (!refused_4xx(err))
		return false;
	if (in_list(err->type, time_codes))
		return true;
	if (!in_list(err->type, auth_codes))
		return false;
	if (strcasestr(err->message, "signature expired") ||
	    strcasestr(err->message, "not yet current") ||
	    strcasestr(err->message, "skew"))
		return true;
	return !srvclk_parse_date(xt->date, strlen(xt->date), &date_s) &&
	       llabs(date_s * 1000 - xt->signed_real_ms) > 4 * 60 * 1000;
}

/* After a refusal for the signing time: sets the server clock from the
 * answer's Date. True when it did (the request is then worth sending
 * again). */
static bool correct_clock(struct awsreq *r, const char *target,
			  const struct aws_error *err,
			  const struct exchange_time *xt)
{
	int rc;

	if (!r->cfg.server_clock || !refused_for_time(err, xt))
		return false;
	rc = srvclk_reset(r->cfg.server_clock, xt->date, strlen(xt->date),
			  xt->sent_mono_ms, xt->recv_mono_ms);
	if (rc == -EALREADY)
		log_warn("awsreq",
			 "%s: the service refused our signing time (%s), but "
			 "its Date (%s) is far behind the time recent answers "
			 "agree on: taken for an odd answer, clock kept",
			 target, err->type[0] ? err->type : "no error code",
			 xt->date);
	if (rc)
		return false;
	log_warn("awsreq",
		 "%s: the service refused our signing time (%s); clock set "
		 "from its Date (%s), sending again",
		 target, err->type[0] ? err->type : "no error code", xt->date);
	return true;
}

/* A retry the quota cannot pay for: not made, counted, and said at most
 * once a minute. */
static void quota_spent(struct awsreq *r, const char *target,
			const struct aws_error *err)
{
	char why[384];
	bool say;

	metrics_inc(r->cfg.metrics, MC_DDB_RETRIES_REFUSED);
	pthread_mutex_lock(&r->mu);
	say = log_gap_due(&r->quota_warned_mono_ms, clk_mono_ms(r->cfg.clock),
			  AWSREQ_QUOTA_WARN_MS);
	pthread_mutex_unlock(&r->mu);
	if (say)
		log_warn("awsreq",
			 "%s: %s; DynamoDB keeps failing, so calls are not "
			 "retried until some succeed again (retry quota spent)",
			 target, awserr_format(err, why, sizeof(why)));
}

int awsreq_json(struct awsreq *r, int kind, const char *target,
		const char *body, size_t len, int64_t deadline_mono_ms,
		struct buf *resp, struct aws_error *err, int *attempts,
		int *unanswered)
{
	struct awsreq_thread *t;
	int64_t now = clk_mono_ms(r->cfg.clock), delay;
	int done = 0, rc, last_cost = 0;
	bool sent, corrected = false;
	struct exchange_time xt = { 0 };

	awserr_clear(err);
	if (attempts)
		*attempts = 0;
	if (unanswered)
		*unanswered = 0;
	if (!deadline_mono_ms)
		deadline_mono_ms = now + r->cfg.default_deadline_ms;
	t = thread_state(r);
	if (!t) {
		awserr_set(err, 0, NULL, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		int64_t left_ms = deadline_mono_ms - now;
		long timeout_ms = r->cfg.attempt_timeout_ms;

		if (left_ms <= 0) {
			if (!done) {
				buf_reset(resp);
				awserr_set_transport(err, -ETIMEDOUT);
				rc = -ETIMEDOUT;
			}
			break;
		}
		if (left_ms < timeout_ms)
			timeout_ms = (long)left_ms;
		rc = attempt(r, t, kind, target, body, len, timeout_ms, resp,
			     err, &sent, &xt);
		if (!sent)
			break; /* no credentials: not retried here */
		done++;
		if (attempts)
			*attempts = done;
		/* Without an answer, a request that left may land later;
		 * one that never left (refused, unreachable, a failed TLS
		 * handshake) cannot. A success (2xx) whose answer cannot be
		 * read is no answer either: the write it reports landed. */
		if (rc && xt.went_out && unanswered &&
		    (!err->http_status ||
		     (err->http_status >= 200 && err->http_status < 300)))
			(*unanswered)++;
		if (!rc)
			break;
		if (!corrected && correct_clock(r, target, err, &xt)) {
			corrected = true;
			now = clk_mono_ms(r->cfg.clock);
			continue;
		}
		if (awserr_is_throttle(err))
			metrics_inc(r->cfg.metrics, MC_DDB_THROTTLES);
		if (!awserr_is_retryable(err))
			break;
		now = clk_mono_ms(r->cfg.clock);
		delay = retry_backoff_ms(&r->cfg.retry, done + 1, &t->rng);
		if (!retry_should_retry(&r->cfg.retry, done, now,
					delay + AWSREQ_MIN_ATTEMPT_MS,
					deadline_mono_ms))
			break;
		last_cost = retry_quota_take(&r->quota, rc == -ETIMEDOUT);
		if (!last_cost) {
			quota_spent(r, target, err);
			break;
		}
		if (log_enabled(LOGL_DEBUG)) {
			char why[384];

			log_debug("awsreq",
				  "retry target=%s attempt=%d "
				  "delay_ms=%lld error=%s",
				  target, done + 1, (long long)delay,
				  awserr_format(err, why, sizeof(why)));
		}
		metrics_inc(r->cfg.metrics, MC_DDB_RETRIES);
		retry_sleep_ms(delay);
		now = clk_mono_ms(r->cfg.clock);
	}
	if (!rc)
		retry_quota_give(&r->quota, last_cost);
	return rc;
}
