/* lease_pool: how many lease workers a lock engine wants (lease.c starts
 * and ends them). The requests a renewal rate needs in flight are that
 * rate times the time each takes: while renewals wait for a worker the
 * pool doubles, up to its most. But more requests in flight pay only
 * where each takes no longer for it (a far DynamoDB); a store that is
 * itself saturated, or a host short of CPU, answers them no sooner: each
 * just waits longer, and every worker costs memory. So every doubling is
 * judged: the renewals answered a second are counted at the pool's size
 * while renewals wait (it renews all it can: three windows of a second
 * or more, POOL_RATE_WINDOWS), then at twice that, and the
 * doubled pool stays only if it renewed clearly more; else it is halved
 * back and grows no more for a while, longer each time. A judgement never
 * makes the pool smaller than before it, so it never costs a lock. While
 * renewals run so late that locks are at stake the pool doubles at once,
 * unjudged, held off or not; but never while most renewals fail (cut at
 * their deadline by a DynamoDB slower the more are in flight, throttled,
 * or down: a doubling that made them all fail is judged useless too).
 * Every size above the start is judged again later, the other way
 * round, while renewals still wait and no lock is at stake: the pool is
 * halved for three windows, and stays halved if the half renewed nearly as
 * much a second (a saturated store: more in flight only waited longer,
 * and cost memory; or a doubling judged on a store that was still
 * warming up, or on a noisy window); else, or as soon as locks are at
 * stake again, it doubles back, and the next half waits longer, twice as
 * long each time (60 s up to 5 min). An urgent doubling is first tried
 * four windows (4 s or more) after locks were last at stake; a judged one, 60 s
 * after its judgement.
 * A pool without waiting renewals for a while halves back towards its
 * start. Everything here is under engine->mu (the scheduler and the
 * workers). */
#ifndef LOCKFS_LEASE_POOL_H
#define LOCKFS_LEASE_POOL_H

#include <stdbool.h>
#include <stdint.h>

/* A rate is the mean of this many windows of a second (or four renewal
 * times) each: DynamoDB's renewals a second vary by about a sixth from
 * one second to the next (DynamoDB Local on a small host: more), so a
 * single window made a gain of 1.2 by chance about one judgement in ten;
 * three make it about one in a hundred and fifty. */
#define POOL_RATE_WINDOWS 3

enum lease_pool_phase {
	POOL_STEADY,
	POOL_MEASURE, /* the doubled pool's renewals a second are counted */
	POOL_MEASURE_HALF, /* the halved pool's, judging the whole again */
};

struct lease_pool {
	int base;   /* the pool's size at start, and its least */
	int max;    /* what it may grow to */
	int target; /* the workers wanted now; those above it end */
	enum lease_pool_phase phase;
	int64_t win_from_ms; /* renewals answered from then on count */
	int win_n;	     /* how many so far */
	/* The last whole windows at target, since the count last began
	 * (ring of POOL_RATE_WINDOWS): renewals a second, and counted. */
	double win_rate[POOL_RATE_WINDOWS];
	int win_count[POOL_RATE_WINDOWS];
	int wins;		 /* windows whole so far */
	double rate;		 /* renewals a second at target over the
				  * last POOL_RATE_WINDOWS whole windows
				  * (-1: fewer yet) */
	int rate_n;		 /* the renewals those windows counted */
	double rate_before;	 /* at half of it, before it doubled */
	int before;		 /* that size */
	int proven;		 /* the last size judged useful, or needed */
	int64_t last_backlog_ms; /* when renewals last waited for a worker */
	int64_t grow_after_ms;	 /* no growth before (it did not pay) */
	int64_t hold_ms;	 /* how long the next such hold lasts */
	int64_t idle_ms;	 /* no renewal waited for that long: halves */
	int64_t late_at_ms;	 /* the last lateness sample (0: none) */
	int64_t late_last_ms;	 /* and the lateness then */
	double late_rate;	 /* how fast it grows, ms a ms */
	double fail_share;	 /* of the recent renewals, those that failed
				  * (the last 16 or so weigh most) */
	int judged, futile;	 /* doublings judged, and found useless */
	int64_t half_after_ms;	 /* a half is tried from then on (0: none) */
	int64_t half_hold_ms;	 /* the next wait after a half that failed */
	int halved, unhalved;	 /* halves kept, and given up */
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
 * quarter of the slack, or gets later so fast that the slack would be
 * gone within four windows. */
bool lease_pool_plan_locked(struct lease_pool *p,
			    const struct lease_pool_seen *s, bool *shrunk);
/* mu held: a renewal ended at now, ok or failed (not one that found its
 * lock lost). */
void lease_pool_answer_locked(struct lease_pool *p, int64_t now, bool ok);

#endif
