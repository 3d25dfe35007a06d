/* fs_link: the names of locks: unlink (a release of this mount's lock,
 * answered after its delete or, with release=async, before it; the
 * holder's letting go of a lost one; or root's break of another owner's
 * on a mount with allow_break) and link (a second name for a lock
 * this mount holds, acquired as a lock of its own for the same holder).
 * Threads: FUSE workers; never holds fs->mu across a request. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define TAG "fs"

/* Whether ctx may remove lk (the uid rule passed): a lock whose holder is
 * alive may be removed only from the holder's session (its script, its
 * shell), so that a second instance of a job, run by cron or systemd in a
 * session of its own, never releases the first one's lock by mistake;
 * root may break it on a mount with allow_break. -EBUSY otherwise. */
static int may_remove(struct fs *fs, const struct fs_ctx *ctx, struct lock *lk)
{
	const struct lock_holder *h = lock_holder(lk);

	if (h->sid <= 0)
		return 0; /* no session known: the uid rule alone */
	/* The caller's session first: the common case (the holder's own
	 * script) then costs one system call, not the liveness check too. */
	if (host_sid(fs->host, ctx->pid) == h->sid ||
	    !lock_holder_live(fs->eng, lk))
		return 0;
	if (fs->cfg.allow_break && ctx->uid == 0)
		return 0;
	log_info(TAG,
		 "unlink key=%s refused (EBUSY): held by pid %lld (%s) of "
		 "another session, which is alive",
		 lock_key(lk), (long long)h->pid, h->cmd);
	return -EBUSY;
}

/* Releases our held lock lk for unlink: at once, or (release=async) only
 * marked releasing, the delete left to fs_unlink_finish via *later. Once
 * it is marked, the pollers of its open files (lockfs-run's loss watch)
 * are woken, before the delete goes: a command still running under it
 * hears at once that it is let go of, not a safe period later. */
static int release_held(struct fs *fs, struct lock *lk, struct lock **later)
{
	int rc = lock_release_begin(fs->eng, lk);

	if (rc != 1)
		return rc;
	fs_int_wake_pollers(fs, lk);
	if (!fs->cfg.release_async)
		return lock_release_finish(fs->eng, lk);
	lock_ref(lk);
	*later = lk;
	return 0;
}

void fs_unlink_finish(struct fs *fs, struct lock *later)
{
	char why[LOG_ERRNO_MAX];
	int rc = lock_release_finish(fs->eng, later);

	if (rc)
		log_warn(TAG,
			 "unlink key=%s answered before its delete, which "
			 "failed: %s; the row goes in the background or lapses",
			 lock_key(later), log_errno(rc, why, sizeof(why)));
	lock_unref(fs->eng, later);
}

int fs_unlink(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	      const char *name)
{
	struct lock *later = NULL;
	int rc = fs_unlink_start(fs, ctx, parent, name, &later);

	if (later)
		fs_unlink_finish(fs, later);
	return rc;
}

int fs_unlink_start(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
		    const char *name, struct lock **later)
{
	struct lock_record row;
	struct lock *lk;
	char *rel = NULL, *full = NULL;
	int rc;

	if (parent == FS_CTL_DIR_INO)
		return -EPERM;
	rc = fs_int_child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	/* The caller's group's lost lock first: its unlink lets go of that
	 * one, and never of a lock another group of this mount took since
	 * (which lock_find_any gives first). */
	lk = fs_int_lost_of_caller(fs, ctx, rel);
	if (!lk)
		lk = lock_find_any(fs->eng, full);
	if (lk && lock_get_state(fs->eng, lk) == LOCK_LOST) {
		/* Our lost lock: its holder lets go of it. That is the file
		 * the holder's group sees (fs_int_lost_view), whatever the row
		 * is now: removing it succeeds, and never touches a lock
		 * another owner took meanwhile (not even with allow_break). */
		rc = fs_int_is_holder(ctx, lk) ? lock_release(fs->eng, lk)
					       : -EPERM;
		lock_unref(fs->eng, lk);
		lk = NULL;
		rc = fs_int_user_err(rc, "release", full);
		goto out;
	}
	if (lk) {
		/* Ours: released by the uid that acquired it, or root, from
		 * the holder's session while the holder lives. */
		rc = fs_int_is_holder(ctx, lk) ? may_remove(fs, ctx, lk)
					       : -EPERM;
		if (!rc)
			rc = release_held(fs, lk, later);
		lock_unref(fs->eng, lk);
		rc = fs_int_user_err(rc, "release", full);
		goto out;
	}
	record_init(&row);
	rc = lock_rows_get(fs->eng, full, &row);
	if (rc == 0) {
		int64_t seen;

		if (!fs_int_row_live(fs, &row, &seen)) {
			rc = -ENOENT; /* invisible: expired by observation */
		} else if (!fs->cfg.allow_break || ctx->uid != 0) {
			rc = -EPERM;
		} else if (row.session && record_session_key_ok(row.session)) {
			/* Kept by a session's heartbeats, which never read
			 * the row: its holder would not be told, and would run
			 * on beside the next one. It lapses a lease after its
			 * session stops; its own mount may remove it. */
			log_info(TAG,
				 "unlink key=%s refused (EBUSY): held by owner "
				 "%s through its session, whose holder a break "
				 "would not reach; remove it on that mount, or "
				 "stop that mount",
				 full, row.owner ? row.owner : "?");
			rc = -EBUSY;
		} else {
			/* Break another owner's lock, exactly the row we saw
			 * (and forget our observation of it). */
			rc = lock_rows_break(fs->eng, full, row.rvn);
			if (rc == -ECANCELED)
				rc = -EBUSY; /* it changed meanwhile */
			if (!rc) {
				metrics_inc(fs->m, MC_BREAKS);
				log_info(TAG, "broke key=%s owner=%s", full,
					 row.owner ? row.owner : "?");
			}
		}
	}
	record_fini(&row);
	rc = fs_int_user_err(rc, "unlink", full);
out:
	if (!rc) {
		char *pk = fs_int_path_key(rel, false);
		struct fs_node *n;

		fs_int_entry_changed(fs, rel, 0);
		pthread_mutex_lock(&fs->mu);
		n = pk ? smap_get(&fs->by_path, pk) : NULL;
		if (n && n->alias && !strcmp(n->alias, rel)) {
			/* The link() name goes; the node keeps its first. */
			fs_int_unmap_one(fs, n, rel);
			free(n->alias);
			n->alias = NULL;
		} else if (n && n->alias) {
			/* The first name goes; the linked name stays. */
			fs_int_unmap_one(fs, n, rel);
			free(n->rel);
			n->rel = n->alias;
			n->alias = NULL;
		} else if (n) {
			fs_int_unmap_path(fs, n);
		}
		pthread_mutex_unlock(&fs->mu);
		free(pk);
	}
	free(rel);
	free(full);
	return rc;
}

int fs_link(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
	    uint64_t newparent, const char *newname, struct fs_entry *e)
{
	const struct lock_config *lc = lock_engine_config(fs->eng);
	struct lock *src = NULL, *lk = NULL;
	struct lock_record rec;
	struct lock_holder holder;
	struct fs_node *n;
	bool is_dir, fixed;
	char *rel = NULL, *src_rel = NULL, *full = NULL, *src_full = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	record_init(&rec);
	rc = fs_int_node_info(fs, ino, &src_rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir || fixed) {
		rc = -EPERM;
		goto out;
	}
	rc = fs_int_child_keys(fs, newparent, newname, &rel, &full);
	if (rc)
		goto out;
	src_full = fs_int_full_key(fs, src_rel);
	if (!src_full) {
		rc = -ENOMEM;
		goto out;
	}
	/* Only the holder of a lock of this mount may give it a second name,
	 * and the second name is a lock of its own, acquired for the same
	 * holder (the dotlock protocol of liblockfile and procmail). */
	src = lock_find(fs->eng, src_full);
	if (!src || !fs_int_is_holder(ctx, src)) {
		rc = -EPERM;
		goto out;
	}
	/* One second name at a time: an inode keeps one alias, and a third
	 * name took its place while the second still mapped to the inode,
	 * so that one name then read and wrote another's key. */
	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	rc = n && n->alias ? -EMLINK : 0;
	pthread_mutex_unlock(&fs->mu);
	if (rc)
		goto out;
	holder = *lock_holder(src);
	/* The second name starts with the first one's data, written in its
	 * acquire (the first name's pending writes go first). */
	fs_wb_write_pending(fs->wb, src);
	if (lock_snapshot(fs->eng, src, &rec, NULL) || !rec.has_data)
		rec.data_len = 0;
	/* The second name is a lock more for the holder's uid. */
	rc = fs_quota_lock_begin(fs->quota, (uint32_t)holder.uid,
				 fs_int_count_held, fs->eng);
	if (rc)
		goto out;
	rc = lock_acquire_data(fs->eng, full, &holder,
			       lc->hold == HOLD_FD ? HOLD_UNLINK : lc->hold,
			       rec.data, rec.data_len, &lk);
	fs_quota_lock_end(fs->quota, (uint32_t)holder.uid);
	fs_int_absent_forget(fs, full); /* not known free any more */
	if (rc == -EISDIR)
		rc = -EEXIST; /* the new name is a directory */
	if (rc) {
		rc = fs_int_user_err(rc, "link", full);
		goto out;
	}
	/* No open file holds the new name. */
	lock_holder_closed(fs->eng, lk);
	record_fini(&rec);
	record_init(&rec);
	lock_snapshot(fs->eng, lk, &rec, NULL);
	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->alias) {
		n = NULL; /* a link of the same inode made meanwhile */
		rc = -EMLINK;
	} else if (n) {
		char *pk = fs_int_path_key(rel, false);
		struct fs_node *old = pk ? smap_get(&fs->by_path, pk) : NULL;

		if (old && old != n) {
			smap_del(&fs->by_path, pk);
			old->in_path_map = false;
		}
		free(n->alias);
		n->alias = strdup(rel);
		if (pk && n->alias && !smap_put(&fs->by_path, pk, n)) {
			n->nlookup++;
			fs_int_lock_attr(fs, n->ino, &rec, RENDER_HELD, 0,
					 &e->attr);
			e->attr.nlink = fs_int_node_nlink(n);
		} else {
			free(n->alias);
			n->alias = NULL;
			n = NULL;
		}
		free(pk);
	}
	pthread_mutex_unlock(&fs->mu);
	if (!n) {
		lock_release(fs->eng, lk);
		if (!rc)
			rc = -ENOMEM;
		goto out;
	}
	fs_int_fill_entry(fs, e, FS_ENTRY_OWN_LOCK);
	fs_int_entry_changed(fs, rel, 0);
out:
	lock_unref(fs->eng, lk);
	lock_unref(fs->eng, src);
	record_fini(&rec);
	free(rel);
	free(src_rel);
	free(full);
	free(src_full);
	return rc;
}
