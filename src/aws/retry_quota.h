/* retry_quota: the retries a client may still make, shared by all its
 * calls, as the AWS SDKs' standard retry mode keeps it: a retry costs 5
 * (10 after a timeout), a call that succeeds at once gives 1 back, one
 * that succeeds after retries gives back what its last retry cost, never
 * above the start. While DynamoDB keeps failing (a throttled table, an
 * outage), the quota runs out after about 100 retries and every call then
 * makes one attempt: a fleet of mounts does not multiply the load of a
 * table that is already refusing it. Thread-safe (atomics). */
#ifndef LOCKFS_RETRY_QUOTA_H
#define LOCKFS_RETRY_QUOTA_H

#include <stdatomic.h>
#include <stdbool.h>

#define RETRY_QUOTA_DEFAULT	 500
#define RETRY_QUOTA_COST	 5
#define RETRY_QUOTA_TIMEOUT_COST 10

struct retry_quota {
	atomic_int tokens;
	int max; /* < 0: no quota, every retry is allowed */
};

/* max 0: RETRY_QUOTA_DEFAULT; < 0: no quota. */
void retry_quota_init(struct retry_quota *q, int max);
/* Takes the cost of one retry (after a timeout when timeout): the cost
 * taken, or 0 when the quota cannot pay it and no retry is to be made. */
int retry_quota_take(struct retry_quota *q, bool timeout);
/* A call succeeded: last is the cost its last retry took (0: it made
 * none, and 1 is given back). */
void retry_quota_give(struct retry_quota *q, int last);
/* The tokens left (negative when there is no quota). */
int retry_quota_left(struct retry_quota *q);

#endif
