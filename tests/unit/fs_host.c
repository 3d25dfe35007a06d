/* fs_host: the filesystem layer on a fake machine (fs_config.host and
 * the engine's host: tests/unit/support/host_fake, on a fake clock): who a
 * caller is comes from the host, not from /proc. A create records the
 * caller's command as the host tells it; a lock whose holder's group lives
 * may be unlinked only from the holder's session (the host's answer), and
 * by anyone once that group is gone. A lookup of a name that is not there
 * asks the host who the caller is only when some lock is lost (to show
 * that lock to its group). No process is forked. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "check.h"
#include "engine_steps.h"
#include "fs.h"
#include "host_fake.h"
#include "lease.h"
#include "log.h"
#include "store_mem.h"

static struct clk_fake fclk;
static struct host_fake fhost;
static struct store *st;
static struct observe *obs;
static struct lock_engine *eng;
static struct metrics met;
static struct fs *fs;

static void setup(void)
{
	struct lock_config lc = engine_steps_config("me", "h", HOLD_PGRP);
	struct fs_config fc = {
		.prefix = "",
		.table = "t",
		.host = &fhost.host,
	};

	clk_fake_init(&fclk, 1790000000000LL);
	host_fake_init(&fhost, &fclk.clk);
	metrics_init(&met);
	st = store_mem_new();
	obs = observe_new(&fclk.clk, 0);
	eng = lock_engine_new_host(&lc, st, obs, &fhost.host, &met, NULL);
	/* fs's store and observation are the engine's (lock_rows.h). */
	fs = fs_new(&fc, eng, &met);
	CHECK(st && obs && eng && fs);
}

static void teardown(void)
{
	fs_free(fs);
	lock_release_all(eng);
	lock_engine_free(eng);
	observe_free(obs);
	store_free(st);
	host_fake_fini(&fhost);
}

/* The holder field of name's lock as its xattr shows it. */
static void holder_of(const char *name, char *out, size_t cap)
{
	struct fs_entry e;
	ssize_t n;

	CHECK_INT(fs_lookup(fs, FS_ROOT_INO, name, &e), 0);
	n = fs_getxattr(fs, &(struct fs_ctx){ 1000, 1000, 1 }, e.attr.ino,
			"user.lockfs.holder", out, cap - 1);
	CHECK(n > 0);
	out[n] = '\0';
	fs_forget(fs, e.attr.ino, 1);
}

/* Checks the holder a create of "job" by caller pid records. */
static void check_holder_of_create(int32_t pid, const char *want)
{
	const struct fs_ctx c = { 1000, 1000, pid };
	struct fs_entry e;
	char text[256];
	uint64_t fh;

	CHECK_INT(fs_create(fs, &c, FS_ROOT_INO, "job", S_IFREG | 0644,
			    O_CREAT | O_EXCL | O_WRONLY, &e, &fh),
		  0);
	holder_of("job", text, sizeof(text));
	CHECK_STR(text, want);
	fs_release(fs, fh);
}

/* A create records the holder the host describes (host_fake: pid 4242
 * is its own group and session, its command "fake4242"). */
static void test_holder_from_host(void)
{
	setup();
	check_holder_of_create(4242, "host=h pid=4242 uid=1000 cmd=fake4242");
	teardown();
}

/* A program that acquires from a thread of its own (FUSE names the
 * thread, 4243) is recorded as its process (4242): the pid `cat` shows
 * and the one the exit watcher watches, which outlives the thread. */
static void test_holder_of_a_thread(void)
{
	setup();
	host_fake_thread(&fhost, 4243, 4242);
	check_holder_of_create(4243, "host=h pid=4242 uid=1000 cmd=fake4242");
	teardown();
}

/* The session rule on the host's answers: another session may not
 * unlink a lock whose holder's group lives (EBUSY); the holder's own
 * session may; once the group is gone, anyone of the uid may. */
static void test_unlink_by_session(void)
{
	const struct fs_ctx holder = { 1000, 1000, 4242 };
	const struct fs_ctx other = { 1000, 1000, 4343 };
	struct fs_entry e;
	uint64_t fh;

	setup();
	CHECK_INT(fs_create(fs, &holder, FS_ROOT_INO, "a", S_IFREG | 0644,
			    O_CREAT | O_EXCL | O_WRONLY, &e, &fh),
		  0);
	fs_release(fs, fh); /* hold=pgrp: held while the group lives */
	CHECK_INT(fs_unlink(fs, &other, FS_ROOT_INO, "a"), -EBUSY);
	CHECK_INT(fs_unlink(fs, &holder, FS_ROOT_INO, "a"), 0);
	CHECK_INT(store_mem_lock_count(st), 0);

	CHECK_INT(fs_create(fs, &holder, FS_ROOT_INO, "b", S_IFREG | 0644,
			    O_CREAT | O_EXCL | O_WRONLY, &e, &fh),
		  0);
	fs_release(fs, fh);
	CHECK_INT(fs_unlink(fs, &other, FS_ROOT_INO, "b"), -EBUSY);
	host_fake_kill(&fhost, 4242);
	CHECK_INT(fs_unlink(fs, &other, FS_ROOT_INO, "b"), 0);
	CHECK_INT(store_mem_lock_count(st), 0);
	teardown();
}

static void run_due(void *arg)
{
	(void)arg;
	engine_steps_due(eng, &fclk.clk);
}

/* A lookup of a missing name asks the host nothing while no lock is lost;
 * once one is (its renewals failed past the safe period, its row then
 * removed), it is shown to its holder's group only. */
static void test_lookup_asks_only_when_lost(void)
{
	const struct fs_ctx holder = { 1000, 1000, 4242 };
	const struct fs_ctx other = { 1000, 1000, 4343 };
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct fs_entry e;
	uint64_t fh;
	int calls;

	setup();
	calls = host_fake_proc_calls(&fhost);
	CHECK_INT(fs_lookup_ctx(fs, &holder, FS_ROOT_INO, "none", &e), -ENOENT);
	CHECK_INT(host_fake_proc_calls(&fhost), calls);
	CHECK_INT(fs_create(fs, &holder, FS_ROOT_INO, "x", S_IFREG | 0644,
			    O_CREAT | O_EXCL | O_WRONLY, &e, &fh),
		  0);
	fs_release(fs, fh); /* hold=pgrp: held while the group lives */
	fs_forget(fs, e.attr.ino, 1);
	store_mem_set_faults(st, &down);
	engine_steps_advance(&fclk, 2000, run_due, NULL); /* past 1.5 s */
	store_mem_set_faults(st, &up);
	engine_steps_advance(&fclk, 1000, run_due, NULL); /* row removed */
	CHECK_INT(store_mem_lock_count(st), 0);
	calls = host_fake_proc_calls(&fhost);
	CHECK_INT(fs_lookup_ctx(fs, &holder, FS_ROOT_INO, "x", &e), 0);
	CHECK(host_fake_proc_calls(&fhost) > calls);
	fs_forget(fs, e.attr.ino, 1);
	CHECK_INT(fs_lookup_ctx(fs, &other, FS_ROOT_INO, "x", &e), -ENOENT);
	teardown();
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_holder_from_host);
	CHECK_CASE(test_holder_of_a_thread);
	CHECK_CASE(test_unlink_by_session);
	CHECK_CASE(test_lookup_asks_only_when_lost);
	CHECK_DONE();
}
