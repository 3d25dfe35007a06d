/* fs: inodes, names, handles, attributes and listings (see fs.h).
 * Threads: FUSE workers, and the lease thread through fs_on_lost and
 * fs_on_released. fs->mu guards the inode maps, the handle list, node and
 * handle fields marked below, and the implicit-directory cache; it is never
 * held across a store request or an engine call that makes one. */
#include "fs.h"

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
#include "render.h"
#include "text.h"

#define TAG "fs"
#define FS_FIRST_INO 16
/* Directories seen only through the keys under them (written by other
 * clients) are known from listings: a listing of their parent adds them and
 * drops the ones no longer there. */

struct fs_node {
	uint64_t ino;
	uint64_t nlookup;     /* mu */
	int opens;            /* mu: handles and listings using the node */
	char *rel;            /* key relative to the mount prefix; "" root */
	char *alias;          /* mu: a second name made by link(), or NULL */
	bool is_dir;
	bool in_path_map;     /* mu: by_path points at this node */
	bool fixed;           /* root and control nodes: never freed */
};

struct fs_handle {
	struct fs_handle *prev, *next; /* mu */
	struct fs_node *node;
	struct lock *lk;      /* our lock when opened on one (referenced) */
	bool holding;         /* the acquiring open file */
	bool by_holder;       /* opened by the lock's holder (uid or root) */
	struct buf snap;      /* mu: text served to reads past offset 0 */
	void *ph;             /* mu: poll handle to wake on loss */
};

struct fs_dirent {
	char *name;
	bool is_dir;
	bool ours;            /* a lock this mount holds */
	struct fs_attr attr;
};

struct fs_dirlist {
	struct fs_node *dir;
	struct fs_dirent *ents;
	size_t n, cap;
};

struct fs {
	struct fs_config cfg;
	char *prefix;
	size_t prefix_len;
	struct lock_engine *eng;
	struct store *st;
	struct observe *obs;
	struct metrics *m;
	struct flk *flk;              /* set once before the mount */
	int64_t mount_real_ms;

	pthread_mutex_t mu;
	struct imap by_ino;           /* mu */
	struct smap by_path;          /* mu: "f:<rel>" / "d:<rel>" -> node */
	uint64_t next_ino;            /* mu */
	struct fs_handle *handles;    /* mu */
	struct smap implicit;         /* mu: full dir key -> int64 seen time */
	struct fs_node root, ctl_dir, ctl_status, ctl_metrics;
};

enum kind {
	K_NONE,
	K_FILE,
	K_DIR,
};

/* What a key is right now. */
struct resolved {
	enum kind kind;
	bool ours;                   /* a lock this mount holds */
	struct lock_record rec;      /* K_FILE */
	enum render_state state;
	int64_t seen_real_ms;        /* first sighting of a foreign row */
	struct dir_record dir;       /* K_DIR with a row */
	bool implicit;               /* K_DIR without a row */
};

static void resolved_init(struct resolved *r)
{
	memset(r, 0, sizeof(*r));
	record_init(&r->rec);
	dir_record_init(&r->dir);
}

static void resolved_fini(struct resolved *r)
{
	record_fini(&r->rec);
	dir_record_fini(&r->dir);
}

/* Store failures as users see them: permission stays permission, any
 * other backend trouble (unreachable, throttled past the deadline, missing
 * table, malformed answer) is EIO, with the detail in the log. Errors of
 * the filesystem's own (EPERM, ENOENT, ENOTEMPTY...) pass through. */
static int user_err(int rc, const char *what, const char *key)
{
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
		log_warn(TAG, "%s key=%s: DynamoDB request failed (%s)", what,
			 key, strerror(-rc));
		return -EIO;
	default:
		return rc;
	}
}

static int64_t now_real_ms(void)
{
	return clk_sys_real_ms();
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

static char *path_key(const char *rel, bool is_dir)
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

static void unmap_path(struct fs *fs, struct fs_node *n)
{
	char *pk;

	if (!n->in_path_map)
		return;
	pk = path_key(n->rel, n->is_dir);
	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
	n->in_path_map = false;
}

/* Removes by_path's entry for rel if it points at n. */
static void unmap_one(struct fs *fs, struct fs_node *n, const char *rel)
{
	char *pk = path_key(rel, n->is_dir);

	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
}

static void maybe_free_node(struct fs *fs, struct fs_node *n)
{
	if (n->fixed || n->nlookup || n->opens)
		return;
	unmap_path(fs, n);
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
static struct fs_node *get_node(struct fs *fs, const char *rel, bool is_dir,
				bool count)
{
	struct fs_node *n;
	char *pk;

	if (!*rel)
		n = &fs->root;
	else if (!(pk = path_key(rel, is_dir)))
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

static struct fs_node *find_node(struct fs *fs, uint64_t ino)
{
	return imap_get(&fs->by_ino, ino);
}

/* Copies the relative path of a directory inode; -ENOENT, -ENOTDIR. */
static int dir_rel(struct fs *fs, uint64_t ino, char **rel)
{
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->mu);
	n = find_node(fs, ino);
	if (!n)
		rc = -ENOENT;
	else if (!n->is_dir || n == &fs->ctl_dir)
		rc = n == &fs->ctl_dir ? -EPERM : -ENOTDIR;
	else if (!(*rel = strdup(n->rel)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

static char *full_key(const struct fs *fs, const char *rel)
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
	fs->mount_real_ms = now_real_ms();
	fs->next_ino = FS_FIRST_INO;
	pthread_mutex_init(&fs->mu, NULL);
	imap_init(&fs->by_ino);
	smap_init(&fs->by_path);
	smap_init(&fs->implicit);
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

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	while (fs->handles) {
		struct fs_handle *h = fs->handles;

		fs->handles = h->next;
		if (h->lk)
			lock_unref(fs->eng, h->lk);
		if (h->ph && fs->cfg.poll_destroy)
			fs->cfg.poll_destroy(h->ph);
		buf_fini(&h->snap);
		free(h);
	}
	imap_each(&fs->by_ino, free_node_cb, NULL);
	imap_fini(&fs->by_ino);
	smap_fini(&fs->by_path);
	smap_each(&fs->implicit, free_implicit_cb, NULL);
	smap_fini(&fs->implicit);
	free(fs->root.rel);
	free(fs->ctl_dir.rel);
	free(fs->ctl_status.rel);
	free(fs->ctl_metrics.rel);
	pthread_mutex_destroy(&fs->mu);
	free(fs->prefix);
	free(fs);
}

/* ---- attributes -------------------------------------------------------- */

static void dir_attr(const struct fs *fs, uint64_t ino,
		     const struct dir_record *d, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 2;
	if (d && d->key) {
		a->mode = S_IFDIR | (d->mode & 07777);
		a->uid = (uint32_t)d->uid;
		a->gid = (uint32_t)d->gid;
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

static void lock_attr(const struct fs *fs, uint64_t ino,
		      const struct lock_record *r, enum render_state st,
		      int64_t seen_real_ms, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	if (r->has_lockfs) {
		a->mode = S_IFREG | (r->mode & 07777);
		a->uid = (uint32_t)r->uid;
		a->gid = (uint32_t)r->gid;
		a->ctime_real_ms = r->acquired_real_ms;
		a->mtime_real_ms = r->heartbeat_real_ms;
	} else {
		/* Rows of other clients have no owner or times of ours. */
		a->mode = S_IFREG | 0644;
		a->uid = fs->cfg.root_uid;
		a->gid = fs->cfg.root_gid;
		a->ctime_real_ms = a->mtime_real_ms =
			seen_real_ms ? seen_real_ms : now_real_ms();
	}
	a->atime_real_ms = a->mtime_real_ms;
	/* The size is the holder's data, not the text (reads are direct I/O
	 * and return the whole text whatever the size): lock-file programs
	 * check that a file they just created is empty (procmail's NFS-safe
	 * creat) and that the pid they wrote is there. */
	a->size = r->has_data ? r->data_len : 0;
}

static void ctl_attr(struct fs *fs, struct fs_node *n, struct fs_attr *a)
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
		a->size = 0;  /* generated on read (direct I/O) */
		a->mtime_real_ms = now_real_ms();
	}
}

/* Timeouts of an entry. A lock this mount holds can go away without the
 * kernel seeing an unlink (a close in fd mode, a flock released, its group
 * gone, a loss): the kernel must ask every time, which costs no request
 * (we answer from memory), so that O_EXCL right after such a release
 * reaches us instead of a cached EEXIST. */
static void fill_entry(const struct fs *fs, struct fs_entry *e, bool ours)
{
	e->attr_timeout_s = fs->cfg.attr_timeout_s;
	e->entry_timeout_s = ours ? 0 : fs->cfg.entry_timeout_s;
}

/* ---- resolving keys ---------------------------------------------------- */

static bool implicit_dir_known(struct fs *fs, const char *full)
{
	bool yes;

	pthread_mutex_lock(&fs->mu);
	yes = smap_get(&fs->implicit, full) != NULL;
	pthread_mutex_unlock(&fs->mu);
	return yes;
}

struct prune {
	struct fs *fs;
	const char *under;        /* "<prefix><dir>/" of the listing */
	size_t len;
	int64_t listed_mono_ms;   /* entries seen before this are gone */
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

/* After a listing of under: forget implicit directories directly in it
 * that the listing did not show. */
static void implicit_dir_prune(struct fs *fs, const char *under,
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

static void implicit_dir_note(struct fs *fs, const char *full)
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
		*seen = clk_sys_mono_ms();
	pthread_mutex_unlock(&fs->mu);
}

/* Judges a foreign row: returns true if it is live (not expired by our
 * observation) and fills the time of our first sighting. */
static bool row_live(struct fs *fs, const struct lock_record *r,
		     int64_t *seen_real_ms)
{
	struct observation ob;

	observe_note(fs->obs, r->key, r->rvn, r->lease_ms, &ob);
	*seen_real_ms = ob.first_seen_real_ms;
	return !ob.expired;
}

/* What rel is now. both: ask for the lock and the directory row at once
 * (lookup); otherwise only the lock row (getattr of a file). */
static int resolve(struct fs *fs, const char *rel, bool both,
		   struct resolved *out)
{
	struct store_lookup sl;
	struct lock *lk;
	char *full = full_key(fs, rel);
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
		rc = user_err(rc, "lookup", full);
		free(full);
		return rc;
	}
	if (sl.has_lock && row_live(fs, &sl.lock, &out->seen_real_ms)) {
		out->kind = K_FILE;
		out->state = RENDER_HELD;
		rc = record_copy(&out->rec, &sl.lock);
	} else if (sl.has_dir) {
		out->kind = K_DIR;
		rc = dir_record_copy(&out->dir, &sl.dir);
	} else if (both && implicit_dir_known(fs, full)) {
		out->kind = K_DIR;
		out->implicit = true;
	}
	store_lookup_fini(&sl);
	free(full);
	return rc;
}

static void resolved_attr(const struct fs *fs, uint64_t ino,
			  const struct resolved *r, struct fs_attr *a)
{
	if (r->kind == K_DIR)
		dir_attr(fs, ino, r->implicit ? NULL : &r->dir, a);
	else
		lock_attr(fs, ino, &r->rec, r->state, r->seen_real_ms, a);
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
	ctl_attr(fs, n, &e->attr);
	fill_entry(fs, e, false);
	return 0;
}

/* Checks name and builds the relative key of parent/name. */
static int child_rel(struct fs *fs, uint64_t parent, const char *name,
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
static int child_keys(struct fs *fs, uint64_t parent, const char *name,
		      char **rel, char **full)
{
	int rc = child_rel(fs, parent, name, rel);

	if (rc)
		return rc;
	*full = full_key(fs, *rel);
	if (!*full) {
		free(*rel);
		*rel = NULL;
		return -ENOMEM;
	}
	return 0;
}

int fs_lookup(struct fs *fs, uint64_t parent, const char *name,
	      struct fs_entry *e)
{
	struct resolved r;
	struct fs_node *n;
	char *rel = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = lookup_ctl(fs, parent, name, e);
	if (rc <= 0)
		return rc;
	rc = child_rel(fs, parent, name, &rel);
	if (rc)
		return rc;
	resolved_init(&r);
	rc = resolve(fs, rel, true, &r);
	if (!rc && r.kind == K_NONE)
		rc = -ENOENT;
	if (!rc) {
		pthread_mutex_lock(&fs->mu);
		n = get_node(fs, rel, r.kind == K_DIR, true);
		if (n) {
			resolved_attr(fs, n->ino, &r, &e->attr);
			if (!n->is_dir)
				e->attr.nlink = node_nlink(n);
		}
		pthread_mutex_unlock(&fs->mu);
		if (!n)
			rc = -ENOMEM;
		fill_entry(fs, e, r.ours);
	}
	resolved_fini(&r);
	free(rel);
	return rc;
}

void fs_forget(struct fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = find_node(fs, ino);
	if (n && !n->fixed) {
		n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
		maybe_free_node(fs, n);
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
	n = find_node(fs, ino);
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

int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *a,
	       double *timeout_s)
{
	struct resolved r;
	bool is_dir, fixed;
	char *rel = NULL;
	int rc;

	*timeout_s = fs->cfg.attr_timeout_s;
	if (ino == FS_ROOT_INO) {
		dir_attr(fs, ino, NULL, a);
		return 0;
	}
	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (fixed) {
		pthread_mutex_lock(&fs->mu);
		ctl_attr(fs, find_node(fs, ino), a);
		pthread_mutex_unlock(&fs->mu);
		free(rel);
		return 0;
	}
	resolved_init(&r);
	rc = resolve(fs, rel, is_dir, &r);
	if (!rc) {
		if (r.kind == K_NONE || (r.kind == K_DIR) != is_dir)
			rc = -ENOENT;
		else
			resolved_attr(fs, ino, &r, a);
	}
	if (!rc && !is_dir) {
		struct fs_node *n;

		pthread_mutex_lock(&fs->mu);
		n = find_node(fs, ino);
		if (n)
			a->nlink = node_nlink(n);
		pthread_mutex_unlock(&fs->mu);
	}
	resolved_fini(&r);
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
	rc = child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	holder_from_ctx(ctx, mode, &holder);
	record_init(&cur);
	rc = lock_acquire(fs->eng, full, &holder, &lk, &cur, &has);
	acquired = rc == 0;
	if (rc == -EEXIST && !(flags & O_EXCL) && has) {
		/* Open the existing lock; no acquire. */
		lk = lock_find(fs->eng, full);
		rc = 0;
	} else if (rc) {
		rc = user_err(rc, "acquire", full);
		goto out;
	} else {
		lock_snapshot(fs->eng, lk, &cur, NULL);
	}
	pthread_mutex_lock(&fs->mu);
	n = get_node(fs, rel, false, true);
	if (n)
		lock_attr(fs, n->ino, &cur, RENDER_HELD, now_real_ms(),
			  &e->attr);
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
	fill_entry(fs, e, lk != NULL);
	*fh = (uint64_t)(uintptr_t)h;
	lk = NULL;  /* the handle has it */
out:
	if (lk)
		lock_unref(fs->eng, lk);
	record_fini(&cur);
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

int fs_open(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino, int flags,
	    uint64_t *fh)
{
	struct fs_handle *h;
	struct fs_node *n;
	struct lock *lk = NULL;
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
	if (!fixed) {
		full = full_key(fs, rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
		if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) {
			if (!lk || !is_holder(ctx, lk))
				rc = -EPERM;
			else
				rc = lock_modify_data(fs->eng, lk, NULL, 0, 0,
						      0, FS_MAX_DATA);
			if (rc) {
				lock_unref(fs->eng, lk);
				free(rel);
				return rc;
			}
		}
	}
	free(rel);
	pthread_mutex_lock(&fs->mu);
	n = find_node(fs, ino);
	pthread_mutex_unlock(&fs->mu);
	h = n ? handle_new(fs, n, lk, false) : NULL;
	if (!h) {
		lock_unref(fs->eng, lk);
		return n ? -ENOMEM : -ENOENT;
	}
	h->by_holder = lk && is_holder(ctx, lk);
	*fh = (uint64_t)(uintptr_t)h;
	return 0;
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

	if (h->node == &fs->ctl_status) {
		struct ctl_info ci = {
			.owner = lock_engine_config(fs->eng)->owner,
			.table = fs->cfg.table ? fs->cfg.table : "",
			.region = fs->cfg.region ? fs->cfg.region : "",
			.endpoint = fs->cfg.endpoint ? fs->cfg.endpoint : "",
			.prefix = fs->prefix,
			.hold = fs->cfg.hold_name ? fs->cfg.hold_name : "",
			.lease_ms = lock_engine_config(fs->eng)->lease_ms,
			.heartbeat_ms = lock_engine_config(fs->eng)->heartbeat_ms,
			.safe_period_ms =
				lock_engine_config(fs->eng)->safe_period_ms,
		};

		return ctl_render_status(&ci, fs->eng, out);
	}
	if (h->node == &fs->ctl_metrics)
		return ctl_render_metrics(fs->m, out);

	rc = node_info(fs, h->node->ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	full = full_key(fs, rel);
	free(rel);
	if (!full)
		return -ENOMEM;
	record_init(&row);
	record_init(&mine);
	lk = handle_lock(fs, h);
	if (lk && lock_get_state(fs->eng, lk) == LOCK_LOST) {
		/* Lost is final and ours to tell: no request needed (and
		 * DynamoDB may well be unreachable right now). */
		rc = lock_snapshot(fs->eng, lk, &mine, NULL);
		if (!rc)
			rc = render_lock_text(&mine, RENDER_LOST, out);
		goto out;
	}
	if (lk) {
		/* Our lock: its state is ours to tell; the row is read fresh. */
		if ((h->holding || h->by_holder) &&
		    lock_get_state(fs->eng, lk) == LOCK_HELD) {
			uint64_t fence;

			lock_fence(fs->eng, lk, &fence);  /* lazily */
		}
		lock_current_rvn(fs->eng, lk, before);
		rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
		lock_current_rvn(fs->eng, lk, after);
		lock_snapshot(fs->eng, lk, &mine, &st);
		if (rc && rc != -ENOENT) {
			rc = user_err(rc, "read", full);
			goto out;
		}
		if (st == LOCK_HELD || st == LOCK_RELEASING) {
			if (!rc && (!strcmp(row.rvn, before) ||
				    !strcmp(row.rvn, after))) {
				rc = render_lock_text(&row, RENDER_HELD, out);
				goto out;
			}
			/* The row is not what we last wrote: a renewal tells
			 * for sure whether we still hold it. */
			if (lock_renew_sync(fs->eng, lk) == 0) {
				lock_snapshot(fs->eng, lk, &mine, &st);
				rc = render_lock_text(&mine, RENDER_HELD, out);
				goto out;
			}
			st = LOCK_LOST;
		}
		rc = render_lock_text(&mine, st == LOCK_LOST ? RENDER_LOST :
							      RENDER_RELEASED,
				      out);
		goto out;
	}
	rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
	if (rc == -ENOENT) {
		rc = 0;  /* gone: an empty file */
	} else if (rc) {
		rc = user_err(rc, "read", full);
	} else {
		int64_t seen;
		bool live = row_live(fs, &row, &seen);

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

ssize_t fs_read(struct fs *fs, uint64_t fh, char *buf, size_t size,
		off_t off)
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
		full = full_key(fs, h->node->rel);
		lk = full ? lock_find(fs->eng, full) : NULL;
		free(full);
	}
	if (!lk)
		return -EPERM;
	if (!is_holder(ctx, lk)) {
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
	rc = lock_modify_data(fs->eng, lk, buf, size, off, -1, FS_MAX_DATA);
	lock_unref(fs->eng, lk);
	return rc ? rc : (ssize_t)size;
}

int fs_fsync(struct fs *fs, uint64_t fh)
{
	struct lock *lk = handle_lock(fs, to_handle(fh));
	int rc;

	if (!lk)
		return 0;  /* nothing of ours to make durable */
	rc = lock_renew_sync(fs->eng, lk);
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
		if (h->holding)
			lock_holder_closed(fs->eng, lk);
		lock_unref(fs->eng, lk);
	}
	pthread_mutex_lock(&fs->mu);
	h->node->opens--;
	maybe_free_node(fs, h->node);
	pthread_mutex_unlock(&fs->mu);
	buf_fini(&h->snap);
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

void fs_on_released(void *arg, const char *key)
{
	struct fs *fs = arg;
	struct fs_node *n, *parent;
	const char *rel, *slash;
	char *prel = NULL;

	/* The kernel may still have the name cached as present: drop it, so
	 * that O_EXCL opens here reach us at once. */
	if (!fs->cfg.inval_entry || strncmp(key, fs->prefix, fs->prefix_len))
		return;
	rel = key + fs->prefix_len;
	slash = strrchr(rel, '/');
	pthread_mutex_lock(&fs->mu);
	if (slash) {
		prel = strndup(rel, (size_t)(slash - rel));
		parent = NULL;
		if (prel) {
			char *pk = path_key(prel, true);

			parent = pk ? smap_get(&fs->by_path, pk) : NULL;
			free(pk);
		}
	} else {
		parent = &fs->root;
	}
	n = parent ? find_node(fs, parent->ino) : NULL;
	uint64_t pino = n ? n->ino : 0;
	pthread_mutex_unlock(&fs->mu);
	if (pino)
		fs->cfg.inval_entry(fs->cfg.inval_arg, pino,
				    slash ? slash + 1 : rel);
	free(prel);
}

/* ---- setattr ----------------------------------------------------------- */

/* chmod of a directory made with mkdir: by its owner or root. The root
 * of the mount and directories that only exist through the keys below
 * them have no row to keep a mode in. */
static int chmod_dir(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		     uint32_t mode)
{
	struct resolved r;
	char *full;
	int rc;

	if (!*rel)
		return -EPERM;
	resolved_init(&r);
	rc = resolve(fs, rel, true, &r);
	if (!rc && (r.kind != K_DIR || r.implicit))
		rc = r.kind == K_DIR ? -EPERM : -ENOENT;
	if (!rc && ctx->uid != 0 && (int64_t)ctx->uid != r.dir.uid)
		rc = -EPERM;
	resolved_fini(&r);
	if (rc)
		return rc;
	full = full_key(fs, rel);
	rc = full ? fs->st->ops->set_dir_mode(fs->st, full, mode, 0) : -ENOMEM;
	rc = user_err(rc, "chmod", rel);
	free(full);
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
	rc = node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir && !fixed && (valid & FS_SET_MODE)) {
		rc = chmod_dir(fs, ctx, rel, mode);
		free(rel);
		return rc ? rc : fs_getattr(fs, ino, out, timeout_s);
	}
	if (fixed || is_dir || (valid & FS_SET_MODE)) {
		free(rel);
		return (valid & (FS_SET_SIZE | FS_SET_TIMES | FS_SET_MODE)) ?
			       -EPERM :
			       0;
	}
	full = full_key(fs, rel);
	free(rel);
	lk = full ? lock_find(fs->eng, full) : NULL;
	free(full);
	if (!lk || !is_holder(ctx, lk)) {
		lock_unref(fs->eng, lk);
		return -EPERM;
	}
	if (valid & FS_SET_SIZE)
		rc = size > FS_MAX_DATA ? -EFBIG :
					  lock_modify_data(fs->eng, lk, NULL, 0,
							   0, (int64_t)size,
							   FS_MAX_DATA);
	else if (valid & FS_SET_TIMES)
		rc = lock_renew_sync(fs->eng, lk);  /* touch = heartbeat */
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
	int rc;

	if (parent == FS_CTL_DIR_INO)
		return -EPERM;
	rc = child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	lk = lock_find_any(fs->eng, full);
	if (lk) {
		/* Ours: released by the uid that acquired it, or root. */
		rc = is_holder(ctx, lk) ? lock_release(fs->eng, lk) : -EPERM;
		lock_unref(fs->eng, lk);
		rc = user_err(rc, "release", full);
		goto out;
	}
	record_init(&row);
	rc = fs->st->ops->get_lock(fs->st, full, 0, &row);
	if (rc == 0) {
		int64_t seen;

		if (!row_live(fs, &row, &seen)) {
			rc = -ENOENT;  /* invisible: expired by observation */
		} else if (!fs->cfg.allow_break || ctx->uid != 0) {
			rc = -EPERM;
		} else {
			/* Break another owner's lock, exactly the row we saw. */
			rc = fs->st->ops->delete_lock(fs->st, full, row.rvn, 0,
						      NULL, NULL);
			if (rc == -ECANCELED)
				rc = -EBUSY;  /* it changed meanwhile */
			if (!rc) {
				metrics_inc(fs->m, MC_BREAKS);
				observe_forget(fs->obs, full);
				log_info(TAG, "broke key=%s owner=%s", full,
					 row.owner ? row.owner : "?");
			}
		}
	}
	record_fini(&row);
	rc = user_err(rc, "unlink", full);
out:
	if (!rc) {
		char *pk = path_key(rel, false);
		struct fs_node *n;

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
			unmap_path(fs, n);
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
	rc = child_keys(fs, newparent, newname, &rel, &full);
	if (rc)
		goto out;
	src_full = full_key(fs, src_rel);
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
	rc = lock_acquire_hold(fs->eng, full, &holder,
			       lc->hold == HOLD_FD ? HOLD_UNLINK : lc->hold,
			       &lk, NULL, NULL);
	if (rc) {
		rc = user_err(rc, "link", full);
		goto out;
	}
	/* No open file holds the new name. */
	lock_holder_closed(fs->eng, lk);
	if (!lock_snapshot(fs->eng, src, &rec, NULL) && rec.has_data &&
	    rec.data_len)
		lock_modify_data(fs->eng, lk, rec.data, rec.data_len, 0, -1,
				 FS_MAX_DATA);
	lock_snapshot(fs->eng, lk, &rec, NULL);
	pthread_mutex_lock(&fs->mu);
	n = find_node(fs, ino);
	if (n) {
		char *pk = path_key(rel, false);
		struct fs_node *old = pk ? smap_get(&fs->by_path, pk) : NULL;

		if (old && old != n) {
			smap_del(&fs->by_path, pk);
			old->in_path_map = false;
		}
		free(n->alias);
		n->alias = strdup(rel);
		if (pk && n->alias && !smap_put(&fs->by_path, pk, n)) {
			n->nlookup++;
			lock_attr(fs, n->ino, &rec, RENDER_HELD, 0, &e->attr);
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
	fill_entry(fs, e, true);
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

int fs_mkdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name, uint32_t mode, struct fs_entry *e)
{
	struct dir_record d;
	struct resolved r;
	struct fs_node *n;
	char *rel = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = child_rel(fs, parent, name, &rel);
	if (rc)
		return rc;
	resolved_init(&r);
	rc = resolve(fs, rel, true, &r);
	if (!rc && r.kind != K_NONE && !r.implicit)
		rc = -EEXIST;
	resolved_fini(&r);
	dir_record_init(&d);
	if (!rc) {
		d.key = full_key(fs, rel);
		d.mode = mode & 07777;
		d.uid = ctx->uid;
		d.gid = ctx->gid;
		d.created_real_ms = now_real_ms();
		rc = d.key ? fs->st->ops->put_dir(fs->st, &d, 0) : -ENOMEM;
		rc = user_err(rc, "mkdir", rel);
	}
	if (!rc) {
		pthread_mutex_lock(&fs->mu);
		n = get_node(fs, rel, true, true);
		if (n)
			dir_attr(fs, n->ino, &d, &e->attr);
		pthread_mutex_unlock(&fs->mu);
		rc = n ? 0 : -ENOMEM;
		fill_entry(fs, e, false);
	}
	dir_record_fini(&d);
	free(rel);
	return rc;
}

struct child_probe {
	struct fs *fs;
	size_t skip;       /* length of "<dir>/" */
	bool found;
};

static int probe_child(void *arg, const struct store_row *row)
{
	struct child_probe *p = arg;
	int64_t seen;

	if (row->kind == STORE_ROW_DIR ||
	    row_live(p->fs, row->lock, &seen)) {
		p->found = true;
		return 1;
	}
	return 0;
}

int fs_rmdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name)
{
	struct child_probe probe = { fs, 0, false };
	char *rel = NULL, *full = NULL, *under = NULL;
	int rc;

	if (parent == FS_ROOT_INO && !strcmp(name, FS_CTL_DIR_NAME))
		return -EPERM;
	rc = child_keys(fs, parent, name, &rel, &full);
	if (rc)
		return rc;
	if (asprintf(&under, "%s/", full) < 0)
		under = NULL;
	if (!under) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs->st->ops->list(fs->st, under, 0, probe_child, &probe);
	if (!rc && probe.found)
		rc = -ENOTEMPTY;
	if (!rc) {
		rc = fs->st->ops->delete_dir(fs->st, full, 0);
		if (rc == -ENOENT) {
			/* No row: an implicit directory (empty now) or none. */
			rc = implicit_dir_known(fs, full) ? 0 : -ENOENT;
		}
	}
	if (!rc) {
		char *pk = path_key(rel, true);
		struct fs_node *n;

		pthread_mutex_lock(&fs->mu);
		free(smap_del(&fs->implicit, full));
		n = pk ? smap_get(&fs->by_path, pk) : NULL;
		if (n)
			unmap_path(fs, n);
		pthread_mutex_unlock(&fs->mu);
		free(pk);
	}
	rc = user_err(rc, "rmdir", full);
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
	size_t skip;              /* length of the listed directory's key
				   * prefix ("<prefix><dir>/") */
	struct smap seen;         /* names already listed */
};

static int list_row(void *arg, const struct store_row *row)
{
	struct list_walk *w = arg;
	const char *key = row->kind == STORE_ROW_LOCK ? row->lock->key :
							row->dir->key;
	const char *rest = key + w->skip, *slash;
	struct fs_dirent *d = NULL;
	size_t len;
	bool is_dir;
	int rc;

	if (strlen(key) <= w->skip)
		return 0;
	slash = strchr(rest, '/');
	len = slash ? (size_t)(slash - rest) : strlen(rest);
	is_dir = slash || row->kind == STORE_ROW_DIR;
	bool ours = false;

	if (!slash && row->kind == STORE_ROW_LOCK) {
		struct lock *lk = lock_find(w->fs->eng, key);
		int64_t seen = 0;

		ours = lk != NULL;
		if (lk)
			lock_unref(w->fs->eng, lk);
		else if (!row_live(w->fs, row->lock, &seen))
			return 0;  /* expired by observation: invisible */
	}
	if (slash) {
		/* A key below: its first component is a directory. */
		char *dkey = strndup(key, w->skip + len);

		if (dkey) {
			implicit_dir_note(w->fs, dkey);
			free(dkey);
		}
	}
	{
		char *nm = strndup(rest, len), *sk;

		if (!nm)
			return -ENOMEM;
		sk = path_key(nm, is_dir);
		free(nm);
		if (!sk)
			return -ENOMEM;
		if (smap_get(&w->seen, sk)) {
			free(sk);
			return 0;
		}
		rc = smap_put(&w->seen, sk, w);
		free(sk);
		if (rc)
			return rc;
	}
	rc = add_dirent(w->dl, rest, len, is_dir, &d);
	if (rc)
		return rc;
	d->ours = ours;
	if (!slash && row->kind == STORE_ROW_LOCK)
		lock_attr(w->fs, 0, row->lock, RENDER_HELD, clk_sys_real_ms(),
			  &d->attr);
	else
		dir_attr(w->fs, 0, slash ? NULL : row->dir, &d->attr);
	return 0;
}

int fs_opendir(struct fs *fs, uint64_t ino, uint64_t *dh)
{
	struct fs_dirlist *dl = calloc(1, sizeof(*dl));
	struct list_walk w;
	struct fs_node *n;
	char *rel = NULL, *under = NULL;
	int rc;

	if (!dl)
		return -ENOMEM;
	pthread_mutex_lock(&fs->mu);
	n = find_node(fs, ino);
	if (n && n->is_dir) {
		n->opens++;
		rel = strdup(n->rel);
	}
	pthread_mutex_unlock(&fs->mu);
	if (!n || !n->is_dir) {
		free(dl);
		return n ? -ENOTDIR : -ENOENT;
	}
	dl->dir = n;
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
		ctl_attr(fs, &fs->ctl_status, &dl->ents[2].attr);
		ctl_attr(fs, &fs->ctl_metrics, &dl->ents[3].attr);
		goto done;
	}
	if (n == &fs->root) {
		rc = add_dirent(dl, FS_CTL_DIR_NAME, strlen(FS_CTL_DIR_NAME),
				true, NULL);
		if (rc)
			goto fail;
		ctl_attr(fs, &fs->ctl_dir, &dl->ents[2].attr);
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
	int64_t listed = clk_sys_mono_ms();

	rc = fs->st->ops->list(fs->st, under, 0, list_row, &w);
	smap_fini(&w.seen);
	if (rc) {
		rc = user_err(rc, "list", under);
		goto fail;
	}
	implicit_dir_prune(fs, under, listed);
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
	fill_entry(fs, e, d->ours);
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
		n = get_node(fs, rel, d->is_dir, plus);
		free(rel);
	}
	if (n)
		e->attr.ino = n->ino;
	pthread_mutex_unlock(&fs->mu);
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
		maybe_free_node(fs, dl->dir);
	}
	pthread_mutex_unlock(&fs->mu);
	free(dl);
}

/* ---- the prefix --------------------------------------------------------- */

int fs_ensure_prefix_dirs(struct fs *fs)
{
	struct dir_record d;
	size_t i;
	int rc = 0;

	dir_record_init(&d);
	d.mode = fs->cfg.root_mode & 07777;
	d.uid = fs->cfg.root_uid;
	d.gid = fs->cfg.root_gid;
	d.created_real_ms = now_real_ms();
	for (i = 1; i < fs->prefix_len && !rc; i++) {
		if (fs->prefix[i] != '/' || fs->prefix[i - 1] == '/')
			continue;
		d.key = strndup(fs->prefix, i);
		rc = d.key ? fs->st->ops->put_dir(fs->st, &d, 0) : -ENOMEM;
		if (rc == -EEXIST)
			rc = 0;
		free(d.key);
		d.key = NULL;
	}
	return rc;
}

/* ---- file locks ------------------------------------------------------- */

void fs_set_flk(struct fs *fs, struct flk *flk)
{
	fs->flk = flk;
}

static char *handle_key(struct fs *fs, struct fs_handle *h)
{
	return h->node->fixed ? NULL : full_key(fs, h->node->rel);
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
		rc = user_err(rc, "unlock", key);
		free(key);
		return rc;
	}
	r.key = key;
	r.owner = owner;
	r.kind = (enum flk_kind)kind;
	r.wait = wait;
	r.req = req;
	r.handle = h;
	pthread_mutex_lock(&fs->mu);
	r.handle_lock = h->holding ? h->lk : NULL;  /* compared, not used */
	pthread_mutex_unlock(&fs->mu);
	holder_from_ctx(ctx, 0644, &r.holder);
	rc = flk_lock(fs->flk, &r);
	if (rc != -EINPROGRESS && rc != -EWOULDBLOCK && rc != -EAGAIN)
		rc = user_err(rc, "file lock", key);
	free(key);
	return rc;
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
	if (old)
		lock_unref(fs->eng, old);
}

int fs_filelock_get(struct fs *fs, uint64_t fh, uint64_t owner, bool *held,
		    int64_t *pid)
{
	struct fs_handle *h = to_handle(fh);
	char *key;
	int rc;

	if (!fs->flk)
		return -ENOLCK;
	key = handle_key(fs, h);
	if (!key)
		return h->node->fixed ? -EINVAL : -ENOMEM;
	rc = user_err(flk_getlk(fs->flk, key, owner, held, pid), "getlk", key);
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

void fs_statfs(struct fs *fs, struct fs_statfs *out)
{
	memset(out, 0, sizeof(*out));
	out->bsize = 4096;
	out->namemax = NAMES_NAME_MAX;
	out->files = lock_count_held(fs->eng);
	out->ffree = 1000000;
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
	rc = resolve(fs, rel, false, r);
	if (!rc && r->kind != K_FILE)
		rc = -ENOENT;
	if (!rc && full)
		*full = full_key(fs, rel);
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
	resolved_init(&r);
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
	resolved_fini(&r);
	free(full);
	return rc;
}

ssize_t fs_listxattr(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct buf v = BUF_INIT;
	struct resolved r;
	ssize_t rc;

	resolved_init(&r);
	rc = file_row(fs, ino, &r, NULL);
	if (rc == -ENODATA)
		rc = 0;  /* directories: no attributes */
	else if (!rc)
		rc = render_xattr_names(&r.rec, &v);
	if (!rc)
		rc = copy_out(&v, buf, size);
	buf_fini(&v);
	resolved_fini(&r);
	return rc;
}
