/* store_fault: a store that wraps any other store and injects the faults of
 * a network between lockfs and DynamoDB: a link that is down (a partition
 * of this wrapper's client alone), replies lost after the write landed,
 * writes sent again after they landed, latency on a fake clock, a hook
 * run before every request (to take time on a fake clock, sleep, block one
 * key, or record the order of events), and one run after a lock row's put
 * or delete landed (to act between a write and its writer's next step).
 * The lock rows of many keys (get_locks) are one request (one latency)
 * whose every key meets the hook (as SF_GET) and the link on its own, so a
 * fault aimed at one key fails that key alone; the keys let through go to
 * the inner store's get_locks (or its get_lock each). Test-only: never
 * linked into lockfs.
 *
 * Threads: any; the knobs are read atomically, the hooks run in the
 * caller's thread without any lock held. */
#ifndef LOCKFS_TEST_STORE_FAULT_H
#define LOCKFS_TEST_STORE_FAULT_H

#include "clk.h"
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
	SF_SHARE,	 /* join, leave, eviction, writer marks (writes) */
	SF_SESSION,	 /* session writes: create, beat, fence, end */
	SF_SESSION_READ, /* session reads */
};

struct store_fault {
	struct store base;
	struct store *inner;
	int down;	  /* every request fails: 1, -ETIMEDOUT (no answer);
			   * 2, -ECONNREFUSED (never sent) */
	int lose_replies; /* writes land, then report -ETIMEDOUT */
	int lose_next;	  /* the next n writes do (then they answer) */
	/* Every conditional write that lands is sent again, as the request
	 * layer does when its answer was lost; the second answer is returned
	 * (a refusal showing the write's own effect). */
	int send_twice;
	/* Before every request, when set: a non-zero return fails the
	 * request with that -errno, without reaching the inner store. */
	int (*before)(void *arg, enum store_fault_op op, const char *key);
	/* After a lock row's put, delete or release reached the inner store
	 * (rc, its answer there), when set; arg is the before hook's. */
	void (*after)(void *arg, enum store_fault_op op, const char *key,
		      int rc);
	void *arg;
	/* Latency on a fake clock, when latency_clk is set: every request
	 * first advances it by latency_rnd(latency_max_ms) ms (a number in
	 * [0, max), from the test's own random source, so that a seed
	 * replays), after the before hook. */
	struct clk_fake *latency_clk;
	int64_t latency_max_ms;
	uint64_t (*latency_rnd)(uint64_t n);
	/* The deadline the last request carried (0: the request layer's
	 * default), read with store_fault_last_deadline. */
	int64_t last_deadline_mono_ms;
	/* A listing that lags behind the writes, as an eventually consistent
	 * index can: while set, listings return the rows as they were at
	 * store_fault_freeze_list (store_fault.c owns it). */
	struct sf_frozen *frozen;
};

/* f->base is then a store forwarding to inner; destroying it does not
 * destroy inner. */
void store_fault_init(struct store_fault *f, struct store *inner);
void store_fault_set_down(struct store_fault *f, int down);
void store_fault_set_lose_replies(struct store_fault *f, int lose);
void store_fault_lose_next(struct store_fault *f, int n);
void store_fault_set_send_twice(struct store_fault *f, int twice);
int64_t store_fault_last_deadline(struct store_fault *f);
/* From now on, listings show the rows as they are now (one listing of
 * the inner store), until store_fault_thaw_list, whatever is written
 * meanwhile. Single-threaded use (the test's thread). 0 or -errno. */
int store_fault_freeze_list(struct store_fault *f);
void store_fault_thaw_list(struct store_fault *f);
/* Each request takes rnd(max_ms) ms of clk (see latency_clk). Set before
 * the wrapper is used. */
void store_fault_set_latency(struct store_fault *f, struct clk_fake *clk,
			     int64_t max_ms, uint64_t (*rnd)(uint64_t n));

#endif
