/* lock_engine: the engine as a whole: its creation (the config's
 * defaults, the host, the lease path's jobs) and end, and the views of its
 * locks: find one by key, a snapshot, its state, every lock for status.
 *
 * Threads: main (creation, end); FUSE workers (finds and views); views
 * take engine->mu. */
#include "lock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "session_view.h"

#define TAG "lock"

struct lock_engine *lock_engine_new(const struct lock_config *cfg,
				    struct store *store, struct observe *obs,
				    const struct clk *clk, struct metrics *m,
				    const struct lock_callbacks *cb)
{
	struct host h = *host_system();

	h.clk = clk;
	return lock_engine_new_host(cfg, store, obs, &h, m, cb);
}

struct lock_engine *
lock_engine_new_host(const struct lock_config *cfg, struct store *store,
		     struct observe *obs, const struct host *host,
		     struct metrics *m, const struct lock_callbacks *cb)
{
	struct lock_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->cfg = *cfg;
	if (!e->cfg.lease_ms)
		e->cfg.lease_ms = 30000;
	if (!e->cfg.heartbeat_ms)
		e->cfg.heartbeat_ms = 5000;
	if (!e->cfg.safe_period_ms)
		e->cfg.safe_period_ms = 20000;
	if (!e->cfg.pgrp_poll_ms)
		e->cfg.pgrp_poll_ms = 100;
	if (!e->cfg.op_timeout_ms)
		e->cfg.op_timeout_ms = 10000;
	e->owner = strdup(cfg->owner ? cfg->owner : "lockfs");
	e->host = strdup(cfg->host ? cfg->host : "localhost");
	e->sview = session_view_new();
	if (!e->owner || !e->host || !e->sview) {
		free(e->owner);
		free(e->host);
		session_view_free(e->sview);
		free(e);
		return NULL;
	}
	e->cfg.owner = e->owner;
	e->cfg.host = e->host;
	e->store = store;
	e->obs = obs;
	e->os = host ? *host : *host_system();
	e->metrics = m;
	e->log_beats = (struct log_burst){
		.level = LOGL_WARN,
		.tag = "lock",
		.what = "heartbeat failures",
		.hint = " (lockfs_heartbeats_failed_total counts them all)",
	};
	e->log_lost = (struct log_burst){
		.level = LOGL_WARN,
		.tag = "lock",
		.what = "locks lost",
		.hint = " (lockfs_lost_total counts them all; .lockfs/status "
			"lists each)",
	};
	e->log_cleaned = (struct log_burst){
		.level = LOGL_INFO,
		.tag = "lock",
		.what = "stale rows of lost locks removed",
	};
	if (cb)
		e->cb = *cb;
	e->lease_jobs.heartbeat = lock_int_heartbeat;
	e->lease_jobs.release = lock_int_release;
	e->lease_jobs.cleanup = lock_int_cleanup;
	e->lease_jobs.session_beat = lock_int_session_beat;
	pthread_mutex_init(&e->mu, NULL);
	clk_cond_init_mono(&e->cv);
	clk_cond_init_mono(&e->sched_cv);
	clk_cond_init_mono(&e->sess_cv);
	pthread_cond_init(&e->work_cv, NULL);
	smap_init(&e->by_key);
	imap_init(&e->held_by_uid);
	imap_init(&e->groups.pids);
	smap_init(&e->by_dir);
	smap_init(&e->held_under);
	smap_init(&e->lost_by_key);
	smap_init(&e->taking);
	smap_init(&e->recent);
	return e;
}

void lock_engine_set_callbacks(struct lock_engine *e,
			       const struct lock_callbacks *cb)
{
	pthread_mutex_lock(&e->mu);
	e->cb = *cb;
	pthread_mutex_unlock(&e->mu);
}

const struct lock_config *lock_engine_config(const struct lock_engine *e)
{
	return &e->cfg;
}

void lock_engine_free(struct lock_engine *e)
{
	struct lock *lk, *next;

	if (!e)
		return;
	for (lk = e->all; lk; lk = next) {
		next = lk->next;
		lock_int_free(lk);
	}
	lease_index_free(e);
	session_view_free(e->sview);
	smap_each(&e->recent, lock_int_free_recent, NULL);
	smap_fini(&e->recent);
	smap_fini(&e->by_key);
	imap_fini(&e->held_by_uid);
	imap_fini(&e->groups.pids);
	smap_fini(&e->by_dir);
	smap_fini(&e->held_under);
	smap_fini(&e->lost_by_key);
	smap_fini(&e->taking);
	pthread_cond_destroy(&e->cv);
	pthread_cond_destroy(&e->sched_cv);
	pthread_cond_destroy(&e->sess_cv);
	pthread_cond_destroy(&e->work_cv);
	pthread_mutex_destroy(&e->mu);
	free(e->owner);
	free(e->host);
	free(e);
}

void lock_forget_recent_release(struct lock_engine *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	lock_int_forget_recent_locked(e, key);
	pthread_mutex_unlock(&e->mu);
}

bool lock_recently_released(struct lock_engine *e, const char *key)
{
	bool yes = false;
	int64_t *t;

	pthread_mutex_lock(&e->mu);
	t = smap_get(&e->recent, key);
	if (t) {
		yes = now_mono(e) - *t < e->cfg.recent_release_ms;
		if (!yes)
			lock_int_forget_recent_locked(e, key);
	}
	pthread_mutex_unlock(&e->mu);
	return yes;
}

struct lock *lock_find(struct lock_engine *e, const char *key)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = lock_int_find_settled_locked(e, key);
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

struct lock *lock_find_lost(struct lock_engine *e, const char *key,
			    int64_t pgid, uint64_t pgid_start)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = lock_int_find_lost_locked(e, key, pgid, pgid_start);
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

bool lock_any_lost(struct lock_engine *e)
{
	bool any;

	pthread_mutex_lock(&e->mu);
	any = e->n_lost_listed > 0;
	pthread_mutex_unlock(&e->mu);
	return any;
}

struct lock *lock_find_any(struct lock_engine *e, const char *key)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = smap_get(&e->by_key, key);
	if (!lk)
		for (lk = lock_int_lost_first_locked(e, key); lk;
		     lk = lock_int_lost_next_locked(e, lk))
			if (lk->state == LOCK_LOST && !lk->watcher &&
			    !strcmp(lk->key, key))
				break;
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

int lock_snapshot(struct lock_engine *e, struct lock *lk,
		  struct lock_record *out, enum lock_state *state)
{
	int rc;

	pthread_mutex_lock(&e->mu);
	lock_int_trusted_locked(e, lk, now_mono(e));
	/* Held shared, the row as our last renewal found it: every reader
	 * (ours is one of them). */
	rc = record_copy(out, lk->shared && lk->row ? lk->row : &lk->rec);
	if (!rc && lk->in_session) {
		/* Shown by its session: the lease others judge it by, and
		 * the session's last confirmed heartbeat. */
		out->lease_ms = e->cfg.lease_ms;
		if (lk->sess_gen == e->sess.gen &&
		    e->sess.last_ok_real_ms > out->heartbeat_real_ms)
			out->heartbeat_real_ms = e->sess.last_ok_real_ms;
	}
	if (state)
		*state = lk->state;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

enum lock_state lock_get_state(struct lock_engine *e, struct lock *lk)
{
	enum lock_state st;

	pthread_mutex_lock(&e->mu);
	lock_int_trusted_locked(e, lk, now_mono(e));
	st = lk->state;
	pthread_mutex_unlock(&e->mu);
	return st;
}

bool lock_held_by_group(struct lock_engine *e, struct lock *lk,
			const struct lock_holder *h)
{
	bool yes;

	pthread_mutex_lock(&e->mu);
	yes = lock_int_trusted_locked(e, lk, now_mono(e)) &&
	      lk->hold == HOLD_PGRP && !lk->file_open && h->pgid > 0 &&
	      lk->holder.pgid == h->pgid && lk->holder.pgid_start &&
	      lk->holder.pgid_start == h->pgid_start &&
	      lk->holder.uid == h->uid;
	pthread_mutex_unlock(&e->mu);
	return yes;
}

const char *lock_key(const struct lock *lk)
{
	return lk->key;
}

const struct lock_holder *lock_holder(const struct lock *lk)
{
	return &lk->holder;
}

bool lock_is_shared(struct lock_engine *e, struct lock *lk)
{
	bool shared;

	pthread_mutex_lock(&e->mu);
	shared = lk->shared;
	pthread_mutex_unlock(&e->mu);
	return shared;
}

const char *lock_reader_id(struct lock_engine *e, struct lock *lk)
{
	return lock_is_shared(e, lk) ? e->owner : NULL;
}

bool lock_writer_waits(struct lock_engine *e, struct lock *lk)
{
	struct lock_record row;
	bool marked = false, waits = false;

	record_init(&row);
	pthread_mutex_lock(&e->mu);
	if (lk->shared && lk->row && lk->row->writer_id)
		marked = !record_copy(&row, lk->row);
	pthread_mutex_unlock(&e->mu);
	if (marked)
		waits = lock_share_other_writer(e, &row);
	record_fini(&row);
	return waits;
}

void lock_current_rvn(struct lock_engine *e, struct lock *lk,
		      char rvn[RECORD_RVN_MAX])
{
	pthread_mutex_lock(&e->mu);
	lock_int_trusted_locked(e, lk, now_mono(e));
	if (lk->state == LOCK_HELD || lk->state == LOCK_RELEASING)
		memcpy(rvn, lk->rec.rvn, RECORD_RVN_MAX);
	else
		rvn[0] = '\0';
	pthread_mutex_unlock(&e->mu);
}

/* mu held: fn on lk, unless released or a watcher (no one held it). */
static void each_one(struct lock_engine *e, struct lock *lk, int64_t now,
		     void (*fn)(void *arg, const struct lock_info *info),
		     void *arg)
{
	int64_t ok = lock_int_last_kept(e, lk);
	struct lock_info li = {
		.key = lk->key,
		.state = lk->state,
		.lost_reason = lk->lost_reason,
		.rvn = lk->rec.rvn,
		.holder = &lk->holder,
		.acquired_real_ms = lk->rec.acquired_real_ms,
		.last_ok_age_ms = now - ok,
		.fence = lk->rec.fence,
		.file_open = lk->file_open,
		.shared = lk->shared,
		.row = lk->row,
	};

	if (lk->state != LOCK_RELEASED && !lk->watcher)
		fn(arg, &li);
}

void lock_each(struct lock_engine *e,
	       void (*fn)(void *arg, const struct lock_info *info), void *arg)
{
	struct lock *lk;
	int64_t now;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	for (lk = e->all; lk; lk = lk->next)
		lock_int_trusted_locked(e, lk, now);
	for (lk = e->all; lk; lk = lk->next)
		each_one(e, lk, now, fn, arg);
	pthread_mutex_unlock(&e->mu);
}

void lock_each_in_dir(struct lock_engine *e, const char *dir,
		      void (*fn)(void *arg, const struct lock_info *info),
		      void *arg)
{
	struct lock *lk, *next;
	int64_t now;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	/* A lock found past its safe period here leaves the list. */
	for (lk = smap_get(&e->by_dir, dir); lk; lk = next) {
		next = lk->dir_link.next;
		lock_int_trusted_locked(e, lk, now);
	}
	for (lk = smap_get(&e->by_dir, dir); lk; lk = lk->dir_link.next)
		each_one(e, lk, now, fn, arg);
	pthread_mutex_unlock(&e->mu);
}

bool lock_holds_below(struct lock_engine *e, const char *dir)
{
	size_t n = strlen(dir);
	char *under = malloc(n + 2);
	bool yes;

	if (!under)
		return false;
	memcpy(under, dir, n);
	memcpy(under + n, "/", 2);
	pthread_mutex_lock(&e->mu);
	yes = smap_get(&e->held_under, under) != NULL;
	pthread_mutex_unlock(&e->mu);
	free(under);
	return yes;
}

size_t lock_count_held_by(struct lock_engine *e, int64_t uid)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = (uintptr_t)imap_get(&e->held_by_uid, (uint64_t)uid);
	pthread_mutex_unlock(&e->mu);
	return n;
}

size_t lock_count_held(struct lock_engine *e)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = e->n_held;
	pthread_mutex_unlock(&e->mu);
	return n;
}
