/* fs_dirstat: what this mount knows of each directory's entries: how many
 * subdirectories it has, counted by the last listing of it and kept up to
 * date by this mount's own mkdir and rmdir, and when its entries last
 * changed: a create, unlink, link, mkdir, rmdir or automatic release through
 * this mount, or a listing whose names differ from the one before (changes
 * made on other mounts show at the next listing; counting them at every
 * stat would cost a Scan). Directories are keyed by their path relative to
 * the mount ("" is the root); at most DS_MAX are tracked, the others show
 * nlink 1 and their row's times. Threads: FUSE workers and the lease
 * workers (automatic releases); one mutex, never held across a call out. */
#include "fs_dirstat.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "map.h"

#define DS_MAX 65536

struct dir_info {
	int64_t changed_real_ms; /* 0: no change seen */
	int64_t subdirs;
	uint64_t names_hash;
	bool counted; /* subdirs is known */
	bool hashed;  /* names_hash is the last listing's, with no change of
		       * ours since */
};

struct fs_dirstat {
	pthread_mutex_t mu;
	struct smap dirs; /* mu: rel -> struct dir_info */
};

struct fs_dirstat *fs_dirstat_new(void)
{
	struct fs_dirstat *ds = calloc(1, sizeof(*ds));

	if (!ds)
		return NULL;
	pthread_mutex_init(&ds->mu, NULL);
	smap_init(&ds->dirs);
	return ds;
}

static void free_info(void *arg, const char *key, void *value)
{
	(void)arg;
	(void)key;
	free(value);
}

void fs_dirstat_free(struct fs_dirstat *ds)
{
	if (!ds)
		return;
	smap_each(&ds->dirs, free_info, NULL);
	smap_fini(&ds->dirs);
	pthread_mutex_destroy(&ds->mu);
	free(ds);
}

/* mu held. dir's info, made when create is set and there is room. */
static struct dir_info *info_of(struct fs_dirstat *ds, const char *dir,
				bool create)
{
	struct dir_info *di = smap_get(&ds->dirs, dir);

	if (di || !create || ds->dirs.count >= DS_MAX)
		return di;
	di = calloc(1, sizeof(*di));
	if (di && smap_put(&ds->dirs, dir, di)) {
		free(di);
		di = NULL;
	}
	return di;
}

void fs_dirstat_changed(struct fs_dirstat *ds, const char *dir, int subdirs,
			int64_t real_ms)
{
	struct dir_info *di;

	pthread_mutex_lock(&ds->mu);
	di = info_of(ds, dir, true);
	if (di) {
		if (real_ms > di->changed_real_ms)
			di->changed_real_ms = real_ms;
		di->subdirs += subdirs;
		if (di->subdirs < 0)
			di->counted = false; /* we missed something */
		/* The next listing differs by our own change: not news. */
		di->hashed = false;
	}
	pthread_mutex_unlock(&ds->mu);
}

void fs_dirstat_made(struct fs_dirstat *ds, const char *dir, int64_t real_ms)
{
	struct dir_info *di;

	pthread_mutex_lock(&ds->mu);
	di = info_of(ds, dir, true);
	if (di) {
		*di = (struct dir_info){ .changed_real_ms = real_ms,
					 .counted = true };
	}
	pthread_mutex_unlock(&ds->mu);
}

void fs_dirstat_removed(struct fs_dirstat *ds, const char *dir)
{
	pthread_mutex_lock(&ds->mu);
	free(smap_del(&ds->dirs, dir));
	pthread_mutex_unlock(&ds->mu);
}

void fs_dirstat_listed(struct fs_dirstat *ds, const char *dir, int subdirs,
		       uint64_t names_hash, int64_t real_ms)
{
	struct dir_info *di;

	pthread_mutex_lock(&ds->mu);
	di = info_of(ds, dir, true);
	if (di) {
		if (di->hashed && di->names_hash != names_hash &&
		    real_ms > di->changed_real_ms)
			di->changed_real_ms = real_ms;
		di->names_hash = names_hash;
		di->hashed = true;
		di->subdirs = subdirs;
		di->counted = true;
	}
	pthread_mutex_unlock(&ds->mu);
}

/* FNV-1a of the name, its kind mixed in; summed over a listing, so the
 * order of the scan does not matter. */
uint64_t fs_dirstat_hash_name(const char *name, int is_dir)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	h ^= is_dir ? 0x2f : 0;
	h *= 1099511628211ULL;
	return h;
}

void fs_dirstat_apply(struct fs_dirstat *ds, const char *dir, struct fs_attr *a)
{
	struct dir_info *di;

	pthread_mutex_lock(&ds->mu);
	di = info_of(ds, dir, false);
	a->nlink = di && di->counted ? (uint32_t)(2 + di->subdirs) : 1;
	if (di && di->changed_real_ms > a->mtime_real_ms)
		a->mtime_real_ms = di->changed_real_ms;
	if (di && di->changed_real_ms > a->ctime_real_ms)
		a->ctime_real_ms = di->changed_real_ms;
	pthread_mutex_unlock(&ds->mu);
}
