/* fs_seen: what this mount has seen and may answer from without a
 * request: directories known only through keys below them (a listing of
 * their parent adds them and drops the ones no longer there), the entries
 * a listing just showed a process (FS_LISTED_MS), names a lookup just
 * found free (FS_ABSENT_MS), and directories' attributes as DynamoDB last
 * confirmed them (attr_timeout), and files' as a lookup last answered them
 * (FS_VANISHED_MS). Views only:
 * none of them ever decides a lock. Threads: FUSE workers; fs->mu. */
#include <stdlib.h>
#include <string.h>

#include "fs_int.h"

static void free_value_cb(void *arg, const char *key, void *value)
{
	free(value);
}

void fs_int_seen_init(struct fs *fs)
{
	smap_init(&fs->implicit);
	smap_init(&fs->listed);
	smap_init(&fs->absent);
}

void fs_int_seen_fini(struct fs *fs)
{
	smap_each(&fs->implicit, free_value_cb, NULL);
	smap_fini(&fs->implicit);
	smap_each(&fs->listed, free_value_cb, NULL);
	smap_fini(&fs->listed);
	smap_each(&fs->absent, free_value_cb, NULL);
	smap_fini(&fs->absent);
}

/* mu held. key's value in m (size bytes, allocated if new; NULL without
 * memory); a map of max entries is emptied first: these are memories of
 * moments, cheaper to lose at once than to age one by one. */
static void *slot_locked(struct smap *m, const char *key, size_t size,
			 size_t max)
{
	void *v;

	if (m->count >= max) {
		smap_each(m, free_value_cb, NULL);
		smap_fini(m);
		smap_init(m);
	}
	v = smap_get(m, key);
	if (!v) {
		v = malloc(size);
		if (v && smap_put(m, key, v)) {
			free(v);
			v = NULL;
		}
	}
	return v;
}

/* ---- names a lookup just found free ------------------------------------ */

void fs_int_absent_note(struct fs *fs, const char *full, int64_t asked_mono_ms)
{
	int64_t *t;

	pthread_mutex_lock(&fs->mu);
	t = slot_locked(&fs->absent, full, sizeof(*t), FS_ABSENT_MAX);
	if (t)
		*t = asked_mono_ms;
	pthread_mutex_unlock(&fs->mu);
}

bool fs_int_absent_known(struct fs *fs, const char *full)
{
	int64_t *t;
	bool yes = false;

	pthread_mutex_lock(&fs->mu);
	t = smap_get(&fs->absent, full);
	if (t) {
		yes = clk_mono_ms(fs->host->clk) - *t < FS_ABSENT_MS;
		if (!yes)
			free(smap_del(&fs->absent, full));
	}
	pthread_mutex_unlock(&fs->mu);
	return yes;
}

void fs_int_absent_forget(struct fs *fs, const char *full)
{
	pthread_mutex_lock(&fs->mu);
	free(smap_del(&fs->absent, full));
	pthread_mutex_unlock(&fs->mu);
}

/* ---- directories known through keys below them ----------------------- */

bool fs_int_implicit_dir_known(struct fs *fs, const char *full)
{
	bool yes;

	pthread_mutex_lock(&fs->mu);
	yes = smap_get(&fs->implicit, full) != NULL;
	pthread_mutex_unlock(&fs->mu);
	return yes;
}

struct prune {
	struct fs *fs;
	const char *under; /* "<prefix><dir>/" of the listing */
	size_t len;
	int64_t listed_mono_ms; /* entries seen before this are gone */
	char *gone[64];
	int n;
};

static void prune_cb(void *arg, const char *key, void *value)
{
	struct prune *p = arg;
	int64_t *seen = value;

	if (p->n < 64 && !strncmp(key, p->under, p->len) &&
	    !strchr(key + p->len, '/') && *seen < p->listed_mono_ms)
		p->gone[p->n++] = (char *)key;
}

void fs_int_implicit_dir_prune(struct fs *fs, const char *under,
			       int64_t listed_mono_ms)
{
	struct prune p = { fs, under, strlen(under), listed_mono_ms, { 0 }, 0 };
	int i;

	pthread_mutex_lock(&fs->mu);
	smap_each(&fs->implicit, prune_cb, &p);
	for (i = 0; i < p.n; i++) {
		char *k = strdup(p.gone[i]);

		if (k)
			free(smap_del(&fs->implicit, k));
		free(k);
	}
	pthread_mutex_unlock(&fs->mu);
}

void fs_int_implicit_dir_note(struct fs *fs, const char *full)
{
	int64_t *seen;

	pthread_mutex_lock(&fs->mu);
	seen = smap_get(&fs->implicit, full);
	if (!seen && fs->implicit.count < 65536) {
		seen = malloc(sizeof(*seen));
		if (seen && smap_put(&fs->implicit, full, seen)) {
			free(seen);
			seen = NULL;
		}
	}
	if (seen)
		*seen = clk_mono_ms(fs->host->clk);
	pthread_mutex_unlock(&fs->mu);
}

/* ---- what a listing showed a process ------------------------------- */

void fs_int_listed_note(struct fs *fs, const char *rel, int32_t pid,
			const struct fs_attr *attr)
{
	struct fs_listed *l;

	if (pid <= 0)
		return;
	pthread_mutex_lock(&fs->mu);
	l = slot_locked(&fs->listed, rel, sizeof(*l), FS_LISTED_MAX);
	if (l) {
		l->pid = pid;
		l->mono_ms = clk_mono_ms(fs->host->clk);
		l->attr = *attr;
	}
	pthread_mutex_unlock(&fs->mu);
}

/* mu held. The attributes a listing just showed ctx's process for rel. */
bool fs_int_listed_for(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		       struct fs_attr *attr)
{
	struct fs_listed *l = smap_get(&fs->listed, rel);

	if (!l || !ctx || l->pid != ctx->pid ||
	    clk_mono_ms(fs->host->clk) - l->mono_ms > FS_LISTED_MS)
		return false;
	*attr = l->attr;
	return true;
}

/* ---- directories' confirmed views ---------------------------------- */

/* A directory's attributes from its confirmed view, if fresh. */
bool fs_int_dir_view_get(struct fs *fs, uint64_t ino, const char *rel,
			 struct fs_attr *a)
{
	int64_t fresh_ms = (int64_t)(fs->cfg.attr_timeout_s * 1000);
	struct fs_node *n;
	bool ok = false;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->is_dir && n->dir_ok_mono_ms &&
	    clk_mono_ms(fs->host->clk) - n->dir_ok_mono_ms < fresh_ms) {
		*a = n->dir_attr;
		ok = true;
	}
	pthread_mutex_unlock(&fs->mu);
	if (ok)
		fs_dirstat_apply(fs->dirstat, rel, a);
	return ok;
}

void fs_int_dir_view_set(struct fs *fs, uint64_t ino, const struct fs_attr *a)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && n->is_dir) {
		n->dir_attr = *a;
		n->dir_ok_mono_ms = clk_mono_ms(fs->host->clk);
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

/* ---- files just found ---------------------------------------------- */

void fs_int_file_seen_locked(struct fs *fs, struct fs_node *n,
			     const struct fs_attr *a)
{
	n->file_attr = *a;
	n->file_ok_mono_ms = clk_mono_ms(fs->host->clk);
}

bool fs_int_file_vanished(struct fs *fs, uint64_t ino, int64_t asked_mono_ms,
			  struct fs_attr *a)
{
	struct fs_node *n;
	bool ok = false;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && !n->is_dir && n->file_ok_mono_ms &&
	    asked_mono_ms - n->file_ok_mono_ms < FS_VANISHED_MS) {
		*a = n->file_attr;
		a->nlink = fs_int_node_nlink(n);
		ok = true;
	}
	pthread_mutex_unlock(&fs->mu);
	return ok;
}
