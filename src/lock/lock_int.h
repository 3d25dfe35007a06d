/* lock_int: the engine's private structures, shared by lock.c (operations)
 * and lease.c (the lease scheduler and its workers) only. */
#ifndef LOCKFS_LOCK_INT_H
#define LOCKFS_LOCK_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "lock.h"
#include "map.h"

struct procwatch;

#define LOCK_PENDING_MAX 8
#define LOCK_OUR_RVN_MAX 37 /* the RVNs we write: UUIDs, NUL included */

struct lock {
	struct lock *prev, *next; /* engine->all, protected by mu */
	/* Set at creation, then read-only. */
	char *key;
	struct lock_holder holder;
	enum hold_mode hold;

	/* refs is atomic: lock_ref may be called by a holder of a reference
	 * without engine->mu. Everything else below is protected by
	 * engine->mu. */
	int refs;
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
	 * later condition fails on one of them, that write landed. */
	struct {
		char rvn[LOCK_OUR_RVN_MAX]; /* ours: a UUID (text_uuid4) */
		int64_t sent_mono_ms;
	} pending[LOCK_PENDING_MAX];
	int n_pending;
	bool busy;	     /* a write of this lock in flight */
	bool in_table;	     /* reachable through engine->by_key */
	bool holder_open;    /* the acquiring open file is open */
	bool release_wanted; /* holder gone: release soon */
	bool cleanup_wanted; /* lost, row may still carry our RVN */
	int cleanup_tries;
	bool lost_notified;    /* on_lost and the signal were sent */
	bool dismissed;	       /* lost, and its holder has let go of it (the
				* holder unlinked it, or its process group is
				* gone): it may leave the list */
	bool queued;	       /* a lease job of it is queued or running */
	int job;	       /* that job (enum lease_action in lease.c) */
	struct lock *job_next; /* the lease job queue */
	/* Send time of the last confirmed write: the lock is trusted until
	 * last_ok_mono_ms + safe_period_ms, by the clock, whatever any
	 * thread is doing (lock_int_trusted_locked). */
	int64_t last_ok_mono_ms;
	/* When the lease path next has work for this lock: a renewal while
	 * held, an automatic release once its holder went away, a cleanup of
	 * its row once lost. */
	int64_t next_due_mono_ms;
	/* lease_index: position + 1 in the renewal heap (0: not in it), and
	 * the list of locks wanting a release or a cleanup. */
	size_t hb_idx;
	bool urgent;
	struct lock *urgent_next;
};

struct lock_engine {
	struct lock_config cfg;
	char *owner;
	char *host;
	struct store *store;
	struct observe *obs;
	struct host os; /* the machine: our clock, process groups,
			 * signals (host.h); read-only */
	struct metrics *metrics;
	struct lock_callbacks cb;

	pthread_mutex_t mu;
	pthread_cond_t cv;  /* busy cleared; lease thread wake-up */
	struct smap by_key; /* key -> held/releasing lock; mu */
	struct lock *all;   /* every tracked lock; mu */
	struct smap recent; /* key -> released time (int64 *); mu */
	size_t n_held;	    /* mu */

	/* The lease scheduler thread (never makes a request) and its
	 * workers (make the requests, one lock each at a time). */
	pthread_t thread;
	bool thread_running;
	pthread_t *workers;
	int n_workers;
	pthread_cond_t work_cv;		    /* a job was queued; mu */
	struct lock *jobs_head, *jobs_tail; /* queued jobs; mu */
	bool stopping;			    /* mu */
	bool kicked;			    /* mu */
	int64_t next_pgrp_check_mono_ms;    /* mu */
	int64_t next_slot_mono_us;	    /* renewal spacing (microseconds
					     * of the monotonic clock); mu */
	int64_t next_watch_mono_ms;	    /* earliest end of a safe period
					     * (0: unknown); mu */
	int64_t sched_wake_mono_ms;	    /* when the scheduler wakes; mu */
	bool pgrp_watch;		    /* some lock waits on a process
					     * group; mu */
	int pgrp_burst;			    /* quick group checks still owed
					     * after an exit; mu */
	struct procwatch *procwatch;	    /* exit notifications of holders
					     * (NULL without the lease
					     * threads); set before they
					     * start */
	int n_to_notify;		    /* lost, holder not told yet; mu,
					     * read atomically as a hint */
	uint64_t rng;			    /* mu */
	/* lease_index (all mu): held locks by renewal time, and locks that
	 * want a release or a cleanup; n_listed locks are on the list. */
	struct lock **hb_heap;
	size_t hb_n, hb_cap, n_listed;
	size_t n_lost_listed; /* lost locks on the list: none, no search */
	struct lock *urgent;
	int64_t next_sweep_mono_ms; /* the once-a-second check of them all */
};

/* lease.c: a watched holder process exited; its group is checked now
 * and a few times in the next 100 ms (its parent reaps it soon after). */
void lease_groups_changed(void *engine);
/* With mu held: watches the holder's process and group leader for their
 * exit (pgrp mode). */
void lease_watch_holder_locked(struct lock_engine *e,
			       const struct lock_holder *h);

/* lock.c helpers used by lease.c (called without mu held). */
int lock_int_heartbeat(struct lock_engine *e, struct lock *lk);
int lock_int_release(struct lock_engine *e, struct lock *lk, bool automatic);
void lock_int_cleanup(struct lock_engine *e, struct lock *lk);
/* With mu held: marks lk lost and detaches it from the key table. */
void lock_int_mark_lost_locked(struct lock_engine *e, struct lock *lk,
			       enum lost_reason why);
/* With mu held: true while lk is held and its safe period has not passed
 * at now. Once it has, lk is marked lost here (the holder is told by the
 * next lock_int_notify_lost). */
bool lock_int_trusted_locked(struct lock_engine *e, struct lock *lk,
			     int64_t now_mono_ms);
/* With mu held: drops the engine's reference once lk is done with. */
void lock_int_retire_locked(struct lock_engine *e, struct lock *lk);
/* Without mu: sends on_lost and the lost signal for locks not yet told. */
void lock_int_notify_lost(struct lock_engine *e);
/* lease_index.c (mu held). reserve: room for n locks, -ENOMEM; note: lk's
 * state, wants or due time changed (call after any change that may make it
 * due earlier); forget: lk leaves the engine's list. */
int lease_index_reserve_locked(struct lock_engine *e, size_t n);
void lease_index_note_locked(struct lock_engine *e, struct lock *lk);
void lease_index_forget_locked(struct lock_engine *e, struct lock *lk);
struct lock *lease_index_top_locked(struct lock_engine *e);
void lease_index_pop_locked(struct lock_engine *e);
/* Unlinks *pp (a place in the urgent list) and returns it. */
struct lock *lease_index_take_urgent_locked(struct lock_engine *e,
					    struct lock **pp);
void lease_index_free(struct lock_engine *e);

/* Whether the holder's process group lives and is still its, as the
 * engine's host tells (host_pgrp_alive). */
bool lock_int_pgrp_alive(struct lock_engine *e, const struct lock_holder *h);

/* lock.c, for lock_share.c (without mu): the deadline of a user-facing
 * request; tracks a lock whose acquire may have landed (its outcome could
 * not be learnt) so that the lease path removes our row or entry. */
int64_t lock_int_op_deadline(const struct lock_engine *e);
void lock_int_add_orphan(struct lock_engine *e, const struct lock_record *rec,
			 bool shared);

/* lock_share.c (without mu). The store side of a shared acquire: creates
 * the row, joins it, takes a free (readerless) one, or takes over one our
 * observation judged expired (takeover_rvn), and resolves lost answers by
 * our entry's version. rec is shared with one reader, ours. 0: we hold it;
 * -EEXIST: refused (*cur the row when known); -EISDIR; -EIO when the
 * outcome stayed unknown (an orphan then removes our entry); other
 * -errno. */
int lock_share_take(struct lock_engine *e, struct lock_record *rec,
		    const char *takeover_rvn, struct lock_record *cur,
		    bool *has_cur);
/* After our renewal found row: removes other readers' entries whose
 * version stood still for the row's lease on our clock (dead mounts). */
void lock_share_evict(struct lock_engine *e, const char *key,
		      const struct lock_record *row);
/* Whether a row is free to take over at once: shared with no reader, and
 * not marked by a live writer of another mount. */
bool lock_share_row_free(struct lock_engine *e, const struct lock_record *row);
/* Whether row carries a live mark of another mount's writer. */
bool lock_share_other_writer(struct lock_engine *e,
			     const struct lock_record *row);

#endif
