/* lock_poolplan: lease_pool.c's decisions, step by step on a made-up
 * clock: when the pool doubles, how a judgement counts renewals at two
 * sizes and what it concludes, that a judgement which makes renewals late
 * is given up at once (renewload.t lost locks to one before), and that an
 * idle pool halves back. Threads: the test's alone. */
#include <stdio.h>

#include "check.h"
#include "lease_pool.h"
#include "log.h"

static struct lease_pool_seen at(int64_t now, int running, bool backlog,
				 int64_t late_ms)
{
	struct lease_pool_seen s = {
		.now = now,
		.running = running,
		.backlog = backlog,
		.late_ms = late_ms,
		.slack_ms = 15000,
		.beat_ms_avg = 50,
	};

	return s;
}

static bool plan(struct lease_pool *p, struct lease_pool_seen s, bool *shrunk)
{
	return lease_pool_plan_locked(p, &s, shrunk);
}

/* Answers per second renewals a second from t to t + ms. */
static void answer(struct lease_pool *p, int64_t t, int64_t ms, int per_s)
{
	for (int64_t i = 0; i < ms * per_s / 1000; i++)
		lease_pool_answer_locked(p, t + i * 1000 / per_s);
}

/* Runs a judgement from t: hi_rate renewals a second at the grown pool,
 * lo_rate at half of it. Returns the time after it. */
static int64_t run_judgement(struct lease_pool *p, int64_t t, int hi_rate,
			     int lo_rate, bool *rose)
{
	bool shrunk;
	int size = p->target;

	CHECK(!plan(p, at(t, size, true, 100), &shrunk));
	CHECK_INT(p->phase, POOL_MEASURE_HI);
	answer(p, t, 1200, hi_rate);
	t += 1200;
	CHECK(!plan(p, at(t, size, true, 100), &shrunk));
	CHECK_INT(p->phase, POOL_MEASURE_LO);
	CHECK(shrunk);
	CHECK_INT(p->target, size / 2);
	answer(p, t, 1200, lo_rate);
	t += 1200;
	*rose = plan(p, at(t, size / 2, true, 100), &shrunk);
	CHECK_INT(p->phase, POOL_STEADY);
	return t;
}

static void test_saturated(void)
{
	struct lease_pool p;
	bool shrunk, rose;
	int64_t t = 1000000;

	lease_pool_init(&p, 64, 256, 0);
	CHECK(!plan(&p, at(t, 64, false, 0), &shrunk));
	CHECK_INT(p.target, 64);
	/* Renewals wait: doubles from its start at once, not again. */
	CHECK(plan(&p, at(t, 64, true, 100), &shrunk));
	CHECK_INT(p.target, 128);
	CHECK(!plan(&p, at(t + 10, 100, true, 100), &shrunk));
	CHECK_INT(p.target, 128);
	CHECK_INT(p.phase, POOL_STEADY);
	/* Not judged before all its workers run, nor within 2 s. */
	CHECK(!plan(&p, at(t + 2500, 100, true, 100), &shrunk));
	CHECK_INT(p.phase, POOL_STEADY);
	t += 2500;
	t = run_judgement(&p, t, 1000, 1000, &rose);
	CHECK(!rose);
	CHECK_INT(p.target, 64);
	CHECK_INT(p.futile, 1);
	/* Growth held off for 30 s, then tried again. */
	CHECK(!plan(&p, at(t + 29000, 64, true, 100), &shrunk));
	CHECK_INT(p.target, 64);
	CHECK(plan(&p, at(t + 30001, 64, true, 100), &shrunk));
	CHECK_INT(p.target, 128);
	t += 30001 + 2001;
	t = run_judgement(&p, t, 1000, 1000, &rose);
	CHECK(!rose);
	CHECK_INT(p.target, 64);
	/* The next hold is twice as long. */
	CHECK(!plan(&p, at(t + 59000, 64, true, 100), &shrunk));
	CHECK_INT(p.target, 64);
	CHECK(plan(&p, at(t + 60001, 64, true, 100), &shrunk));
}

static void test_far(void)
{
	struct lease_pool p;
	bool shrunk, rose;
	int64_t t = 1000000;

	lease_pool_init(&p, 64, 256, 0);
	CHECK(plan(&p, at(t, 64, true, 100), &shrunk));
	t += 2001;
	t = run_judgement(&p, t, 800, 400, &rose);
	CHECK(rose);
	CHECK_INT(p.target, 128);
	CHECK_INT(p.proven, 128);
	/* Judged useful: doubles again at once. */
	CHECK(plan(&p, at(t, 128, true, 100), &shrunk));
	CHECK_INT(p.target, 256);
	t += 2001;
	t = run_judgement(&p, t, 1600, 800, &rose);
	CHECK(rose);
	CHECK_INT(p.target, 256);
	CHECK_INT(p.futile, 0);
	/* No renewal waits for 30 s: halves, and again 30 s later. */
	CHECK(!plan(&p, at(t + 29999, 256, false, 0), &shrunk));
	CHECK(!shrunk);
	CHECK(!plan(&p, at(t + 30000, 256, false, 0), &shrunk));
	CHECK(shrunk);
	CHECK_INT(p.target, 128);
	CHECK(!plan(&p, at(t + 60000, 128, false, 0), &shrunk));
	CHECK_INT(p.target, 64);
	CHECK(!plan(&p, at(t + 90000, 64, false, 0), &shrunk));
	CHECK(!shrunk);
	CHECK_INT(p.target, 64);
}

/* Renewals get late while the half pool is measured: the larger one is
 * back at once, and not judged again for a minute. Nor is one judged
 * while renewals already run late. */
static void test_late_judgement_given_up(void)
{
	struct lease_pool p;
	bool shrunk;
	int64_t t = 1000000;

	lease_pool_init(&p, 64, 256, 0);
	CHECK(plan(&p, at(t, 64, true, 100), &shrunk));
	t += 2001;
	/* Late by more than an eighth of the slack: no judgement. */
	CHECK(!plan(&p, at(t, 128, true, 2000), &shrunk));
	CHECK_INT(p.phase, POOL_STEADY);
	CHECK(!plan(&p, at(t, 128, true, 100), &shrunk));
	CHECK_INT(p.phase, POOL_MEASURE_HI);
	answer(&p, t, 1200, 800);
	t += 1200;
	CHECK(!plan(&p, at(t, 128, true, 100), &shrunk));
	CHECK_INT(p.phase, POOL_MEASURE_LO);
	CHECK_INT(p.target, 64);
	/* A quarter of the slack late: given up, 128 again. */
	CHECK(plan(&p, at(t + 300, 100, true, 3800), &shrunk));
	CHECK_INT(p.phase, POOL_STEADY);
	CHECK_INT(p.target, 128);
	CHECK_INT(p.judged, 0);
	CHECK(!plan(&p, at(t + 59000, 128, true, 100), &shrunk));
	CHECK_INT(p.phase, POOL_STEADY);
	CHECK(!plan(&p, at(t + 60400, 128, true, 100), &shrunk));
	CHECK_INT(p.phase, POOL_MEASURE_HI);
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_saturated);
	CHECK_CASE(test_far);
	CHECK_CASE(test_late_judgement_given_up);
	CHECK_DONE();
}
