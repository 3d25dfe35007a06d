/* lock_fair: the fair handoff of exclusive locks (doc/fair-handoff.md).
 * The in-memory store keeps the conditions store_ddb gives DynamoDB
 * (store_fair_checks.h, directly and with every write sent again after it
 * landed). Then three mounts (A, B, C: three engines, each behind its own
 * store_fault, on one store_mem and one fake clock): a waiter's mark
 * turns the holder's release into a reservation that only the marking
 * mount takes, by its RVN; a reservation or a mark whose mount stopped
 * waiting lapses after a lease of the observer's clock; and, the bound:
 * while A and B take the key again and again, waiting for it again the
 * moment they let go and polling as fast as anyone could, C, polling as a
 * flk waiter does, gets it within M - 1 = 2 turns of theirs and two polls
 * (the longest waiter goes next: each mark says how long its mount has
 * waited). */
#include <errno.h>
#include <unistd.h>

#include "check.h"
#include "lease.h"
#include "lock.h"
#include "lock_rows.h"
#include "store_fair_checks.h"
#include "store_fault.h"
#include "store_mem.h"

#define LEASE_MS 2000
#define TICK_MS	 10

static void test_store_rows(void)
{
	struct store *mem = store_mem_new();
	struct store_fault sf;

	CHECK(mem);
	store_fair_checks(mem, "direct/");
	store_fault_init(&sf, mem);
	store_fault_set_send_twice(&sf, 1);
	store_fair_checks(&sf.base, "twice/");
	store_free(mem);
}

/* ---- three mounts on one table ------------------------------------------ */

struct mount {
	struct store_fault sf;
	struct observe *obs;
	struct metrics met;
	struct lock_engine *e;
	char mark_v[RECORD_RVN_MAX]; /* its waiter's mark, as flk keeps it */
};

static struct clk_fake fclk;
static struct store *mem;
static struct mount A, B, C;

static void mount_up(struct mount *m, const char *owner)
{
	struct lock_config cfg = {
		.owner = owner,
		.host = owner,
		.lease_ms = LEASE_MS,
		.heartbeat_ms = LEASE_MS / 4,
		.safe_period_ms = LEASE_MS * 3 / 4,
		.hold = HOLD_UNLINK,
	};

	memset(m, 0, sizeof(*m));
	store_fault_init(&m->sf, mem);
	m->obs = observe_new(&fclk.clk, 0);
	metrics_init(&m->met);
	m->e = lock_engine_new(&cfg, &m->sf.base, m->obs, &fclk.clk, &m->met,
			       NULL);
	CHECK(m->obs && m->e);
}

static void setup(void)
{
	clk_fake_init(&fclk, 1790000000000LL);
	mem = store_mem_new();
	CHECK(mem);
	mount_up(&A, "A");
	mount_up(&B, "B");
	mount_up(&C, "C");
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

static void run_due(struct mount *m)
{
	for (int i = 0; i < 1000; i++)
		if (lease_step(m->e) > clk_mono_ms(&fclk.clk))
			return;
	CHECK(!"lease_step never settled");
}

/* Advances the clock in ticks; every mount's lease path runs. */
static void advance(int64_t ms)
{
	while (ms > 0) {
		int64_t d = ms < TICK_MS ? ms : TICK_MS;

		clk_fake_advance(&fclk, d);
		ms -= d;
		run_due(&A);
		run_due(&B);
		run_due(&C);
	}
}

static int excl(struct mount *m, const char *key, struct lock **lk)
{
	struct lock_holder h = {
		.pid = getpid(), .uid = 1000, .gid = 1000, .mode = 0644
	};

	strcpy(h.cmd, "flock");
	return lock_acquire(m->e, key, &h, lk, NULL, NULL);
}

static bool row_of(const char *key, struct lock_record *r)
{
	record_fini(r);
	return mem->ops->get_lock(mem, key, 0, r) == 0;
}

/* One poll of a waiter, as flk's makes it (flk_take.c): read the row;
 * acquire when it admits us (gone, lapsed, or reserved for us); else
 * mark it. 0 with *lk when taken. */
static int poll_once(struct mount *m, const char *key, struct lock **lk)
{
	struct lock_record r;
	int rc;

	record_init(&r);
	rc = lock_rows_get(m->e, key, &r);
	if (!rc && !lock_row_admits(m->e, &r, false,
				    lock_rows_judge(m->e, &r, NULL))) {
		lock_writer_mark(m->e, key, &r, m->mark_v);
		rc = -EEXIST;
	} else if (!rc || rc == -ENOENT) {
		rc = excl(m, key, lk);
	}
	record_fini(&r);
	return rc;
}

static void test_reservation(void)
{
	struct lock *a, *b, *c;
	struct lock_record r;

	setup();
	record_init(&r);
	CHECK_INT(excl(&A, "k", &a), 0);
	/* C waits: its poll marks A's row; the RVN stays. */
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	CHECK(row_of("k", &r) && r.next_id && !r.reserved_for);
	CHECK_STR(r.next_id, "C");
	/* B waits behind C's mark without marking. */
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	CHECK(row_of("k", &r) && !strcmp(r.next_id, "C"));
	/* A's renewals keep the mark; its release is a reservation. */
	advance(LEASE_MS / 2);
	CHECK_INT(lock_get_state(A.e, a), LOCK_HELD);
	CHECK(row_of("k", &r) && r.next_id);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK(row_of("k", &r) && r.reserved_for && !r.next_id);
	CHECK_STR(r.reserved_for, "C");
	CHECK_STR(r.owner, RECORD_RESERVED_OWNER);
	/* Nobody else may take it: not B, not A again. */
	CHECK_INT(excl(&B, "k", &b), -EEXIST);
	CHECK_INT(excl(&A, "k", &a), -EEXIST);
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	/* C takes it over (B's mark on the reservation goes with it). */
	CHECK_INT(poll_once(&C, "k", &c), 0);
	CHECK_INT(lock_get_state(C.e, c), LOCK_HELD);
	CHECK(row_of("k", &r) && !r.reserved_for);
	CHECK_STR(r.owner, "C");
	/* B marks C's row; C's release reserves it for B. */
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	CHECK_INT(lock_release(C.e, c), 0);
	lock_unref(C.e, c);
	CHECK(row_of("k", &r) && r.reserved_for);
	CHECK_STR(r.reserved_for, "B");
	CHECK_INT(poll_once(&B, "k", &b), 0);
	/* A waiter that gives up removes its mark: the release deletes. */
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	CHECK(row_of("k", &r) && r.next_id);
	lock_writer_unmark(C.e, "k", C.mark_v);
	CHECK(row_of("k", &r) && !r.next_id);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(B.e, b);
	CHECK(!row_of("k", &r));
	/* One that gives up after the release reserved the key for it gives
	 * the reservation back at once (nobody waits a lease for it). */
	CHECK_INT(excl(&A, "k", &a), 0);
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK(row_of("k", &r) && r.reserved_for);
	lock_writer_unmark(C.e, "k", C.mark_v);
	CHECK(!row_of("k", &r));
	CHECK_INT(excl(&B, "k", &b), 0);
	CHECK_INT(lock_release(B.e, b), 0);
	lock_unref(B.e, b);
	record_fini(&r);
	teardown();
}

static void test_stale(void)
{
	struct lock *a, *b, *c;
	struct lock_record r;

	setup();
	record_init(&r);
	/* C marks and then stops waiting without a word (killed): after a
	 * lease of B's clock its mark is stale and B replaces it. */
	CHECK_INT(excl(&A, "k", &a), 0);
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	CHECK(row_of("k", &r) && !strcmp(r.next_id, "C"));
	advance(LEASE_MS - TICK_MS);
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	CHECK(row_of("k", &r) && !strcmp(r.next_id, "C"));
	advance(2 * TICK_MS);
	CHECK_INT(poll_once(&B, "k", &b), -EEXIST);
	CHECK(row_of("k", &r) && !strcmp(r.next_id, "B"));
	/* B in turn goes quiet; A releases into B's reservation, which
	 * nobody takes: it lapses after a lease like a dead holder's row,
	 * and C then takes it over. */
	CHECK_INT(lock_release(A.e, a), 0);
	lock_unref(A.e, a);
	CHECK(row_of("k", &r) && !strcmp(r.reserved_for, "B"));
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	advance(LEASE_MS - TICK_MS);
	CHECK_INT(poll_once(&C, "k", &c), -EEXIST);
	advance(2 * TICK_MS);
	CHECK_INT(poll_once(&C, "k", &c), 0);
	CHECK_INT(lock_release(C.e, c), 0);
	lock_unref(C.e, c);
	record_fini(&r);
	teardown();
}

/* One poll of a waiter that has waited waited_ms and polls every
 * margin_ms (flk's mark_row: the longest waiter goes next). */
static int poll_waiter(struct mount *m, const char *key, int64_t waited_ms,
		       int64_t margin_ms, struct lock **lk)
{
	struct lock_record r;
	int rc;

	record_init(&r);
	rc = lock_rows_get(m->e, key, &r);
	if (!rc && !lock_row_admits(m->e, &r, false,
				    lock_rows_judge(m->e, &r, NULL))) {
		lock_waiter_mark(m->e, key, &r, m->mark_v, waited_ms,
				 margin_ms);
		rc = -EEXIST;
	} else if (!rc || rc == -ENOENT) {
		rc = excl(m, key, lk);
	}
	record_fini(&r);
	return rc;
}

/* A and B loop: each holds the key hold_ms, lets go and at once waits for
 * it again, polling every tick (as fast as anyone could: the worst case
 * for C); B has waited a second already when C starts. C polls every
 * poll_ms (flk's longest backoff). Returns C's wait, or -1 if it never got
 * the key within give_up_ms. */
static int64_t contend(int64_t hold_ms, int64_t poll_ms, int64_t give_up_ms)
{
	struct mount *ms[2] = { &A, &B };
	struct lock *held[2] = { NULL, NULL }, *c = NULL;
	int64_t t0 = clk_mono_ms(&fclk.clk), next_poll = t0, now;
	int64_t since[2] = { t0, t0 - 1000 }; /* A: holding; B: waiting */

	CHECK_INT(excl(&A, "hot", &held[0]), 0);
	for (now = t0; now - t0 < give_up_ms; now = clk_mono_ms(&fclk.clk)) {
		for (int i = 0; i < 2; i++) {
			if (held[i] && now - since[i] >= hold_ms) {
				CHECK_INT(lock_release(ms[i]->e, held[i]), 0);
				lock_unref(ms[i]->e, held[i]);
				held[i] = NULL;
				since[i] = now; /* waits again */
			} else if (!held[i] &&
				   !poll_waiter(ms[i], "hot", now - since[i],
						TICK_MS, &held[i])) {
				since[i] = now;
			}
		}
		if (now >= next_poll) {
			if (!poll_waiter(&C, "hot", now - t0, poll_ms, &c))
				break;
			next_poll = now + poll_ms;
		}
		advance(TICK_MS);
	}
	if (c) {
		CHECK_INT(lock_release(C.e, c), 0);
		lock_unref(C.e, c);
	}
	for (int i = 0; i < 2; i++) {
		if (held[i]) {
			CHECK_INT(lock_release(ms[i]->e, held[i]), 0);
			lock_unref(ms[i]->e, held[i]);
		}
	}
	return c ? now - t0 : -1;
}

/* The bound (doc/fair-handoff.md): with M mounts contending, a waiter
 * polling every P gets the key within (M - 1) * (H + P) + 2 * P, H the
 * longest hold: at most M - 1 turns of mounts that waited longer (here B),
 * each a hold and the poll that collects its reservation; one poll until
 * it has waited a poll longer than fresh waiters (its estimate of their
 * wait may be short by a poll), and its own poll collecting its
 * reservation. Here with a tick of slack per turn. */
static void test_bound(void)
{
	/* Holds shorter and longer than a heartbeat (the holder renews,
	 * moving the RVN under the mark), polls of 50 and 250 ms. */
	const int64_t holds[] = { 30, 100, 700, 1300 };
	const int64_t polls[] = { 50, 250 };

	for (size_t i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
		for (size_t j = 0; j < sizeof(polls) / sizeof(polls[0]); j++) {
			int64_t wait,
				bound = 2 * (holds[i] + polls[j] + TICK_MS) +
					2 * polls[j];

			setup();
			wait = contend(holds[i], polls[j], 30000);
			printf("hold %lld ms, poll %lld ms: C waited %lld ms "
			       "(bound %lld)\n",
			       (long long)holds[i], (long long)polls[j],
			       (long long)wait, (long long)bound);
			CHECK(wait >= 0);
			CHECK(wait <= bound);
			teardown();
		}
	}
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_store_rows);
	CHECK_CASE(test_reservation);
	CHECK_CASE(test_stale);
	CHECK_CASE(test_bound);
	CHECK_DONE();
}
