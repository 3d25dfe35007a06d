/* lock_session: session leases (doc/session-leases.md). The in-memory
 * store keeps the conditions store_ddb gives DynamoDB
 * (store_session_checks.h, directly and with every heartbeat sent again
 * after it landed). Then mounts on one store_mem and one fake clock, each
 * behind its own store_fault that counts its requests: A (session mode)
 * holds many locks for one session write per period and none per lock; a
 * dead session's lock is not taken before a lease of the observer's
 * clock and is taken after it (fence, then takeover), by a mount in
 * either mode; A's late heartbeat then fails and every lock of the
 * session is lost; with A's heartbeats failing, trust ends at the last
 * confirmed send + safe_period by the clock alone; two observers racing
 * to fence and take over: exactly one wins; fsync is a heartbeat and a
 * read; a session deleted by hand; a restart with a fixed owner. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "lease.h"
#include "lock.h"
#include "lock_rows.h"
#include "store_fault.h"
#include "store_mem.h"
#include "store_session_checks.h"

#define LEASE_MS 3000
#define HB_MS	 500
#define SAFE_MS	 2000
#define TICK_MS	 10
#define N_LOCKS	 50

static void test_store_checks(void)
{
	struct store *m = store_mem_new();
	struct store_fault sf;

	CHECK(m);
	store_session_checks(m, "direct/");
	store_fault_init(&sf, m);
	store_fault_set_send_twice(&sf, 1);
	store_session_checks(&sf.base, "twice/");
	store_free(m);
}

/* ---- mounts on one table ---------------------------------------------- */

struct mount {
	struct store_fault sf;
	struct observe *obs;
	struct metrics met;
	struct lock_engine *e;
	bool session;
	bool stopped;		 /* its lease path does not run (stopped) */
	int fail_session;	 /* its session writes fail (-ETIMEDOUT) */
	int no_table;		 /* its session writes find no table */
	int fail_delete;	 /* its row deletes fail (-ETIMEDOUT) */
	void (*on_delete)(void); /* run (once) as its next delete is sent */
	void (*on_put)(void);	 /* run (once) as its next put is sent */
	const char *keep_key;	 /* set: session writes to other keys fail */
	int ops[SF_SESSION_READ + 1]; /* its requests, by kind */
	int lost;		      /* on_lost calls */
};

static struct clk_fake fclk;
static struct store *mem;
static struct mount A, B, C;

static int count_op(void *arg, enum store_fault_op op, const char *key)
{
	struct mount *m = arg;

	__atomic_add_fetch(&m->ops[op], 1, __ATOMIC_SEQ_CST);
	if (op == SF_SESSION && m->fail_session)
		return -ETIMEDOUT;
	if (op == SF_SESSION && m->no_table)
		return -ENXIO;
	if (op == SF_DELETE && m->fail_delete)
		return -ETIMEDOUT;
	if (op == SF_DELETE && m->on_delete) {
		void (*f)(void) = m->on_delete;

		m->on_delete = NULL;
		f();
	}
	if (op == SF_PUT && m->on_put) {
		void (*f)(void) = m->on_put;

		m->on_put = NULL;
		f();
	}
	if (op == SF_SESSION && m->keep_key && strcmp(key, m->keep_key))
		return -ETIMEDOUT;
	return 0;
}

static void on_lost(void *arg, struct lock *lk)
{
	struct mount *m = arg;

	__atomic_add_fetch(&m->lost, 1, __ATOMIC_SEQ_CST);
}

static void mount_up(struct mount *m, const char *owner, bool session)
{
	struct lock_config cfg = {
		.owner = owner,
		.host = owner,
		.lease_ms = LEASE_MS,
		.heartbeat_ms = HB_MS,
		.safe_period_ms = SAFE_MS,
		.hold = HOLD_UNLINK,
		.session = session,
	};
	struct lock_callbacks cb = { .on_lost = on_lost, .arg = m };

	memset(m, 0, sizeof(*m));
	m->session = session;
	store_fault_init(&m->sf, mem);
	m->sf.before = count_op;
	m->sf.arg = m;
	m->obs = observe_new(&fclk.clk, 0);
	metrics_init(&m->met);
	m->e = lock_engine_new(&cfg, &m->sf.base, m->obs, &fclk.clk, &m->met,
			       &cb);
	CHECK(m->obs && m->e);
	CHECK_INT(lock_session_start(m->e), 0);
}

static void setup(bool b_session, bool c_session)
{
	clk_fake_init(&fclk, 1790000000000LL);
	mem = store_mem_new();
	CHECK(mem);
	mount_up(&A, "A", true);
	mount_up(&B, "B", b_session);
	mount_up(&C, "C", c_session);
}

static void teardown(void)
{
	struct mount *ms[] = { &A, &B, &C };

	for (int i = 0; i < 3; i++) {
		lock_engine_free(ms[i]->e);
		observe_free(ms[i]->obs);
	}
	store_free(mem);
}

/* After each tick: every running mount's lease path. */
static void run_all(void *arg)
{
	struct mount *ms[] = { &A, &B, &C };

	for (int i = 0; i < 3; i++)
		if (!ms[i]->stopped)
			engine_steps_due(ms[i]->e, &fclk.clk);
}

static void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_all, NULL);
}

static int writes(struct mount *m)
{
	return m->ops[SF_PUT] + m->ops[SF_RENEW] + m->ops[SF_DELETE] +
	       m->ops[SF_SESSION];
}

static void keyname(char *out, size_t len, int i)
{
	snprintf(out, len, "k%d", i);
}

/* N session locks over several periods: one write per period in all
 * (the session's heartbeat), none per lock. A per-lock mount holding as
 * many writes N per period. */
static void test_one_write_per_period(void)
{
	struct lock *a[N_LOCKS], *b[N_LOCKS];
	int i, wa, wb, periods = 8;
	char key[16], bkey[16];

	setup(false, false);
	for (i = 0; i < N_LOCKS; i++) {
		keyname(key, sizeof(key), i);
		snprintf(bkey, sizeof(bkey), "b%d", i);
		CHECK_INT(engine_steps_excl(A.e, key, &a[i]), 0);
		CHECK_INT(engine_steps_excl(B.e, bkey, &b[i]), 0);
	}
	wa = writes(&A);
	wb = writes(&B);
	advance(periods * HB_MS);
	wa = writes(&A) - wa;
	wb = writes(&B) - wb;
	printf("writes over %d periods, %d locks: session %d, per lock %d\n",
	       periods, N_LOCKS, wa, wb);
	CHECK(wa >= periods - 1 && wa <= periods + 1);
	CHECK_INT(A.ops[SF_RENEW], 0);
	CHECK(wb >= N_LOCKS * (periods - 1));
	for (i = 0; i < N_LOCKS; i++) {
		CHECK_INT(lock_get_state(A.e, a[i]), LOCK_HELD);
		lock_unref(A.e, a[i]);
		lock_unref(B.e, b[i]);
	}
	teardown();
}

/* A dies (its lease path stops): B (observer_session) may not take its
 * key before a lease of B's clock, and takes it after (fence, then the
 * takeover); A's trust ended by then. A comes back: its late heartbeat
 * fails, every lock of its session is lost, and it never claims them
 * again; a new session lets it take new keys. */
static void dead_session(bool observer_session)
{
	struct lock *a[3], *b = NULL, *n = NULL;
	struct session_record sr;
	struct lock_record r;
	int64_t died, a_trust_end;
	char skey[128];
	int i, rc;

	setup(observer_session, false);
	for (i = 0; i < 3; i++) {
		char key[16];

		keyname(key, sizeof(key), i);
		CHECK_INT(engine_steps_excl(A.e, key, &a[i]), 0);
	}
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "k0", 0, &r), 0);
	CHECK(r.session != NULL);
	CHECK_INT(r.lease_ms, RECORD_SESSION_ROW_LEASE_MS);
	text_copy(skey, sizeof(skey), r.session);
	CHECK_STR(skey, RECORD_SESSION_PREFIX "A");
	advance(HB_MS * 3);
	/* A stops; its last confirmed heartbeat was at most a period ago. */
	A.stopped = true;
	died = clk_mono_ms(&fclk.clk);
	a_trust_end = died + SAFE_MS;
	while ((rc = engine_steps_poll(B.e, "k0", &b)) == -EEXIST) {
		CHECK(clk_mono_ms(&fclk.clk) < died + 2 * LEASE_MS);
		advance(50);
	}
	CHECK_INT(rc, 0);
	/* Never granted while A could still trust it. */
	CHECK(clk_mono_ms(&fclk.clk) >= a_trust_end);
	/* Not before a lease of B's observation. */
	CHECK(clk_mono_ms(&fclk.clk) >= died + LEASE_MS);
	printf("taken %lld ms after A stopped (lease %d)\n",
	       (long long)(clk_mono_ms(&fclk.clk) - died), LEASE_MS);
	CHECK_INT(mem->ops->get_session(mem, skey, 0, &sr), 0);
	CHECK(sr.dead);
	CHECK_INT(lock_get_state(B.e, b), LOCK_HELD);
	/* By A's clock its locks were lost already (the safe period). */
	CHECK_INT(lock_get_state(A.e, a[0]), LOCK_LOST);
	/* A comes back: its heartbeat is refused; all three are lost, told
	 * once each, and never claimed again. */
	A.stopped = false;
	advance(HB_MS * 2);
	for (i = 0; i < 3; i++)
		CHECK_INT(lock_get_state(A.e, a[i]), LOCK_LOST);
	CHECK_INT(A.lost, 3);
	CHECK_INT(engine_steps_excl(A.e, "k0", &n), -EEXIST); /* B's */
	/* A new session (another key) holds new keys. */
	CHECK_INT(engine_steps_excl(A.e, "fresh", &n), 0);
	record_fini(&r);
	CHECK_INT(mem->ops->get_lock(mem, "fresh", 0, &r), 0);
	CHECK(r.session && strcmp(r.session, skey));
	advance(HB_MS * 6);
	CHECK_INT(lock_get_state(A.e, n), LOCK_HELD);
	record_fini(&r);
	for (i = 0; i < 3; i++)
		lock_unref(A.e, a[i]);
	lock_unref(A.e, n);
	lock_unref(B.e, b);
	teardown();
}

static void test_dead_session_takeover(void)
{
	dead_session(true);
}

/* The observer's own mode does not matter: a per-lock mount judges a row
 * by the session it names. */
static void test_dead_session_takeover_per_lock_observer(void)
{
	dead_session(false);
}

/* A's heartbeats fail (unknown outcome): its locks are trusted until the
 * send time of the last confirmed one + safe_period, by the clock alone
 * (no lease step runs: nothing has to notice). */
static void test_stalled_beats(void)
{
	struct lock *a;
	int64_t last_ok;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS * 2);
	/* Run until a heartbeat has just been confirmed (sent this tick). */
	{
		int before = A.ops[SF_SESSION];

		while (A.ops[SF_SESSION] == before)
			advance(TICK_MS);
	}
	last_ok = clk_mono_ms(&fclk.clk);
	A.fail_session = 1;
	advance(SAFE_MS - TICK_MS * 2); /* failed beats meanwhile */
	CHECK(A.ops[SF_SESSION] > 0);
	A.stopped = true; /* no thread looks from now on */
	clk_fake_advance(&fclk, last_ok + SAFE_MS - 1 - clk_mono_ms(&fclk.clk));
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	clk_fake_advance(&fclk, 1);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_unref(A.e, a);
	teardown();
}

/* A session heartbeat that finds the table gone (ResourceNotFoundException)
 * loses every lock of the session at once, as a session item gone does:
 * it was retried as a passing failure until the safe period ended. */
static void test_table_gone(void)
{
	struct lock *a;
	int64_t t0;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS * 2);
	A.no_table = 1;
	t0 = clk_mono_ms(&fclk.clk);
	while (lock_get_state(A.e, a) == LOCK_HELD &&
	       clk_mono_ms(&fclk.clk) - t0 < SAFE_MS)
		advance(TICK_MS);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	CHECK(clk_mono_ms(&fclk.clk) - t0 <= HB_MS + TICK_MS);
	lock_unref(A.e, a);
	teardown();
}

/* A's heartbeats fail past the safe period (its lock lost), then
 * DynamoDB answers again but A cannot remove its row. The session whose
 * trust ended is abandoned, not beaten again: B takes the key once the
 * session stood still for a lease. Beaten again, it kept the row held for
 * as long as A ran. A's new session holds new keys. */
static void test_abandoned_session_rows_lapse(void)
{
	struct lock *a, *b = NULL, *n = NULL;
	int64_t back;
	int rc;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS * 2);
	A.fail_session = 1;
	A.fail_delete = 1;
	advance(SAFE_MS + HB_MS);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	A.fail_session = 0;
	back = clk_mono_ms(&fclk.clk);
	while ((rc = engine_steps_poll(B.e, "k", &b)) == -EEXIST &&
	       clk_mono_ms(&fclk.clk) < back + 4 * LEASE_MS)
		advance(50);
	CHECK_INT(rc, 0);
	printf("taken %lld ms after A's heartbeats got through again\n",
	       (long long)(clk_mono_ms(&fclk.clk) - back));
	CHECK_INT(lock_get_state(B.e, b), LOCK_HELD);
	CHECK_INT(engine_steps_excl(A.e, "fresh", &n), 0);
	advance(HB_MS * 4);
	CHECK_INT(lock_get_state(A.e, n), LOCK_HELD);
	lock_unref(A.e, a);
	lock_unref(A.e, n);
	lock_unref(B.e, b);
	teardown();
}

/* While A's release of k is in flight, A's session fails past the safe
 * period and is abandoned: the releasing lock is marked lost, then its
 * delete lands and it is released. It must leave the lost locks' index
 * then: it stayed there once freed, and the next acquire of k by the
 * same group read freed memory (ASan: heap-use-after-free in
 * lock_int_find_lost_locked, torture_session.t in CI). */
static void abandon_now(void)
{
	A.fail_session = 1;
	clk_fake_advance(&fclk, SAFE_MS + HB_MS);
	for (int i = 0; i < 4; i++) {
		clk_fake_advance(&fclk, TICK_MS);
		engine_steps_due(A.e, &fclk.clk);
	}
	A.fail_session = 0;
}

static void test_abandoned_while_releasing(void)
{
	struct lock *a, *n = NULL;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS * 2);
	A.on_delete = abandon_now;
	lock_release(A.e, a);
	CHECK(A.on_delete == NULL);
	CHECK(lock_get_state(A.e, a) != LOCK_HELD);
	lock_unref(A.e, a);
	advance(HB_MS * 4); /* a new session; the lost lock's cleanup */
	CHECK_INT(engine_steps_excl(A.e, "k", &n), 0);
	CHECK_INT(lock_get_state(A.e, n), LOCK_HELD);
	lock_unref(A.e, n);
	teardown();
}

/* A's acquire claims its session, then the session is abandoned (no
 * heartbeat confirmed for a safe period) while the acquire's put is in
 * flight; the put lands. The grant names a session no one trusts any
 * more: the acquire fails with EIO (it answered 0, for a lock already
 * lost, and logged it "fenced by another owner"), the row it wrote is
 * removed in the background, and the next acquire holds by the new
 * session. */
static void note_info(void *arg, const struct lock_info *li)
{
	int *n = arg;

	if (li->state != LOCK_RELEASED)
		(*n)++;
}

/* How many locks m shows (held, or lost and still open). */
static int shown(struct mount *m)
{
	int n = 0;

	lock_each(m->e, note_info, &n);
	return n;
}

/* The store's answer for key's row once the lease paths had up to 10 s
 * to remove it: -ENOENT when it went. */
static int row_after_cleanup(const char *key)
{
	struct lock_record r;
	int rc = 0;

	for (int i = 0; i < 100; i++) {
		record_init(&r);
		rc = mem->ops->get_lock(mem, key, 0, &r);
		record_fini(&r);
		if (rc == -ENOENT)
			break;
		advance(TICK_MS * 10);
	}
	return rc;
}

static void test_abandoned_while_acquiring(void)
{
	struct lock *a = NULL, *n = NULL;

	setup(false, false);
	A.on_put = abandon_now;
	CHECK_INT(engine_steps_excl(A.e, "k", &a), -EIO);
	CHECK(A.on_put == NULL);
	CHECK(a == NULL);
	CHECK_INT(shown(&A), 0); /* nothing shown as held or lost */
	/* Its row goes (the orphan's cleanup), so B can take k at once. */
	CHECK_INT(row_after_cleanup("k"), -ENOENT);
	CHECK_INT(engine_steps_excl(A.e, "k", &n), 0);
	CHECK_INT(lock_get_state(A.e, n), LOCK_HELD);
	advance(HB_MS * 4);
	CHECK_INT(lock_get_state(A.e, n), LOCK_HELD);
	lock_unref(A.e, n);
	teardown();
}

/* The same for a per-lock mount (B): its acquire's write is confirmed
 * only after a safe period (retries, throttling). The lock would be lost
 * at once: the acquire fails with EIO (it answered 0) and the row goes,
 * so C takes the key at once. */
static void past_safe_period(void)
{
	clk_fake_advance(&fclk, SAFE_MS + 100);
}

static void test_confirmed_past_safe_period(void)
{
	struct lock *b = NULL, *c = NULL;

	setup(false, false);
	B.on_put = past_safe_period;
	CHECK_INT(engine_steps_excl(B.e, "p", &b), -EIO);
	CHECK(B.on_put == NULL);
	CHECK(b == NULL);
	CHECK_INT(shown(&B), 0);
	CHECK_INT(row_after_cleanup("p"), -ENOENT);
	CHECK_INT(engine_steps_excl(C.e, "p", &c), 0);
	CHECK_INT(engine_steps_excl(B.e, "p", &b), -EEXIST);
	lock_unref(C.e, c);
	teardown();
}

struct racer {
	struct mount *m;
	pthread_barrier_t *go;
	int rc;
	struct lock *lk;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	r->rc = engine_steps_poll(r->m->e, "k", &r->lk);
	return NULL;
}

/* Two observers fence and take over at once: exactly one holds it. */
static void test_race(void)
{
	pthread_barrier_t go;
	struct racer rb = { &B, &go, 0, NULL }, rc = { &C, &go, 0, NULL };
	struct lock *a, *x;
	pthread_t tb, tc;

	setup(true, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS);
	A.stopped = true;
	/* Both see the session now, and again after a lease. */
	CHECK_INT(engine_steps_poll(B.e, "k", &x), -EEXIST);
	CHECK_INT(engine_steps_poll(C.e, "k", &x), -EEXIST);
	advance(LEASE_MS + 600); /* past the view's reads; B, C beat on */
	CHECK_INT(pthread_barrier_init(&go, NULL, 2), 0);
	CHECK_INT(pthread_create(&tb, NULL, race_main, &rb), 0);
	CHECK_INT(pthread_create(&tc, NULL, race_main, &rc), 0);
	pthread_join(tb, NULL);
	pthread_join(tc, NULL);
	pthread_barrier_destroy(&go);
	CHECK_INT((rb.rc == 0) + (rc.rc == 0), 1);
	CHECK_INT(rb.rc ? rb.rc : rc.rc, -EEXIST);
	if (rb.lk)
		lock_unref(B.e, rb.lk);
	if (rc.lk)
		lock_unref(C.e, rc.lk);
	lock_unref(A.e, a);
	teardown();
}

/* fsync of a session lock: one session heartbeat and one read, no write
 * of the row; once the row is another's, -EIO and lost. */
static void test_sync(void)
{
	struct lock *a;
	struct lock_record r;
	int s, g, w;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	s = A.ops[SF_SESSION];
	g = A.ops[SF_GET];
	w = A.ops[SF_RENEW] + A.ops[SF_PUT];
	CHECK_INT(lock_renew_sync(A.e, a), 0);
	CHECK_INT(A.ops[SF_SESSION], s + 1);
	CHECK_INT(A.ops[SF_GET], g + 1);
	CHECK_INT(A.ops[SF_RENEW] + A.ops[SF_PUT], w);
	/* Another client rewrites the row (an operator, by hand). */
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "k", 0, &r), 0);
	text_copy(r.rvn, sizeof(r.rvn), "someone-else");
	CHECK_INT(store_mem_put_raw(mem, &r), 0);
	CHECK_INT(lock_renew_sync(A.e, a), -EIO);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	record_fini(&r);
	lock_unref(A.e, a);
	teardown();
}

/* A data write of a session lock whose answer was lost (it landed: the
 * row carries that write's version, one of ours): sent again, the writer
 * is told it landed. When every try of it goes unanswered (the second is
 * refused on the first's version, adopted, and the third's answer is lost
 * too), the writer gets EIO and a later fsync finds the lock still ours,
 * never taken for stolen. */
static void test_sync_after_lost_answer(void)
{
	struct lock *a;
	struct lock_record r;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	store_fault_lose_next(&A.sf, 1);
	CHECK_INT(lock_modify_data(A.e, a, "x", 1, 0, -1, 16), 0);
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "k", 0, &r), 0);
	CHECK(r.has_data && r.data_len == 1 && r.data[0] == 'x');
	store_fault_lose_next(&A.sf, 3);
	CHECK_INT(lock_modify_data(A.e, a, "y", 1, 0, -1, 16), -EIO);
	CHECK_INT(mem->ops->get_lock(mem, "k", 0, &r), 0);
	CHECK(r.has_data && r.data_len == 1 && r.data[0] == 'y');
	record_fini(&r);
	CHECK_INT(lock_renew_sync(A.e, a), 0);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(A.lost, 0);
	/* Still ours: a release deletes the row. */
	CHECK_INT(lock_release(A.e, a), 0);
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "k", 0, &r), -ENOENT);
	record_fini(&r);
	lock_unref(A.e, a);
	teardown();
}

/* A session deleted by hand: A learns at its next heartbeat (lost); an
 * observer treats "absent" as a version that stands still, and takes
 * the key only after a lease. */
static void test_absent_session(void)
{
	struct lock *a, *b = NULL;
	int64_t gone;
	int rc;

	setup(true, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	A.stopped = true;
	CHECK_INT(store_mem_session_delete_raw(mem, RECORD_SESSION_PREFIX "A"),
		  0);
	gone = clk_mono_ms(&fclk.clk);
	while ((rc = engine_steps_poll(B.e, "k", &b)) == -EEXIST) {
		CHECK(clk_mono_ms(&fclk.clk) < gone + 2 * LEASE_MS);
		advance(50);
	}
	CHECK_INT(rc, 0);
	CHECK(clk_mono_ms(&fclk.clk) >= gone + LEASE_MS);
	A.stopped = false;
	advance(HB_MS * 2);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	teardown();
}

/* A restart with a fixed owner while the last session's item is still
 * there (kill -9): the new session takes another key, so that the old
 * one's rows are judged by the old one (and fenced once it stood still). */
static void test_fixed_owner_restart(void)
{
	struct mount again;
	struct lock *a, *n;
	struct lock_record r;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "old", &a), 0);
	mount_up(&again, "A", true);
	CHECK_INT(engine_steps_excl(again.e, "new", &n), 0);
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "new", 0, &r), 0);
	CHECK(r.session && !strncmp(r.session, RECORD_SESSION_PREFIX "A#",
				    strlen(RECORD_SESSION_PREFIX "A#")));
	record_fini(&r);
	lock_unref(again.e, n);
	lock_engine_free(again.e);
	observe_free(again.obs);
	lock_unref(A.e, a);
	teardown();
}

struct acquirer {
	struct mount *m;
	const char *key;
	struct lock *lk;
	int rc;
	int done; /* atomic */
};

static void *acquire_main(void *arg)
{
	struct acquirer *q = arg;

	q->rc = engine_steps_excl(q->m->e, q->key, &q->lk);
	__atomic_store_n(&q->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int done(struct acquirer *q)
{
	return __atomic_load_n(&q->done, __ATOMIC_SEQ_CST);
}

/* A's session item goes; its heartbeat learns it (every lock lost) and
 * the next session cannot be created yet (its creates fail). An acquire
 * in that gap waits for the next session (it was refused with EIO at
 * once) and holds by it; one whose deadline passes first gets EIO. */
static void test_acquire_between_sessions(void)
{
	struct acquirer q = { &A, "x", NULL, 0, 0 };
	struct acquirer late = { &A, "y", NULL, 0, 0 };
	struct timespec pause = { 0, 100 * 1000000L }, tick = { 0, 1000000L };
	struct lock_session_info si;
	struct lock_record r;
	struct lock *a;
	pthread_t t;
	int i;

	setup(false, false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	A.keep_key = RECORD_SESSION_PREFIX "A";
	CHECK_INT(store_mem_session_delete_raw(mem, RECORD_SESSION_PREFIX "A"),
		  0);
	for (i = 0; i < 200 && !A.lost; i++)
		advance(TICK_MS);
	CHECK_INT(A.lost, 1);
	lock_session_info(A.e, &si);
	CHECK(!si.live);
	/* The acquire waits while there is no session. */
	CHECK_INT(pthread_create(&t, NULL, acquire_main, &q), 0);
	nanosleep(&pause, NULL);
	CHECK(!done(&q));
	/* The next session is created: the acquire goes on and holds by it. */
	A.keep_key = NULL;
	for (i = 0; i < 2000 && !done(&q); i++) {
		advance(TICK_MS);
		nanosleep(&tick, NULL);
	}
	CHECK(done(&q));
	pthread_join(t, NULL);
	CHECK_INT(q.rc, 0);
	record_init(&r);
	CHECK_INT(mem->ops->get_lock(mem, "x", 0, &r), 0);
	CHECK(r.session && !strncmp(r.session, RECORD_SESSION_PREFIX "A#",
				    strlen(RECORD_SESSION_PREFIX "A#")));
	record_fini(&r);
	/* Once more, and no session comes before the acquire's deadline. */
	lock_session_info(A.e, &si);
	CHECK(si.live);
	A.keep_key = si.key; /* its heartbeats go, new sessions fail */
	CHECK_INT(store_mem_session_delete_raw(mem, si.key), 0);
	for (i = 0; i < 200 && A.lost < 2; i++)
		advance(TICK_MS);
	CHECK_INT(A.lost, 2); /* x, held by the second session */
	CHECK_INT(pthread_create(&t, NULL, acquire_main, &late), 0);
	nanosleep(&pause, NULL);
	CHECK(!done(&late));
	for (i = 0; i < 200 && !done(&late); i++) {
		advance(100); /* past the deadline (op_timeout, 10 s) */
		nanosleep(&tick, NULL);
	}
	for (i = 0; i < 2000 && !done(&late); i++)
		nanosleep(&tick, NULL);
	CHECK(done(&late));
	pthread_join(t, NULL);
	CHECK_INT(late.rc, -EIO);
	A.keep_key = NULL;
	lock_unref(A.e, a);
	lock_unref(A.e, q.lk);
	teardown();
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_store_checks);
	CHECK_CASE(test_one_write_per_period);
	CHECK_CASE(test_dead_session_takeover);
	CHECK_CASE(test_dead_session_takeover_per_lock_observer);
	CHECK_CASE(test_stalled_beats);
	CHECK_CASE(test_table_gone);
	CHECK_CASE(test_abandoned_session_rows_lapse);
	CHECK_CASE(test_abandoned_while_releasing);
	CHECK_CASE(test_abandoned_while_acquiring);
	CHECK_CASE(test_confirmed_past_safe_period);
	CHECK_CASE(test_race);
	CHECK_CASE(test_sync);
	CHECK_CASE(test_sync_after_lost_answer);
	CHECK_CASE(test_absent_session);
	CHECK_CASE(test_fixed_owner_restart);
	CHECK_CASE(test_acquire_between_sessions);
	CHECK_DONE();
}
