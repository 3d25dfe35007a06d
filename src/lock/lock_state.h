/* lock_state: the lock engine's private core, below every other file of
 * the engine: the structures (a lock, the engine), the clock, and the
 * transitions every part makes (lost, trusted, retired), the list and key
 * table, references, pending RVNs, the claim of a lock's one write in
 * flight, orphans, and telling acquirers of losses. The lease path
 * (lease.c) uses this header and nothing above it: the requests it makes
 * are the engine's, registered in struct lease_jobs.
 *
 * Locking: engine->mu guards the engine's lists and tables and every
 * mutable field of a lock, except lock->refs (atomic) and what the
 * comments below say otherwise. Functions named *_locked are called with
 * mu held; the others take it themselves. mu is never held across a store
 * request or a callback. */
#ifndef LOCKFS_LOCK_STATE_H
#define LOCKFS_LOCK_STATE_H

#include <pthread.h>
#include <stdbool.h>

#include "lease_pool.h"
#include "lock.h"
#include "log.h"
#include "map.h"

struct procwatch;

#define LOCK_PENDING_MAX       8
#define LOCK_OUR_RVN_MAX       37  /* the RVNs we write: UUIDs, NUL included */
#define LEASE_GROUPS_EXITS_MAX 256 /* exits kept between group checks */

/* A lock's place in one of the lists an engine map keeps by a string
 * (by_dir, lost_by_key): the map holds the first, link.next the rest. */
struct lock_link {
	struct lock *prev, *next;
};

/* A write whose outcome is unknown: the RVN it tried, and its send. */
struct lock_pending {
	char rvn[LOCK_OUR_RVN_MAX]; /* ours: a UUID (text_uuid4) */
	int64_t sent_mono_ms;
};

struct lock {
	struct lock *prev, *next; /* engine->all; mu */
	/* Set at creation, then read-only: read without mu. */
	char *key;
	char *dir; /* key's directory: up to its last '/' ("" at the top) */
	/* In engine->by_dir's list of its directory while in_table; mu. */
	struct lock_link dir_link;
	/* In engine->lost_by_key's list of its key while lost and listed
	 * (lost_indexed); mu. */
	struct lock_link lost_link;
	bool lost_indexed;
	struct lock_holder holder; /* the acquirer (lock.h) */

	/* Atomic, not under mu: lock_ref is called by whoever holds a
	 * reference, with or without mu; lock_unref and the engine's drop
	 * (lock_int_retire_locked) decrement it with mu held. */
	int refs;

	/* Everything below is protected by engine->mu. */
	enum hold_mode hold; /* changed by lock_set_hold (flk) */
	enum lock_state state;
	enum lost_reason lost_reason;
	struct lock_record rec;	 /* the row as we last wrote it; held shared,
				  * rec.rvn is our entry's version (the one
				  * our writes are conditioned on) */
	bool shared;		 /* held shared (lock_share.c) */
	bool fence_read;	 /* a reader was handed its fence (maybe 0) */
	struct lock_record *row; /* shared: the row as our last renewal
				  * found it (every reader), or NULL */
	/* RVNs we tried to write whose outcome is unknown (timeouts): if a
	 * later condition fails on one of them, that write landed. Room for
	 * LOCK_PENDING_MAX is allocated at the first and kept: most locks
	 * never have one, and 10,000 held would carry 3.8 MB of it. */
	struct lock_pending *pending;
	int n_pending;
	bool busy;	     /* a write of this lock in flight */
	bool in_table;	     /* counted in the key table (n_held, by_dir,
			      * held_by_uid); by_key names it unless a newer
			      * lock of ours took its key while its release
			      * was in flight */
	bool file_open;	     /* the acquiring open file is open */
	bool release_wanted; /* its keeper is gone: an automatic release
			      * is due */
	bool cleanup_wanted; /* lost, row may still carry our RVN */
	int cleanup_tries;
	/* A lock, or an orphan, whose acquire had a write or an attempt go
	 * unanswered: it may still land, as long as DynamoDB takes its
	 * signature. Until late_until_mono_ms, a release leaves an orphan
	 * and a cleanup looks at the key again (late_looks times so far, a
	 * wait twice the last each time, up to a lease), even after finding
	 * the row gone (lock_release.c). 0: none. */
	int64_t late_until_mono_ms;
	int late_looks;
	bool lost_notified;    /* on_lost and the signal were sent */
	bool dismissed;	       /* lost, and its acquirer has let go of it
				* (unlinked it, or its process group is
				* gone): it may leave the list */
	bool watcher;	       /* no one's lock: it watches for a late
				* landing of an acquire's write
				* (lock_int_add_orphan) */
	bool queued;	       /* a lease job of it is queued or running */
	int job;	       /* that job (enum lease_action in lease.c);
				* written by the scheduler, read by the
				* worker that runs it */
	struct lock *job_next; /* the lease job queue */
	/* Send time of the last confirmed write: the lock is trusted until
	 * last_ok_mono_ms + safe_period_ms, by the clock, whatever any
	 * thread is doing (lock_int_trusted_locked). */
	int64_t last_ok_mono_ms;
	/* When the lease path next has work for this lock, whatever the
	 * work: a renewal while held, an automatic release once its keeper
	 * went away (release_wanted), a cleanup of its row once lost
	 * (cleanup_wanted), or the retry of a failed renewal. */
	int64_t next_due_mono_ms;
	/* Heartbeats that failed in a row without an answer that the lock
	 * is another's: each retry waits twice as long as the one before
	 * (lock_renew.c), so a throttled table is not asked ever faster. */
	int beat_failures;
	/* lease_index: position + 1 in the renewal heap (0: not in it), and
	 * the list of locks wanting a release or a cleanup. */
	size_t hb_idx;
	bool urgent;
	struct lock *urgent_next;
	/* Session mode (lock_session.c): the row names the engine's session
	 * of generation sess_gen, and the lock is trusted by that session's
	 * heartbeats (lock_int_last_ok), never by its own writes. */
	bool in_session;
	int sess_gen;
	/* lease_groups, while the lock waits on its holder's process group:
	 * when the group is next asked of the host, and whether its leader
	 * is watched by a pidfd (the group lives until that leader exits). */
	int64_t group_due_mono_ms;
	bool group_proven;
};

/* How many ended session generations remember why they ended. */
#define LOCK_SESSION_ENDS_KEPT 4

/* The engine's session (session mode; doc/session-leases.md): one item
 * whose heartbeats keep every exclusive lock of this mount. Under mu. */
struct lock_session {
	char key[RECORD_SESSION_KEY_MAX + 1];
	char rvn[LOCK_OUR_RVN_MAX]; /* its version, as last confirmed */
	bool live;		    /* created, and not found fenced */
	bool busy;		    /* a heartbeat (or creation) in flight */
	int gen;		    /* its generation: a fenced session is
				     * followed by a new one, another key */
	/* Why each of the last generations ended (by gen %
	 * LOCK_SESSION_ENDS_KEPT): what a lock of an ended one was lost
	 * to, when it is found only later (an acquire in flight). */
	enum lost_reason ended_why[LOCK_SESSION_ENDS_KEPT];
	/* Send time of the last confirmed heartbeat: every lock of the
	 * session is trusted until last_ok + safe_period, by the clock. */
	int64_t last_ok_mono_ms;
	int64_t last_ok_real_ms;  /* the same on the wall clock (shown) */
	int64_t next_due_mono_ms; /* its next heartbeat */
	/* Heartbeats whose answer was lost (the RVN tried, its send). */
	struct lock_pending pending[LOCK_PENDING_MAX];
	int n_pending;
};

/* The requests of the lease path, made by its workers (mu not held): the
 * engine registers them (lock_engine.c) so that lease.c never calls up
 * into the engine's operations. */
struct lease_jobs {
	/* A renewal (lock_renew.c). */
	int (*heartbeat)(struct lock_engine *e, struct lock *lk);
	/* An automatic release, its keeper gone (lock_release.c). */
	int (*release)(struct lock_engine *e, struct lock *lk, bool automatic);
	/* A lost lock's row removed if still ours (lock_release.c). */
	void (*cleanup)(struct lock_engine *e, struct lock *lk);
	/* The session's heartbeat, due at sess.next_due_mono_ms (session
	 * mode; lock_session.c). */
	void (*session_beat)(struct lock_engine *e);
};

struct session_view;

struct lock_engine {
	struct lock_config cfg;
	char *owner;
	char *host;
	struct store *store;
	struct observe *obs;
	struct host os; /* the machine: our clock, process groups,
			 * signals (host.h); read-only */
	struct metrics *metrics;
	/* Per-lock lines that an outage sends by the thousand (log.h):
	 * heartbeat failures, losses, stale rows removed. Any thread. */
	struct log_burst log_beats, log_lost, log_cleaned;
	struct lock_callbacks cb;     /* mu (lock_engine_set_callbacks) */
	struct lease_jobs lease_jobs; /* set at creation (lock_engine.c) */

	pthread_mutex_t mu;
	pthread_cond_t cv;	 /* busy cleared, a release settled, a session
				  * beat ended */
	pthread_cond_t sess_cv;	 /* the session thread's wake-up, signalled
				  * only when its next beat may be due
				  * sooner (or it stops); mu */
	pthread_cond_t sched_cv; /* the lease scheduler's wake-up, signalled
				  * only when it has something to do
				  * (kicked); mu */
	struct smap by_key;	 /* key -> held/releasing lock, the newest
				  * (lock_int_detach_key_locked); mu */
	struct lock *all;	 /* every tracked lock; mu */
	struct smap recent;	 /* key -> released time (int64 *); mu */
	size_t n_held;		 /* mu */
	/* uid -> how many of by_key's locks its holders have (a count in
	 * the pointer), so that a quota check costs one look-up, not a
	 * pass over every lock under mu; mu */
	struct imap held_by_uid;
	/* A directory's key prefix (lock->dir) -> the first of its locks in
	 * by_key (dir_link): a listing of one directory visits its own
	 * locks, not every lock of the mount; mu */
	struct smap by_dir;
	/* Every directory prefix above a lock of by_key ("a/" and "a/b/"
	 * for "a/b/c") -> how many of them it has below it, at any depth
	 * (a count in the pointer): so that a directory this mount holds
	 * locks in is known to it without a request (lock_holds_below);
	 * mu */
	struct smap held_under;

	/* The lease scheduler thread (never makes a request) and its
	 * workers (make the requests, one lock each at a time). Started and
	 * stopped by one thread (lease_start, lease_stop): no mutex. */
	pthread_t thread;
	bool thread_running;
	pthread_t *workers;	/* room for max_workers */
	int n_workers;		/* running; grown by the scheduler, less
				 * those that ended (mu) */
	int max_workers;	/* what the pool may grow to (lease_start) */
	pthread_t *ended;	/* workers that ended, not joined yet (room
				 * for max_workers); mu */
	int n_ended;		/* mu */
	struct lease_pool pool; /* how many workers are wanted; mu */
	int idle_workers;	/* waiting for a job; mu */
	int n_jobs;		/* queued, not taken by a worker yet; mu */
	int64_t beat_ms_avg;	/* how long a renewal takes, on average of
				 * the recent ones (0: none yet); mu */
	bool renew_backlog;	/* due renewals wait for workers; mu */
	int64_t renew_late_ms;	/* then, how late the most overdue is; mu */
	bool workers_full;	/* due jobs wait: an idle worker kicks; mu */
	pthread_cond_t work_cv; /* a job was queued; mu */
	struct lock *jobs_head, *jobs_tail; /* queued jobs; mu */
	bool stopping;			    /* mu */
	bool kicked;			    /* mu */
	int64_t next_slot_mono_us;	    /* renewal spacing (microseconds
					     * of the monotonic clock); mu */
	int64_t next_watch_mono_ms;	    /* earliest end of a safe period
					     * (0: unknown); mu */
	int64_t sched_wake_mono_ms;	    /* when the scheduler wakes
					     * (INT64_MIN while it plans,
					     * 0 before its first pass); mu */
	/* lease_groups (all mu): when process groups are next checked,
	 * quick checks still owed after an exit, and the pids whose exits
	 * (or reaps) procwatch told since the last check. */
	struct {
		int64_t next_check_mono_ms;
		int burst;
		int64_t exits[LEASE_GROUPS_EXITS_MAX];
		int n_exits;
		bool exits_overflow; /* more than fit: every group is due */
		/* The pids whose exit matters (the leaders of the groups
		 * locks wait on, and the acquirers where the leader is not
		 * watched), since the last prune: other exits cost no pass.
		 * Incomplete after a failed allocation: none is ignored. */
		struct imap pids;
		bool pids_incomplete;
		int64_t prune_mono_ms;
		/* When the log last said that watches ran out of open
		 * files (0: never). */
		int64_t full_said_mono_ms;
	} groups;
	/* Exit notifications of acquirers (NULL without the lease
	 * threads): set by lease_start after the threads started and
	 * cleared by lease_stop, both under mu; read under mu. */
	struct procwatch *procwatch;
	/* Lost locks whose acquirer is not told yet: changed atomically
	 * under mu, read without it as a hint (lock_int_notify_lost). */
	int n_to_notify;
	/* lease_index (all mu): held locks by due time, and locks that
	 * want a release or a cleanup; n_listed locks are on the list. */
	struct lock **hb_heap;
	size_t hb_n, hb_cap, n_listed;
	size_t n_lost_listed; /* lost locks on the list: none, no search */
	/* key -> the lost locks on the list of that key, latest lost first
	 * (lost_link), so that finding one costs a look-up, not a walk of
	 * every lock; lost_unindexed counts those missing from it (no
	 * memory): then the walk. */
	struct smap lost_by_key;
	size_t lost_unindexed;
	/* Session mode: key -> how many exclusive acquires of it are in
	 * flight here (a count in the pointer), from before their write is
	 * sent until their lock is in by_key or they gave up, so that a row
	 * of ours whose acquire is not tracked yet is never taken for a
	 * stray one (lock_stray.c); mu */
	struct smap taking;
	struct lock *urgent;
	int64_t next_sweep_mono_ms; /* the once-a-second check of them all */

	struct lock_session sess; /* session mode; mu */
	pthread_t sess_thread;	  /* its heartbeats (lease.c) */
	bool sess_thread_running;
	/* What this mount last read of other mounts' session items (the
	 * observer side; thread-safe on its own). */
	struct session_view *sview;
	int python_row_logged; /* atomic: a python row met in session mode */
};

static inline int64_t now_mono(const struct lock_engine *e)
{
	return clk_mono_ms(e->os.clk);
}

static inline int64_t now_real(const struct lock_engine *e)
{
	return clk_real_ms(e->os.clk);
}

/* The deadline of a user-facing request: now + op_timeout_ms. */
static inline int64_t op_deadline(const struct lock_engine *e)
{
	return now_mono(e) + e->cfg.op_timeout_ms;
}

/* What lock_int_last_ok answers for a lock whose session is gone: so far
 * in the past that no lease covers it (halved, so that now minus it
 * cannot overflow). */
#define LOCK_SESSION_GONE_OK_MS (INT64_MIN / 2)

/* mu held: the send time of the last confirmed write that keeps lk: its
 * own, or its session's heartbeat in session mode
 * (LOCK_SESSION_GONE_OK_MS when the session it names is gone: never
 * trusted). */
static inline int64_t lock_int_last_ok(const struct lock_engine *e,
				       const struct lock *lk)
{
	if (!lk->in_session)
		return lk->last_ok_mono_ms;
	if (!e->sess.live || lk->sess_gen != e->sess.gen)
		return LOCK_SESSION_GONE_OK_MS;
	return e->sess.last_ok_mono_ms;
}

/* mu held: when lk's trust ends by the clock, its safe period after
 * lock_int_last_ok. */
static inline int64_t lock_int_safe_end(const struct lock_engine *e,
					const struct lock *lk)
{
	return lock_int_last_ok(e, lk) + e->cfg.safe_period_ms;
}

/* mu held: lock_int_last_ok, except that a lock of an ended session gets
 * that session's last heartbeat, kept in it when it was lost
 * (session_drop_locked): when it was last kept, for status and for the
 * lease others judge its row by. */
static inline int64_t lock_int_last_kept(const struct lock_engine *e,
					 const struct lock *lk)
{
	int64_t ok = lock_int_last_ok(e, lk);

	return ok == LOCK_SESSION_GONE_OK_MS ? lk->last_ok_mono_ms : ok;
}

/* The log's words, after a failed heartbeat, for the trust left to whom
 * ("lock", "its locks are") left_ms before the end of the safe period:
 * "lock safe for 120 ms more", or "its safe period ended 253 ms ago" once
 * it is over. Into buf, which it returns. */
const char *lock_int_safe_left(int64_t left_ms, const char *whom, char *buf,
			       size_t len);

/* Frees a lock no one references (its row copies, its key). */
void lock_int_free(struct lock *lk);
/* The shared row copy of lk (lk->row) goes. */
void lock_int_free_row(struct lock *lk);
/* Frees one entry of engine->recent (smap_each). */
void lock_int_free_recent(void *arg, const char *key, void *value);

/* mu held. lk joins the engine's list (its place in the index reserved
 * with lease_index_reserve_locked), or leaves the key table. */
void lock_int_list_add_locked(struct lock_engine *e, struct lock *lk);
/* held_by_uid[uid] += d (d is 1 or -1; the entry goes at 0). 0, or
 * -ENOMEM (only when d is 1). */
int lock_int_held_uid_add_locked(struct lock_engine *e, int64_t uid, int d);
/* The lost locks on the list whose key is key, latest lost first: a
 * look-up in lost_by_key, or (some missing from it) every lock of the
 * list; the caller checks each one's state and key. */
struct lock *lock_int_lost_first_locked(struct lock_engine *e, const char *key);
struct lock *lock_int_lost_next_locked(struct lock_engine *e, struct lock *lk);
/* lk joins (0, or -ENOMEM) or leaves its directory's list in by_dir. */
int lock_int_by_dir_add_locked(struct lock_engine *e, struct lock *lk);
void lock_int_by_dir_del_locked(struct lock_engine *e, struct lock *lk);
void lock_int_detach_key_locked(struct lock_engine *e, struct lock *lk);
/* mu held: drops the engine's reference once lk is done with (released,
 * or lost, cleaned up, unreferenced and let go of by its acquirer); it
 * then leaves the list. */
void lock_int_retire_locked(struct lock_engine *e, struct lock *lk);

/* mu held: lk's state becomes st; a listed lock enters or leaves the lost
 * locks' index (lost_by_key, n_lost_listed) with it. Every change of a
 * listed lock's state goes through here: a lock marked lost while its
 * release was in flight (its session abandoned or fenced) and released
 * after stayed in that index once freed. */
void lock_int_set_state_locked(struct lock_engine *e, struct lock *lk,
			       enum lock_state st);
/* mu held: a transition to lost (held or releasing -> lost, why); lk
 * leaves the key table; its acquirer is told by lock_int_notify_lost. */
void lock_int_mark_lost_locked(struct lock_engine *e, struct lock *lk,
			       enum lost_reason why);
/* mu held: true while lk is held and its safe period has not passed at
 * now. Once it has, lk is marked lost here (held -> lost, safe period). */
bool lock_int_trusted_locked(struct lock_engine *e, struct lock *lk,
			     int64_t now_mono_ms);
/* Without mu: sends on_lost and the lost signal (through the host, to the
 * acquirer's process group when provably its) for locks not yet told. */
void lock_int_notify_lost(struct lock_engine *e);
/* Whether the acquirer's process group lives and is still its, as the
 * engine's host tells (host_pgrp_alive). Any thread; no mutex. */
bool lock_int_pgrp_alive(struct lock_engine *e, const struct lock_holder *h);
/* mu held: wakes the lease scheduler and every waiter on cv. */
void lock_int_kick_locked(struct lock_engine *e);
/* mu held: wakes the session thread (sess_cv): its next beat was moved
 * sooner, or a beat made by another thread ended. */
void lock_int_wake_session_locked(struct lock_engine *e);
/* mu held: wakes the lease scheduler only (sched_cv). */
void lock_int_wake_scheduler_locked(struct lock_engine *e);
/* mu held: wakes the lease scheduler if due_mono_ms comes before the
 * time it means to wake at (sched_wake_mono_ms); else it will look then
 * anyway. Never while it plans (it reads the index after). */
void lock_int_wake_scheduler_by_locked(struct lock_engine *e,
				       int64_t due_mono_ms);

/* Without mu: tracks a lost lock for a row or entry of ours whose write may
 * have landed (its outcome could not be learnt), so that the lease path
 * removes it (an orphan: lost, cleanup_wanted, never shown). may_land_late:
 * the write may also land later still (an acquire whose answer never
 * came), so its key is looked at again for LOCK_LATE_WRITE_MS. */
void lock_int_add_orphan(struct lock_engine *e, const struct lock_record *rec,
			 bool shared, bool may_land_late);
/* mu held: whether a write of exclusive lk's acquire that got no answer
 * may still land (late_until_mono_ms not past): whoever lets go of its row
 * then leaves such an orphan of it. */
bool lock_int_may_land_late_locked(struct lock_engine *e,
				   const struct lock *lk);

/* ---- lock_stray.c: rows of our own session that nobody holds ---- */

/* mu held: an exclusive acquire of key is in flight (add: 0, or -ENOMEM)
 * or over (del), in e->taking. */
int lock_int_taking_add_locked(struct lock_engine *e, const char *key);
void lock_int_taking_del_locked(struct lock_engine *e, const char *key);
/* mu held: what a lock kept by the session of generation gen is lost to
 * once untrusted: the end of its generation when that one ended (one of
 * the last LOCK_SESSION_ENDS_KEPT; an older one answers for a newer), its
 * safe period when it is the current one. */
enum lost_reason lock_int_session_loss_locked(const struct lock_engine *e,
					      int gen);
/* mu held: whether session is the key of this mount's live session. */
bool lock_int_session_ours_locked(const struct lock_engine *e,
				  const char *session);
/* Whether row is a stray row of ours: exclusive, naming this mount's live
 * session, yet no lock of this mount holds its key (self aside: a lock
 * letting go of it) nor is mid-release of it, and no acquire of it is in
 * flight here but taking_self of ours (0 or 1). Such a row is held by
 * nobody: it may go, or be taken over, on its RVN. Takes mu. */
bool lock_int_stray(struct lock_engine *e, const struct lock_record *row,
		    struct lock *self, int taking_self);

/* mu held. The lock this mount holds for key, or NULL; a release of it in
 * flight is waited for first (mu dropped meanwhile). */
struct lock *lock_int_find_settled_locked(struct lock_engine *e,
					  const char *key);
/* mu held. Whether row (exclusive) is the row of a lost lock of ours
 * that its holder let go of and whose removal is still due: trusted by
 * nobody, so an acquire may take it over on its RVN at once. */
bool lock_int_let_go_row_locked(struct lock_engine *e,
				const struct lock_record *row);
/* mu held. The lost lock of key that group pgid (leader started at
 * pgid_start; 0: unknown) has not let go of, or NULL. */
struct lock *lock_int_find_lost_locked(struct lock_engine *e, const char *key,
				       int64_t pgid, uint64_t pgid_start);
/* mu held: the table of keys released lately (recent_release_ms). */
void lock_int_note_recent_locked(struct lock_engine *e, const char *key);
void lock_int_forget_recent_locked(struct lock_engine *e, const char *key);

/* mu held. RVNs we tried to write whose outcome is unknown: add one
 * (with its send time); adopt: rvn is one of them, so that write landed:
 * it becomes our RVN and our lease counts from its send. */
void lock_int_pending_add_locked(struct lock *lk, const char *rvn,
				 int64_t sent);
bool lock_int_pending_adopt_locked(struct lock *lk, const char *rvn);
/* mu held. begin: waits until no write of lk is in flight, then claims it
 * (busy); -EIO when lk is no longer trusted. end: lets go of the claim. */
int lock_int_begin_write_locked(struct lock_engine *e, struct lock *lk);
void lock_int_end_write_locked(struct lock_engine *e, struct lock *lk);
/* mu held: the latest a write of lk may still be answered for it to
 * count: the end of its safe period, and at most max_ms from now. */
int64_t lock_int_write_deadline_locked(struct lock_engine *e, struct lock *lk,
				       int64_t max_ms);
/* mu held, after lock_int_begin_write_locked answered rc: drops mu, with
 * the write's deadline (max_ms at most) in *deadline; -EIO, the loss told,
 * if rc. */
int lock_int_write_started(struct lock_engine *e, struct lock *lk, int rc,
			   int64_t max_ms, int64_t *deadline);
/* After a conditional write of lk was refused by the row cur: if reader's
 * version there is one of our pending writes (it landed after all), that
 * version goes to expect (len bytes) and the answer is true: try again.
 * Takes mu. */
bool lock_int_adopt_landed(struct lock_engine *e, struct lock *lk,
			   const struct lock_record *cur, const char *reader,
			   char *expect, size_t len);

#endif
