/* fs_int: the filesystem's private structures and the helpers its files
 * share. Nothing outside src/fs includes it. Locking: fs->mu (see fs.h)
 * guards the inode maps, the handle list, the node and handle fields
 * marked mu below, and what this mount has seen (fs_seen.c); it is never
 * held across a store request or an engine call that makes one.
 *
 * The files, each using only those listed before it:
 *   fs_node     inodes: the maps by number and by path, keys of names
 *   fs_attr     the attributes rows and control files show
 *   fs_seen     what this mount has seen: implicit directories, the
 *               entries a listing showed, directories' confirmed views
 *   fs_resolve  what a name is now (engine, then DynamoDB)
 *   fs_dircheck directories written into, read again after the write
 *   fs_caller   who asks: the caller as a lock holder (struct host)
 *   fs_text     the text a read of a lock or control file returns
 *   fs_dir      directories: mkdir, rmdir, chmod, listings
 *   fs_open     open files: create, open, read, write, close, poll
 *   fs_link     unlink and link
 *   fs_flock    file locks (flock, fcntl) on open files, through flk
 *   fs_xattr    extended attributes
 *   fs          setup, lookup, getattr, setattr, statfs */
#ifndef LOCKFS_FS_INT_H
#define LOCKFS_FS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "fs.h"
#include "fs_dirstat.h"
#include "fs_perm.h"
#include "fs_quota.h"
#include "fs_wb.h"
#include "host.h"
#include "lock_rows.h"
#include "map.h"
#include "render.h"

#define FS_FIRST_INO 16

struct fs_node {
	uint64_t ino;
	uint64_t nlookup; /* mu */
	int opens;	  /* mu: handles and listings using the node */
	char *rel;	  /* key relative to the mount prefix; "" root */
	char *alias;	  /* mu: a second name made by link(), or NULL */
	bool is_dir;
	bool in_path_map; /* mu: by_path points at this node */
	bool fixed;	  /* root and control nodes: never freed */
	/* mu: a directory's attributes as DynamoDB last confirmed them, and
	 * when (0: not known). The kernel asks for a directory's attributes
	 * after every create or unlink in it; within attr_timeout of the
	 * last confirmation that is answered from here, without a request
	 * (a view: it never decides a lock). */
	int64_t dir_ok_mono_ms;
	struct fs_attr dir_attr;
	/* mu: a file's attributes as this mount last answered a lookup or
	 * create with them, and when (0: never). The kernel checks an open's
	 * permission right after the lookup, by a getattr when attr_timeout
	 * is 0: a key released in between (on any mount) is still answered
	 * from here, as the file the lookup found, by a getattr that began
	 * within FS_VANISHED_MS of that answer (however long its own read
	 * takes), so that the open does not fail with ENOENT (fs_getattr). */
	int64_t file_ok_mono_ms;
	struct fs_attr file_attr;
	/* mu: a directory's row as a read of it last found it (what
	 * fs_dircheck writes again if another mount removed it while this
	 * mount took a lock in it). */
	bool dir_row_seen;
	struct {
		uint32_t mode;
		int64_t uid, gid, created_real_ms;
	} dir_row;
};

/* How soon after the lookup (or create) that found a file a getattr must
 * begin to be answered as that file once its key is gone, in ms. */
#define FS_VANISHED_MS 500

struct fs_handle {
	struct fs_handle *prev, *next; /* mu */
	struct fs_node *node;
	struct lock *lk;      /* our lock when opened on one (referenced) */
	bool holding;	      /* the acquiring open file */
	bool by_holder;	      /* opened by the lock's holder (uid or root) */
	bool writable;	      /* opened for writing: told of failed writes */
	struct buf snap;      /* mu: text served to reads past offset 0 */
	void *ph;	      /* mu: poll handle to wake on loss */
	uint32_t uid;	      /* the opener, charged one FSQ_OPENS */
	struct fs_cred *cred; /* .lockfs/status: the opener's view */
};

struct fs {
	struct fs_config cfg;
	const struct host *host; /* cfg.host, or host_system() */
	char *prefix;
	size_t prefix_len;
	struct lock_engine *eng;
	struct metrics *m;
	struct flk *flk;	      /* set once before the mount */
	struct fs_quota *quota;	      /* per-uid limits */
	struct fs_wb *wb;	      /* coalesced data writes */
	struct fs_dirstat *dirstat;   /* directories' nlink and times */
	struct fs_dircheck *dircheck; /* directories written into */
	int64_t mount_real_ms;
	bool odd_key_logged; /* a listing left out a row (atomic) */

	pthread_mutex_t mu;
	struct imap by_ino;	   /* mu */
	struct smap by_path;	   /* mu: "f:<rel>" / "d:<rel>" -> node */
	uint64_t next_ino;	   /* mu */
	struct fs_handle *handles; /* mu */
	struct smap implicit;	   /* mu: full dir key -> int64 seen time */
	struct smap listed;	   /* mu: rel -> struct fs_listed */
	struct smap absent;	   /* mu: full key -> int64 mono ms a lookup
				    * found nothing there */
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
	bool ours;		/* a lock this mount holds */
	struct lock_record rec; /* K_FILE */
	enum render_state state;
	int64_t seen_real_ms;  /* first sighting of a foreign row */
	struct dir_record dir; /* K_DIR with a row */
	bool implicit;	       /* K_DIR without a row */
	bool from_view;	 /* K_DIR: dir is this mount's view of a row that is
			  * gone (a lock of ours below it), not a read */
	int64_t own_len; /* ours: its data's length with pending writes, or
			  * -1 (fs_wb_len) */
};

/* Another owner's lock as a listing (readdirplus) showed it to one
 * process: that process's lookups of it within FS_LISTED_MS (ls -l's
 * stat of each entry) are answered from here, so that its kernel entries
 * can expire at once (a lock released on another mount is never refused by
 * a cache here) while ls -l still costs no request per entry. */
#define FS_LISTED_MS  1000
#define FS_LISTED_MAX 16384

/* A name a lookup just found free (no lock, no directory) is answered
 * free again from memory for FS_ABSENT_MS: the stat that shells and
 * lock-file tools make before their O_CREAT|O_EXCL (bash's noclobber, a
 * test -e) then costs the acquire no second read, and mkdir's check of
 * the name none after the kernel's lookup. Only those two use it, never
 * a decision: the create's (or mkdir's) conditional write still
 * finds a lock taken meanwhile (EEXIST), and this mount forgets the name
 * once it creates, links or makes a directory there. Elsewhere a lock
 * taken within that time shows up that much later. */
#define FS_ABSENT_MS  100
#define FS_ABSENT_MAX 4096
struct fs_listed {
	int32_t pid;
	int64_t mono_ms;
	struct fs_attr attr;
};
/* ---- fs_node.c: inodes (functions taking a node need mu) ---- */
void fs_int_fixed_node(struct fs *fs, struct fs_node *n, uint64_t ino,
		       const char *rel, bool is_dir);
char *fs_int_path_key(const char *rel, bool is_dir);
void fs_int_unmap_path(struct fs *fs, struct fs_node *n);
/* Removes by_path's entry for rel if it points at n. */
void fs_int_unmap_one(struct fs *fs, struct fs_node *n, const char *rel);
void fs_int_maybe_free_node(struct fs *fs, struct fs_node *n);
uint32_t fs_int_node_nlink(const struct fs_node *n);
struct fs_node *fs_int_get_node(struct fs *fs, const char *rel, bool is_dir,
				bool count);
struct fs_node *fs_int_find_node(struct fs *fs, uint64_t ino);
/* Takes mu itself. */
int fs_int_node_info(struct fs *fs, uint64_t ino, char **rel, bool *is_dir,
		     bool *fixed);
char *fs_int_full_key(const struct fs *fs, const char *rel);
/* An entry rel was added or removed through this mount: its directory's
 * times advance (subdirs: +1 a directory made, -1 one removed, else 0). */
void fs_int_entry_changed(struct fs *fs, const char *rel, int subdirs);

/* ---- fs_attr.c ---- */
/* The uid and gid a row shows: the recorded id, unless it is nobody's
 * (65534, the kernel's overflow id) or out of range: then the mount
 * root's. */
#define FS_NOBODY_ID 65534
uint32_t fs_int_shown_id(int64_t id, uint32_t root_id);
/* A time a row records (DynamoDB's clock, as its writer estimated it) in
 * the host's clock, as every other file's times are: less DynamoDB's lead
 * over this host, and never after the host's now. Estimates are good to
 * about a second, and a time in the future makes ls -l print a year where
 * the time belongs, and find -mmin miss the file. 0 (unknown) stays 0. */
int64_t fs_int_host_time(const struct fs *fs, int64_t row_real_ms);
void fs_int_dir_attr(const struct fs *fs, uint64_t ino,
		     const struct dir_record *d, struct fs_attr *a);
void fs_int_lock_attr(const struct fs *fs, uint64_t ino,
		      const struct lock_record *r, enum render_state st,
		      int64_t seen_real_ms, struct fs_attr *a);
void fs_int_ctl_attr(struct fs *fs, struct fs_node *n, struct fs_attr *a);
/* Whose entry a reply gives the kernel (fs_int_fill_entry). */
enum fs_entry_of {
	FS_ENTRY_DIR, /* a directory, or a file of .lockfs */
	FS_ENTRY_OWN_LOCK,
	FS_ENTRY_OTHERS_LOCK,
};
/* A lock file's (ours or another owner's), or a directory's. */
static inline enum fs_entry_of fs_int_entry_of(bool is_lock, bool ours)
{
	return !is_lock ? FS_ENTRY_DIR
	       : ours	? FS_ENTRY_OWN_LOCK
			: FS_ENTRY_OTHERS_LOCK;
}
/* How long the kernel may keep such an entry's attributes (those of our
 * own locks: not at all, fs_int_fill_entry). */
double fs_int_attr_timeout(const struct fs *fs, enum fs_entry_of of);
void fs_int_fill_entry(const struct fs *fs, struct fs_entry *e,
		       enum fs_entry_of of);

/* ---- fs_seen.c (each takes mu itself but fs_int_listed_for) ---- */
/* full was found free by a read begun at asked_mono_ms. */
void fs_int_absent_note(struct fs *fs, const char *full, int64_t asked_mono_ms);
bool fs_int_absent_known(struct fs *fs, const char *full);
void fs_int_absent_forget(struct fs *fs, const char *full);
void fs_int_seen_init(struct fs *fs);
void fs_int_seen_fini(struct fs *fs);
bool fs_int_implicit_dir_known(struct fs *fs, const char *full);
void fs_int_implicit_dir_note(struct fs *fs, const char *full);
/* After a listing of under: forget implicit directories directly in it
 * that the listing did not show. */
void fs_int_implicit_dir_prune(struct fs *fs, const char *under,
			       int64_t listed_mono_ms);
void fs_int_listed_note(struct fs *fs, const char *rel, int32_t pid,
			const struct fs_attr *attr);
/* mu held. */
bool fs_int_listed_for(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		       struct fs_attr *attr);
bool fs_int_dir_view_get(struct fs *fs, uint64_t ino, const char *rel,
			 struct fs_attr *a);
void fs_int_dir_view_set(struct fs *fs, uint64_t ino, const struct fs_attr *a);
/* The confirmed view of directory rel is stale now (chmod, rmdir here). */
void fs_int_dir_view_forget(struct fs *fs, const char *rel);
/* mu held: n's attributes a as a lookup or create answers them. */
void fs_int_file_seen_locked(struct fs *fs, struct fs_node *n,
			     const struct fs_attr *a);
/* File ino's attributes as last answered, if that answer came less than
 * FS_VANISHED_MS before asked_mono_ms (when the caller's request began, so
 * that its own round trip does not count). */
bool fs_int_file_vanished(struct fs *fs, uint64_t ino, int64_t asked_mono_ms,
			  struct fs_attr *a);

/* ---- fs_resolve.c ---- */
void fs_int_resolved_init(struct resolved *r);
void fs_int_resolved_fini(struct resolved *r);
int fs_int_user_err(int rc, const char *what, const char *key);
bool fs_int_row_live(struct fs *fs, const struct lock_record *r,
		     int64_t *seen_real_ms);
int fs_int_resolve(struct fs *fs, const char *rel, bool both,
		   struct resolved *out);
/* The kernel's lookup of a name: fs_int_resolve of both kinds, answered
 * free without a request when a lookup found it free moments ago
 * (FS_ABSENT_MS). */
int fs_int_resolve_name(struct fs *fs, const char *rel, struct resolved *out);
/* The size this mount shows of its own lock lk: its data as the holder
 * wrote it, pending writes included (fs_wb_len), else as the engine last
 * wrote it. */
int64_t fs_int_own_len(struct fs *fs, struct lock *lk);
void fs_int_resolved_attr(const struct fs *fs, uint64_t ino, const char *rel,
			  const struct resolved *r, struct fs_attr *a);
int fs_int_child_rel(struct fs *fs, uint64_t parent, const char *name,
		     char **rel);
int fs_int_child_keys(struct fs *fs, uint64_t parent, const char *name,
		      char **rel, char **full);

/* ---- fs_dircheck.c (each takes its own mutex; never call with mu) ---- */
/* How long after a write into a directory it is read again (unless a read
 * of it begun after the write found it), in ms. */
#define FS_DIRCHECK_MS 1000
struct fs_dircheck *fs_dircheck_new(void);
void fs_dircheck_free(struct fs_dircheck *dc);
int fs_dircheck_start(struct fs *fs);
void fs_dircheck_stop(struct fs *fs);
/* A row of full key was written by this mount (made_dir: a directory's
 * marker): its directory is read again later. */
void fs_int_dir_wrote(struct fs *fs, const char *full, bool made_dir);
/* Writes the marker of directory dir (a full key) again where no row is
 * (or over a lock seen lapsed), with the attributes a read of it last
 * found here, else the mount root's. 0, -EEXIST, or -errno. */
int fs_int_dir_restore(struct fs *fs, const char *dir);
/* mu held: n (a directory) has row, as a read found it or mkdir wrote it. */
void fs_int_dir_row_seen_locked(struct fs_node *n,
				const struct dir_record *row);
/* A read of directory rel begun at asked_mono_ms found its row. */
void fs_int_dir_confirmed(struct fs *fs, const char *rel, int64_t asked_mono_ms,
			  const struct dir_record *row);

/* ---- fs_caller.c ---- */
struct lock *fs_int_lost_of_caller(struct fs *fs, const struct fs_ctx *ctx,
				   const char *rel);
bool fs_int_lost_view(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		      struct resolved *r);
void fs_int_holder_from_ctx(struct fs *fs, const struct fs_ctx *ctx,
			    uint32_t mode, struct lock_holder *h);
bool fs_int_is_holder(const struct fs_ctx *ctx, struct lock *lk);
size_t fs_int_count_held(void *eng, uint32_t uid);

/* ---- fs_text.c ---- */
/* Builds the text a read at offset 0 returns. */
int fs_int_handle_text(struct fs *fs, struct fs_handle *h, struct buf *out);

/* ---- fs_dir.c ---- */
int fs_int_chmod_dir(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		     uint32_t mode);

/* A truncate of lk (may be NULL) to size by ctx, as truncate(2), ftruncate
 * and O_TRUNC (size 0) make it: the holder's. A shared lock has no data:
 * cut to nothing it is left as it is (a shell's `exec 9>lock` before
 * `flock -s 9`), any other size is -EPERM, at once (a truncate let
 * through failed later, and then every close of the key). */
int fs_int_truncate(struct fs *fs, const struct fs_ctx *ctx, struct lock *lk,
		    uint64_t size);

/* ---- open files ---- */
static inline struct fs_handle *fs_int_handle(uint64_t fh)
{
	return (struct fs_handle *)(uintptr_t)fh;
}

/* Wakes every poll(2) of an open file bound to lk (fs_open.c): its
 * loss, or its release by unlink (fs_poll then answers POLLERR|POLLPRI).
 * Without fs->mu. */
void fs_int_wake_pollers(struct fs *fs, struct lock *lk);

/* The lock an open file shows, referenced (a granted flock may change it
 * at any time), or NULL. */
static inline struct lock *fs_int_handle_lock(struct fs *fs,
					      struct fs_handle *h)
{
	struct lock *lk;

	pthread_mutex_lock(&fs->mu);
	lk = h->lk;
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&fs->mu);
	return lk;
}

#endif
