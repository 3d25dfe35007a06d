/* store_fault: a store that wraps any other store and injects the faults of
 * a network between lockfs and DynamoDB: a link that is down, replies lost
 * after the write landed, writes sent again after they landed, and a hook run
 * before every request (to take time on a fake clock, sleep, block one key, or
 * record the order of events). Test-only: never linked into lockfs.
 *
 * Threads: any; the knobs are read atomically, the hook runs in the
 * caller's thread without any lock held. */
#ifndef LOCKFS_TEST_STORE_FAULT_H
#define LOCKFS_TEST_STORE_FAULT_H

#include "store.h"

enum store_fault_op {
	SF_GET,
	SF_LOOKUP,
	SF_PUT,
	SF_RENEW,
	SF_DELETE,
	SF_FENCE,
	SF_DIR,
	SF_LIST,
	SF_SHARE, /* join, leave, eviction, writer marks (writes) */
};

struct store_fault {
	struct store base;
	struct store *inner;
	int down;	  /* every request fails with -ETIMEDOUT */
	int lose_replies; /* writes land, then report -ETIMEDOUT */
	int lose_next;	  /* the next n writes do (then they answer) */
	/* Every conditional write that lands is sent again, as the request
	 * layer does when its answer was lost; the second answer is returned
	 * (a refusal showing the write's own effect). */
	int send_twice;
	/* Before every request, when set: a non-zero return fails the
	 * request with that -errno, without reaching the inner store. */
	int (*before)(void *arg, enum store_fault_op op, const char *key);
	void *arg;
};

/* f->base is then a store forwarding to inner; destroying it does not
 * destroy inner. */
void store_fault_init(struct store_fault *f, struct store *inner);
void store_fault_set_down(struct store_fault *f, int down);
void store_fault_set_lose_replies(struct store_fault *f, int lose);
void store_fault_lose_next(struct store_fault *f, int n);
void store_fault_set_send_twice(struct store_fault *f, int twice);

#endif
