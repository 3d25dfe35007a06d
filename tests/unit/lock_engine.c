/* lock_engine: the lock engine on the in-memory store with a fake clock:
 * acquire and conflicts, observation-based takeover, heartbeats and their
 * spread, the safe period, stolen locks, ambiguous writes, release vs
 * heartbeat serialisation, a release overtaken by a newer acquire of its
 * key, fencing tokens, data; trust that ends by the clock alone, and
 * stopping that tells holders first. Hold modes and process groups are in
 * lock_engine_groups, ten thousand locks in lock_engine_scale; the fixture
 * they share is support/engine_fixture.h. Threads: the test's; two cases
 * run an acquire or a heartbeat on a thread of their own. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine_fixture.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

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
	/* Trusted for the safe period from its acquire (LOCKFS_IOC_TRUST_MS
	 * answers this), and that end moves on with each heartbeat only. */
	CHECK_INT(lock_trusted_ms(eng, lk), 1500);
	store_mem_set_faults(st, &down);
	advance(1000);
	CHECK_INT(lock_trusted_ms(eng, lk), 500);
	advance(499);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK_INT(lock_trusted_ms(eng, lk), 1);
	CHECK(metrics_get(&met, MC_HEARTBEATS_FAILED) >= 2);
	advance(1);
	CHECK_INT(lock_trusted_ms(eng, lk), 0);
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

/* A heartbeat that fails is tried again after a quarter of a heartbeat,
 * then twice as long each time up to a heartbeat, so a store that keeps
 * refusing is not asked ever faster; but never later than half the trust
 * left (down to that quarter), so the tries close in on the end of the
 * safe period; a success starts the count again. Heartbeat 500 ms, safe
 * period 1500 ms from the acquire at 0: tries at 500, 625 (+125), 875
 * (+250), 1187 (+500 would pass half of the 625 ms left: +312), 1343
 * (+156), 1468 (+125), then lost at 1500. */
static void test_failed_heartbeat_backs_off(void)
{
	static const int64_t tries[] = { 500, 625, 875, 1187, 1343, 1468 };
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk;
	int64_t t = 0;
	size_t i;

	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		advance(tries[i] - 1 - t);
		CHECK_INT(store_mem_count(st, SMEM_RENEW), (int)i);
		advance(1);
		CHECK_INT(store_mem_count(st, SMEM_RENEW), (int)i + 1);
		t = tries[i];
	}
	advance(1499 - t);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 6);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	advance(1);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	lock_unref(eng, lk);
	teardown();

	/* The store answers again before the end: the try at 1187 renews,
	 * the next heartbeat is due at 1687, and when that fails its retry
	 * comes a quarter of a heartbeat later again. */
	setup(HOLD_UNLINK);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(500);
	advance(125);
	advance(250);
	advance(311);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 3);
	store_mem_set_faults(st, &up);
	advance(1);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 4);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	advance(499);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 4);
	store_mem_set_faults(st, &down);
	advance(1);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 5);
	store_mem_set_faults(st, &up);
	advance(124);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 5);
	advance(1);
	CHECK_INT(store_mem_count(st, SMEM_RENEW), 6);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
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

/* A data write or an explicit renewal whose answer is lost (it landed) or
 * unreadable (it did not) is sent again within its deadline, so that its
 * caller is told what happened, not EIO; the lock stays held and its
 * heartbeats carry on. */
static void test_unanswered_write_settled(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults land = { .land_then_fail = 1 };
	struct store_mem_faults garbled = { .fail_next = 1,
					    .fail_errno = -EPROTO };
	struct lock_record r;
	struct lock *lk;
	int renews;

	setup(HOLD_UNLINK);
	record_init(&r);
	CHECK_INT(lock_acquire(eng, "d", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &land);
	CHECK_INT(lock_modify_data(eng, lk, "hello", 5, 0, -1, 16), 0);
	CHECK_INT(st->ops->get_lock(st, "d", 0, &r), 0);
	CHECK(r.has_data && r.data_len == 5 && !memcmp(r.data, "hello", 5));
	store_mem_set_faults(st, &garbled);
	CHECK_INT(lock_modify_data(eng, lk, "J", 1, 0, -1, 16), 0);
	CHECK_INT(st->ops->get_lock(st, "d", 0, &r), 0);
	CHECK(r.has_data && r.data_len == 5 && !memcmp(r.data, "Jello", 5));
	store_mem_set_faults(st, &land);
	CHECK_INT(lock_renew_sync(eng, lk), 0);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	renews = store_mem_count(st, SMEM_RENEW);
	advance(1500); /* past the safe period: renewed all along */
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK(store_mem_count(st, SMEM_RENEW) > renews);
	CHECK_INT(st->ops->get_lock(st, "d", 0, &r), 0);
	CHECK(r.data_len == 5 && !memcmp(r.data, "Jello", 5));
	record_fini(&r);
	CHECK_INT(lock_release(eng, lk), 0);
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

/* The overtaken release: one acquire of "k" has passed the engine's own
 * check (no lock of ours for it) and waits before its write; meanwhile
 * another acquire of ours takes "k", and its release's delete lands; the
 * first write lands then, and is answered before that delete is. */
struct overtake {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool first_waiting; /* the first put of "k" reached the hook */
	bool first_may_go;  /* it is let through */
	bool first_done;    /* its acquire returned */
	struct lock *first;
	int first_rc;
};

static struct overtake ov;

/* Bounded: a wait of 5 s at most (then the case fails, never hangs). */
static bool overtake_wait(bool *flag)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&ov.mu);
	while (!*flag &&
	       pthread_cond_timedwait(&ov.cv, &ov.mu, &until) != ETIMEDOUT)
		;
	ok = *flag;
	pthread_mutex_unlock(&ov.mu);
	return ok;
}

static void overtake_set(bool *flag)
{
	pthread_mutex_lock(&ov.mu);
	*flag = true;
	pthread_cond_broadcast(&ov.cv);
	pthread_mutex_unlock(&ov.mu);
}

static int overtake_before(void *arg, enum store_fault_op op, const char *key)
{
	bool first;

	(void)arg;
	if (op != SF_PUT || strcmp(key, "k"))
		return 0;
	pthread_mutex_lock(&ov.mu);
	first = !ov.first_waiting;
	ov.first_waiting = true;
	pthread_cond_broadcast(&ov.cv);
	pthread_mutex_unlock(&ov.mu);
	if (first && !overtake_wait(&ov.first_may_go))
		return -ETIMEDOUT;
	return 0;
}

static void overtake_after(void *arg, enum store_fault_op op, const char *key,
			   int rc)
{
	(void)arg;
	if (op != SF_DELETE || strcmp(key, "k") || rc)
		return;
	/* The second lock's delete landed, its answer not in yet. */
	overtake_set(&ov.first_may_go);
	CHECK(overtake_wait(&ov.first_done));
}

static void *overtake_first(void *arg)
{
	struct lock_holder h = holder(getpgrp());

	(void)arg;
	ov.first_rc = lock_acquire(eng, "k", &h, &ov.first, NULL, NULL);
	overtake_set(&ov.first_done);
	return NULL;
}

static void test_release_overtaken(void)
{
	struct lock_holder h = holder(getpgrp());
	struct lock_config cfg;
	struct store_fault sf;
	struct lock *second, *found;
	pthread_t t;

	setup(HOLD_PGRP);
	cfg = *lock_engine_config(eng);
	cfg.owner = "me";
	cfg.host = "testhost";
	setup_behind(&sf, &cfg);
	memset(&ov, 0, sizeof(ov));
	pthread_mutex_init(&ov.mu, NULL);
	pthread_cond_init(&ov.cv, NULL);
	sf.before = overtake_before;
	sf.after = overtake_after;
	CHECK_INT(pthread_create(&t, NULL, overtake_first, NULL), 0);
	CHECK(overtake_wait(&ov.first_waiting));
	CHECK_INT(lock_acquire(eng, "k", &h, &second, NULL, NULL), 0);
	CHECK_INT(lock_release(eng, second), 0);
	pthread_join(t, NULL);
	sf.before = NULL;
	sf.after = NULL;
	CHECK_INT(ov.first_rc, 0);
	CHECK_INT(lock_get_state(eng, second), LOCK_RELEASED);
	CHECK_INT(lock_get_state(eng, ov.first), LOCK_HELD);
	CHECK_INT(store_mem_lock_count(st), 1);
	/* The key is the first lock's, and found so: the flock of the
	 * open file that acquired it takes it over through lock_find;
	 * lost from by_key, it was held with nobody able to find it. */
	found = lock_find(eng, "k");
	CHECK(found == ov.first);
	if (found)
		lock_unref(eng, found);
	CHECK(!lock_recently_released(eng, "k"));
	CHECK_INT(lock_release(eng, ov.first), 0);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, second);
	lock_unref(eng, ov.first);
	pthread_cond_destroy(&ov.cv);
	pthread_mutex_destroy(&ov.mu);
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

/* An engine driven by steps (hold=unlink) behind sf, whose before hook
 * is before. */
static void setup_steps_behind(struct store_fault *sf,
			       int (*before)(void *, enum store_fault_op,
					     const char *))
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);

	setup(HOLD_UNLINK);
	setup_behind(sf, &cfg);
	sf->before = before;
}

static void test_stop_tells_holders_first(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_fault sf;
	struct lock *lk;

	setup_steps_behind(&sf, check_told);
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

static int table_gone;

static int renew_no_table(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	return op == SF_RENEW && table_gone ? -ENXIO : 0;
}

/* A heartbeat that finds the table gone (ResourceNotFoundException,
 * -ENXIO) loses the lock at once: no row of ours is left. It was taken for
 * a passing failure and the lock trusted until its safe period ended,
 * while a table made again let another mount take the key. A passing
 * failure still leaves the lock held. */
static void test_table_gone(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_fault sf;
	struct lock *lk;

	setup_steps_behind(&sf, renew_no_table);
	CHECK_INT(lock_acquire(eng, "t", &h, &lk, NULL, NULL), 0);
	table_gone = 1;
	advance(600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(lost_calls, 1);
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);
	table_gone = 0;
	CHECK_INT(lock_acquire(eng, "u", &h, &lk, NULL, NULL), 0);
	sf.down = 1; /* no answer: passing */
	advance(600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	sf.down = 0;
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);
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
	CHECK_CASE(test_failed_heartbeat_backs_off);
	CHECK_CASE(test_stolen);
	CHECK_CASE(test_ambiguous_writes);
	CHECK_CASE(test_unanswered_write_settled);
	CHECK_CASE(test_release_waits_for_heartbeat);
	CHECK_CASE(test_release_overtaken);
	CHECK_CASE(test_fence_and_data);
	CHECK_CASE(test_release_all);
	CHECK_CASE(test_trust_ends_by_clock);
	CHECK_CASE(test_stop_tells_holders_first);
	CHECK_CASE(test_table_gone);
	CHECK_DONE();
}
