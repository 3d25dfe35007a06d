/* fs_quota: per-uid limits of one mount, so that one local user cannot
 * starve the others: locks held, flock/fcntl waiters, directories made
 * through this mount, and open files (lock files and directory listings).
 * Root (uid 0) is never limited. A limit of 0 means none. Over a limit the
 * request fails with EDQUOT ("Disk quota exceeded"), and the log says
 * which limit (once a minute per uid and limit).
 *
 * Held locks are the engine's count (the caller's count function, one
 * look-up there) plus the acquires in flight, counted here.
 *
 * Threads: any; q->mu guards everything and is never held across the
 * count function or a log line's I/O. */
#ifndef LOCKFS_FS_QUOTA_H
#define LOCKFS_FS_QUOTA_H

#include <stddef.h>
#include <stdint.h>

enum fs_quota_res {
	FSQ_LOCKS,   /* locks held (acquires in flight count too) */
	FSQ_WAITERS, /* blocking flock/fcntl requests waiting */
	FSQ_DIRS,    /* directories made through this mount, not removed */
	FSQ_OPENS,   /* open lock files and directory listings */
	FSQ_N,
};

struct fs_quota_limits {
	uint32_t max[FSQ_N]; /* 0: no limit */
};

struct fs_quota;

/* clk: our monotonic clock (the host's), which spaces the log lines. */
struct clk;
struct fs_quota *fs_quota_new(const struct fs_quota_limits *lim,
			      const struct clk *clk);
void fs_quota_free(struct fs_quota *q);
/* The option name of a limit ("max_locks_per_user", ...). */
const char *fs_quota_option(enum fs_quota_res r);

/* Takes one of r (not FSQ_LOCKS) for uid: 0, or -EDQUOT at the limit. */
int fs_quota_take(struct fs_quota *q, uint32_t uid, enum fs_quota_res r);
/* Gives back one taken with fs_quota_take. */
void fs_quota_give(struct fs_quota *q, uint32_t uid, enum fs_quota_res r);

/* Before an acquire by uid: 0 (a slot is reserved), or -EDQUOT when the
 * locks uid holds (count(arg, uid)) and its acquires in flight reach its
 * limit. Every 0 is followed by one fs_quota_lock_end, acquired or not. */
int fs_quota_lock_begin(struct fs_quota *q, uint32_t uid,
			size_t (*count)(void *arg, uint32_t uid), void *arg);
void fs_quota_lock_end(struct fs_quota *q, uint32_t uid);

/* Directories: after fs_quota_take(FSQ_DIRS) and a successful mkdir, the
 * key is remembered, so that whoever removes the directory gives it back
 * to the uid that made it. 0 or -ENOMEM (then give it back yourself). */
int fs_quota_dir_made(struct fs_quota *q, uint32_t uid, const char *key);
void fs_quota_dir_removed(struct fs_quota *q, const char *key);

#endif
