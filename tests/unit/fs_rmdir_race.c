/* fs_rmdir_race: a directory removed on one mount while another takes a
 * lock in it. Mount B goes by a view of the directory that may be older
 * than A's rmdir (its kernel's entry, or a lookup made just before the
 * delete), so its create lands under a directory whose marker is gone.
 * What must hold: B's holder always reaches its lock (B knows the
 * directories it holds locks in); A's rmdir that finds the lock after its
 * delete puts the marker back and fails with ENOTEMPTY; and when A cannot
 * see it (B's write came after A's rmdir, or A's listing lags as an index
 * can), B reads the directory again after its write and writes the
 * marker back (fs_dircheck), so that every mount sees the lock. Two
 * mounts on one store_mem, each behind a store_fault: A's before hook
 * runs B's create at the moment A deletes the marker. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "fs_mount.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

static const struct fs_ctx ctx = { 1000, 1000, 1 };

struct race {
	struct fs_mount *b;
	const char *dir;    /* A's delete of this marker runs B's create */
	uint64_t b_dir_ino; /* B's inode of it */
	struct store_fault
		*a_lag; /* frozen first, when set: A's listing lags */
	int create_rc;
	uint64_t fh;
	bool done;
};

static struct race race;

static int before_a(void *arg, enum store_fault_op op, const char *key)
{
	struct race *r = arg;

	if (op != SF_DIR || r->done || !r->dir || strcmp(key, r->dir))
		return 0;
	r->done = true;
	if (r->a_lag)
		CHECK_INT(store_fault_freeze_list(r->a_lag), 0);
	r->create_rc = fs_mount_create(r->b, &ctx, r->b_dir_ino, "l", 0644,
				       O_CREAT | O_EXCL | O_RDONLY, &r->fh);
	return 0;
}

/* fs_dircheck_run on mt once the millisecond of the last write is over (a
 * write in the millisecond a read begins counts as made during it), and
 * a name found free before has stopped being answered free from memory
 * (FS_ABSENT_MS, 100 ms). */
static int check_again(struct fs_mount *mt)
{
	struct timespec ts = { 0, 120000000 };

	nanosleep(&ts, NULL);
	return fs_dircheck_run(mt->fs);
}

/* mode of name in parent on mt, or -errno. */
static long long kind(struct fs_mount *mt, uint64_t parent, const char *name,
		      uint64_t *ino)
{
	struct fs_entry e;
	int rc = fs_lookup(mt->fs, parent, name, &e);

	if (rc)
		return rc;
	if (ino)
		*ino = e.attr.ino;
	return e.attr.mode;
}

/* A made dir (mode 0750), and B has looked it up: B's inode of it. */
static uint64_t made_and_seen(struct fs_mount *a, struct fs_mount *b,
			      const char *dir)
{
	struct fs_entry e;
	uint64_t ino = 0;

	CHECK_INT(fs_mkdir(a->fs, &ctx, FS_ROOT_INO, dir, 0750, &e), 0);
	CHECK_INT(kind(b, FS_ROOT_INO, dir, &ino), S_IFDIR | 0750);
	return ino;
}

/* B's lock l in dir (inode dino on B) is seen by both mounts, dir as a
 * directory of mode 0750. */
static void both_see(struct fs_mount *a, struct fs_mount *b, const char *dir,
		     uint64_t dino)
{
	uint64_t ada = 0;

	CHECK_INT(kind(a, FS_ROOT_INO, dir, &ada), S_IFDIR | 0750);
	CHECK_INT(kind(b, FS_ROOT_INO, dir, NULL), S_IFDIR | 0750);
	CHECK_INT(kind(a, ada, "l", NULL), S_IFREG | 0644);
	CHECK_INT(kind(b, dino, "l", NULL), S_IFREG | 0644);
}

/* B's view is older than A's rmdir (its kernel's entry): its create lands
 * in a directory with no marker. B sees the directory at once (it holds a
 * lock in it), A once B has read it again and written the marker back. */
static void test_create_after_rmdir(struct fs_mount *a, struct fs_mount *b)
{
	uint64_t dino = made_and_seen(a, b, "d1"), fh;

	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d1"), 0);
	CHECK_INT(fs_mount_create(b, &ctx, dino, "l", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(kind(a, FS_ROOT_INO, "d1", NULL), -ENOENT);
	/* As B last saw it (the row is gone): not open to all. */
	CHECK_INT(kind(b, FS_ROOT_INO, "d1", NULL), S_IFDIR | 0750);
	CHECK_INT(kind(b, dino, "l", NULL), S_IFREG | 0644);
	CHECK_INT(check_again(b), 1);
	both_see(a, b, "d1", dino);
	/* rmdir on A now finds it held. */
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d1"), -ENOTEMPTY);
	CHECK_INT(fs_unlink(b->fs, &ctx, dino, "l"), 0);
	fs_release(b->fs, fh);
	CHECK_INT(check_again(b), 0); /* nothing left to read */
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d1"), 0);
}

/* The lock let go of before B reads again: nothing is written back, and the
 * directory stays removed. */
static void test_released_before_check(struct fs_mount *a, struct fs_mount *b)
{
	uint64_t dino = made_and_seen(a, b, "d2"), fh;

	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d2"), 0);
	CHECK_INT(fs_mount_create(b, &ctx, dino, "l", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	fs_release(b->fs, fh); /* hold=fd: released */
	CHECK_INT(check_again(b), 1);
	CHECK_INT(kind(a, FS_ROOT_INO, "d2", NULL), -ENOENT);
	CHECK_INT(kind(b, FS_ROOT_INO, "d2", NULL), -ENOENT);
}

/* B's create lands between A's listing (empty) and its delete: A finds it
 * after the delete, puts the marker back and fails as if it came second. */
static void test_rmdir_meets_create(struct fs_mount *a, struct fs_mount *b)
{
	race = (struct race){ .b = b };
	race.b_dir_ino = made_and_seen(a, b, "d3");
	race.dir = "d3"; /* from now on: A's next write of its marker */
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d3"), -ENOTEMPTY);
	CHECK(race.done);
	CHECK_INT(race.create_rc, 0);
	both_see(a, b, "d3", race.b_dir_ino);
	/* Nothing was left for B to write back: its read finds the marker
	 * (or its lookups above found it after the write: no read). */
	CHECK(check_again(b) <= 1);
	both_see(a, b, "d3", race.b_dir_ino);
	fs_release(b->fs, race.fh);
	race.dir = NULL;
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d3"), 0);
}

/* The same, with A's listing lagging (an index): A cannot see the lock and
 * its rmdir succeeds; B's read after its write puts the marker back. */
static void test_rmdir_meets_create_lagging(struct store_fault *a_lag,
					    struct fs_mount *a,
					    struct fs_mount *b)
{
	race = (struct race){ .b = b, .a_lag = a_lag };
	race.b_dir_ino = made_and_seen(a, b, "d4");
	race.dir = "d4";
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d4"), 0);
	store_fault_thaw_list(a_lag);
	CHECK(race.done);
	CHECK_INT(race.create_rc, 0);
	CHECK_INT(kind(a, FS_ROOT_INO, "d4", NULL), -ENOENT);
	CHECK_INT(check_again(b), 1);
	both_see(a, b, "d4", race.b_dir_ino);
	fs_release(b->fs, race.fh);
	race.dir = NULL;
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d4"), 0);
}

/* A's own lock below, not in its lagging listing yet: rmdir refuses. */
static void test_own_lock_blocks_rmdir(struct store_fault *a_lag,
				       struct fs_mount *a)
{
	struct fs_entry e;
	uint64_t fh;

	CHECK_INT(fs_mkdir(a->fs, &ctx, FS_ROOT_INO, "d5", 0750, &e), 0);
	CHECK_INT(store_fault_freeze_list(a_lag), 0);
	CHECK_INT(fs_mount_create(a, &ctx, e.attr.ino, "l", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d5"), -ENOTEMPTY);
	store_fault_thaw_list(a_lag);
	fs_release(a->fs, fh);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d5"), 0);
}

/* B's read again fails (its link is down): the directory stays to be read,
 * and is written back once the link is up. */
static void test_check_retried(struct store_fault *b_link, struct fs_mount *a,
			       struct fs_mount *b)
{
	uint64_t dino = made_and_seen(a, b, "d6"), fh;

	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d6"), 0);
	CHECK_INT(fs_mount_create(b, &ctx, dino, "l", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	store_fault_set_down(b_link, 1);
	CHECK_INT(check_again(b), 1);
	store_fault_set_down(b_link, 0);
	CHECK_INT(kind(a, FS_ROOT_INO, "d6", NULL), -ENOENT);
	CHECK_INT(check_again(b), 1);
	both_see(a, b, "d6", dino);
	fs_release(b->fs, fh);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d6"), 0);
}

/* A directory made by B inside a directory A removed is written back too,
 * and so is its parent's marker in turn. */
static void test_mkdir_after_rmdir(struct fs_mount *a, struct fs_mount *b)
{
	uint64_t dino = made_and_seen(a, b, "d7"), ada = 0, sub = 0;
	struct fs_entry e;

	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d7"), 0);
	CHECK_INT(fs_mkdir(b->fs, &ctx, dino, "sub", 0700, &e), 0);
	CHECK_INT(check_again(b), 1);
	CHECK_INT(kind(a, FS_ROOT_INO, "d7", &ada), S_IFDIR | 0750);
	CHECK_INT(kind(a, ada, "sub", &sub), S_IFDIR | 0700);
	CHECK_INT(fs_rmdir(a->fs, &ctx, ada, "sub"), 0);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d7"), 0);
	/* The restore noted d7 itself: its parent is the root, none. */
	CHECK_INT(check_again(b), 0);
}

/* B knows the directory only from a listing (readdirplus, as ls -l): the
 * marker it writes back is still the one the listing showed. */
static void test_template_from_listing(struct fs_mount *a, struct fs_mount *b)
{
	struct fs_entry e;
	const char *name;
	uint64_t dh, dino = 0, fh;

	CHECK_INT(fs_mkdir(a->fs, &ctx, FS_ROOT_INO, "d8", 0750, &e), 0);
	CHECK_INT(fs_opendir(b->fs, FS_ROOT_INO, &dh), 0);
	for (size_t i = 2; fs_readdir_entry(b->fs, dh, i, true, &name, &e) == 0;
	     i++) {
		if (!strcmp(name, "d8"))
			dino = e.attr.ino;
		else
			fs_forget(b->fs, e.attr.ino, 1);
	}
	fs_releasedir(b->fs, dh);
	CHECK(dino);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d8"), 0);
	CHECK_INT(fs_mount_create(b, &ctx, dino, "l", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(check_again(b), 1);
	both_see(a, b, "d8", dino);
	fs_release(b->fs, fh);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "d8"), 0);
}

/* A mount with a prefix (p/) takes a lock at its top after a mount of the
 * table's root removed p: p is written back (with the root's attributes,
 * as the prefix mount records its prefix's directories). */
static void test_prefix_dir(struct store *mem, struct fs_mount *a)
{
	struct fs_config fc = fs_mount_config();
	struct fs_entry e;
	struct fs_mount c;
	uint64_t fh;

	fc.prefix = "p/";
	fs_mount_init(&c, mem, "C", &fc);
	CHECK_INT(fs_mkdir(a->fs, &ctx, FS_ROOT_INO, "p", 0755, &e), 0);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "p"), 0);
	CHECK_INT(fs_mount_create(&c, &ctx, FS_ROOT_INO, "x", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(check_again(&c), 1);
	CHECK(S_ISDIR(kind(a, FS_ROOT_INO, "p", &e.attr.ino)));
	CHECK_INT(kind(a, e.attr.ino, "x", NULL), S_IFREG | 0644);
	fs_release(c.fs, fh);
	fs_mount_fini(&c);
	CHECK_INT(fs_rmdir(a->fs, &ctx, FS_ROOT_INO, "p"), 0);
}

int main(int argc, char **argv)
{
	struct fs_config fc = fs_mount_config();
	struct store_fault a_link, b_link;
	struct fs_mount a, b;
	struct store *mem;

	log_setup(LOGL_ERR, false, NULL);
	mem = store_mem_new();
	CHECK(mem);
	store_fault_init(&a_link, mem);
	store_fault_init(&b_link, mem);
	a_link.before = before_a;
	a_link.arg = &race;
	fs_mount_init(&a, &a_link.base, "A", &fc);
	fs_mount_init(&b, &b_link.base, "B", &fc);
	check_cases(argc, argv);
	CHECK_CASE(test_create_after_rmdir, &a, &b);
	CHECK_CASE(test_released_before_check, &a, &b);
	CHECK_CASE(test_rmdir_meets_create, &a, &b);
	CHECK_CASE(test_rmdir_meets_create_lagging, &a_link, &a, &b);
	CHECK_CASE(test_own_lock_blocks_rmdir, &a_link, &a);
	CHECK_CASE(test_check_retried, &b_link, &a, &b);
	CHECK_CASE(test_mkdir_after_rmdir, &a, &b);
	CHECK_CASE(test_template_from_listing, &a, &b);
	CHECK_CASE(test_prefix_dir, mem, &a);
	fs_mount_fini(&a);
	fs_mount_fini(&b);
	store_fault_thaw_list(&a_link);
	store_free(mem);
	CHECK_DONE();
}
