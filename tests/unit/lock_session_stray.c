/* lock_session_stray: rows that name a mount's own live session for a key
 * no lock of that mount holds (doc/session-leases.md, "Rows of our own
 * session that nobody holds"). Other owners respect such a row for as
 * long as the session is beaten, so the mount itself must remove it:
 * the cleanup of a lost lock's row outlasts 25 failed deletes in session
 * mode (and gives up after 20 in per-lock mode, as before); a row moved
 * by a write of ours whose answer was lost is deleted on its new version
 * by the release and by the cleanup; a lock found taken (fsync) while its
 * row still names our session has that row removed; a stray row met by an
 * acquire of ours (or a poll, as flk's) is taken over. Never one that a
 * lock of ours holds or is taking: a second acquire of the key while the
 * first one's write has landed but is not tracked yet is refused, and a
 * lost lock's cleanup leaves the row of the key's new holder alone.
 *
 * Two mounts on one store_mem and one fake clock, each behind its own
 * store_fault that counts its requests: A in session mode, B in either. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "lock.h"
#include "lock_rows.h"
#include "store_fault.h"
#include "store_mem.h"
#include "text.h"

#define LEASE_MS 3000
#define HB_MS	 500
#define SAFE_MS	 2000

struct mount {
	struct store_fault sf;
	struct observe *obs;
	struct metrics met;
	struct lock_engine *e;
	int fail_deletes; /* its next n row deletes fail (-ETIMEDOUT) */
	int fail_puts;	  /* its next n lock row puts fail, not landing */
	int refuse_puts;  /* its next n lock row puts are refused (never
			   * sent: a connection refused) */
	/* run (once) after its next lock row put landed */
	void (*after_put)(void);
	int ops[SF_SESSION_READ + 1]; /* its requests, by kind */
};

static struct clk_fake fclk;
static struct store *mem;
static struct mount A, B;

static int count_op(void *arg, enum store_fault_op op, const char *key)
{
	struct mount *m = arg;

	m->ops[op]++;
	if (op == SF_DELETE && m->fail_deletes > 0) {
		m->fail_deletes--;
		return -ETIMEDOUT;
	}
	if (op == SF_PUT && m->fail_puts > 0) {
		m->fail_puts--;
		return -ETIMEDOUT;
	}
	if (op == SF_PUT && m->refuse_puts > 0) {
		m->refuse_puts--;
		return -ECONNREFUSED;
	}
	return 0;
}

static void after_op(void *arg, enum store_fault_op op, const char *key, int rc)
{
	struct mount *m = arg;
	void (*f)(void) = m->after_put;

	if (op != SF_PUT || !f)
		return;
	m->after_put = NULL;
	f();
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

	memset(m, 0, sizeof(*m));
	store_fault_init(&m->sf, mem);
	m->sf.before = count_op;
	m->sf.after = after_op;
	m->sf.arg = m;
	m->obs = observe_new(&fclk.clk, 0);
	metrics_init(&m->met);
	m->e = lock_engine_new(&cfg, &m->sf.base, m->obs, &fclk.clk, &m->met,
			       NULL);
	CHECK(m->obs && m->e);
	CHECK_INT(lock_session_start(m->e), 0);
}

static void setup(bool b_session)
{
	clk_fake_init(&fclk, 1790000000000LL);
	mem = store_mem_new();
	CHECK(mem);
	mount_up(&A, "A", true);
	mount_up(&B, "B", b_session);
}

static void teardown(void)
{
	lock_engine_free(A.e);
	observe_free(A.obs);
	lock_engine_free(B.e);
	observe_free(B.obs);
	store_free(mem);
}

static void run_all(void *arg)
{
	engine_steps_due(A.e, &fclk.clk);
	engine_steps_due(B.e, &fclk.clk);
}

static void advance(int64_t ms)
{
	engine_steps_advance(&fclk, ms, run_all, NULL);
}

static bool row_exists(const char *key)
{
	struct lock_record r;
	bool has;

	record_init(&r);
	has = engine_steps_row(mem, key, &r);
	record_fini(&r);
	return has;
}

/* key's row is there, with RVN rvn. */
static void check_row_rvn(const char *key, const char *rvn)
{
	struct lock_record r;

	record_init(&r);
	CHECK(engine_steps_row(mem, key, &r));
	CHECK_STR(r.rvn, rvn);
	record_fini(&r);
}

/* key's row rewritten with RVN rvn and nothing else changed: it still
 * names A's session, as a write of A's own would leave it. */
static void move_row(const char *key, const char *rvn)
{
	struct lock_record r;

	record_init(&r);
	CHECK(engine_steps_row(mem, key, &r));
	CHECK(r.session != NULL);
	text_copy(r.rvn, sizeof(r.rvn), rvn);
	CHECK_INT(store_mem_put_raw(mem, &r), 0);
	record_fini(&r);
}

/* B takes key at once (the row is gone), and gives it back. */
static void b_takes(const char *key)
{
	struct lock *b;

	CHECK_INT(engine_steps_poll(B.e, key, &b), 0);
	CHECK_INT(lock_get_state(B.e, b), LOCK_HELD);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(B.e, b);
}

/* A's release of k is not confirmed, and the cleanup's deletes fail 25
 * times more (DynamoDB throttling deletes only): the cleanup goes on
 * while the session lives, with a bounded backoff, and the row goes.
 * It gave up after 20, leaving the key held by nobody for as long as A
 * ran. */
static void test_cleanup_outlasts_failing_deletes(void)
{
	struct lock *a;
	int64_t start, last = 0, gap = 0;
	int seen;

	setup(false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	advance(HB_MS);
	A.fail_deletes = 1 + 25; /* the release, then 25 cleanups */
	CHECK(lock_release(A.e, a) != 0);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_unref(A.e, a);
	start = clk_mono_ms(&fclk.clk);
	seen = A.ops[SF_DELETE];
	while (row_exists("k") && clk_mono_ms(&fclk.clk) < start + 120000) {
		advance(10);
		if (A.ops[SF_DELETE] != seen) {
			int64_t now = clk_mono_ms(&fclk.clk);

			if (last && now - last > gap)
				gap = now - last;
			last = now;
			seen = A.ops[SF_DELETE];
		}
	}
	printf("row gone %lld ms after the release, %d deletes, longest "
	       "wait %lld ms\n",
	       (long long)(clk_mono_ms(&fclk.clk) - start), A.ops[SF_DELETE],
	       (long long)gap);
	CHECK(!row_exists("k"));
	CHECK_INT(A.ops[SF_DELETE], 1 + 25 + 1);
	CHECK(gap <= LEASE_MS + 10); /* the backoff is bounded */
	b_takes("k");
	teardown();
}

/* Per-lock mode keeps its bound: 20 cleanups, then the row lapses by
 * observation. */
static void test_per_lock_cleanup_gives_up(void)
{
	struct lock *b;

	setup(false);
	CHECK_INT(engine_steps_excl(B.e, "p", &b), 0);
	B.fail_deletes = 1000;
	CHECK(lock_release(B.e, b) != 0);
	lock_unref(B.e, b);
	advance(60000);
	CHECK_INT(B.ops[SF_DELETE], 1 + 20);
	teardown();
}

/* A write of ours landed though its answer was lost, and we no longer
 * know its RVN: the release's delete is refused, yet the row still names
 * our session and nothing here holds the key. It is deleted on the
 * version read back; it was taken for another owner's and left behind. */
static void test_release_moved_row(void)
{
	struct lock *a;

	setup(true);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	move_row("k", "landed-unconfirmed");
	CHECK_INT(lock_release(A.e, a), 0);
	CHECK(!row_exists("k"));
	lock_unref(A.e, a);
	b_takes("k");
	teardown();
}

/* The same row met by the cleanup of a lock whose release was not
 * confirmed: deleted on the version read back. */
static void test_cleanup_moved_row(void)
{
	struct lock *a;

	setup(false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	move_row("k", "landed-unconfirmed");
	A.fail_deletes = 1;
	CHECK(lock_release(A.e, a) != 0);
	lock_unref(A.e, a);
	advance(HB_MS * 3);
	CHECK(!row_exists("k"));
	b_takes("k");
	teardown();
}

/* fsync finds another RVN in the row, none of our writes' (a write of
 * ours we lost track of; a data write whose answer was lost is adopted
 * instead: lock_session.c test_sync_after_lost_answer) and counts the
 * lock taken. The row names our session and is ours: it is cleaned up
 * (it was left, held by nobody). */
static void test_taken_row_of_ours_cleaned(void)
{
	struct lock *a;

	setup(false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	move_row("k", "untracked");
	CHECK_INT(lock_renew_sync(A.e, a), -EIO);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_unref(A.e, a);
	advance(HB_MS * 3);
	CHECK(!row_exists("k"));
	b_takes("k");
	teardown();
}

/* A row naming A's live session that no lock of A holds (an acquire's
 * write that landed after its lock was given up, a cleanup that could
 * not finish): A's next acquire of the key takes it over, by an acquire
 * and by a poll (flk's). Other owners still respect it. */
static void stray_row(const char *key)
{
	struct lock *a;
	struct lock_record r;

	CHECK_INT(engine_steps_excl(A.e, key, &a), 0);
	record_init(&r);
	CHECK(engine_steps_row(mem, key, &r));
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	text_copy(r.rvn, sizeof(r.rvn), "stray");
	CHECK_INT(store_mem_put_raw(mem, &r), 0);
	record_fini(&r);
}

/* After A let go of key: the unanswered write of its acquire lands
 * (stray_row makes such a row), B respects it, then A's orphan removes it
 * and B takes the key. */
static void late_row_goes(const char *key)
{
	struct lock *b;

	advance(HB_MS * 2);
	stray_row(key);
	CHECK_INT(engine_steps_poll(B.e, key, &b), -EEXIST);
	advance(LEASE_MS * 2);
	CHECK(!row_exists(key));
	b_takes(key);
}

static void test_stray_row_at_acquire(void)
{
	struct lock *a, *b;
	char rvn[RECORD_RVN_MAX];

	setup(true);
	stray_row("k");
	CHECK_INT(engine_steps_poll(B.e, "k", &b), -EEXIST); /* B respects it */
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	lock_current_rvn(A.e, a, rvn);
	check_row_rvn("k", rvn);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	/* A waiter's poll judges it lapsed and takes it. */
	stray_row("k");
	CHECK_INT(engine_steps_poll(A.e, "k", &a), 0);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	b_takes("k");
	teardown();
}

/* An acquire of A whose answer never came, DynamoDB out of reach for its
 * resolution too: A answers EIO, and the orphan's cleanup finds no row.
 * The write lands afterwards (a partition heals and delivers it), naming
 * A's live session while no lock of A holds the key (stray_row makes
 * such a row). The orphan stopped at "no row", so B respected the row for
 * as long as A ran. Now A looks at the key again, a growing wait apart,
 * for LOCK_LATE_WRITE_MS after the acquire: the row goes and B takes the
 * key; a lock of A holding the key meanwhile keeps its row; after that
 * time A stops looking. */
static void test_acquire_landing_late(void)
{
	struct lock *a, *b;
	int64_t t0;
	int deletes;

	setup(true);
	t0 = clk_mono_ms(&fclk.clk);
	A.fail_puts = 1000;
	CHECK_INT(engine_steps_excl(A.e, "late", &a), -EIO);
	A.fail_puts = 0;
	advance(HB_MS * 4);
	CHECK(!row_exists("late")); /* the cleanup found nothing */
	stray_row("late");	    /* held by A meanwhile, then the late row */
	CHECK_INT(engine_steps_poll(B.e, "late", &b), -EEXIST);
	advance(LEASE_MS * 2);
	CHECK(!row_exists("late"));
	b_takes("late");
	/* Held by A again: its row is left alone by the looks. */
	CHECK_INT(engine_steps_excl(A.e, "late", &a), 0);
	advance(LEASE_MS * 3);
	CHECK(row_exists("late"));
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	/* Bounded: no look once LOCK_LATE_WRITE_MS has passed. */
	advance(t0 + LOCK_LATE_WRITE_MS + LEASE_MS - clk_mono_ms(&fclk.clk));
	deletes = A.ops[SF_DELETE];
	printf("%d deletes in all; none more after %d min\n", deletes,
	       LOCK_LATE_WRITE_MS / 60000);
	advance(10 * 60 * 1000);
	CHECK_INT(A.ops[SF_DELETE], deletes);
	teardown();
}

/* The same acquire's write unanswered, A holding the key; then the key
 * is broken (root's allow_break deletes the row) and B takes it, so A
 * finds its lock taken and lets go of it. The unanswered write lands after
 * B released the key, naming A's live session: A's letting go left an
 * orphan that looks at the key, and the row goes; B takes the key again.
 * Before, a lost lock let go of watched for nothing. */
static void test_lost_acquire_landing_late(void)
{
	struct lock *a, *b;

	setup(true);
	A.fail_puts = 1; /* the first write: no answer, not landed yet */
	CHECK_INT(engine_steps_excl(A.e, "late4", &a), 0);
	CHECK_INT(store_mem_delete_raw(mem, "late4"), 0); /* broken */
	b_takes("late4");
	CHECK_INT(engine_steps_excl(B.e, "late4", &b), 0);
	CHECK_INT(lock_renew_sync(A.e, a), -EIO);
	CHECK_INT(lock_get_state(A.e, a), LOCK_LOST);
	lock_release(A.e, a); /* its holder lets go */
	lock_unref(A.e, a);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(B.e, b);
	late_row_goes("late4");
	teardown();
}

/* An acquire of A whose write was never sent (the connection refused:
 * DynamoDB down, or not reachable): A answers EIO at once, with no
 * resolution and no orphan, since nothing of it can land. Before, it was
 * taken for a write whose answer was lost: three writes more to resolve
 * it, then an orphan that looked at the key for 16 minutes. */
static void test_refused_acquire_leaves_nothing(void)
{
	struct lock *a;
	int deletes, puts;

	setup(true);
	A.refuse_puts = 1000;
	puts = A.ops[SF_PUT];
	CHECK_INT(engine_steps_excl(A.e, "refused", &a), -EIO);
	CHECK_INT(A.ops[SF_PUT] - puts, 1);
	A.refuse_puts = 0;
	deletes = A.ops[SF_DELETE];
	advance(LEASE_MS * 4);
	CHECK_INT(A.ops[SF_DELETE], deletes);
	CHECK(!row_exists("refused"));
	CHECK_INT(engine_steps_excl(A.e, "refused", &a), 0);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	b_takes("refused");
	teardown();
}

/* The same acquire's write unanswered, but its resolution answered: A
 * holds the key, and releases it. The unanswered write lands only then
 * (held up somewhere), naming A's live session: A's release left an orphan
 * that looks at the key for a while, and the row goes; B takes the key.
 * Before, nothing here knew of that write, and B waited for as long as A
 * ran. */
static void test_resolved_acquire_landing_late(void)
{
	struct lock *a;

	setup(true);
	A.fail_puts = 1; /* the first write: no answer, not landed yet */
	CHECK_INT(engine_steps_excl(A.e, "late2", &a), 0);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK(!row_exists("late2"));
	late_row_goes("late2");
	teardown();
}

/* The same, but A downgrades the lock to shared (flock LOCK_EX, then
 * LOCK_SH) before it releases it. The unanswered exclusive write could
 * not land on the shared row (its condition fails while the row is
 * there), but it lands after the release, naming A's live session: the
 * downgrade handed the watch of that write to an orphan, and the row
 * goes; B takes the key. Before, a shared lock's release watched
 * nothing. */
static void test_downgraded_acquire_landing_late(void)
{
	struct lock *a;

	setup(true);
	A.fail_puts = 1; /* the first write: no answer, not landed yet */
	CHECK_INT(engine_steps_excl(A.e, "late3", &a), 0);
	CHECK_INT(lock_downgrade(A.e, a), 0);
	CHECK(lock_is_shared(A.e, a));
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	/* The watch leaves the shared row alone while it is held. */
	advance(LEASE_MS * 2);
	CHECK(row_exists("late3"));
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK(!row_exists("late3"));
	late_row_goes("late3");
	teardown();
}

/* Never a row a lock of ours holds: a second acquire is refused and the
 * row judged live; a lost lock's cleanup, once the key was taken again
 * here (over its own row), leaves the new holder's row alone. */
static void test_held_row_left_alone(void)
{
	struct lock *a, *a2, *old;
	char rvn[RECORD_RVN_MAX];
	struct lock_record r;

	setup(false);
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	CHECK_INT(engine_steps_excl(A.e, "k", &a2), -EEXIST);
	record_init(&r);
	CHECK(engine_steps_row(mem, "k", &r));
	CHECK(!lock_rows_judge(A.e, &r, NULL));
	record_fini(&r);
	/* Lost (release not confirmed); its cleanup is not due yet. */
	A.fail_deletes = 1;
	CHECK(lock_release(A.e, a) != 0);
	old = a;
	CHECK_INT(engine_steps_excl(A.e, "k", &a),
		  0); /* over the lost lock's row */
	lock_current_rvn(A.e, a, rvn);
	advance(HB_MS * 4); /* the lost lock's cleanup */
	check_row_rvn("k", rvn);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	lock_unref(A.e, old);
	teardown();
}

/* Two acquires of one key on A: the first one's write has landed but
 * its lock is not tracked yet when the second finds the row. The row
 * names A's session and no lock holds it, but an acquire of it is in
 * flight: the second is refused, never given the key as well. */
static int second_rc;
static struct lock *second;

static void second_acquire(void)
{
	second_rc = engine_steps_excl(A.e, "k", &second);
}

static void test_acquire_in_flight(void)
{
	struct lock *a;
	char rvn[RECORD_RVN_MAX];

	setup(false);
	A.after_put = second_acquire;
	CHECK_INT(engine_steps_excl(A.e, "k", &a), 0);
	CHECK(A.after_put == NULL);
	CHECK_INT(second_rc, -EEXIST);
	CHECK(second == NULL);
	lock_current_rvn(A.e, a, rvn);
	check_row_rvn("k", rvn);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	teardown();
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_cleanup_outlasts_failing_deletes);
	CHECK_CASE(test_per_lock_cleanup_gives_up);
	CHECK_CASE(test_release_moved_row);
	CHECK_CASE(test_cleanup_moved_row);
	CHECK_CASE(test_taken_row_of_ours_cleaned);
	CHECK_CASE(test_stray_row_at_acquire);
	CHECK_CASE(test_held_row_left_alone);
	CHECK_CASE(test_acquire_in_flight);
	CHECK_CASE(test_acquire_landing_late);
	CHECK_CASE(test_resolved_acquire_landing_late);
	CHECK_CASE(test_downgraded_acquire_landing_late);
	CHECK_CASE(test_refused_acquire_leaves_nothing);
	CHECK_CASE(test_lost_acquire_landing_late);
	CHECK_DONE();
}
