/* fs_flock: file locks (flock and fcntl) on open files, made distributed
 * by flk (flk.h): a request's key, holder and per-uid limits, and the
 * open file that shows a granted lock, and the data writes held around a
 * downgrade. Threads: FUSE workers, and flk's wait workers through
 * fs_on_granted and fs_around_downgrade; fs->mu guards the handle's lock. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "flk.h"

void fs_set_flk(struct fs *fs, struct flk *flk)
{
	fs->flk = flk;
}

static char *handle_key(struct fs *fs, struct fs_handle *h)
{
	return h->node->fixed ? NULL : fs_int_full_key(fs, h->node->rel);
}

/* A file lock that DynamoDB did not decide fails with ENOLCK, as one does
 * on NFS when the lock manager cannot be reached: callers tell it from a
 * held key (EWOULDBLOCK) and flock(1) says "No locks available" (it takes
 * EIO for NFS's emulated flock and retries an open). */
static int filelock_err(int rc, const char *what, const char *key)
{
	rc = fs_int_user_err(rc, what, key);
	return rc == -EIO ? -ENOLCK : rc;
}

/* A downgrade's writes wait meanwhile and its pending data is written
 * first (fs_wb_seal), so that the shared row carries every write answered
 * before it, and a write that comes during it is refused (EPERM) rather
 * than answered and dropped. */
int fs_around_downgrade(void *arg, struct lock *lk, bool begin)
{
	struct fs *fs = arg;

	if (!begin) {
		fs_wb_unseal(fs->wb, lk);
		return 0;
	}
	return fs_wb_seal(fs->wb, lk);
}

int fs_filelock(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		uint64_t owner, int kind, int type, bool wait, void *req)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct flk_req r = { 0 };
	char *key;
	int rc;

	if (!fs->flk)
		return -ENOLCK;
	if (h->node->fixed)
		return -EINVAL;
	key = handle_key(fs, h);
	if (!key)
		return -ENOMEM;
	if (type == F_UNLCK) {
		rc = flk_unlock(fs->flk, key, owner, (enum flk_kind)kind, h);
		rc = filelock_err(rc, "unlock", key);
		free(key);
		return rc;
	}
	r.key = key;
	r.owner = owner;
	r.kind = (enum flk_kind)kind;
	r.shared = type == F_RDLCK;
	r.wait = wait;
	r.req = req;
	r.handle = h;
	pthread_mutex_lock(&fs->mu);
	r.handle_lock = h->holding ? h->lk : NULL; /* compared, not used */
	pthread_mutex_unlock(&fs->mu);
	/* Per-uid limits: a lock more (the open file's own O_CREAT lock is
	 * no new one; a later grant is in the engine's count), and a waiter
	 * while parked (given back by fs_filelock_wait_done). */
	rc = r.handle_lock ? 0
			   : fs_quota_lock_begin(fs->quota, ctx->uid,
						 fs_int_count_held, fs->eng);
	if (!rc && wait)
		rc = fs_quota_take(fs->quota, ctx->uid, FSQ_WAITERS);
	if (rc) {
		if (!r.handle_lock)
			fs_quota_lock_end(fs->quota, ctx->uid);
		free(key);
		return rc;
	}
	fs_int_holder_from_ctx(fs, ctx, 0644, &r.holder);
	rc = flk_lock(fs->flk, &r);
	if (!r.handle_lock)
		fs_quota_lock_end(fs->quota, ctx->uid);
	/* Parked, or answered by its interrupt (-EALREADY, which gave it
	 * back): the answer gives the waiter's place back. */
	if (wait && rc != -EINPROGRESS && rc != -EALREADY)
		fs_quota_give(fs->quota, ctx->uid, FSQ_WAITERS);
	if (rc != -EINPROGRESS && rc != -EALREADY && rc != -EWOULDBLOCK &&
	    rc != -EAGAIN)
		rc = filelock_err(rc, "file lock", key);
	free(key);
	return rc;
}

void fs_filelock_wait_done(struct fs *fs, uint32_t uid)
{
	fs_quota_give(fs->quota, uid, FSQ_WAITERS);
}

void fs_on_granted(void *arg, void *handle, struct lock *lk)
{
	struct fs *fs = arg;
	struct fs_handle *h = handle;
	struct lock *old;

	/* The open file holds this lock now: its reads, fsync, poll and
	 * fence are this lock's. */
	lock_ref(lk);
	pthread_mutex_lock(&fs->mu);
	old = h->lk;
	h->lk = lk;
	h->by_holder = true;
	pthread_mutex_unlock(&fs->mu);
	if (old)
		lock_unref(fs->eng, old);
}

int fs_filelock_get(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		    uint64_t owner, bool shared, bool *held, bool *held_shared,
		    int64_t *pid)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct flk_req r = { .owner = owner, .shared = shared };
	char *key;
	int rc;

	if (!fs->flk)
		return -ENOLCK;
	key = handle_key(fs, h);
	if (!key)
		return h->node->fixed ? -EINVAL : -ENOMEM;
	r.key = key;
	pthread_mutex_lock(&fs->mu);
	r.handle_lock = h->holding ? h->lk : NULL;
	if (r.handle_lock)
		lock_ref(r.handle_lock);
	pthread_mutex_unlock(&fs->mu);
	fs_int_holder_from_ctx(fs, ctx, 0644, &r.holder);
	rc = filelock_err(flk_getlk(fs->flk, &r, held, held_shared, pid),
			  "getlk", key);
	if (r.handle_lock)
		lock_unref(fs->eng, r.handle_lock);
	free(key);
	return rc;
}

void fs_filelock_release_handle(struct fs *fs, uint64_t fh)
{
	struct fs_handle *h = fs_int_handle(fh);
	char *key;

	if (!fs->flk || h->node->fixed)
		return;
	key = handle_key(fs, h);
	if (key)
		flk_release_handle(fs->flk, key, h);
	free(key);
}

void fs_filelock_drop(struct fs *fs, uint64_t fh, uint64_t owner, int kind)
{
	struct fs_handle *h = fs_int_handle(fh);
	char *key;

	if (!fs->flk || h->node->fixed)
		return;
	key = handle_key(fs, h);
	if (key)
		flk_unlock(fs->flk, key, owner, (enum flk_kind)kind, h);
	free(key);
}
