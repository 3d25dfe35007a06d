/* fake_awsreq: the signed-request layer under src/ddb replaced for fuzzing.
 * A harness routes awsreq_json and awsreq_clock here (" * fuzz-wrap: ..."
 * in its top comment) and scripts the answers; each call takes the next
 * one and classifies it as awsreq.c does (2xx with a JSON object: 0; 2xx
 * otherwise: -EPROTO; else the error envelope through awserr_from_json and
 * awserr_to_errno). Every request body src/ddb builds must be a JSON object.
 * The clock is a fake one that never moves (table waits end at once).
 * Single-threaded, like the harnesses. */
#ifndef LOCKFS_FAKE_AWSREQ_H
#define LOCKFS_FAKE_AWSREQ_H

#include <stddef.h>

#include "awsreq.h"

struct fake_ddb_answer {
	long status;
	const char *body;
	size_t len;
};

/* Answers for the next calls (borrowed until the next reset); a call past
 * the last one fails as a refused connection. */
void fake_awsreq_reset(const struct fake_ddb_answer *answers, size_t n);
size_t fake_awsreq_calls(void);
/* A pointer that stands for the awsreq (never dereferenced). */
struct awsreq *fake_awsreq(void);

int __wrap_awsreq_json(struct awsreq *r, int kind, const char *target,
		       const char *body, size_t len, int64_t deadline_mono_ms,
		       struct buf *resp, struct aws_error *err, int *attempts,
		       int *unanswered);
const struct clk *__wrap_awsreq_clock(const struct awsreq *r);

#endif
