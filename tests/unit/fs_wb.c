/* fs_wb: how long the write-back layer keeps a failed data write's error
 * for the lock's holder, on the engine's fake clock (no flusher thread:
 * a write sweeps once more than 64 entries exist). The error stays while
 * the lock is held, however long (it was forgotten after 60 s, and the
 * holder's close then answered 0 with its data not in the table), and is
 * forgotten once the lock is released. And what a truncate costs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine_fixture.h"
#include "fs_wb.h"
#include "log.h"

#define N_LOCKS 66 /* more entries than a sweep waits for */

static struct store_fault sf;
static int fail_renew;

static int renews; /* the item writes (a data write is one) */

static int fail_hook(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op == SF_RENEW)
		renews++;
	return op == SF_RENEW && fail_renew ? -EIO : 0;
}

/* Writes a byte to every lock but the first: entries enough for the next
 * write to sweep. */
static void fill(struct fs_wb *wb, struct lock **lks)
{
	for (int i = 1; i < N_LOCKS; i++)
		CHECK_INT(fs_wb_modify(wb, lks[i], "x", 1, 0, -1), 0);
}

static void test_error_kept_while_held(void)
{
	struct lock_config cfg = long_lease(HOLD_UNLINK);
	struct lock_holder h = holder(getpgrp());
	struct lock *lks[N_LOCKS];
	struct fs_wb *wb;
	char key[16];

	setup(HOLD_UNLINK);
	setup_behind(&sf, &cfg);
	sf.before = fail_hook;
	for (int i = 0; i < N_LOCKS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(lock_acquire(eng, key, &h, &lks[i], NULL, NULL), 0);
	}
	wb = fs_wb_new(eng, &fclk.clk, 100, 65536);
	CHECK(wb != NULL);
	CHECK_INT(fs_wb_modify(wb, lks[0], "a", 1, 0, -1), 0); /* through */
	CHECK_INT(fs_wb_modify(wb, lks[0], "b", 1, 1, -1), 0); /* buffered */
	fail_renew = 1;
	CHECK_INT(fs_wb_flush(wb, lks[0]), -EIO);
	fail_renew = 0;
	fill(wb, lks);
	advance(61000); /* renewed all along: still held */
	CHECK_INT(lock_get_state(eng, lks[0]), LOCK_HELD);
	CHECK_INT(fs_wb_modify(wb, lks[1], "y", 1, 0, -1), 0); /* sweeps */
	CHECK_INT(fs_wb_flush(wb, lks[0]), -EIO); /* "b" is not stored */
	/* Released: nobody is left to tell, the entry goes. */
	CHECK_INT(lock_release(eng, lks[0]), 0);
	advance(61000);
	fill(wb, lks);
	CHECK_INT(fs_wb_modify(wb, lks[1], "z", 1, 0, -1), 0); /* sweeps */
	CHECK_INT(fs_wb_flush(wb, lks[0]), 0); /* no entry: nothing to say */
	fs_wb_free(wb);
	for (int i = 0; i < N_LOCKS; i++) {
		if (i)
			lock_release(eng, lks[i]);
		lock_unref(eng, lks[i]);
	}
	teardown();
}

/* The lock's data as the engine has it (what the table has). */
static void check_stored(struct lock *lk, const char *want)
{
	struct lock_record rec;
	enum lock_state state;

	record_init(&rec);
	CHECK_INT(lock_snapshot(eng, lk, &rec, &state), 0);
	CHECK_INT((int)rec.data_len, (int)strlen(want));
	CHECK(!rec.data_len || !memcmp(rec.data, want, rec.data_len));
	record_fini(&rec);
}

/* A truncate waits for the write that follows it (an O_TRUNC open, then
 * a write: one item write, where the truncate was written through on its
 * own), and a truncate to the length the data has writes nothing. */
static void test_truncate_goes_with_write(void)
{
	struct lock_config cfg = long_lease(HOLD_UNLINK);
	struct lock_holder h = holder(getpgrp());
	struct lock *lk;
	struct fs_wb *wb;

	setup(HOLD_UNLINK);
	setup_behind(&sf, &cfg);
	sf.before = fail_hook;
	CHECK_INT(lock_acquire(eng, "t", &h, &lk, NULL, NULL), 0);
	wb = fs_wb_new(eng, &fclk.clk, 100, 65536);
	CHECK(wb != NULL);
	renews = 0;
	CHECK_INT(fs_wb_modify(wb, lk, "abc", 3, 0, -1), 0); /* through */
	CHECK_INT(renews, 1);
	advance(200);
	CHECK_INT(fs_wb_modify(wb, lk, NULL, 0, 0, 0), 0);
	CHECK_INT(renews, 1); /* the truncate waits */
	CHECK_INT(fs_wb_len(wb, lk), 0);
	CHECK_INT(fs_wb_modify(wb, lk, "x", 1, 0, -1), 0); /* with it */
	CHECK_INT(renews, 2);
	check_stored(lk, "x");
	CHECK_INT(fs_wb_flush(wb, lk), 0);
	CHECK_INT(renews, 2);
	advance(200);
	CHECK_INT(fs_wb_modify(wb, lk, NULL, 0, 0, 1), 0); /* its length */
	CHECK_INT(fs_wb_flush(wb, lk), 0);
	CHECK_INT(renews, 2);
	/* A truncate alone is written at the close. */
	CHECK_INT(fs_wb_modify(wb, lk, NULL, 0, 0, 0), 0);
	CHECK_INT(renews, 2);
	CHECK_INT(fs_wb_flush(wb, lk), 0);
	CHECK_INT(renews, 3);
	check_stored(lk, "");
	fs_wb_free(wb);
	lock_release(eng, lk);
	lock_unref(eng, lk);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_error_kept_while_held);
	CHECK_CASE(test_truncate_goes_with_write);
	CHECK_DONE();
}
