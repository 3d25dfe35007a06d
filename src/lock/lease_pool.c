/* lease_pool: the lease workers' number (see lease_pool.h). Under
 * engine->mu: the scheduler plans, the workers count their renewals. */
#include "lease_pool.h"

#include "log.h"

#define TAG		  "lease"
#define POOL_WINDOW_MS	  1000	 /* renewals counted that long at least, */
#define POOL_WINDOW_RTTS  4	 /* and that many renewal times */
#define POOL_GAP_MS	  250	 /* no renewal waited that long: a break */
#define POOL_LATE_STEP_MS 200	 /* lateness's speed sampled that often */
#define POOL_ANSWERS_MIN  16	 /* a baseline with fewer counts nothing */
#define POOL_HOLD_MIN_MS  30000	 /* no growth after a useless one... */
#define POOL_HOLD_MAX_MS  300000 /* ... doubling up to this */
#define POOL_IDLE_MS	  30000
/* A judged doubling's half waits that long, and so does the next half
 * after one that failed (doubling up to POOL_HOLD_MAX_MS). */
#define POOL_HALF_HOLD_MIN_MS 60000
/* A pool twice as large must renew at least this much more a second. */
#define POOL_GAIN_NEEDED 1.2

/* How long renewals are counted for a rate: a second and four renewal
 * times at least. */
static int64_t window_ms(const struct lease_pool_seen *s)
{
	int64_t rtts = POOL_WINDOW_RTTS * s->beat_ms_avg;

	return rtts > POOL_WINDOW_MS ? rtts : POOL_WINDOW_MS;
}

void lease_pool_init(struct lease_pool *p, int base, int max, int64_t idle_ms)
{
	*p = (struct lease_pool){
		.base = base,
		.max = max < base ? base : max,
		.target = base,
		.proven = base,
		.rate = -1,
		.hold_ms = POOL_HOLD_MIN_MS,
		.half_hold_ms = POOL_HALF_HOLD_MIN_MS,
		.idle_ms = idle_ms > 0 ? idle_ms : POOL_IDLE_MS,
	};
}

/* The renewals a second are counted again from skip_ms on. */
static void window_restart(struct lease_pool *p, int64_t now, int64_t skip_ms)
{
	p->win_from_ms = now + skip_ms;
	p->win_n = 0;
	p->wins = 0;
	p->rate = -1;
}

/* A window ended: p->rate is the mean of the last POOL_RATE_WINDOWS. */
static void window_done(struct lease_pool *p, double rate, int n)
{
	int slot = p->wins++ % POOL_RATE_WINDOWS;
	double sum = 0;

	p->win_rate[slot] = rate;
	p->win_count[slot] = n;
	if (p->wins < POOL_RATE_WINDOWS)
		return;
	p->rate_n = 0;
	for (int i = 0; i < POOL_RATE_WINDOWS; i++) {
		sum += p->win_rate[i];
		p->rate_n += p->win_count[i];
	}
	p->rate = sum / POOL_RATE_WINDOWS;
}

/* Counts the renewals answered a second, in windows (window_ms), while
 * every worker of the pool runs and
 * renewals wait for one (so the pool renews all it can): p->rate is the
 * last POOL_RATE_WINDOWS whole windows', -1 until there are that many.
 * resumed: renewals wait again after a break. */
static void window_step(struct lease_pool *p, const struct lease_pool_seen *s,
			bool resumed)
{
	if (resumed || s->running < p->target ||
	    (!s->backlog && s->now - p->last_backlog_ms > POOL_GAP_MS)) {
		/* Not all it can: the requests in flight before answer
		 * first (a renewal's time) once it is again. */
		window_restart(p, s->now, s->beat_ms_avg);
		return;
	}
	if (s->now - p->win_from_ms < window_ms(s))
		return;
	window_done(p, p->win_n * 1000.0 / (double)(s->now - p->win_from_ms),
		    p->win_n);
	p->win_from_ms = s->now;
	p->win_n = 0;
}

static int half(const struct lease_pool *p)
{
	return p->target / 2 < p->base ? p->base : p->target / 2;
}

static int doubled(const struct lease_pool *p)
{
	return p->target * 2 > p->max ? p->max : p->target * 2;
}

/* A hold that lasts *wait_ms from now; the next one twice as long, up to
 * POOL_HOLD_MAX_MS. Returns when it ends. */
static int64_t hold_end(int64_t *wait_ms, int64_t now)
{
	int64_t end = now + *wait_ms;

	*wait_ms = *wait_ms * 2 > POOL_HOLD_MAX_MS ? POOL_HOLD_MAX_MS
						   : *wait_ms * 2;
	return end;
}

static void hold_growth(struct lease_pool *p, int64_t now)
{
	p->grow_after_ms = hold_end(&p->hold_ms, now);
}

static void set_target(struct lease_pool *p, int64_t now, int target)
{
	p->target = target;
	if (p->proven > target)
		p->proven = target;
	window_restart(p, now, 0);
}

/* How far ahead the pool looks: lateness that would use up the slack
 * within it puts locks at stake, and a half waits that long after locks
 * were last at stake, or after the last half was kept. Four windows
 * (what two judgements took when a rate was one window's: a longer look
 * ahead made poolsize.t's pool double at once while it was judged). */
static int64_t ahead_ms(const struct lease_pool_seen *s)
{
	return 4 * window_ms(s);
}

/* Notes how fast renewals get later (ms a ms, the last 200 ms weigh
 * half), while they wait. */
static void note_lateness(struct lease_pool *p, const struct lease_pool_seen *s)
{
	int64_t dt = s->now - p->late_at_ms;

	if (!s->backlog) {
		p->late_at_ms = 0;
		p->late_rate = 0;
		return;
	}
	if (!p->late_at_ms) {
		p->late_at_ms = s->now;
		p->late_last_ms = s->late_ms;
		return;
	}
	if (dt < POOL_LATE_STEP_MS)
		return;
	p->late_rate = (p->late_rate +
			(double)(s->late_ms - p->late_last_ms) / (double)dt) /
		       2;
	p->late_at_ms = s->now;
	p->late_last_ms = s->late_ms;
}

/* Locks are at stake: the most overdue renewal is late by a quarter of
 * the slack, or gets later so fast that the slack would be gone within
 * four windows (a round trip's jump: renewload.t lost locks waiting for
 * a quarter; a saturated store's renewals get later slowly, or not). */
static bool urgent(const struct lease_pool *p, const struct lease_pool_seen *s)
{
	if (!s->backlog)
		return false;
	if (s->late_ms * 4 > s->slack_ms)
		return true;
	/* Held off (a doubling just did not pay), or while a half is tried
	 * (the workers that end leave renewals unsent for a renewal time),
	 * the lateness itself decides: its speed swings as the pool
	 * settles. */
	return p->phase != POOL_MEASURE_HALF && s->now >= p->grow_after_ms &&
	       p->late_rate > 0 &&
	       (double)(s->slack_ms - s->late_ms) <
		       p->late_rate * (double)ahead_ms(s);
}

/* Most recent renewals failed: more in flight would not help them (a
 * DynamoDB that answers later the more are in flight cuts them all at
 * their deadline; a throttled one refuses more; one that is down, all). */
static bool failing(const struct lease_pool *p)
{
	return p->fail_share > 0.5;
}

/* The doubled pool counted: it stays only if it renewed clearly more a
 * second than the half did before it doubled (both with renewals waiting:
 * each renewed all it could). Returns true if the pool shrank. */
static bool judge(struct lease_pool *p, int64_t now)
{
	int lo = p->before; /* not half: a doubling capped at max */
	double gain = p->rate_before > 0 ? p->rate / p->rate_before : 2;

	p->judged++;
	p->phase = POOL_STEADY;
	if (gain >= POOL_GAIN_NEEDED) {
		p->proven = p->target;
		p->hold_ms = POOL_HOLD_MIN_MS;
		p->half_after_ms = now + POOL_HALF_HOLD_MIN_MS;
		log_info(TAG,
			 "lease workers: %d renewed %.0f a second, %.2fx "
			 "what %d did: %d it is, judged again in %d s",
			 p->target, p->rate, gain, lo, p->target,
			 POOL_HALF_HOLD_MIN_MS / 1000);
		return false;
	}
	p->futile++;
	log_info(TAG,
		 "lease workers: %d renewed %.0f a second, %.2fx what %d "
		 "did (DynamoDB or this host is saturated): %d it is, no "
		 "growth for %lld s",
		 p->target, p->rate, gain, lo, lo,
		 (long long)(p->hold_ms / 1000));
	set_target(p, now, lo);
	hold_growth(p, now);
	return true;
}

/* A half was too few: the next one is tried later, twice as late each
 * time. */
static void half_failed(struct lease_pool *p, int64_t now)
{
	p->unhalved++;
	p->half_after_ms = hold_end(&p->half_hold_ms, now);
}

/* Renewals wait for a worker: doubles, at once while locks are at stake
 * (no time to judge), else once the pool's renewals a second are known,
 * to be judged against them. Returns true if it did. */
static bool grow(struct lease_pool *p, const struct lease_pool_seen *s)
{
	if (p->target >= p->max || failing(p))
		return false;
	if (urgent(p, s)) { /* held off or not (found in review) */
		/* At stake again while a half was tried: it is too few,
		 * and the next half waits longer. */
		if (p->phase == POOL_MEASURE_HALF)
			half_failed(p, s->now);
		else
			p->half_after_ms = s->now + ahead_ms(s);
		log_info(TAG,
			 "lease workers: renewals %lld ms late of %lld ms of "
			 "slack, locks at stake: %d now, judged later",
			 (long long)s->late_ms, (long long)s->slack_ms,
			 doubled(p));
		p->phase = POOL_STEADY;
		p->target = p->proven = doubled(p); /* needed, not judged */
		window_restart(p, s->now, 0);
		return true;
	}
	/* Judged against windows with answers enough (none: DynamoDB
	 * hangs, or is down, and more requests would not help). */
	if (s->now < p->grow_after_ms || p->phase != POOL_STEADY ||
	    p->target > p->proven || p->rate < 0 ||
	    p->rate_n < POOL_ANSWERS_MIN)
		return false;
	p->rate_before = p->rate;
	p->before = p->target;
	p->phase = POOL_MEASURE;
	p->target = doubled(p);
	window_restart(p, s->now, 0);
	return true;
}

/* A size above the start judged again (lease_pool.h): halved for its
 * windows once its time has come, while renewals still wait (the pool
 * renews all it can) and no lock is at stake. Returns true if it did. */
static bool try_half(struct lease_pool *p, const struct lease_pool_seen *s)
{
	if (!p->half_after_ms || s->now < p->half_after_ms ||
	    p->target <= p->base || p->phase != POOL_STEADY || !s->backlog ||
	    urgent(p, s) || p->rate < 0 || p->rate_n < POOL_ANSWERS_MIN)
		return false;
	p->rate_before = p->rate;
	p->before = p->target;
	p->phase = POOL_MEASURE_HALF;
	set_target(p, s->now, half(p)); /* proven with it */
	/* The requests of the workers that end still answer for a renewal
	 * time: not the half's. */
	window_restart(p, s->now, s->beat_ms_avg);
	return true;
}

/* The halved pool counted: it stays if it renewed nearly as much a second
 * as the whole did (the doubling does not pay, or no longer), and its own
 * half is tried four windows on; else the whole comes back, judged
 * needed. Returns true if the pool grew back. */
static bool judge_half(struct lease_pool *p, const struct lease_pool_seen *s)
{
	int whole = p->before;

	p->phase = POOL_STEADY;
	if (p->rate * POOL_GAIN_NEEDED >= p->rate_before) {
		p->halved++;
		p->half_after_ms = s->now + ahead_ms(s);
		hold_growth(p, s->now); /* the doubling did not pay */
		log_info(TAG,
			 "lease workers: %d renewed %.0f a second, what %d "
			 "did (%.0f): %d it is",
			 p->target, p->rate, whole, p->rate_before, p->target);
		return false;
	}
	half_failed(p, s->now);
	log_info(TAG,
		 "lease workers: %d renewed %.0f a second, %d did %.0f: %d "
		 "it is, the next half in %lld s",
		 p->target, p->rate, whole, p->rate_before, whole,
		 (long long)((p->half_after_ms - s->now) / 1000));
	set_target(p, s->now, whole);
	p->proven = whole;
	return true;
}

bool lease_pool_plan_locked(struct lease_pool *p,
			    const struct lease_pool_seen *s, bool *shrunk)
{
	int64_t now = s->now;
	bool resumed = s->backlog && now - p->last_backlog_ms > POOL_GAP_MS;

	*shrunk = false;
	if (s->backlog)
		p->last_backlog_ms = now;
	note_lateness(p, s);
	window_step(p, s, resumed);
	if (s->backlog && grow(p, s))
		return true;
	if (p->phase == POOL_MEASURE_HALF) {
		if (p->rate >= 0)
			return judge_half(p, s);
		if (now - p->last_backlog_ms > POOL_GAP_MS) {
			/* No renewal waits at the half: it is enough. */
			p->phase = POOL_STEADY;
			p->halved++;
			p->half_after_ms = now + ahead_ms(s);
		}
		return false;
	}
	if (try_half(p, s)) {
		*shrunk = true;
		return false;
	}
	if (p->phase == POOL_MEASURE) {
		if (p->rate >= 0) {
			*shrunk = judge(p, now);
		} else if (now - p->last_backlog_ms > POOL_GAP_MS) {
			/* No renewal waits at the doubled pool: it helped. */
			p->phase = POOL_STEADY;
			p->proven = p->target;
			p->half_after_ms = now + POOL_HALF_HOLD_MIN_MS;
		}
		return false;
	}
	if (!s->backlog && p->target > p->base &&
	    now - p->last_backlog_ms >= p->idle_ms) {
		set_target(p, now, half(p));
		p->last_backlog_ms = now; /* the next half later */
		*shrunk = true;
		log_info(TAG, "lease workers: none waited for %lld s: %d now",
			 (long long)(p->idle_ms / 1000), p->target);
	}
	return false;
}

void lease_pool_answer_locked(struct lease_pool *p, int64_t now, bool ok)
{
	p->fail_share = (p->fail_share * 15 + (ok ? 0 : 1)) / 16;
	if (ok && now >= p->win_from_ms)
		p->win_n++;
}
