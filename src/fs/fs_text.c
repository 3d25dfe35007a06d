/* fs_text: the text a read at offset 0 returns: of a lock file (this
 * mount's lock as the engine and a fresh read of its row tell it, or
 * another owner's row as DynamoDB has it), and of the control files
 * (.lockfs/status shows each reader the locks it may see, as ls would).
 * Threads: FUSE workers; never holds fs->mu across a request. */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* A reader sees a lock as ls would show it: it may search every directory
 * from the mount root down to the lock's, and read that one. Root sees
 * every lock, and anyone their own. */
struct view {
	struct fs *fs;
	const struct fs_cred *cred;
	struct smap dirs; /* rel -> struct fs_attr, looked up once */
};

/* The attributes of directory rel as a lookup shows them: its row, else
 * those of a directory known only through keys below it. */
static int view_dir(struct view *v, const char *rel, struct fs_attr *a)
{
	struct store_lookup sl;
	struct fs_attr *c = smap_get(&v->dirs, rel);
	char *full;
	int rc = 0;

	if (c) {
		*a = *c;
		return 0;
	}
	fs_int_dir_attr(v->fs, 0, NULL, a);
	if (*rel) {
		full = fs_int_full_key(v->fs, rel);
		if (!full)
			return -ENOMEM;
		store_lookup_init(&sl);
		rc = lock_rows_lookup(v->fs->eng, full, &sl);
		if (!rc && sl.has_dir)
			fs_int_dir_attr(v->fs, 0, &sl.dir, a);
		store_lookup_fini(&sl);
		free(full);
	}
	c = rc ? NULL : malloc(sizeof(*c));
	if (c) {
		*c = *a;
		if (smap_put(&v->dirs, rel, c))
			free(c);
	}
	return rc;
}

static bool view_check(struct view *v, const char *rel, bool read)
{
	struct fs_attr a;

	return !view_dir(v, rel, &a) &&
	       fs_perm_may(v->cred, a.mode, a.uid, a.gid,
			   FS_PERM_X | (read ? FS_PERM_R : 0));
}

static bool view_may_see(void *arg, const char *key, int64_t holder_uid)
{
	struct view *v = arg;
	const struct fs *fs = v->fs;
	char *rel, *slash;
	bool ok;

	if (v->cred->uid == 0 || holder_uid == (int64_t)v->cred->uid)
		return true;
	if (strncmp(key, fs->prefix, fs->prefix_len))
		return false;
	rel = strdup(key + fs->prefix_len);
	if (!rel)
		return false;
	/* The root, then each directory on the way: x on all, r on the
	 * lock's own. */
	ok = view_check(v, "", !strchr(rel, '/'));
	for (slash = strchr(rel, '/'); ok && slash;
	     slash = strchr(slash + 1, '/')) {
		bool last = !strchr(slash + 1, '/');

		*slash = '\0';
		ok = view_check(v, rel, last);
		*slash = '/';
	}
	free(rel);
	return ok;
}

static void free_value_cb(void *arg, const char *key, void *value)
{
	free(value);
}

static int status_text(struct fs *fs, struct fs_handle *h, struct buf *out)
{
	const struct lock_config *lc = lock_engine_config(fs->eng);
	struct view v = { fs, h->cred, { 0 } };
	struct ctl_info ci = {
		.owner = lc->owner,
		.table = fs->cfg.table ? fs->cfg.table : "",
		.region = fs->cfg.region ? fs->cfg.region : "",
		.endpoint = fs->cfg.endpoint ? fs->cfg.endpoint : "",
		.prefix = fs->prefix,
		.hold = fs->cfg.hold_name ? fs->cfg.hold_name : "",
		.release = fs->cfg.release_async ? "async" : "sync",
		.lease_ms = lc->lease_ms,
		.heartbeat_ms = lc->heartbeat_ms,
		.safe_period_ms = lc->safe_period_ms,
		.may_see = h->cred ? view_may_see : NULL,
		.may_see_arg = &v,
	};
	int rc;

	smap_init(&v.dirs);
	rc = ctl_render_status(&ci, fs->eng, out);
	smap_each(&v.dirs, free_value_cb, NULL);
	smap_fini(&v.dirs);
	return rc;
}

/* The text of a key this mount holds no lock on: the row as DynamoDB has
 * it, held or expired by our observation; gone is an empty file. */
static int text_of_row(struct fs *fs, const char *full, struct buf *out)
{
	struct lock_record row;
	int rc;

	record_init(&row);
	rc = lock_rows_get(fs->eng, full, &row);
	if (rc == -ENOENT) {
		rc = 0; /* gone: an empty file */
	} else if (rc) {
		rc = fs_int_user_err(rc, "read", full);
	} else {
		int64_t seen;
		bool live = fs_int_row_live(fs, &row, &seen);

		lock_rows_session_show(fs->eng, &row);
		rc = render_lock_text(&row, live ? RENDER_HELD : RENDER_EXPIRED,
				      out);
	}
	record_fini(&row);
	return rc;
}

/* Lost is final and ours to tell: no request needed (and DynamoDB may
 * well be unreachable right now). */
static int text_of_lost(struct fs *fs, struct lock *lk, struct buf *out)
{
	struct lock_record mine;
	int rc;

	record_init(&mine);
	rc = lock_snapshot(fs->eng, lk, &mine, NULL);
	if (!rc)
		rc = render_lock_text(&mine, RENDER_LOST, out);
	record_fini(&mine);
	return rc;
}

/* The holder's read allocates the lock's fence (lazily). */
static void fence_for_holder(struct fs *fs, struct fs_handle *h,
			     struct lock *lk)
{
	uint64_t fence;

	if ((h->holding || h->by_holder) &&
	    lock_get_state(fs->eng, lk) == LOCK_HELD)
		lock_fence(fs->eng, lk, &fence);
}

/* Whether row (NULL: none) is what our lock last wrote: its version for
 * us (held shared, our reader entry's) is the one before or after the
 * read. A reader's fence is its own (the counter when it read it): the
 * holder sees it, so it is put in row. */
static bool row_is_ours(struct fs *fs, struct lock *lk, struct lock_record *row,
			const char *before, const char *after)
{
	const char *reader = lock_reader_id(fs->eng, lk);
	const char *v = row ? record_holder_version(row, reader) : "";
	const struct record_reader *rd;

	if (!v[0] || (strcmp(v, before) && strcmp(v, after)))
		return false;
	rd = record_reader_find(row, reader);
	if (rd && rd->fence)
		row->fence = rd->fence;
	return true;
}

/* Our lock: its state is ours to tell; the row is read fresh. */
static int text_of_ours(struct fs *fs, struct fs_handle *h, struct lock *lk,
			const char *full, struct buf *out)
{
	char before[RECORD_RVN_MAX], after[RECORD_RVN_MAX];
	struct lock_record row, mine;
	enum lock_state st;
	int rc;

	fence_for_holder(fs, h, lk);
	record_init(&row);
	record_init(&mine);
	lock_current_rvn(fs->eng, lk, before);
	rc = lock_rows_get(fs->eng, full, &row);
	lock_current_rvn(fs->eng, lk, after);
	lock_snapshot(fs->eng, lk, &mine, &st);
	if (rc && rc != -ENOENT) {
		rc = fs_int_user_err(rc, "read", full);
		goto out;
	}
	if (st == LOCK_HELD || st == LOCK_RELEASING) {
		if (row_is_ours(fs, lk, rc ? NULL : &row, before, after)) {
			if (row.session) { /* shown by its session */
				row.lease_ms = mine.lease_ms;
				row.heartbeat_real_ms = mine.heartbeat_real_ms;
			}
			rc = render_lock_text(&row, RENDER_HELD, out);
			goto out;
		}
		/* The row is not what we last wrote: a renewal tells whether
		 * we still hold it. When it cannot tell (no answer), the
		 * engine's state stands: the lock stays trusted until its
		 * safe period ends by the clock, and lost is only said once
		 * it is final. */
		lock_renew_sync(fs->eng, lk);
		lock_snapshot(fs->eng, lk, &mine, &st);
		if (st == LOCK_HELD) {
			rc = render_lock_text(&mine, RENDER_HELD, out);
			goto out;
		}
	}
	rc = render_lock_text(
		&mine, st == LOCK_LOST ? RENDER_LOST : RENDER_RELEASED, out);
out:
	record_fini(&row);
	record_fini(&mine);
	return rc;
}

/* The full key of the lock file h is open on. */
static int handle_full_key(struct fs *fs, struct fs_handle *h, char **full)
{
	bool is_dir, fixed;
	char *rel = NULL;
	int rc;

	rc = fs_int_node_info(fs, h->node->ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	*full = fs_int_full_key(fs, rel);
	free(rel);
	return *full ? 0 : -ENOMEM;
}

int fs_int_handle_text(struct fs *fs, struct fs_handle *h, struct buf *out)
{
	struct lock *lk;
	char *full = NULL;
	int rc;

	if (h->node == &fs->ctl_status)
		return status_text(fs, h, out);
	if (h->node == &fs->ctl_metrics)
		return ctl_render_metrics(fs->m, out);
	rc = handle_full_key(fs, h, &full);
	if (rc)
		return rc;
	lk = fs_int_handle_lock(fs, h);
	if (!lk) {
		rc = text_of_row(fs, full, out);
	} else {
		/* This mount reads its own writes; an error is the
		 * writers' to be told, not this reader's. */
		fs_wb_write_pending(fs->wb, lk);
		if (lock_get_state(fs->eng, lk) == LOCK_LOST)
			rc = text_of_lost(fs, lk, out);
		else
			rc = text_of_ours(fs, h, lk, full, out);
		lock_unref(fs->eng, lk);
	}
	free(full);
	return rc;
}
