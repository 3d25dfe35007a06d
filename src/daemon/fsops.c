/* fsops: the libfuse low-level operations table. Each handler turns one
 * request into one fs_* call and sends exactly one reply. No state of its
 * own: the struct fs is the session's userdata. Runs in FUSE worker threads.
 * No lock is held across a fuse_reply_*. */
#define FUSE_USE_VERSION 314
#include "fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "flk.h"
#include "fs.h"
#include "host.h"
#include "lockfs_ioctl.h"
#include "metrics.h"

/* The operations, as lockfs_fuse_requests_total{op=...} names them. */
enum fsop {
	FOP_LOOKUP,
	FOP_FORGET,
	FOP_FORGET_MULTI,
	FOP_GETATTR,
	FOP_SETATTR,
	FOP_CREATE,
	FOP_OPEN,
	FOP_READ,
	FOP_WRITE,
	FOP_FLUSH,
	FOP_RELEASE,
	FOP_FSYNC,
	FOP_UNLINK,
	FOP_MKDIR,
	FOP_RMDIR,
	FOP_OPENDIR,
	FOP_READDIR,
	FOP_READDIRPLUS,
	FOP_RELEASEDIR,
	FOP_STATFS,
	FOP_GETXATTR,
	FOP_LISTXATTR,
	FOP_SETXATTR,
	FOP_REMOVEXATTR,
	FOP_POLL,
	FOP_IOCTL,
	FOP_FLOCK,
	FOP_SETLK,
	FOP_GETLK,
	FOP_RENAME,
	FOP_LINK,
	FOP_SYMLINK,
	FOP_MKNOD,
	FOP__COUNT
};

static const char *const fsop_names[FOP__COUNT] = {
	[FOP_LOOKUP] = "lookup",
	[FOP_FORGET] = "forget",
	[FOP_FORGET_MULTI] = "forget_multi",
	[FOP_GETATTR] = "getattr",
	[FOP_SETATTR] = "setattr",
	[FOP_CREATE] = "create",
	[FOP_OPEN] = "open",
	[FOP_READ] = "read",
	[FOP_WRITE] = "write",
	[FOP_FLUSH] = "flush",
	[FOP_RELEASE] = "release",
	[FOP_FSYNC] = "fsync",
	[FOP_UNLINK] = "unlink",
	[FOP_MKDIR] = "mkdir",
	[FOP_RMDIR] = "rmdir",
	[FOP_OPENDIR] = "opendir",
	[FOP_READDIR] = "readdir",
	[FOP_READDIRPLUS] = "readdirplus",
	[FOP_RELEASEDIR] = "releasedir",
	[FOP_STATFS] = "statfs",
	[FOP_GETXATTR] = "getxattr",
	[FOP_LISTXATTR] = "listxattr",
	[FOP_SETXATTR] = "setxattr",
	[FOP_REMOVEXATTR] = "removexattr",
	[FOP_POLL] = "poll",
	[FOP_IOCTL] = "ioctl",
	[FOP_FLOCK] = "flock",
	[FOP_SETLK] = "setlk",
	[FOP_GETLK] = "getlk",
	[FOP_RENAME] = "rename",
	[FOP_LINK] = "link",
	[FOP_SYMLINK] = "symlink",
	[FOP_MKNOD] = "mknod",
};

void fsops_name_metrics(struct metrics *m)
{
	metrics_name_ops(m, fsop_names, FOP__COUNT);
}

/* One request of op arrived (relaxed atomics: any FUSE thread). */
static void count_op(fuse_req_t req, enum fsop op)
{
	metrics_count_op(((struct fsops_ctx *)fuse_req_userdata(req))->metrics,
			 op);
}

static struct fs *fs_of(fuse_req_t req)
{
	return ((struct fsops_ctx *)fuse_req_userdata(req))->fs;
}

static struct flk *flk_of(fuse_req_t req)
{
	return ((struct fsops_ctx *)fuse_req_userdata(req))->flk;
}

static void ctx_of(fuse_req_t req, struct fs_ctx *c)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);

	c->uid = fc->uid;
	c->gid = fc->gid;
	c->pid = fc->pid;
}

static void ms_to_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (ms % 1000) * 1000000;
}

static void to_stat(const struct fs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	ms_to_ts(a->atime_real_ms, &st->st_atim);
	ms_to_ts(a->mtime_real_ms, &st->st_mtim);
	ms_to_ts(a->ctime_real_ms, &st->st_ctim);
}

static void to_entry(const struct fs_entry *e, struct fuse_entry_param *fe)
{
	memset(fe, 0, sizeof(*fe));
	fe->ino = e->attr.ino;
	fe->generation = 1;
	to_stat(&e->attr, &fe->attr);
	fe->attr_timeout = e->attr_timeout_s;
	fe->entry_timeout = e->entry_timeout_s;
}

static void reply_entry_or_err(fuse_req_t req, int rc, const struct fs_entry *e)
{
	struct fuse_entry_param fe;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	to_entry(e, &fe);
	fuse_reply_entry(req, &fe);
}

static void reply_attr_or_err(fuse_req_t req, int rc, const struct fs_attr *a,
			      double timeout)
{
	struct stat st;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	to_stat(a, &st);
	fuse_reply_attr(req, &st, timeout);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* O_TRUNC arrives with open (the holder's "> file" truncates its
	 * data); no writeback cache: every write is the holder's data. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

/* A request that may wait on DynamoDB (a lookup, a create) whose caller
 * is being killed (a fatal signal: Ctrl-C, SIGTERM, SIGKILL) is answered
 * EINTR by its interrupt at once: once a request is read, the kernel
 * waits for its answer even for SIGKILL, so the caller died only when the
 * request ended (up to an operation timeout). A caught signal does not
 * end it, as on a local disk (a handler with SA_RESTART, bash's SIGCHLD,
 * would see a spurious EINTR from open). The request's thread goes on and
 * undoes what it did (early_end). */
struct early {
	pthread_mutex_t mu;
	bool answered; /* by the interrupt */
	bool done;     /* by the request's thread: no interrupt answers */
};

static void early_interrupted(fuse_req_t req, void *data)
{
	struct early *x = data;
	bool answer;

	if (!host_sys_kill_pending(fuse_req_ctx(req)->pid))
		return;
	pthread_mutex_lock(&x->mu);
	answer = !x->done && !x->answered;
	x->answered = x->answered || answer;
	pthread_mutex_unlock(&x->mu);
	if (answer)
		fuse_reply_err(req, EINTR);
}

static void early_begin(fuse_req_t req, struct early *x)
{
	pthread_mutex_init(&x->mu, NULL);
	x->answered = false;
	x->done = false;
	fuse_req_interrupt_func(req, early_interrupted, x);
}

/* Whether req is still the caller's to answer; false: it was answered
 * EINTR already, and req may be gone (not to be touched). */
static bool early_end(fuse_req_t req, struct early *x)
{
	bool answered;

	pthread_mutex_lock(&x->mu);
	answered = x->answered;
	x->done = true;
	pthread_mutex_unlock(&x->mu);
	/* Unregistered under the request's lock: an interrupt running now
	 * is waited out (it saw done), and none comes after. */
	if (!answered)
		fuse_req_interrupt_func(req, NULL, NULL);
	pthread_mutex_destroy(&x->mu);
	return !answered;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req); /* req may be gone after early_end */
	struct early x;
	struct fs_entry e;
	struct fs_ctx c;
	int rc;

	count_op(req, FOP_LOOKUP);
	ctx_of(req, &c);
	early_begin(req, &x);
	rc = fs_lookup_ctx(fs, &c, parent, name, &e);
	if (!early_end(req, &x)) {
		if (!rc && e.attr.ino) /* the entry the caller never got */
			fs_forget(fs, e.attr.ino, 1);
		return;
	}
	reply_entry_or_err(req, rc, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	count_op(req, FOP_FORGET);
	fs_forget(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	count_op(req, FOP_FORGET_MULTI);
	for (i = 0; i < count; i++)
		fs_forget(fs_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs_attr a;
	struct fs_ctx c;
	double timeout;
	int rc;

	ctx_of(req, &c);
	/* No open file: asked for a name (a stat, access, or an open's
	 * permission check), which the kernel walks again on ESTALE. */
	rc = fs_getattr_ctx(fs_of(req), &c, ino, !fi, &a, &timeout);
	count_op(req, FOP_GETATTR);
	reply_attr_or_err(req, rc, &a, timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs_ctx c;
	struct fs_attr a;
	unsigned valid = 0;
	double timeout;
	int rc;

	count_op(req, FOP_SETATTR);
	if (to_set & FUSE_SET_ATTR_MODE)
		valid |= FS_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID)
		valid |= FS_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID)
		valid |= FS_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)
		valid |= FS_SET_SIZE;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
		      FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW))
		valid |= FS_SET_TIMES;
	ctx_of(req, &c);
	rc = fs_setattr(fs_of(req), &c, ino, valid, (uint64_t)attr->st_size,
			attr->st_mode & 07777, &a, &timeout);
	reply_attr_or_err(req, rc, &a, timeout);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req); /* req may be gone after early_end */
	struct fuse_entry_param fe;
	struct early x;
	struct fs_entry e;
	struct fs_ctx c;
	uint64_t fh = 0;
	int rc;

	count_op(req, FOP_CREATE);
	ctx_of(req, &c);
	early_begin(req, &x);
	rc = fs_create(fs, &c, parent, name, mode, fi->flags, &e, &fh);
	if (!early_end(req, &x)) {
		if (!rc) /* the caller has no file: nothing taken stays */
			fs_create_abandon(fs, e.attr.ino, fh);
		return;
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	to_entry(&e, &fe);
	fi->fh = fh;
	fi->direct_io = 1; /* every read is fresh from DynamoDB */
	fi->keep_cache = 0;
	if (fuse_reply_create(req, &fe, fi))
		fs_release(fs_of(req), fh); /* the opener is gone */
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx c;
	uint64_t fh = 0;
	int rc;

	count_op(req, FOP_OPEN);
	ctx_of(req, &c);
	rc = fs_open(fs_of(req), &c, ino, fi->flags, &fh);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi))
		fs_release(fs_of(req), fh);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf;
	ssize_t n;

	count_op(req, FOP_READ);
	if (size > (1u << 20))
		size = 1u << 20;
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fs_read(fs_of(req), fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_ctx c;
	ssize_t n;

	count_op(req, FOP_WRITE);
	ctx_of(req, &c);
	n = fs_write(fs_of(req), &c, fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	count_op(req, FOP_FLUSH);
	/* The holder's coalesced data is written before close returns (its
	 * error is close's); any close by a process drops its fcntl locks
	 * on the file. */
	int rc = fs_flush(fs_of(req), fi->fh);

	fs_filelock_drop(fs_of(req), fi->fh, fi->lock_owner, FLK_POSIX);
	fuse_reply_err(req, -rc);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	count_op(req, FOP_RELEASE);
	/* Reply first: the closing process need not wait for DynamoDB. */
	uint64_t fh = fi->fh, owner = fi->lock_owner;
	bool drop_flock = fi->flock_release;
	struct fs *fs = fs_of(req);

	fuse_reply_err(req, 0);
	if (drop_flock)
		fs_filelock_drop(fs, fh, owner, FLK_FLOCK);
	/* An F_OFD_SETLK lock belongs to the open file, which no flush
	 * names: it goes at its last close. */
	fs_filelock_release_handle(fs, fh);
	fs_release(fs, fh);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	count_op(req, FOP_FSYNC);
	fuse_reply_err(req, -fs_fsync(fs_of(req), fi->fh));
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req); /* req is gone once answered */
	struct lock *later = NULL;
	struct fs_ctx c;
	int rc;

	count_op(req, FOP_UNLINK);
	ctx_of(req, &c);
	rc = fs_unlink_start(fs, &c, parent, name, &later);
	fuse_reply_err(req, -rc);
	if (later) /* release=async: the delete, after the answer */
		fs_unlink_finish(fs, later);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct fs_entry e;
	struct fs_ctx c;
	int rc;

	count_op(req, FOP_MKDIR);
	ctx_of(req, &c);
	rc = fs_mkdir(fs_of(req), &c, parent, name, mode, &e);
	reply_entry_or_err(req, rc, &e);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ctx c;

	count_op(req, FOP_RMDIR);
	ctx_of(req, &c);
	fuse_reply_err(req, -fs_rmdir(fs_of(req), &c, parent, name));
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	uint64_t dh = 0;
	struct fs_ctx c;
	int rc;

	count_op(req, FOP_OPENDIR);
	ctx_of(req, &c);
	rc = fs_opendir_ctx(fs_of(req), &c, ino, &dh);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = dh;
	if (fuse_reply_open(req, fi))
		fs_releasedir(fs_of(req), dh);
}

static void do_readdir(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fs_of(req);
	char *buf = malloc(size ? size : 1);
	size_t pos = 0, idx;
	int rc = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (idx = (size_t)off;; idx++) {
		const char *name;
		struct fs_entry e;
		size_t need;

		rc = fs_readdir_entry(fs, fi->fh, idx, plus, &name, &e);
		if (rc)
			break;
		if (plus) {
			struct fuse_entry_param fe;

			to_entry(&e, &fe);
			need = fuse_add_direntry_plus(req, buf + pos,
						      size - pos, name, &fe,
						      (off_t)idx + 1);
		} else {
			struct stat st;

			to_stat(&e.attr, &st);
			need = fuse_add_direntry(req, buf + pos, size - pos,
						 name, &st, (off_t)idx + 1);
		}
		if (need > size - pos) {
			/* Did not fit: give the lookup reference back. */
			if (plus && idx >= 2)
				fs_forget(fs, e.attr.ino, 1);
			break;
		}
		pos += need;
	}
	if (rc < 0 && !pos)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	count_op(req, FOP_READDIR);
	do_readdir(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	count_op(req, FOP_READDIRPLUS);
	do_readdir(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	count_op(req, FOP_RELEASEDIR);
	fs_releasedir(fs_of(req), fi->fh);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_statfs f;
	struct statvfs sv;

	count_op(req, FOP_STATFS);
	fs_statfs(fs_of(req), &f);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = f.bsize;
	sv.f_frsize = f.bsize;
	sv.f_blocks = f.blocks;
	sv.f_bfree = f.bfree;
	sv.f_bavail = f.bfree;
	sv.f_files = f.files;
	sv.f_ffree = f.ffree;
	sv.f_favail = f.ffree;
	sv.f_namemax = f.namemax;
	fuse_reply_statfs(req, &sv);
}

static void reply_xattr(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct fs_ctx c;
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	count_op(req, FOP_GETXATTR);
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx_of(req, &c);
	n = fs_getxattr(fs_of(req), &c, ino, name, buf, size);
	reply_xattr(req, n, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs_ctx c;
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	count_op(req, FOP_LISTXATTR);
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx_of(req, &c);
	n = fs_listxattr(fs_of(req), &c, ino, buf, size);
	reply_xattr(req, n, buf, size);
	free(buf);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	count_op(req, FOP_SETXATTR);
	fuse_reply_err(req,
		       strncmp(name, "user.lockfs.", 12) ? ENOTSUP : EPERM);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	count_op(req, FOP_REMOVEXATTR);
	fuse_reply_err(req,
		       strncmp(name, "user.lockfs.", 12) ? ENOTSUP : EPERM);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	count_op(req, FOP_POLL);
	fuse_reply_poll(req, fs_poll(fs_of(req), fi->fh, ph));
}

/* LOCKFS_IOC_TRUST_MS (lockfs_ioctl.h), the one ioctl of a lock file:
 * answered from memory, so that a supervisor's question never waits on
 * DynamoDB. Any other: ENOTTY. */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		     void *arg, struct fuse_file_info *fi, unsigned flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	int64_t ms = 0;
	int rc;

	count_op(req, FOP_IOCTL);
	if (cmd != LOCKFS_IOC_TRUST_MS || (flags & FUSE_IOCTL_UNRESTRICTED)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (out_bufsz < sizeof(ms)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = fs_trust_ms(fs_of(req), fi->fh, &ms);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_ioctl(req, 0, &ms, sizeof(ms));
}

/* ---- flock and fcntl locks -------------------------------------------- */

int fsops_reply_lock(void *req, int err)
{
	/* A parked waiter is answered: it no longer counts for its uid. */
	fs_filelock_wait_done(fs_of(req), fuse_req_ctx(req)->uid);
	return fuse_reply_err(req, err);
}

static void lock_interrupted(fuse_req_t req, void *data)
{
	flk_interrupt(data, req);
}

static void do_filelock(fuse_req_t req, struct fuse_file_info *fi, int kind,
			int type, bool wait)
{
	struct fs_ctx c;
	int rc;

	ctx_of(req, &c);
	if (wait && type != F_UNLCK) {
		fuse_req_interrupt_func(req, lock_interrupted, flk_of(req));
		if (fuse_req_interrupted(req)) {
			fuse_reply_err(req, EINTR);
			return;
		}
	}
	rc = fs_filelock(fs_of(req), &c, fi->fh, fi->lock_owner, kind, type,
			 wait, req);
	if (rc == -EALREADY)
		return; /* answered EINTR by its interrupt meanwhile */
	if (rc == -EINPROGRESS) {
		/* Parked: answered by the wait thread or the interrupt. An
		 * interrupt that came before the waiter existed is sticky in
		 * the request: pass it on before arming. */
		if (fuse_req_interrupted(req))
			flk_interrupt(flk_of(req), req);
		flk_arm(flk_of(req), req);
		return;
	}
	fuse_reply_err(req, -rc);
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     int op)
{
	int type = (op & LOCK_UN)   ? F_UNLCK
		   : (op & LOCK_SH) ? F_RDLCK
				    : F_WRLCK;

	count_op(req, FOP_FLOCK);
	do_filelock(req, fi, FLK_FLOCK, type, !(op & LOCK_NB));
}

static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock, int sleep)
{
	count_op(req, FOP_SETLK);
	/* Any range locks the whole key: a read lock shared, a write lock
	 * exclusively. */
	do_filelock(req, fi, FLK_POSIX, lock->l_type, sleep != 0);
}

static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock)
{
	bool held = false, held_shared = false;
	int64_t pid = 0;
	struct fs_ctx c;
	int rc;

	ctx_of(req, &c);
	rc = fs_filelock_get(fs_of(req), &c, fi->fh, fi->lock_owner,
			     lock->l_type == F_RDLCK, &held, &held_shared,
			     &pid);

	count_op(req, FOP_GETLK);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (held) {
		lock->l_type = held_shared ? F_RDLCK : F_WRLCK;
		lock->l_whence = SEEK_SET;
		lock->l_start = 0;
		lock->l_len = 0;
		lock->l_pid = (pid_t)pid;
	} else {
		lock->l_type = F_UNLCK;
	}
	fuse_reply_lock(req, lock);
}

/* Locks cannot be renamed or made into other kinds of files. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	count_op(req, FOP_RENAME);
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct fs_entry e;
	struct fs_ctx c;
	int rc;

	count_op(req, FOP_LINK);
	ctx_of(req, &c);
	rc = fs_link(fs_of(req), &c, ino, newparent, newname, &e);
	reply_entry_or_err(req, rc, &e);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	count_op(req, FOP_SYMLINK);
	fuse_reply_err(req, EPERM);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	count_op(req, FOP_MKNOD);
	fuse_reply_err(req, EPERM);
}

const struct fuse_lowlevel_ops fsops_table = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.create = op_create,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.unlink = op_unlink,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.poll = op_poll,
	.ioctl = op_ioctl,
	.flock = op_flock,
	.getlk = op_getlk,
	.setlk = op_setlk,
	.rename = op_rename,
	.link = op_link,
	.symlink = op_symlink,
	.mknod = op_mknod,
};
