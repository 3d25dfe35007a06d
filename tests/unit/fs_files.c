/* fs_files: the filesystem layer without FUSE: two mounts (each its own
 * engine and owner) on one in-memory store. Names, create/open/read/write,
 * exclusion across mounts, unlink rules, directories, listings, xattrs,
 * control files, and the requests each operation costs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine_steps.h"
#include "fs.h"
#include "fs_mount.h"
#include "lease.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

static struct store *st;

static void mount_init(struct fs_mount *mt, const char *owner, bool allow_break)
{
	struct fs_config fc = fs_mount_config();

	fc.allow_break = allow_break;
	fs_mount_init(mt, st, owner, &fc);
}

static const struct fs_ctx root_ctx = { 0, 0, 1 };
static const struct fs_ctx user_ctx = { 1000, 1000, 1 };

static int create(struct fs_mount *mt, const struct fs_ctx *c, uint64_t parent,
		  const char *name, int flags, uint64_t *fh)
{
	return fs_mount_create(mt, c, parent, name, 0640, flags, fh);
}

static void read_text(struct fs_mount *mt, uint64_t fh, char *out, size_t cap)
{
	ssize_t n = fs_read(mt->fs, fh, out, cap - 1, 0);

	CHECK(n >= 0);
	out[n] = '\0';
}

static void test_names(struct fs_mount *a)
{
	struct fs_entry e;
	char long_name[300];
	uint64_t fh;

	memset(long_name, 'x', 256);
	long_name[256] = '\0';
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, long_name, &e), -ENAMETOOLONG);
	CHECK_INT(create(a, &root_ctx, FS_ROOT_INO, long_name, O_EXCL, &fh),
		  -ENAMETOOLONG);
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, "bad\xff", &e), -EINVAL);
	CHECK_INT(create(a, &root_ctx, FS_ROOT_INO, "bad\xc0\x80", O_EXCL, &fh),
		  -EINVAL);
	CHECK_INT(create(a, &root_ctx, FS_ROOT_INO, ".lockfs-x", O_EXCL, &fh),
		  -EPERM);
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, "missing", &e), -ENOENT);
	/* The control directory. */
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, ".lockfs", &e), 0);
	CHECK_INT(e.attr.ino, FS_CTL_DIR_INO);
	CHECK(S_ISDIR(e.attr.mode));
	CHECK_INT(fs_lookup(a->fs, FS_CTL_DIR_INO, "status", &e), 0);
	CHECK_INT(create(a, &root_ctx, FS_CTL_DIR_INO, "x", O_EXCL, &fh),
		  -EPERM);
	/* A key of more than 1024 bytes in total. */
	struct fs_entry de;
	char dir[256];
	uint64_t parent = FS_ROOT_INO;
	int i;

	memset(dir, 'd', 255);
	dir[255] = '\0';
	for (i = 0; i < 4; i++) {
		CHECK_INT(fs_mkdir(a->fs, &root_ctx, parent, dir, 0755, &de),
			  0);
		parent = de.attr.ino;
	}
	CHECK_INT(create(a, &root_ctx, parent, "too-long", O_EXCL, &fh),
		  -ENAMETOOLONG);
	CHECK_INT(fs_lookup(a->fs, parent, "too-long", &e), -ENAMETOOLONG);
}

static void test_exclusion(struct fs_mount *a, struct fs_mount *b)
{
	char text[4096];
	uint64_t fa, fb, fb2;
	struct fs_entry e;
	int before;

	/* Acquire costs exactly one store request. */
	before = store_mem_total(st);
	CHECK_INT(
		create(a, &user_ctx, FS_ROOT_INO, "job", O_CREAT | O_EXCL, &fa),
		0);
	CHECK_INT(store_mem_total(st) - before, 1);
	/* A lookup on the holding mount needs no request. */
	before = store_mem_total(st);
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, "job", &e), 0);
	CHECK_INT(store_mem_total(st) - before, 0);
	CHECK(S_ISREG(e.attr.mode));
	CHECK_INT(e.attr.mode & 07777, 0640);
	CHECK_INT(e.attr.uid, 1000);

	/* B is refused with O_EXCL, opens it read-only-in-effect without. */
	CHECK_INT(
		create(b, &user_ctx, FS_ROOT_INO, "job", O_CREAT | O_EXCL, &fb),
		-EEXIST);
	CHECK_INT(create(b, &user_ctx, FS_ROOT_INO, "job", O_CREAT, &fb), 0);
	CHECK_INT(fs_write(b->fs, &user_ctx, fb, "x", 1, 0), -EPERM);
	read_text(b, fb, text, sizeof(text));
	CHECK(strstr(text, "owner: A\n"));
	CHECK(strstr(text, "state: held\n"));
	CHECK(strstr(text, "holder: host=h pid=1 uid=1000"));

	/* Data written on A is read on B. */
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "42\n", 3, 0), 3);
	read_text(b, fb, text, sizeof(text));
	CHECK(strstr(text, "data: 42\\n\n"));
	char big[FS_MAX_DATA + 1];
	memset(big, 'z', sizeof(big));
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, big, sizeof(big), 0), -EFBIG);
	/* Another uid on the holding mount is not the holder. */
	struct fs_ctx other = { 2000, 2000, 1 };
	CHECK_INT(fs_write(a->fs, &other, fa, "x", 1, 0), -EPERM);
	CHECK_INT(fs_unlink(a->fs, &other, FS_ROOT_INO, "job"), -EPERM);

	/* The holder reads its fence (allocated on first read) and state. */
	read_text(a, fa, text, sizeof(text));
	CHECK(strstr(text, "fence: 1\n"));
	CHECK(strstr(text, "state: held\n"));
	CHECK_INT(fs_fsync(a->fs, fa), 0);
	CHECK_INT(fs_poll(a->fs, fa, NULL), POLLIN | POLLOUT);

	/* B cannot unlink A's lock; B's root with allow_break can (below). */
	CHECK_INT(fs_unlink(b->fs, &user_ctx, FS_ROOT_INO, "job"), -EPERM);
	CHECK_INT(fs_unlink(b->fs, &root_ctx, FS_ROOT_INO, "job"), -EPERM);

	/* Release on A lets B acquire. */
	CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, "job"), 0);
	CHECK_INT(create(b, &user_ctx, FS_ROOT_INO, "job", O_CREAT | O_EXCL,
			 &fb2),
		  0);
	/* A's lookup after its own release answers from memory until B's
	 * acquire is seen; the store decides on create. */
	CHECK_INT(
		create(a, &user_ctx, FS_ROOT_INO, "job", O_CREAT | O_EXCL, &fa),
		-EEXIST);
	read_text(b, fb2, text, sizeof(text));
	CHECK(strstr(text, "fence: 2\n")); /* strictly increasing */
	fs_release(b->fs, fb);
	fs_release(b->fs, fb2); /* hold=fd: released on close */
	CHECK_INT(store_mem_lock_count(st), 0);
}

/* A file whose key is released between the kernel's lookup and its
 * getattr (an open's permission check, with attr_timeout=0) is still the
 * file the lookup found, for a moment (FS_VANISHED_MS, 500 ms): the open
 * must not fail with ENOENT. Once that has passed, getattr says ENOENT. */
static void test_vanished(struct fs_mount *a, struct fs_mount *b)
{
	struct fs_entry e;
	struct fs_attr at;
	double timeout;
	uint64_t fa, fb;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "churn", O_CREAT | O_EXCL,
			 &fa),
		  0);
	CHECK_INT(fs_lookup(b->fs, FS_ROOT_INO, "churn", &e), 0);
	CHECK(S_ISREG(e.attr.mode));
	CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, "churn"), 0);
	fs_release(a->fs, fa);
	CHECK_INT(store_mem_lock_count(st), 0);
	/* B's lookup found it: its getattr right after answers that file. */
	CHECK_INT(fs_getattr(b->fs, e.attr.ino, &at, &timeout), 0);
	CHECK_INT(at.ino, e.attr.ino);
	CHECK(S_ISREG(at.mode));
	CHECK_INT(at.mode, e.attr.mode);
	CHECK_INT(at.uid, e.attr.uid);
	/* ... and the open that follows succeeds. */
	CHECK_INT(fs_open(b->fs, &user_ctx, e.attr.ino, O_RDONLY, &fb), 0);
	fs_release(b->fs, fb);
	/* A fresh lookup says it is gone; later getattrs too. */
	CHECK_INT(fs_lookup(b->fs, FS_ROOT_INO, "churn", &e), -ENOENT);
	usleep(600 * 1000);
	CHECK_INT(fs_getattr(b->fs, at.ino, &at, &timeout), -ENOENT);

	/* The same for a file a create (without O_EXCL) opened taken. */
	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "churn", O_CREAT | O_EXCL,
			 &fa),
		  0);
	CHECK_INT(fs_create(b->fs, &user_ctx, FS_ROOT_INO, "churn",
			    S_IFREG | 0640, O_CREAT, &e, &fb),
		  0);
	CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, "churn"), 0);
	fs_release(a->fs, fa);
	CHECK_INT(fs_getattr(b->fs, e.attr.ino, &at, &timeout), 0);
	CHECK(S_ISREG(at.mode));
	fs_release(b->fs, fb);
	CHECK_INT(store_mem_lock_count(st), 0);
}

/* Every request of the slow mount's store takes this long, when set; and
 * its renewals (data writes among them) fail with EIO while fail_renew
 * is set. */
static int slow_ms, fail_renew;
/* ... and its reads fail with this, when set. */
static int fail_read_rc;

static int slow_hook(void *arg, enum store_fault_op op, const char *key)
{
	int ms = __atomic_load_n(&slow_ms, __ATOMIC_ACQUIRE);
	int read_rc = __atomic_load_n(&fail_read_rc, __ATOMIC_ACQUIRE);

	if (ms)
		usleep((useconds_t)ms * 1000);
	if (op == SF_RENEW && __atomic_load_n(&fail_renew, __ATOMIC_ACQUIRE))
		return -EIO;
	if ((op == SF_GET || op == SF_LOOKUP) && read_rc)
		return read_rc;
	return 0;
}

/* A request that could not be signed (no credentials, or expired ones) is
 * backend trouble like any other: EIO, with the reason in the log. A
 * lookup gave the caller ENOKEY (126), which no file operation documents. */
static void test_no_credentials(struct fs_mount *d)
{
	static const int why[] = { -ENOKEY, -EKEYEXPIRED, -ETIMEDOUT };
	struct fs_entry e;

	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		__atomic_store_n(&fail_read_rc, why[i], __ATOMIC_RELEASE);
		CHECK_INT(fs_lookup(d->fs, FS_ROOT_INO, "nocreds", &e), -EIO);
	}
	__atomic_store_n(&fail_read_rc, 0, __ATOMIC_RELEASE);
	CHECK_INT(fs_lookup(d->fs, FS_ROOT_INO, "nocreds", &e), -ENOENT);
}

/* The same over a slow store (a round trip longer than FS_VANISHED_MS, as
 * when DynamoDB throttles): the getattr begins right after the lookup, so
 * it answers the file the lookup found, however long its own read takes.
 * It said ENOENT when the 500 ms counted from the end of that read. */
static void test_vanished_slow(struct fs_mount *a, struct fs_mount *slow)
{
	struct fs_entry e;
	struct fs_attr at;
	double timeout;
	uint64_t fa, fh;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "slowchurn",
			 O_CREAT | O_EXCL, &fa),
		  0);
	CHECK_INT(fs_lookup(slow->fs, FS_ROOT_INO, "slowchurn", &e), 0);
	CHECK(S_ISREG(e.attr.mode));
	CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, "slowchurn"), 0);
	fs_release(a->fs, fa);
	__atomic_store_n(&slow_ms, 700, __ATOMIC_RELEASE);
	CHECK_INT(fs_getattr(slow->fs, e.attr.ino, &at, &timeout), 0);
	__atomic_store_n(&slow_ms, 0, __ATOMIC_RELEASE);
	CHECK_INT(at.ino, e.attr.ino);
	CHECK(S_ISREG(at.mode));
	CHECK_INT(fs_open(slow->fs, &user_ctx, e.attr.ino, O_RDONLY, &fh), 0);
	fs_release(slow->fs, fh);
	/* A getattr that begins later still says it is gone. */
	usleep(600 * 1000);
	CHECK_INT(fs_getattr(slow->fs, e.attr.ino, &at, &timeout), -ENOENT);
	CHECK_INT(store_mem_lock_count(st), 0);
}

static void test_break(struct fs_mount *a, struct fs_mount *c)
{
	uint64_t fa;

	CHECK_INT(
		create(a, &user_ctx, FS_ROOT_INO, "brk", O_CREAT | O_EXCL, &fa),
		0);
	CHECK_INT(fs_unlink(c->fs, &user_ctx, FS_ROOT_INO, "brk"), -EPERM);
	CHECK_INT(fs_unlink(c->fs, &root_ctx, FS_ROOT_INO, "brk"), 0);
	CHECK_INT(store_mem_lock_count(st), 0);
	/* A finds out on its next write. */
	CHECK_INT(fs_fsync(a->fs, fa), -EIO);
	CHECK(fs_poll(a->fs, fa, NULL) & POLLERR);
	char text[4096];
	read_text(a, fa, text, sizeof(text));
	CHECK(strstr(text, "state: lost\n"));
	fs_release(a->fs, fa);
}

/* A write on the holding fd of a lock known lost is refused at once, even
 * within the write-behind interval after the last write (it would be
 * buffered, answered as written, and dropped at the flush). */
static void test_write_after_loss(struct fs_mount *a, struct fs_mount *c)
{
	uint64_t fa;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "wal",
			 O_CREAT | O_EXCL | O_RDWR, &fa),
		  0);
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "1", 1, 0), 1);
	CHECK_INT(fs_unlink(c->fs, &root_ctx, FS_ROOT_INO, "wal"), 0);
	CHECK_INT(fs_fsync(a->fs, fa), -EIO);
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "2", 1, 0), -EIO);
	fs_release(a->fs, fa);
}

/* A close (flush) reports 0 only when the data is in the table: after a
 * write of it failed, every flush with nothing new to write says so (a
 * second closer sharing the file, which waited for that write, was told
 * 0 though its data was never stored). */
static void test_flush_after_failed_write(struct fs_mount *a,
					  struct fs_mount *c)
{
	uint64_t fa;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "wf",
			 O_CREAT | O_EXCL | O_RDWR, &fa),
		  0);
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "1", 1, 0), 1);
	CHECK_INT(fs_flush(a->fs, fa), 0);
	/* Buffered (within the interval), then the lock is broken. */
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "2", 1, 0), 1);
	CHECK_INT(fs_unlink(c->fs, &root_ctx, FS_ROOT_INO, "wf"), 0);
	CHECK_INT(fs_flush(a->fs, fa), -EIO);
	CHECK_INT(fs_flush(a->fs, fa), -EIO);
	fs_release(a->fs, fa);
}

/* After a data write that failed (DynamoDB answered an error, the lock
 * still held), the next write starts from what the table has and lands.
 * The reload leaked the buffer it replaced (LeakSanitizer: up to 64 KiB a
 * failed write; a probe leaked 7.8 MB in 200 failed truncates). */
static void test_write_after_failed_write(struct fs_mount *d)
{
	struct fs_entry e;
	uint64_t fd;

	CHECK_INT(create(d, &user_ctx, FS_ROOT_INO, "wfail",
			 O_CREAT | O_EXCL | O_RDWR, &fd),
		  0);
	CHECK_INT(fs_write(d->fs, &user_ctx, fd, "1", 1, 0), 1);
	CHECK_INT(fs_flush(d->fs, fd), 0);
	for (int i = 0; i < 20; i++) {
		static char big[8192];

		memset(big, 'a' + i, sizeof(big));
		CHECK_INT(fs_write(d->fs, &user_ctx, fd, big, sizeof(big), 1),
			  (int)sizeof(big));
		__atomic_store_n(&fail_renew, 1, __ATOMIC_RELEASE);
		CHECK_INT(fs_flush(d->fs, fd), -EIO);
		__atomic_store_n(&fail_renew, 0, __ATOMIC_RELEASE);
	}
	/* None of those landed: the write goes on from the table's "1". */
	CHECK_INT(fs_write(d->fs, &user_ctx, fd, "3", 1, 1), 1);
	CHECK_INT(fs_flush(d->fs, fd), 0);
	CHECK_INT(fs_lookup(d->fs, FS_ROOT_INO, "wfail", &e), 0);
	CHECK_INT(e.attr.size, 2); /* "13" */
	CHECK_INT(fs_unlink(d->fs, &user_ctx, FS_ROOT_INO, "wfail"), 0);
	fs_release(d->fs, fd);
}

/* A data write that fails while the lock is still held is told to the
 * holder's next write (or fsync, or close of a descriptor open for
 * writing), whoever made the write that failed: here a reader's close,
 * which writes pending data out. That close took the error itself, and
 * the holder's next write was answered as written over the lost data. */
static void test_failed_write_told_to_writer(struct fs_mount *d)
{
	struct fs_entry e;
	uint64_t fd, fr;

	CHECK_INT(create(d, &user_ctx, FS_ROOT_INO, "wtell",
			 O_CREAT | O_EXCL | O_RDWR, &fd),
		  0);
	CHECK_INT(fs_write(d->fs, &user_ctx, fd, "1", 1, 0), 1);
	CHECK_INT(fs_write(d->fs, &user_ctx, fd, "2", 1, 1), 1); /* buffered */
	CHECK_INT(fs_lookup(d->fs, FS_ROOT_INO, "wtell", &e), 0);
	CHECK_INT(fs_open(d->fs, &user_ctx, e.attr.ino, O_RDONLY, &fr), 0);
	__atomic_store_n(&fail_renew, 1, __ATOMIC_RELEASE);
	CHECK_INT(fs_flush(d->fs, fr), 0); /* the reader's close */
	__atomic_store_n(&fail_renew, 0, __ATOMIC_RELEASE);
	fs_release(d->fs, fr);
	CHECK_INT(fs_write(d->fs, &user_ctx, fd, "3", 1, 2), -EIO);
	CHECK_INT(fs_flush(d->fs, fd), -EIO); /* not in the table */
	CHECK_INT(fs_unlink(d->fs, &user_ctx, FS_ROOT_INO, "wtell"), 0);
	fs_release(d->fs, fd);
}

/* A readdirplus answered from a listing read at opendir gives the holder's
 * own lock the size it has when the entry is answered: the kernel takes
 * that size unless a write ended after it asked, and an O_APPEND write
 * made between the opendir and the readdir would otherwise be written
 * over by the next one (appends.t lost a line so, 1 run in 5). */
static void test_listing_own_size_now(struct fs_mount *a)
{
	struct fs_entry e;
	const char *name;
	uint64_t fa, dh;
	bool found = false;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "ap",
			 O_CREAT | O_EXCL | O_RDWR, &fa),
		  0);
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "line0\n", 6, 0), 6);
	CHECK_INT(fs_opendir(a->fs, FS_ROOT_INO, &dh), 0);
	CHECK_INT(fs_write(a->fs, &user_ctx, fa, "line1\n", 6, 6), 6);
	for (size_t i = 2; fs_readdir_entry(a->fs, dh, i, true, &name, &e) == 0;
	     i++) {
		if (strcmp(name, "ap"))
			continue;
		found = true;
		CHECK_INT((int)e.attr.size, 12);
	}
	CHECK(found);
	fs_releasedir(a->fs, dh);
	fs_release(a->fs, fa);
}

struct names_seen {
	int files, dirs, ctl;
};

static void list(struct fs_mount *mt, uint64_t ino, struct names_seen *seen,
		 const char *want)
{
	const char *name;
	struct fs_entry e;
	uint64_t dh;
	size_t i;
	bool found = want == NULL;

	memset(seen, 0, sizeof(*seen));
	CHECK_INT(fs_opendir(mt->fs, ino, &dh), 0);
	for (i = 0; fs_readdir_entry(mt->fs, dh, i, true, &name, &e) == 0;
	     i++) {
		if (i < 2)
			continue;
		if (!strcmp(name, ".lockfs"))
			seen->ctl++;
		else if (S_ISDIR(e.attr.mode))
			seen->dirs++;
		else
			seen->files++;
		if (want && !strcmp(name, want))
			found = true;
		fs_forget(mt->fs, e.attr.ino, 1);
	}
	fs_releasedir(mt->fs, dh);
	CHECK(found);
}

static void test_dirs_and_listing(struct fs_mount *a, struct fs_mount *b)
{
	struct names_seen seen;
	struct fs_entry e;
	uint64_t f1, f2, dino;
	int before, root_dirs;

	/* The directories other cases left in the root (a long name's). */
	list(b, FS_ROOT_INO, &seen, NULL);
	root_dirs = seen.dirs;
	CHECK_INT(fs_mkdir(a->fs, &user_ctx, FS_ROOT_INO, "jobs", 01777, &e),
		  0);
	dino = e.attr.ino;
	CHECK(S_ISDIR(e.attr.mode));
	CHECK_INT(fs_mkdir(a->fs, &user_ctx, FS_ROOT_INO, "jobs", 0755, &e),
		  -EEXIST);
	/* Visible on the other mount. */
	CHECK_INT(fs_lookup(b->fs, FS_ROOT_INO, "jobs", &e), 0);
	CHECK(S_ISDIR(e.attr.mode));
	CHECK_INT(e.attr.mode & 07777, 01777);
	CHECK_INT(create(a, &user_ctx, dino, "nightly", O_CREAT | O_EXCL, &f1),
		  0);
	CHECK_INT(create(a, &user_ctx, dino, "hourly", O_CREAT | O_EXCL, &f2),
		  0);
	CHECK_INT(fs_rmdir(b->fs, &user_ctx, FS_ROOT_INO, "jobs"), -ENOTEMPTY);
	/* One listing request, however many entries. */
	before = store_mem_total(st);
	list(b, e.attr.ino, &seen, "nightly");
	CHECK_INT(store_mem_total(st) - before, 1);
	CHECK_INT(seen.files, 2);
	list(b, FS_ROOT_INO, &seen, "jobs");
	CHECK_INT(seen.ctl, 1);
	CHECK_INT(seen.dirs, root_dirs + 1); /* and jobs */
	fs_release(a->fs, f1);
	fs_release(a->fs, f2);
	CHECK_INT(fs_rmdir(b->fs, &user_ctx, FS_ROOT_INO, "jobs"), 0);
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, "jobs", &e), -ENOENT);

	/* Keys written by another client under a path: implicit directory. */
	engine_steps_foreign_row(st, "deploy/prod", "python-client", "v1",
				 30000, 0);
	list(a, FS_ROOT_INO, &seen, "deploy");
	CHECK_INT(fs_lookup(a->fs, FS_ROOT_INO, "deploy", &e), 0);
	CHECK(S_ISDIR(e.attr.mode));
	list(a, e.attr.ino, &seen, "prod");
	CHECK_INT(seen.files, 1);
	CHECK_INT(fs_lookup(a->fs, e.attr.ino, "prod", &e), 0);
	CHECK_INT(e.attr.mode & 0777, 0644);
	/* Fields it does not have are left out of its text and xattrs. */
	uint64_t fh;
	char text[4096];
	CHECK_INT(fs_open(a->fs, &user_ctx, e.attr.ino, O_RDONLY, &fh), 0);
	read_text(a, fh, text, sizeof(text));
	CHECK(strstr(text, "owner: python-client\n"));
	CHECK(!strstr(text, "holder:"));
	CHECK(!strstr(text, "acquired:"));
	fs_release(a->fs, fh);
	char val[256];
	CHECK_INT(fs_getxattr(a->fs, &user_ctx, e.attr.ino, "user.lockfs.owner",
			      val, sizeof(val)),
		  13);
	CHECK(!memcmp(val, "python-client", 13));
	CHECK_INT(fs_getxattr(a->fs, &user_ctx, e.attr.ino,
			      "user.lockfs.holder", val, sizeof(val)),
		  -ENODATA);
	CHECK_INT(fs_getxattr(a->fs, &user_ctx, e.attr.ino,
			      "security.capability", val, sizeof(val)),
		  -ENODATA);
	ssize_t n =
		fs_listxattr(a->fs, &user_ctx, e.attr.ino, val, sizeof(val));
	CHECK(n > 0 && memmem(val, (size_t)n, "user.lockfs.version", 20));
	CHECK_INT(store_mem_delete_raw(st, "deploy/prod"), 0);
}

static void test_ctl(struct fs_mount *a)
{
	struct fs_entry e;
	char text[8192];
	uint64_t fh, fl, fl2;

	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "s", O_CREAT | O_EXCL, &fl),
		  0);
	CHECK_INT(fs_lookup(a->fs, FS_CTL_DIR_INO, "status", &e), 0);
	CHECK_INT(fs_open(a->fs, &user_ctx, e.attr.ino, O_RDONLY, &fh), 0);
	read_text(a, fh, text, sizeof(text));
	CHECK(strstr(text, "owner: A\n"));
	CHECK(strstr(text, "table: t\n"));
	CHECK(strstr(text, "lock: key=s state=held"));
	fs_release(a->fs, fh);
	/* A key cannot pass for fields of its line: its spaces are \x20. */
	CHECK_INT(create(a, &user_ctx, FS_ROOT_INO, "x state=lost",
			 O_CREAT | O_EXCL, &fl2),
		  0);
	CHECK_INT(fs_open(a->fs, &user_ctx, e.attr.ino, O_RDONLY, &fh), 0);
	read_text(a, fh, text, sizeof(text));
	CHECK(strstr(text, "lock: key=x\\x20state=lost state=held"));
	CHECK(!strstr(text, "key=x state"));
	fs_release(a->fs, fh);
	fs_release(a->fs, fl2);
	CHECK_INT(fs_open(a->fs, &user_ctx, FS_CTL_METRICS_INO, O_WRONLY, &fh),
		  -EACCES);
	CHECK_INT(fs_open(a->fs, &user_ctx, FS_CTL_METRICS_INO, O_RDONLY, &fh),
		  0);
	read_text(a, fh, text, sizeof(text));
	CHECK(strstr(text, "lockfs_acquires_total "));
	CHECK(strstr(text, "lockfs_locks_held 1\n")); /* x's went at release */
	fs_release(a->fs, fh);
	fs_release(a->fs, fl);
}

int main(int argc, char **argv)
{
	struct fs_mount a, b, c, d;
	struct fs_config fc = fs_mount_config();
	struct store_fault slow;

	log_setup(LOGL_ERR, false, NULL);
	st = store_mem_new();
	check_cases(argc, argv);
	mount_init(&a, "A", false);
	mount_init(&b, "B", false);
	mount_init(&c, "C", true);
	store_fault_init(&slow, st);
	slow.before = slow_hook;
	fs_mount_init(&d, &slow.base, "D", &fc);
	CHECK_CASE(test_names, &a);
	CHECK_CASE(test_exclusion, &a, &b);
	CHECK_CASE(test_vanished, &a, &b);
	CHECK_CASE(test_vanished_slow, &a, &d);
	CHECK_CASE(test_break, &a, &c);
	CHECK_CASE(test_write_after_loss, &a, &c);
	CHECK_CASE(test_flush_after_failed_write, &a, &c);
	CHECK_CASE(test_write_after_failed_write, &d);
	CHECK_CASE(test_failed_write_told_to_writer, &d);
	CHECK_CASE(test_no_credentials, &d);
	CHECK_CASE(test_listing_own_size_now, &a);
	CHECK_CASE(test_dirs_and_listing, &a, &b);
	CHECK_CASE(test_ctl, &a);
	fs_mount_fini(&a);
	fs_mount_fini(&b);
	fs_mount_fini(&c);
	fs_mount_fini(&d);
	store_free(&slow.base);
	store_free(st);
	CHECK_DONE();
}
