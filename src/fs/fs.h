/* fs: the filesystem, without FUSE: inodes, names and keys, open handles,
 * attributes, listings, the control directory. fsops.c translates each FUSE
 * request into one fs_* call and replies with its result. Every function
 * returns 0 (or a count) or -errno.
 *
 * Threads: any FUSE worker; fs->mu guards the inode and handle tables and is
 * never held across a store request or an engine call that makes one. */
#ifndef LOCKFS_FS_H
#define LOCKFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "lock.h"
#include "metrics.h"
#include "observe.h"
#include "store.h"

#define FS_ROOT_INO	   1
#define FS_CTL_DIR_INO	   2
#define FS_CTL_STATUS_INO  3
#define FS_CTL_METRICS_INO 4
#define FS_CTL_DIR_NAME	   ".lockfs"
#define FS_MAX_DATA	   65536

struct host;
struct srvclk;

struct fs_config {
	const char *prefix; /* key prefix of the mount root ("" none) */
	double attr_timeout_s;
	double entry_timeout_s;
	bool allow_break;   /* root may unlink others' locks */
	bool release_async; /* -o release=async: unlink of a held lock
			     * answers before its delete (fs_unlink_start) */
	uint32_t root_mode; /* permission bits of the root and of
			     * implicit directories; default 01777 */
	uint32_t root_uid;
	uint32_t root_gid;
	/* Per-uid limits (fs_quota.h), 0: none; root is never limited. Over
	 * one, the request fails with EDQUOT. */
	uint32_t max_locks_per_user;   /* locks held */
	uint32_t max_waiters_per_user; /* blocking flock/fcntl waiting */
	uint32_t max_dirs_per_user;    /* directories made, not removed */
	uint32_t max_opens_per_user;   /* open files and listings */
	/* For the status file. */
	const char *table;
	const char *region;
	const char *endpoint;
	const char *hold_name;
	/* Poll handles belong to the FUSE layer: it tells fs how to wake and
	 * free them. Both may be NULL (tests). */
	void (*poll_notify)(void *ph);
	void (*poll_destroy)(void *ph);
	/* The machine: clocks, who a caller is (host.h). NULL: the real one
	 * (host_system()). */
	const struct host *host;
	/* DynamoDB's clock as estimated here (srvclk.h), the clock rows'
	 * times are written in; stat shows them in the host's clock
	 * (fs_int_host_time). NULL: the two are taken to agree. */
	struct srvclk *server_clock;
};

/* Who is asking: from the FUSE request context. */
struct fs_ctx {
	uint32_t uid;
	uint32_t gid;
	int32_t pid;
};

struct fs_attr {
	uint64_t ino;
	uint32_t mode; /* type and permission bits */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	int64_t atime_real_ms;
	int64_t mtime_real_ms;
	int64_t ctime_real_ms;
};

struct fs_entry {
	struct fs_attr attr; /* attr.ino == 0: negative entry */
	double attr_timeout_s;
	double entry_timeout_s;
};

struct fs;

/* Every store request goes through the engine (lock_rows.h). */
struct fs *fs_new(const struct fs_config *cfg, struct lock_engine *engine,
		  struct metrics *metrics);
void fs_free(struct fs *fs);
/* The threads that write coalesced data and read directories again after
 * a write into them (after fuse_daemonize), and their end (before the
 * locks are released: pending data is written first). */
int fs_start(struct fs *fs);
void fs_stop(struct fs *fs);
/* Without the threads (tests): reads every directory written into again
 * now, whatever its time (fs_dircheck.c); returns how many it read or
 * let go. */
int fs_dircheck_run(struct fs *fs);
/* The engine's upcalls, to be wired into struct lock_callbacks. */
void fs_on_lost(void *fs, struct lock *lk);
/* Engine upcall: a lock was released automatically (its holder went). */
void fs_on_released(void *fs, const char *key);
/* Engine upcall: a lock was taken (its directory is read again later). */
void fs_on_acquired(void *fs, const char *key);

/* fs_lookup for a caller: a lock its process group lost (and has not
 * unlinked) shows as a lost file to it alone, from memory: also while
 * DynamoDB cannot be reached (the outage that lost it, as often as not). */
int fs_lookup_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
		  const char *name, struct fs_entry *e);
int fs_lookup(struct fs *fs, uint64_t parent, const char *name,
	      struct fs_entry *e);
void fs_forget(struct fs *fs, uint64_t ino, uint64_t nlookup);
int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *a,
	       double *timeout_s);
/* fs_getattr for a caller (ctx may be NULL): a lock its group lost shows
 * as fs_lookup_ctx shows it. by_path: asked for a name the kernel kept (a
 * stat, access or an open's permission check, not an open file's fstat):
 * a file that is gone is -ESTALE at once, so that the kernel looks the
 * name up again (an fstat of it still sees it for FS_VANISHED_MS). */
int fs_getattr_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		   bool by_path, struct fs_attr *a, double *timeout_s);

/* Flags of struct fs_setattr_req. */
#define FS_SET_MODE  1
#define FS_SET_UID   2
#define FS_SET_GID   4
#define FS_SET_SIZE  8
#define FS_SET_TIMES 16

/* Lock files: the holder may truncate (its data) and touch (a heartbeat).
 * Directories made with mkdir: their owner or root may chmod them.
 * Everything else: EPERM. */
int fs_setattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
	       unsigned valid, uint64_t size, uint32_t mode,
	       struct fs_attr *out, double *timeout_s);

/* Acquire: a free key is locked and the new handle holds it. A held key:
 * -EEXIST with O_EXCL, else an ordinary (non-holding) handle. */
int fs_create(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	      const char *name, uint32_t mode, int flags, struct fs_entry *e,
	      uint64_t *fh);
/* A create whose caller was answered meanwhile (EINTR, by its interrupt):
 * what it took is given back: the lock it acquired (released), its open
 * file (fh) and the entry (ino) the caller never got. */
void fs_create_abandon(struct fs *fs, uint64_t ino, uint64_t fh);
int fs_open(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino, int flags,
	    uint64_t *fh);
ssize_t fs_read(struct fs *fs, uint64_t fh, char *buf, size_t size, off_t off);
/* The holder's data; writes are coalesced (fs_wb.h): at most one item
 * write per lock per FS_WB_INTERVAL_MS, the rest merged and written when
 * it ends, or at fsync, close (fs_flush) or a read of the lock. */
ssize_t fs_write(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		 const char *buf, size_t size, off_t off);
int fs_fsync(struct fs *fs, uint64_t fh);
/* A close of the open file: its lock's pending data is written; 0 or the
 * error of that write (or of one in the background before). */
int fs_flush(struct fs *fs, uint64_t fh);
/* The last reference to the open file is gone. */
void fs_release(struct fs *fs, uint64_t fh);
/* Returns the poll revents now; keeps ph (if not NULL) to wake it later. */
unsigned fs_poll(struct fs *fs, uint64_t fh, void *ph);
/* LOCKFS_IOC_TRUST_MS (lockfs_ioctl.h): how long the open file's lock
 * stays trusted from now, in ms (0: not any more); -ENODATA when the file
 * holds no lock of ours. From memory. */
int fs_trust_ms(struct fs *fs, uint64_t fh, int64_t *ms);

int fs_unlink(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	      const char *name);
/* fs_unlink for a caller that answers before the release's delete is
 * made, with -o release=async: when the result is 0 and *later is set,
 * the name is gone for this mount (its lookups, listings and creates wait
 * for the delete), and fs_unlink_finish(fs, *later) makes the delete once
 * the caller has answered. Otherwise *later stays NULL. */
int fs_unlink_start(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
		    const char *name, struct lock **later);
void fs_unlink_finish(struct fs *fs, struct lock *later);
/* link(2) of a lock this mount holds (by the caller, as its holder): the
 * new name is acquired as a lock of its own for the same holder and shares
 * the inode, whose link count is 2 until one name is unlinked. Other links
 * give EPERM; a held new name EEXIST. */
int fs_link(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
	    uint64_t newparent, const char *newname, struct fs_entry *e);
int fs_mkdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name, uint32_t mode, struct fs_entry *e);
int fs_rmdir(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
	     const char *name);

/* Directory listings: opendir takes one snapshot (one listing request);
 * entries are then served by index, "." and ".." first. */
int fs_opendir(struct fs *fs, uint64_t ino, uint64_t *dh);
/* fs_opendir for a caller: a readdirplus of it tells that process's next
 * lookups of the listed locks (see FS_LISTED_MS). */
int fs_opendir_ctx(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		   uint64_t *dh);
/* Entry number idx of the listing: 0 with name and entry filled, 1 past
 * the end. With plus, the entry's inode gets a lookup reference (the
 * caller gives it back with fs_forget if it cannot use the entry); "." and
 * ".." never do. */
int fs_readdir_entry(struct fs *fs, uint64_t dh, size_t idx, bool plus,
		     const char **name, struct fs_entry *e);
void fs_releasedir(struct fs *fs, uint64_t dh);

/* File locks (flock and fcntl) on an open file; see flk.h. kind is
 * FLK_FLOCK or FLK_POSIX, type F_RDLCK, F_WRLCK or F_UNLCK. Returns what
 * flk_lock returns (-EINPROGRESS: parked, req is answered later). */
struct flk;
void fs_set_flk(struct fs *fs, struct flk *flk);
int fs_filelock(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		uint64_t owner, int kind, int type, bool wait, void *req);
/* F_GETLK by ctx: shared asks about a read lock (see flk_getlk). */
int fs_filelock_get(struct fs *fs, const struct fs_ctx *ctx, uint64_t fh,
		    uint64_t owner, bool shared, bool *held, bool *held_shared,
		    int64_t *pid);
/* A request parked by fs_filelock (-EINPROGRESS) was answered: gives back
 * the waiter it counted for uid. */
void fs_filelock_wait_done(struct fs *fs, uint32_t uid);
/* flk_config.on_granted: binds a granted file lock to its open file. */
void fs_on_granted(void *fs, void *handle, struct lock *lk);
/* flk_config.around_downgrade: data writes to lk wait while a downgrade
 * of it is in flight (fs_wb_seal), its pending data written first. */
int fs_around_downgrade(void *fs, struct lock *lk, bool begin);
/* The open file's lock owner closed it: drop its file locks of kind. */
void fs_filelock_drop(struct fs *fs, uint64_t fh, uint64_t owner, int kind);
/* The open file's last close (release, before fs_release): the fcntl lock
 * granted through it that no close dropped (an open file description's
 * lock, F_OFD_SETLK) goes. */
void fs_filelock_release_handle(struct fs *fs, uint64_t fh);

/* A mount with prefix "a/b/" records the directories "a" and "a/b", so
 * that mounts of the table's root see its locks' path like any other
 * directory. 0; -ENOTDIR when one of them is a live lock (*lock_key, and
 * its owner in *owner or NULL, both malloc'd): the mount must not start,
 * or its locks would be keys below a lock; another -errno otherwise (the
 * mount works without them). */
int fs_ensure_prefix_dirs(struct fs *fs, char **lock_key, char **owner);

struct fs_statfs {
	uint64_t blocks, bfree, files, ffree;
	uint32_t bsize, namemax;
};
void fs_statfs(struct fs *fs, struct fs_statfs *out);

/* user.lockfs.<field>. Returns the value's length; with size 0 only the
 * length; -ERANGE when buf is too small; -ENODATA for other names. */
ssize_t fs_getxattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		    const char *name, char *buf, size_t size);
ssize_t fs_listxattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		     char *buf, size_t size);

#endif
