/* engine_fixture: the fixture of the lock engine's test programs
 * (lock_engine, lock_engine_groups, lock_engine_scale): one engine on the
 * fake clock and the in-memory store, on the real machine or a fake one
 * (host_fake), its on_lost and on_released calls counted; the engine again
 * behind a store_fault; the default lease; a holder; the lease thread's
 * work run by the test; rows written and read as another client would.
 * Header-only: each program has its own engine. Threads: the test's, and
 * the threads a test starts itself. */
#ifndef LOCKFS_TEST_ENGINE_FIXTURE_H
#define LOCKFS_TEST_ENGINE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "host_fake.h"
#include "lock.h"
#include "store_fault.h"
#include "store_mem.h"

static struct clk_fake fclk;
static struct host_fake fhost;
static struct store *st;
static struct observe *obs;
static struct lock_engine *eng;
static struct metrics met;
static int lost_calls;
static int released_calls;

static inline void on_lost(void *arg, struct lock *lk)
{
	(void)arg;
	(void)lk;
	lost_calls++;
}

static inline void on_released(void *arg, const char *key)
{
	(void)arg;
	(void)key;
	released_calls++;
}

/* The engine of cfg on the fake clock and the in-memory store, on the
 * real machine (its process groups, its signals), or on fhost when fake
 * (groups that die on cue, signals recorded); cb may be NULL. */
static inline void setup_cfg(const struct lock_config *cfg,
			     const struct lock_callbacks *cb, bool fake)
{
	clk_fake_init(&fclk, 1790000000000LL);
	host_fake_init(&fhost, &fclk.clk);
	st = store_mem_new();
	obs = observe_new(&fclk.clk, 0);
	metrics_init(&met);
	eng = fake ? lock_engine_new_host(cfg, st, obs, &fhost.host, &met, cb)
		   : lock_engine_new(cfg, st, obs, &fclk.clk, &met, cb);
	CHECK(st && obs && eng);
	lost_calls = released_calls = 0;
}

static inline void setup_on(enum hold_mode hold, bool fake, int lost_signal)
{
	struct lock_config cfg = engine_steps_config("me", "testhost", hold);
	struct lock_callbacks cb = { .on_lost = on_lost,
				     .on_released = on_released };

	cfg.recent_release_ms = 1000;
	cfg.lost_signal = lost_signal;
	setup_cfg(&cfg, &cb, fake);
}

static inline void setup(enum hold_mode hold)
{
	setup_on(hold, false, 0);
}

static inline void teardown(void)
{
	engine_steps_free(eng, obs, st);
	host_fake_fini(&fhost);
}

/* The engine again, on st behind sf (whose hook the caller sets). */
static inline void setup_behind(struct store_fault *sf,
				const struct lock_config *cfg)
{
	struct lock_callbacks cb = { .on_lost = on_lost,
				     .on_released = on_released };

	lock_engine_free(eng);
	store_fault_init(sf, st);
	eng = lock_engine_new(cfg, &sf->base, obs, &fclk.clk, &met, &cb);
	CHECK(eng != NULL);
}

/* The default lease (30 s, renewed every 5 s, trusted for 20 s). */
static inline struct lock_config long_lease(enum hold_mode hold)
{
	struct lock_config cfg = engine_steps_config("me", "testhost", hold);

	cfg.lease_ms = 30000;
	cfg.heartbeat_ms = 5000;
	cfg.safe_period_ms = 20000;
	return cfg;
}

static inline struct lock_holder holder(int64_t pgid)
{
	return engine_steps_holder(getpid(), pgid, "test");
}

/* Runs lease steps that are due now (bounded). */
static inline void run_due(void *arg)
{
	(void)arg;
	engine_steps_due(eng, &fclk.clk);
}

/* Advances the fake clock in 10 ms steps, running the lease thread's work. */
static inline void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_due, NULL);
}

static inline void foreign_row(const char *key, const char *owner,
			       const char *rvn, int64_t lease_ms)
{
	engine_steps_foreign_row(st, key, owner, rvn, lease_ms, 1);
}

static inline void row_rvn(const char *key, char *out)
{
	struct lock_record r;

	record_init(&r);
	CHECK_INT(st->ops->get_lock(st, key, 0, &r), 0);
	strcpy(out, r.rvn);
	record_fini(&r);
}

#endif
