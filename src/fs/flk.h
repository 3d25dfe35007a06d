/* flk: flock(2) and fcntl(2) locks on lockfs files, made distributed.
 *
 * A file lock on a key is the lock of that key: granting it acquires the
 * key in DynamoDB (or takes over the lock the same open file acquired with
 * O_CREAT), and from then on the file lock owns it: LOCK_UN, F_UNLCK, or
 * the last close of the locking open file (flock) or any close by the
 * locking process (fcntl) releases it. So `flock MNT/x cmd`, which opens
 * with O_CREAT, leaves no lock behind. Byte ranges lock the whole key.
 *
 * Shared (read) locks (LOCK_SH, F_RDLCK) take the key shared: every local
 * reader shares the mount's one shared lock (no request), other mounts
 * join it in the row (lock_acquire_shared), writers wait or fail. A reader
 * never passes a queued waiter: once a writer waits here, new local
 * readers queue behind it; a writer waiting on a key read elsewhere marks
 * the row, so that no new reader of any mount joins (lock_writer_mark).
 * Converting a lock follows flock(2): exclusive to shared is one atomic
 * write (lock_downgrade); shared to exclusive is not atomic: the share is
 * dropped first (and the key's shared lock released with the last one),
 * then the exclusive lock is asked for like any, and may wait or fail
 * (EWOULDBLOCK/EAGAIN), the share being gone by then. fcntl follows the
 * same rule (POSIX would keep the read lock on a failed upgrade).
 *
 * Waiting never occupies a request thread: a request that must wait is
 * parked and answered later by the wait thread (whose requests a few
 * workers make, so that a key whose request hangs holds up one of them,
 * not every other key's waiters). Waiters of one key on
 * this mount are served in FIFO order; a key held elsewhere is polled with
 * jittered backoff (from poll_min_ms up to poll_max_ms). An interrupted
 * wait is answered EINTR and leaves no lock behind.
 *
 * Threads: FUSE workers (requests, interrupts), the wait thread and its
 * workers. f->mu guards all state; no request to DynamoDB and no reply is
 * made with it held. */
#ifndef LOCKFS_FLK_H
#define LOCKFS_FLK_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "metrics.h"
#include "observe.h"
#include "store.h"

enum flk_kind {
	FLK_FLOCK,
	FLK_POSIX,
};

struct flk_config {
	int64_t poll_min_ms; /* default 50 */
	int64_t poll_max_ms; /* default min(1000, lease / 4) */
	/* Answers a parked request; returns 0, or -errno when the requester
	 * is gone (the grant is then undone). */
	int (*reply)(void *req, int err);
	/* A file lock was granted to the open file handle of the request
	 * (before the request is answered): the file now shows that lock.
	 * May be NULL. */
	void (*on_granted)(void *arg, void *handle, struct lock *lk);
	/* Around a downgrade of lk to shared (begin true, then false, when
	 * the first call returned 0): the file layer holds lk's data writes
	 * meanwhile and writes its pending data first. May be NULL. */
	int (*around_downgrade)(void *arg, struct lock *lk, bool begin);
	void *arg;
	/* The machine (host.h): the clock that times polls and backoff.
	 * NULL: the real one (host_system()). */
	const struct host *host;
};

struct flk;
struct host;

/* Every store request goes through the engine (lock_rows.h). */
struct flk *flk_new(const struct flk_config *cfg, struct lock_engine *eng,
		    struct metrics *m);
int flk_start(struct flk *f);
/* Stops the wait thread and its workers, answering every parked request
 * ENOLCK (EINTR if a signal interrupted it). */
void flk_stop(struct flk *f);
/* What the wait thread does when it wakes, done now by the caller: sweeps
 * if due and serves every due waiter. Returns the host's time of the next
 * work. For tests that drive flk on a fake clock (flk_config.host)
 * without starting its threads. */
int64_t flk_step(struct flk *f);
void flk_free(struct flk *f);

struct flk_req {
	const char *key;
	uint64_t owner; /* fi->lock_owner */
	enum flk_kind kind;
	bool shared; /* LOCK_SH, F_RDLCK */
	bool wait;
	struct lock_holder holder;
	struct lock *handle_lock; /* the lock the requesting open file
				   * acquired with O_CREAT, or NULL */
	void *req;		  /* the request to answer if parked */
	void *handle;		  /* passed to on_granted */
};

/* 0: granted now. -EWOULDBLOCK (flock) or -EAGAIN (fcntl): held and
 * !wait. -EINPROGRESS: parked; cfg.reply answers req later (also when
 * DynamoDB did not answer the first try of a blocking request: it waits
 * on, as a parked waiter does). -EALREADY: a blocking request answered
 * EINTR by its interrupt (flk_interrupt) while its first try was in
 * flight: the caller answers nothing, and what the try took is let go
 * of. Other -errno: failure. */
int flk_lock(struct flk *f, const struct flk_req *r);
/* Makes a parked request eligible, after the caller has registered its
 * interrupt function (so that no answer can precede that registration);
 * answers EINTR at once if it was interrupted meanwhile. */
void flk_arm(struct flk *f, void *req);
/* Releases the file lock of owner on key, if it has one; a flock lock only
 * if it was taken through open file handle (flk_int_find_holder). */
int flk_unlock(struct flk *f, const char *key, uint64_t owner,
	       enum flk_kind kind, const void *handle);
/* The last close of open file handle (its release): the fcntl lock
 * whose owner last asked through it, if one is left, goes. Every process's
 * close of its descriptors sent a flush that dropped its own (classic) fcntl
 * locks first, so what is left is an open file description's lock (F_OFD_SETLK,
 * whose owner is the open file): nothing else would ever release it. */
int flk_release_handle(struct flk *f, const char *key, void *handle);
/* The interrupted request, if still parked, is answered EINTR. */
void flk_interrupt(struct flk *f, void *req);
/* Keys with a file lock, a waiter or an attempt in flight (entries of
 * released or lost locks are swept within a second). */
size_t flk_key_count(struct flk *f);
/* F_GETLK for r (its key, owner, shared, holder and handle_lock): *held
 * set when someone else holds key in a conflicting way (not the lock the
 * asker's own open file or process group took with O_CREAT, which its
 * request would be granted at once) (a share conflicts with a
 * write lock only), *held_shared when that holder's lock is shared; *pid
 * is the holder's pid when it is a process on this host, else 0. */
int flk_getlk(struct flk *f, const struct flk_req *r, bool *held,
	      bool *held_shared, int64_t *pid);
#endif
