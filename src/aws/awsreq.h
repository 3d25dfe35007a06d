/* awsreq: one signed AWS JSON 1.0 call: endpoint, credentials, SigV4, HTTP,
 * classification and retries. Thread-safe: each calling thread gets its own
 * HTTP client (one curl handle with its keep-alive connection), created on
 * first use and freed when the thread exits or the awsreq is freed. */
#ifndef LOCKFS_AWSREQ_H
#define LOCKFS_AWSREQ_H

#include <stddef.h>
#include <stdint.h>

#include "awserr.h"
#include "buf.h"
#include "clk.h"
#include "creds.h"
#include "http.h"
#include "metrics.h"
#include "retry.h"
#include "srvclk.h"

struct awsreq_config {
	const char *endpoint; /* "https://dynamodb.eu-west-1.amazonaws.com" */
	const char *region;
	const char *service; /* "dynamodb" */
	struct creds_chain *creds;
	struct http_opts http;
	long attempt_timeout_ms;     /* one HTTP exchange; 0: 5000 */
	int64_t default_deadline_ms; /* whole call when the caller gives none;
					0: 15000 */
	struct retry_policy retry;
	/* Tokens shared by every call's retries (retry_quota.h); 0:
	 * RETRY_QUOTA_DEFAULT, < 0: no quota. */
	int retry_quota;
	struct metrics *metrics; /* may be NULL */
	const struct clk *clock; /* deadlines; NULL: server_clock's if given,
				    else the system clocks */
	/* NULL: requests are signed with clock's wall clock. Else (borrowed,
	 * must outlive the awsreq) every answer's Date feeds it, requests are
	 * signed with its time, and an answer that refuses the signing time
	 * (RequestTimeTooSkewed and the like, as the AWS SDKs recognise
	 * them) resets it from that answer's Date and the request is sent
	 * again at once, once per call. */
	struct srvclk *server_clock;
};

struct awsreq;

/* Copies cfg (strings included; creds and metrics are borrowed and must
 * outlive the awsreq). NULL on ENOMEM or an endpoint that is not an http(s)
 * URL. */
struct awsreq *awsreq_new(const struct awsreq_config *cfg);
/* Frees every thread's HTTP client too. Call it once no thread uses r any
 * more (threads that used it may still be alive, but none may be exiting
 * concurrently: their cleanup would race with this one). */
void awsreq_free(struct awsreq *r);

/* Sends POST <endpoint path> with Content-Type application/x-amz-json-1.0
 * and X-Amz-Target: target, signed with the chain's current credentials.
 * Retries retryable failures (throttling, 5xx, transport errors) with
 * full-jitter backoff while attempts remain, the deadline allows
 * (deadline_mono_ms 0: now + default_deadline_ms) and the retry quota
 * shared by all calls can pay for it; each attempt's timeout
 * ends at the deadline at the latest; never retries anything else,
 * conditional failures included. Returns 0 on a 2xx answer whose body is a
 * JSON object (err then holds only the status), else -errno
 * (awserr_to_errno) with err filled: -EPROTO for a 2xx answer that is not
 * JSON, -ETIMEDOUT when the deadline passed before an attempt, the chain's
 * error when there are no credentials. Whatever the outcome, resp holds the
 * body of the last answer (empty when none arrived), so that callers can
 * read e.g. the Item of a ConditionalCheckFailedException; it is capped at
 * http.max_response_bytes (-EMSGSIZE beyond). *attempts (may be NULL) gets
 * the number of HTTP exchanges made; more than 1 means an earlier attempt
 * may have been applied by the server. *unanswered (may be NULL) gets how
 * many of them went out on a connection and ended without an HTTP answer
 * (a timeout, a reset): such a request may still reach the server later,
 * where an answered one (a throttle, a 5xx) never will, nor one that never
 * left (a refused connection, an unreachable host, a failed TLS
 * handshake). */
/* kind is the request kind metrics counts the exchanges under (the
 * caller's numbering, see metrics_name_kinds). */
int awsreq_json(struct awsreq *r, int kind, const char *target,
		const char *body, size_t len, int64_t deadline_mono_ms,
		struct buf *resp, struct aws_error *err, int *attempts,
		int *unanswered);

/* The clock the awsreq measures deadlines with. */
const struct clk *awsreq_clock(const struct awsreq *r);

#endif
