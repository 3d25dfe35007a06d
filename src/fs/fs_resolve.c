/* fs_resolve: what a name is now: a lock of this mount (the engine
 * answers), else what DynamoDB says of the key (a live row by our
 * observation, a directory row, or a directory known through keys below
 * it, listed or held here); the keys of a parent's child; store errors as users
 * see them. Threads: FUSE workers; never holds fs->mu across a request. */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"

#define TAG "fs"

void fs_int_resolved_init(struct resolved *r)
{
	memset(r, 0, sizeof(*r));
	r->own_len = -1;
	record_init(&r->rec);
	dir_record_init(&r->dir);
}

void fs_int_resolved_fini(struct resolved *r)
{
	record_fini(&r->rec);
	dir_record_fini(&r->dir);
}

/* Store failures as users see them: permission stays permission, any
 * other backend trouble (unreachable, throttled past the deadline, missing
 * table, malformed answer, no credentials) is EIO, with the detail in the
 * log. Errors of the filesystem's own (EPERM, ENOENT, ENOTEMPTY...) pass
 * through. */
int fs_int_user_err(int rc, const char *what, const char *key)
{
	char why[LOG_ERRNO_MAX];

	switch (rc) {
	case -ETIMEDOUT:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -EHOSTUNREACH:
	case -EAGAIN:
	case -EPROTO:
	case -EMSGSIZE:
	case -ENXIO:
	case -EINVAL:
	case -ESTALE:
	case -ECANCELED:
	case -ENOSPC:
	case -EMFILE: /* the daemon's own open files, not the caller's */
	case -ENOKEY: /* no credentials to sign with (see the log) */
	case -EKEYEXPIRED:
	case -EIO:
		log_warn(TAG, "%s key=%s: DynamoDB request failed: %s", what,
			 key, log_errno(rc, why, sizeof(why)));
		return -EIO;
	default:
		return rc;
	}
}

/* Judges a foreign row: returns true if it is live (not expired by our
 * observation) and fills the time of our first sighting. */
bool fs_int_row_live(struct fs *fs, const struct lock_record *r,
		     int64_t *seen_real_ms)
{
	struct observation ob;
	bool lapsed = lock_rows_judge(fs->eng, r, &ob);

	*seen_real_ms = ob.first_seen_real_ms;
	/* A shared row whose readers all left is free (anyone may take it
	 * at once): no lock to show. Unless another mount's writer marked
	 * it: that writer takes it next, and an acquire here is refused, so
	 * it is shown held (a create that opens it must not then find it
	 * gone). */
	return !lapsed && !lock_row_free(fs->eng, r);
}

/* The row of directory rel as this mount last saw it (fs_dircheck writes
 * it back), into d with key full; false when never seen. */
static bool held_dir_view(struct fs *fs, const char *rel, const char *full,
			  struct dir_record *d)
{
	char *pk = fs_int_path_key(rel, true);
	struct fs_node *n;
	bool seen = false;

	pthread_mutex_lock(&fs->mu);
	n = pk ? smap_get(&fs->by_path, pk) : NULL;
	if (n && n->dir_row_seen) {
		d->mode = n->dir_row.mode;
		d->uid = n->dir_row.uid;
		d->gid = n->dir_row.gid;
		d->created_real_ms = n->dir_row.created_real_ms;
		seen = true;
	}
	pthread_mutex_unlock(&fs->mu);
	free(pk);
	if (seen && !(d->key = strdup(full)))
		seen = false;
	return seen;
}

/* What rel is now. both: ask for the lock and the directory row at once
 * (lookup); otherwise only the lock row (getattr of a file). remember: a
 * kernel's lookup, which may be answered by a name found free moments ago,
 * and notes one found free now, as of when it asked (FS_ABSENT_MS). */
static int resolve(struct fs *fs, const char *rel, bool both, bool remember,
		   struct resolved *out)
{
	struct store_lookup sl;
	struct lock *lk;
	char *full = fs_int_full_key(fs, rel);
	int64_t asked_mono_ms;
	int rc;

	if (!full)
		return -ENOMEM;
	lk = lock_find(fs->eng, full);
	if (lk) {
		enum lock_state st;

		rc = lock_snapshot(fs->eng, lk, &out->rec, &st);
		/* Data written and not in the table yet is in its size. */
		out->own_len = fs_wb_len(fs->wb, lk);
		lock_unref(fs->eng, lk);
		if (!rc) {
			out->kind = K_FILE;
			out->ours = true;
			out->state = RENDER_HELD;
		}
		free(full);
		return rc;
	}
	if (lock_recently_released(fs->eng, full) ||
	    (remember && fs_int_absent_known(fs, full))) {
		free(full);
		return 0;
	}
	asked_mono_ms = clk_mono_ms(fs->host->clk);
	store_lookup_init(&sl);
	if (both) {
		rc = lock_rows_lookup(fs->eng, full, &sl);
	} else {
		rc = lock_rows_get(fs->eng, full, &sl.lock);
		sl.has_lock = rc == 0;
		if (rc == -ENOENT)
			rc = 0;
	}
	if (rc) {
		store_lookup_fini(&sl);
		rc = fs_int_user_err(rc, "lookup", full);
		free(full);
		return rc;
	}
	if (sl.has_lock && fs_int_row_live(fs, &sl.lock, &out->seen_real_ms)) {
		out->kind = K_FILE;
		out->state = RENDER_HELD;
		rc = record_copy(&out->rec, &sl.lock);
		if (!rc)
			lock_rows_session_show(fs->eng, &out->rec);
	} else if (sl.has_dir) {
		out->kind = K_DIR;
		rc = dir_record_copy(&out->dir, &sl.dir);
	} else if (both && fs_int_implicit_dir_known(fs, full)) {
		/* Known through keys below it: a listing showed them. */
		out->kind = K_DIR;
		out->implicit = true;
	} else if (both && lock_holds_below(fs->eng, full)) {
		/* This mount holds a lock below it, whose marker is gone (an
		 * rmdir elsewhere, fs_dircheck writes it back): the holder
		 * must still reach its lock, and sees the directory as it
		 * last saw its row (not open to all, as the root is). */
		out->kind = K_DIR;
		out->from_view = held_dir_view(fs, rel, full, &out->dir);
		out->implicit = !out->from_view;
	}
	store_lookup_fini(&sl);
	if (remember && !rc && out->kind == K_NONE)
		fs_int_absent_note(fs, full, asked_mono_ms);
	free(full);
	return rc;
}

int fs_int_resolve(struct fs *fs, const char *rel, bool both,
		   struct resolved *out)
{
	return resolve(fs, rel, both, false, out);
}

int fs_int_resolve_name(struct fs *fs, const char *rel, struct resolved *out)
{
	return resolve(fs, rel, true, true, out);
}

int64_t fs_int_own_len(struct fs *fs, struct lock *lk)
{
	struct lock_record rec;
	int64_t len = fs_wb_len(fs->wb, lk);

	if (len >= 0)
		return len;
	record_init(&rec);
	if (!lock_snapshot(fs->eng, lk, &rec, NULL))
		len = rec.has_data ? (int64_t)rec.data_len : 0;
	record_fini(&rec);
	return len < 0 ? 0 : len;
}

void fs_int_resolved_attr(const struct fs *fs, uint64_t ino, const char *rel,
			  const struct resolved *r, struct fs_attr *a)
{
	if (r->kind == K_DIR) {
		fs_int_dir_attr(fs, ino, r->implicit ? NULL : &r->dir, a);
		fs_dirstat_apply(fs->dirstat, rel, a);
	} else {
		fs_int_lock_attr(fs, ino, &r->rec, r->state, r->seen_real_ms,
				 a);
		if (r->ours && r->own_len >= 0)
			a->size = (uint64_t)r->own_len;
	}
}

/* ---- names ------------------------------------------------------------- */

/* Copies the relative path of a directory inode; -ENOENT, -ENOTDIR. */
static int dir_rel(struct fs *fs, uint64_t ino, char **rel)
{
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (!n)
		rc = -ENOENT;
	else if (!n->is_dir || n == &fs->ctl_dir)
		rc = n == &fs->ctl_dir ? -EPERM : -ENOTDIR;
	else if (!(*rel = strdup(n->rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

/* Checks name and builds the relative key of parent/name. */
int fs_int_child_rel(struct fs *fs, uint64_t parent, const char *name,
		     char **rel)
{
	char *dir = NULL;
	int rc = names_check(name);

	if (rc)
		return rc;
	rc = dir_rel(fs, parent, &dir);
	if (rc)
		return rc;
	rc = names_join(dir, name, fs->prefix_len, rel);
	free(dir);
	return rc;
}

/* child_rel, and the full key of the result. */
int fs_int_child_keys(struct fs *fs, uint64_t parent, const char *name,
		      char **rel, char **full)
{
	int rc = fs_int_child_rel(fs, parent, name, rel);

	if (rc)
		return rc;
	*full = fs_int_full_key(fs, *rel);
	if (!*full) {
		free(*rel);
		*rel = NULL;
		return -ENOMEM;
	}
	return 0;
}
