/* core_flk: the file-lock layer (flk) on its own, over the lock engine and
 * the in-memory store behind store_fault, with its wait thread running:
 * an interrupt that reaches a blocking request during its first attempt
 * is answered EINTR (not parked forever); an open file that acquired a key
 * with O_CREAT gets its flock at once although another file waits for the
 * key; two attempts on one key never undo each other's grant; entries of
 * released locks are swept. */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "flk.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

static struct store *mem;
static struct store_fault sf;
static struct observe *obs;
static struct lock_engine *eng;
static struct metrics met;
static struct flk *flk;

/* Answers of parked requests. */
static pthread_mutex_t ans_mu = PTHREAD_MUTEX_INITIALIZER;
static void *answered_req[16];
static int answered_err[16];
static int n_answered;

static int reply(void *req, int err)
{
	pthread_mutex_lock(&ans_mu);
	if (n_answered < 16) {
		answered_req[n_answered] = req;
		answered_err[n_answered++] = err;
	}
	pthread_mutex_unlock(&ans_mu);
	return 0;
}

/* The answer given to req, or -1 (none yet). */
static int answer_of(void *req)
{
	int err = -1;

	pthread_mutex_lock(&ans_mu);
	for (int i = 0; i < n_answered; i++)
		if (answered_req[i] == req)
			err = answered_err[i];
	pthread_mutex_unlock(&ans_mu);
	return err;
}

/* A gate on one key's requests: the hook blocks them until opened. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static const char *gate_key;
static bool gate_open = true;
static int gate_entered;

static int gate_hook(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)op;
	pthread_mutex_lock(&gate_mu);
	if (gate_key && key && !strcmp(key, gate_key)) {
		gate_entered++;
		pthread_cond_broadcast(&gate_cv);
		while (!gate_open)
			pthread_cond_wait(&gate_cv, &gate_mu);
	}
	pthread_mutex_unlock(&gate_mu);
	return 0;
}

static void gate_close(const char *key)
{
	pthread_mutex_lock(&gate_mu);
	gate_key = key;
	gate_open = false;
	gate_entered = 0;
	pthread_mutex_unlock(&gate_mu);
}

static void gate_wait_entered(void)
{
	pthread_mutex_lock(&gate_mu);
	while (!gate_entered)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static void gate_release(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = true;
	gate_key = NULL;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

static void setup(void)
{
	struct lock_config cfg = {
		.owner = "me",
		.host = "testhost",
		.lease_ms = 3000,
		.heartbeat_ms = 500,
		.safe_period_ms = 2000,
		.hold = HOLD_PGRP,
	};
	struct flk_config fc = { .reply = reply, .poll_min_ms = 20 };

	mem = store_mem_new();
	store_fault_init(&sf, mem);
	sf.before = gate_hook;
	obs = observe_new(&clk_system, 0);
	metrics_init(&met);
	eng = lock_engine_new(&cfg, &sf.base, obs, &clk_system, &met, NULL);
	CHECK(mem && obs && eng);
	flk = flk_new(&fc, eng, &sf.base, obs, &met);
	CHECK(flk);
	CHECK_INT(lease_start(eng), 0);
	CHECK_INT(flk_start(flk), 0);
	n_answered = 0;
}

static void teardown(void)
{
	flk_stop(flk);
	lease_stop(eng);
	lock_release_all(eng);
	flk_free(flk);
	lock_engine_free(eng);
	observe_free(obs);
	store_free(mem);
}

static struct lock_holder holder(void)
{
	struct lock_holder h = { .pid = getpid(), .uid = 1000, .gid = 1000,
				 .pgid = getpgrp(), .mode = 0644 };

	strcpy(h.cmd, "test");
	return h;
}

static void foreign_row(const char *key)
{
	struct lock_record r;

	record_init(&r);
	record_set_str(&r.key, key);
	record_set_str(&r.owner, "someone-else");
	strcpy(r.rvn, "11111111-2222-3333-4444-555555555555");
	r.lease_ms = 60000;
	r.expiry_real_s = 1;
	CHECK_INT(store_mem_put_raw(mem, &r), 0);
	record_fini(&r);
}

struct call {
	struct flk_req r;
	int rc;
};

static void *call_lock(void *arg)
{
	struct call *c = arg;

	c->rc = flk_lock(flk, &c->r);
	return NULL;
}

/* A signal that reaches a blocking flock while its first attempt is in
 * flight (before any waiter exists) is answered EINTR, not lost. */
static void test_interrupt_during_first_attempt(void)
{
	int req;
	struct call c = { .r = { .key = "held", .owner = 1, .kind = FLK_FLOCK,
				 .wait = true, .req = &req } };
	pthread_t t;

	setup();
	foreign_row("held");
	c.r.holder = holder();
	gate_close("held");
	CHECK_INT(pthread_create(&t, NULL, call_lock, &c), 0);
	gate_wait_entered(); /* the conditional write is in flight */
	flk_interrupt(flk, &req);
	gate_release();
	pthread_join(t, NULL);
	CHECK_INT(c.rc, -EINTR);
	CHECK_INT(answer_of(&req), -1); /* answered by the return, once */
	teardown();
}

/* A (the open file that acquired "d" with O_CREAT) flocks it while B, on
 * the same mount, waits for "d": A is granted at once. */
static void test_own_lock_ahead_of_waiters(void)
{
	struct lock_holder h = holder();
	struct lock *lk;
	int req_b, req_a;
	struct flk_req b = { .key = "d", .owner = 2, .kind = FLK_FLOCK,
			     .wait = true, .req = &req_b };
	struct flk_req a = { .key = "d", .owner = 1, .kind = FLK_FLOCK,
			     .wait = true, .req = &req_a };

	setup();
	CHECK_INT(lock_acquire(eng, "d", &h, &lk, NULL, NULL), 0);
	b.holder = h;
	a.holder = h;
	a.handle_lock = lk;
	CHECK_INT(flk_lock(flk, &b), -EINPROGRESS);
	flk_arm(flk, &req_b);
	CHECK_INT(flk_lock(flk, &a), 0);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK_INT(answer_of(&req_b), -1); /* B still waits */
	CHECK_INT(flk_unlock(flk, "d", 1, FLK_FLOCK), 0);
	for (int i = 0; i < 200 && answer_of(&req_b) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_b), 0); /* then B gets it */
	CHECK_INT(flk_unlock(flk, "d", 2, FLK_FLOCK), 0);
	lock_unref(eng, lk);
	teardown();
}

/* Two attempts on one key at once: the second waits for the first's
 * outcome; a grant is never undone. Same open file (flock owner): both
 * succeed. Different owners: one wins, the other gets EWOULDBLOCK. */
static void test_attempts_do_not_undo_grants(void)
{
	struct lock_holder h = holder();
	struct call c1 = { .r = { .key = "r", .owner = 1, .kind = FLK_FLOCK } };
	struct call c2 = { .r = { .key = "r", .owner = 1, .kind = FLK_FLOCK } };
	struct call c3 = { .r = { .key = "q", .owner = 3, .kind = FLK_POSIX } };
	struct call c4 = { .r = { .key = "q", .owner = 4, .kind = FLK_POSIX } };
	pthread_t t1, t2;

	setup();
	c1.r.holder = c2.r.holder = c3.r.holder = c4.r.holder = h;
	gate_close("r");
	CHECK_INT(pthread_create(&t1, NULL, call_lock, &c1), 0);
	gate_wait_entered(); /* c1's acquire is in flight */
	CHECK_INT(pthread_create(&t2, NULL, call_lock, &c2), 0);
	usleep(50 * 1000);
	gate_release();
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK_INT(c1.rc, 0);
	CHECK_INT(c2.rc, 0);
	CHECK_INT(store_mem_lock_count(mem), 1); /* still held */

	gate_close("q");
	CHECK_INT(pthread_create(&t1, NULL, call_lock, &c3), 0);
	gate_wait_entered();
	CHECK_INT(pthread_create(&t2, NULL, call_lock, &c4), 0);
	usleep(50 * 1000);
	gate_release();
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK_INT(c3.rc, 0);
	CHECK_INT(c4.rc, -EAGAIN);
	CHECK_INT(store_mem_lock_count(mem), 2);
	CHECK_INT(flk_unlock(flk, "r", 1, FLK_FLOCK), 0);
	CHECK_INT(flk_unlock(flk, "q", 3, FLK_POSIX), 0);
	CHECK_INT(store_mem_lock_count(mem), 0);
	teardown();
}

/* A request waiting for another attempt on its key (the wait thread's,
 * for a waiter that is then interrupted) finds the key's entry freed when
 * it wakes: it must look it up again (found by the torture test, a
 * use-after-free under ASan). */
static void test_entry_freed_while_waiting(void)
{
	int req_w;
	struct flk_req w = { .key = "u", .owner = 7, .kind = FLK_FLOCK,
			     .wait = true, .req = &req_w };
	struct call c = { .r = { .key = "u", .owner = 8, .kind = FLK_FLOCK } };
	pthread_t t;

	setup();
	foreign_row("u");
	w.holder = c.r.holder = holder();
	CHECK_INT(flk_lock(flk, &w), -EINPROGRESS);
	gate_close("u"); /* the wait thread's next poll of u blocks */
	flk_arm(flk, &req_w);
	gate_wait_entered();
	CHECK_INT(pthread_create(&t, NULL, call_lock, &c), 0);
	usleep(50 * 1000); /* c waits for the wait thread's attempt */
	flk_interrupt(flk, &req_w);
	gate_release();
	pthread_join(t, NULL);
	CHECK_INT(c.rc, -EWOULDBLOCK);
	for (int i = 0; i < 200 && answer_of(&req_w) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_w), EINTR);
	teardown();
}

/* The entry of a file lock whose key was released under it (unlink) goes
 * away within the sweep period. */
static void test_sweep(void)
{
	struct lock_holder h = holder();
	struct flk_req r = { .key = "s", .owner = 5, .kind = FLK_FLOCK };
	struct lock *lk;

	setup();
	r.holder = h;
	CHECK_INT(flk_lock(flk, &r), 0);
	CHECK_INT(flk_key_count(flk), 1);
	lk = lock_find(eng, "s");
	CHECK(lk != NULL);
	CHECK_INT(lock_release(eng, lk), 0); /* unlink */
	lock_unref(eng, lk);
	for (int i = 0; i < 300 && flk_key_count(flk); i++)
		usleep(10 * 1000);
	CHECK_INT(flk_key_count(flk), 0);
	teardown();
}

int main(void)
{
	log_setup(LOGL_ERR, false, NULL);
	test_interrupt_during_first_attempt();
	test_own_lock_ahead_of_waiters();
	test_attempts_do_not_undo_grants();
	test_sweep();
	test_entry_freed_while_waiting();
	CHECK_DONE();
}
