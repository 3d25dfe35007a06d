/* lock_engine: the lock engine on the in-memory store with a fake clock:
 * acquire and conflicts, observation-based takeover, heartbeats and their
 * spread, the safe period, stolen locks, ambiguous writes, release vs
 * heartbeat serialisation, hold modes, fencing tokens, data; trust that
 * ends by the clock alone, a lease path whose one slow request delays no
 * other lock, stopping that tells holders first, lost locks that are
 * not silently replaced under their process group, and, on a fake machine
 * (host_fake), process groups that die on cue and the lost signal. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "host_fake.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "procgrp.h"
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

static void on_lost(void *arg, struct lock *lk)
{
	(void)arg;
	(void)lk;
	lost_calls++;
}

static void on_released(void *arg, const char *key)
{
	(void)arg;
	(void)key;
	released_calls++;
}

/* The engine of cfg on the fake clock and the in-memory store, on the
 * real machine (its process groups, its signals), or on fhost when fake
 * (groups that die on cue, signals recorded); cb may be NULL. */
static void setup_cfg(const struct lock_config *cfg,
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

static void setup_on(enum hold_mode hold, bool fake, int lost_signal)
{
	struct lock_config cfg = engine_steps_config("me", "testhost", hold);
	struct lock_callbacks cb = { on_lost, on_released, NULL };

	cfg.recent_release_ms = 1000;
	cfg.lost_signal = lost_signal;
	setup_cfg(&cfg, &cb, fake);
}

static void setup(enum hold_mode hold)
{
	setup_on(hold, false, 0);
}

static void teardown(void)
{
	lock_engine_free(eng);
	observe_free(obs);
	store_free(st);
	host_fake_fini(&fhost);
}

/* The engine again, on st behind sf (whose hook the caller sets). */
static void setup_behind(struct store_fault *sf, const struct lock_config *cfg)
{
	struct lock_callbacks cb = { on_lost, on_released, NULL };

	lock_engine_free(eng);
	store_fault_init(sf, st);
	eng = lock_engine_new(cfg, &sf->base, obs, &fclk.clk, &met, &cb);
	CHECK(eng != NULL);
}

/* The default lease (30 s, renewed every 5 s, trusted for 20 s). */
static struct lock_config long_lease(enum hold_mode hold)
{
	struct lock_config cfg = engine_steps_config("me", "testhost", hold);

	cfg.lease_ms = 30000;
	cfg.heartbeat_ms = 5000;
	cfg.safe_period_ms = 20000;
	return cfg;
}

static struct lock_holder holder(int64_t pgid)
{
	return engine_steps_holder(getpid(), pgid, "test");
}

/* Runs lease steps that are due now (bounded). */
static void run_due(void *arg)
{
	(void)arg;
	engine_steps_due(eng, &fclk.clk);
}

/* Advances the fake clock in 10 ms steps, running the lease thread's work. */
static void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_due, NULL);
}

static void foreign_row(const char *key, const char *owner, const char *rvn,
			int64_t lease_ms)
{
	engine_steps_foreign_row(st, key, owner, rvn, lease_ms, 1);
}

static void row_rvn(const char *key, char *out)
{
	struct lock_record r;

	record_init(&r);
	CHECK_INT(st->ops->get_lock(st, key, 0, &r), 0);
	strcpy(out, r.rvn);
	record_fini(&r);
}

static void test_acquire_and_conflict(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lk = NULL, *lk2 = NULL;
	struct lock_record cur;
	bool has = false;
	char rvn[RECORD_RVN_MAX];

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	CHECK_INT(store_mem_count(st, SMEM_PUT), 1);
	CHECK_INT(store_mem_total(st),
		  1); /* one conditional write, nothing else */
	row_rvn("a", rvn);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK_INT(metrics_get(&met, MC_ACQUIRES), 1);

	/* Held by this mount: refused without asking the store. */
	record_init(&cur);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk2, &cur, &has), -EEXIST);
	CHECK(has);
	CHECK_STR(cur.owner, "me");
	CHECK_INT(store_mem_count(st, SMEM_PUT), 1);

	/* Held by another owner: refused by the condition, row reported. */
	foreign_row("b", "other", "r1", 2000);
	CHECK_INT(lock_acquire(eng, "b", &h, &lk2, &cur, &has), -EEXIST);
	CHECK(has);
	CHECK_STR(cur.owner, "other");
	CHECK_INT(metrics_get(&met, MC_CONFLICTS), 2);
	record_fini(&cur);

	CHECK_INT(lock_release(eng, lk), 0);
	CHECK_INT(store_mem_lock_count(st), 1); /* only "b" left */
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK(lock_find(eng, "a") == NULL);
	CHECK(lock_recently_released(eng, "a"));
	clk_fake_advance(&fclk, 1001);
	CHECK(!lock_recently_released(eng, "a"));
	lock_unref(eng, lk);
	teardown();
}

static void test_takeover_by_observation(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lk = NULL;

	setup(HOLD_UNLINK);
	foreign_row("k", "dead", "r1", 3000);
	CHECK_INT(lock_acquire(eng, "k", &h, &lk, NULL, NULL), -EEXIST);
	/* Wall-clock fields say nothing: expiry_time is long past. */
	clk_fake_advance(&fclk, 2999);
	CHECK_INT(lock_acquire(eng, "k", &h, &lk, NULL, NULL), -EEXIST);
	/* The holder renews: the clock starts again at our next sighting. */
	foreign_row("k", "dead", "r2", 3000);
	clk_fake_advance(&fclk, 2);
	CHECK_INT(lock_acquire(eng, "k", &h, &lk, NULL, NULL), -EEXIST);
	clk_fake_advance(&fclk, 2999);
	CHECK_INT(lock_acquire(eng, "k", &h, &lk, NULL, NULL), -EEXIST);
	clk_fake_advance(&fclk, 1);
	CHECK_INT(lock_acquire(eng, "k", &h, &lk, NULL, NULL), 0);
	CHECK_INT(metrics_get(&met, MC_TAKEOVERS), 1);
	lock_unref(eng, lk);

	/* An expired observation is still conditioned on its RVN: if the row
	 * changed meanwhile, the takeover fails. */
	foreign_row("j", "dead", "r1", 1000);
	CHECK_INT(lock_acquire(eng, "j", &h, &lk, NULL, NULL), -EEXIST);
	clk_fake_advance(&fclk, 1000);
	foreign_row("j", "alive", "r9", 1000);
	CHECK_INT(lock_acquire(eng, "j", &h, &lk, NULL, NULL), -EEXIST);
	teardown();
}

static void test_heartbeat_and_spread(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lks[10];
	char rvn0[RECORD_RVN_MAX], rvn1[RECORD_RVN_MAX], key[8];
	int i, renews;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lks[0], NULL, NULL), 0);
	row_rvn("a", rvn0);
	advance(499);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 0);
	advance(2);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 1);
	row_rvn("a", rvn1);
	CHECK(strcmp(rvn0, rvn1)); /* every write carries a fresh RVN */
	advance(5000);
	renews = store_mem_count(st, SMEM_RENEW);
	CHECK(renews >= 10 && renews <= 12);
	CHECK_INT(lock_get_state(eng, lks[0]), LOCK_HELD);
	lock_unref(eng, lks[0]);
	teardown();

	/* Ten locks taken at once are renewed at spread-out times. */
	setup(HOLD_UNLINK);
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(lock_acquire(eng, key, &h, &lks[i], NULL, NULL), 0);
	}
	advance(500);
	int64_t last = -1, mingap = 1000000;
	for (i = 0; i < 2000; i++) {
		int before = store_mem_count(st, SMEM_RENEW);

		advance(1);
		if (store_mem_count(st, SMEM_RENEW) > before) {
			int64_t t = clk_mono_ms(&fclk.clk);

			if (last >= 0 && t - last < mingap)
				mingap = t - last;
			last = t;
		}
	}
	renews = store_mem_count(st, SMEM_RENEW);
	/* About 10 locks x 2000 ms / 500 ms, never two in the same instant. */
	CHECK(renews >= 35 && renews <= 50);
	CHECK(mingap >= 40);
	for (i = 0; i < 10; i++) {
		CHECK_INT(lock_get_state(eng, lks[i]), LOCK_HELD);
		lock_unref(eng, lks[i]);
	}
	teardown();
}

static void test_safe_period_and_cleanup(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(1499);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK(metrics_get(&met, MC_HEARTBEATS_FAILED) >= 2);
	advance(1);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(lost_calls, 1);
	CHECK(lock_find(eng, "a") == NULL);
	CHECK_INT(lock_renew_sync(eng, lk), -EIO);
	CHECK_INT(lock_modify_data(eng, lk, "x", 1, 0, -1, 100), -EIO);
	/* DynamoDB comes back: the lock is never taken back, and our stale
	 * row is removed so that others need not wait a lease. */
	store_mem_set_faults(st, &up);
	int renews = store_mem_count(st, SMEM_RENEW);
	advance(3000);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), renews);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(store_mem_lock_count(st), 0);
	CHECK_INT(lost_calls, 1);
	lock_unref(eng, lk);
	teardown();
}

static void test_stolen(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lk;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	foreign_row("a", "thief", "zzz", 2000);
	advance(600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(lost_calls, 1);
	/* Releasing a stolen lock must not delete the thief's row. */
	CHECK_INT(lock_release(eng, lk), 0);
	CHECK_INT(store_mem_lock_count(st), 1);
	lock_unref(eng, lk);

	/* A row deleted under us (allow_break elsewhere) is lost too. */
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	CHECK_INT(store_mem_delete_raw(st, "b"), 0);
	CHECK_INT(lock_renew_sync(eng, lk), -EIO);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	lock_unref(eng, lk);
	teardown();
}

static void test_ambiguous_writes(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults land = { .land_then_fail = 1 };
	struct store_mem_faults land3 = { .land_then_fail = 3 };
	struct lock *lk;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	/* A heartbeat lands but its answer is lost: the next write finds our
	 * own RVN and carries on instead of declaring the lock stolen. */
	store_mem_set_faults(st, &land);
	advance(510);
	CHECK_INT(metrics_get(&met, MC_HEARTBEATS_FAILED), 1);
	advance(500);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK(metrics_get(&met, MC_HEARTBEATS_OK) >= 1);
	/* Several in a row. */
	store_mem_set_faults(st, &land3);
	advance(1200);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	advance(500);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	/* A release whose answer is lost: the delete may have landed, so the
	 * lock is not trusted any more; it is not found as ours either, and
	 * nobody else is kept waiting. */
	store_mem_set_faults(st, &land);
	CHECK_INT(lock_release(eng, lk), -ETIMEDOUT);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK(lock_find(eng, "a") == NULL);
	CHECK_INT(store_mem_lock_count(st), 0);
	CHECK_INT(lock_release(eng, lk), 0);

	/* The same while DynamoDB is away: the row is removed later. */
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	lock_unref(eng, lk);
	store_mem_set_faults(st, &up);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	CHECK_INT(lock_release(eng, lk), -ETIMEDOUT);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(store_mem_lock_count(st), 1);
	store_mem_set_faults(st, &up);
	advance(600);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, lk);

	/* An acquire whose answer is lost: read back, and it is ours. */
	store_mem_set_faults(st, &land);
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	lock_unref(eng, lk);
	teardown();
}

struct race {
	struct lock *lk;
	int rc;
};

static void *heartbeat_thread(void *arg)
{
	struct race *r = arg;

	r->rc = lock_renew_sync(eng, r->lk);
	return NULL;
}

/* The renewal is in flight (told to the test) for 200 ms. */
static atomic_int renew_started;

static int slow_renew(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op == SF_RENEW) {
		atomic_store(&renew_started, 1);
		usleep(200 * 1000);
	}
	return 0;
}

static void test_release_waits_for_heartbeat(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_fault sf;
	struct race r;
	pthread_t t;
	int i, j;

	/* With real threads: a heartbeat is in flight (slow store) when the
	 * release comes; the release must wait and delete the RVN the
	 * heartbeat wrote, and nothing may re-create the row afterwards.
	 * The release is sent once the renewal has reached the store (not
	 * after a guessed time: a loaded machine may start the thread
	 * late). */
	for (i = 0; i < 5; i++) {
		struct lock_config cfg;

		setup(HOLD_UNLINK);
		cfg = *lock_engine_config(eng);
		cfg.owner = "me";
		cfg.host = "testhost";
		setup_behind(&sf, &cfg);
		CHECK_INT(lock_acquire(eng, "a", &h, &r.lk, NULL, NULL), 0);
		atomic_store(&renew_started, 0);
		sf.before = slow_renew;
		CHECK_INT(pthread_create(&t, NULL, heartbeat_thread, &r), 0);
		for (j = 0; j < 5000 && !atomic_load(&renew_started); j++)
			usleep(1000);
		CHECK_INT(atomic_load(&renew_started), 1);
		CHECK_INT(lock_release(eng, r.lk), 0);
		pthread_join(t, NULL);
		CHECK_INT(r.rc, 0);
		sf.before = NULL;
		CHECK_INT(store_mem_lock_count(st), 0);
		advance(3000);
		CHECK_INT(store_mem_lock_count(st), 0);
		CHECK_INT(store_mem_count(st, SMEM_RENEW), 1);
		lock_unref(eng, r.lk);
		teardown();
	}
}

/* A child that leads its own process group and waits to be killed; it
 * leads the group by the time this returns (bounded: 200 ms). */
static pid_t group_leader_child(void)
{
	pid_t child = fork();
	int i;

	if (child == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	for (i = 0; i < 200 && getpgid(child) != child; i++)
		usleep(1000);
	return child;
}

static pid_t dead_pgrp(void)
{
	pid_t child = fork();

	if (child == 0) {
		setpgid(0, 0);
		_exit(0);
	}
	setpgid(child, child); /* may fail if it already exited; fine */
	waitpid(child, NULL, 0);
	return child;
}

/* key, acquired by h and closed, is still held after a second of lease
 * steps. */
static void check_held_after_close(const char *key, struct lock_holder *h)
{
	struct lock *lk;

	CHECK_INT(lock_acquire(eng, key, h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(1000);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	lock_unref(eng, lk);
}

static void test_hold_modes(void)
{
	struct lock_holder h;
	struct lock *lk;

	/* fd: released the moment the acquiring open file closes. */
	setup(HOLD_FD);
	h = holder(getpgrp());
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK_INT(store_mem_lock_count(st), 0);
	CHECK_INT(released_calls, 1);
	CHECK_INT(metrics_get(&met, MC_AUTO_RELEASES), 1);
	lock_unref(eng, lk);
	teardown();

	/* pgrp: kept while the group lives, released once it is gone. */
	setup(HOLD_PGRP);
	h = holder(getpgrp());
	check_held_after_close("a", &h);
	h = holder(dead_pgrp());
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	advance(1000); /* open: held even though the group is gone */
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	lock_holder_closed(eng, lk);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	lock_unref(eng, lk);

	/* The group dies after the close: found by the lease thread. */
	pid_t child = fork();

	if (child == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(child, child);
	h = holder(child);
	CHECK_INT(lock_acquire(eng, "c", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(300);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	advance(150);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	lock_unref(eng, lk);
	teardown();

	/* unlink: never released automatically. */
	setup(HOLD_UNLINK);
	h = holder(dead_pgrp());
	check_held_after_close("a", &h);
	teardown();
}

/* On a fake machine (no fork, no /proc): a pgrp-mode lock is kept while
 * its holder's group lives and released on the pass after the group dies;
 * a lost lock's holder group is signalled through the host, once, and a
 * group the host cannot prove is the holder's is not. */
static void test_fake_host_groups(void)
{
	struct lock_holder h = holder(4242);
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk;

	setup_on(HOLD_PGRP, true, SIGUSR1);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(300);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK(host_fake_alive_checks(&fhost) > 0);
	host_fake_kill(&fhost, 4242);
	advance(150);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK_INT(released_calls, 1);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, lk);

	/* A loss by the safe period: the holder's group hears of it. */
	h = holder(4343);
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(1600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(host_fake_signals(&fhost), 1);
	CHECK_INT(fhost.last_pgid, 4343);
	CHECK_INT(fhost.last_sig, SIGUSR1);
	store_mem_set_faults(st, &up);
	advance(600);
	CHECK_INT(host_fake_signals(&fhost), 1);
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);

	/* Not provably the holder's group any more: no signal. */
	fhost.not_signallable = true;
	h = holder(4444);
	CHECK_INT(lock_acquire(eng, "c", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(1600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(host_fake_signals(&fhost), 1);
	store_mem_set_faults(st, &up);
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);
	teardown();
}

static void test_fence_and_data(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock_record r;
	uint64_t f1 = 0, f2 = 0, again = 0;
	struct lock *lk;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	CHECK_INT(lock_fence(eng, lk, &f1), 0);
	CHECK_INT(lock_fence(eng, lk, &again), 0);
	CHECK_INT(again, f1);
	CHECK_INT(store_mem_count(st, SMEM_FENCE), 1);
	record_init(&r);
	CHECK_INT(st->ops->get_lock(st, "a", 0, &r), 0);
	CHECK_INT(r.fence, f1); /* other mounts see it */
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	CHECK_INT(lock_fence(eng, lk, &f2), 0);
	CHECK(f2 > f1);

	CHECK_INT(lock_modify_data(eng, lk, "hello", 5, 0, -1, 16), 0);
	CHECK_INT(lock_modify_data(eng, lk, "J", 1, 0, -1, 16), 0);
	CHECK_INT(lock_modify_data(eng, lk, "!", 1, 5, -1, 16), 0);
	CHECK_INT(st->ops->get_lock(st, "a", 0, &r), 0);
	CHECK(r.has_data && r.data_len == 6 && !memcmp(r.data, "Jello!", 6));
	CHECK_INT(lock_modify_data(eng, lk, NULL, 0, 0, 2, 16), 0);
	CHECK_INT(st->ops->get_lock(st, "a", 0, &r), 0);
	CHECK(r.data_len == 2 && !memcmp(r.data, "Je", 2));
	CHECK_INT(lock_modify_data(eng, lk, "x", 1, 16, -1, 16), -EFBIG);
	CHECK_INT(lock_modify_data(eng, lk, NULL, 0, 0, 17, 16), -EFBIG);
	record_fini(&r);
	lock_unref(eng, lk);
	teardown();
}

static void test_release_all(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lk;
	char key[16];
	int i;

	setup(HOLD_UNLINK);
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(lock_acquire(eng, key, &h, &lk, NULL, NULL), 0);
		lock_unref(eng, lk);
	}
	CHECK_INT(lock_count_held(eng), 100);
	CHECK_INT(lock_release_all(eng), 0);
	CHECK_INT(store_mem_lock_count(st), 0);
	CHECK_INT(lock_count_held(eng), 0);
	teardown();
}

/* A lock's trust ends by the clock, whatever the lease thread does: with
 * no lease step at all past the safe period, the engine reports it lost,
 * hands out no fence and accepts no write. */
static void test_trust_ends_by_clock(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock *lk;
	uint64_t fence;
	int renews;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "t", &h, &lk, NULL, NULL), 0);
	CHECK_INT(lock_fence(eng, lk, &fence), 0);
	renews = store_mem_count(st, SMEM_RENEW);
	clk_fake_advance(&fclk, 1499);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	clk_fake_advance(&fclk, 1); /* 1500 ms: the safe period */
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(lock_fence(eng, lk, &fence), -EIO);
	CHECK_INT(lock_modify_data(eng, lk, "x", 1, 0, -1, 100), -EIO);
	CHECK_INT(lock_renew_sync(eng, lk), -EIO);
	/* No write was sent for a lock past its safe period. */
	CHECK_INT(store_mem_count(st, SMEM_RENEW), renews);
	CHECK_INT(lost_calls, 1);
	CHECK(lock_find(eng, "t") == NULL);
	lock_unref(eng, lk);
	teardown();
}

/* The lease path with threads and the real clock: an automatic release
 * that takes 1.5 s (three safe periods) delays no renewal of another lock. */
static int slow_delete(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	if (op == SF_DELETE && !strcmp(key, "slow"))
		usleep(1500 * 1000);
	return 0;
}

static void test_lease_path_parallel(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_PGRP);
	struct store_fault sf;
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct lock_engine *e;
	struct lock *slow, *fast;
	struct lock_holder h;
	int renews, status;
	pid_t child;

	CHECK(mem && o);
	cfg.lease_ms = 1000;
	cfg.heartbeat_ms = 100;
	cfg.safe_period_ms = 500;
	cfg.pgrp_poll_ms = 20;
	store_fault_init(&sf, mem);
	sf.before = slow_delete;
	e = lock_engine_new(&cfg, &sf.base, o, &clk_system, NULL, NULL);
	CHECK(e);
	child = group_leader_child();
	/* Started first: starting 65 threads can take longer than the safe
	 * period under ThreadSanitizer on a loaded machine. */
	CHECK_INT(lease_start(e), 0);
	h = holder(child);
	CHECK_INT(lock_acquire(e, "slow", &h, &slow, NULL, NULL), 0);
	lock_holder_closed(e, slow); /* its group still lives */
	h = holder(getpgrp());
	CHECK_INT(lock_acquire(e, "fast", &h, &fast, NULL, NULL), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* The group is gone: slow's release starts and takes 1.5 s. */
	usleep(200 * 1000);
	renews = store_mem_count(mem, SMEM_RENEW);
	usleep(1000 * 1000);
	CHECK(store_mem_count(mem, SMEM_RENEW) >= renews + 5);
	CHECK_INT(lock_get_state(e, fast), LOCK_HELD);
	CHECK_INT(lock_renew_sync(e, fast), 0);
	lease_stop(e);
	CHECK_INT(lock_get_state(e, slow), LOCK_RELEASED);
	lock_unref(e, slow);
	lock_unref(e, fast);
	CHECK_INT(lock_release_all(e), 0);
	lock_engine_free(e);
	observe_free(o);
	store_free(mem);
}

/* hold=pgrp: the holder group's end is learnt from the exit itself, not
 * from the poll: with the poll a minute apart, the lock is released
 * within a fraction of a second of the holder's death. */
static void test_exit_notification(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct lock_engine *e;
	struct lock *lk;
	struct lock_holder h;
	int64_t t0, took;
	int status, i;
	pid_t child;

	CHECK(mem && o);
	cfg.pgrp_poll_ms = 60000;
	e = lock_engine_new(&cfg, mem, o, &clk_system, NULL, NULL);
	CHECK(e);
	child = group_leader_child();
	CHECK_INT(lease_start(e), 0);
	usleep(50 * 1000); /* the first group check is behind us */
	h = holder(child);
	h.pid = child;
	CHECK_INT(lock_acquire(e, "ex", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(e, lk); /* held by its group from now on */
	usleep(20 * 1000);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	t0 = clk_mono_ms(&clk_system);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	for (i = 0; i < 2000 && lock_get_state(e, lk) != LOCK_RELEASED; i++)
		usleep(1000);
	took = clk_mono_ms(&clk_system) - t0;
	CHECK_INT(lock_get_state(e, lk), LOCK_RELEASED);
	CHECK(took < 1000);
	printf("released %lld ms after its holder group died (poll: 60 s)\n",
	       (long long)took);
	lease_stop(e);
	lock_unref(e, lk);
	CHECK_INT(lock_release_all(e), 0);
	lock_engine_free(e);
	observe_free(o);
	store_free(mem);
}

/* Stopping tells every holder (on_lost, lost_signal) before any of its
 * rows is deleted. */
static int told_before_delete, deleted_untold;

static int check_told(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op == SF_DELETE) {
		if (lost_calls > 0)
			told_before_delete++;
		else
			deleted_untold++;
	}
	return 0;
}

static void test_stop_tells_holders_first(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);
	struct store_fault sf;
	struct lock *lk;

	setup(HOLD_UNLINK);
	setup_behind(&sf, &cfg);
	sf.before = check_told;
	told_before_delete = deleted_untold = 0;
	CHECK_INT(lock_acquire(eng, "s1", &h, &lk, NULL, NULL), 0);
	lock_unref(eng, lk);
	CHECK_INT(lock_acquire(eng, "s2", &h, &lk, NULL, NULL), 0);
	CHECK_INT(lock_release_all(eng), 0);
	CHECK_INT(lost_calls, 2);
	CHECK_INT(told_before_delete, 2);
	CHECK_INT(deleted_untold, 0);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, lk);
	teardown();
}

/* hold=pgrp: a lock its process group lost is not replaced under it by a
 * new acquire of that group; unlinking it (lock_release) lets go of it. */
static void test_lost_not_replaced(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk, *again, *lost;
	uint64_t start;

	/* Lead a group of our own: the group we were started in may have
	 * lost its leader (a shell that ran us in the background and
	 * exited), and a group without its leader has no start time. */
	CHECK_INT(setpgid(0, 0), 0);
	h = holder(getpgrp());
	start = procgrp_start_time(getpgrp(), NULL);
	h.pgid_start = start;
	setup(HOLD_PGRP);
	CHECK_INT(lock_acquire(eng, "j", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk); /* no fd: held by the group */
	lock_unref(eng, lk);
	store_mem_set_faults(st, &down);
	advance(1600);
	store_mem_set_faults(st, &up);
	advance(600); /* its stale row is cleaned up */
	CHECK_INT(store_mem_lock_count(st), 0);
	lost = lock_find_lost(eng, "j", getpgrp(), start);
	CHECK(lost != NULL);
	CHECK(lock_find_lost(eng, "j", getpgrp() + 100000, 0) == NULL);
	CHECK_INT(lock_acquire(eng, "j", &h, &again, NULL, NULL), -EIO);
	/* A newcomer group that reused the number (its leader started at
	 * another time) is not the holder that lost it. */
	CHECK(start > 0);
	CHECK(lock_find_lost(eng, "j", getpgrp(), start + 1) == NULL);
	/* Another group may take it. */
	{
		struct lock_holder other = holder(getpgrp() + 100000);

		CHECK_INT(lock_acquire(eng, "j", &other, &again, NULL, NULL),
			  0);
		CHECK_INT(lock_release(eng, again), 0);
		lock_unref(eng, again);
	}
	CHECK_INT(lock_release(eng, lost), 0); /* the holder's rm */
	lock_unref(eng, lost);
	CHECK(lock_find_lost(eng, "j", getpgrp(), start) == NULL);
	CHECK_INT(lock_acquire(eng, "j", &h, &again, NULL, NULL), 0);
	CHECK_INT(lock_release(eng, again), 0);
	lock_unref(eng, again);
	teardown();
}

/* Ten thousand locks on one engine (the scale issue's figure), on the fake
 * clock with the default period: every one is renewed in every period and
 * none is lost, the renewals are spread evenly (no 100 ms holds more than
 * 1.5x its share), an automatic release among them is made at once, and
 * the scheduler's passes cost what is due, not what is held: the whole run
 * takes well under the CPU that a walk of every lock per pass takes. */
#define MANY 10000
#if defined(__SANITIZE_THREAD__)
#define SLOWDOWN 10
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLOWDOWN 10
#endif
#endif
#ifndef SLOWDOWN
#define SLOWDOWN 1
#endif
/* hold=pgrp: 10,000 locks of one process group cost one check of the
 * group per pass (a check reads /proc), not one per lock. */
static void test_many_pgrp_locks(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct lock_holder h;
	static struct lock *lks[MANY];
	struct timespec c0, c1;
	char key[16];
	double cpu_s;
	int i;

	setpgid(0, 0); /* lead a group (see test_lost_not_replaced) */
	h = holder(getpgrp());
	h.pgid_start = procgrp_start_time(getpgrp(), NULL);
	setup_cfg(&cfg, NULL, false);
	for (i = 0; i < MANY; i++) {
		snprintf(key, sizeof(key), "g%d", i);
		CHECK_INT(lock_acquire(eng, key, &h, &lks[i], NULL, NULL), 0);
		lock_holder_closed(eng, lks[i]); /* held by the group now */
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	advance(1000); /* ten checks of the groups */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	for (i = 0; i < MANY; i++)
		CHECK_INT(lock_get_state(eng, lks[i]), LOCK_HELD);
	cpu_s = (double)(c1.tv_sec - c0.tv_sec) +
		(double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	printf("many pgrp locks: 10 group checks of %d locks, %.3f s of CPU\n",
	       MANY, cpu_s);
	/* 0.005 s here in a sanitizer build; a check per lock took 1.7 s. */
	CHECK(cpu_s < 0.1 * SLOWDOWN);
	for (i = 0; i < MANY; i++)
		lock_unref(eng, lks[i]);
	CHECK_INT(lock_release_all(eng), 0);
	teardown();
}

static void test_many_locks(void)
{
	struct lock_config cfg = long_lease(HOLD_UNLINK);
	struct lock_holder h = holder(getpgrp());
	static struct lock *lks[MANY];
	int buckets[100] = { 0 }, i, renews, max = 0;
	struct timespec c0, c1;
	char key[16];
	double cpu_s;

	setup_cfg(&cfg, NULL, false);
	for (i = 0; i < MANY; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(lock_acquire(eng, key, &h, &lks[i], NULL, NULL), 0);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	advance(5000); /* the first period: every lock comes due */
	renews = store_mem_count(st, SMEM_RENEW);
	for (i = 0; i < 100; i++) {
		int before = store_mem_count(st, SMEM_RENEW);

		advance(100);
		buckets[i] = store_mem_count(st, SMEM_RENEW) - before;
		if (buckets[i] > max)
			max = buckets[i];
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	renews = store_mem_count(st, SMEM_RENEW) - renews;
	/* 10 s at 2,000 a second. */
	CHECK(renews >= 19000 && renews <= 21000);
	CHECK(max * 100 <= renews * 3 / 2);
	for (i = 0; i < MANY; i++)
		CHECK_INT(lock_get_state(eng, lks[i]), LOCK_HELD);
	cpu_s = (double)(c1.tv_sec - c0.tv_sec) +
		(double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	printf("many locks: %d renewals in 15 s of fake time, busiest 100 ms "
	       "%d (mean %d), %.2f s of CPU\n",
	       renews, max, renews / 100, cpu_s);
	/* 0.3 s here in a sanitizer build; with a walk of every lock per
	 * pass, 17 s. */
	CHECK(cpu_s < 3.0 * SLOWDOWN);
	/* One holder lets go: its release is the next thing done. */
	lock_holder_closed(eng, lks[77]);
	lock_set_hold(eng, lks[77], HOLD_FD);
	lock_holder_closed(eng, lks[77]);
	advance(10);
	CHECK_INT(lock_get_state(eng, lks[77]), LOCK_RELEASED);
	for (i = 0; i < MANY; i++)
		lock_unref(eng, lks[i]);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_acquire_and_conflict);
	CHECK_CASE(test_takeover_by_observation);
	CHECK_CASE(test_heartbeat_and_spread);
	CHECK_CASE(test_safe_period_and_cleanup);
	CHECK_CASE(test_stolen);
	CHECK_CASE(test_ambiguous_writes);
	CHECK_CASE(test_release_waits_for_heartbeat);
	CHECK_CASE(test_hold_modes);
	CHECK_CASE(test_fake_host_groups);
	CHECK_CASE(test_fence_and_data);
	CHECK_CASE(test_release_all);
	CHECK_CASE(test_trust_ends_by_clock);
	CHECK_CASE(test_lease_path_parallel);
	CHECK_CASE(test_exit_notification);
	CHECK_CASE(test_stop_tells_holders_first);
	CHECK_CASE(test_lost_not_replaced);
	CHECK_CASE(test_many_locks);
	CHECK_CASE(test_many_pgrp_locks);
	CHECK_DONE();
}
