/* flk_int: the file-lock layer's private structures and the helpers its
 * files share. Nothing outside src/fs includes it. f->mu guards all state
 * (fields marked otherwise say who owns them); no store request and no
 * reply is made with it held.
 *
 * The files, each using only those listed before it:
 *   flk_key   a key's state (mu held): its holders, its queue of waiters,
 *             our mark on its row
 *   flk_take  taking a key from the engine (mu not held), and marking a
 *             row read shared for a writer of ours
 *   flk       the requests: lock, arm, interrupt, unlock, F_GETLK
 *   flk_wait  the wait thread, which picks parked waiters to serve, and
 *             its workers, which make their requests */
#ifndef LOCKFS_FLK_INT_H
#define LOCKFS_FLK_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clk.h"
#include "flk.h"
#include "host.h"
#include "lock.h"
#include "map.h"

#define FLK_ENTERING_MAX 64
/* Wait workers: the requests of waiters of different keys in flight at
 * once, so that a key whose request hangs (until its attempt times out)
 * holds up one of them, not every other key's wait. */
#define FLK_WAIT_WORKERS 4
/* A blocking request answered EINTR is mostly made again at once: the
 * kernel restarts an interrupted lock call after a handler with
 * SA_RESTART, and callers retry on EINTR (Python does, for any signal
 * whose handler returns). Such a request of the same lock owner on the
 * same key within FLK_RESTART_MS keeps the place in the queue and the
 * wait of the one interrupted (flk_int_restart_*), so that a waiter
 * whose process a timer ticks is neither passed by later ones on its
 * mount nor, its mount's wait started anew, by other mounts. */
#define FLK_RESTART_MS	 1000
#define FLK_RESTARTS_MAX 64
/* An interrupted writer's mark is removed this long after (unless a
 * writer of ours waits again by then: a restart keeps the mark, and a
 * reservation it brought meanwhile). */
#define FLK_UNMARK_GRACE_MS 100
/* How long a non-blocking request waits for the outcome of another
 * request's attempt on its key before it fails ENOLCK (undecided). */
#define FLK_NB_WAIT_MS 1000

enum waiter_state {
	W_NEW,	  /* parked, not yet armed (interrupt function pending) */
	W_PARKED, /* eligible for the wait thread */
	W_BUSY,	  /* a wait worker is trying to acquire for it */
};

struct waiter {
	struct waiter *next;
	uint64_t owner;
	enum flk_kind kind;
	bool shared;
	struct lock_holder holder;
	void *req; /* NULL once answered early (flk_interrupt, W_BUSY) */
	void *handle;
	enum waiter_state state;
	bool interrupted;
	int64_t next_poll_mono_ms;
	int64_t backoff_ms;
	int64_t since_mono_ms; /* when it began to wait (its next mark) */
};

/* The answer to a wait that ends without a grant: EINTR only when a
 * signal interrupted it (the kernel turns a lock request's EINTR into a
 * restart of the call, which only a pending signal resolves: without
 * one the caller would get errno 512); ENOLCK when the daemon stops
 * (the lock can no longer be decided, as when DynamoDB cannot be
 * reached). */
static inline int flk_int_end_err(const struct waiter *w)
{
	return w->interrupted ? EINTR : ENOLCK;
}

/* One file lock holding a key: an open file (flock) or a process
 * (fcntl), known by its lock owner. */
struct fholder {
	struct fholder *next;
	uint64_t owner;
	enum flk_kind kind;
	int64_t pid;
	/* The open file its grant came through; fcntl: the last one its
	 * owner asked through (flk_lock), the one whose RELEASE drops an
	 * F_OFD_SETLK lock. */
	void *handle;
};

struct fkey {
	char *key;
	/* A thread is taking the key (one store request at most): others wait
	 * for its outcome instead of racing it, so that a grant is never
	 * undone under its holder. */
	bool taking;
	struct lock *lk; /* held by file locks, or NULL */
	bool shared;	 /* lk is held shared by every holder */
	/* lk is a process group's lock (a create under hold=pgrp) that a file
	 * lock of that group uses: the last holder gives lk back to the group
	 * instead of releasing it, and lk is never shared with other readers
	 * (the group holds the key exclusively). */
	bool lent;
	struct fholder *holders; /* non-empty exactly while lk is set */
	struct waiter *head, *tail;
	/* In f->waited exactly while head is set (flk_int_waited_*). */
	struct fkey *wprev, *wnext;
	/* Our mark on the row while a writer of ours waits (its wait worker and
	 * whoever dequeues the last writer; mu). */
	char mark_v[RECORD_RVN_MAX];
	int64_t mark_mono_ms;
	/* When this mount last let go of the key: its waiters' wait for the
	 * next turn counts from then (a mount is one waiter to others, and
	 * waits anew after each turn: doc/fair-handoff.md). */
	int64_t turn_end_mono_ms;
};

struct flk_job; /* flk_wait.c */

struct flk {
	struct flk_config cfg;
	const struct host *host; /* cfg.host, or host_system() */
	struct lock_engine *eng;
	struct metrics *m;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct smap keys; /* mu: key -> struct fkey */
	/* mu: the keys that have waiters, so that serving them and finding a
	 * request cost what is waited on, not every key held. */
	struct fkey *waited;
	/* Blocking requests inside flk_lock, not yet parked: an interrupt
	 * that reaches one of them answers it EINTR at once and is
	 * remembered here (flk_lock then answers nothing). */
	struct entering {
		void *req;
		bool interrupted;
	} entering[FLK_ENTERING_MAX];
	int n_entering;		    /* mu */
	int64_t next_sweep_mono_ms; /* mu */
	/* Waiters answered EINTR lately (mu): FLK_RESTART_MS. */
	struct restart {
		char *key; /* NULL: a free slot */
		uint64_t owner;
		enum flk_kind kind;
		int64_t since_mono_ms; /* the waiter's */
		int64_t at_mono_ms;    /* when it was interrupted */
	} restarts[FLK_RESTARTS_MAX];
	/* The wait thread (threads[0]) picks due waiters; the workers (the
	 * others) make their requests, handed over through jobs (mu). */
	pthread_t threads[1 + FLK_WAIT_WORKERS];
	int n_threads;	  /* started ones (flk_start, flk_stop) */
	int n_workers;	  /* of them; set before the wait thread starts */
	int idle_workers; /* mu: workers free, less the jobs queued (<= 0: none)
			   */
	bool want_worker; /* mu: the wait thread waits for a free worker */
	struct flk_job *jobs, *jobs_tail; /* mu */
	struct flk_job *unmarks; /* mu: removals waiting out the grace */
	pthread_cond_t job_cv;	 /* a job was queued, or stopping */
	bool stopping;		 /* mu */
	int64_t unmark_until; /* mu: stopping, no mark removal begins after */
	uint64_t rng;	      /* mu */
};

/* Our monotonic clock, as the host tells it. */
static inline int64_t flk_int_now(const struct flk *f)
{
	return clk_mono_ms(f->host->clk);
}

/* ---- flk_key.c (mu held) ---- */
struct fkey *flk_int_fkey_get(struct flk *f, const char *key, bool create);
void flk_int_fkey_maybe_free(struct flk *f, struct fkey *fk);
void flk_int_drop_holders(struct fkey *fk);
/* Drops the holders' lock if it was released (unlink) or lost meanwhile.
 * Returns true if file locks still hold the key. */
bool flk_int_holder_alive(struct flk *f, struct fkey *fk);
/* The holder of owner's lock of kind; a flock(2) lock's is also the open
 * file's (handle): see flk_key.c. */
struct fholder *flk_int_find_holder(struct fkey *fk, uint64_t owner,
				    enum flk_kind kind, const void *handle);
/* After the first holder's add: fk's lock is its group's, lent (fk->lent). */
void flk_int_lend(struct fkey *fk);
/* The lock to let go of when fk's last holder goes (from
 * flk_int_remove_holder): released, or only unreferenced when it was
 * lent by its group (the group holds on). mu not held. 0 or the
 * release's -errno. */
int flk_int_let_go(struct flk *f, struct lock *lk, bool lent);
/* Removes h; returns the lock to let go of when it was the last holder
 * (the caller does, without mu: flk_int_let_go, with *lent), else NULL. */
struct lock *flk_int_remove_holder(struct fkey *fk, struct fholder *h,
				   bool *lent);
/* Another mount's writer waits on fk's shared lock (seen by its last
 * renewal). */
bool flk_int_writer_waits(struct flk *f, struct fkey *fk);
/* f->waited: fk joins it when its first waiter queues (flk_int_enqueue),
 * leaves it when its last goes (flk_int_dequeue, or a drain that empties
 * the queue: flk_int_waited_del). */
void flk_int_enqueue(struct flk *f, struct fkey *fk, struct waiter *w);
/* Ahead of every waiter of fk: a request whose own first try was in
 * flight while they queued (they came after it). */
void flk_int_enqueue_first(struct flk *f, struct fkey *fk, struct waiter *w);
void flk_int_waited_del(struct flk *f, struct fkey *fk);
/* The waiter of a request, and its key, among the waited keys; or
 * NULL. */
struct waiter *flk_int_find_req(struct flk *f, void *req, struct fkey **fkp);
/* Adds a holder of fk; lk (referenced) becomes fk's lock when it has none
 * (the first holder). -ENOMEM. */
int flk_int_add_holder(struct fkey *fk, struct lock *lk, bool shared,
		       uint64_t owner, enum flk_kind kind, int64_t pid,
		       void *handle);
/* Remembers w, a waiter of fk answered EINTR, for its request made
 * again (FLK_RESTART_MS). */
void flk_int_restart_note(struct flk *f, const struct fkey *fk,
			  const struct waiter *w);
/* Queues w, a new waiter of fk: in its interrupted predecessor's place,
 * with its wait, when it is that one's request made again; else at the
 * tail (or at the head: first, flk_int_enqueue_first). */
void flk_int_restart_enqueue(struct flk *f, struct fkey *fk, struct waiter *w,
			     bool first);
void flk_int_restart_free(struct flk *f);
/* Takes w off fk's queue for good; when it was the last writer waiting,
 * our mark on the row is to go (*um, v, key copied). */
void flk_int_dequeue(struct flk *f, struct fkey *fk, struct waiter *w, bool *um,
		     char *v, char **key);
/* Without mu: removes our mark (see flk_int_dequeue). */
void flk_int_unmark(struct flk *f, bool um, const char *v, char *key);
/* Without mu, from a request thread (an interrupt's): the same, by a wait
 * worker after FLK_UNMARK_GRACE_MS, so that no request thread waits on
 * DynamoDB for it (while
 * DynamoDB did not answer, each interrupt held its thread an operation
 * timeout, and with every thread held so the next interrupt waited as
 * long). Skipped when a writer of ours waits on the key again by then
 * (a request made again: the mark, or our reservation, is its). */
void flk_int_unmark_later(struct flk *f, bool um, const char *v, char *key);
/* mu held: whether a writer of ours waits on fk. */
bool flk_int_writer_queued(const struct fkey *fk);

/* Whether h's process group lost key and has not unlinked it (logged):
 * it may not take the key again until then. Takes the engine's mutex
 * (mu may be held). */
bool flk_int_lost_by_group(struct flk *f, const struct lock_holder *h,
			   const char *key);

/* ---- flk_take.c (mu not held) ---- */
/* lock_downgrade of lk (mu not held) inside cfg.around_downgrade, so that
 * the file layer orders its data writes around it. -EIO (the lock lost:
 * stolen, or the write's outcome unknown) becomes -ENOLCK, which fails
 * the request at once. Taken as a store error, a blocking request waited
 * on as a new shared one and got the key back after another mount had
 * held it exclusively: a conversion is atomic or fails. */
int flk_int_downgrade(struct flk *f, struct lock *lk);

int flk_int_try_take(struct flk *f, const char *key,
		     const struct lock_holder *h, struct lock *handle_lock,
		     bool shared, bool poll, struct lock **out, bool *lent,
		     char *mark_v, int64_t *mark_mono_ms, int64_t waited_ms);
/* A poll's verdict on the row a read gave (read_rc, row: lock_rows_get's
 * result for key): 0 when the row admits a take (gone, judged lapsed, or
 * shareable for a reader), -EEXIST when it is held (a writer's poll marks
 * it, as flk_int_try_take does), the read's -errno when it failed. With
 * !may_mark, a writer's poll that would mark the row (a write) returns 1
 * instead, marking nothing: the caller polls that key again on its own. */
int flk_int_poll_verdict(struct flk *f, const char *key, int read_rc,
			 const struct lock_record *row, bool shared,
			 bool may_mark, char *mark_v, int64_t *mark_mono_ms,
			 int64_t waited_ms);
void flk_int_mark_behind_readers(struct flk *f, const char *key, char *mark_v,
				 int64_t *mark_mono_ms);

#endif
