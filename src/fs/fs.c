/* fs: inodes, names and keys, open files, the text and attributes of
 * locks, unlink and link, file locks, xattrs (see fs.h; directories and
 * listings are in fs_dir.c). Threads: FUSE workers, and the lease and wait
 * threads through fs_on_lost and fs_on_granted. fs->mu
 * guards the inode maps, the handle list, node and handle fields marked in
 * fs_int.h, and the implicit-directory cache; it is never held across a
 * store request or an engine call that makes one. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "flk.h"
#include "log.h"
#include "map.h"
#include "names.h"
#include "procgrp.h"
#include "render.h"
#include "text.h"

#define TAG "fs"

void fs_int_resolved_init(struct resolved *r)
{
	memset(r, 0, sizeof(*r));
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
 * table, malformed answer) is EIO, with the detail in the log. Errors of
 * the filesystem's own (EPERM, ENOENT, ENOTEMPTY...) pass through. */
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
	case -EIO:
		log_warn(TAG, "%s key=%s: DynamoDB request failed: %s", what,
			 key, log_errno(rc, why, sizeof(why)));
		return -EIO;
	default:
		return rc;
	}
}

/* ---- nodes (mu held) --------------------------------------------------- */

static void fixed_node(struct fs *fs, struct fs_node *n, uint64_t ino,
		       const char *rel, bool is_dir)
{
	n->ino = ino;
	n->rel = strdup(rel);
	n->is_dir = is_dir;
	n->fixed = true;
	imap_put(&fs->by_ino, ino, n);
}

char *fs_int_path_key(const char *rel, bool is_dir)
{
	size_t n = strlen(rel);
	char *k = malloc(n + 3);

	if (k) {
		k[0] = is_dir ? 'd' : 'f';
		k[1] = ':';
		memcpy(k + 2, rel, n + 1);
	}
	return k;
}

void fs_int_unmap_path(struct fs *fs, struct fs_node *n)
{
	char *pk;

	if (!n->in_path_map)
		return;
	pk = fs_int_path_key(n->rel, n->is_dir);
	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
	n->in_path_map = false;
}

/* Removes by_path's entry for rel if it points at n. */
static void unmap_one(struct fs *fs, struct fs_node *n, const char *rel)
{
	char *pk = fs_int_path_key(rel, n->is_dir);

	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
}

void fs_int_maybe_free_node(struct fs *fs, struct fs_node *n)
{
	if (n->fixed || n->nlookup || n->opens)
		return;
	fs_int_unmap_path(fs, n);
	if (n->alias)
		unmap_one(fs, n, n->alias);
	imap_del(&fs->by_ino, n->ino);
	free(n->alias);
	free(n->rel);
	free(n);
}

/* Names a file node has: 2 while a link() alias lives. */
static uint32_t node_nlink(const struct fs_node *n)
{
	return n->alias ? 2 : 1;
}

/* The node for rel as a file or directory, created if needed; takes a
 * lookup reference when count is set. NULL on ENOMEM. */
struct fs_node *fs_int_get_node(struct fs *fs, const char *rel, bool is_dir,
				bool count)
{
	struct fs_node *n;
	char *pk;

	if (!*rel)
		n = &fs->root;
	else if (!(pk = fs_int_path_key(rel, is_dir)))
		return NULL;
	else {
		n = smap_get(&fs->by_path, pk);
		if (!n) {
			n = calloc(1, sizeof(*n));
			if (!n || !(n->rel = strdup(rel)) ||
			    smap_put(&fs->by_path, pk, n)) {
				if (n)
					free(n->rel);
				free(n);
				free(pk);
				return NULL;
			}
			n->is_dir = is_dir;
			n->in_path_map = true;
			n->ino = fs->next_ino++;
			if (imap_put(&fs->by_ino, n->ino, n)) {
				smap_del(&fs->by_path, pk);
				free(n->rel);
				free(n);
				free(pk);
				return NULL;
			}
		}
		free(pk);
	}
	if (count)
		n->nlookup++;
	return n;
}

struct fs_node *fs_int_find_node(struct fs *fs, uint64_t ino)
{
	return imap_get(&fs->by_ino, ino);
}

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

void fs_int_entry_changed(struct fs *fs, const char *rel, int subdirs)
{
	const char *slash = strrchr(rel, '/');
	char *dir = slash ? strndup(rel, (size_t)(slash - rel)) : NULL;

	if (slash && !dir)
		return;
	fs_dirstat_changed(fs->dirstat, dir ? dir : "", subdirs,
			   clk_sys_real_ms());
	free(dir);
}

void fs_on_released(void *arg, const char *key)
{
	struct fs *fs = arg;

	if (!strncmp(key, fs->prefix, fs->prefix_len))
		fs_int_entry_changed(fs, key + fs->prefix_len, 0);
}

char *fs_int_full_key(const struct fs *fs, const char *rel)
{
	size_t n = strlen(rel);
	char *k = malloc(fs->prefix_len + n + 1);

	if (k) {
		memcpy(k, fs->prefix, fs->prefix_len);
		memcpy(k + fs->prefix_len, rel, n + 1);
	}
	return k;
}

/* ---- setup ------------------------------------------------------------- */

struct fs *fs_new(const struct fs_config *cfg, struct lock_engine *engine,
		  struct store *store, struct observe *obs,
		  struct metrics *metrics)
{
	struct fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->cfg = *cfg;
	fs->prefix = strdup(cfg->prefix ? cfg->prefix : "");
	if (!fs->prefix) {
		free(fs);
		return NULL;
	}
	fs->prefix_len = strlen(fs->prefix);
	if (!fs->cfg.root_mode)
		fs->cfg.root_mode = 01777;
	if (fs->cfg.attr_timeout_s < 0)
		fs->cfg.attr_timeout_s = 0;
	if (fs->cfg.entry_timeout_s < 0)
		fs->cfg.entry_timeout_s = 0;
	fs->eng = engine;
	fs->st = store;
	fs->obs = obs;
	fs->m = metrics;
	fs->mount_real_ms = clk_sys_real_ms();
	fs->next_ino = FS_FIRST_INO;
	pthread_mutex_init(&fs->mu, NULL);
	imap_init(&fs->by_ino);
	smap_init(&fs->by_path);
	smap_init(&fs->implicit);
	smap_init(&fs->listed);
	fs->quota = fs_quota_new(&(struct fs_quota_limits){ {
		[FSQ_LOCKS] = cfg->max_locks_per_user,
		[FSQ_WAITERS] = cfg->max_waiters_per_user,
		[FSQ_DIRS] = cfg->max_dirs_per_user,
		[FSQ_OPENS] = cfg->max_opens_per_user,
	} });
	fs->wb = fs_wb_new(engine, FS_WB_INTERVAL_MS, FS_MAX_DATA);
	fs->dirstat = fs_dirstat_new();
	if (!fs->quota || !fs->wb || !fs->dirstat) {
		fs_dirstat_free(fs->dirstat);
		fs_quota_free(fs->quota);
		fs_wb_free(fs->wb);
		free(fs->prefix);
		free(fs);
		return NULL;
	}
	fixed_node(fs, &fs->root, FS_ROOT_INO, "", true);
	fixed_node(fs, &fs->ctl_dir, FS_CTL_DIR_INO, FS_CTL_DIR_NAME, true);
	fixed_node(fs, &fs->ctl_status, FS_CTL_STATUS_INO,
		   FS_CTL_DIR_NAME "/status", false);
	fixed_node(fs, &fs->ctl_metrics, FS_CTL_METRICS_INO,
		   FS_CTL_DIR_NAME "/metrics", false);
	return fs;
}

static void free_node_cb(void *arg, uint64_t ino, void *value)
{
	struct fs_node *n = value;

	if (!n->fixed) {
		free(n->alias);
		free(n->rel);
		free(n);
	}
}

static void free_implicit_cb(void *arg, const char *key, void *value)
{
	free(value);
}

int fs_start(struct fs *fs)
{
	return fs_wb_start(fs->wb);
}

void fs_stop(struct fs *fs)
{
	fs_wb_stop(fs->wb);
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	fs_wb_free(fs->wb);
	fs_quota_free(fs->quota);
	fs_dirstat_free(fs->dirstat);
	while (fs->handles) {
		struct fs_handle *h = fs->handles;

		fs->handles = h->next;
		if (h->lk)
			lock_unref(fs->eng, h->lk);
		if (h->ph && fs->cfg.poll_destroy)
			fs->cfg.poll_destroy(h->ph);
		buf_fini(&h->snap);
		free(h->cred);
		free(h);
	}
	imap_each(&fs->by_ino, free_node_cb, NULL);
	imap_fini(&fs->by_ino);
	smap_fini(&fs->by_path);
	smap_each(&fs->implicit, free_implicit_cb, NULL);
	smap_fini(&fs->implicit);
	smap_each(&fs->listed, free_implicit_cb, NULL);
	smap_fini(&fs->listed);
	free(fs->root.rel);
	free(fs->ctl_dir.rel);
	free(fs->ctl_status.rel);
	free(fs->ctl_metrics.rel);
	pthread_mutex_destroy(&fs->mu);
	free(fs->prefix);
	free(fs);
}

/* ---- attributes -------------------------------------------------------- */

uint32_t fs_int_shown_id(int64_t id, uint32_t root_id)
{
	if (id < 0 || id == FS_NOBODY_ID || id >= UINT32_MAX)
		return root_id;
	return (uint32_t)id;
}

/* Rows are shown with their owner as recorded (uids name the same users on
 * every host sharing the table, as with NFS), but never with the setuid or
 * setgid bit (nor a sticky bit on a file), and never owned by nobody
 * (65534: the id unmapped users get) or an id out of range: such rows
 * belong to the mount root's owner, so that no such user may chmod them.
 * Rows of other clients (no lockfs attributes) belong to the mount root's
 * owner too. */
void fs_int_dir_attr(const struct fs *fs, uint64_t ino,
		     const struct dir_record *d, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 2;
	if (d && d->key) {
		a->mode = S_IFDIR | (d->mode & 01777);
		a->uid = fs_int_shown_id(d->uid, fs->cfg.root_uid);
		a->gid = fs_int_shown_id(d->gid, fs->cfg.root_gid);
		a->ctime_real_ms = d->created_real_ms;
	} else {
		a->mode = S_IFDIR | (fs->cfg.root_mode & 07777);
		a->uid = fs->cfg.root_uid;
		a->gid = fs->cfg.root_gid;
		a->ctime_real_ms = fs->mount_real_ms;
	}
	a->mtime_real_ms = a->atime_real_ms = a->ctime_real_ms;
	a->size = 4096;
}

static const char *our_owner(const struct fs *fs)
{
	const char *o = lock_engine_config(fs->eng)->owner;

	return o ? o : "";
}

void fs_int_lock_attr(const struct fs *fs, uint64_t ino,
		      const struct lock_record *r, enum render_state st,
		      int64_t seen_real_ms, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	if (r->has_lockfs) {
		bool mine = r->owner && !strcmp(r->owner, our_owner(fs));

		/* A row of this mount names a local user for sure (nobody's
		 * own locks must stay its own: the sticky rule). */
		a->mode = S_IFREG | (r->mode & 0777);
		a->uid = mine && r->uid == FS_NOBODY_ID
				 ? FS_NOBODY_ID
				 : fs_int_shown_id(r->uid, fs->cfg.root_uid);
		a->gid = mine && r->gid == FS_NOBODY_ID
				 ? FS_NOBODY_ID
				 : fs_int_shown_id(r->gid, fs->cfg.root_gid);
		a->ctime_real_ms = r->acquired_real_ms;
		a->mtime_real_ms = r->heartbeat_real_ms;
	} else {
		/* Rows of other clients have no owner or times of ours. */
		a->mode = S_IFREG | 0644;
		a->uid = fs->cfg.root_uid;
		a->gid = fs->cfg.root_gid;
		a->ctime_real_ms = a->mtime_real_ms =
			seen_real_ms ? seen_real_ms : clk_sys_real_ms();
	}
	a->atime_real_ms = a->mtime_real_ms;
	/* The size is the holder's data, not the text (reads are direct I/O
	 * and return the whole text whatever the size): lock-file programs
	 * check that a file they just created is empty (procmail's NFS-safe
	 * creat) and that the pid they wrote is there. */
	a->size = r->has_data ? r->data_len : 0;
}

void fs_int_ctl_attr(struct fs *fs, struct fs_node *n, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = n->ino;
	a->uid = fs->cfg.root_uid;
	a->gid = fs->cfg.root_gid;
	a->ctime_real_ms = a->mtime_real_ms = a->atime_real_ms =
		fs->mount_real_ms;
	if (n->is_dir) {
		a->mode = S_IFDIR | 0555;
		a->nlink = 2;
		a->size = 4096;
	} else {
		a->mode = S_IFREG | 0444;
		a->nlink = 1;
		a->size = 0; /* generated on read (direct I/O) */
		a->mtime_real_ms = clk_sys_real_ms();
	}
}

/* Timeouts of an entry. A lock this mount holds can go away without the
 * kernel seeing an unlink (a close in fd mode, a flock released, its group
 * gone, a loss): the kernel must ask every time, which costs no request
 * (we answer from memory), so that O_EXCL right after such a release
 * reaches us instead of a cached EEXIST. */
void fs_int_fill_entry(const struct fs *fs, struct fs_entry *e, bool ours)
{
	e->attr_timeout_s = fs->cfg.attr_timeout_s;
	e->entry_timeout_s = ours ? 0 : fs->cfg.entry_timeout_s;
}

/* ---- resolving keys ---------------------------------------------------- */

/* Judges a foreign row: returns true if it is live (not expired by our
 * observation) and fills the time of our first sighting. */
bool fs_int_row_live(struct fs *fs, const struct lock_record *r,
		     int64_t *seen_real_ms)
{
	struct observation ob;

	observe_note(fs->obs, r->key, r->rvn, r->lease_ms, &ob);
	*seen_real_ms = ob.first_seen_real_ms;
	/* A shared row whose readers all left is free (anyone may take it
	 * at once): no lock to show. Unless another mount's writer marked
	 * it: that writer takes it next, and an acquire here is refused, so
	 * it is shown held (a create that opens it must not then find it
	 * gone). */
	return !ob.expired && !lock_row_free(fs->eng, r);
}

/* What rel is now. both: ask for the lock and the directory row at once
 * (lookup); otherwise only the lock row (getattr of a file). */
int fs_int_resolve(struct fs *fs, const char *rel, bool both,
		   struct resolved *out)
{
	struct store_lookup sl;
	struct lock *lk;
	char *full = fs_int_full_key(fs, rel);
	int rc;

	if (!full)
		return -ENOMEM;
	lk = lock_find(fs->eng, full);
	if (lk) {
		enum lock_state st;

		rc = lock_snapshot(fs->eng, lk, &out->rec, &st);
		lock_unref(fs->eng, lk);
		if (!rc) {
			out->kind = K_FILE;
			out->ours = true;
			out->state = RENDER_HELD;
		}
		free(full);
		return rc;
	}
	if (lock_recently_released(fs->eng, full)) {
		free(full);
		return 0;
	}
	store_lookup_init(&sl);
	if (both) {
		rc = fs->st->ops->lookup(fs->st, full, 0, &sl);
	} else {
		rc = fs->st->ops->get_lock(fs->st, full, 0, &sl.lock);
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
	} else if (sl.has_dir) {
		out->kind = K_DIR;
		rc = dir_record_copy(&out->dir, &sl.dir);
	} else if (both && fs_int_implicit_dir_known(fs, full)) {
		out->kind = K_DIR;
		out->implicit = true;
	}
	store_lookup_fini(&sl);
	free(full);
	return rc;
}

static void resolved_attr(const struct fs *fs, uint64_t ino, const char *rel,
			  const struct resolved *r, struct fs_attr *a)
{
	if (r->kind == K_DIR) {
		fs_int_dir_attr(fs, ino, r->implicit ? NULL : &r->dir, a);
		fs_dirstat_apply(fs->dirstat, rel, a);
	} else
		fs_int_lock_attr(fs, ino, &r->rec, r->state, r->seen_real_ms,
				 a);
}

/* ---- lookup, forget, getattr ------------------------------------------ */

static int lookup_ctl(struct fs *fs, uint64_t parent, const char *name,
		      struct fs_entry *e)
{
	struct fs_node *n = NULL;

	if (parent == FS_ROOT_INO && !strcmp(name, FS_CTL_DIR_NAME))
		n = &fs->ctl_dir;
	else if (parent == FS_CTL_DIR_INO && !strcmp(name, "status"))
		n = &fs->ctl_status;
	else if (parent == FS_CTL_DIR_INO && !strcmp(name, "metrics"))
		n = &fs->ctl_metrics;
	if (!n)
		return parent == FS_CTL_DIR_INO ? -ENOENT : 1;
	fs_int_ctl_attr(fs, n, &e->attr);
	fs_int_fill_entry(fs, e, false);
	return 0;
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

/* The caller's process group (0 when unknown). */
static int64_t ctx_pgid(const struct fs_ctx *ctx)
{
	pid_t g = ctx && ctx->pid > 0 ? getpgid(ctx->pid) : -1;

	return g > 0 ? g : 0;
}

/* A lock the caller's process group lost and has not let go of. */
static struct lock *lost_of_caller(struct fs *fs, const struct fs_ctx *ctx,
				   const char *rel)
{
	int64_t pgid = ctx_pgid(ctx);
	struct lock *lk;
	char *full;

	if (!pgid)
		return NULL;
	full = fs_int_full_key(fs, rel);
	lk = full ? lock_find_lost(fs->eng, full, pgid,
				   procgrp_start_time(pgid, NULL))
		  : NULL;
	free(full);
	return lk;
}

int fs_lookup(struct fs *fs, uint64_t parent, const char *name,
	      struct fs_entry *e)
{
	return fs_lookup_ctx(fs, NULL, parent, name, e);
}

void fs_int_listed_note(struct fs *fs, const char *rel, int32_t pid,
			const struct fs_attr *attr)
{
	struct fs_listed *l;

	if (pid <= 0)
		return;
	pthread_mutex_lock(&fs->mu);
	if (fs->listed.count >= FS_LISTED_MAX) {
		smap_each(&fs->listed, free_implicit_cb, NULL);
		smap_fini(&fs->listed);
		smap_init(&fs->listed);
	}
	l = smap_get(&fs->listed, rel);
	if (!l) {
		l = malloc(sizeof(*l));
		if (!l || smap_put(&fs->listed, rel, l)) {
			free(l);
			l = NULL;
		}
	}
	if (l) {
		l->pid = pid;
		l->mono_ms = clk_sys_mono_ms();
		l->attr = *attr;
	}
	pthread_mutex_unlock(&fs->mu);
}

/* mu held. The attributes a listing just showed ctx's process for rel. */
static bool listed_for(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		       struct fs_attr *attr)
{
	struct fs_listed *l = smap_get(&fs->listed, rel);

	if (!l || !ctx || l->pid != ctx->pid ||
	    clk_sys_mono_ms() - l->mono_ms > FS_LISTED_MS)
		return false;
	*attr = l->attr;
	return true;
}

int fs_lookup_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
		  const char *name, struct fs_entry *e)
{
	struct resolved r;
	struct fs_node *n;
	char *rel = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = lookup_ctl(fs, parent, name, e);
	if (rc <= 0)
		return rc;
	rc = fs_int_child_rel(fs, parent, name, &rel);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->mu);
	if (listed_for(fs, ctx, rel, &e->attr)) {
		n = fs_int_get_node(fs, rel, false, true);
		if (n) {
			e->attr.ino = n->ino;
			e->attr.nlink = node_nlink(n);
		}
		pthread_mutex_unlock(&fs->mu);
		free(rel);
		if (!n)
			return -ENOMEM;
		fs_int_fill_entry(fs, e, false);
		e->entry_timeout_s = 0;
		return 0;
	}
	pthread_mutex_unlock(&fs->mu);
	fs_int_resolved_init(&r);
	rc = fs_int_resolve(fs, rel, true, &r);
	if (!rc && r.kind == K_NONE) {
		struct lock *lost = lost_of_caller(fs, ctx, rel);

		rc = -ENOENT;
		if (lost) {
			rc = lock_snapshot(fs->eng, lost, &r.rec, NULL);
			r.kind = K_FILE;
			r.ours = true;
			r.state = RENDER_LOST;
			lock_unref(fs->eng, lost);
		}
	}
	if (!rc) {
		pthread_mutex_lock(&fs->mu);
		n = fs_int_get_node(fs, rel, r.kind == K_DIR, true);
		if (n) {
			resolved_attr(fs, n->ino, rel, &r, &e->attr);
			if (!n->is_dir)
				e->attr.nlink = node_nlink(n);
		}
		pthread_mutex_unlock(&fs->mu);
		if (!n)
			rc = -ENOMEM;
		fs_int_fill_entry(fs, e, r.ours);
		/* Another owner's lock: the kernel asks again next time. */
		if (r.kind == K_FILE)
			e->entry_timeout_s = 0;
	}
	fs_int_resolved_fini(&r);
	free(rel);
	return rc;
}

void fs_forget(struct fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && !n->fixed) {
		n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
		fs_int_maybe_free_node(fs, n);
	}
	pthread_mutex_unlock(&fs->mu);
}

/* Copies the node's relative path and kind; -ENOENT if unknown. */
static int node_info(struct fs *fs, uint64_t ino, char **rel, bool *is_dir,
		     bool *fixed)
{
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (!n) {
		rc = -ENOENT;
	} else {
		*is_dir = n->is_dir;
		*fixed = n->fixed;
		*rel = strdup(n->rel);
		if (!*rel)
			rc = -ENOMEM;
	}
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

/* A directory's attributes from its confirmed view, if fresh. */
static bool dir_view_get(struct fs *fs, uint64_t ino, const char *rel,
			 struct fs_attr *a)
{
	int64_t fresh_ms = (int64_t)(fs->cfg.attr_timeout_s * 1000);
	struct fs_node *n;
	bool ok = false;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->is_dir && n->dir_ok_mono_ms &&
	    clk_sys_mono_ms() - n->dir_ok_mono_ms < fresh_ms) {
		*a = n->dir_attr;
		ok = true;
	}
	pthread_mutex_unlock(&fs->mu);
	if (ok)
		fs_dirstat_apply(fs->dirstat, rel, a);
	return ok;
}

static void dir_view_set(struct fs *fs, uint64_t ino, const struct fs_attr *a)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->is_dir) {
		n->dir_attr = *a;
		n->dir_ok_mono_ms = clk_sys_mono_ms();
	}
	pthread_mutex_unlock(&fs->mu);
}

void fs_int_dir_view_forget(struct fs *fs, const char *rel)
{
	char *pk = fs_int_path_key(rel, true);
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = pk ? smap_get(&fs->by_path, pk) : NULL;
	if (n)
		n->dir_ok_mono_ms = 0;
	pthread_mutex_unlock(&fs->mu);
	free(pk);
}

int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *a,
	       double *timeout_s)
{
	struct resolved r;
	bool is_dir, fixed;
	char *rel = NULL;
	int rc;

	*timeout_s = fs->cfg.attr_timeout_s;
	if (ino == FS_ROOT_INO) {
		fs_int_dir_attr(fs, ino, NULL, a);
		fs_dirstat_apply(fs->dirstat, "", a);
		return 0;
	}
	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (fixed) {
		pthread_mutex_lock(&fs->mu);
		fs_int_ctl_attr(fs, fs_int_find_node(fs, ino), a);
		pthread_mutex_unlock(&fs->mu);
		free(rel);
		return 0;
	}
	if (is_dir && dir_view_get(fs, ino, rel, a)) {
		free(rel);
		return 0;
	}
	fs_int_resolved_init(&r);
	rc = fs_int_resolve(fs, rel, is_dir, &r);
	if (!rc) {
		if (r.kind == K_NONE || (r.kind == K_DIR) != is_dir)
			rc = -ENOENT;
		else
			resolved_attr(fs, ino, rel, &r, a);
		if (!rc && is_dir)
			dir_view_set(fs, ino, a);
	}
	if (!rc && !is_dir) {
		struct fs_node *n;

		pthread_mutex_lock(&fs->mu);
		n = fs_int_find_node(fs, ino);
		if (n)
			a->nlink = node_nlink(n);
		pthread_mutex_unlock(&fs->mu);
	}
	fs_int_resolved_fini(&r);
	free(rel);
	return rc;
}

/* ---- handles ----------------------------------------------------------- */

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

static struct fs_handle *to_handle(uint64_t fh)
{
	return (struct fs_handle *)(uintptr_t)fh;
}

/* The lock an open file shows, referenced (a granted flock may change it
 * at any time), or NULL. */
static struct lock *handle_lock(struct fs *fs, struct fs_handle *h)
{
	struct lock *lk;

	pthread_mutex_lock(&fs->mu);
	lk = h->lk;
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&fs->mu);
	return lk;
}

static void holder_from_ctx(const struct fs_ctx *ctx, uint32_t mode,
			    struct lock_holder *h)
{
	char path[64];
	FILE *f;

	memset(h, 0, sizeof(*h));
	h->pid = ctx->pid;
	h->uid = ctx->uid;
	h->gid = ctx->gid;
	h->mode = mode & 07777;
	h->pgid = ctx->pid > 0 ? getpgid(ctx->pid) : -1;
	h->sid = ctx->pid > 0 ? getsid(ctx->pid) : -1;
	h->pgid_start = h->pgid > 0 ? procgrp_start_time(h->pgid, NULL) : 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)ctx->pid);
	f = ctx->pid > 0 ? fopen(path, "re") : NULL;
	if (f) {
		if (fgets(h->cmd, sizeof(h->cmd), f))
			h->cmd[strcspn(h->cmd, "\n")] = '\0';
		fclose(f);
	}
	if (!h->cmd[0])
		strcpy(h->cmd, "?");
	/* The command name is shown on one line and stored as a string. */
	for (char *p = h->cmd; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (!text_utf8_valid(h->cmd, strlen(h->cmd)))
		strcpy(h->cmd, "?");
}

static bool is_holder(const struct fs_ctx *ctx, struct lock *lk);

/* Exact count for fs_quota_lock_begin: the locks uid holds here. */
struct held_count {
	uint32_t uid;
	size_t n;
};

static void held_count_cb(void *arg, const struct lock_info *li)
{
	struct held_count *c = arg;

	if (li->state == LOCK_HELD && li->holder->uid == (int64_t)c->uid)
		c->n++;
}

static size_t count_held(void *arg, uint32_t uid)
{
	struct held_count c = { uid, 0 };

	lock_each(arg, held_count_cb, &c);
	return c.n;
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
	fs_perm_cred(ctx->uid, ctx->gid, ctx->pid, &c);
	if (!fs_perm_may(&c, a.mode, a.uid, a.gid, fs_perm_open_want(flags)))
		return -EACCES;
	return 0;
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
	rc = fs_quota_lock_begin(fs->quota, ctx->uid, count_held, fs->eng);
	if (rc) {
		fs_quota_give(fs->quota, ctx->uid, FSQ_OPENS);
		goto out_free;
	}
	holder_from_ctx(ctx, mode, &holder);
	record_init(&cur);
	rc = lock_acquire(fs->eng, full, &holder, &lk, &cur, &has);
	acquired = rc == 0;
	fs_quota_lock_end(fs->quota, ctx->uid, acquired);
	if (rc == -EEXIST && !(flags & O_EXCL) && has) {
		/* Open the existing lock; no acquire. */
		rc = may_open_taken(fs, ctx, &cur, flags);
		if (rc)
			goto out;
		lk = lock_find(fs->eng, full);
		if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) {
			/* As fs_open: only the holder truncates. */
			rc = lk && is_holder(ctx, lk)
				     ? fs_wb_modify(fs->wb, lk, NULL, 0, 0, 0)
				     : -EPERM;
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
	if (n)
		fs_int_lock_attr(fs, n->ino, &cur, RENDER_HELD,
				 clk_sys_real_ms(), &e->attr);
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
	h->by_holder = lk && is_holder(ctx, lk);
	fs_int_fill_entry(fs, e, lk != NULL);
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

/* True if ctx may act as the holder of lk on this mount: the uid that
 * acquired it, or root. */
static bool is_holder(const struct fs_ctx *ctx, struct lock *lk)
{
	return ctx->uid == 0 || (int64_t)ctx->uid == lock_holder(lk)->uid;
}

/* Whether ctx may remove lk (the uid rule passed): a lock whose holder is
 * alive may be removed only from the holder's session (its script, its
 * shell), so that a second instance of a job, run by cron or systemd in a
 * session of its own, never releases the first one's lock by mistake;
 * root may break it on a mount with allow_break. -EBUSY otherwise. */
static int may_remove(struct fs *fs, const struct fs_ctx *ctx, struct lock *lk)
{
	const struct lock_holder *h = lock_holder(lk);
	pid_t sid = ctx->pid > 0 ? getsid(ctx->pid) : -1;

	if (h->sid <= 0 || !lock_holder_live(fs->eng, lk))
		return 0; /* no session known: the uid rule alone */
	if (sid == h->sid)
		return 0;
	if (fs->cfg.allow_break && ctx->uid == 0)
		return 0;
	log_info(TAG,
		 "unlink key=%s refused (EBUSY): held by pid %lld (%s) of "
		 "another session, which is alive",
		 lock_key(lk), (long long)h->pid, h->cmd);
	return -EBUSY;
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

	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
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
			fs_perm_cred(ctx->uid, ctx->gid, ctx->pid, cred);
		else
			rc = -ENOMEM;
	}
	if (!fixed) {
		full = fs_int_full_key(fs, rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
		if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) {
			if (!lk || !is_holder(ctx, lk))
				rc = -EPERM;
			else
				rc = fs_wb_modify(fs->wb, lk, NULL, 0, 0, 0);
		}
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
	h->by_holder = lk && is_holder(ctx, lk);
	*fh = (uint64_t)(uintptr_t)h;
	return 0;
}

/* ---- what a reader of .lockfs/status may see --------------------------- */

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
		rc = v->fs->st->ops->lookup(v->fs->st, full, 0, &sl);
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

/* Builds the text a read at offset 0 returns. */
static int handle_text(struct fs *fs, struct fs_handle *h, struct buf *out)
{
	struct lock *lk = NULL;
	struct lock_record row, mine;
	enum lock_state st;
	char before[RECORD_RVN_MAX], after[RECORD_RVN_MAX];
	bool is_dir, fixed;
	char *rel = NULL, *full;
	int rc;

	if (h->node == &fs->ctl_status)
		return status_text(fs, h, out);
	if (h->node == &fs->ctl_metrics)
		return ctl_render_metrics(fs->m, out);

	rc = node_info(fs, h->node->ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	full = fs_int_full_key(fs, rel);
	free(rel);
	if (!full)
		return -ENOMEM;
	record_init(&row);
	record_init(&mine);
	lk = handle_lock(fs, h);
	if (lk)
		fs_wb_flush(fs->wb, lk); /* this mount reads its own writes */
	if (lk && lock_get_state(fs->eng, lk) == LOCK_LOST) {
		/* Lost is final and ours to tell: no request needed (and
		 * DynamoDB may well be unreachable right now). */
		rc = lock_snapshot(fs->eng, lk, &mine, NULL);
		if (!rc)
			rc = render_lock_text(&mine, RENDER_LOST, out);
		goto out;
	}
	if (lk) {
		/* Our lock: its state is ours to tell; the row is read fresh.
		 */
		if ((h->holding || h->by_holder) &&
		    lock_get_state(fs->eng, lk) == LOCK_HELD) {
			uint64_t fence;

			lock_fence(fs->eng, lk, &fence); /* lazily */
		}
		lock_current_rvn(fs->eng, lk, before);
		rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
		lock_current_rvn(fs->eng, lk, after);
		lock_snapshot(fs->eng, lk, &mine, &st);
		if (rc && rc != -ENOENT) {
			rc = fs_int_user_err(rc, "read", full);
			goto out;
		}
		if (st == LOCK_HELD || st == LOCK_RELEASING) {
			/* Held shared, our version is our entry's. */
			const char *reader = lock_reader_id(fs->eng, lk);
			const char *v =
				rc ? "" : record_holder_version(&row, reader);

			if (v[0] && (!strcmp(v, before) || !strcmp(v, after))) {
				const struct record_reader *rd =
					record_reader_find(&row, reader);

				/* A reader's fence is its own (the counter
				 * when it read it): the holder sees it. */
				if (rd && rd->fence)
					row.fence = rd->fence;
				rc = render_lock_text(&row, RENDER_HELD, out);
				goto out;
			}
			/* The row is not what we last wrote: a renewal tells
			 * whether we still hold it. When it cannot tell (no
			 * answer), the engine's state stands: the lock stays
			 * trusted until its safe period ends by the clock, and
			 * lost is only said once it is final. */
			lock_renew_sync(fs->eng, lk);
			lock_snapshot(fs->eng, lk, &mine, &st);
			if (st == LOCK_HELD) {
				rc = render_lock_text(&mine, RENDER_HELD, out);
				goto out;
			}
		}
		rc = render_lock_text(
			&mine, st == LOCK_LOST ? RENDER_LOST : RENDER_RELEASED,
			out);
		goto out;
	}
	rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
	if (rc == -ENOENT) {
		rc = 0; /* gone: an empty file */
	} else if (rc) {
		rc = fs_int_user_err(rc, "read", full);
	} else {
		int64_t seen;
		bool live = fs_int_row_live(fs, &row, &seen);

		rc = render_lock_text(&row, live ? RENDER_HELD : RENDER_EXPIRED,
				      out);
	}
out:
	lock_unref(fs->eng, lk);
	record_fini(&row);
	record_fini(&mine);
	free(full);
	return rc;
}

ssize_t fs_read(struct fs *fs, uint64_t fh, char *buf, size_t size, off_t off)
{
	struct fs_handle *h = to_handle(fh);
	struct buf text = BUF_INIT;
	ssize_t n = 0;
	int rc;

	if (off < 0)
		return -EINVAL;
	if (off == 0) {
		rc = handle_text(fs, h, &text);
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

/* The lock a writer on this handle would change: ours and held by ctx. */
static int writable_lock(struct fs *fs, const struct fs_ctx *ctx,
			 struct fs_handle *h, struct lock **out)
{
	struct lock *lk;
	char *full;

	if (h->node->fixed)
		return -EPERM;
	lk = handle_lock(fs, h);
	if (!lk) {
		full = fs_int_full_key(fs, h->node->rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
	}
	if (!lk)
		return -EPERM;
	/* A shared lock is its readers': none of them has data to write. */
	if (!is_holder(ctx, lk) || lock_is_shared(fs->eng, lk)) {
		lock_unref(fs->eng, lk);
		return -EPERM;
	}
	*out = lk;
	return 0;
}

ssize_t fs_write(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		 const char *buf, size_t size, off_t off)
{
	struct fs_handle *h = to_handle(fh);
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

int fs_fsync(struct fs *fs, uint64_t fh)
{
	struct lock *lk = handle_lock(fs, to_handle(fh));
	int rc;

	if (!lk)
		return 0; /* nothing of ours to make durable */
	rc = fs_wb_flush(fs->wb, lk);
	if (!rc)
		rc = lock_renew_sync(fs->eng, lk);
	lock_unref(fs->eng, lk);
	return rc;
}

int fs_flush(struct fs *fs, uint64_t fh)
{
	struct lock *lk = handle_lock(fs, to_handle(fh));
	int rc;

	if (!lk)
		return 0;
	rc = fs_wb_flush(fs->wb, lk);
	lock_unref(fs->eng, lk);
	return rc;
}

void fs_release(struct fs *fs, uint64_t fh)
{
	struct fs_handle *h = to_handle(fh);
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
		/* Written before a release on close can drop the lock. */
		fs_wb_flush(fs->wb, lk);
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
	struct fs_handle *h = to_handle(fh);
	unsigned revents = POLLIN | POLLOUT;
	void *old = NULL;

	struct lock *lk = handle_lock(fs, h);

	if (lk && lock_get_state(fs->eng, lk) == LOCK_LOST)
		revents |= POLLERR | POLLPRI;
	lock_unref(fs->eng, lk);
	pthread_mutex_lock(&fs->mu);
	if (ph) {
		old = h->ph;
		h->ph = ph;
	}
	pthread_mutex_unlock(&fs->mu);
	if (old && fs->cfg.poll_destroy)
		fs->cfg.poll_destroy(old);
	return revents;
}

void fs_on_lost(void *arg, struct lock *lk)
{
	struct fs *fs = arg;
	struct fs_handle *h;
	void *wake[64];
	int n = 0, i;

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
}

/* ---- setattr ----------------------------------------------------------- */

int fs_setattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
	       unsigned valid, uint64_t size, uint32_t mode,
	       struct fs_attr *out, double *timeout_s)
{
	struct lock *lk;
	bool is_dir, fixed;
	char *rel = NULL, *full;
	int rc;

	if (valid & (FS_SET_UID | FS_SET_GID))
		return -EPERM;
	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir && !fixed && (valid & FS_SET_MODE)) {
		rc = fs_int_chmod_dir(fs, ctx, rel, mode);
		free(rel);
		return rc ? rc : fs_getattr(fs, ino, out, timeout_s);
	}
	if (fixed || is_dir || (valid & FS_SET_MODE)) {
		free(rel);
		return (valid & (FS_SET_SIZE | FS_SET_TIMES | FS_SET_MODE))
			       ? -EPERM
			       : 0;
	}
	full = fs_int_full_key(fs, rel);
	lk = full ? lock_find(fs->eng, full) : NULL;
	free(full);
	if (!lk)
		lk = lost_of_caller(fs, ctx, rel); /* its changes give EIO */
	free(rel);
	if (!lk || !is_holder(ctx, lk)) {
		lock_unref(fs->eng, lk);
		return -EPERM;
	}
	if (valid & FS_SET_SIZE)
		rc = size > FS_MAX_DATA ? -EFBIG
					: fs_wb_modify(fs->wb, lk, NULL, 0, 0,
						       (int64_t)size);
	else if (valid & FS_SET_TIMES)
		rc = lock_renew_sync(fs->eng, lk); /* touch = heartbeat */
	lock_unref(fs->eng, lk);
	if (rc)
		return rc;
	return fs_getattr(fs, ino, out, timeout_s);
}

/* ---- unlink, mkdir, rmdir ----------------------------------------------- */

int fs_unlink(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	      const char *name)
{
	struct lock_record row;
	struct lock *lk;
	char *rel = NULL, *full = NULL;
	bool lost_acked = false;
	int rc;

	if (parent == FS_CTL_DIR_INO)
		return -EPERM;
	rc = fs_int_child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	lk = lock_find_any(fs->eng, full);
	if (lk && lock_get_state(fs->eng, lk) == LOCK_LOST) {
		/* Our lost lock: its holder lets go of it. What the name is
		 * now is DynamoDB's to say (below); gone is success. */
		rc = is_holder(ctx, lk) ? lock_release(fs->eng, lk) : -EPERM;
		lock_unref(fs->eng, lk);
		lk = NULL;
		if (rc) {
			rc = fs_int_user_err(rc, "release", full);
			goto out;
		}
		lost_acked = true;
	}
	if (lk) {
		/* Ours: released by the uid that acquired it, or root, from
		 * the holder's session while the holder lives. */
		rc = is_holder(ctx, lk) ? may_remove(fs, ctx, lk) : -EPERM;
		if (!rc)
			rc = lock_release(fs->eng, lk);
		lock_unref(fs->eng, lk);
		rc = fs_int_user_err(rc, "release", full);
		goto out;
	}
	record_init(&row);
	rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
	if (rc == 0) {
		int64_t seen;

		if (!fs_int_row_live(fs, &row, &seen)) {
			rc = -ENOENT; /* invisible: expired by observation */
		} else if (!fs->cfg.allow_break || ctx->uid != 0) {
			rc = -EPERM;
		} else {
			/* Break another owner's lock, exactly the row we saw.
			 */
			rc = fs->st->ops->delete_lock(fs->st, full, row.rvn, 0,
						      NULL, NULL);
			if (rc == -ECANCELED)
				rc = -EBUSY; /* it changed meanwhile */
			if (!rc) {
				metrics_inc(fs->m, MC_BREAKS);
				observe_forget(fs->obs, full);
				log_info(TAG, "broke key=%s owner=%s", full,
					 row.owner ? row.owner : "?");
			}
		}
	}
	record_fini(&row);
	if (rc == -ENOENT && lost_acked)
		rc = 0; /* the lost lock was all there was */
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
			unmap_one(fs, n, rel);
			free(n->alias);
			n->alias = NULL;
		} else if (n && n->alias) {
			/* The first name goes; the linked name stays. */
			unmap_one(fs, n, rel);
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
	rc = node_info(fs, ino, &src_rel, &is_dir, &fixed);
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
	if (!src || !is_holder(ctx, src)) {
		rc = -EPERM;
		goto out;
	}
	holder = *lock_holder(src);
	/* The second name is a lock more for the holder's uid. */
	rc = fs_quota_lock_begin(fs->quota, (uint32_t)holder.uid, count_held,
				 fs->eng);
	if (rc)
		goto out;
	rc = lock_acquire_hold(fs->eng, full, &holder,
			       lc->hold == HOLD_FD ? HOLD_UNLINK : lc->hold,
			       &lk, NULL, NULL);
	fs_quota_lock_end(fs->quota, (uint32_t)holder.uid, rc == 0);
	if (rc == -EISDIR)
		rc = -EEXIST; /* the new name is a directory */
	if (rc) {
		rc = fs_int_user_err(rc, "link", full);
		goto out;
	}
	/* No open file holds the new name. */
	lock_holder_closed(fs->eng, lk);
	fs_wb_flush(fs->wb, src);
	if (!lock_snapshot(fs->eng, src, &rec, NULL) && rec.has_data &&
	    rec.data_len)
		lock_modify_data(fs->eng, lk, rec.data, rec.data_len, 0, -1,
				 FS_MAX_DATA);
	lock_snapshot(fs->eng, lk, &rec, NULL);
	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n) {
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
			e->attr.nlink = node_nlink(n);
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
		rc = -ENOMEM;
		goto out;
	}
	fs_int_fill_entry(fs, e, true);
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

/* ---- file locks ------------------------------------------------------- */

void fs_set_flk(struct fs *fs, struct flk *flk)
{
	fs->flk = flk;
}

static char *handle_key(struct fs *fs, struct fs_handle *h)
{
	return h->node->fixed ? NULL : fs_int_full_key(fs, h->node->rel);
}

int fs_filelock(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		uint64_t owner, int kind, int type, bool wait, void *req)
{
	struct fs_handle *h = to_handle(fh);
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
		rc = flk_unlock(fs->flk, key, owner, (enum flk_kind)kind);
		rc = fs_int_user_err(rc, "unlock", key);
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
	/* Per-uid limits: a lock more (a grant is counted by fs_on_granted;
	 * the open file's own O_CREAT lock is no new one), and a waiter
	 * while parked (given back by fs_filelock_wait_done). */
	rc = r.handle_lock ? 0
			   : fs_quota_lock_begin(fs->quota, ctx->uid,
						 count_held, fs->eng);
	if (!rc && wait)
		rc = fs_quota_take(fs->quota, ctx->uid, FSQ_WAITERS);
	if (rc) {
		if (!r.handle_lock)
			fs_quota_lock_end(fs->quota, ctx->uid, 0);
		free(key);
		return rc;
	}
	holder_from_ctx(ctx, 0644, &r.holder);
	rc = flk_lock(fs->flk, &r);
	if (!r.handle_lock)
		fs_quota_lock_end(fs->quota, ctx->uid, 0);
	if (wait && rc != -EINPROGRESS)
		fs_quota_give(fs->quota, ctx->uid, FSQ_WAITERS);
	if (rc != -EINPROGRESS && rc != -EWOULDBLOCK && rc != -EAGAIN)
		rc = fs_int_user_err(rc, "file lock", key);
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
	if (old != lk)
		fs_quota_lock_add(fs->quota, (uint32_t)lock_holder(lk)->uid);
	if (old)
		lock_unref(fs->eng, old);
}

int fs_filelock_get(struct fs *fs, uint64_t fh, uint64_t owner, bool shared,
		    bool *held, bool *held_shared, int64_t *pid)
{
	struct fs_handle *h = to_handle(fh);
	char *key;
	int rc;

	if (!fs->flk)
		return -ENOLCK;
	key = handle_key(fs, h);
	if (!key)
		return h->node->fixed ? -EINVAL : -ENOMEM;
	rc = fs_int_user_err(
		flk_getlk(fs->flk, key, owner, shared, held, held_shared, pid),
		"getlk", key);
	free(key);
	return rc;
}

void fs_filelock_drop(struct fs *fs, uint64_t fh, uint64_t owner, int kind)
{
	struct fs_handle *h = to_handle(fh);
	char *key;

	if (!fs->flk || h->node->fixed)
		return;
	key = handle_key(fs, h);
	if (key)
		flk_unlock(fs->flk, key, owner, (enum flk_kind)kind);
	free(key);
}

/* A lock is an inode: df -i shows as IUsed (files - ffree) the locks this
 * mount holds. The table sets no limit, so IFree is a fixed headroom that
 * never runs out, and Inodes is the two together. */
#define FS_STATFS_FREE_INODES 1000000

void fs_statfs(struct fs *fs, struct fs_statfs *out)
{
	memset(out, 0, sizeof(*out));
	out->bsize = 4096;
	out->namemax = NAMES_NAME_MAX;
	out->ffree = FS_STATFS_FREE_INODES;
	out->files = lock_count_held(fs->eng) + out->ffree;
}

/* ---- extended attributes ---------------------------------------------- */

static ssize_t copy_out(const struct buf *v, char *buf, size_t size)
{
	if (!size)
		return (ssize_t)v->len;
	if (v->len > size)
		return -ERANGE;
	memcpy(buf, v->data ? v->data : "", v->len);
	return (ssize_t)v->len;
}

/* Writes the pending data of this mount's lock of a file inode, if any. */
static void flush_ino(struct fs *fs, uint64_t ino)
{
	struct lock *lk;
	bool is_dir, fixed;
	char *rel = NULL, *full;

	if (node_info(fs, ino, &rel, &is_dir, &fixed) || is_dir || fixed) {
		free(rel);
		return;
	}
	full = fs_int_full_key(fs, rel);
	lk = full ? lock_find(fs->eng, full) : NULL;
	if (lk)
		fs_wb_flush(fs->wb, lk);
	lock_unref(fs->eng, lk);
	free(full);
	free(rel);
}

/* The row of a file inode, as lookups see it, for xattrs. */
static int file_row(struct fs *fs, uint64_t ino, struct resolved *r,
		    char **full)
{
	bool is_dir, fixed;
	char *rel = NULL;
	int rc;

	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir || fixed) {
		free(rel);
		return -ENODATA;
	}
	rc = fs_int_resolve(fs, rel, false, r);
	if (!rc && r->kind != K_FILE)
		rc = -ENOENT;
	if (!rc && full)
		*full = fs_int_full_key(fs, rel);
	free(rel);
	return rc;
}

ssize_t fs_getxattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		    const char *name, char *buf, size_t size)
{
	const size_t plen = strlen(RENDER_XATTR_PREFIX);
	struct buf v = BUF_INIT;
	struct resolved r;
	char *full = NULL;
	ssize_t rc;

	/* Anything but ours is answered without a request (the kernel asks
	 * for security.capability on every write). */
	if (strncmp(name, RENDER_XATTR_PREFIX, plen))
		return -ENODATA;
	fs_int_resolved_init(&r);
	flush_ino(fs, ino);
	rc = file_row(fs, ino, &r, &full);
	if (!rc && r.ours && !r.rec.fence && !strcmp(name + plen, "fence")) {
		struct lock *lk = full ? lock_find(fs->eng, full) : NULL;

		/* The holder's first look at its fence allocates it. */
		if (lk && is_holder(ctx, lk) &&
		    lock_fence(fs->eng, lk, &r.rec.fence))
			r.rec.fence = 0;
		lock_unref(fs->eng, lk);
	}
	if (!rc) {
		rc = render_field(&r.rec, r.state, name + plen, &v);
		if (rc == -EINVAL)
			rc = -ENODATA;
	}
	if (!rc)
		rc = copy_out(&v, buf, size);
	buf_fini(&v);
	fs_int_resolved_fini(&r);
	free(full);
	return rc;
}

ssize_t fs_listxattr(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct buf v = BUF_INIT;
	struct resolved r;
	ssize_t rc;

	fs_int_resolved_init(&r);
	rc = file_row(fs, ino, &r, NULL);
	if (rc == -ENODATA)
		rc = 0; /* directories: no attributes */
	else if (!rc)
		rc = render_xattr_names(&r.rec, &v);
	if (!rc)
		rc = copy_out(&v, buf, size);
	buf_fini(&v);
	fs_int_resolved_fini(&r);
	return rc;
}
