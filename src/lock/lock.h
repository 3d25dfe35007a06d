/* lock: the lock engine. Owns the locks this mount holds and their state
 * machine (see enum lock_state; every transition, the function that makes
 * it and the lock it holds are tabled in doc/lock-engine.md), acquires and
 * releases them with one conditional write each, serialises every write of
 * one lock (heartbeat, data, fence, release) so that a heartbeat in flight
 * can never re-take a released lock, and resolves ambiguous writes (a reply
 * lost after the write landed) by the RVNs it tried. The lease thread
 * (lease.c: a scheduler and a pool of workers) drives renewals, the end
 * of trust, automatic releases and cleanups; trust ends by the clock
 * wherever a lock is looked at. The files: lock_engine (creation, views),
 * lock_acquire, lock_renew, lock_release, lock_holder, lock_share,
 * lock_rows (the store for the layers above), over lock_state (the core
 * transitions) and the lease path.
 *
 * Words: the owner is this mount (owner_name in the rows). The acquirer
 * (struct lock_holder) is the process that acquired, with its process
 * group. The keeper is what keeps a held lock by its hold mode: the
 * acquiring open file, the acquirer's process group, or a file lock (flk);
 * lock_holder_live says whether it lives. The holder fields of a row
 * (host, pid, uid, cmd) show the acquirer to others.
 *
 * Threads: FUSE workers call the lock_* operations; the lease scheduler and
 * workers the lease jobs. One engine mutex guards all lock state but the
 * atomic reference count; it is never held across a store request or a
 * callback. */
#ifndef LOCKFS_LOCK_H
#define LOCKFS_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clk.h"
#include "host.h"
#include "metrics.h"
#include "observe.h"
#include "record.h"
#include "store.h"

enum hold_mode {
	HOLD_PGRP,   /* while the acquiring open file is open or its process
		      * group lives (default) */
	HOLD_FD,     /* while the acquiring open file is open */
	HOLD_UNLINK, /* until unlink or unmount */
	HOLD_FLOCK,  /* owned by a flock/fcntl lock: until it is unlocked,
		      * its open file closed, or unlink */
};

/* A lock's states. Transitions (doc/lock-engine.md has each with the
 * function that makes it):
 *   (none) -> held       an acquire's conditional write landed
 *   (none) -> lost       an orphan: a write whose outcome stayed unknown,
 *                        tracked only so that its row is removed
 *   held -> held         a renewal, data write or fence confirmed; a
 *                        downgrade to shared confirmed
 *   held -> releasing    a release (unlink, LOCK_UN, close, keeper gone)
 *   held -> lost         stolen, safe period over, downgrade unknown,
 *                        the daemon stopping
 *   releasing -> released  the delete confirmed (or the row not ours)
 *   releasing -> lost    the delete not confirmed
 * Lost and released are final; a lost lock leaves the engine once its row
 * is cleaned up and its acquirer has let go of it. */
enum lock_state {
	LOCK_HELD,
	LOCK_RELEASING,
	LOCK_LOST,
	LOCK_RELEASED,
};

enum lost_reason {
	LOST_NONE,
	LOST_STOLEN,	   /* a write found another RVN, or no row */
	LOST_SAFE_PERIOD,  /* no successful heartbeat for safe_period */
	LOST_RELEASING,	   /* a release whose outcome is unknown: no longer
			    * trusted; its row is removed in the background */
	LOST_STOPPED,	   /* the daemon stopped (SIGTERM, unmount) while the
			    * lock was held: the holder is told, then the row
			    * is deleted */
	LOST_DOWNGRADE,	   /* a downgrade to shared whose answer was lost:
			    * we cannot know what we hold */
	LOST_SESSION,	   /* session mode: the session that kept it was
			    * fenced by another owner */
	LOST_SESSION_GONE, /* session mode: the session item that kept it
			    * is gone from the table (its TTL, an operator) */
};

struct lock_config {
	const char *owner;	/* owner_name written in every row */
	const char *host;	/* shown in the holder field */
	int64_t lease_ms;	/* default 30000 */
	int64_t heartbeat_ms;	/* default 5000 */
	int64_t safe_period_ms; /* default 20000; must be < lease */
	enum hold_mode hold;
	int64_t pgrp_poll_ms;	   /* how often dead process groups are
				    * looked for; default 100 */
	int lost_signal;	   /* signal for the acquirer's process group on
				    * loss; 0: none */
	int64_t op_timeout_ms;	   /* user-facing requests; default 10000 */
	int64_t recent_release_ms; /* lookups of a key this mount released
				    * this recently are answered from memory;
				    * 0: never */
	int lease_workers;	   /* threads making the lease path's requests
				    * (renewals, automatic releases, cleanups)
				    * in parallel; default 64 */
	int64_t lease_pool_idle_ms; /* a grown pool without waiting renewals
				     * for that long halves; default 30000
				     * (tests) */
	bool session;		    /* session leases (doc/session-leases.md):
				     * one heartbeat per period for the mount,
				     * exclusive locks name its session item and
				     * are written only at acquire and release */
	int other_clients;	    /* the process's HTTP clients besides the
				     * lease workers' (request threads, ...):
				     * the pidfds that watch holders leave open
				     * files free for them and the workers'
				     * (lease.c); default 32 */
};

/* The open files a process running an engine of cfg needs for its HTTP
 * clients, /proc and logs: below that (RLIMIT_NOFILE) requests fail with
 * EMFILE and locks are lost. The pidfds that watch holders come on top. */
size_t lock_files_needed(const struct lock_config *cfg);

/* The acquirer: the process that acquires, filled by the filesystem from
 * the request's context. */
struct lock_holder {
	int64_t pid;
	int64_t uid;
	int64_t gid;
	int64_t pgid;	     /* <= 0: unknown (process gone) */
	int64_t sid;	     /* its session; <= 0: unknown */
	uint64_t pgid_start; /* start time of the group's leader (procgrp.h);
			      * 0: unknown */
	uint32_t mode;
	char cmd[64];
};

struct lock;
struct lock_engine;

/* Upcalls, made without the engine mutex held, from whichever thread saw
 * the event (usually the lease thread). */
struct lock_callbacks {
	void (*on_lost)(void *arg, struct lock *lk);
	void (*on_released)(void *arg, const char *key); /* automatic release */
	void *arg;
	/* A lock of key was just taken (any acquire that wrote a row of
	 * ours), in the acquiring thread, with no engine mutex held. */
	void (*on_acquired)(void *arg, const char *key);
};

/* The engine does not own store, obs, host or metrics. host is the
 * machine (host.h): the engine's clock, whether a holder's process group
 * lives, and the signal sent to it on loss; NULL: host_system(). The
 * engine copies *host (its ops and arg must outlive the engine). */
struct lock_engine *
lock_engine_new_host(const struct lock_config *cfg, struct store *store,
		     struct observe *obs, const struct host *host,
		     struct metrics *m, const struct lock_callbacks *cb);
/* lock_engine_new_host on the real machine (host_system()'s process
 * groups and signals) with clk as the engine's clock. */
struct lock_engine *lock_engine_new(const struct lock_config *cfg,
				    struct store *store, struct observe *obs,
				    const struct clk *clk, struct metrics *m,
				    const struct lock_callbacks *cb);
/* Session mode (cfg.session): creates the mount's session item (at
 * start, before the lease threads); 0 or -errno (logged: the mount must
 * fail). Without session mode, 0. */
int lock_session_start(struct lock_engine *e);
/* Deletes the session item (unmount, after lock_release_all). */
void lock_session_end(struct lock_engine *e);

/* What .lockfs/status shows of the session (session mode). */
struct lock_session_info {
	bool on;   /* session mode */
	bool live; /* a session exists and trusts its locks */
	char key[RECORD_SESSION_KEY_MAX + 1]; /* its key */
	int64_t renewed_ago_ms; /* since its last confirmed heartbeat */
};
void lock_session_info(struct lock_engine *e, struct lock_session_info *out);

/* Sets the upcalls (before the lease thread starts). */
void lock_engine_set_callbacks(struct lock_engine *e,
			       const struct lock_callbacks *cb);
/* Frees every lock (the lease thread must be stopped). */
void lock_engine_free(struct lock_engine *e);
const struct lock_config *lock_engine_config(const struct lock_engine *e);

/* Acquire key (one conditional PutItem): a new lock, or a takeover when our
 * observation judged the current row expired. 0 with a referenced *out;
 * -EEXIST when someone holds it (this mount included), with *cur and *has_cur
 * describing the row when known (may be NULL); -EISDIR when the name is a
 * directory (DynamoDB decided: the marker is the same item); other -errno
 * on failure. */
int lock_acquire(struct lock_engine *e, const char *key,
		 const struct lock_holder *h, struct lock **out,
		 struct lock_record *cur, bool *has_cur);

/* lock_acquire with a hold mode other than the mount's. */
int lock_acquire_hold(struct lock_engine *e, const char *key,
		      const struct lock_holder *h, enum hold_mode hold,
		      struct lock **out, struct lock_record *cur,
		      bool *has_cur);
/* lock_acquire_hold whose row carries data (len bytes) from its first
 * write: link()'s second name takes its first name's data in the acquire's
 * PutItem, not in a write after it. */
int lock_acquire_data(struct lock_engine *e, const char *key,
		      const struct lock_holder *h, enum hold_mode hold,
		      const void *data, size_t len, struct lock **out);
/* owner_name of a row held shared: python clients see it held by this. */
#define LOCK_SHARED_OWNER "lockfs:shared"

/* How long a write of an acquire that went unanswered (one attempt, or
 * the acquire and its resolution) may still land, and so how long the
 * engine looks at the key again once no lock of ours holds it: DynamoDB
 * refuses a request signed more than 15 minutes before it arrives (5 on
 * some endpoints), and a minute for the clocks. */
#define LOCK_LATE_WRITE_MS (16 * 60 * 1000)

/* Shared locks (flock LOCK_SH, fcntl F_RDLCK): any number of mounts hold
 * the key at once, each with its own entry in the row (record.h); an
 * exclusive acquire is refused while any does. This mount holds one lock
 * per key however many local readers share it (flk counts them). Joins
 * the key's readers, starts them, or takes over a row judged expired or
 * left without readers. Returns as lock_acquire_hold. */
int lock_acquire_shared(struct lock_engine *e, const char *key,
			const struct lock_holder *h, enum hold_mode hold,
			struct lock **out, struct lock_record *cur,
			bool *has_cur);
bool lock_is_shared(struct lock_engine *e, struct lock *lk);
/* The id whose entry holds lk in the row (this mount's owner) when lk is
 * held shared, else NULL: record_holder_version(row, it) is our version. */
const char *lock_reader_id(struct lock_engine *e, struct lock *lk);
/* Turns lk, held exclusively, into a shared lock with this mount as its
 * only reader, in one conditional write (on our RVN), so that no writer
 * comes in between. 0 (also when already shared), -EIO when lost (a lost
 * answer loses the lock: LOST_DOWNGRADE). */
int lock_downgrade(struct lock_engine *e, struct lock *lk);

/* For a waiter that has just read row (the key is held elsewhere): whether
 * an acquire may succeed now. An exclusive one when the row is judged
 * expired or is shared with no reader (and no live mark of another
 * writer); a shared one also when it is shared and not marked by a live
 * writer. */
bool lock_row_admits(struct lock_engine *e, const struct lock_record *row,
		     bool shared, bool expired);
/* Whether a row read from the store is free to take at once: shared,
 * every reader gone, and no live mark of another mount's writer (which
 * takes it next); or the row of a lost lock of ours that its holder let
 * go of (rm), whose removal is still due. Such a row holds no lock:
 * lookups do not show it. */
bool lock_row_free(struct lock_engine *e, const struct lock_record *row);
/* A writer waiting on key marks the row as just read (row): a shared
 * row so that no new reader joins it (readers in it go on until they
 * leave); a row held exclusively by another owner so that its release
 * reserves it for this mount (the next mark: doc/fair-handoff.md). v
 * (RECORD_RVN_MAX bytes, "" at first) is the mark's version, refreshed by
 * each call. 0: marked; -EEXIST: another live mark stands (wait behind
 * it); -ENOENT: no row to mark; other -errno. A mark unchanged for a
 * lease is stale: anyone may remove or replace it. lock_writer_mark
 * claims no wait: another mount's live next mark always stands. */
int lock_writer_mark(struct lock_engine *e, const char *key,
		     const struct lock_record *row, char *v);
/* lock_writer_mark for a waiter that has waited waited_ms: another
 * mount's next mark that has (by our estimate) waited more than margin_ms
 * less is replaced, so that the longest waiter goes next (margin_ms:
 * about the waiter's poll interval, by which the estimate may be short). */
int lock_waiter_mark(struct lock_engine *e, const char *key,
		     const struct lock_record *row, char *v, int64_t waited_ms,
		     int64_t margin_ms);
/* Whether a writer of another mount waits on lk's key: lk is shared and
 * its last renewal found a live mark on the row. New local readers then
 * wait as new readers of other mounts do (the mark keeps those out), so
 * that a mount's own readers, overlapping, cannot starve that writer. */
bool lock_writer_waits(struct lock_engine *e, struct lock *lk);
/* Removes our mark of version v (a waiter that gives up), if still there;
 * if it is not, and a release has made the row a reservation for this
 * mount meanwhile, deletes that (on its RVN) so that nobody waits a lease
 * for it. */
void lock_writer_unmark(struct lock_engine *e, const char *key, const char *v);

/* True while lk is held and its keeper lives: its acquiring open file is
 * open, or (hold=pgrp) the acquirer's process group lives, or (hold=flock)
 * a file lock holds it. hold=unlink has no keeper: false. */
bool lock_holder_live(struct lock_engine *e, struct lock *lk);
/* Changes how a held lock is released automatically. */
void lock_set_hold(struct lock_engine *e, struct lock *lk, enum hold_mode hold);

/* The lock this mount holds for key, referenced, or NULL. A release of
 * the key in flight is waited for (it ends within the operation timeout). */
struct lock *lock_find(struct lock_engine *e, const char *key);
/* Like lock_find, but also finds a lock of key that this mount lost and
 * still tracks (open, or its row still to be removed). */
struct lock *lock_find_any(struct lock_engine *e, const char *key);
/* The lock of key this mount lost while process group pgid held it, as
 * long as that group lives and has not unlinked it (referenced), or NULL.
 * Such a lock is shown to that group, and a new acquire of key by it fails
 * with -EIO: a lost lock is never silently replaced under its holder.
 * pgid_start is the start time of the group's leader (procgrp; 0 unknown):
 * a newcomer group that reused the number is not that holder. */
struct lock *lock_find_lost(struct lock_engine *e, const char *key,
			    int64_t pgid, uint64_t pgid_start);
/* Whether some lost lock is still shown to its holder's group (else
 * lock_find_lost finds none, and who asks need not be learnt). */
bool lock_any_lost(struct lock_engine *e);
/* True if this mount released key less than recent_release_ms ago and has
 * not acquired it since. */
bool lock_recently_released(struct lock_engine *e, const char *key);
/* The name key became something else here (mkdir): lookups ask again. */
void lock_forget_recent_release(struct lock_engine *e, const char *key);
void lock_ref(struct lock *lk);
void lock_unref(struct lock_engine *e, struct lock *lk);

/* Release (one conditional DeleteItem), waiting for a write of the same
 * lock in flight. 0 when the lock is no longer ours (released now, or
 * already lost or released). -errno when DynamoDB could not confirm it: the
 * delete may have landed, so the lock is not trusted any more either (it
 * becomes lost, and the lease thread removes its row when it can). */
int lock_release(struct lock_engine *e, struct lock *lk);
/* lock_release in two steps, for a caller that answers in between
 * (unlink with -o release=async). lock_release_begin waits for a write in
 * flight, then marks the lock releasing: from then on this mount's finds
 * of its key wait for the outcome (lock_find, acquires). 1: call
 * lock_release_finish (the delete, which returns as lock_release does);
 * 0 or -errno: nothing more to do (already released or lost). */
int lock_release_begin(struct lock_engine *e, struct lock *lk);
int lock_release_finish(struct lock_engine *e, struct lock *lk);
/* The acquiring open file was closed: in fd mode the lock is released now;
 * in pgrp mode when its process group is gone too. */
void lock_holder_closed(struct lock_engine *e, struct lock *lk);
/* A synchronous heartbeat: 0 if the lock is still ours, -EIO if not. */
int lock_renew_sync(struct lock_engine *e, struct lock *lk);
/* Changes the holder's data: bytes [off, off+len) become buf; truncate >= 0
 * first cuts it to that length. -EFBIG past max_len, -EIO when lost. */
int lock_modify_data(struct lock_engine *e, struct lock *lk, const void *buf,
		     size_t len, int64_t off, int64_t truncate, size_t max_len);
/* The lock's fencing token, allocated on first use while holding (a counter
 * row apart from the lock row, then recorded in the lock row with a
 * conditional write). -EIO when lost. */
int lock_fence(struct lock_engine *e, struct lock *lk, uint64_t *fence);
/* How long lk stays trusted from now without another confirmed heartbeat,
 * in ms of this host's monotonic clock (the end of its safe period less
 * now); 0 once it is not (released, lost, or past its safe period, which
 * marks it lost). A holder outside the daemon counts from the moment it
 * asked, so that its trust ends by its own clock when the daemon stops
 * answering. */
int64_t lock_trusted_ms(struct lock_engine *e, struct lock *lk);
/* When the first of the locks trusted now stops being trusted (the end of
 * its safe period, on our monotonic clock), or INT64_MAX with none. */
int64_t lock_trust_ends_mono_ms(struct lock_engine *e);

/* Our view of the lock: a copy of the row as we last wrote it (held
 * shared: as our last renewal found it, every reader), and state. */
int lock_snapshot(struct lock_engine *e, struct lock *lk,
		  struct lock_record *out, enum lock_state *state);
enum lock_state lock_get_state(struct lock_engine *e, struct lock *lk);
/* Whether lk is held, and trusted, by h's process group through a create
 * under hold=pgrp (same group, leader start time and uid) whose open file
 * is closed: that group holds the key already, so its file locks may use
 * lk without a request. While the creating file is open, its own file
 * lock takes lk over (flock(1) does so): lending it to another process of
 * the group then could make that one wait behind the borrower and give
 * up, leaving the group's lock behind. */
bool lock_held_by_group(struct lock_engine *e, struct lock *lk,
			const struct lock_holder *h);
const char *lock_key(const struct lock *lk);
const struct lock_holder *lock_holder(const struct lock *lk);
/* The RVN we hold now ("" once lost or released). */
void lock_current_rvn(struct lock_engine *e, struct lock *lk,
		      char rvn[RECORD_RVN_MAX]);
const char *lock_state_name(enum lock_state st);
const char *lock_lost_reason_name(enum lost_reason r);

/* For status: calls fn for every lock the engine tracks (held, releasing,
 * lost and still open). fn runs with the engine mutex held and must not
 * call back into the engine. */
struct lock_info {
	const char *key;
	enum lock_state state;
	enum lost_reason lost_reason;
	const char *rvn;
	const struct lock_holder *holder;
	int64_t acquired_real_ms;
	int64_t last_ok_age_ms; /* since the last confirmed write */
	uint64_t fence;
	bool file_open; /* the acquiring open file is open */
	bool shared;
	const struct lock_record *row; /* shared: the row as last renewed
					* (its readers), or NULL */
};
void lock_each(struct lock_engine *e,
	       void (*fn)(void *arg, const struct lock_info *info), void *arg);
size_t lock_count_held(struct lock_engine *e);
/* lock_each for the locks this mount holds (or is releasing) directly in
 * directory dir (a key prefix ending in '/', or "" for the top): visits
 * those alone, whatever the number of locks elsewhere. */
void lock_each_in_dir(struct lock_engine *e, const char *dir,
		      void (*fn)(void *arg, const struct lock_info *info),
		      void *arg);
/* Whether this mount holds (or is releasing) a lock anywhere below
 * directory dir (a key without its trailing '/': "a" for "a/b/c"): one
 * look-up, whatever the number of locks. */
bool lock_holds_below(struct lock_engine *e, const char *dir);
/* How many of the locks this mount holds (or is releasing, or has not
 * yet found past their safe period) belong to holders of uid: one
 * look-up, whatever the number of locks. */
size_t lock_count_held_by(struct lock_engine *e, int64_t uid);

/* Releases every held lock (unmount, SIGTERM): 16 at a time, each
 * bounded by the operation timeout, and none started once a whole
 * operation timeout has gone by (so that stopping takes at most about
 * two of them, however many locks and whether DynamoDB answers or not).
 * Returns the number that could not be released (they lapse after their
 * lease). */
int lock_release_all(struct lock_engine *e);

#endif
