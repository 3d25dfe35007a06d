/* lock_int: the engine's private structures, shared by lock.c (operations)
 * and lease.c (the heartbeat thread) only. */
#ifndef LOCKFS_LOCK_INT_H
#define LOCKFS_LOCK_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "lock.h"
#include "map.h"

#define LOCK_PENDING_MAX 8

struct lock {
	struct lock *prev, *next; /* engine->all, protected by mu */
	/* Set at creation, then read-only. */
	char *key;
	struct lock_holder holder;
	enum hold_mode hold;

	/* Everything below is protected by engine->mu. */
	int refs;
	enum lock_state state;
	enum lost_reason lost_reason;
	struct lock_record rec; /* the row as we last wrote it */
	/* RVNs we tried to write whose outcome is unknown (timeouts): if a
	 * later condition fails on one of them, that write landed. */
	struct {
		char rvn[RECORD_RVN_MAX];
		int64_t sent_mono_ms;
	} pending[LOCK_PENDING_MAX];
	int n_pending;
	bool busy;	     /* a write of this lock in flight */
	bool in_table;	     /* reachable through engine->by_key */
	bool holder_open;    /* the acquiring open file is open */
	bool release_wanted; /* holder gone: release soon */
	bool cleanup_wanted; /* lost, row may still carry our RVN */
	int cleanup_tries;
	bool lost_notified;	 /* on_lost and the signal were sent */
	int64_t last_ok_mono_ms; /* send time of the last confirmed write */
	int64_t next_hb_mono_ms;
};

struct lock_engine {
	struct lock_config cfg;
	char *owner;
	char *host;
	struct store *store;
	struct observe *obs;
	const struct clk *clk;
	struct metrics *metrics;
	struct lock_callbacks cb;

	pthread_mutex_t mu;
	pthread_cond_t cv;  /* busy cleared; lease thread wake-up */
	struct smap by_key; /* key -> held/releasing lock; mu */
	struct lock *all;   /* every tracked lock; mu */
	struct smap recent; /* key -> released time (int64 *); mu */
	size_t n_held;	    /* mu */

	/* lease thread */
	pthread_t thread;
	bool thread_running;
	bool stopping;			 /* mu */
	bool kicked;			 /* mu */
	int64_t next_slot_mono_ms;	 /* heartbeat spacing; mu */
	int64_t next_pgrp_check_mono_ms; /* mu */
	uint64_t rng;			 /* lease thread only */
};

/* lock.c helpers used by lease.c (called without mu held). */
int lock_int_heartbeat(struct lock_engine *e, struct lock *lk);
int lock_int_release(struct lock_engine *e, struct lock *lk, bool automatic);
void lock_int_cleanup(struct lock_engine *e, struct lock *lk);
/* With mu held: marks lk lost and detaches it from the key table. */
void lock_int_mark_lost_locked(struct lock_engine *e, struct lock *lk,
			       enum lost_reason why);
/* Without mu: sends on_lost and the lost signal for locks not yet told. */
void lock_int_notify_lost(struct lock_engine *e);
bool lock_int_pgrp_alive(int64_t pgid);

#endif
