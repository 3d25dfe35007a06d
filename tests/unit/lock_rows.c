/* lock_rows: the engine's door to the store for the layers above it
 * (lock_rows.h): every request carries the engine's deadline (now +
 * op_timeout_ms on the engine's clock), never the request layer's
 * default (0); the results are the store's; and the one expiry rule: a row
 * seen with the same RVN for its whole lease on our clock has lapsed, a
 * new RVN restarts the count, and a lapsed row is what a directory's
 * create takes over; the lock rows of many keys read in one request of
 * the fault store, which still fails each key on its own. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "engine_steps.h"
#include "lock.h"
#include "lock_rows.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

#define OP_TIMEOUT_MS 7000

static struct clk_fake fclk;
static struct store *mem;
static struct store_fault sf;
static struct observe *obs;
static struct lock_engine *eng;

static void setup(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_UNLINK);

	cfg.op_timeout_ms = OP_TIMEOUT_MS;
	clk_fake_init(&fclk, 1790000000000LL);
	mem = store_mem_new();
	store_fault_init(&sf, mem);
	obs = observe_new(&fclk.clk, 0);
	eng = lock_engine_new(&cfg, &sf.base, obs, &fclk.clk, NULL, NULL);
	CHECK(mem && obs && eng);
}

static void teardown(void)
{
	engine_steps_free(eng, obs, mem);
}

static void foreign_row(const char *key, const char *rvn, int64_t lease_ms)
{
	engine_steps_foreign_row(mem, key, "other", rvn, lease_ms, 0);
}

static int count_row(void *arg, const struct store_row *row)
{
	(void)row;
	(*(int *)arg)++;
	return 0;
}

/* The deadline the last request carried: the engine's, from now. */
static void check_deadline(void)
{
	CHECK_INT(store_fault_last_deadline(&sf),
		  clk_mono_ms(&fclk.clk) + OP_TIMEOUT_MS);
}

static void test_requests_carry_the_engine_deadline(void)
{
	struct dir_record d = { 0 };
	struct store_lookup sl;
	struct lock_record r;
	int n = 0;

	setup();
	foreign_row("a", "rvn-1", 2000);
	record_init(&r);
	CHECK_INT(lock_rows_get(eng, "a", &r), 0);
	CHECK_STR(r.rvn, "rvn-1");
	check_deadline();
	record_fini(&r);
	record_init(&r);
	CHECK_INT(lock_rows_get(eng, "none", &r), -ENOENT);
	record_fini(&r);
	clk_fake_advance(&fclk, 123);

	store_lookup_init(&sl);
	CHECK_INT(lock_rows_lookup(eng, "a", &sl), 0);
	CHECK(sl.has_lock && !sl.has_dir);
	check_deadline();
	store_lookup_fini(&sl);

	d.key = "dir";
	d.mode = 0755;
	CHECK_INT(lock_rows_put_dir(eng, &d, false), 0);
	check_deadline();
	CHECK_INT(lock_rows_put_dir(eng, &d, false), -EEXIST);
	CHECK_INT(lock_rows_set_dir_mode(eng, "dir", 0700), 0);
	check_deadline();
	CHECK_INT(lock_rows_list(eng, "", count_row, &n), 0);
	CHECK_INT(n, 2);
	check_deadline();
	CHECK_INT(lock_rows_delete_dir(eng, "dir"), 0);
	check_deadline();
	CHECK_INT(lock_rows_delete_dir(eng, "dir"), -ENOENT);

	/* Breaking: only the row seen. */
	CHECK_INT(lock_rows_break(eng, "a", "rvn-0"), -ECANCELED);
	CHECK_INT(store_mem_lock_count(mem), 1);
	CHECK_INT(lock_rows_break(eng, "a", "rvn-1"), 0);
	check_deadline();
	CHECK_INT(store_mem_lock_count(mem), 0);
	teardown();
}

static void test_one_expiry_rule(void)
{
	struct observation ob;
	struct lock_record r;
	struct dir_record d = { 0 };
	char rvn[RECORD_RVN_MAX];

	setup();
	foreign_row("k", "rvn-1", 2000);
	record_init(&r);
	CHECK_INT(lock_rows_get(eng, "k", &r), 0);
	CHECK(!lock_rows_judge(eng, &r, &ob));
	CHECK_INT(ob.remaining_ms, 2000);
	CHECK(!lock_rows_lapsed_rvn(eng, "k", rvn));
	clk_fake_advance(&fclk, 1999);
	CHECK(!lock_rows_judge(eng, &r, NULL));
	clk_fake_advance(&fclk, 1);
	CHECK(lock_rows_judge(eng, &r, &ob));
	CHECK_INT(ob.remaining_ms, 0);
	CHECK(lock_rows_lapsed_rvn(eng, "k", rvn));
	CHECK_STR(rvn, "rvn-1");

	/* A new RVN restarts the count. */
	strcpy(r.rvn, "rvn-2");
	CHECK(!lock_rows_judge(eng, &r, NULL));
	CHECK(!lock_rows_lapsed_rvn(eng, "k", rvn));
	record_fini(&r);

	/* A directory's create takes over a lapsed lock, not a live one. */
	d.key = "k";
	d.mode = 0755;
	CHECK_INT(lock_rows_put_dir(eng, &d, true), -EEXIST);
	foreign_row("k", "rvn-2", 2000);
	clk_fake_advance(&fclk, 2000);
	CHECK_INT(lock_rows_put_dir(eng, &d, false), -EEXIST);
	CHECK_INT(lock_rows_put_dir(eng, &d, true), 0);

	/* Versions inside a row are judged by the same rule, apart. */
	CHECK(!lock_rows_judge_version(eng, "\xffwk", "v1", 1000, NULL));
	clk_fake_advance(&fclk, 1000);
	CHECK(lock_rows_judge_version(eng, "\xffwk", "v1", 1000, NULL));
	lock_rows_forget(eng, "\xffwk");
	CHECK(!lock_rows_judge_version(eng, "\xffwk", "v1", 1000, NULL));
	teardown();
}

/* The before hook: fails key "c" (-EIO), counts the reads it sees. */
static int reads_seen;

static int fail_c(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	if (op == SF_GET)
		reads_seen++;
	return strcmp(key, "c") ? 0 : -EIO;
}

static uint64_t rnd_top(uint64_t n)
{
	return n - 1;
}

/* What each of a, b, c and d reads: a row, none, c's fault, a row. */
static void check_abcd(const struct lock_record *outs, const int *rcs)
{
	CHECK_INT(rcs[0], 0);
	CHECK_STR(outs[0].rvn, "rvn-a");
	CHECK_INT(rcs[1], -ENOENT);
	CHECK_INT(rcs[2], -EIO);
	CHECK_INT(rcs[3], 0);
	CHECK_STR(outs[3].rvn, "rvn-d");
}

/* lock_rows_get_many through the fault store: one request (one latency,
 * the engine's deadline), but each key its own fault; through two fault
 * stores, the keys the outer one lets through go to the inner one's
 * get_locks and their answers come back to their own slots. */
static void test_get_many_faults_per_key(void)
{
	const char *const keys[] = { "a", "b", "c", "d" };
	struct lock_record outs[4];
	struct store_fault outer;
	int rcs[4], i;
	int64_t t0;

	setup();
	foreign_row("a", "rvn-a", 2000);
	foreign_row("c", "rvn-c", 2000);
	foreign_row("d", "rvn-d", 2000);
	sf.before = fail_c;
	store_fault_set_latency(&sf, &fclk, 10, rnd_top);
	for (i = 0; i < 4; i++)
		record_init(&outs[i]);
	t0 = clk_mono_ms(&fclk.clk);
	lock_rows_get_many(eng, keys, 4, outs, rcs);
	CHECK_INT(clk_mono_ms(&fclk.clk), t0 + 9); /* one request */
	CHECK_INT(store_fault_last_deadline(&sf), t0 + OP_TIMEOUT_MS);
	CHECK_INT(reads_seen, 4);
	check_abcd(outs, rcs);
	for (i = 0; i < 4; i++)
		record_fini(&outs[i]);

	/* Two layers: the inner store's get_locks gets a, b and d. */
	store_fault_set_latency(&sf, NULL, 0, NULL);
	sf.before = NULL;
	store_fault_init(&outer, &sf.base);
	outer.before = fail_c;
	reads_seen = 0;
	for (i = 0; i < 4; i++)
		record_init(&outs[i]);
	outer.base.ops->get_locks(&outer.base, keys, 4, 0, outs, rcs);
	CHECK_INT(reads_seen, 4);
	check_abcd(outs, rcs);
	for (i = 0; i < 4; i++)
		record_fini(&outs[i]);

	/* The link down: every key. */
	store_fault_set_down(&sf, 1);
	for (i = 0; i < 4; i++)
		record_init(&outs[i]);
	lock_rows_get_many(eng, keys, 4, outs, rcs);
	for (i = 0; i < 4; i++) {
		CHECK_INT(rcs[i], -ETIMEDOUT);
		record_fini(&outs[i]);
	}
	store_fault_set_down(&sf, 0);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_requests_carry_the_engine_deadline);
	CHECK_CASE(test_one_expiry_rule);
	CHECK_CASE(test_get_many_faults_per_key);
	CHECK_DONE();
}
