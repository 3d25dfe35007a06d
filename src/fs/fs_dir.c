/* fs_dir: directories: mkdir, rmdir, chmod of directories, listings
 * (one store listing per opendir: a Query of the table's index on the
 * parent directory, or a consistent Scan; served by index), and the directories
 * of a mount prefix. A listing notes the directories known only through
 * keys below them (written by other clients) in fs_seen. Threads: FUSE
 * workers; fs->mu as in fs_int.h, never held across a request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clk.h"
#include "fs_int.h"
#include "log.h"
#include "names.h"

#define TAG "fs"

struct fs_dirent {
	char *name;
	bool is_dir;
	bool ours;    /* a lock this mount holds */
	bool has_row; /* a directory's attributes come from its own row */
	struct fs_attr attr;
	struct dir_record row; /* has_row: that row (key NULL) */
};

struct fs_dirlist {
	int32_t lister_pid; /* the process that opened the listing */
	uint32_t uid;	    /* its uid, charged one FSQ_OPENS */
	struct fs_node *dir;
	struct fs_dirent *ents;
	size_t n, cap;
};

/* chmod of a directory made with mkdir: by its owner as shown (see
 * fs_int_dir_attr: never nobody) or root. The root of the mount and
 * directories that only exist through the keys below them have no row to
 * keep a mode in. The setuid and setgid bits are not kept. */
int fs_int_chmod_dir(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		     uint32_t mode)
{
	struct resolved r;
	char *full;
	int rc;

	if (!*rel)
		return -EPERM;
	fs_int_resolved_init(&r);
	rc = fs_int_resolve(fs, rel, true, &r);
	if (!rc && (r.kind != K_DIR || r.implicit))
		rc = r.kind == K_DIR ? -EPERM : -ENOENT;
	if (!rc && ctx->uid != 0 &&
	    ctx->uid != fs_int_shown_id(r.dir.uid, fs->cfg.root_uid))
		rc = -EPERM;
	fs_int_resolved_fini(&r);
	if (rc)
		return rc;
	full = fs_int_full_key(fs, rel);
	rc = full ? lock_rows_set_dir_mode(fs->eng, full, mode & 01777)
		  : -ENOMEM;
	fs_int_dir_view_forget(fs, rel);
	rc = fs_int_user_err(rc, "chmod", rel);
	free(full);
	return rc;
}

int fs_mkdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name, uint32_t mode, struct fs_entry *e)
{
	struct dir_record d;
	struct resolved r;
	struct fs_node *n;
	char *rel = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = fs_int_child_rel(fs, parent, name, &rel);
	if (rc)
		return rc;
	/* The kernel's lookup just found the name free, most often: that
	 * answer serves (the row's write below decides, on the lock item). */
	fs_int_resolved_init(&r);
	rc = fs_int_resolve_name(fs, rel, &r);
	if (!rc && r.kind != K_NONE && !r.implicit)
		rc = -EEXIST;
	fs_int_resolved_fini(&r);
	dir_record_init(&d);
	if (!rc)
		rc = fs_quota_take(fs->quota, ctx->uid, FSQ_DIRS);
	if (!rc) {
		d.key = fs_int_full_key(fs, rel);
		d.mode = mode & 01777;
		d.uid = ctx->uid;
		d.gid = ctx->gid;
		d.created_real_ms = clk_real_ms(fs->host->clk);
		/* The name's lock item decides: a live lock there gives
		 * EEXIST; a lock this mount has seen lapse (no heartbeat for a
		 * lease) is taken over, as an acquire would take it. */
		rc = d.key ? lock_rows_put_dir(fs->eng, &d, true) : -ENOMEM;
		rc = fs_int_user_err(rc, "mkdir", rel);
		/* A lock released here by that name is a directory now. */
		if (!rc)
			lock_forget_recent_release(fs->eng, d.key);
		/* Its own directory is read again (an rmdir elsewhere). */
		if (!rc)
			fs_int_dir_wrote(fs, d.key, true);
		/* Counted until removed (untracked if memory is short). */
		if (rc || fs_quota_dir_made(fs->quota, ctx->uid, d.key))
			fs_quota_give(fs->quota, ctx->uid, FSQ_DIRS);
	}
	if (!rc) {
		fs_dirstat_made(fs->dirstat, rel,
				fs_int_host_time(fs, d.created_real_ms));
		fs_int_entry_changed(fs, rel, 1);
		pthread_mutex_lock(&fs->mu);
		n = fs_int_get_node(fs, rel, true, true);
		if (n) {
			fs_int_dir_attr(fs, n->ino, &d, &e->attr);
			fs_dirstat_apply(fs->dirstat, rel, &e->attr);
			fs_int_dir_row_seen_locked(n, &d);
		}
		pthread_mutex_unlock(&fs->mu);
		rc = n ? 0 : -ENOMEM;
		fs_int_fill_entry(fs, e, FS_ENTRY_DIR);
	}
	/* Written or refused, the name is not known free any more. */
	if (d.key)
		fs_int_absent_forget(fs, d.key);
	dir_record_fini(&d);
	free(rel);
	return rc;
}

struct child_probe {
	struct fs *fs;
	bool found;
};

static int probe_child(void *arg, const struct store_row *row)
{
	struct child_probe *p = arg;
	int64_t seen;

	if (row->kind == STORE_ROW_DIR ||
	    fs_int_row_live(p->fs, row->lock, &seen)) {
		p->found = true;
		return 1;
	}
	return 0;
}

/* After rmdir deleted dir's marker: a create inside that landed after the
 * listing that found it empty (another mount's, by a lookup of dir made
 * before the delete) is looked for again, and if one is there the marker
 * is put back (where no row is) and rmdir fails as if it had come second:
 * -ENOTEMPTY. A listing that fails, or one by the index that does not show
 * the create yet, leaves it to the creating mount, which reads dir again
 * after its write (fs_dircheck). */
static int recheck_empty(struct fs *fs, const char *dir, const char *under)
{
	struct child_probe probe = { fs, false };
	char why[LOG_ERRNO_MAX];
	int rc = lock_rows_list(fs->eng, under, probe_child, &probe);

	if (rc || !probe.found)
		return 0;
	rc = fs_int_dir_restore(fs, dir);
	if (!rc || rc == -EEXIST)
		return -ENOTEMPTY;
	log_warn(TAG,
		 "rmdir dir=%s: a lock was taken inside while it was removed, "
		 "and its marker could not be written again: %s; the mount "
		 "that took the lock writes it again",
		 dir, log_errno(rc, why, sizeof(why)));
	return 0;
}

int fs_rmdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name)
{
	struct child_probe probe = { fs, false };
	char *rel = NULL, *full = NULL, *under = NULL;
	int rc;

	if (parent == FS_ROOT_INO && !strcmp(name, FS_CTL_DIR_NAME))
		return -EPERM;
	rc = fs_int_child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	if (asprintf(&under, "%s/", full) < 0)
		under = NULL;
	if (!under) {
		rc = -ENOMEM;
		goto out;
	}
	/* A lock of ours below may not be listed yet (the index lags). */
	if (lock_holds_below(fs->eng, full))
		rc = -ENOTEMPTY;
	else
		rc = lock_rows_list(fs->eng, under, probe_child, &probe);
	if (!rc && probe.found)
		rc = -ENOTEMPTY;
	if (!rc) {
		rc = lock_rows_delete_dir(fs->eng, full);
		if (rc == -ENOENT) {
			/* No row: an implicit directory (empty now) or none. */
			rc = fs_int_implicit_dir_known(fs, full) ? 0 : -ENOENT;
		} else if (!rc) {
			rc = recheck_empty(fs, full, under);
		}
	}
	if (!rc) {
		char *pk = fs_int_path_key(rel, true);
		struct fs_node *n;

		fs_quota_dir_removed(fs->quota, full);
		fs_dirstat_removed(fs->dirstat, rel);
		fs_int_entry_changed(fs, rel, -1);
		pthread_mutex_lock(&fs->mu);
		free(smap_del(&fs->implicit, full));
		n = pk ? smap_get(&fs->by_path, pk) : NULL;
		if (n) {
			n->dir_ok_mono_ms = 0;
			fs_int_unmap_path(fs, n);
		}
		pthread_mutex_unlock(&fs->mu);
		free(pk);
	}
	rc = fs_int_user_err(rc, "rmdir", full);
out:
	free(rel);
	free(full);
	free(under);
	return rc;
}

/* ---- listings ----------------------------------------------------------- */

static int add_dirent(struct fs_dirlist *dl, const char *name, size_t len,
		      bool is_dir, struct fs_dirent **out)
{
	struct fs_dirent *d;

	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 32;
		struct fs_dirent *p = realloc(dl->ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		dl->ents = p;
		dl->cap = cap;
	}
	d = &dl->ents[dl->n];
	memset(d, 0, sizeof(*d));
	d->name = strndup(name, len);
	if (!d->name)
		return -ENOMEM;
	d->is_dir = is_dir;
	dl->n++;
	if (out)
		*out = d;
	return 0;
}

struct list_walk {
	struct fs *fs;
	struct fs_dirlist *dl;
	size_t skip;	  /* length of the listed directory's key
			   * prefix ("<prefix><dir>/") */
	struct smap seen; /* names already listed -> index + 1 */
};

/* Whether nm, a row's first name below the listed directory, can be shown: a
 * name no lookup could reach (a python_dynamodb_lock client may write any key:
 * "/abs", "a//b", "d/./e", a name over 255 bytes or a reserved one) is
 * left out, with one log line per mount: one such row must not fail the
 * whole listing (an empty name makes the kernel refuse it: EIO) or show
 * "." twice. The row itself is left alone. */
static bool listable_name(struct fs *fs, const char *key, const char *nm)
{
	if (!names_check(nm))
		return true;
	if (!__atomic_exchange_n(&fs->odd_key_logged, true, __ATOMIC_RELAXED))
		log_info(TAG,
			 "listings leave out rows whose key has no file name "
			 "here (key=%.200s: an empty, \".\", \"..\", "
			 "reserved or over-long name); said once per mount",
			 key);
	return false;
}

static int list_row(void *arg, const struct store_row *row)
{
	struct list_walk *w = arg;
	const char *key =
		row->kind == STORE_ROW_LOCK ? row->lock->key : row->dir->key;
	const char *rest = key + w->skip, *slash;
	struct fs_dirent *d = NULL;
	int64_t own_len = -1;
	size_t len;
	bool is_dir;
	int rc;

	if (strlen(key) <= w->skip)
		return 0;
	slash = strchr(rest, '/');
	len = slash ? (size_t)(slash - rest) : strlen(rest);
	is_dir = slash || row->kind == STORE_ROW_DIR;
	bool ours = false;
	char *nm, *sk;
	uintptr_t at;

	nm = strndup(rest, len);
	if (!nm)
		return -ENOMEM;
	if (!listable_name(w->fs, key, nm))
		goto skip;

	if (!slash && row->kind == STORE_ROW_LOCK) {
		struct lock *lk = lock_find(w->fs->eng, key);
		int64_t seen = 0;

		ours = lk != NULL;
		if (lk) {
			own_len = fs_int_own_len(w->fs, lk);
			lock_unref(w->fs->eng, lk);
		} else if (lock_recently_released(w->fs->eng, key))
			goto skip; /* as a lookup answers (the index may lag) */
		else if (!fs_int_row_live(w->fs, row->lock, &seen))
			goto skip; /* expired by observation: invisible */
	}
	if (slash) {
		/* A key below: its first component is a directory. */
		char *dkey = strndup(key, w->skip + len);

		if (dkey) {
			fs_int_implicit_dir_note(w->fs, dkey);
			free(dkey);
		}
	}
	sk = fs_int_path_key(nm, is_dir);
	free(nm);
	if (!sk)
		return -ENOMEM;
	at = (uintptr_t)smap_get(&w->seen, sk);
	if (at) {
		/* Listed already. A directory first seen through a key below
		 * it takes its own row's owner and mode when the row comes
		 * (scan order is arbitrary): never the root's, or readdirplus
		 * would have the kernel cache them and open a private
		 * directory. */
		d = &w->dl->ents[at - 1];
		if (d->is_dir && !d->has_row && !slash &&
		    row->kind == STORE_ROW_DIR) {
			fs_int_dir_attr(w->fs, 0, row->dir, &d->attr);
			d->has_row = true;
			d->row = *row->dir;
			d->row.key = NULL;
		}
		free(sk);
		return 0;
	}
	rc = smap_put(&w->seen, sk, (void *)(uintptr_t)(w->dl->n + 1));
	free(sk);
	if (rc)
		return rc;
	rc = add_dirent(w->dl, rest, len, is_dir, &d);
	if (rc)
		return rc;
	d->ours = ours;
	if (!slash && row->kind == STORE_ROW_LOCK) {
		fs_int_lock_attr(w->fs, 0, row->lock, RENDER_HELD,
				 clk_real_ms(w->fs->host->clk), &d->attr);
		/* Ours: as this mount wrote it (the index may lag). */
		if (own_len >= 0)
			d->attr.size = (uint64_t)own_len;
	} else {
		d->has_row = !slash;
		fs_int_dir_attr(w->fs, 0, slash ? NULL : row->dir, &d->attr);
		if (d->has_row) {
			d->row = *row->dir;
			d->row.key = NULL;
		}
	}
	return 0;
skip:
	free(nm);
	return 0;
}

/* The locks this mount holds directly in the listed directory, which a
 * listing by the index (eventually consistent) may not show yet: added
 * from the engine when missing, so that `ls` shows this mount's own
 * acquires at once. */
struct own_keys {
	const char *under;
	size_t skip;
	char **keys;
	size_t n, cap;
	int rc;
};

static void own_key(void *arg, const struct lock_info *li)
{
	struct own_keys *o = arg;
	char **p;

	if (o->rc || strncmp(li->key, o->under, o->skip) || !li->key[o->skip] ||
	    strchr(li->key + o->skip, '/'))
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;

		p = realloc(o->keys, cap * sizeof(*p));
		if (!p) {
			o->rc = -ENOMEM;
			return;
		}
		o->keys = p;
		o->cap = cap;
	}
	o->keys[o->n] = strdup(li->key);
	if (!o->keys[o->n])
		o->rc = -ENOMEM;
	else
		o->n++;
}

static int add_own_locks(struct list_walk *w, const char *under)
{
	struct own_keys o = { under, w->skip, NULL, 0, 0, 0 };
	int rc;

	lock_each_in_dir(w->fs->eng, under, own_key, &o);
	rc = o.rc;
	for (size_t i = 0; i < o.n; i++) {
		const char *name = o.keys[i] + w->skip;
		char *sk = rc ? NULL : fs_int_path_key(name, false);
		struct lock_record rec;
		struct fs_dirent *d;
		enum lock_state st;
		struct lock *lk;

		if (!rc && !sk)
			rc = -ENOMEM;
		if (rc || smap_get(&w->seen, sk)) {
			free(sk);
			continue;
		}
		lk = lock_find(w->fs->eng, o.keys[i]);
		record_init(&rec);
		if (lk && !lock_snapshot(w->fs->eng, lk, &rec, &st)) {
			rc = smap_put(&w->seen, sk,
				      (void *)(uintptr_t)(w->dl->n + 1));
			if (!rc)
				rc = add_dirent(w->dl, name, strlen(name),
						false, &d);
			if (!rc) {
				d->ours = true;
				fs_int_lock_attr(w->fs, 0, &rec, RENDER_HELD,
						 clk_real_ms(w->fs->host->clk),
						 &d->attr);
				d->attr.size =
					(uint64_t)fs_int_own_len(w->fs, lk);
			}
		}
		if (lk)
			lock_unref(w->fs->eng, lk);
		record_fini(&rec);
		free(sk);
	}
	for (size_t i = 0; i < o.n; i++)
		free(o.keys[i]);
	free(o.keys);
	return rc;
}

/* What the listing says of the directory's entries (fs_dirstat). */
static void note_listing(struct fs *fs, const char *rel,
			 const struct fs_dirlist *dl)
{
	uint64_t hash = 0;
	int subdirs = 0;
	size_t i;

	for (i = 2; i < dl->n; i++) {
		subdirs += dl->ents[i].is_dir;
		hash += fs_dirstat_hash_name(dl->ents[i].name,
					     dl->ents[i].is_dir);
	}
	fs_dirstat_listed(fs->dirstat, rel, subdirs, hash,
			  clk_real_ms(fs->host->clk));
}

int fs_opendir(struct fs *fs, uint64_t ino, uint64_t *dh)
{
	return fs_opendir_ctx(fs, NULL, ino, dh);
}

int fs_opendir_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		   uint64_t *dh)
{
	struct fs_dirlist *dl = calloc(1, sizeof(*dl));
	struct list_walk w;
	struct fs_node *n;
	char *rel = NULL, *under = NULL;
	int rc;

	if (!dl)
		return -ENOMEM;
	dl->uid = ctx ? ctx->uid : 0;
	rc = fs_quota_take(fs->quota, dl->uid, FSQ_OPENS);
	if (rc) {
		free(dl);
		return rc;
	}
	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->is_dir) {
		n->opens++;
		rel = strdup(n->rel);
	}
	pthread_mutex_unlock(&fs->mu);
	if (!n || !n->is_dir) {
		fs_quota_give(fs->quota, dl->uid, FSQ_OPENS);
		free(dl);
		return n ? -ENOTDIR : -ENOENT;
	}
	dl->dir = n;
	dl->lister_pid = ctx ? ctx->pid : 0;
	rc = add_dirent(dl, ".", 1, true, NULL);
	if (!rc)
		rc = add_dirent(dl, "..", 2, true, NULL);
	if (rc || !rel)
		goto fail;
	if (n == &fs->ctl_dir) {
		rc = add_dirent(dl, "status", 6, false, NULL);
		if (!rc)
			rc = add_dirent(dl, "metrics", 7, false, NULL);
		if (rc)
			goto fail;
		fs_int_ctl_attr(fs, &fs->ctl_status, &dl->ents[2].attr);
		fs_int_ctl_attr(fs, &fs->ctl_metrics, &dl->ents[3].attr);
		goto done;
	}
	if (n == &fs->root) {
		rc = add_dirent(dl, FS_CTL_DIR_NAME, strlen(FS_CTL_DIR_NAME),
				true, NULL);
		if (rc)
			goto fail;
		fs_int_ctl_attr(fs, &fs->ctl_dir, &dl->ents[2].attr);
	}
	if (asprintf(&under, "%s%s%s", fs->prefix, rel, *rel ? "/" : "") < 0) {
		under = NULL;
		rc = -ENOMEM;
		goto fail;
	}
	w.fs = fs;
	w.dl = dl;
	w.skip = strlen(under);
	smap_init(&w.seen);
	int64_t listed = clk_mono_ms(fs->host->clk);

	rc = lock_rows_list(fs->eng, under, list_row, &w);
	if (!rc)
		rc = add_own_locks(&w, under);
	smap_fini(&w.seen);
	if (rc) {
		rc = fs_int_user_err(rc, "list", under);
		goto fail;
	}
	fs_int_implicit_dir_prune(fs, under, listed);
	note_listing(fs, rel, dl);
done:
	free(rel);
	free(under);
	*dh = (uint64_t)(uintptr_t)dl;
	return 0;
fail:
	free(rel);
	free(under);
	*dh = (uint64_t)(uintptr_t)dl;
	fs_releasedir(fs, *dh);
	*dh = 0;
	return rc;
}

int fs_readdir_entry(struct fs *fs, uint64_t dh, size_t idx, bool plus,
		     const char **name, struct fs_entry *e)
{
	struct fs_dirlist *dl = (struct fs_dirlist *)(uintptr_t)dh;
	struct fs_dirent *d;
	struct fs_node *n = NULL;
	char *rel = NULL;

	if (idx >= dl->n)
		return 1;
	d = &dl->ents[idx];
	*name = d->name;
	memset(e, 0, sizeof(*e));
	fs_int_fill_entry(fs, e, fs_int_entry_of(!d->is_dir, d->ours));
	if (idx < 2) {
		e->attr.ino = idx == 0 ? dl->dir->ino : FS_ROOT_INO;
		e->attr.mode = S_IFDIR;
		return 0;
	}
	e->attr = d->attr;
	pthread_mutex_lock(&fs->mu);
	if (dl->dir == &fs->ctl_dir) {
		n = idx == 2 ? &fs->ctl_status : &fs->ctl_metrics;
	} else if (dl->dir == &fs->root && idx == 2) {
		n = &fs->ctl_dir;
	} else if (!names_join(dl->dir->rel, d->name, 0, &rel)) {
		n = fs_int_get_node(fs, rel, d->is_dir, plus);
		if (d->is_dir)
			fs_dirstat_apply(fs->dirstat, rel, &e->attr);
		if (n && d->is_dir && d->has_row)
			fs_int_dir_row_seen_locked(n, &d->row);
	}
	if (n)
		e->attr.ino = n->ino;
	pthread_mutex_unlock(&fs->mu);
	if (n && rel && !d->is_dir && d->ours) {
		/* Our lock's size as of now, not of the opendir: the kernel
		 * takes this answer's size unless a write ended after it
		 * asked, so an older one would move O_APPEND's end back over
		 * what the holder wrote since the listing was read. */
		char *full = fs_int_full_key(fs, rel);
		struct lock *lk = full ? lock_find(fs->eng, full) : NULL;

		if (lk)
			e->attr.size = (uint64_t)fs_int_own_len(fs, lk);
		lock_unref(fs->eng, lk);
		free(full);
	}
	if (n && rel && !d->is_dir) {
		/* Another owner's lock: this lister's own stat of it is
		 * answered from the listing. */
		if (plus && !d->ours)
			fs_int_listed_note(fs, rel, dl->lister_pid, &e->attr);
	}
	free(rel);
	return n ? 0 : -ENOMEM;
}

void fs_releasedir(struct fs *fs, uint64_t dh)
{
	struct fs_dirlist *dl = (struct fs_dirlist *)(uintptr_t)dh;
	size_t i;

	if (!dl)
		return;
	for (i = 0; i < dl->n; i++)
		free(dl->ents[i].name);
	free(dl->ents);
	pthread_mutex_lock(&fs->mu);
	if (dl->dir) {
		dl->dir->opens--;
		fs_int_maybe_free_node(fs, dl->dir);
	}
	pthread_mutex_unlock(&fs->mu);
	fs_quota_give(fs->quota, dl->uid, FSQ_OPENS);
	free(dl);
}

/* ---- the prefix --------------------------------------------------------- */

/* -ENOTDIR when key is a live lock (a name is a lock or a directory,
 * never both): its owner in *owner (malloc'd, or NULL). */
static int prefix_dir_free(struct fs *fs, const char *key, char **owner)
{
	struct lock_record row;
	int64_t seen;
	int rc;

	record_init(&row);
	rc = lock_rows_get(fs->eng, key, &row);
	if (rc == -ENOENT) {
		rc = 0;
	} else if (!rc && fs_int_row_live(fs, &row, &seen)) {
		*owner = row.owner ? strdup(row.owner) : NULL;
		rc = -ENOTDIR;
	}
	record_fini(&row);
	return rc;
}

int fs_ensure_prefix_dirs(struct fs *fs, char **lock_key, char **owner)
{
	struct dir_record d;
	size_t i;
	int rc = 0;

	*lock_key = *owner = NULL;
	dir_record_init(&d);
	d.mode = fs->cfg.root_mode & 07777;
	d.uid = fs->cfg.root_uid;
	d.gid = fs->cfg.root_gid;
	d.created_real_ms = clk_real_ms(fs->host->clk);
	for (i = 1; i < fs->prefix_len && !rc; i++) {
		if (fs->prefix[i] != '/' || fs->prefix[i - 1] == '/')
			continue;
		d.key = strndup(fs->prefix, i);
		rc = d.key ? prefix_dir_free(fs, d.key, owner) : -ENOMEM;
		if (rc == -ENOTDIR) {
			*lock_key = d.key;
			return rc;
		}
		if (!rc)
			rc = lock_rows_put_dir(fs->eng, &d, false);
		if (rc == -EEXIST)
			rc = 0;
		free(d.key);
		d.key = NULL;
	}
	return rc;
}
