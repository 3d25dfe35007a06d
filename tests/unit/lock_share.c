/* lock_share: shared locks. The in-memory store keeps the conditions of
 * shared rows that store_ddb keeps in DynamoDB (store_share_checks.h, run
 * on both, directly, through store_fault, and with every write sent again
 * after it landed). Then the engine, three
 * mounts (A, B, C: three engines, each behind its own store_fault, on one
 * store_mem and one fake clock): readers join, renew their own entries
 * and leave, the last one deleting the row; a dead reader's entry is
 * removed by a live one after a lease of our clock; a waiting writer's
 * mark keeps new readers out, and a stale mark does not; a reader loses
 * its share by the clock and by theft like any holder; lost answers of
 * joins, renewals and leaves are resolved by the entry's version;
 * python-style rows and takeovers; fences; a downgrade. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "lock.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"
#include "store_share_checks.h"

static void test_store_rows(void)
{
	struct store *mem = store_mem_new();
	struct store_fault sf;

	CHECK(mem);
	store_share_checks(mem, "direct/");
	store_fault_init(&sf, mem);
	store_share_checks(&sf.base, "wrapped/");
	store_fault_set_send_twice(&sf, 1);
	store_share_checks(&sf.base, "twice/");
	store_free(mem);
}

/* ---- three mounts on one table ------------------------------------------ */

struct mount {
	struct store_fault sf;
	struct observe *obs;
	struct metrics met;
	struct lock_engine *e;
	int lost;
	bool dead; /* its lease path does not run (a killed daemon) */
};

static struct clk_fake fclk;
static struct store *mem;
static struct mount A, B, C;

static void on_lost(void *arg, struct lock *lk)
{
	(void)lk;
	((struct mount *)arg)->lost++;
}

static void mount_up(struct mount *m, const char *owner, int64_t lease_ms)
{
	struct lock_config cfg = {
		.owner = owner,
		.host = owner,
		.lease_ms = lease_ms,
		.heartbeat_ms = lease_ms / 4,
		.safe_period_ms = lease_ms * 3 / 4,
		.hold = HOLD_UNLINK,
	};
	struct lock_callbacks cb = { .on_lost = on_lost, .arg = m };

	memset(m, 0, sizeof(*m));
	store_fault_init(&m->sf, mem);
	m->obs = observe_new(&fclk.clk, 0);
	metrics_init(&m->met);
	m->e = lock_engine_new(&cfg, &m->sf.base, m->obs, &fclk.clk, &m->met,
			       &cb);
	CHECK(m->obs && m->e);
}

static void mount_down(struct mount *m)
{
	lock_engine_free(m->e);
	observe_free(m->obs);
}

static void setup(void)
{
	clk_fake_init(&fclk, 1790000000000LL);
	mem = store_mem_new();
	CHECK(mem);
	mount_up(&A, "A", 2000);
	mount_up(&B, "B", 2000);
	mount_up(&C, "C", 2000);
}

static void teardown(void)
{
	mount_down(&A);
	mount_down(&B);
	mount_down(&C);
	store_free(mem);
}

/* The live mounts' lease paths run what is due. */
static void run_due(void *arg)
{
	struct mount *all[] = { &A, &B, &C };

	(void)arg;
	for (int i = 0; i < 3; i++)
		if (!all[i]->dead)
			engine_steps_due(all[i]->e, &fclk.clk);
}

/* Advances the clock in 10 ms steps; the live mounts' lease paths run. */
static void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_due, NULL);
}

static struct lock_holder holder(void)
{
	return engine_steps_holder(getpid(), 0, "reader");
}

static int share(struct mount *m, const char *key, struct lock **lk)
{
	struct lock_holder h = holder();

	return lock_acquire_shared(m->e, key, &h, HOLD_UNLINK, lk, NULL, NULL);
}

static int excl(struct mount *m, const char *key, struct lock **lk)
{
	struct lock_holder h = holder();

	return lock_acquire(m->e, key, &h, lk, NULL, NULL);
}

/* The row of key as stored (false when there is none). */
static bool row_of(const char *key, struct lock_record *r)
{
	return engine_steps_row(mem, key, r);
}

static void test_readers_share(void)
{
	struct lock *a, *b, *c = NULL;
	struct lock_record r, cur;
	char rvn[RECORD_RVN_MAX];
	bool has = false;
	int puts;

	setup();
	record_init(&r);
	record_init(&cur);
	CHECK_INT(share(&A, "k", &a), 0);
	CHECK(lock_is_shared(A.e, a));
	CHECK(row_of("k", &r) && r.shared && r.n_readers == 1);
	CHECK_STR(r.owner, LOCK_SHARED_OWNER);
	CHECK_STR(r.readers[0].id, "A");
	CHECK_STR(r.readers[0].cmd, "reader");
	/* Our version is our entry's, not the row's RVN. */
	lock_current_rvn(A.e, a, rvn);
	CHECK_STR(rvn, r.readers[0].v);
	CHECK(strcmp(rvn, r.rvn));
	/* B joins (one refused put, one join), C's writer is refused. */
	puts = store_mem_count(mem, SMEM_PUT);
	CHECK_INT(share(&B, "k", &b), 0);
	CHECK_INT(store_mem_count(mem, SMEM_PUT), puts + 1);
	CHECK(row_of("k", &r) && r.n_readers == 2);
	{
		struct lock_holder h = holder();

		CHECK_INT(lock_acquire(C.e, "k", &h, &c, &cur, &has), -EEXIST);
		CHECK(has && cur.shared);
	}
	/* A second share of the same mount is the engine's one lock. */
	CHECK_INT(share(&A, "k", &c), -EEXIST);
	/* A writer's data is not a reader's. */
	CHECK_INT(lock_modify_data(A.e, a, "x", 1, 0, -1, 100), -EPERM);

	/* Both renew their own entries, and every renewal moves the row's
	 * RVN: C never judges it expired. */
	strcpy(rvn, r.rvn);
	for (int i = 0; i < 6; i++) {
		advance(1000);
		CHECK_INT(excl(&C, "k", &c), -EEXIST);
	}
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_get_state(B.e, b), LOCK_HELD);
	CHECK(row_of("k", &r) && r.n_readers == 2);
	CHECK(strcmp(rvn, r.rvn));
	CHECK(metrics_get(&A.met, MC_HEARTBEATS_OK) >= 10);
	CHECK(metrics_get(&B.met, MC_HEARTBEATS_OK) >= 10);
	CHECK_INT(A.lost + B.lost, 0);
	CHECK_INT(lock_renew_sync(A.e, a), 0);

	/* Leaving: the row stays while a reader is left, and goes with the
	 * last; then the writer gets it at once. */
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK(row_of("k", &r) && r.n_readers == 1);
	CHECK_STR(r.readers[0].id, "B");
	CHECK_INT(excl(&C, "k", &c), -EEXIST);
	CHECK_INT(lock_release(B.e, b), 0);
	CHECK(!row_of("k", &r));
	CHECK_INT(excl(&C, "k", &c), 0);
	/* And readers wait for the writer. */
	CHECK_INT(share(&A, "k", &a), -EEXIST);
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	CHECK_INT(lock_release(C.e, c), 0);
	lock_unref(C.e, c);
	record_fini(&r);
	record_fini(&cur);
	teardown();
}

static void test_dead_reader(void)
{
	struct lock *a, *b, *c;
	struct lock_record r;

	setup();
	record_init(&r);
	CHECK_INT(share(&A, "k", &a), 0);
	CHECK_INT(share(&B, "k", &b), 0);
	/* B's daemon is killed: its entry stands still, A keeps renewing
	 * (so the row never lapses) and removes B's entry once it stood
	 * still for a lease of A's clock, not before. */
	B.dead = true;
	advance(1900);
	CHECK(row_of("k", &r) && r.n_readers == 2);
	advance(1500);
	CHECK(row_of("k", &r) && r.n_readers == 1);
	CHECK_STR(r.readers[0].id, "A");
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	/* Its holder knew first: B's own trust ended with its safe period. */
	CHECK_INT(lock_get_state(B.e, b), LOCK_LOST);
	/* A leaves: the row goes with its last live reader. */
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK(!row_of("k", &r));
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	B.dead = false;

	/* Every reader dead: the row's RVN stands still, and after a lease
	 * a writer (or a python client) takes it over, as any lock. */
	CHECK_INT(share(&A, "j", &a), 0);
	CHECK_INT(share(&B, "j", &b), 0);
	A.dead = B.dead = true;
	CHECK_INT(excl(&C, "j", &c), -EEXIST);
	advance(1990);
	CHECK_INT(excl(&C, "j", &c), -EEXIST);
	advance(20);
	CHECK_INT(excl(&C, "j", &c), 0);
	CHECK(row_of("j", &r) && !r.shared);
	CHECK_INT(metrics_get(&C.met, MC_TAKEOVERS), 1);
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	lock_unref(C.e, c);
	A.dead = B.dead = false;
	record_fini(&r);
	teardown();
}

static void test_writer_mark(void)
{
	struct lock *a, *b, *c;
	struct lock_record r;
	char v[RECORD_RVN_MAX] = "", v2[RECORD_RVN_MAX] = "";

	setup();
	record_init(&r);
	CHECK_INT(share(&A, "k", &a), 0);
	/* C waits to write: it marks the row (the RVN stays), B may not
	 * join any more, A renews on. */
	CHECK(row_of("k", &r));
	CHECK_INT(lock_writer_mark(C.e, "k", &r, v), 0);
	CHECK(v[0]);
	CHECK(row_of("k", &r) && r.writer_id);
	CHECK_STR(r.writer_id, "C");
	CHECK(!lock_row_admits(B.e, &r, true, false));
	CHECK(!lock_row_admits(B.e, &r, false, false));
	CHECK_INT(share(&B, "k", &b), -EEXIST);
	/* B's writer waits behind C's mark, without marking. */
	CHECK_INT(lock_writer_mark(B.e, "k", &r, v2), -EEXIST);
	advance(1000);
	CHECK_INT(lock_writer_mark(C.e, "k", &r, v), 0); /* refreshed */
	advance(1000);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	/* The last reader leaves: the row stays for the marked writer (no
	 * reader takes it), and C takes it at once. */
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK(row_of("k", &r) && r.shared && !r.n_readers && r.writer_id);
	CHECK(lock_row_admits(C.e, &r, false, false));
	CHECK(!lock_row_admits(B.e, &r, false, false));
	CHECK_INT(share(&B, "k", &b), -EEXIST);
	CHECK_INT(excl(&C, "k", &c), 0);
	CHECK(row_of("k", &r) && !r.shared && !r.writer_id);
	CHECK_INT(lock_release(C.e, c), 0);
	lock_unref(A.e, a);
	lock_unref(C.e, c);

	/* A writer that stops waiting without removing its mark: after a
	 * lease of the reader's clock the mark is stale and the reader
	 * removes it and joins. */
	CHECK_INT(share(&A, "s", &a), 0);
	CHECK(row_of("s", &r));
	v[0] = '\0';
	CHECK_INT(lock_writer_mark(C.e, "s", &r, v), 0);
	CHECK_INT(share(&B, "s", &b), -EEXIST);
	advance(1990);
	CHECK_INT(share(&B, "s", &b), -EEXIST);
	advance(20);
	CHECK_INT(share(&B, "s", &b), 0);
	CHECK(row_of("s", &r) && r.n_readers == 2 && !r.writer_id);
	/* A writer that gives up removes its mark at once. */
	v[0] = '\0';
	CHECK_INT(lock_writer_mark(C.e, "s", &r, v), 0);
	CHECK(row_of("s", &r) && r.writer_id);
	lock_writer_unmark(C.e, "s", v);
	CHECK(row_of("s", &r) && !r.writer_id);
	/* A row held exclusively takes no writer mark: the waiter's mark
	 * there is the next mark of the fair handoff (lock_fair.c). */
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	CHECK_INT(excl(&A, "s", &a), 0);
	CHECK(row_of("s", &r));
	CHECK_INT(lock_writer_mark(C.e, "s", &r, v2), 0);
	CHECK(row_of("s", &r) && !r.writer_id && r.next_id);
	CHECK_STR(r.next_id, "C");
	lock_unref(A.e, a);
	record_fini(&r);
	teardown();
}

static void test_loss_while_shared(void)
{
	struct lock *a, *b;
	struct lock_record r;

	setup();
	record_init(&r);
	CHECK_INT(share(&A, "k", &a), 0);
	CHECK_INT(share(&B, "k", &b), 0);
	/* A's link goes down: its share ends by its clock, the holder is
	 * told; B holds on. */
	store_fault_set_down(&A.sf, 1);
	advance(1490);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	advance(20);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	CHECK_INT(A.lost, 1);
	CHECK_INT(lock_renew_sync(A.e, a), -EIO);
	CHECK_INT(lock_get_state(B.e, b), LOCK_HELD);
	/* Back up: A's stale entry is removed (its row is B's too), never
	 * renewed again. */
	store_fault_set_down(&A.sf, 0);
	advance(1000);
	CHECK(row_of("k", &r) && r.n_readers == 1);
	CHECK_STR(r.readers[0].id, "B");
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_unref(A.e, a);

	/* B's entry removed under it (another mount judged it dead, or an
	 * allow_break delete): its next renewal finds it gone: stolen. */
	CHECK(mem->ops->evict_reader(mem, "k", "B", r.readers[0].v, 0) == 0);
	CHECK_INT(lock_renew_sync(B.e, b), -EIO);
	CHECK_INT(lock_get_state(B.e, b), LOCK_LOST);
	CHECK_INT(B.lost, 1);
	/* Its release leaves the row (someone else's by now) alone. */
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(B.e, b);
	record_fini(&r);
	teardown();
}

/* A store_fault before hook: counts the writes of a mount. */
static int count_writes(void *arg, enum store_fault_op op, const char *key)
{
	(void)key;
	if (op == SF_PUT || op == SF_DELETE || op == SF_SHARE || op == SF_RENEW)
		(*(int *)arg)++;
	return 0;
}

static void test_ambiguous(void)
{
	struct lock *a, *b;
	struct lock_record r;
	char v[RECORD_RVN_MAX];

	setup();
	record_init(&r);
	/* A create whose answer is lost, then a join whose answer is lost:
	 * both are found by the entry's version and held. */
	store_fault_lose_next(&A.sf, 1);
	CHECK_INT(share(&A, "k", &a), 0);
	store_fault_lose_next(&B.sf, 1);
	CHECK_INT(share(&B, "k", &b), 0);
	CHECK(row_of("k", &r) && r.n_readers == 2);
	/* A renewal that landed unanswered is sent again, and the row's
	 * entry found ours. */
	store_fault_lose_next(&A.sf, 1);
	CHECK_INT(lock_renew_sync(A.e, a), 0);
	CHECK(row_of("k", &r));
	lock_current_rvn(A.e, a, v);
	CHECK_STR(v, record_reader_find(&r, "A")->v);
	/* One whose every try goes unanswered (the second is refused on the
	 * first's version, adopted, and the third's answer is lost too) is
	 * adopted by the next renewal. */
	store_fault_lose_next(&A.sf, 3);
	CHECK_INT(lock_renew_sync(A.e, a), -EIO);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK(row_of("k", &r));
	lock_current_rvn(A.e, a, v);
	CHECK(strcmp(v, record_reader_find(&r, "A")->v)); /* not known yet */
	CHECK_INT(lock_renew_sync(A.e, a), 0);
	CHECK(row_of("k", &r));
	lock_current_rvn(A.e, a, v);
	CHECK_STR(v, record_reader_find(&r, "A")->v);
	advance(2000);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(A.lost, 0);
	/* A leave whose answer is lost: not trusted any more, and the
	 * entry is gone. */
	store_fault_lose_next(&A.sf, 1);
	CHECK_INT(lock_release(A.e, a), -ETIMEDOUT);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	CHECK(row_of("k", &r) && r.n_readers == 1);
	lock_unref(A.e, a);
	/* A share while DynamoDB refuses connections: EIO, and since nothing
	 * of it left, no write follows later (no orphan to remove an entry
	 * of ours). */
	{
		struct lock *c;
		int writes = 0;

		store_fault_set_down(&C.sf, 2);
		CHECK_INT(share(&C, "refused", &c), -EIO);
		store_fault_set_down(&C.sf, 0);
		C.sf.before = count_writes;
		C.sf.arg = &writes;
		advance(6000);
		C.sf.before = NULL;
		C.sf.arg = NULL;
		CHECK_INT(writes, 0);
		CHECK(!row_of("refused", &r));
	}
	/* A leave while DynamoDB is away: the entry goes when it is back. */
	store_fault_set_down(&B.sf, 1);
	CHECK(lock_release(B.e, b) < 0);
	store_fault_set_down(&B.sf, 0);
	CHECK(row_of("k", &r) && r.n_readers == 1);
	advance(1000);
	CHECK(!row_of("k", &r));
	lock_unref(B.e, b);
	/* A join none of whose answers comes back: not held (-EIO), and
	 * the entry it left is removed once the store answers again. */
	CHECK_INT(share(&C, "j", &a), 0);
	store_fault_set_lose_replies(&B.sf, 1);
	CHECK_INT(share(&B, "j", &b), -EIO);
	CHECK(row_of("j", &r) && r.n_readers == 2);
	store_fault_set_lose_replies(&B.sf, 0);
	advance(1000);
	CHECK(row_of("j", &r) && r.n_readers == 1);
	CHECK_STR(r.readers[0].id, "C");
	CHECK_INT(lock_release(C.e, a), 0);
	lock_unref(C.e, a);
	CHECK(!row_of("j", &r));
	record_fini(&r);
	teardown();
}

/* A store_fault before hook: each write of a mount takes 4 s (a request
 * that runs until it times out), and the deadline each carried is kept. */
struct slow_writes {
	struct store_fault *sf;
	int n;
	int64_t deadlines[8];
};

static int take_4s(void *arg, enum store_fault_op op, const char *key)
{
	struct slow_writes *w = arg;

	(void)key;
	if (op != SF_PUT && op != SF_SHARE)
		return 0;
	if (w->n < 8)
		w->deadlines[w->n] = store_fault_last_deadline(w->sf);
	w->n++;
	clk_fake_advance(&fclk, 4000);
	return 0;
}

/* A shared acquire is one user's request, bounded by one op timeout (10 s
 * here): its writes all carry the first one's deadline, and none is sent
 * after it. Each had a deadline of its own before, and six writes that
 * each ran until they timed out took a minute. */
static void test_one_deadline(void)
{
	struct slow_writes w = { .sf = &C.sf };
	struct lock *c;
	struct lock_record r;
	int64_t t0;
	int i;

	setup();
	record_init(&r);
	store_fault_set_down(&C.sf, 1);
	C.sf.before = take_4s;
	C.sf.arg = &w;
	t0 = clk_mono_ms(&fclk.clk);
	CHECK_INT(share(&C, "slow", &c), -EIO);
	C.sf.before = NULL;
	C.sf.arg = NULL;
	store_fault_set_down(&C.sf, 0);
	CHECK_INT(w.n, 3); /* sent at 0, 4 and 8 s */
	CHECK(clk_mono_ms(&fclk.clk) - t0 <= 12000);
	for (i = 1; i < w.n && i < 8; i++)
		CHECK_INT(w.deadlines[i], w.deadlines[0]);
	CHECK_INT(w.deadlines[0], t0 + 10000);
	/* Nothing of it landed: the key is free for another mount. */
	advance(1000);
	CHECK(!row_of("slow", &r));
	CHECK_INT(excl(&B, "slow", &c), 0);
	CHECK_INT(lock_release(B.e, c), 0);
	lock_unref(B.e, c);
	record_fini(&r);
	teardown();
}

static void test_other_clients(void)
{
	struct lock *a, *b;
	struct lock_record r;
	uint64_t f;

	setup();
	record_init(&r);
	/* A python client's lock: readers wait for it like writers, and take
	 * it over only once its RVN stood still for its lease. */
	engine_steps_foreign_row(mem, "p", "python-host", "py1", 2000, 0);
	CHECK_INT(share(&A, "p", &a), -EEXIST);
	advance(2010);
	CHECK_INT(share(&A, "p", &a), 0);
	CHECK(row_of("p", &r) && r.shared);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);

	/* Fences: a writer's is one more than any before; readers get the
	 * current one; the next writer's is greater than both. */
	CHECK_INT(excl(&A, "f", &a), 0);
	CHECK_INT(lock_fence(A.e, a, &f), 0);
	CHECK_INT((int)f, 1);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK_INT(share(&A, "f", &a), 0);
	CHECK_INT(share(&B, "f", &b), 0);
	CHECK_INT(lock_fence(A.e, a, &f), 0);
	CHECK_INT((int)f, 1);
	CHECK_INT(lock_fence(B.e, b, &f), 0);
	CHECK_INT((int)f, 1);
	CHECK(row_of("f", &r));
	CHECK_INT((int)record_reader_find(&r, "B")->fence, 1);
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(A.e, a);
	lock_unref(B.e, b);
	CHECK_INT(excl(&C, "f", &a), 0);
	CHECK_INT(lock_fence(C.e, a, &f), 0);
	CHECK_INT((int)f, 2);
	lock_unref(C.e, a);
	/* A reader before any writer: fence 0 (none yet). */
	CHECK_INT(share(&A, "g", &a), 0);
	CHECK_INT(lock_fence(A.e, a, &f), 0);
	CHECK_INT((int)f, 0);
	lock_unref(A.e, a);
	record_fini(&r);
	teardown();
}

static void test_downgrade_and_leases(void)
{
	struct lock *a, *b;
	struct lock_record r;
	struct mount D;

	setup();
	record_init(&r);
	/* A writer downgrades in one write on its own RVN: readers may join
	 * after, writers still may not. */
	CHECK_INT(excl(&A, "k", &a), 0);
	CHECK_INT(share(&B, "k", &b), -EEXIST);
	CHECK_INT(lock_modify_data(A.e, a, "hello", 5, 0, -1, 64), 0);
	CHECK_INT(lock_downgrade(A.e, a), 0);
	CHECK(lock_is_shared(A.e, a));
	/* The writer's data goes with the row, unchanged by readers. */
	CHECK(row_of("k", &r) && r.shared && r.n_readers == 1);
	CHECK(r.has_data && r.data_len == 5 && !memcmp(r.data, "hello", 5));
	CHECK_INT(lock_modify_data(A.e, a, "x", 1, 0, -1, 64), -EPERM);
	CHECK_INT(share(&B, "k", &b), 0);
	advance(2500);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_downgrade(A.e, a), 0); /* already shared */
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK(row_of("k", &r) && r.n_readers == 1 && r.has_data &&
	      r.data_len == 5 && !memcmp(r.data, "hello", 5));
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(A.e, a);
	lock_unref(B.e, b);

	/* A downgrade writes over its own row only: a row broken meanwhile
	 * (deleted by hand) is not brought back as a shared one; the lock
	 * is lost. */
	CHECK_INT(excl(&A, "gone", &a), 0);
	CHECK_INT(store_mem_delete_raw(mem, "gone"), 0);
	CHECK_INT(lock_downgrade(A.e, a), -EIO);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	CHECK(!row_of("gone", &r));
	lock_release(A.e, a);
	lock_unref(A.e, a);

	/* A reader of a longer lease raises the row's lease, so that no
	 * observer judges it dead between its renewals; a shorter one
	 * leaves it. */
	mount_up(&D, "D", 8000);
	{
		struct lock_holder h = holder();

		CHECK_INT(share(&A, "l", &a), 0);
		CHECK_INT(lock_acquire_shared(D.e, "l", &h, HOLD_UNLINK, &b,
					      NULL, NULL),
			  0);
		CHECK(row_of("l", &r) && r.lease_ms == 8000);
		CHECK_INT(lock_release(A.e, a), 0);
		lock_unref(A.e, a);
		CHECK_INT(share(&A, "l", &a), 0);
		CHECK(row_of("l", &r) && r.lease_ms == 8000);
	}
	lock_unref(A.e, a);
	lock_unref(D.e, b);
	mount_down(&D);
	record_fini(&r);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_store_rows);
	CHECK_CASE(test_readers_share);
	CHECK_CASE(test_dead_reader);
	CHECK_CASE(test_writer_mark);
	CHECK_CASE(test_loss_while_shared);
	CHECK_CASE(test_ambiguous);
	CHECK_CASE(test_one_deadline);
	CHECK_CASE(test_other_clients);
	CHECK_CASE(test_downgrade_and_leases);
	CHECK_DONE();
}
