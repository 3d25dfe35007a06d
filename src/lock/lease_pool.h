/* lease_pool: how many lease workers a lock engine wants (lease.c starts
 * and ends them). The requests a renewal rate needs in flight are that
 * rate times the time each takes: while renewals wait for a worker the
 * pool doubles, up to its most. But more requests in flight pay only
 * where each takes no longer for it (a far DynamoDB); a store that is
 * itself saturated, or a host short of CPU, answers them no sooner: each
 * just waits longer, and every worker costs memory. So a pool that grew
 * and still leaves renewals waiting is judged: the renewals answered a
 * second are counted at its size, then at half of it, and it stays
 * halved (growth held off for a while, longer each time) unless the
 * larger one renewed clearly more. A judgement starts only while renewals
 * run well in time, and one that makes them late is given up: it must
 * never cost a lock. The pool doubles again only from a size so judged,
 * or at once while renewals run so late that locks are at stake.
 * A pool without waiting renewals for a while halves back towards its
 * start. Everything here is under engine->mu (the scheduler and the
 * workers). */
#ifndef LOCKFS_LEASE_POOL_H
#define LOCKFS_LEASE_POOL_H

#include <stdbool.h>
#include <stdint.h>

enum lease_pool_phase {
	POOL_STEADY,
	POOL_MEASURE_HI, /* renewals a second of the grown pool */
	POOL_MEASURE_LO, /* then of half of it */
};

struct lease_pool {
	int base;   /* the pool's size at start, and its least */
	int max;    /* what it may grow to */
	int target; /* the workers wanted now; those above it end */
	enum lease_pool_phase phase;
	int64_t from_ms;	 /* renewals answered from then on count */
	int64_t window_ms;	 /* for at least that long */
	int64_t until_ms;	 /* a measure not done by then is given up */
	int n;			 /* renewals answered since from_ms */
	int hi;			 /* the pool being judged */
	double rate_hi;		 /* its renewals a second */
	int proven;		 /* the last size judged useful */
	int64_t last_backlog_ms; /* when renewals last waited for a worker */
	int64_t grow_after_ms;	 /* no growth before (it did not pay) */
	int64_t hold_ms;	 /* how long the next such hold lasts */
	int64_t judge_after_ms;	 /* no judgement before */
	int64_t idle_ms;	 /* no renewal waited for that long: halves */
	int judged, futile;	 /* growths judged, and found useless */
};

/* What the scheduler saw in a pass. */
struct lease_pool_seen {
	int64_t now;
	int running;	     /* workers running */
	bool backlog;	     /* due renewals waited for a worker */
	int64_t late_ms;     /* then, how late the most overdue one is */
	int64_t slack_ms;    /* how late a renewal may be before its lock's
			      * trust ends (safe period - heartbeat) */
	int64_t beat_ms_avg; /* how long a renewal takes */
};

/* A pool of base workers that may grow to max; idle_ms 0: 30 s. */
void lease_pool_init(struct lease_pool *p, int base, int max, int64_t idle_ms);
/* mu held, from the scheduler after each pass. Returns true when the
 * target rose (the scheduler passes again at once, to queue for the new
 * workers); *shrunk when it fell (idle workers above it are woken to
 * end). Locks are at stake while the most overdue renewal is late by a
 * quarter of the slack; renewals run well in time below an eighth. */
bool lease_pool_plan_locked(struct lease_pool *p,
			    const struct lease_pool_seen *s, bool *shrunk);
/* mu held: a renewal was answered (it succeeded) at now. */
void lease_pool_answer_locked(struct lease_pool *p, int64_t now);

#endif
