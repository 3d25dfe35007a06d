/* lock_wake: the lease scheduler is woken only when it has something to
 * do. Lock cycles (acquire, close, release) from concurrent callers on a
 * store with latency leave it asleep (its passes, the metric
 * lockfs_lease_passes_total, stay a small fraction of the cycles), and a
 * lock due before the scheduler means to look still wakes it (a short
 * heartbeat is renewed on time while the scheduler slept for a second).
 * In session mode the session thread sleeps through the cycles too, and
 * still beats on time. Real clock, real threads, the in-memory store
 * behind store_fault. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "clk.h"
#include "engine_steps.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "procgrp.h"
#include "store_fault.h"
#include "store_mem.h"

#define CALLERS 4
#define CYCLES	100

/* About a loopback round trip on every request. */
static int latency(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)op;
	(void)key;
	usleep(500);
	return 0;
}

struct caller {
	struct lock_engine *e;
	int idx;
	int failures;
};

static void *cycles(void *arg)
{
	struct caller *c = arg;
	struct lock_holder h = engine_steps_holder(getpid(), getpgrp(), "wake");
	char key[32];

	h.pgid_start = procgrp_start_time(getpgrp(), NULL);
	snprintf(key, sizeof(key), "k%d", c->idx);
	for (int i = 0; i < CYCLES; i++) {
		struct lock *lk;

		if (lock_acquire(c->e, key, &h, &lk, NULL, NULL)) {
			c->failures++;
			continue;
		}
		lock_holder_closed(c->e, lk); /* held by our group now */
		if (lock_release(c->e, lk) ||
		    lock_get_state(c->e, lk) != LOCK_RELEASED)
			c->failures++;
		lock_unref(c->e, lk);
	}
	return NULL;
}

/* An engine on mem behind sf, every request slowed (latency), counting
 * into m (initialised here). */
static struct lock_engine *slow_engine(const struct lock_config *cfg,
				       struct store *mem,
				       struct store_fault *sf,
				       struct observe *o, struct metrics *m)
{
	metrics_init(m);
	store_fault_init(sf, mem);
	sf->before = latency;
	return lock_engine_new(cfg, &sf->base, o, &clk_system, m, NULL);
}

/* CALLERS threads of CYCLES cycles each on e, joined; their failures. */
static int run_callers(struct lock_engine *e)
{
	struct caller c[CALLERS];
	pthread_t t[CALLERS];
	int failures = 0;

	for (int i = 0; i < CALLERS; i++) {
		c[i] = (struct caller){ e, i, 0 };
		CHECK_INT(pthread_create(&t[i], NULL, cycles, &c[i]), 0);
	}
	for (int i = 0; i < CALLERS; i++) {
		pthread_join(t[i], NULL);
		failures += c[i].failures;
	}
	return failures;
}

static void test_cycles_leave_it_asleep(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_PGRP);
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct store_fault sf;
	struct lock_engine *e;
	struct metrics m;
	uint64_t p0, passes;
	int64_t t0, ms;
	int failures;

	CHECK(mem && o);
	cfg.lease_ms = 30000;
	cfg.heartbeat_ms = 5000;
	cfg.safe_period_ms = 20000;
	cfg.pgrp_poll_ms = 100;
	e = slow_engine(&cfg, mem, &sf, o, &m);
	CHECK(e);
	CHECK_INT(lease_start(e), 0);
	usleep(50 * 1000); /* its first pass is behind us */
	p0 = metrics_get(&m, MC_LEASE_PASSES);
	t0 = clk_mono_ms(&clk_system);
	failures = run_callers(e);
	ms = clk_mono_ms(&clk_system) - t0;
	passes = metrics_get(&m, MC_LEASE_PASSES) - p0;
	printf("%d cycles in %lld ms: %llu scheduler passes\n",
	       CALLERS * CYCLES, (long long)ms, (unsigned long long)passes);
	CHECK_INT(failures, 0);
	CHECK_INT(metrics_get(&m, MC_ACQUIRES), CALLERS * CYCLES);
	CHECK_INT(store_mem_lock_count(mem), 0);
	/* Woken per acquire, close and release, it made about a pass a
	 * cycle (360 for these 400 here, kicks that came while it was busy
	 * making one); now what is due: the group checks every pgrp_poll_ms
	 * while a closed lock waits on its group, and a pass when a close
	 * finds no group watched (5 to 44 here). */
	CHECK(passes <= (uint64_t)(CALLERS * CYCLES / 4 + ms / 20));
	lease_stop(e);
	CHECK_INT(engine_steps_stop(e, o, mem), 0);
}

/* Session mode (-o session): the session thread, too, sleeps through
 * the cycles. It waited on the engine's cv, which every write's end
 * broadcasts, so it made about two passes a cycle (an acquire and a
 * release); it now has a condition variable of its own and wakes for its
 * beats only. Its beats still come on time: every heartbeat period (here
 * 50 ms) the session item is renewed, and the locks stay held by it. */
static void test_session_sleeps_through_cycles(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_PGRP);
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct store_fault sf;
	struct lock_engine *e;
	struct metrics m;
	uint64_t p0, passes, beats;
	int64_t t0, ms;
	int failures;

	CHECK(mem && o);
	cfg.session = true;
	cfg.lease_ms = 1000;
	cfg.heartbeat_ms = 50;
	cfg.safe_period_ms = 600;
	cfg.pgrp_poll_ms = 100;
	e = slow_engine(&cfg, mem, &sf, o, &m);
	CHECK(e);
	CHECK_INT(lock_session_start(e), 0);
	CHECK_INT(lease_start(e), 0);
	usleep(50 * 1000);
	p0 = metrics_get(&m, MC_SESSION_PASSES);
	beats = metrics_get(&m, MC_HEARTBEATS_OK);
	t0 = clk_mono_ms(&clk_system);
	failures = run_callers(e);
	ms = clk_mono_ms(&clk_system) - t0;
	passes = metrics_get(&m, MC_SESSION_PASSES) - p0;
	beats = metrics_get(&m, MC_HEARTBEATS_OK) - beats;
	printf("%d cycles in %lld ms: %llu session passes, %llu beats\n",
	       CALLERS * CYCLES, (long long)ms, (unsigned long long)passes,
	       (unsigned long long)beats);
	CHECK_INT(failures, 0);
	CHECK_INT(metrics_get(&m, MC_ACQUIRES), CALLERS * CYCLES);
	CHECK_INT(metrics_get(&m, MC_LOST), 0);
	/* A pass per beat (and one after it), and a few more. */
	CHECK(passes <= (uint64_t)(2 * (ms / cfg.heartbeat_ms) + 10));
	/* The beats kept coming: one per heartbeat period, give or take. */
	CHECK(beats + 2 >= (uint64_t)(ms / cfg.heartbeat_ms));
	lease_stop(e);
	CHECK_INT(lock_release_all(e), 0);
	lock_session_end(e);
	engine_steps_free(e, o, mem);
}

/* A pass of the scheduler queues the renewals whose slots came (a few:
 * 400 locks renewed every 500 ms come 4 to a 5 ms pass) and wakes one idle
 * worker for each. A broadcast woke all 64 for them, and all but a few
 * found the queue empty and slept again (lockfs_lease_idle_wakeups_total):
 * a context switch each, for nothing. */
static void test_one_worker_woken_a_job(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);
	struct lock_holder h = engine_steps_holder(getpid(), getpgrp(), "w");
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	static struct lock *lks[400];
	struct store_fault sf;
	struct lock_engine *e;
	struct metrics m;
	uint64_t r0, i0, renews, idle;
	char key[16];

	CHECK(mem && o);
	cfg.lease_ms = 3000;
	cfg.heartbeat_ms = 500;
	cfg.safe_period_ms = 2000;
	cfg.lease_workers = 64;
	e = slow_engine(&cfg, mem, &sf, o, &m);
	CHECK(e);
	CHECK_INT(lease_start(e), 0);
	for (int i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		CHECK_INT(lock_acquire(e, key, &h, &lks[i], NULL, NULL), 0);
	}
	usleep(600 * 1000); /* a period: the renewals are spread */
	r0 = metrics_get(&m, MC_HEARTBEATS_OK);
	i0 = metrics_get(&m, MC_LEASE_IDLE_WAKES);
	usleep(1000 * 1000);
	renews = metrics_get(&m, MC_HEARTBEATS_OK) - r0;
	idle = metrics_get(&m, MC_LEASE_IDLE_WAKES) - i0;
	printf("# 400 locks, 64 workers: %llu renewals in 1 s, %llu workers "
	       "woken for nothing\n",
	       (unsigned long long)renews, (unsigned long long)idle);
	CHECK(renews >= 600);
	CHECK_INT(metrics_get(&m, MC_LOST), 0);
	CHECK(idle <= renews / 4);
	for (int i = 0; i < 400; i++)
		lock_unref(e, lks[i]);
	lease_stop(e);
	CHECK_INT(lock_release_all(e), 0);
	engine_steps_free(e, o, mem);
}

/* An idle scheduler sleeps a second; a lock whose first renewal is due
 * sooner (100 ms heartbeat) wakes it, and is renewed on time. */
static void test_due_soon_wakes_it(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct lock_holder h = engine_steps_holder(getpid(), getpgrp(), "w");
	struct lock_engine *e;
	struct lock *lk;
	int renews;

	CHECK(mem && o);
	cfg.lease_ms = 1000;
	cfg.heartbeat_ms = 100;
	cfg.safe_period_ms = 500;
	e = lock_engine_new(&cfg, mem, o, &clk_system, NULL, NULL);
	CHECK(e);
	CHECK_INT(lease_start(e), 0);
	usleep(100 * 1000); /* asleep now, for a second: nothing is held */
	CHECK_INT(lock_acquire(e, "soon", &h, &lk, NULL, NULL), 0);
	usleep(450 * 1000);
	renews = store_mem_count(mem, SMEM_RENEW);
	printf("%d renewals in 450 ms at a 100 ms heartbeat\n", renews);
	CHECK(renews >= 2);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	lease_stop(e);
	lock_unref(e, lk);
	CHECK_INT(engine_steps_stop(e, o, mem), 0);
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_cycles_leave_it_asleep);
	CHECK_CASE(test_due_soon_wakes_it);
	CHECK_CASE(test_one_worker_woken_a_job);
	CHECK_CASE(test_session_sleeps_through_cycles);
	CHECK_DONE();
}
