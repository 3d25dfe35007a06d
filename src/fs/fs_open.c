/* fs_open: open files: create (an acquire), open, read (the text of
 * fs_text), write and truncate (the holder's data, coalesced by fs_wb),
 * fsync, close, poll, the wake-up of pollers when a lock is lost, and
 * the undoing of a create whose caller was interrupted.
 * Threads: FUSE workers, and the lease thread through fs_on_lost; fs->mu
 * guards the handle list and the handle fields marked in fs_int.h. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

#define TAG "fs"

static struct fs_handle *handle_new(struct fs *fs, struct fs_node *n,
				    struct lock *lk, bool holding)
{
	struct fs_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->node = n;
	h->lk = lk;
	h->holding = holding;
	buf_init(&h->snap, 0);
	pthread_mutex_lock(&fs->mu);
	n->opens++;
	h->next = fs->handles;
	if (fs->handles)
		fs->handles->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->mu);
	return h;
}

/* A create that finds the key taken (on this mount or another) opens that
 * lock only as the kernel would open an existing file: its lookup found no
 * file, so the kernel checked the directory alone, and the lock may have
 * been taken meanwhile by another user. The caller needs the permission
 * its flags ask for in the lock's mode. */
static int may_open_taken(struct fs *fs, const struct fs_ctx *ctx,
			  const struct lock_record *cur, int flags)
{
	struct fs_attr a;
	struct fs_cred c;

	fs_int_lock_attr(fs, 0, cur, RENDER_HELD, 0, &a);
	fs_perm_cred(fs->host, ctx->uid, ctx->gid, ctx->pid, &c);
	if (!fs_perm_may(&c, a.mode, a.uid, a.gid, fs_perm_open_want(flags)))
		return -EACCES;
	return 0;
}

/* A create without O_EXCL refused with the row unknown (the store did not
 * return it: the row it conflicted with is gone again): what the key is
 * now. Taken: -EEXIST with *cur, as a refusal that returned the row; a
 * directory: -EISDIR; free again: -ESTALE, so that the kernel walks the
 * path again with a fresh lookup (LOOKUP_REVAL) and creates or opens what
 * it finds then, instead of the open failing. */
static int refused_row(struct fs *fs, const char *rel, struct lock_record *cur,
		       bool *has)
{
	struct resolved r;
	int rc;

	fs_int_resolved_init(&r);
	rc = fs_int_resolve(fs, rel, true, &r);
	if (!rc && r.kind == K_FILE) {
		rc = record_copy(cur, &r.rec);
		*has = !rc;
		if (!rc)
			rc = -EEXIST;
	} else if (!rc) {
		rc = r.kind == K_DIR ? -EISDIR : -ESTALE;
	} else {
		rc = fs_int_user_err(rc, "lookup", rel);
	}
	fs_int_resolved_fini(&r);
	return rc;
}

int fs_create(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	      const char *name, uint32_t mode, int flags, struct fs_entry *e,
	      uint64_t *fh)
{
	struct lock_record cur;
	struct lock_holder holder;
	struct lock *lk = NULL;
	struct fs_handle *h;
	struct fs_node *n;
	bool has = false, acquired;
	char *rel = NULL, *full = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	if (parent == FS_CTL_DIR_INO)
		return -EPERM;
	if (!S_ISREG(mode) && (mode & S_IFMT))
		return -EPERM;
	rc = fs_int_child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	rc = fs_quota_take(fs->quota, ctx->uid, FSQ_OPENS);
	if (rc)
		goto out_free;
	rc = fs_quota_lock_begin(fs->quota, ctx->uid, fs_int_count_held,
				 fs->eng);
	if (rc) {
		fs_quota_give(fs->quota, ctx->uid, FSQ_OPENS);
		goto out_free;
	}
	fs_int_holder_from_ctx(fs, ctx, mode, &holder);
	record_init(&cur);
	rc = lock_acquire(fs->eng, full, &holder, &lk, &cur, &has);
	acquired = rc == 0;
	fs_quota_lock_end(fs->quota, ctx->uid);
	/* Whatever the answer, the name is not known free any more. */
	fs_int_absent_forget(fs, full);
	if (rc == -EEXIST && !(flags & O_EXCL) && !has)
		rc = refused_row(fs, rel, &cur, &has);
	if (rc == -EEXIST && !(flags & O_EXCL) && has) {
		/* Open the existing lock; no acquire. */
		rc = may_open_taken(fs, ctx, &cur, flags);
		if (rc)
			goto out;
		lk = lock_find(fs->eng, full);
		if (!lk) /* as fs_open: the group's lost lock */
			lk = fs_int_lost_of_caller(fs, ctx, rel);
		if (flags & O_TRUNC) {
			/* As fs_open: only the holder truncates. */
			rc = fs_int_truncate(fs, ctx, lk, 0);
			if (rc)
				goto out;
		}
	} else if (rc == -EISDIR) {
		/* A directory of that name was made meanwhile (on another
		 * mount): as for any existing directory. */
		rc = (flags & O_EXCL) ? -EEXIST : -EISDIR;
		goto out;
	} else if (rc) {
		rc = fs_int_user_err(rc, "acquire", full);
		goto out;
	} else {
		lock_snapshot(fs->eng, lk, &cur, NULL);
		fs_int_entry_changed(fs, rel, 0);
	}
	pthread_mutex_lock(&fs->mu);
	n = fs_int_get_node(fs, rel, false, true);
	if (n) {
		fs_int_lock_attr(fs, n->ino, &cur, RENDER_HELD,
				 clk_real_ms(fs->host->clk), &e->attr);
		fs_int_file_seen_locked(fs, n, &e->attr);
	}
	pthread_mutex_unlock(&fs->mu);
	h = n ? handle_new(fs, n, lk, acquired) : NULL;
	if (!h) {
		if (n)
			fs_forget(fs, n->ino, 1);
		if (acquired)
			lock_release(fs->eng, lk);
		rc = -ENOMEM;
		goto out;
	}
	h->uid = ctx->uid;
	h->by_holder = lk && fs_int_is_holder(ctx, lk);
	h->writable = (flags & O_ACCMODE) != O_RDONLY;
	fs_int_fill_entry(fs, e, fs_int_entry_of(true, lk != NULL));
	*fh = (uint64_t)(uintptr_t)h;
	lk = NULL; /* the handle has it */
out:
	if (rc)
		fs_quota_give(fs->quota, ctx->uid, FSQ_OPENS);
	if (lk)
		lock_unref(fs->eng, lk);
	record_fini(&cur);
out_free:
	free(rel);
	free(full);
	return rc;
}

void fs_create_abandon(struct fs *fs, uint64_t ino, uint64_t fh)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct lock *lk = NULL;

	pthread_mutex_lock(&fs->mu);
	if (h->holding && h->lk) {
		lk = h->lk;
		lock_ref(lk);
	}
	pthread_mutex_unlock(&fs->mu);
	if (lk) {
		log_info(TAG,
			 "key=%s: acquired for a create whose caller was "
			 "interrupted meanwhile: released",
			 lock_key(lk));
		lock_release(fs->eng, lk);
		lock_unref(fs->eng, lk);
	}
	fs_release(fs, fh);
	fs_forget(fs, ino, 1);
}

int fs_open(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino, int flags,
	    uint64_t *fh)
{
	struct fs_handle *h;
	struct fs_node *n;
	struct lock *lk = NULL;
	struct fs_cred *cred = NULL;
	bool is_dir, fixed;
	char *rel = NULL, *full;
	int rc;

	rc = fs_int_node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir) {
		free(rel);
		return -EISDIR;
	}
	if (fixed && (flags & O_ACCMODE) != O_RDONLY) {
		free(rel);
		return -EACCES;
	}
	rc = fs_quota_take(fs->quota, ctx->uid, FSQ_OPENS);
	if (rc) {
		free(rel);
		return rc;
	}
	if (ino == FS_CTL_STATUS_INO) {
		/* The status shows what its opener may see. */
		cred = malloc(sizeof(*cred));
		if (cred)
			fs_perm_cred(fs->host, ctx->uid, ctx->gid, ctx->pid,
				     cred);
		else
			rc = -ENOMEM;
	}
	if (!fixed) {
		full = fs_int_full_key(fs, rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
		/* The caller's group lost it: reads say so from memory, as
		 * the file it had open does; writes give EIO. */
		if (!lk)
			lk = fs_int_lost_of_caller(fs, ctx, rel);
		/* O_TRUNC truncates whatever the access mode (as
		 * Linux does), so it is refused alike to non-holders. */
		if (flags & O_TRUNC)
			rc = fs_int_truncate(fs, ctx, lk, 0);
	}
	free(rel);
	n = NULL;
	if (!rc) {
		pthread_mutex_lock(&fs->mu);
		n = fs_int_find_node(fs, ino);
		pthread_mutex_unlock(&fs->mu);
		rc = n ? 0 : -ENOENT;
	}
	h = !rc ? handle_new(fs, n, lk, false) : NULL;
	if (!h) {
		lock_unref(fs->eng, lk);
		free(cred);
		fs_quota_give(fs->quota, ctx->uid, FSQ_OPENS);
		return rc ? rc : -ENOMEM;
	}
	h->uid = ctx->uid;
	h->cred = cred;
	h->by_holder = lk && fs_int_is_holder(ctx, lk);
	h->writable = (flags & O_ACCMODE) != O_RDONLY;
	*fh = (uint64_t)(uintptr_t)h;
	return 0;
}

ssize_t fs_read(struct fs *fs, uint64_t fh, char *buf, size_t size, off_t off)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct buf text = BUF_INIT;
	ssize_t n = 0;
	int rc;

	if (off < 0)
		return -EINVAL;
	if (off == 0) {
		rc = fs_int_handle_text(fs, h, &text);
		if (rc) {
			buf_fini(&text);
			return rc;
		}
		pthread_mutex_lock(&fs->mu);
		buf_fini(&h->snap);
		h->snap = text;
	} else {
		pthread_mutex_lock(&fs->mu);
	}
	if ((size_t)off < h->snap.len) {
		n = (ssize_t)(h->snap.len - (size_t)off);
		if ((size_t)n > size)
			n = (ssize_t)size;
		memcpy(buf, h->snap.data + off, (size_t)n);
	}
	pthread_mutex_unlock(&fs->mu);
	return n;
}

int fs_int_truncate(struct fs *fs, const struct fs_ctx *ctx, struct lock *lk,
		    uint64_t size)
{
	if (!lk || !fs_int_is_holder(ctx, lk))
		return -EPERM;
	if (lock_is_shared(fs->eng, lk))
		return size ? -EPERM : 0;
	if (size > FS_MAX_DATA)
		return -EFBIG;
	return fs_wb_modify(fs->wb, lk, NULL, 0, 0, (int64_t)size);
}

/* The lock a writer on this handle would change: ours and held by ctx. */
static int writable_lock(struct fs *fs, const struct fs_ctx *ctx,
			 struct fs_handle *h, struct lock **out)
{
	struct lock *lk;
	char *full;

	if (h->node->fixed)
		return -EPERM;
	lk = fs_int_handle_lock(fs, h);
	if (!lk) {
		full = fs_int_full_key(fs, h->node->rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
	}
	/* A shared lock is its readers': none of them has data to write. */
	if (!lk || !fs_int_is_holder(ctx, lk) || lock_is_shared(fs->eng, lk)) {
		lock_unref(fs->eng, lk);
		return -EPERM;
	}
	*out = lk;
	return 0;
}

ssize_t fs_write(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		 const char *buf, size_t size, off_t off)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct lock *lk;
	int rc;

	if (off < 0)
		return -EINVAL;
	rc = writable_lock(fs, ctx, h, &lk);
	if (rc)
		return rc;
	rc = fs_wb_modify(fs->wb, lk, buf, size, off, -1);
	lock_unref(fs->eng, lk);
	return rc ? rc : (ssize_t)size;
}

/* Writes lk's pending data for a flush or fsync of h: a descriptor open
 * for writing is told of a failed write (and takes the error, told once
 * with its next write, fsync or close); any other only gets the data
 * written, the error left for the writers (a cat's close took it, and the
 * holder's next write was answered 0 over the lost data). */
static int flush_for(struct fs *fs, const struct fs_handle *h, struct lock *lk)
{
	if (h->writable)
		return fs_wb_flush(fs->wb, lk);
	fs_wb_write_pending(fs->wb, lk);
	return 0;
}

int fs_fsync(struct fs *fs, uint64_t fh)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct lock *lk = fs_int_handle_lock(fs, h);
	int rc;

	if (!lk)
		return 0; /* nothing of ours to make durable */
	rc = flush_for(fs, h, lk);
	if (!rc)
		rc = lock_renew_sync(fs->eng, lk);
	lock_unref(fs->eng, lk);
	return rc;
}

int fs_flush(struct fs *fs, uint64_t fh)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct lock *lk = fs_int_handle_lock(fs, h);
	int rc;

	if (!lk)
		return 0;
	rc = flush_for(fs, h, lk);
	lock_unref(fs->eng, lk);
	return rc;
}

void fs_release(struct fs *fs, uint64_t fh)
{
	struct fs_handle *h = fs_int_handle(fh);
	struct lock *lk;
	void *ph;

	pthread_mutex_lock(&fs->mu);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	ph = h->ph;
	h->ph = NULL;
	lk = h->lk;
	h->lk = NULL;
	pthread_mutex_unlock(&fs->mu);
	if (ph && fs->cfg.poll_destroy)
		fs->cfg.poll_destroy(ph);
	if (lk) {
		/* Written before a release on close can drop the lock (an
		 * error stays for the holder's next write, fsync or close:
		 * the flush before this one told this close). */
		fs_wb_write_pending(fs->wb, lk);
		if (h->holding)
			lock_holder_closed(fs->eng, lk);
		lock_unref(fs->eng, lk);
	}
	pthread_mutex_lock(&fs->mu);
	h->node->opens--;
	fs_int_maybe_free_node(fs, h->node);
	pthread_mutex_unlock(&fs->mu);
	fs_quota_give(fs->quota, h->uid, FSQ_OPENS);
	buf_fini(&h->snap);
	free(h->cred);
	free(h);
}

unsigned fs_poll(struct fs *fs, uint64_t fh, void *ph)
{
	struct fs_handle *h = fs_int_handle(fh);
	unsigned revents = POLLIN | POLLOUT;
	struct lock *lk;
	void *old = NULL;

	/* The handle first, the state after: a loss between the two finds
	 * the handle (fs_on_lost runs once the lock is lost), and one before
	 * shows in the state. The other order lost that wake-up. */
	pthread_mutex_lock(&fs->mu);
	if (ph) {
		old = h->ph;
		h->ph = ph;
	}
	pthread_mutex_unlock(&fs->mu);
	if (old && fs->cfg.poll_destroy)
		fs->cfg.poll_destroy(old);
	lk = fs_int_handle_lock(fs, h);
	if (lk && lock_get_state(fs->eng, lk) != LOCK_HELD)
		revents |= POLLERR | POLLPRI; /* lost, or let go of (rm) */
	lock_unref(fs->eng, lk);
	return revents;
}

int fs_trust_ms(struct fs *fs, uint64_t fh, int64_t *ms)
{
	struct lock *lk = fs_int_handle_lock(fs, fs_int_handle(fh));

	if (!lk)
		return -ENODATA;
	*ms = lock_trusted_ms(fs->eng, lk);
	lock_unref(fs->eng, lk);
	return 0;
}

/* At most 64 x this many polls are woken at a loss (64,000). */
#define FS_LOST_WAKE_ROUNDS 1000

void fs_on_lost(void *arg, struct lock *lk)
{
	fs_int_wake_pollers(arg, lk);
}

void fs_int_wake_pollers(struct fs *fs, struct lock *lk)
{
	struct fs_handle *h;
	void *wake[64];
	int n, i, rounds = 0;

	/* Every poll of it, 64 at a time (notified outside fs->mu): a woken
	 * handle has no poll handle left, so each batch finds the next ones.
	 * Before, a 65th poller slept until its own timeout. Bounded: a
	 * poll made meanwhile sees the loss in the state (fs_poll), and
	 * callers polling in a loop must not keep this worker here. */
	do {
		n = 0;
		pthread_mutex_lock(&fs->mu);
		for (h = fs->handles; h && n < 64; h = h->next) {
			if (h->lk == lk && h->ph) {
				wake[n++] = h->ph;
				h->ph = NULL;
			}
		}
		pthread_mutex_unlock(&fs->mu);
		for (i = 0; i < n; i++) {
			if (fs->cfg.poll_notify)
				fs->cfg.poll_notify(wake[i]);
			if (fs->cfg.poll_destroy)
				fs->cfg.poll_destroy(wake[i]);
		}
	} while (n == 64 && ++rounds < FS_LOST_WAKE_ROUNDS);
}
