/* fs: the filesystem without FUSE (see fs.h): setup, and the requests
 * about a name or an inode: lookup, forget, getattr, setattr, statfs.
 * The other requests are in the files fs_int.h lists. Threads: FUSE
 * workers, the lease thread through fs_on_released, acquirers through
 * fs_on_acquired (fs_dircheck.c), the flusher and checker threads that
 * fs_start starts; fs->mu guards the
 * inode maps, the handle list and the fields marked in fs_int.h, and is
 * never held across a store request or an engine call that makes one. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

struct fs *fs_new(const struct fs_config *cfg, struct lock_engine *engine,
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
	fs->host = cfg->host ? cfg->host : host_system();
	fs->eng = engine;
	fs->m = metrics;
	fs->mount_real_ms = clk_real_ms(fs->host->clk);
	fs->next_ino = FS_FIRST_INO;
	pthread_mutex_init(&fs->mu, NULL);
	imap_init(&fs->by_ino);
	smap_init(&fs->by_path);
	fs_int_seen_init(fs);
	fs->quota =
		fs_quota_new(&(struct fs_quota_limits){ {
				     [FSQ_LOCKS] = cfg->max_locks_per_user,
				     [FSQ_WAITERS] = cfg->max_waiters_per_user,
				     [FSQ_DIRS] = cfg->max_dirs_per_user,
				     [FSQ_OPENS] = cfg->max_opens_per_user,
			     } },
			     fs->host->clk);
	fs->wb = fs_wb_new(engine, fs->host->clk, FS_WB_INTERVAL_MS,
			   FS_MAX_DATA);
	fs->dirstat = fs_dirstat_new();
	fs->dircheck = fs_dircheck_new();
	if (!fs->quota || !fs->wb || !fs->dirstat || !fs->dircheck) {
		fs_dircheck_free(fs->dircheck);
		fs_dirstat_free(fs->dirstat);
		fs_quota_free(fs->quota);
		fs_wb_free(fs->wb);
		free(fs->prefix);
		free(fs);
		return NULL;
	}
	fs_int_fixed_node(fs, &fs->root, FS_ROOT_INO, "", true);
	fs_int_fixed_node(fs, &fs->ctl_dir, FS_CTL_DIR_INO, FS_CTL_DIR_NAME,
			  true);
	fs_int_fixed_node(fs, &fs->ctl_status, FS_CTL_STATUS_INO,
			  FS_CTL_DIR_NAME "/status", false);
	fs_int_fixed_node(fs, &fs->ctl_metrics, FS_CTL_METRICS_INO,
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

int fs_start(struct fs *fs)
{
	int rc = fs_wb_start(fs->wb);

	return rc ? rc : fs_dircheck_start(fs);
}

void fs_stop(struct fs *fs)
{
	fs_dircheck_stop(fs);
	fs_wb_stop(fs->wb);
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	fs_wb_free(fs->wb);
	fs_quota_free(fs->quota);
	fs_dirstat_free(fs->dirstat);
	fs_dircheck_free(fs->dircheck);
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
	fs_int_seen_fini(fs);
	free(fs->root.rel);
	free(fs->ctl_dir.rel);
	free(fs->ctl_status.rel);
	free(fs->ctl_metrics.rel);
	pthread_mutex_destroy(&fs->mu);
	free(fs->prefix);
	free(fs);
}

void fs_on_released(void *arg, const char *key)
{
	struct fs *fs = arg;

	if (!strncmp(key, fs->prefix, fs->prefix_len))
		fs_int_entry_changed(fs, key + fs->prefix_len, 0);
}

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
	fs_int_fill_entry(fs, e, FS_ENTRY_DIR);
	return 0;
}

int fs_lookup(struct fs *fs, uint64_t parent, const char *name,
	      struct fs_entry *e)
{
	return fs_lookup_ctx(fs, NULL, parent, name, e);
}

int fs_lookup_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
		  const char *name, struct fs_entry *e)
{
	struct resolved r;
	struct fs_node *n;
	char *rel = NULL;
	int64_t asked_mono_ms;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = lookup_ctl(fs, parent, name, e);
	if (rc <= 0)
		return rc;
	rc = fs_int_child_rel(fs, parent, name, &rel);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->mu);
	if (fs_int_listed_for(fs, ctx, rel, &e->attr)) {
		n = fs_int_get_node(fs, rel, false, true);
		if (n) {
			e->attr.ino = n->ino;
			e->attr.nlink = fs_int_node_nlink(n);
		}
		pthread_mutex_unlock(&fs->mu);
		free(rel);
		if (!n)
			return -ENOMEM;
		fs_int_fill_entry(fs, e, FS_ENTRY_OTHERS_LOCK);
		return 0;
	}
	pthread_mutex_unlock(&fs->mu);
	fs_int_resolved_init(&r);
	asked_mono_ms = clk_mono_ms(fs->host->clk);
	/* A lock the caller's group lost shows to it as lost, from memory,
	 * whatever the row now is, and without reading it. */
	rc = fs_int_lost_view(fs, ctx, rel, &r)
		     ? 0
		     : fs_int_resolve_name(fs, rel, &r);
	if (!rc && r.kind == K_NONE)
		rc = -ENOENT;
	if (!rc) {
		pthread_mutex_lock(&fs->mu);
		n = fs_int_get_node(fs, rel, r.kind == K_DIR, true);
		if (n) {
			fs_int_resolved_attr(fs, n->ino, rel, &r, &e->attr);
			if (!n->is_dir) {
				e->attr.nlink = fs_int_node_nlink(n);
				fs_int_file_seen_locked(fs, n, &e->attr);
			}
		}
		pthread_mutex_unlock(&fs->mu);
		if (!n)
			rc = -ENOMEM;
		fs_int_fill_entry(fs, e,
				  fs_int_entry_of(r.kind == K_FILE, r.ours));
	}
	if (!rc && r.kind == K_DIR && !r.implicit && !r.from_view)
		fs_int_dir_confirmed(fs, rel, asked_mono_ms, &r.dir);
	fs_int_resolved_fini(&r);
	free(rel);
	return rc;
}

int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *a,
	       double *timeout_s)
{
	return fs_getattr_ctx(fs, NULL, ino, false, a, timeout_s);
}

int fs_getattr_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		   bool by_path, struct fs_attr *a, double *timeout_s)
{
	struct resolved r;
	bool is_dir, fixed;
	char *rel = NULL;
	int64_t asked_mono_ms;
	int rc;

	*timeout_s = fs->cfg.attr_timeout_s;
	if (ino == FS_ROOT_INO) {
		fs_int_dir_attr(fs, ino, NULL, a);
		fs_dirstat_apply(fs->dirstat, "", a);
		return 0;
	}
	rc = fs_int_node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (fixed) {
		pthread_mutex_lock(&fs->mu);
		fs_int_ctl_attr(fs, fs_int_find_node(fs, ino), a);
		pthread_mutex_unlock(&fs->mu);
		free(rel);
		return 0;
	}
	if (is_dir && fs_int_dir_view_get(fs, ino, rel, a)) {
		free(rel);
		return 0;
	}
	asked_mono_ms = clk_mono_ms(fs->host->clk);
	fs_int_resolved_init(&r);
	/* As fs_lookup_ctx: the caller's group's lost lock, from memory. */
	rc = !is_dir && fs_int_lost_view(fs, ctx, rel, &r)
		     ? 0
		     : fs_int_resolve(fs, rel, is_dir, &r);
	if (!rc && r.kind == K_NONE && !is_dir && !by_path &&
	    fs_int_file_vanished(fs, ino, asked_mono_ms, a)) {
		/* Released since the lookup that found it (an open's
		 * permission check): the file that lookup found. */
		fs_int_resolved_fini(&r);
		free(rel);
		return 0;
	}
	if (!rc) {
		if (r.kind == K_NONE || (r.kind == K_DIR) != is_dir)
			rc = by_path ? -ESTALE : -ENOENT;
		else
			fs_int_resolved_attr(fs, ino, rel, &r, a);
		if (!rc)
			*timeout_s = fs_int_attr_timeout(
				fs, fs_int_entry_of(r.kind == K_FILE, r.ours));
		if (!rc && is_dir)
			fs_int_dir_view_set(fs, ino, a);
		if (!rc && is_dir && !r.implicit && !r.from_view)
			fs_int_dir_confirmed(fs, rel, asked_mono_ms, &r.dir);
	}
	if (!rc && !is_dir) {
		struct fs_node *n;

		pthread_mutex_lock(&fs->mu);
		n = fs_int_find_node(fs, ino);
		if (n)
			a->nlink = fs_int_node_nlink(n);
		pthread_mutex_unlock(&fs->mu);
	}
	fs_int_resolved_fini(&r);
	free(rel);
	return rc;
}

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
	rc = fs_int_node_info(fs, ino, &rel, &is_dir, &fixed);
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
		lk = fs_int_lost_of_caller(fs, ctx,
					   rel); /* its changes give EIO */
	free(rel);
	if (!lk || !fs_int_is_holder(ctx, lk)) {
		lock_unref(fs->eng, lk);
		return -EPERM;
	}
	if (valid & FS_SET_SIZE)
		rc = fs_int_truncate(fs, ctx, lk, size);
	else if (valid & FS_SET_TIMES)
		rc = lock_renew_sync(fs->eng, lk); /* touch = heartbeat */
	lock_unref(fs->eng, lk);
	if (rc)
		return rc;
	return fs_getattr(fs, ino, out, timeout_s);
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
