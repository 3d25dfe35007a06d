/* fs_flk_host: the file-lock layer (flk) on a fake machine: two mounts'
 * engines and flk share one in-memory store and one fake clock, each with
 * its own fake host (tests/unit/support/host_fake), and nothing runs by
 * itself: the test moves the clock and runs the engines' lease steps and
 * flk's wait-thread turns (flk_step) in between, so no process is forked
 * and nobody sleeps. A parked flock waits while the key's holder (a fake
 * process group) lives and is granted once the group dies, on this mount
 * or another; a key held elsewhere is polled with a backoff that grows to
 * poll_max on the fake clock; a row nobody renews is taken once it has
 * been seen unchanged for its lease, and not before. */
#include <errno.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "flk.h"
#include "host_fake.h"
#include "lock.h"
#include "log.h"
#include "store_mem.h"

/* An F_GETLK request of owner for key (a read lock: shared), from no open
 * file and no process group of a create. */
#define GETLK(k, o, s)                                                         \
	((struct flk_req){ .key = (k), .owner = (o), .shared = (s) })

#define POLL_MIN_MS 50
#define POLL_MAX_MS 400

static struct clk_fake fclk;
static struct store *st;
static struct metrics met;

struct mount {
	struct host_fake host;
	struct observe *obs;
	struct lock_engine *eng;
	struct flk *flk; /* mount a only */
};
static struct mount a, b;

/* Answers of parked requests. */
static void *answered_req[8];
static int answered_err[8];
static int n_answered, n_granted;

static int reply(void *req, int err)
{
	if (n_answered < 8) {
		answered_req[n_answered] = req;
		answered_err[n_answered++] = err;
	}
	return 0;
}

static void on_granted(void *arg, void *handle, struct lock *lk)
{
	(void)arg;
	(void)handle;
	(void)lk;
	n_granted++;
}

/* The answer given to req, or -1 (none yet). */
static int answer_of(void *req)
{
	for (int i = 0; i < n_answered; i++)
		if (answered_req[i] == req)
			return answered_err[i];
	return -1;
}

static void mount_up(struct mount *m, const char *owner, bool with_flk)
{
	struct lock_config cfg =
		engine_steps_config(owner, "testhost", HOLD_PGRP);
	struct flk_config fc = {
		.poll_min_ms = POLL_MIN_MS,
		.poll_max_ms = POLL_MAX_MS,
		.reply = reply,
		.on_granted = on_granted,
		.host = &m->host.host,
	};

	host_fake_init(&m->host, &fclk.clk);
	m->obs = observe_new(&fclk.clk, 0);
	m->eng = lock_engine_new_host(&cfg, st, m->obs, &m->host.host, &met,
				      NULL);
	CHECK(m->obs && m->eng);
	/* flk's store and observation are the engine's (lock_rows.h). */
	m->flk = with_flk ? flk_new(&fc, m->eng, &met) : NULL;
	CHECK(!with_flk || m->flk);
}

static void mount_down(struct mount *m)
{
	if (m->flk)
		flk_stop(m->flk); /* no thread: answers the parked ENOLCK */
	lock_release_all(m->eng);
	flk_free(m->flk);
	lock_engine_free(m->eng);
	observe_free(m->obs);
	host_fake_fini(&m->host);
}

static void setup(void)
{
	clk_fake_init(&fclk, 1790000000000LL);
	metrics_init(&met);
	st = store_mem_new();
	CHECK(st);
	mount_up(&a, "mount-a", true);
	mount_up(&b, "mount-b", false);
	n_answered = n_granted = 0;
}

static void teardown(void)
{
	mount_down(&a);
	mount_down(&b);
	store_free(st);
}

/* What the lease threads and flk's wait thread would have done by now. */
static void run_due(void *arg)
{
	(void)arg;
	engine_steps_due(a.eng, &fclk.clk);
	engine_steps_due(b.eng, &fclk.clk);
	flk_step(a.flk);
}

/* Advances the fake clock in 10 ms steps, running what is due after each. */
static void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_due, NULL);
}

static struct lock_holder holder(int64_t pgid)
{
	struct lock_holder h = engine_steps_holder(pgid, pgid, "test");

	h.pgid_start = (uint64_t)pgid + 1000; /* as host_fake says */
	return h;
}

/* A blocking exclusive flock of key by owner, parked and armed. */
static void park(const char *key, uint64_t owner, void *req)
{
	struct flk_req r = {
		.key = key,
		.owner = owner,
		.kind = FLK_FLOCK,
		.wait = true,
		.holder = holder(5000 + (int64_t)owner),
		.req = req,
	};

	CHECK_INT(flk_lock(a.flk, &r), -EINPROGRESS);
	flk_arm(a.flk, req);
}

/* Whether another owner's write lock on key is refused (F_GETLK). */
static bool held_for_others(const char *key)
{
	bool held, held_shared;
	int64_t pid;

	CHECK_INT(flk_getlk(a.flk, &GETLK(key, 999, false), &held, &held_shared,
			    &pid),
		  0);
	return held;
}

/* A lock of this mount held by a process group (hold=pgrp, its file
 * closed): a flock waits while the group lives and gets the key once the
 * group is gone (the engine releases it, the waiter's next turn takes
 * it). */
static void test_holder_group_dies_here(void)
{
	struct lock_holder h = holder(4242);
	struct lock *lk;
	int req;

	setup();
	CHECK_INT(lock_acquire(a.eng, "k", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(a.eng, lk);
	park("k", 1, &req);
	advance(1000);
	CHECK_INT(answer_of(&req), -1);
	CHECK_INT(lock_get_state(a.eng, lk), LOCK_HELD);
	CHECK(host_fake_alive_checks(&a.host) > 0);

	host_fake_kill(&a.host, 4242);
	advance(200);
	CHECK_INT(lock_get_state(a.eng, lk), LOCK_RELEASED);
	CHECK_INT(answer_of(&req), 0);
	CHECK_INT(n_granted, 1);
	CHECK(held_for_others("k"));
	lock_unref(a.eng, lk);
	CHECK_INT(flk_unlock(a.flk, "k", 1, FLK_FLOCK, NULL), 0);
	CHECK(!held_for_others("k"));
	teardown();
}

/* The key is held on another mount, which renews it: the waiter polls it
 * with a backoff growing to poll_max on the fake clock, and gets it once
 * that mount's holder group dies and its engine releases the row. */
static void test_holder_group_dies_elsewhere(void)
{
	struct lock_holder h = holder(77);
	struct lock *lk;
	int gets, req;

	setup();
	CHECK_INT(lock_acquire(b.eng, "k", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(b.eng, lk);
	park("k", 1, &req);
	advance(2000); /* the backoff grows to poll_max */
	gets = store_mem_count(st, SMEM_GET);
	advance(4000);
	CHECK_INT(answer_of(&req), -1);
	CHECK_INT(lock_get_state(b.eng, lk), LOCK_HELD); /* renewed */
	/* At poll_max, a poll every POLL_MAX_MS / 2 to POLL_MAX_MS: 10 to
	 * 20 reads in 4 s (at poll_min it would be 80). */
	gets = store_mem_count(st, SMEM_GET) - gets;
	CHECK(gets >= 4000 / POLL_MAX_MS && gets <= 2 * 4000 / POLL_MAX_MS);

	host_fake_kill(&b.host, 77);
	advance(200);
	CHECK_INT(lock_get_state(b.eng, lk), LOCK_RELEASED);
	advance(POLL_MAX_MS);
	CHECK_INT(answer_of(&req), 0);
	CHECK_INT(n_granted, 1);
	lock_unref(b.eng, lk);
	CHECK_INT(flk_unlock(a.flk, "k", 1, FLK_FLOCK, NULL), 0);
	teardown();
}

/* A row nobody renews (its mount is gone): the waiter takes it once this
 * mount has seen it unchanged for its whole lease on our clock, and not a
 * poll before. */
static void test_row_lapses_on_the_clock(void)
{
	int req;

	setup();
	engine_steps_foreign_row(st, "k", "gone-mount",
				 "11111111-2222-3333-4444-555555555555", 3000,
				 1);

	park("k", 1, &req);
	advance(2900); /* first seen at the first poll, POLL_MIN_MS in */
	CHECK_INT(answer_of(&req), -1);
	CHECK_INT(store_mem_lock_count(st), 1);
	advance(POLL_MIN_MS + POLL_MAX_MS + 10);
	CHECK_INT(answer_of(&req), 0);
	CHECK_INT(n_granted, 1);
	CHECK(held_for_others("k"));
	CHECK_INT(flk_unlock(a.flk, "k", 1, FLK_FLOCK, NULL), 0);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_holder_group_dies_here);
	CHECK_CASE(test_holder_group_dies_elsewhere);
	CHECK_CASE(test_row_lapses_on_the_clock);
	CHECK_DONE();
}
