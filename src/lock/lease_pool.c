/* lease_pool: the lease workers' number (see lease_pool.h). Under
 * engine->mu: the scheduler plans, the workers count their renewals. */
#include "lease_pool.h"

#include "log.h"

#define TAG		 "lease"
#define POOL_SETTLE_MS	 2000	/* a grown pool runs that long unjudged */
#define POOL_WINDOW_MS	 1000	/* renewals counted that long at least, */
#define POOL_WINDOW_RTTS 4	/* and that many renewal times */
#define POOL_ANSWERS	 32	/* and at least that many */
#define POOL_HOLD_MIN_MS 30000	/* no growth after a useless one... */
#define POOL_HOLD_MAX_MS 300000 /* ... doubling up to this */
#define POOL_KEEP_MS	 60000	/* a useful size is judged again after */
#define POOL_IDLE_MS	 30000
/* A pool twice as large must renew at least this much more a second. */
#define POOL_GAIN_NEEDED 1.2

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

void lease_pool_init(struct lease_pool *p, int base, int max, int64_t idle_ms)
{
	*p = (struct lease_pool){
		.base = base,
		.max = max < base ? base : max,
		.target = base,
		.proven = base,
		.hold_ms = POOL_HOLD_MIN_MS,
		.idle_ms = idle_ms > 0 ? idle_ms : POOL_IDLE_MS,
	};
}

/* Counts the renewals answered from skip_rtts renewal times on (the
 * requests in flight at the old size answered first), for a window of
 * several renewal times and a second at least. */
static void measure(struct lease_pool *p, enum lease_pool_phase phase,
		    int64_t now, int64_t beat_ms_avg, int skip_rtts)
{
	p->phase = phase;
	p->from_ms = now + skip_rtts * beat_ms_avg;
	p->window_ms = max64(POOL_WINDOW_MS, POOL_WINDOW_RTTS * beat_ms_avg);
	p->until_ms = p->from_ms + 4 * p->window_ms;
	p->n = 0;
}

/* The renewals a second counted, once the window has passed with enough
 * of them; < 0 before. */
static double rate_now(const struct lease_pool *p, int64_t now)
{
	if (now < p->from_ms + p->window_ms || p->n < POOL_ANSWERS)
		return -1;
	return p->n * 1000.0 / (double)(now - p->from_ms);
}

static int half(const struct lease_pool *p)
{
	return p->target / 2 < p->base ? p->base : p->target / 2;
}

/* Both sizes counted: the larger one comes back only if it renewed
 * clearly more a second (renewals waited at it, so it renewed all it
 * could). Returns true if it does. */
static bool judge(struct lease_pool *p, int64_t now, double rate_lo)
{
	int lo = p->target;
	double gain = rate_lo > 0 ? p->rate_hi / rate_lo : 2;

	p->judged++;
	p->phase = POOL_STEADY;
	if (gain >= POOL_GAIN_NEEDED) {
		p->target = p->proven = p->hi;
		p->judge_after_ms = now + POOL_KEEP_MS;
		p->hold_ms = POOL_HOLD_MIN_MS;
		log_debug(TAG,
			  "lease workers: %d renewed %.0f a second, %.2fx "
			  "what %d did: %d it is",
			  p->hi, p->rate_hi, gain, lo, p->hi);
		return true;
	}
	p->futile++;
	if (p->proven > lo)
		p->proven = lo;
	p->grow_after_ms = now + p->hold_ms;
	p->judge_after_ms = now + POOL_SETTLE_MS;
	log_info(TAG,
		 "lease workers: %d renewed %.0f a second, %.2fx what %d "
		 "did (DynamoDB or this host is saturated): %d it is, no "
		 "growth for %lld s",
		 p->hi, p->rate_hi, gain, lo, lo,
		 (long long)(p->hold_ms / 1000));
	p->hold_ms = p->hold_ms * 2 > POOL_HOLD_MAX_MS ? POOL_HOLD_MAX_MS
						       : p->hold_ms * 2;
	return false;
}

static bool urgent(const struct lease_pool_seen *s)
{
	return s->backlog && s->late_ms * 4 > s->slack_ms;
}

static bool calm(const struct lease_pool_seen *s)
{
	return !s->backlog || s->late_ms * 8 <= s->slack_ms;
}

/* Whether the pool may double now, unjudged: from a size judged useful
 * (its start is), or when renewals run so late that locks are at stake
 * (a judgement takes seconds). */
static bool may_double(const struct lease_pool *p,
		       const struct lease_pool_seen *s)
{
	if (p->target >= p->max || s->now < p->grow_after_ms)
		return false;
	return p->target <= p->proven || urgent(s);
}

/* STEADY: grows, starts a judgement, or halves an idle pool. */
static bool plan_steady(struct lease_pool *p, const struct lease_pool_seen *s,
			bool *shrunk)
{
	int64_t now = s->now;

	if (s->backlog && may_double(p, s)) {
		p->target = p->target * 2 > p->max ? p->max : p->target * 2;
		p->judge_after_ms = now + POOL_SETTLE_MS;
		return true;
	}
	/* Judged once all its workers run, while renewals are in time. */
	if (s->backlog && p->target > p->base && s->running >= p->target &&
	    calm(s) && now >= p->judge_after_ms) {
		measure(p, POOL_MEASURE_HI, now, s->beat_ms_avg, 1);
		return false;
	}
	if (!s->backlog && p->target > p->base &&
	    now - p->last_backlog_ms >= p->idle_ms) {
		p->target = half(p);
		if (p->proven > p->target)
			p->proven = p->target;
		p->last_backlog_ms = now; /* the next half later */
		*shrunk = true;
		log_debug(TAG, "lease workers: none waited for %lld s: %d now",
			  (long long)(p->idle_ms / 1000), p->target);
	}
	return false;
}

/* A judgement given up: renewals got late (the half pool is the larger
 * again, and it is not judged for a while), or too few were answered. */
static bool give_up(struct lease_pool *p, int64_t now, bool late)
{
	bool rose = p->phase == POOL_MEASURE_LO;

	if (rose)
		p->target = p->hi;
	p->phase = POOL_STEADY;
	p->judge_after_ms = now + (late ? POOL_KEEP_MS : POOL_SETTLE_MS);
	if (late)
		log_info(TAG,
			 "lease workers: judging %d made renewals late: "
			 "given up, not tried again for %d s",
			 p->target, POOL_KEEP_MS / 1000);
	return rose;
}

bool lease_pool_plan_locked(struct lease_pool *p,
			    const struct lease_pool_seen *s, bool *shrunk)
{
	int64_t now = s->now;
	double rate;

	*shrunk = false;
	if (s->backlog)
		p->last_backlog_ms = now;
	if (p->phase != POOL_STEADY && urgent(s))
		return give_up(p, now, true);
	switch (p->phase) {
	case POOL_STEADY:
		return plan_steady(p, s, shrunk);
	case POOL_MEASURE_HI:
		rate = rate_now(p, now);
		if (rate >= 0) {
			p->hi = p->target;
			p->rate_hi = rate;
			p->target = half(p);
			*shrunk = true;
			/* The larger pool's requests in flight answer first. */
			measure(p, POOL_MEASURE_LO, now, s->beat_ms_avg, 2);
		} else if (now >= p->until_ms) {
			return give_up(p, now, false); /* too few answers */
		}
		break;
	case POOL_MEASURE_LO:
		rate = rate_now(p, now);
		if (rate >= 0)
			return judge(p, now, rate);
		if (now >= p->until_ms)
			return give_up(p, now, false);
		break;
	}
	return false;
}

void lease_pool_answer_locked(struct lease_pool *p, int64_t now)
{
	if (p->phase != POOL_STEADY && now >= p->from_ms)
		p->n++;
}
