/* lock_backlog: the lease pool when renewals wait for workers
 * (renew_backlog, lease.c). A renewal is skipped only when its lock has
 * less trust left than renewals take on average: after an outage of
 * renewals cut at their heartbeat deadline (the average above a
 * heartbeat), the locks with trust left were judged by that deadline and
 * parked until their safe period ended, so nearly every one was lost when
 * DynamoDB answered again. And a lock past its safe end that the last walk
 * had not seen is lost at once: parked at that end, <= now, it was the
 * heap's top again, forever, with the engine's mutex held. (Found in
 * review, helper 17.) Threads: the test's and the engine's. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "clk.h"
#include "engine_steps.h"
#include "lease.h"
#include "lock.h"
#include "lock_state.h"
#include "log.h"
#include "metrics.h"
#include "store_fault.h"
#include "store_mem.h"

/* Renewals cut at their deadline while outage is set, else answered in
 * 2 ms. */
static volatile int outage;
static int64_t hb_ms;

static int hook(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op != SF_RENEW)
		return 0;
	if (__atomic_load_n(&outage, __ATOMIC_SEQ_CST)) {
		usleep((useconds_t)(hb_ms + 30) *
		       1000); /* cut at its deadline */
		return -ETIMEDOUT;
	}
	usleep(2000);
	return 0;
}

#define N 40

/* 40 locks, 4 workers, heartbeat 200 ms, safe period 3 s: 1.3 s of
 * renewals timing out, then DynamoDB answers: every lock stays held (4 of
 * 40 before). */
static void test_outage_then_recovery(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct lock_holder h = engine_steps_holder(getpid(), getpgrp(), "w");
	struct store_fault sf;
	struct lock_engine *e;
	struct metrics m;
	struct lock *lk[N];
	char key[32];
	int held = 0;

	CHECK(mem && o);
	cfg.lease_ms = 4000;
	cfg.heartbeat_ms = 200;
	cfg.safe_period_ms = 3000;
	cfg.lease_workers = 4;
	hb_ms = cfg.heartbeat_ms;
	metrics_init(&m);
	store_fault_init(&sf, mem);
	sf.before = hook;
	e = lock_engine_new(&cfg, &sf.base, o, &clk_system, &m, NULL);
	CHECK(e);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(lock_acquire(e, key, &h, &lk[i], NULL, NULL), 0);
	}
	CHECK_INT(lease_start(e), 0);
	usleep(400 * 1000);
	__atomic_store_n(&outage, 1, __ATOMIC_SEQ_CST);
	usleep(1300 * 1000);
	__atomic_store_n(&outage, 0, __ATOMIC_SEQ_CST);
	usleep(3500 * 1000);
	for (int i = 0; i < N; i++)
		held += lock_get_state(e, lk[i]) == LOCK_HELD;
	lease_stop(e);
	for (int i = 0; i < N; i++)
		lock_unref(e, lk[i]);
	CHECK_INT(held, N);
	(void)engine_steps_stop(e, o, mem);
}

static struct clk_fake fk;
static struct lock_engine *e2;
static int put_calls;

static int slow_put(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op != SF_PUT || put_calls++)
		return 0;
	clk_fake_advance(&fk, 1000);
	lease_step(e2); /* the scheduler's pass while the write is in flight */
	clk_fake_advance(&fk, 400);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "HANG: take_renewals spins under mu\n";
	write(2, msg, sizeof(msg) - 1);
	_exit(3);
}

/* A lock tracked with little trust left (its PutItem took 1400 ms of a
 * 1500 ms safe period) after the scheduler's last walk of every lock,
 * while renew_backlog is set (workers full): at the next pass past its
 * safe end, take_renewals parks it at last_ok + safe_period, which is
 * <= now, so it is at the top again, forever. */
static void test_skip_past_safe_end_spins(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);
	struct store *mem = store_mem_new();
	struct observe *o;
	struct store_fault sf;
	struct lock *lk;
	int64_t t0;

	clk_fake_init(&fk, 1790000000000LL);
	o = observe_new(&fk.clk, 0);
	store_fault_init(&sf, mem);
	sf.before = slow_put;
	e2 = lock_engine_new(&cfg, &sf.base, o, &fk.clk, NULL, NULL);
	CHECK(e2);
	t0 = clk_mono_ms(&fk.clk);
	lease_step(e2);
	CHECK_INT(engine_steps_excl(e2, "k", &lk), 0);
	/* Tracked after the last walk, its safe end before the next. */
	CHECK(lk->last_ok_mono_ms + cfg.safe_period_ms <
	      e2->next_watch_mono_ms);
	CHECK(clk_mono_ms(&fk.clk) - t0 > 0);
	/* The state the threads leave under load. */
	pthread_mutex_lock(&e2->mu);
	e2->renew_backlog = true;
	e2->beat_ms_avg = 200;
	pthread_mutex_unlock(&e2->mu);
	clk_fake_advance(&fk, 150); /* past its safe end, before the walk */
	signal(SIGALRM, on_alarm);
	alarm(3);
	lease_step(e2);
	alarm(0);
	CHECK_INT(lock_get_state(e2, lk), LOCK_LOST);
	lock_unref(e2, lk);
	(void)engine_steps_stop(e2, o, mem);
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_outage_then_recovery);
	CHECK_CASE(test_skip_past_safe_end_spins);
	CHECK_DONE();
}
