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

struct awsreq_config {
	const char *endpoint;     /* "https://dynamodb.eu-west-1.amazonaws.com" */
	const char *region;
	const char *service;      /* "dynamodb" */
	struct creds_chain *creds;
	struct http_opts http;
	long attempt_timeout_ms;  /* one HTTP exchange; 0: 5000 */
	int64_t default_deadline_ms; /* whole call when the caller gives none; 0: 15000 */
	struct retry_policy retry;
	struct metrics *metrics;  /* may be NULL */
	const struct clk *clock;  /* NULL: the system clocks */
};

struct awsreq;

struct awsreq *awsreq_new(const struct awsreq_config *cfg);
void awsreq_free(struct awsreq *r);

/* Sends POST / with Content-Type application/x-amz-json-1.0 and
 * X-Amz-Target: target. Retries retryable failures (throttling, 5xx,
 * transport errors) with full-jitter backoff while attempts remain and the
 * deadline allows (deadline_mono_ms 0: now + default_deadline_ms); never
 * retries anything else, conditional failures included. On 2xx returns 0 with
 * the body in resp. Otherwise -errno (awserr_to_errno) with err filled.
 * *attempts (may be NULL) gets the number of HTTP exchanges made. */
int awsreq_json(struct awsreq *r, enum ddb_op op, const char *target,
		const char *body, size_t len, int64_t deadline_mono_ms,
		struct buf *resp, struct aws_error *err, int *attempts);

#endif
