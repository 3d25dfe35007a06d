/* fs_dircheck: directories this mount wrote into, read again after the
 * write. A create (an O_CREAT open, a flock's acquire, a link, a mkdir)
 * in a directory goes by the kernel's entry for that directory, which may
 * be up to entry_timeout old, or by a lookup that began before another
 * mount's rmdir deleted the directory's marker: the write then lands under
 * a directory with no row. A lookup reads a name's own rows, so nothing
 * would show that directory: its lock would be invisible on every other
 * mount (this mount sees directories it holds locks in: lock_holds_below).
 * So a directory written into is read again FS_DIRCHECK_MS after the
 * first write not yet covered (one consistent Query covers every write
 * into it before that read began), unless a lookup or getattr of it found
 * its marker by a read begun after the last write. If the marker is gone
 * while this mount still holds a lock below it, or made a directory in
 * it, the marker is written again where no row is (a lock seen lapsed
 * there is taken over, as mkdir does), with the attributes this mount
 * last saw, or the mount root's: a directory with a lock in it stays
 * visible, as a directory known through keys below it is. A view only:
 * nothing here grants or refuses a lock.
 *
 * Threads: FUSE workers and lock acquirers note writes (fs_int_dir_wrote)
 * and confirmations (fs_int_dir_confirmed); the checker thread makes the
 * requests (fs_dircheck_run in tests). dc->mu guards the entries and is
 * never held across a request, nor taken with fs->mu held. */
#include "fs_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clk.h"
#include "log.h"

#define TAG "fs"
/* Failed checks are tried again, 1, 2, 4... periods later, this many
 * times; then the directory is left to the next write into it. */
#define DIRCHECK_TRIES 6

struct dc_entry {
	int64_t wrote_mono_ms; /* the last write into it */
	int64_t due_mono_ms;
	int64_t began_mono_ms; /* checking: when its read began */
	bool checking;
	bool made_dir; /* a directory was made in it: check whatever is held */
	int tries;
};

struct fs_dircheck {
	pthread_mutex_t mu;
	pthread_cond_t wake;
	struct smap ents; /* full key of the directory -> struct dc_entry */
	atomic_size_t count;
	pthread_t thread;
	bool running, stopping;
};

struct fs_dircheck *fs_dircheck_new(void)
{
	struct fs_dircheck *dc = calloc(1, sizeof(*dc));
	pthread_condattr_t ca;

	if (!dc)
		return NULL;
	pthread_mutex_init(&dc->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dc->wake, &ca);
	pthread_condattr_destroy(&ca);
	smap_init(&dc->ents);
	return dc;
}

static void free_entry_cb(void *arg, const char *key, void *value)
{
	free(value);
}

void fs_dircheck_free(struct fs_dircheck *dc)
{
	if (!dc)
		return;
	smap_each(&dc->ents, free_entry_cb, NULL);
	smap_fini(&dc->ents);
	pthread_cond_destroy(&dc->wake);
	pthread_mutex_destroy(&dc->mu);
	free(dc);
}

/* The directory of full key (one of the mount prefix's own included: a
 * mount of the table's root may remove it); NULL for a key at the top of
 * the table (or without memory). */
static char *dir_of(const struct fs *fs, const char *full)
{
	const char *slash = strrchr(full, '/');

	if (strncmp(full, fs->prefix, fs->prefix_len) || !slash)
		return NULL;
	return strndup(full, (size_t)(slash - full));
}

/* dir's path below the mount's root, or NULL for the root itself or a
 * directory of the prefix. */
static const char *rel_of(const struct fs *fs, const char *dir)
{
	return strlen(dir) > fs->prefix_len ? dir + fs->prefix_len : NULL;
}

static void note_write(struct fs *fs, const char *dir, bool made_dir)
{
	struct fs_dircheck *dc = fs->dircheck;
	int64_t now = clk_mono_ms(fs->host->clk);
	struct dc_entry *e;

	pthread_mutex_lock(&dc->mu);
	e = smap_get(&dc->ents, dir);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (e && smap_put(&dc->ents, dir, e)) {
			free(e);
			e = NULL;
		}
		if (e) {
			e->due_mono_ms = now + FS_DIRCHECK_MS;
			atomic_store(&dc->count, dc->ents.count);
			pthread_cond_signal(&dc->wake);
		}
	}
	if (e) {
		e->wrote_mono_ms = now;
		e->made_dir |= made_dir;
	} else {
		log_warn(TAG,
			 "dir=%s: out of memory: not read again after "
			 "a write into it",
			 dir);
	}
	pthread_mutex_unlock(&dc->mu);
}

void fs_int_dir_wrote(struct fs *fs, const char *full, bool made_dir)
{
	char *dir = dir_of(fs, full);

	if (dir)
		note_write(fs, dir, made_dir);
	free(dir);
}

void fs_on_acquired(void *arg, const char *key)
{
	struct fs *fs = arg;

	if (fs && fs->dircheck)
		fs_int_dir_wrote(fs, key, false);
}

void fs_int_dir_row_seen_locked(struct fs_node *n, const struct dir_record *row)
{
	n->dir_row_seen = true;
	n->dir_row.mode = row->mode;
	n->dir_row.uid = row->uid;
	n->dir_row.gid = row->gid;
	n->dir_row.created_real_ms = row->created_real_ms;
}

void fs_int_dir_confirmed(struct fs *fs, const char *rel, int64_t asked_mono_ms,
			  const struct dir_record *row)
{
	struct fs_dircheck *dc = fs->dircheck;
	char *pk = fs_int_path_key(rel, true);
	char *full = NULL;
	struct dc_entry *e;
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = pk ? smap_get(&fs->by_path, pk) : NULL;
	if (n && n->is_dir)
		fs_int_dir_row_seen_locked(n, row);
	pthread_mutex_unlock(&fs->mu);
	free(pk);
	if (!dc || !atomic_load(&dc->count) ||
	    !(full = fs_int_full_key(fs, rel)))
		return;
	pthread_mutex_lock(&dc->mu);
	e = smap_get(&dc->ents, full);
	if (e && !e->checking && e->wrote_mono_ms < asked_mono_ms) {
		free(smap_del(&dc->ents, full));
		atomic_store(&dc->count, dc->ents.count);
	} else if (e && !e->checking &&
		   e->due_mono_ms < asked_mono_ms + FS_DIRCHECK_MS) {
		/* The writes before the read are covered: the first one
		 * still to cover came after it began. */
		e->due_mono_ms = asked_mono_ms + FS_DIRCHECK_MS;
		e->tries = 0;
	}
	pthread_mutex_unlock(&dc->mu);
	free(full);
}

/* The marker to write again: the attributes this mount last saw in the
 * directory's row, or the mount root's (as a directory known only through
 * keys below it shows). */
static void restore_template(struct fs *fs, const char *dir,
			     struct dir_record *d)
{
	const char *rel = rel_of(fs, dir);
	char *pk = rel ? fs_int_path_key(rel, true) : NULL;
	struct fs_node *n;

	d->mode = fs->cfg.root_mode & 01777;
	d->uid = fs->cfg.root_uid;
	d->gid = fs->cfg.root_gid;
	d->created_real_ms = clk_real_ms(fs->host->clk);
	pthread_mutex_lock(&fs->mu);
	n = pk ? smap_get(&fs->by_path, pk) : NULL;
	if (n && n->dir_row_seen) {
		d->mode = n->dir_row.mode;
		d->uid = n->dir_row.uid;
		d->gid = n->dir_row.gid;
		d->created_real_ms = n->dir_row.created_real_ms;
	}
	pthread_mutex_unlock(&fs->mu);
	free(pk);
}

int fs_int_dir_restore(struct fs *fs, const char *dir)
{
	struct dir_record d;
	int rc;

	dir_record_init(&d);
	restore_template(fs, dir, &d);
	d.key = strdup(dir);
	rc = d.key ? lock_rows_put_dir(fs->eng, &d, true) : -ENOMEM;
	dir_record_fini(&d);
	if (!rc && rel_of(fs, dir))
		fs_int_dir_view_forget(fs, rel_of(fs, dir));
	return rc;
}

/* One check of dir; 0 when done (marker there, written again, or nothing
 * to keep visible), or -errno to try again later. */
static int check_dir(struct fs *fs, const char *dir, bool made_dir)
{
	struct store_lookup sl;
	int64_t seen;
	int rc;

	if (!made_dir && !lock_holds_below(fs->eng, dir))
		return 0; /* let go of meanwhile: nothing to keep visible */
	store_lookup_init(&sl);
	rc = lock_rows_lookup(fs->eng, dir, &sl);
	if (!rc && sl.has_dir) {
		store_lookup_fini(&sl);
		return 0;
	}
	if (!rc && sl.has_lock && fs_int_row_live(fs, &sl.lock, &seen)) {
		log_warn(TAG,
			 "dir=%s was removed by another mount while this "
			 "mount took a lock in it, and a lock holds its name "
			 "now: the locks below it are shown on this mount "
			 "only until they are released",
			 dir);
		store_lookup_fini(&sl);
		return 0;
	}
	store_lookup_fini(&sl);
	if (rc)
		return rc;
	rc = fs_int_dir_restore(fs, dir);
	if (rc == -EEXIST)
		return 0; /* made again meanwhile (or a lock: a new check) */
	if (rc)
		return rc;
	log_warn(TAG,
		 "dir=%s was removed by another mount while this mount took "
		 "a lock in it: its marker is written again, so that the "
		 "lock is seen",
		 dir);
	/* Its own directory may have gone the same way. */
	fs_int_dir_wrote(fs, dir, true);
	return 0;
}

/* dc->mu held: checks entry e of dir (dropping mu for the requests), then
 * drops it, or keeps it for a write not covered or a failure. */
static void check_entry(struct fs *fs, const char *key, struct dc_entry *e)
{
	struct fs_dircheck *dc = fs->dircheck;
	char *dir = strdup(key);
	bool made_dir = e->made_dir;
	int64_t now;
	int rc;

	if (!dir)
		return;
	e->checking = true;
	e->began_mono_ms = clk_mono_ms(fs->host->clk);
	pthread_mutex_unlock(&dc->mu);
	rc = check_dir(fs, dir, made_dir);
	pthread_mutex_lock(&dc->mu);
	e = smap_get(&dc->ents, dir);
	now = clk_mono_ms(fs->host->clk);
	if (!e) {
		free(dir); /* only a check drops a checked entry */
		return;
	}
	if (rc && ++e->tries <= DIRCHECK_TRIES) {
		char why[LOG_ERRNO_MAX];

		e->checking = false;
		e->due_mono_ms = now + (FS_DIRCHECK_MS << e->tries);
		log_info(TAG,
			 "dir=%s: the read after a write into it failed: %s; "
			 "tried again later",
			 dir, log_errno(rc, why, sizeof(why)));
	} else if (!rc && e->wrote_mono_ms >= e->began_mono_ms) {
		/* Written into again while the read was on its way: that
		 * write is not covered yet. */
		e->checking = false;
		e->due_mono_ms = e->began_mono_ms + FS_DIRCHECK_MS;
		e->tries = 0;
	} else {
		if (rc)
			log_warn(TAG,
				 "dir=%s: could not be read after a write "
				 "into it (%d tries): left to the next write",
				 dir, DIRCHECK_TRIES + 1);
		free(smap_del(&dc->ents, dir));
		atomic_store(&dc->count, dc->ents.count);
	}
	free(dir);
}

/* The entry due first. */
struct due {
	const char *key;
	struct dc_entry *e;
};

static void due_cb(void *arg, const char *key, void *value)
{
	struct due *d = arg;
	struct dc_entry *e = value;

	if (!e->checking && (!d->e || e->due_mono_ms < d->e->due_mono_ms)) {
		d->key = key;
		d->e = e;
	}
}

/* The keys of every entry. */
struct keys {
	char **v;
	size_t n;
};

static void key_cb(void *arg, const char *key, void *value)
{
	struct keys *k = arg;

	k->v[k->n] = strdup(key);
	if (k->v[k->n])
		k->n++;
}

int fs_dircheck_run(struct fs *fs)
{
	struct fs_dircheck *dc = fs->dircheck;
	struct keys k = { NULL, 0 };
	int n = 0;

	pthread_mutex_lock(&dc->mu);
	k.v = calloc(dc->ents.count + 1, sizeof(*k.v));
	if (k.v)
		smap_each(&dc->ents, key_cb, &k);
	for (size_t i = 0; i < k.n; i++) {
		struct dc_entry *e = smap_get(&dc->ents, k.v[i]);

		if (e && !e->checking) {
			check_entry(fs, k.v[i], e);
			n++;
		}
		free(k.v[i]);
	}
	pthread_mutex_unlock(&dc->mu);
	free(k.v);
	return n;
}

static void wait_until(struct fs *fs, int64_t mono_ms)
{
	struct fs_dircheck *dc = fs->dircheck;
	int64_t wait_ms = mono_ms - clk_mono_ms(fs->host->clk);
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (wait_ms < 1)
		wait_ms = 1;
	ts.tv_sec += wait_ms / 1000;
	ts.tv_nsec += (wait_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&dc->wake, &dc->mu, &ts);
}

static void *checker_main(void *arg)
{
	struct fs *fs = arg;
	struct fs_dircheck *dc = fs->dircheck;

	pthread_mutex_lock(&dc->mu);
	while (!dc->stopping) {
		struct due d = { NULL, NULL };

		smap_each(&dc->ents, due_cb, &d);
		if (d.e && d.e->due_mono_ms <= clk_mono_ms(fs->host->clk))
			check_entry(fs, d.key, d.e);
		else if (d.e)
			wait_until(fs, d.e->due_mono_ms);
		else
			pthread_cond_wait(&dc->wake, &dc->mu);
	}
	pthread_mutex_unlock(&dc->mu);
	return NULL;
}

int fs_dircheck_start(struct fs *fs)
{
	struct fs_dircheck *dc = fs->dircheck;
	int rc;

	if (dc->running)
		return 0;
	rc = pthread_create(&dc->thread, NULL, checker_main, fs);
	if (rc)
		return -rc;
	dc->running = true;
	return 0;
}

void fs_dircheck_stop(struct fs *fs)
{
	struct fs_dircheck *dc = fs->dircheck;

	pthread_mutex_lock(&dc->mu);
	dc->stopping = true;
	pthread_cond_broadcast(&dc->wake);
	pthread_mutex_unlock(&dc->mu);
	if (dc->running)
		pthread_join(dc->thread, NULL);
	dc->running = false;
}
