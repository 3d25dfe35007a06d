/* fs_flk: the file-lock layer (flk) on its own, over the lock engine and
 * the in-memory store behind store_fault, with its wait thread running:
 * an interrupt that reaches a blocking request during its first attempt
 * is answered EINTR (not parked forever); an open file that acquired a key
 * with O_CREAT gets its flock at once although another file waits for the
 * key; two attempts on one key never undo each other's grant; entries of
 * released locks are swept. Shared locks: local readers share the mount's
 * one lock without a request, a queued writer keeps new local readers
 * out, conversions follow flock(2), F_GETLK tells a share from a write
 * lock, and a writer waiting on another mount's readers marks the row, so
 * that it gets the key although readers keep coming on that mount. A
 * hanging poll of one key delays no waiter of another; due polls that
 * outnumber the wait workers are read together. A blocking request waits
 * through a DynamoDB outage that fails its first try. Waiters of one lock
 * owner (threads on one open file) are granted together, converting the
 * lock when their modes differ (and granting nothing when the owner let
 * the key go meanwhile). An open file description's lock goes at the
 * file's last close. A waiter interrupted and at once made again keeps its
 * place; an interrupt leaves the removal of the mount's mark to a wait
 * worker. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "flk.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

/* An F_GETLK request of owner for key (a read lock: shared), from no open
 * file and no process group of a create. */
#define GETLK(k, o, s)                                                         \
	((struct flk_req){ .key = (k), .owner = (o), .shared = (s) })

/* A mount: its own engine and flk, their threads running, on mem behind
 * its own store_fault. */
struct mount {
	struct store_fault sf;
	struct observe *obs;
	struct metrics met;
	struct lock_engine *eng;
	struct flk *flk;
};

static struct store *mem;
static struct mount me;		/* the mount under test */
static struct lock_engine *eng; /* me's */
static struct flk *flk;		/* me's */

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
/* When gate_op >= 0, only that op is gated, after gate_skip of it pass. */
static int gate_op = -1;
static int gate_skip;
static bool slow_reads; /* every lock row read takes 10 ms */

static int gate_hook(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	if (op == SF_GET && __atomic_load_n(&slow_reads, __ATOMIC_RELAXED))
		usleep(10 * 1000);
	pthread_mutex_lock(&gate_mu);
	if (gate_key && key && !strcmp(key, gate_key) && gate_op >= 0 &&
	    ((int)op != gate_op || gate_skip-- > 0)) {
		pthread_mutex_unlock(&gate_mu);
		return 0;
	}
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
	gate_op = -1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* Downgrades the file layer was told of (flk_config.around_downgrade):
 * begun and ended. */
static int around_begun, around_ended;

static int count_around(void *arg, struct lock *lk, bool begin)
{
	(void)arg;
	(void)lk;
	__atomic_add_fetch(begin ? &around_begun : &around_ended, 1,
			   __ATOMIC_SEQ_CST);
	return 0;
}

static int arounds(void)
{
	int b = __atomic_load_n(&around_begun, __ATOMIC_SEQ_CST);

	return b == __atomic_load_n(&around_ended, __ATOMIC_SEQ_CST) ? b : -1;
}

/* A lease for the next mount_up instead of 3 s (0: 3 s). */
static int64_t long_lease_ms;

/* m on the real clock, its store requests through before (may be NULL). */
static void mount_up(struct mount *m, const char *owner, const char *host,
		     int (*before)(void *arg, enum store_fault_op op,
				   const char *key))
{
	struct lock_config cfg = engine_steps_config(owner, host, HOLD_PGRP);
	struct flk_config fc = { .reply = reply,
				 .around_downgrade = count_around,
				 .poll_min_ms = 20 };

	cfg.lease_ms = 3000;
	cfg.safe_period_ms = 2000;
	if (long_lease_ms) { /* no renewal within a test */
		cfg.lease_ms = long_lease_ms;
		cfg.safe_period_ms = long_lease_ms * 2 / 3;
		cfg.heartbeat_ms = long_lease_ms / 6;
	}
	store_fault_init(&m->sf, mem);
	m->sf.before = before;
	m->obs = observe_new(&clk_system, 0);
	metrics_init(&m->met);
	m->eng = lock_engine_new(&cfg, &m->sf.base, m->obs, &clk_system,
				 &m->met, NULL);
	m->flk = flk_new(&fc, m->eng, &m->met);
	CHECK(m->obs && m->eng && m->flk);
	CHECK_INT(lease_start(m->eng), 0);
	CHECK_INT(flk_start(m->flk), 0);
}

static void mount_down(struct mount *m)
{
	flk_stop(m->flk);
	lease_stop(m->eng);
	lock_release_all(m->eng);
	flk_free(m->flk);
	lock_engine_free(m->eng);
	observe_free(m->obs);
}

static void setup(void)
{
	mem = store_mem_new();
	CHECK(mem);
	mount_up(&me, "me", "testhost", gate_hook);
	eng = me.eng;
	flk = me.flk;
	n_answered = 0;
}

static void teardown(void)
{
	mount_down(&me);
	store_free(mem);
}

static struct lock_holder holder(void)
{
	return engine_steps_holder(getpid(), getpgrp(), "test");
}

static void foreign_row(const char *key)
{
	engine_steps_foreign_row(mem, key, "someone-else",
				 "11111111-2222-3333-4444-555555555555", 60000,
				 1);
}

struct call {
	struct flk_req r;
	int rc;
};

static void *call_lock(void *arg)
{
	struct call *c = arg;

	/* Read while it runs (returns_while_gated). */
	__atomic_store_n(&c->rc, flk_lock(flk, &c->r), __ATOMIC_SEQ_CST);
	return NULL;
}

/* first's attempt reaches the store (gated on key), second's starts,
 * then the gate opens; both return. */
static void race(const char *key, struct call *first, struct call *second)
{
	pthread_t t1, t2;

	gate_close(key);
	CHECK_INT(pthread_create(&t1, NULL, call_lock, first), 0);
	gate_wait_entered(); /* first's acquire is in flight */
	CHECK_INT(pthread_create(&t2, NULL, call_lock, second), 0);
	usleep(50 * 1000);
	gate_release();
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
}

/* How many answers req was given. */
static int answers_to(void *req)
{
	int n = 0;

	pthread_mutex_lock(&ans_mu);
	for (int i = 0; i < n_answered; i++)
		n += answered_req[i] == req;
	pthread_mutex_unlock(&ans_mu);
	return n;
}

/* A blocking flock of key by owner 1 whose first attempt is in flight
 * (gated on key) when a signal comes: answered EINTR at once, not when
 * the attempt's answer comes (up to an op timeout), and once (a second
 * interrupt answers nothing); its return then answers nothing
 * (-EALREADY). */
static void interrupt_first_attempt(const char *key)
{
	int req;
	struct call c = { .r = { .key = key,
				 .owner = 1,
				 .kind = FLK_FLOCK,
				 .wait = true,
				 .req = &req } };
	pthread_t t;

	c.r.holder = holder();
	gate_close(key);
	CHECK_INT(pthread_create(&t, NULL, call_lock, &c), 0);
	gate_wait_entered(); /* the conditional write is in flight */
	flk_interrupt(flk, &req);
	CHECK_INT(answer_of(&req), EINTR); /* while it is still in flight */
	flk_interrupt(flk, &req);
	gate_release();
	pthread_join(t, NULL);
	CHECK_INT(c.rc, -EALREADY);
	CHECK_INT(answers_to(&req), 1);
}

/* ... of a key held elsewhere: not lost. */
static void test_interrupt_during_first_attempt(void)
{
	setup();
	foreign_row("held");
	interrupt_first_attempt("held");
	teardown();
}

/* ... of a free key, which the attempt takes: the caller was told EINTR,
 * so what the attempt took is let go of at its return, and another owner
 * takes the key. */
static void test_interrupt_during_granted_first_attempt(void)
{
	struct flk_req other = { .key = "free", .owner = 2, .kind = FLK_FLOCK };

	setup();
	other.holder = holder();
	interrupt_first_attempt("free");
	CHECK_INT(flk_lock(flk, &other), 0);
	CHECK_INT(flk_unlock(flk, "free", 2, FLK_FLOCK, NULL), 0);
	teardown();
}

/* DynamoDB does not answer a blocking request's first try: the request
 * waits on (flock "blocks until acquired") and is granted once DynamoDB
 * answers again, instead of failing. A non-blocking one fails, and not
 * as a conflict. */
static void test_blocking_waits_through_outage(void)
{
	int req, rc;
	struct flk_req w = { .key = "o",
			     .owner = 1,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req };
	struct flk_req nb = { .key = "o", .owner = 2, .kind = FLK_FLOCK };

	setup();
	w.holder = holder();
	nb.holder = holder();
	store_fault_set_down(&me.sf, 1);
	rc = flk_lock(flk, &nb);
	CHECK(rc != 0 && rc != -EWOULDBLOCK && rc != -EINPROGRESS);
	CHECK_INT(flk_lock(flk, &w), -EINPROGRESS);
	flk_arm(flk, &req);
	usleep(100 * 1000);
	CHECK_INT(answer_of(&req), -1); /* still waiting */
	store_fault_set_down(&me.sf, 0);
	for (int i = 0; i < 300 && answer_of(&req) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req), 0);
	CHECK_INT(flk_unlock(flk, "o", 1, FLK_FLOCK, NULL), 0);
	teardown();
}

/* A (the open file that acquired "d" with O_CREAT) flocks it while B, on
 * the same mount, waits for "d": A is granted at once. */
static void test_own_lock_ahead_of_waiters(void)
{
	struct lock_holder h = holder();
	struct lock *lk;
	int req_b, req_a;
	struct flk_req b = { .key = "d",
			     .owner = 2,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req_b };
	struct flk_req a = { .key = "d",
			     .owner = 1,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req_a };

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
	CHECK_INT(flk_unlock(flk, "d", 1, FLK_FLOCK, NULL), 0);
	for (int i = 0; i < 200 && answer_of(&req_b) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_b), 0); /* then B gets it */
	CHECK_INT(flk_unlock(flk, "d", 2, FLK_FLOCK, NULL), 0);
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

	setup();
	c1.r.holder = c2.r.holder = c3.r.holder = c4.r.holder = h;
	race("r", &c1, &c2);
	CHECK_INT(c1.rc, 0);
	CHECK_INT(c2.rc, 0);
	CHECK_INT(store_mem_lock_count(mem), 1); /* still held */

	race("q", &c3, &c4);
	CHECK_INT(c3.rc, 0);
	CHECK_INT(c4.rc, -EAGAIN);
	CHECK_INT(store_mem_lock_count(mem), 2);
	CHECK_INT(flk_unlock(flk, "r", 1, FLK_FLOCK, NULL), 0);
	CHECK_INT(flk_unlock(flk, "q", 3, FLK_POSIX, NULL), 0);
	CHECK_INT(store_mem_lock_count(mem), 0);
	teardown();
}

/* flk_lock of a and of b, each in a thread (*ta, *tb); true if both
 * returned within limit_ms, the gate still closed. */
static bool return_while_gated(struct call *a, pthread_t *ta, struct call *b,
			       pthread_t *tb, int limit_ms)
{
	__atomic_store_n(&a->rc, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&b->rc, 1, __ATOMIC_SEQ_CST);
	CHECK_INT(pthread_create(ta, NULL, call_lock, a), 0);
	CHECK_INT(pthread_create(tb, NULL, call_lock, b), 0);
	for (int i = 0; i < limit_ms / 10; i++) {
		if (__atomic_load_n(&a->rc, __ATOMIC_SEQ_CST) != 1 &&
		    __atomic_load_n(&b->rc, __ATOMIC_SEQ_CST) != 1)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* A non-blocking request that finds another's attempt on its key in
 * flight waits for its outcome FLK_NB_WAIT_MS at most, then fails -EIO
 * (ENOLCK to its caller: undecided). It waited up to the attempt's
 * operation timeout, its request thread held (with every thread held
 * so, the mount read nothing). An outcome within the bound decides: a
 * reader behind a reader's attempt shares the key. */
static void test_nonblocking_behind_attempt(void)
{
	struct lock_holder h = holder();
	struct call c1 = { .r = { .key = "n", .owner = 1, .kind = FLK_FLOCK } };
	struct call c2 = { .r = { .key = "n", .owner = 2, .kind = FLK_FLOCK } };
	struct call c3 = { .r = { .key = "n", .owner = 3, .kind = FLK_POSIX } };
	struct call s1 = { .r = { .key = "s", .owner = 1, .kind = FLK_FLOCK } };
	struct call s2 = { .r = { .key = "s", .owner = 2, .kind = FLK_FLOCK } };
	pthread_t t1, t2, t3;

	setup();
	c1.r.holder = c2.r.holder = c3.r.holder = s1.r.holder = h;
	s2.r.holder = h;
	gate_close("n");
	CHECK_INT(pthread_create(&t1, NULL, call_lock, &c1), 0);
	gate_wait_entered(); /* c1's acquire is in flight */
	CHECK(return_while_gated(&c2, &t2, &c3, &t3, 1800));
	CHECK_INT(c2.rc, -EIO);
	CHECK_INT(c3.rc, -EIO);
	gate_release();
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_join(t3, NULL);
	CHECK_INT(c1.rc, 0);

	/* Readers: the second waits for the first's attempt, then shares. */
	s1.r.shared = s2.r.shared = true;
	race("s", &s1, &s2);
	CHECK_INT(s1.rc, 0);
	CHECK_INT(s2.rc, 0);
	CHECK_INT(flk_unlock(flk, "n", 1, FLK_FLOCK, NULL), 0);
	CHECK_INT(flk_unlock(flk, "s", 1, FLK_FLOCK, NULL), 0);
	CHECK_INT(flk_unlock(flk, "s", 2, FLK_FLOCK, NULL), 0);
	CHECK_INT(store_mem_lock_count(mem), 0);
	teardown();
}

/* Waiters on two keys held elsewhere: while the poll of one hangs (its
 * request gated, as a reply DynamoDB never sends), the other key is freed
 * and its waiter gets it, within the bound here: one key's slow request
 * holds up no other key's wait. With one wait thread, "fast" waited for
 * the gate. */
static void test_slow_key_delays_no_other_wait(void)
{
	int req_s, req_f;
	struct flk_req s = { .key = "slow",
			     .owner = 1,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req_s };
	struct flk_req f = { .key = "fast",
			     .owner = 2,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req_f };

	setup();
	foreign_row("slow");
	foreign_row("fast");
	s.holder = f.holder = holder();
	CHECK_INT(flk_lock(flk, &s), -EINPROGRESS);
	CHECK_INT(flk_lock(flk, &f), -EINPROGRESS);
	gate_close("slow");
	flk_arm(flk, &req_s);
	gate_wait_entered(); /* a wait worker's poll of "slow" hangs */
	flk_arm(flk, &req_f);
	CHECK_INT(store_mem_delete_raw(mem, "fast"), 0);
	for (int i = 0; i < 300 && answer_of(&req_f) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_f), 0);
	CHECK_INT(answer_of(&req_s), -1); /* still in its poll */
	flk_interrupt(flk, &req_s);
	gate_release();
	for (int i = 0; i < 300 && answer_of(&req_s) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_s), EINTR);
	CHECK_INT(flk_unlock(flk, "fast", 2, FLK_FLOCK, NULL), 0);
	teardown();
}

/* Twelve keys held elsewhere, a waiter each, on a store slow enough
 * (10 ms a read) that due polls outnumber the four wait workers: a
 * worker reads its share of them at once, and a take follows as a job
 * of its own. One waiter is interrupted, then every row goes: the other
 * eleven get their keys, the interrupted one EINTR, and each key is held
 * by exactly its waiter. */
static void test_batched_polls(void)
{
	enum { N = 12 };
	static char names[N][8];
	static int reqs[N];
	struct flk_req r[N];
	uint64_t polls;

	setup();
	__atomic_store_n(&slow_reads, true, __ATOMIC_RELAXED);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "b%d", i);
		foreign_row(names[i]);
		r[i] = (struct flk_req){ .key = names[i],
					 .owner = 100 + i,
					 .kind = FLK_FLOCK,
					 .wait = true,
					 .req = &reqs[i],
					 .holder = holder() };
		CHECK_INT(flk_lock(flk, &r[i]), -EINPROGRESS);
	}
	for (int i = 0; i < N; i++)
		flk_arm(flk, &reqs[i]);
	usleep(400 * 1000);
	polls = metrics_get(&me.met, MC_WAIT_POLLS);
	CHECK(polls >= 2 * N); /* every key polled, again and again */
	flk_interrupt(flk, &reqs[0]);
	for (int i = 0; i < N; i++)
		CHECK_INT(store_mem_delete_raw(mem, names[i]), 0);
	for (int t = 0; t < 500; t++) {
		int done = 0;

		for (int i = 0; i < N; i++)
			done += answer_of(&reqs[i]) >= 0;
		if (done == N)
			break;
		usleep(10 * 1000);
	}
	CHECK_INT(answer_of(&reqs[0]), EINTR);
	for (int i = 1; i < N; i++) {
		CHECK_INT(answer_of(&reqs[i]), 0);
		CHECK_INT(flk_unlock(flk, names[i], 100 + i, FLK_FLOCK, NULL),
			  0);
	}
	__atomic_store_n(&slow_reads, false, __ATOMIC_RELAXED);
	teardown();
}

/* Microseconds per wait that parks on "hot" (held elsewhere), is armed
 * and interrupted: a search for the request at each step and the wait
 * thread's turns. */
static int64_t wait_cycle_us(int n)
{
	static int req;
	struct flk_req r = { .key = "hot",
			     .owner = 1,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req,
			     .holder = holder() };
	int64_t t0 = clk_sys_mono_us();

	for (int i = 0; i < n; i++) {
		n_answered = 0;
		CHECK_INT(flk_lock(flk, &r), -EINPROGRESS);
		flk_arm(flk, &req);
		flk_interrupt(flk, &req);
		for (int t = 0; t < 100 && answer_of(&req) < 0; t++)
			usleep(1000);
		CHECK_INT(answer_of(&req), EINTR);
	}
	return (clk_sys_mono_us() - t0) / n;
}

/* 10,000 keys held by file locks of this mount: a wait on another key
 * costs about what it costs with none held. Finding a request and the
 * wait thread's turns went through every key the mount knew (about 20
 * times the cost with 10,000 held). */
static void test_wait_cost_independent_of_held(void)
{
	enum { HELD = 10000, CYCLES = 200 };
	int64_t base, loaded;
	char key[32];

	/* No renewals of the 10,000 meanwhile: the cycle's own cost. */
	long_lease_ms = 600000;
	setup();
	long_lease_ms = 0;
	foreign_row("hot");
	wait_cycle_us(20); /* warm up */
	base = wait_cycle_us(CYCLES);
	for (int i = 0; i < HELD; i++) {
		struct flk_req h = { .key = key,
				     .owner = 1000 + i,
				     .kind = FLK_FLOCK,
				     .holder = holder() };

		snprintf(key, sizeof(key), "held/%d", i);
		CHECK_INT(flk_lock(flk, &h), 0);
	}
	loaded = wait_cycle_us(CYCLES);
	printf("# a wait cycle: %lld us with no key held, %lld us with %d\n",
	       (long long)base, (long long)loaded, HELD);
	CHECK(loaded < 3 * base + 200);
	teardown();
}

/* A request waiting for another attempt on its key (the wait thread's,
 * for a waiter that is then interrupted) finds the key's entry freed when
 * it wakes: it must look it up again (found by the torture test, a
 * use-after-free under ASan). */
static void test_entry_freed_while_waiting(void)
{
	int req_w;
	struct flk_req w = { .key = "u",
			     .owner = 7,
			     .kind = FLK_FLOCK,
			     .wait = true,
			     .req = &req_w };
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

static int wait_answer(void *req)
{
	for (int i = 0; i < 500 && answer_of(req) < 0; i++)
		usleep(10 * 1000);
	return answer_of(req);
}

static struct flk_req sreq(const char *key, uint64_t owner, bool shared,
			   bool wait, void *req)
{
	struct flk_req r = { .key = key,
			     .owner = owner,
			     .kind = FLK_FLOCK,
			     .shared = shared,
			     .wait = wait,
			     .req = req };

	r.holder = holder();
	return r;
}

static bool row_of(const char *key, struct lock_record *r)
{
	return engine_steps_row(mem, key, r);
}

/* Parks a blocking request r (answered through req) and arms it. */
static void park(struct flk_req *r, int *req)
{
	r->wait = true;
	r->req = req;
	CHECK_INT(flk_lock(flk, r), -EINPROGRESS);
	flk_arm(flk, req);
}

static void test_shared_local(void)
{
	int req3, req4;
	struct flk_req r1 = sreq("s", 1, true, false, NULL);
	struct flk_req r2 = sreq("s", 2, true, false, NULL);
	struct flk_req w3 = sreq("s", 3, false, false, NULL);
	struct flk_req r4 = sreq("s", 4, true, false, NULL);
	struct lock_record row;
	int total;

	setup();
	record_init(&row);
	CHECK_INT(flk_lock(flk, &r1), 0);
	CHECK(row_of("s", &row) && row.shared && row.n_readers == 1);
	/* A second local reader: no request at all. */
	total = store_mem_total(mem);
	CHECK_INT(flk_lock(flk, &r2), 0);
	CHECK_INT(store_mem_total(mem), total);
	CHECK_INT(flk_lock(flk, &r2), 0); /* again: a no-op */
	/* A writer is refused, then waits; a reader behind it waits too. */
	CHECK_INT(flk_lock(flk, &w3), -EWOULDBLOCK);
	park(&w3, &req3);
	CHECK_INT(flk_lock(flk, &r4), -EWOULDBLOCK);
	park(&r4, &req4);
	/* The share lives while one reader holds it. */
	CHECK_INT(flk_unlock(flk, "s", 1, FLK_FLOCK, NULL), 0);
	CHECK(row_of("s", &row) && row.shared);
	usleep(100 * 1000);
	CHECK_INT(answer_of(&req3), -1);
	/* The last reader leaves: the writer, then the reader after it. */
	CHECK_INT(flk_unlock(flk, "s", 2, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&req3), 0);
	CHECK(row_of("s", &row) && !row.shared);
	usleep(100 * 1000);
	CHECK_INT(answer_of(&req4), -1);
	CHECK_INT(flk_unlock(flk, "s", 3, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&req4), 0);
	CHECK(row_of("s", &row) && row.shared);
	CHECK_INT(flk_unlock(flk, "s", 4, FLK_FLOCK, NULL), 0);
	CHECK(!row_of("s", &row));
	record_fini(&row);
	teardown();
}

/* Two requests of one owner, a then b (answered through ra and rb, which
 * no other request used), wait for key, held elsewhere; the row goes: both
 * are granted. row: the key's row then. */
static void both_granted(const char *key, struct flk_req *a, int *ra,
			 struct flk_req *b, int *rb, struct lock_record *row)
{
	foreign_row(key);
	park(a, ra);
	park(b, rb);
	CHECK_INT(store_mem_delete_raw(mem, key), 0);
	CHECK_INT(wait_answer(ra), 0);
	CHECK_INT(wait_answer(rb), 0);
	CHECK(row_of(key, row));
}

/* One unlock of owner lets key go: its row is gone. */
static void one_unlock_frees(const char *key, uint64_t owner,
			     enum flk_kind kind, struct lock_record *row)
{
	CHECK_INT(flk_unlock(flk, key, owner, kind, NULL), 0);
	CHECK(!row_of(key, row));
}

/* Two requests of one lock owner wait for a key held elsewhere (two
 * threads on one open file; one process's two F_SETLKW): when the key
 * comes, both are granted, as flock(2) and fcntl(2) grant them, the second
 * ahead of another owner's waiter queued before it, and the owner holds
 * the key once: its one unlock lets it go, and the other owner's waiter
 * takes it. Readers of one owner likewise. */
static void test_waiters_of_one_owner(void)
{
	int ra, rb, rc, rd, re, rf, rg;
	struct flk_req a = sreq("o", 7, false, false, NULL);
	struct flk_req c = sreq("o", 8, false, false, NULL);
	struct flk_req b = sreq("o", 7, false, false, NULL);
	struct flk_req d = sreq("p", 9, true, false, NULL);
	struct flk_req e = sreq("p", 9, true, false, NULL);
	struct flk_req f = sreq("q", 10, false, false, NULL);
	struct flk_req g = sreq("q", 10, false, false, NULL);
	struct lock_record row;

	setup();
	record_init(&row);
	foreign_row("o");
	park(&a, &ra);
	park(&c, &rc);
	park(&b, &rb);
	CHECK_INT(store_mem_delete_raw(mem, "o"), 0);
	CHECK_INT(wait_answer(&ra), 0);
	CHECK_INT(wait_answer(&rb), 0);
	usleep(100 * 1000);
	CHECK_INT(answer_of(&rc), -1);
	CHECK_INT(flk_unlock(flk, "o", 7, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&rc), 0);
	one_unlock_frees("o", 8, FLK_FLOCK, &row);

	both_granted("p", &d, &rd, &e, &re, &row);
	CHECK(row.shared && row.n_readers == 1);
	one_unlock_frees("p", 9, FLK_FLOCK, &row);

	f.kind = g.kind = FLK_POSIX;
	both_granted("q", &f, &rf, &g, &rg, &row);
	one_unlock_frees("q", 10, FLK_POSIX, &row);
	record_fini(&row);
	teardown();
}

/* Two requests of one lock owner in different modes wait for a key held
 * elsewhere (threads on one open file, one LOCK_EX and one LOCK_SH): when
 * the key comes, the first is granted and the second converts the lock as
 * flock(2) does, so both return: exclusive then shared leaves the key
 * shared (a downgrade, one write), shared then exclusive leaves it
 * exclusive (the share dropped, then taken again). Either way one unlock
 * frees the key. */
static void test_waiters_of_one_owner_convert(void)
{
	int ra, rb, rc, rd;
	struct flk_req a = sreq("x", 11, false, false, NULL);
	struct flk_req b = sreq("x", 11, true, false, NULL);
	struct flk_req c = sreq("y", 12, true, false, NULL);
	struct flk_req d = sreq("y", 12, false, false, NULL);
	struct lock_record row;

	setup();
	record_init(&row);
	both_granted("x", &a, &ra, &b, &rb, &row);
	CHECK(row.shared && row.n_readers == 1);
	one_unlock_frees("x", 11, FLK_FLOCK, &row);
	both_granted("y", &c, &rc, &d, &rd, &row);
	CHECK(!row.shared);
	one_unlock_frees("y", 12, FLK_FLOCK, &row);
	record_fini(&row);
	teardown();
}

static void *unlock_13(void *arg)
{
	(void)arg;
	flk_unlock(flk, "z", 13, FLK_FLOCK, NULL);
	return NULL;
}

/* A waiter's downgrade (another thread of its owner got the key
 * exclusive) is in flight when that other thread lets the key go: the
 * waiter is not told it holds a lock that is gone; it waits on, and gets
 * the key of its own. */
static void test_convert_meets_unlock(void)
{
	int ra, rb;
	struct flk_req a = sreq("z", 13, false, false, NULL);
	struct flk_req b = sreq("z", 13, true, false, NULL);
	struct lock_record row;
	pthread_t t;

	setup();
	record_init(&row);
	__atomic_store_n(&around_begun, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&around_ended, 0, __ATOMIC_SEQ_CST);
	foreign_row("z");
	park(&a, &ra);
	park(&b, &rb);
	gate_close("z");
	pthread_mutex_lock(&gate_mu);
	gate_op = SF_PUT;
	gate_skip = 1; /* a's take passes; b's downgrade waits */
	pthread_mutex_unlock(&gate_mu);
	CHECK_INT(store_mem_delete_raw(mem, "z"), 0);
	CHECK_INT(wait_answer(&ra), 0);
	gate_wait_entered();
	CHECK_INT(pthread_create(&t, NULL, unlock_13, NULL), 0);
	usleep(50 * 1000); /* the holder is gone; its release waits */
	gate_release();
	pthread_join(t, NULL);
	CHECK_INT(wait_answer(&rb), 0);
	usleep(100 * 1000);
	CHECK(row_of("z", &row) && row.shared);
	CHECK_INT(arounds(), 1); /* the waiter's downgrade, too */
	one_unlock_frees("z", 13, FLK_FLOCK, &row);
	record_fini(&row);
	teardown();
}

static void test_conversions_and_getlk(void)
{
	struct flk_req x1 = sreq("c", 1, false, false, NULL);
	struct flk_req s1 = sreq("c", 1, true, false, NULL);
	struct flk_req s2 = sreq("c", 2, true, false, NULL);
	struct lock_holder h = holder();
	struct lock_record row;
	bool held, hs;
	int64_t pid;
	struct lock *lk;

	setup();
	record_init(&row);
	__atomic_store_n(&around_begun, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&around_ended, 0, __ATOMIC_SEQ_CST);
	/* Exclusive to shared: one write, and then others may share. */
	CHECK_INT(flk_lock(flk, &x1), 0);
	CHECK_INT(flk_getlk(flk, &GETLK("c", 2, true), &held, &hs, &pid), 0);
	CHECK(held && !hs);
	CHECK_INT(pid, getpid());
	CHECK_INT(flk_lock(flk, &s2), -EWOULDBLOCK);
	CHECK_INT(flk_lock(flk, &s1), 0);
	CHECK(row_of("c", &row) && row.shared && row.n_readers == 1);
	CHECK_INT(arounds(), 1); /* the file layer held its writes */
	CHECK_INT(flk_lock(flk, &s2), 0);
	/* F_GETLK: a share conflicts with a write lock only. */
	CHECK_INT(flk_getlk(flk, &GETLK("c", 3, true), &held, &hs, &pid), 0);
	CHECK(!held);
	CHECK_INT(flk_getlk(flk, &GETLK("c", 3, false), &held, &hs, &pid), 0);
	CHECK(held && hs);
	/* Shared to exclusive is not atomic: the share goes first, and the
	 * upgrade fails while another reader holds on. */
	CHECK_INT(flk_lock(flk, &x1), -EWOULDBLOCK);
	CHECK_INT(flk_getlk(flk, &GETLK("c", 2, false), &held, &hs, &pid), 0);
	CHECK(!held); /* only 2's own share is left */
	CHECK_INT(flk_unlock(flk, "c", 2, FLK_FLOCK, NULL), 0);
	CHECK(!row_of("c", &row));
	CHECK_INT(flk_lock(flk, &x1), 0);
	CHECK(row_of("c", &row) && !row.shared);
	CHECK_INT(flk_unlock(flk, "c", 1, FLK_FLOCK, NULL), 0);

	/* flock -s on a file that open(O_CREAT) acquired: downgraded. */
	CHECK_INT(lock_acquire(eng, "o", &h, &lk, NULL, NULL), 0);
	s1.key = "o";
	s1.handle_lock = lk;
	CHECK_INT(flk_lock(flk, &s1), 0);
	CHECK(row_of("o", &row) && row.shared);
	CHECK_INT(arounds(), 2);
	s2.key = "o";
	CHECK_INT(flk_lock(flk, &s2), 0);
	CHECK_INT(flk_unlock(flk, "o", 1, FLK_FLOCK, NULL), 0);
	CHECK_INT(flk_unlock(flk, "o", 2, FLK_FLOCK, NULL), 0);
	CHECK(!row_of("o", &row));
	lock_unref(eng, lk);
	record_fini(&row);
	teardown();
}

/* An open file description's fcntl lock (F_OFD_SETLK: its owner is the
 * open file, which no flush names) goes at that file's last close
 * (flk_release_handle), and a waiting request of another owner gets the
 * key; the release of another open file leaves a process's classic lock
 * alone. Before, nothing ever released it: the key stayed held while the
 * mount lived. */
static void test_ofd_lock_goes_at_release(void)
{
	struct flk_req ofd = sreq("ofd", 41, false, false, NULL);
	struct flk_req other = sreq("ofd", 42, false, false, NULL);
	struct flk_req classic = sreq("cl", 43, false, false, NULL);
	struct lock_record row;
	int h1, h2, req;

	setup();
	record_init(&row);
	ofd.kind = other.kind = classic.kind = FLK_POSIX;
	ofd.handle = &h1;
	classic.handle = &h2;
	CHECK_INT(flk_lock(flk, &ofd), 0);
	CHECK_INT(flk_lock(flk, &classic), 0);
	park(&other, &req);
	/* Another open file's last close: neither lock goes. */
	CHECK_INT(flk_release_handle(flk, "ofd", &h2), 0);
	CHECK_INT(flk_release_handle(flk, "cl", &h1), 0);
	CHECK(row_of("ofd", &row) && row_of("cl", &row));
	CHECK_INT(answer_of(&req), -1);
	/* Its own: the key goes to the waiter. */
	CHECK_INT(flk_release_handle(flk, "ofd", &h1), 0);
	for (int i = 0; i < 200 && answer_of(&req) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req), 0);
	CHECK_INT(flk_unlock(flk, "ofd", 42, FLK_POSIX, NULL), 0);
	CHECK(!row_of("ofd", &row));
	CHECK_INT(flk_unlock(flk, "cl", 43, FLK_POSIX, NULL), 0);
	CHECK(!row_of("cl", &row));
	record_fini(&row);
	teardown();
}

/* A flock lock is its open file's: the kernel names its owner by the open
 * file (struct file), which it reuses at once once freed, and sends the
 * closed file's release (which unlocks) in the background, so a new open
 * file of the same owner number may ask before that release comes. It
 * waits for the key, and the late release unlocks the closed file's lock
 * alone. Before, the new file's flock was granted as a no-op on the closed
 * one's lock, which the release then let go of: two holders. */
static void test_flock_owner_reused(void)
{
	struct flk_req old = sreq("reuse", 7, false, false, NULL);
	struct flk_req again = sreq("reuse", 7, false, false, NULL);
	struct lock_record row;
	int h1, h2, req;

	setup();
	record_init(&row);
	old.handle = &h1;
	again.handle = &h2;
	CHECK_INT(flk_lock(flk, &old), 0);
	CHECK_INT(flk_lock(flk, &again), -EWOULDBLOCK);
	park(&again, &req);
	usleep(100 * 1000);
	CHECK_INT(answer_of(&req), -1);
	/* The closed file's release: its lock goes, the new file's flock
	 * gets the key. */
	CHECK_INT(flk_unlock(flk, "reuse", 7, FLK_FLOCK, &h1), 0);
	CHECK_INT(wait_answer(&req), 0);
	CHECK(row_of("reuse", &row));
	/* A release of the closed file again leaves the new file's lock. */
	CHECK_INT(flk_unlock(flk, "reuse", 7, FLK_FLOCK, &h1), 0);
	CHECK(row_of("reuse", &row));
	CHECK_INT(flk_unlock(flk, "reuse", 7, FLK_FLOCK, &h2), 0);
	CHECK(!row_of("reuse", &row));
	record_fini(&row);
	teardown();
}

/* The same for an F_OFD_SETLK lock, whose owner is also the open file's
 * address: the new open file's request comes with the closed one's owner
 * number before that one's RELEASE. An fcntl owner may lock through
 * several open files (a process does), so the request is granted at once;
 * the lock then goes with the new file's release, not the closed one's.
 * Before, the late RELEASE let go of the lock the new file had just been
 * granted: another mount could take the key while it was held. */
static void test_ofd_owner_reused(void)
{
	struct flk_req old = sreq("oreuse", 9, false, false, NULL);
	struct flk_req again = sreq("oreuse", 9, false, false, NULL);
	struct lock_record row;
	int h1, h2;

	setup();
	record_init(&row);
	old.kind = again.kind = FLK_POSIX;
	old.handle = &h1;
	again.handle = &h2;
	CHECK_INT(flk_lock(flk, &old), 0);
	CHECK_INT(flk_lock(flk, &again), 0);
	/* The closed file's release comes late: the key stays held. */
	CHECK_INT(flk_release_handle(flk, "oreuse", &h1), 0);
	CHECK(row_of("oreuse", &row));
	CHECK_INT(flk_lock(flk, &again), 0); /* and is still the new file's */
	CHECK_INT(flk_release_handle(flk, "oreuse", &h2), 0);
	CHECK(!row_of("oreuse", &row));
	record_fini(&row);
	teardown();
}

/* F_GETLK on the open file that took the key with O_CREAT|O_EXCL: no
 * conflict (its F_SETLK is granted at once, adopting that lock); from
 * anyone else, the lock. Before, the asker's own lock was reported. */
static void test_getlk_own_create(void)
{
	struct lock_holder h = holder();
	struct flk_req own = GETLK("g", 61, false);
	bool held, hs;
	int64_t pid;
	struct lock *lk;

	setup();
	CHECK_INT(lock_acquire(eng, "g", &h, &lk, NULL, NULL), 0);
	own.handle_lock = lk;
	CHECK_INT(flk_getlk(flk, &own, &held, &hs, &pid), 0);
	CHECK(!held);
	CHECK_INT(flk_getlk(flk, &GETLK("g", 62, false), &held, &hs, &pid), 0);
	CHECK(held && !hs);
	CHECK_INT(pid, getpid());
	own.kind = FLK_POSIX;
	CHECK_INT(flk_lock(flk, &own), 0); /* and F_SETLK is granted */
	CHECK_INT(flk_unlock(flk, "g", 61, FLK_POSIX, NULL), 0);
	lock_unref(eng, lk);
	teardown();
}

/* The daemon stops with requests parked: one a signal interrupted is
 * answered EINTR, the others ENOLCK. EINTR without a signal pending
 * reached the caller as errno 512 (the kernel restarts an interrupted
 * lock request, ERESTARTSYS, which only a signal resolves). */
static void test_stop_answers_enolck(void)
{
	struct flk_req a = sreq("st", 51, false, false, NULL);
	struct flk_req b = sreq("st", 52, false, false, NULL);
	int req_a, req_b;

	setup();
	foreign_row("st");
	park(&a, &req_a);
	park(&b, &req_b);
	flk_interrupt(flk, &req_b);
	for (int i = 0; i < 200 && answer_of(&req_b) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req_b), EINTR);
	flk_stop(flk);
	CHECK_INT(answer_of(&req_a), ENOLCK);
	teardown();
}

static void test_writer_not_starved(void)
{
	struct mount m2; /* the other mount, on the same table */
	int reqw, req_late;
	struct flk_req w = sreq("m", 9, false, true, &reqw);
	struct flk_req a = sreq("m", 21, true, false, NULL);
	struct flk_req b = sreq("m", 22, true, false, NULL);
	struct flk_req late = sreq("m", 23, true, true, &req_late);
	struct lock_record row;
	bool held, hs;
	int64_t pid;
	int64_t t0;

	setup();
	mount_up(&m2, "other", "otherhost", NULL);
	record_init(&row);
	/* The other mount's readers hold "m": our F_GETLK sees a share. */
	CHECK_INT(flk_lock(m2.flk, &a), 0);
	CHECK_INT(flk_getlk(flk, &GETLK("m", 9, false), &held, &hs, &pid), 0);
	CHECK(held && hs);
	CHECK_INT(pid, 0);
	CHECK_INT(flk_getlk(flk, &GETLK("m", 9, true), &held, &hs, &pid), 0);
	CHECK(!held);
	/* Our writer waits, and marks the row at its first poll. */
	CHECK_INT(flk_lock(flk, &w), -EINPROGRESS);
	flk_arm(flk, &reqw);
	for (int i = 0; i < 300 && !(row_of("m", &row) && row.writer_id); i++)
		usleep(10 * 1000);
	CHECK(row.writer_id);
	CHECK_STR(row.writer_id, "me");
	/* Once the other mount's renewal has seen the mark (a heartbeat),
	 * its new readers wait too, though the mount holds the key shared:
	 * readers that overlap cannot keep the writer out. */
	usleep(700 * 1000);
	CHECK_INT(flk_lock(m2.flk, &b), -EWOULDBLOCK);
	CHECK_INT(flk_lock(m2.flk, &late), -EINPROGRESS);
	flk_arm(m2.flk, &req_late);
	t0 = clk_sys_mono_ms();
	CHECK_INT(flk_unlock(m2.flk, "m", 21, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&reqw), 0);
	printf("writer got the key %lld ms after the last reader left\n",
	       (long long)(clk_sys_mono_ms() - t0));
	CHECK(row_of("m", &row) && !row.shared && !row.writer_id);
	CHECK_INT(answer_of(&req_late), -1);
	CHECK_INT(flk_unlock(flk, "m", 9, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&req_late), 0);
	CHECK_INT(flk_unlock(m2.flk, "m", 23, FLK_FLOCK, NULL), 0);
	record_fini(&row);
	mount_down(&m2);
	teardown();
}

/* A waiter interrupted by a signal whose handler returns makes its
 * request again at once (the kernel restarts it after an SA_RESTART
 * handler; Python retries on EINTR): it keeps its place ahead of a waiter
 * that came after it, and its wait. It was queued anew, behind the later
 * waiter and with its wait starting over: a process a timer ticked every
 * 100 ms was passed by every later waiter on its mount and lost the mark
 * to every other mount (restart.t). */
static void test_restart_keeps_place(void)
{
	int req1, req1b, req2;
	struct flk_req w1 = sreq("rs", 1, false, true, &req1);
	struct flk_req w2 = sreq("rs", 2, false, true, &req2);

	setup();
	foreign_row("rs");
	CHECK_INT(flk_lock(flk, &w1), -EINPROGRESS);
	flk_arm(flk, &req1);
	usleep(30 * 1000);
	CHECK_INT(flk_lock(flk, &w2), -EINPROGRESS);
	flk_arm(flk, &req2);
	flk_interrupt(flk, &req1);
	CHECK_INT(answer_of(&req1), EINTR);
	w1.req = &req1b; /* the same owner's request again */
	CHECK_INT(flk_lock(flk, &w1), -EINPROGRESS);
	flk_arm(flk, &req1b);
	CHECK_INT(mem->ops->delete_lock(mem, "rs",
					"11111111-2222-3333-4444-555555555555",
					0, NULL, NULL),
		  0);
	CHECK_INT(wait_answer(&req1b), 0);
	CHECK_INT(answer_of(&req2), -1);
	CHECK_INT(flk_unlock(flk, "rs", 1, FLK_FLOCK, NULL), 0);
	CHECK_INT(wait_answer(&req2), 0);
	CHECK_INT(flk_unlock(flk, "rs", 2, FLK_FLOCK, NULL), 0);
	teardown();
}

static void *call_interrupt(void *arg)
{
	flk_interrupt(flk, arg);
	return NULL;
}

/* An interrupt of a writer that marked another owner's row returns while
 * the removal of its mark hangs (DynamoDB not answering): the removal is
 * a wait worker's. It was made by the interrupt's request thread, each
 * held an operation timeout: with every thread held so, the next
 * interrupt of the mount waited as long (intrstall probe, 10 s). */
static void test_interrupt_leaves_unmark_to_worker(void)
{
	int req;
	struct flk_req w = sreq("iu", 1, false, true, &req);
	struct lock_record row;
	pthread_t t;
	bool marked = false;

	setup();
	foreign_row("iu");
	park(&w, &req);
	record_init(&row);
	for (int i = 0; i < 200 && !marked; i++) {
		usleep(10 * 1000);
		record_fini(&row);
		marked = row_of("iu", &row) && row.next_id;
	}
	CHECK(marked);
	gate_close("iu");
	pthread_mutex_lock(&gate_mu);
	gate_op = SF_SHARE; /* the mark's removal hangs */
	gate_skip = 0;
	pthread_mutex_unlock(&gate_mu);
	CHECK_INT(pthread_create(&t, NULL, call_interrupt, &req), 0);
	for (int i = 0; i < 100 && answer_of(&req) < 0; i++)
		usleep(10 * 1000);
	CHECK_INT(answer_of(&req), EINTR);
	gate_wait_entered(); /* the removal is in flight */
	usleep(50 * 1000);
	CHECK(pthread_tryjoin_np(t, NULL) == 0); /* the interrupt returned */
	gate_release();
	pthread_join(t, NULL);
	for (int i = 0; i < 200 && marked; i++) {
		usleep(10 * 1000);
		record_fini(&row);
		marked = row_of("iu", &row) && row.next_id;
	}
	CHECK(!marked); /* the worker removed it */
	record_fini(&row);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_interrupt_during_first_attempt);
	CHECK_CASE(test_interrupt_during_granted_first_attempt);
	CHECK_CASE(test_blocking_waits_through_outage);
	CHECK_CASE(test_own_lock_ahead_of_waiters);
	CHECK_CASE(test_attempts_do_not_undo_grants);
	CHECK_CASE(test_nonblocking_behind_attempt);
	CHECK_CASE(test_sweep);
	CHECK_CASE(test_entry_freed_while_waiting);
	CHECK_CASE(test_slow_key_delays_no_other_wait);
	CHECK_CASE(test_batched_polls);
	CHECK_CASE(test_wait_cost_independent_of_held);
	CHECK_CASE(test_shared_local);
	CHECK_CASE(test_conversions_and_getlk);
	CHECK_CASE(test_waiters_of_one_owner);
	CHECK_CASE(test_waiters_of_one_owner_convert);
	CHECK_CASE(test_convert_meets_unlock);
	CHECK_CASE(test_writer_not_starved);
	CHECK_CASE(test_ofd_lock_goes_at_release);
	CHECK_CASE(test_flock_owner_reused);
	CHECK_CASE(test_ofd_owner_reused);
	CHECK_CASE(test_stop_answers_enolck);
	CHECK_CASE(test_getlk_own_create);
	CHECK_CASE(test_restart_keeps_place);
	CHECK_CASE(test_interrupt_leaves_unmark_to_worker);
	CHECK_DONE();
}
