/* lock: the lock engine's operations and state machine (see lock.h).
 * Threads: FUSE workers and the lease thread. engine->mu guards the key
 * table, the list of locks and every mutable field of a lock; it is dropped
 * around every store request. Writes of one lock are serialised by its busy
 * flag (waiters sleep on engine->cv), so a release always sees the outcome
 * of a heartbeat that was in flight and uses the RVN it produced. */
#include "lock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

static int64_t now_mono(const struct lock_engine *e)
{
	return clk_mono_ms(e->os.clk);
}

static int64_t now_real(const struct lock_engine *e)
{
	return clk_real_ms(e->os.clk);
}

static int64_t op_deadline(const struct lock_engine *e)
{
	return now_mono(e) + e->cfg.op_timeout_ms;
}

int64_t lock_int_op_deadline(const struct lock_engine *e)
{
	return op_deadline(e);
}

const char *lock_state_name(enum lock_state st)
{
	switch (st) {
	case LOCK_HELD:
		return "held";
	case LOCK_RELEASING:
		return "releasing";
	case LOCK_LOST:
		return "lost";
	case LOCK_RELEASED:
		return "released";
	}
	return "unknown";
}

const char *lock_lost_reason_name(enum lost_reason r)
{
	switch (r) {
	case LOST_NONE:
		return "";
	case LOST_STOLEN:
		return "taken by another owner";
	case LOST_SAFE_PERIOD:
		return "no heartbeat within the safe period";
	case LOST_RELEASING:
		return "release not confirmed";
	case LOST_STOPPED:
		return "the daemon stopped";
	case LOST_DOWNGRADE:
		return "downgrade to shared not confirmed";
	}
	return "";
}

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
	if (!e->owner || !e->host) {
		free(e->owner);
		free(e->host);
		free(e);
		return NULL;
	}
	e->cfg.owner = e->owner;
	e->cfg.host = e->host;
	e->store = store;
	e->obs = obs;
	e->os = host ? *host : *host_system();
	e->metrics = m;
	if (cb)
		e->cb = *cb;
	e->rng = (uint64_t)now_real(e) * 2654435761u + 1;
	pthread_mutex_init(&e->mu, NULL);
	clk_cond_init_mono(&e->cv);
	pthread_cond_init(&e->work_cv, NULL);
	smap_init(&e->by_key);
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

static void free_row(struct lock *lk)
{
	if (lk->row)
		record_fini(lk->row);
	free(lk->row);
	lk->row = NULL;
}

static void free_lock(struct lock *lk)
{
	record_fini(&lk->rec);
	free_row(lk);
	free(lk->key);
	free(lk);
}

static void free_recent(void *arg, const char *key, void *value)
{
	free(value);
}

void lock_engine_free(struct lock_engine *e)
{
	struct lock *lk, *next;

	if (!e)
		return;
	for (lk = e->all; lk; lk = next) {
		next = lk->next;
		free_lock(lk);
	}
	lease_index_free(e);
	smap_each(&e->recent, free_recent, NULL);
	smap_fini(&e->recent);
	smap_fini(&e->by_key);
	pthread_cond_destroy(&e->cv);
	pthread_cond_destroy(&e->work_cv);
	pthread_mutex_destroy(&e->mu);
	free(e->owner);
	free(e->host);
	free(e);
}

/* ---- reference counting and the lists (mu held) ---------------------- */

static void list_add(struct lock_engine *e, struct lock *lk)
{
	lk->prev = NULL;
	lk->next = e->all;
	if (e->all)
		e->all->prev = lk;
	e->all = lk;
	e->n_listed++;
	e->n_lost_listed += lk->state == LOCK_LOST;
	lease_index_note_locked(e, lk); /* its place was reserved */
}

static void list_del(struct lock_engine *e, struct lock *lk)
{
	if (lk->prev)
		lk->prev->next = lk->next;
	else
		e->all = lk->next;
	if (lk->next)
		lk->next->prev = lk->prev;
	lk->prev = lk->next = NULL;
	e->n_listed--;
	e->n_lost_listed -= lk->state == LOCK_LOST;
	lease_index_forget_locked(e, lk);
}

static void detach_key(struct lock_engine *e, struct lock *lk)
{
	if (!lk->in_table)
		return;
	smap_del(&e->by_key, lk->key);
	lk->in_table = false;
	e->n_held--;
	metrics_set_held(e->metrics, e->n_held);
}

/* The engine keeps one reference while a lock is on its list. A lock leaves
 * the list once released, or once lost, cleaned up, no longer open and (in
 * pgrp mode) let go of by its holder: until then its holder's group sees it
 * lost, so that a lost lock is never silently replaced under it. */
void lock_int_retire_locked(struct lock_engine *e, struct lock *lk)
{
	bool done = lk->state == LOCK_RELEASED ||
		    (lk->state == LOCK_LOST && !lk->cleanup_wanted &&
		     !lk->busy && !lk->queued &&
		     (lk->dismissed || lk->hold != HOLD_PGRP ||
		      lk->holder.pgid <= 0) &&
		     __atomic_load_n(&lk->refs, __ATOMIC_SEQ_CST) == 1);

	if (!done || (!lk->prev && e->all != lk))
		return;
	list_del(e, lk);
	if (__atomic_sub_fetch(&lk->refs, 1, __ATOMIC_SEQ_CST) == 0)
		free_lock(lk);
}

void lock_ref(struct lock *lk)
{
	/* Callers hold a reference already, or the engine mutex. */
	__atomic_add_fetch(&lk->refs, 1, __ATOMIC_SEQ_CST);
}

void lock_unref(struct lock_engine *e, struct lock *lk)
{
	if (!lk)
		return;
	pthread_mutex_lock(&e->mu);
	if (__atomic_sub_fetch(&lk->refs, 1, __ATOMIC_SEQ_CST) == 0)
		free_lock(lk);
	else
		lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
}

static void note_recent_release(struct lock_engine *e, const char *key)
{
	int64_t *t;

	if (e->cfg.recent_release_ms <= 0)
		return;
	if (e->recent.count > 4096) {
		smap_each(&e->recent, free_recent, NULL);
		smap_fini(&e->recent);
		smap_init(&e->recent);
	}
	t = smap_get(&e->recent, key);
	if (!t) {
		t = malloc(sizeof(*t));
		if (!t || smap_put(&e->recent, key, t)) {
			free(t);
			return;
		}
	}
	*t = now_mono(e);
}

static void forget_recent(struct lock_engine *e, const char *key)
{
	free(smap_del(&e->recent, key));
}

void lock_forget_recent_release(struct lock_engine *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	forget_recent(e, key);
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
			forget_recent(e, key);
	}
	pthread_mutex_unlock(&e->mu);
	return yes;
}

/* mu held. The lock this mount holds for key, or NULL; a release of it in
 * flight is waited for first, so that the key reads as free once it is. */
static struct lock *find_settled_locked(struct lock_engine *e, const char *key)
{
	struct lock *lk;

	while ((lk = smap_get(&e->by_key, key)) && lk->state == LOCK_RELEASING)
		pthread_cond_wait(&e->cv, &e->mu);
	if (lk && !lock_int_trusted_locked(e, lk, now_mono(e)))
		return NULL; /* its trust just ended: lost, detached */
	return lk;
}

/* ---- pending RVNs (mu held) ------------------------------------------- */

static void pending_add(struct lock *lk, const char *rvn, int64_t sent)
{
	if (lk->n_pending == LOCK_PENDING_MAX) {
		memmove(&lk->pending[0], &lk->pending[1],
			sizeof(lk->pending[0]) * (LOCK_PENDING_MAX - 1));
		lk->n_pending--;
	}
	text_copy(lk->pending[lk->n_pending].rvn,
		  sizeof(lk->pending[lk->n_pending].rvn), rvn);
	lk->pending[lk->n_pending++].sent_mono_ms = sent;
}

/* If rvn is one we tried to write, that write landed: it becomes our RVN,
 * and our lease counts from when it was sent. */
static bool pending_adopt(struct lock *lk, const char *rvn)
{
	int i;

	for (i = 0; i < lk->n_pending; i++) {
		if (strcmp(lk->pending[i].rvn, rvn))
			continue;
		memcpy(lk->rec.rvn, rvn, sizeof(lk->rec.rvn));
		if (lk->pending[i].sent_mono_ms > lk->last_ok_mono_ms)
			lk->last_ok_mono_ms = lk->pending[i].sent_mono_ms;
		lk->n_pending = 0;
		return true;
	}
	return false;
}

/* ---- acquire ----------------------------------------------------------- */

static int build_record(struct lock_engine *e, const char *key,
			const struct lock_holder *h, struct lock_record *rec)
{
	int64_t real_ms = now_real(e);
	int rc;

	record_init(rec);
	rc = record_set_str(&rec->key, key);
	if (!rc)
		rc = record_set_str(&rec->owner, e->owner);
	if (!rc)
		rc = record_set_str(&rec->host, e->host);
	if (!rc)
		rc = record_set_str(&rec->cmd, h->cmd);
	if (!rc)
		rc = text_uuid4(rec->rvn);
	if (rc) {
		record_fini(rec);
		return rc;
	}
	rec->lease_ms = e->cfg.lease_ms;
	rec->expiry_real_s = real_ms / 1000 + RECORD_EXPIRY_PERIOD_S;
	rec->has_lockfs = true;
	rec->pid = h->pid;
	rec->uid = h->uid;
	rec->gid = h->gid;
	rec->mode = h->mode;
	rec->acquired_real_ms = real_ms;
	rec->heartbeat_real_ms = real_ms;
	return 0;
}

/* An acquire whose reply never came, resolved for certain: the same row is
 * written again, on condition that there is no row or it carries our RVN,
 * so that afterwards we hold the key (whether or not the first write
 * landed) or we know another owner does. A takeover whose first write did
 * not land is tried once more. Only when DynamoDB cannot be reached at all
 * is the outcome left open: the RVN is then remembered so the lease path
 * removes the row should it exist, rather than leave it to lapse. */
static int resolve_unknown_acquire(struct lock_engine *e,
				   const struct lock_record *rec,
				   const char *takeover_rvn,
				   struct lock_record *cur, bool *has_cur)
{
	int attempt, rc = -EIO;

	for (attempt = 0; attempt < 3; attempt++) {
		record_fini(cur);
		record_init(cur);
		*has_cur = false;
		rc = e->store->ops->put_lock(e->store, rec, rec->rvn,
					     op_deadline(e), cur, has_cur);
		if (rc == -ECANCELED && *has_cur && takeover_rvn &&
		    !strcmp(cur->rvn, takeover_rvn)) {
			/* Our takeover did not land: try it once more. */
			record_fini(cur);
			record_init(cur);
			*has_cur = false;
			rc = e->store->ops->put_lock(
				e->store, rec, takeover_rvn, op_deadline(e),
				cur, has_cur);
		}
		if (rc == -ECANCELED && *has_cur && !strcmp(cur->rvn, rec->rvn))
			rc = 0;
		if (rc == 0)
			return 0;
		if (rc == -ECANCELED)
			return -EEXIST; /* another owner's row */
		if (rc == -EISDIR)
			return rc; /* the name became a directory */
		if (rc == -ENOMEM || rc == -EACCES || rc == -ENXIO ||
		    rc == -EINVAL)
			break;
	}
	lock_int_add_orphan(e, rec, false);
	return -EIO;
}

void lock_int_add_orphan(struct lock_engine *e, const struct lock_record *rec,
			 bool shared)
{
	struct lock *orphan = calloc(1, sizeof(*orphan));

	if (!orphan || !(orphan->key = strdup(rec->key)) ||
	    record_copy(&orphan->rec, rec)) {
		if (orphan)
			free_lock(orphan);
		return; /* left to lapse */
	}
	orphan->shared = shared;
	if (shared && orphan->rec.n_readers) /* its version is its entry's */
		memcpy(orphan->rec.rvn, orphan->rec.readers[0].v,
		       sizeof(orphan->rec.rvn));
	orphan->state = LOCK_LOST;
	orphan->lost_reason = LOST_SAFE_PERIOD;
	orphan->lost_notified = true;
	orphan->dismissed = true;
	orphan->cleanup_wanted = true;
	orphan->refs = 1;
	orphan->next_due_mono_ms = now_mono(e) + e->cfg.heartbeat_ms;
	pthread_mutex_lock(&e->mu);
	if (lease_index_reserve_locked(e, e->n_listed + 1)) {
		pthread_mutex_unlock(&e->mu);
		free_lock(orphan);
		return; /* left to lapse */
	}
	list_add(e, orphan);
	pthread_mutex_unlock(&e->mu);
	lease_kick(e);
}

static struct lock *find_lost_locked(struct lock_engine *e, const char *key,
				     int64_t pgid, uint64_t pgid_start);

int lock_acquire(struct lock_engine *e, const char *key,
		 const struct lock_holder *h, struct lock **out,
		 struct lock_record *cur, bool *has_cur)
{
	return lock_acquire_hold(e, key, h, e->cfg.hold, out, cur, has_cur);
}

bool lock_holder_live(struct lock_engine *e, struct lock *lk)
{
	bool live = false;

	pthread_mutex_lock(&e->mu);
	if (lock_int_trusted_locked(e, lk, now_mono(e)) &&
	    !lk->release_wanted) {
		switch (lk->hold) {
		case HOLD_PGRP:
			live = lk->holder_open ||
			       lock_int_pgrp_alive(e, &lk->holder);
			break;
		case HOLD_FD:
			live = lk->holder_open;
			break;
		case HOLD_FLOCK:
			live = true;
			break;
		case HOLD_UNLINK:
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return live;
}

void lock_set_hold(struct lock_engine *e, struct lock *lk, enum hold_mode hold)
{
	pthread_mutex_lock(&e->mu);
	lk->hold = hold;
	lk->release_wanted = false;
	lease_index_note_locked(e, lk);
	e->next_watch_mono_ms = 0;
	pthread_mutex_unlock(&e->mu);
}

/* A shared row's record: owner_name says "shared" to other clients, and
 * our entry (a fresh version) names the holder; rec->rvn is the row's new
 * RVN. */
static int build_shared_record(struct lock_engine *e, const char *key,
			       const struct lock_holder *h,
			       struct lock_record *rec)
{
	struct record_reader rd = { 0 };
	int rc = build_record(e, key, h, rec);

	if (rc)
		return rc;
	rec->shared = true;
	rd.id = e->owner;
	rd.host = e->host;
	rd.pid = h->pid;
	rd.uid = h->uid;
	rd.cmd = (char *)h->cmd;
	rd.acquired_real_ms = rec->acquired_real_ms;
	rd.heartbeat_real_ms = rec->heartbeat_real_ms;
	rc = record_set_str(&rec->owner, LOCK_SHARED_OWNER);
	if (!rc)
		rc = text_uuid4(rd.v);
	if (!rc)
		rc = record_reader_add(rec, &rd);
	if (rc)
		record_fini(rec);
	return rc;
}

static int acquire(struct lock_engine *e, const char *key,
		   const struct lock_holder *h, enum hold_mode hold,
		   bool shared, struct lock **out, struct lock_record *cur,
		   bool *has_cur);

int lock_acquire_hold(struct lock_engine *e, const char *key,
		      const struct lock_holder *h, enum hold_mode hold,
		      struct lock **out, struct lock_record *cur, bool *has_cur)
{
	return acquire(e, key, h, hold, false, out, cur, has_cur);
}

int lock_acquire_shared(struct lock_engine *e, const char *key,
			const struct lock_holder *h, enum hold_mode hold,
			struct lock **out, struct lock_record *cur,
			bool *has_cur)
{
	return acquire(e, key, h, hold, true, out, cur, has_cur);
}

static int acquire(struct lock_engine *e, const char *key,
		   const struct lock_holder *h, enum hold_mode hold,
		   bool shared, struct lock **out, struct lock_record *cur,
		   bool *has_cur)
{
	struct lock_record rec, now_row;
	char expired_rvn[RECORD_RVN_MAX];
	bool takeover, has = false, freed = false;
	struct lock *lk;
	int64_t sent;
	int rc;

	if (has_cur)
		*has_cur = false;
	pthread_mutex_lock(&e->mu);
	lk = find_settled_locked(e, key);
	if (lk) {
		rc = cur ? record_copy(cur, &lk->rec) : 0;
		if (!rc && has_cur)
			*has_cur = true;
		pthread_mutex_unlock(&e->mu);
		metrics_inc(e->metrics, MC_CONFLICTS);
		return -EEXIST;
	}
	if (find_lost_locked(e, key, h->pgid, h->pgid_start)) {
		/* This group lost key and has not let go of it yet. */
		pthread_mutex_unlock(&e->mu);
		log_info(TAG,
			 "acquire key=%s refused: process group %lld lost "
			 "it and has not unlinked it",
			 key, (long long)h->pgid);
		return -EIO;
	}
	pthread_mutex_unlock(&e->mu);

	takeover = lock_rows_lapsed_rvn(e, key, expired_rvn);
	rc = shared ? build_shared_record(e, key, h, &rec)
		    : build_record(e, key, h, &rec);
	if (rc)
		return rc;
	record_init(&now_row);
	sent = now_mono(e);
	if (shared) {
		rc = lock_share_take(e, &rec, takeover ? expired_rvn : NULL,
				     &now_row, &has);
		if (rc == -EEXIST) {
			if (has && cur)
				record_copy(cur, &now_row);
			if (has_cur)
				*has_cur = has;
			metrics_inc(e->metrics, MC_CONFLICTS);
			goto out;
		}
		if (rc == -EISDIR) {
			metrics_inc(e->metrics, MC_CONFLICTS);
			goto out;
		}
		goto taken;
	}
again:
	rc = e->store->ops->put_lock(e->store, &rec,
				     takeover ? expired_rvn : NULL,
				     op_deadline(e), &now_row, &has);
	if (rc == -ECANCELED && has && !strcmp(now_row.rvn, rec.rvn))
		rc = 0; /* an earlier attempt of ours landed */
	if (rc == -ECANCELED && has && !freed &&
	    lock_share_row_free(e, &now_row)) {
		/* Shared, and every reader has left: free to take at once,
		 * on the RVN we saw (any join since would have changed it). */
		freed = takeover = true;
		text_copy(expired_rvn, sizeof(expired_rvn), now_row.rvn);
		record_fini(&now_row);
		has = false;
		sent = now_mono(e);
		goto again;
	}
	if (rc == -ECANCELED) {
		if (has) {
			lock_rows_judge(e, &now_row, NULL);
			if (cur)
				record_copy(cur, &now_row);
			if (has_cur)
				*has_cur = true;
		}
		metrics_inc(e->metrics, MC_CONFLICTS);
		log_debug(TAG, "acquire key=%s: held by owner=%s", key,
			  has && now_row.owner ? now_row.owner : "?");
		rc = -EEXIST;
		goto out;
	}
	if (rc == -EISDIR) {
		/* The name is a directory: nothing to observe or wait for. */
		metrics_inc(e->metrics, MC_CONFLICTS);
		goto out;
	}
	if (rc && rc != -ENOMEM && rc != -EACCES && rc != -ENXIO &&
	    rc != -EINVAL) {
		/* The outcome is unknown: the write may have landed. */
		rc = resolve_unknown_acquire(
			e, &rec, takeover ? expired_rvn : NULL, &now_row, &has);
		if (rc == -EISDIR) {
			metrics_inc(e->metrics, MC_CONFLICTS);
			goto out;
		}
		if (rc == -EEXIST) {
			if (has && cur)
				record_copy(cur, &now_row);
			if (has_cur)
				*has_cur = has;
			metrics_inc(e->metrics, MC_CONFLICTS);
			goto out;
		}
	}
taken:
	if (rc) {
		char msg[LOG_ERRNO_MAX];

		log_warn(TAG, "acquire key=%s failed: %s", key,
			 log_errno(rc, msg, sizeof(msg)));
		goto out;
	}

	lk = calloc(1, sizeof(*lk));
	if (!lk || !(lk->key = strdup(key))) {
		/* We hold it in DynamoDB but cannot track it: give it back
		 * (the lease path removes an orphan's row or entry). */
		free(lk);
		if (shared)
			lock_int_add_orphan(e, &rec, true);
		else
			e->store->ops->delete_lock(e->store, key, rec.rvn,
						   op_deadline(e), NULL, NULL);
		rc = -ENOMEM;
		goto out;
	}
	lk->holder = *h;
	lk->hold = hold;
	lk->rec = rec;
	record_init(&rec);
	if (shared) {
		/* Our version is our entry's, not the row's RVN. Until our
		 * first renewal shows every reader, we know of ourselves. */
		lk->shared = true;
		memcpy(lk->rec.rvn, lk->rec.readers[0].v, sizeof(lk->rec.rvn));
		lk->row = calloc(1, sizeof(*lk->row));
		if (lk->row && record_copy(lk->row, &lk->rec))
			free_row(lk);
	}
	lk->state = LOCK_HELD;
	lk->holder_open = true;
	lk->last_ok_mono_ms = sent;
	lk->next_due_mono_ms = sent + e->cfg.heartbeat_ms;
	lk->refs = 2; /* the engine's and the caller's */

	pthread_mutex_lock(&e->mu);
	if (lease_index_reserve_locked(e, e->n_listed + 1) ||
	    smap_put(&e->by_key, key, lk)) {
		pthread_mutex_unlock(&e->mu);
		if (shared)
			lock_int_add_orphan(e, &lk->rec, true);
		else
			e->store->ops->delete_lock(e->store, key, lk->rec.rvn,
						   op_deadline(e), NULL, NULL);
		free_lock(lk);
		rc = -ENOMEM;
		goto out;
	}
	lk->in_table = true;
	list_add(e, lk);
	e->n_held++;
	metrics_set_held(e->metrics, e->n_held);
	forget_recent(e, key);
	pthread_mutex_unlock(&e->mu);

	lock_rows_forget(e, key);
	metrics_inc(e->metrics, MC_ACQUIRES);
	if (takeover)
		metrics_inc(e->metrics, MC_TAKEOVERS);
	log_debug(TAG, "acquired key=%s %s=%s%s", key,
		  shared ? "shared v" : "rvn", lk->rec.rvn,
		  takeover ? " (takeover)" : "");
	lease_kick(e);
	*out = lk;
out:
	record_fini(&rec);
	record_fini(&now_row);
	return rc;
}

struct lock *lock_find(struct lock_engine *e, const char *key)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = find_settled_locked(e, key);
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

/* mu held. */
/* The lost lock of key that group pgid (led by a process that started at
 * pgid_start; 0: unknown) has not let go of. A group number is reused: a
 * newcomer group of the same number, whose leader started at another time,
 * is not that holder. */
static struct lock *find_lost_locked(struct lock_engine *e, const char *key,
				     int64_t pgid, uint64_t pgid_start)
{
	struct lock *lk;

	if (pgid <= 0 || !e->n_lost_listed)
		return NULL; /* the common case: no walk of every lock */
	for (lk = e->all; lk; lk = lk->next)
		if (lk->state == LOCK_LOST && !lk->dismissed &&
		    lk->lost_reason != LOST_RELEASING &&
		    lk->hold == HOLD_PGRP && lk->holder.pgid == pgid &&
		    (!pgid_start || !lk->holder.pgid_start ||
		     lk->holder.pgid_start == pgid_start) &&
		    !strcmp(lk->key, key))
			return lk;
	return NULL;
}

struct lock *lock_find_lost(struct lock_engine *e, const char *key,
			    int64_t pgid, uint64_t pgid_start)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = find_lost_locked(e, key, pgid, pgid_start);
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

struct lock *lock_find_any(struct lock_engine *e, const char *key)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	lk = smap_get(&e->by_key, key);
	if (!lk && e->n_lost_listed)
		for (lk = e->all; lk; lk = lk->next)
			if (lk->state == LOCK_LOST && !strcmp(lk->key, key))
				break;
	if (lk)
		lock_ref(lk);
	pthread_mutex_unlock(&e->mu);
	return lk;
}

/* ---- serialised writes ------------------------------------------------- */

/* mu held. Waits until no write of lk is in flight, then claims it.
 * -EIO when the lock is not held any more. */
static int begin_write(struct lock_engine *e, struct lock *lk)
{
	while (lk->busy)
		pthread_cond_wait(&e->cv, &e->mu);
	if (!lock_int_trusted_locked(e, lk, now_mono(e)))
		return -EIO;
	lk->busy = true;
	return 0;
}

static void end_write(struct lock_engine *e, struct lock *lk)
{
	lk->busy = false;
	lease_index_note_locked(e, lk);
	pthread_cond_broadcast(&e->cv);
}

void lock_int_mark_lost_locked(struct lock_engine *e, struct lock *lk,
			       enum lost_reason why)
{
	if (lk->state == LOCK_LOST || lk->state == LOCK_RELEASED)
		return;
	lk->state = LOCK_LOST;
	if (lk->prev || e->all == lk)
		e->n_lost_listed++; /* (a lost lock stays lost) */
	lk->lost_reason = why;
	lk->cleanup_wanted = why == LOST_SAFE_PERIOD || why == LOST_STOPPED;
	lk->lost_notified = why == LOST_RELEASING;
	lease_index_note_locked(e, lk);
	e->next_watch_mono_ms = 0; /* the scheduler looks at every lock */
	if (!lk->lost_notified)
		__atomic_add_fetch(&e->n_to_notify, 1, __ATOMIC_SEQ_CST);
	detach_key(e, lk);
	if (why == LOST_RELEASING)
		return; /* not a loss: the holder let go */
	if (why == LOST_STOPPED) {
		log_info(TAG, "stopping: key=%s held by pid %lld is given up",
			 lk->key, (long long)lk->holder.pid);
		return;
	}
	metrics_inc(e->metrics, MC_LOST);
	log_warn(TAG, "lost key=%s: %s", lk->key, lock_lost_reason_name(why));
}

bool lock_int_trusted_locked(struct lock_engine *e, struct lock *lk,
			     int64_t now_mono_ms)
{
	if (lk->state != LOCK_HELD)
		return false;
	if (now_mono_ms - lk->last_ok_mono_ms < e->cfg.safe_period_ms)
		return true;
	lock_int_mark_lost_locked(e, lk, LOST_SAFE_PERIOD);
	e->kicked = true; /* the scheduler tells the holder */
	pthread_cond_broadcast(&e->cv);
	return false;
}

/* mu held: the latest a write of lk may still be answered for it to count:
 * the end of its safe period, and at most the operation timeout. */
static int64_t write_deadline_locked(struct lock_engine *e, struct lock *lk,
				     int64_t max_ms)
{
	int64_t safe_end = lk->last_ok_mono_ms + e->cfg.safe_period_ms;
	int64_t d = now_mono(e) + max_ms;

	return d < safe_end ? d : safe_end;
}

/* Sends a renewal (busy claimed by the caller, mu not held). Returns 0 when
 * the write is confirmed ours, -ESTALE when the row is someone else's (or
 * gone), other -errno when the outcome is unknown. */
static int write_renewal(struct lock_engine *e, struct lock *lk,
			 struct lock_renewal *rn, int64_t deadline)
{
	char expect[RECORD_RVN_MAX], next_rvn[RECORD_RVN_MAX];
	char row_rvn[RECORD_RVN_MAX];
	const char *reader;
	struct lock_record cur;
	int64_t sent = 0;
	bool has = false;
	int attempt, rc = -EIO;

	pthread_mutex_lock(&e->mu);
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	/* Held shared, our version is our entry's; the row's RVN moves on
	 * every reader's write, so that other clients see it renewed. */
	reader = lk->shared ? e->owner : NULL;
	pthread_mutex_unlock(&e->mu);
	record_init(&cur);
	for (attempt = 0; attempt < 2; attempt++) {
		rc = text_uuid4(next_rvn);
		if (!rc && reader)
			rc = text_uuid4(row_rvn);
		if (rc)
			break;
		rn->new_rvn = next_rvn;
		rn->reader = reader;
		rn->row_rvn = reader ? row_rvn : NULL;
		sent = now_mono(e);
		record_fini(&cur);
		has = false;
		rc = e->store->ops->renew_lock(e->store, lk->key, expect, rn,
					       deadline, &cur, &has);
		if (rc == -ECANCELED && has &&
		    !strcmp(record_holder_version(&cur, reader), next_rvn))
			rc = 0;
		if (rc != -ECANCELED)
			break;
		pthread_mutex_lock(&e->mu);
		if (has &&
		    pending_adopt(lk, record_holder_version(&cur, reader))) {
			/* An earlier write of ours landed after all. */
			text_copy(expect, sizeof(expect),
				  record_holder_version(&cur, reader));
			pthread_mutex_unlock(&e->mu);
			continue;
		}
		pthread_mutex_unlock(&e->mu);
		rc = -ESTALE;
		break;
	}
	pthread_mutex_lock(&e->mu);
	if (rc == 0) {
		memcpy(lk->rec.rvn, next_rvn, sizeof(lk->rec.rvn));
		lk->n_pending = 0;
		lk->last_ok_mono_ms = sent;
		lk->rec.expiry_real_s = rn->expiry_real_s;
		lk->rec.heartbeat_real_ms = rn->heartbeat_real_ms;
		if (rn->set_data)
			record_set_data(&lk->rec, rn->data, rn->data_len);
		if (rn->set_fence)
			lk->rec.fence = rn->fence;
		if (reader && has && !lk->row)
			lk->row = calloc(1, sizeof(*lk->row));
		if (reader && has && lk->row)
			record_copy(lk->row, &cur); /* every reader, to show */
	} else if (rc != -ESTALE && rc != -ENOMEM) {
		pending_add(lk, next_rvn, sent);
	}
	pthread_mutex_unlock(&e->mu);
	record_fini(&cur);
	return rc;
}

static void fill_renewal(struct lock_engine *e, struct lock_renewal *rn)
{
	int64_t real_ms = now_real(e);

	memset(rn, 0, sizeof(*rn));
	rn->expiry_real_s = real_ms / 1000 + RECORD_EXPIRY_PERIOD_S;
	rn->heartbeat_real_ms = real_ms;
}

/* mu held: the bookkeeping after a renewal of any kind. */
static void after_renewal(struct lock_engine *e, struct lock *lk, int rc)
{
	if (rc == 0) {
		if (lk->state == LOCK_HELD)
			lk->next_due_mono_ms =
				lk->last_ok_mono_ms + e->cfg.heartbeat_ms;
	} else if (rc == -ESTALE) {
		lock_int_mark_lost_locked(e, lk, LOST_STOLEN);
	}
}

/* After a renewal of a shared lock (busy still claimed): the entries of
 * readers that stood still for a lease go (lock_share.c). */
static void evict_dead_readers(struct lock_engine *e, struct lock *lk)
{
	struct lock_record row;
	bool have = false;

	record_init(&row);
	pthread_mutex_lock(&e->mu);
	if (lk->shared && lk->row && lk->row->n_readers > 1)
		have = !record_copy(&row, lk->row);
	pthread_mutex_unlock(&e->mu);
	if (have)
		lock_share_evict(e, lk->key, &row);
	record_fini(&row);
}

int lock_int_heartbeat(struct lock_engine *e, struct lock *lk)
{
	struct lock_renewal rn;
	char why[LOG_ERRNO_MAX];
	int64_t deadline, now;
	int rc;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	if (lk->busy || !lock_int_trusted_locked(e, lk, now)) {
		pthread_mutex_unlock(&e->mu);
		lock_int_notify_lost(e);
		return 0;
	}
	lk->busy = true;
	deadline = write_deadline_locked(e, lk, e->cfg.heartbeat_ms);
	pthread_mutex_unlock(&e->mu);

	fill_renewal(e, &rn);
	rc = write_renewal(e, lk, &rn, deadline);
	if (rc == 0)
		evict_dead_readers(e, lk);

	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	after_renewal(e, lk, rc);
	if (rc == 0) {
		metrics_inc(e->metrics, MC_HEARTBEATS_OK);
	} else if (rc != -ESTALE) {
		int64_t retry = e->cfg.heartbeat_ms / 4;

		if (retry < 100)
			retry = 100;
		if (retry > 1000)
			retry = 1000;
		lk->next_due_mono_ms = now_mono(e) + retry;
		metrics_inc(e->metrics, MC_HEARTBEATS_FAILED);
		log_warn(TAG,
			 "heartbeat key=%s failed: %s; lock safe for %lld ms "
			 "more",
			 lk->key, log_errno(rc, why, sizeof(why)),
			 (long long)(lk->last_ok_mono_ms +
				     e->cfg.safe_period_ms - now_mono(e)));
	} else {
		metrics_inc(e->metrics, MC_HEARTBEATS_FAILED);
	}
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	return rc;
}

int lock_renew_sync(struct lock_engine *e, struct lock *lk)
{
	struct lock_renewal rn;
	int64_t deadline;
	int rc;

	pthread_mutex_lock(&e->mu);
	rc = begin_write(e, lk);
	deadline = write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
	pthread_mutex_unlock(&e->mu);
	if (rc) {
		lock_int_notify_lost(e);
		return -EIO;
	}
	fill_renewal(e, &rn);
	rc = write_renewal(e, lk, &rn, deadline);
	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	after_renewal(e, lk, rc);
	if (rc == 0 && !lock_int_trusted_locked(e, lk, now_mono(e)))
		rc = -EIO;
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	if (!rc)
		metrics_inc(e->metrics, MC_HEARTBEATS_OK);
	return rc ? -EIO : 0;
}

int lock_modify_data(struct lock_engine *e, struct lock *lk, const void *buf,
		     size_t len, int64_t off, int64_t truncate, size_t max_len)
{
	struct lock_renewal rn;
	size_t old_len, new_len;
	char *data = NULL;
	int64_t deadline;
	int rc;

	if (off < 0 || (len && (uint64_t)off + len > max_len) ||
	    (truncate >= 0 && (uint64_t)truncate > max_len))
		return -EFBIG;
	pthread_mutex_lock(&e->mu);
	if (lk->shared) {
		/* A shared lock is its readers': none of them owns data. A
		 * truncation to nothing (open with O_TRUNC, as a shell's
		 * `exec 9>lock` before `flock -s 9`) changes nothing. */
		pthread_mutex_unlock(&e->mu);
		return !len && truncate == 0 ? 0 : -EPERM;
	}
	rc = begin_write(e, lk);
	if (rc) {
		pthread_mutex_unlock(&e->mu);
		lock_int_notify_lost(e);
		return -EIO;
	}
	if (lk->shared) {
		end_write(e, lk);
		pthread_mutex_unlock(&e->mu);
		return -EPERM;
	}
	deadline = write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
	old_len = lk->rec.has_data ? lk->rec.data_len : 0;
	if (truncate >= 0 && (size_t)truncate < old_len)
		old_len = (size_t)truncate;
	new_len = old_len;
	if (len && (size_t)off + len > new_len)
		new_len = (size_t)off + len;
	if (truncate >= 0 && (size_t)truncate > new_len)
		new_len = (size_t)truncate;
	data = calloc(1, new_len + 1);
	if (data) {
		if (old_len)
			memcpy(data, lk->rec.data, old_len);
		if (len)
			memcpy(data + off, buf, len);
	}
	pthread_mutex_unlock(&e->mu);
	if (!data) {
		rc = -ENOMEM;
		goto done;
	}
	fill_renewal(e, &rn);
	rn.set_data = true;
	rn.data = data;
	rn.data_len = new_len;
	rc = write_renewal(e, lk, &rn, deadline);
done:
	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	after_renewal(e, lk, rc);
	if (rc == 0 && !lock_int_trusted_locked(e, lk, now_mono(e)))
		rc = -EIO;
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	free(data);
	if (rc == -ENOMEM)
		return rc;
	return rc ? -EIO : 0;
}

int lock_fence(struct lock_engine *e, struct lock *lk, uint64_t *fence)
{
	struct lock_renewal rn;
	int64_t deadline;
	uint64_t f = 0;
	bool shared;
	int rc;

	pthread_mutex_lock(&e->mu);
	if (lk->rec.fence || lk->fence_read) {
		/* Only a holder still trusted by the clock is handed its
		 * token. */
		rc = lock_int_trusted_locked(e, lk, now_mono(e)) ? 0 : -EIO;
		if (!rc)
			*fence = lk->rec.fence;
		pthread_mutex_unlock(&e->mu);
		if (rc)
			lock_int_notify_lost(e);
		return rc;
	}
	rc = begin_write(e, lk);
	if (!rc && (lk->rec.fence || lk->fence_read)) {
		/* Allocated by another thread while we waited. */
		*fence = lk->rec.fence;
		end_write(e, lk);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	deadline = rc ? 0 : write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
	shared = !rc && lk->shared;
	pthread_mutex_unlock(&e->mu);
	if (rc) {
		lock_int_notify_lost(e);
		return -EIO;
	}
	/* A writer's fence is one more than any handed out before; readers
	 * get the counter as it is (no writer can hold meanwhile). Either
	 * is recorded with a conditional write: only a holder gets one. */
	rc = shared ? e->store->ops->read_fence(e->store, lk->key, deadline, &f)
		    : e->store->ops->next_fence(e->store, lk->key, deadline,
						&f);
	if (!rc) {
		/* Record it with a conditional write: only a holder gets one.
		 */
		pthread_mutex_lock(&e->mu);
		deadline = write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
		pthread_mutex_unlock(&e->mu);
		fill_renewal(e, &rn);
		rn.set_fence = true;
		rn.fence = f;
		rc = write_renewal(e, lk, &rn, deadline);
	}
	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	after_renewal(e, lk, rc);
	if (!rc && !lock_int_trusted_locked(e, lk, now_mono(e)))
		rc = -EIO;
	if (!rc)
		lk->fence_read = true; /* a reader's may be 0: none yet */
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	if (rc)
		return -EIO;
	*fence = f;
	return 0;
}

/* ---- release ------------------------------------------------------------ */

/* Deletes the row if it still carries one of our RVNs. Returns 0 when the
 * row is not ours any more (deleted now, gone, or someone else's: *stolen
 * says which), -errno when DynamoDB could not be asked. Busy claimed. */
static int delete_ours(struct lock_engine *e, struct lock *lk, int64_t deadline,
		       bool *stolen)
{
	char expect[RECORD_RVN_MAX], row_rvn[RECORD_RVN_MAX];
	const char *reader;
	struct lock_record cur;
	bool has = false;
	int attempt, rc = 0;

	*stolen = false;
	pthread_mutex_lock(&e->mu);
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	reader = lk->shared ? e->owner : NULL;
	pthread_mutex_unlock(&e->mu);
	record_init(&cur);
	for (attempt = 0; attempt < 2; attempt++) {
		record_fini(&cur);
		has = false;
		if (reader) {
			/* A reader leaves: its entry goes (and the row with
			 * the last one); the RVN moves, as for any write. */
			rc = text_uuid4(row_rvn);
			if (!rc)
				rc = e->store->ops->leave_shared(
					e->store, lk->key, reader, expect,
					row_rvn, deadline, &cur, &has);
		} else {
			rc = e->store->ops->delete_lock(e->store, lk->key,
							expect, deadline, &cur,
							&has);
		}
		if (rc != -ECANCELED)
			break;
		rc = 0;
		if (!has || (reader && !record_reader_find(&cur, reader)))
			break; /* gone: deleted by our earlier attempt or
				  expired (or, shared, our entry) */
		pthread_mutex_lock(&e->mu);
		if (pending_adopt(lk, record_holder_version(&cur, reader))) {
			text_copy(expect, sizeof(expect),
				  record_holder_version(&cur, reader));
			pthread_mutex_unlock(&e->mu);
			continue;
		}
		pthread_mutex_unlock(&e->mu);
		*stolen = true;
		break;
	}
	record_fini(&cur);
	return rc;
}

int lock_int_release(struct lock_engine *e, struct lock *lk, bool automatic)
{
	bool stolen = false;
	int rc;

	pthread_mutex_lock(&e->mu);
	while (lk->busy)
		pthread_cond_wait(&e->cv, &e->mu);
	if (lk->state == LOCK_RELEASED) {
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	if (lk->state == LOCK_LOST) {
		/* The holder lets go of a lost lock: nothing to give back but
		 * our row, if it is still there. */
		bool want = lk->cleanup_wanted;
		bool stopped = lk->lost_reason == LOST_STOPPED;

		lk->dismissed = true;
		lk->cleanup_wanted = false;
		if (want)
			lk->busy = true;
		pthread_mutex_unlock(&e->mu);
		rc = 0;
		if (want)
			rc = delete_ours(e, lk, op_deadline(e), &stolen);
		pthread_mutex_lock(&e->mu);
		if (want) {
			if (rc)
				lk->cleanup_wanted = true;
			end_write(e, lk);
		}
		lock_int_retire_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		/* Stopping counts an unconfirmed delete of a lock held until
		 * then as not released. */
		return stopped ? rc : 0;
	}
	lk->state = LOCK_RELEASING;
	lk->busy = true;
	pthread_mutex_unlock(&e->mu);

	rc = delete_ours(e, lk, op_deadline(e), &stolen);

	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	if (rc) {
		char why[LOG_ERRNO_MAX];

		/* The delete may have landed: never believe in the lock again.
		 * Its row, if still ours, goes when DynamoDB answers again. */
		lk->state = LOCK_HELD;
		lock_int_mark_lost_locked(e, lk, LOST_RELEASING);
		lk->cleanup_wanted = true;
		lk->lost_notified = true; /* the holder is letting go */
		lk->next_due_mono_ms = now_mono(e) + e->cfg.heartbeat_ms;
		lease_index_note_locked(e, lk);
		lock_int_retire_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		log_warn(TAG,
			 "release key=%s not confirmed: %s; it will be "
			 "removed in the background or lapse",
			 lk->key, log_errno(rc, why, sizeof(why)));
		return rc;
	}
	if (stolen) {
		/* Either taken over, or our delete landed, its answer was
		 * lost and another owner acquired before the retry: the
		 * holder is letting go either way, so no loss is counted. */
		log_info(TAG,
			 "released key=%s: the row was already another "
			 "owner's (taken over, or our delete landed before "
			 "a retry)",
			 lk->key);
	}
	lk->state = LOCK_RELEASED;
	detach_key(e, lk);
	note_recent_release(e, lk->key);
	lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	lock_rows_forget(e, lk->key);
	metrics_inc(e->metrics, automatic ? MC_AUTO_RELEASES : MC_RELEASES);
	log_debug(TAG, "released key=%s%s", lk->key,
		  automatic ? " (holder gone)" : "");
	if (automatic && e->cb.on_released)
		e->cb.on_released(e->cb.arg, lk->key);
	return 0;
}

int lock_release(struct lock_engine *e, struct lock *lk)
{
	return lock_int_release(e, lk, false);
}

bool lock_int_pgrp_alive(struct lock_engine *e, const struct lock_holder *h)
{
	return host_pgrp_alive(&e->os, h->pgid, h->pgid_start);
}

void lock_holder_closed(struct lock_engine *e, struct lock *lk)
{
	bool now = false;

	pthread_mutex_lock(&e->mu);
	lk->holder_open = false;
	e->next_watch_mono_ms = 0; /* its group is watched from now on */
	if (lk->hold == HOLD_PGRP)
		lease_watch_holder_locked(e, &lk->holder);
	if (lk->state == LOCK_HELD) {
		if (lk->hold == HOLD_FD)
			now = true;
		else if (lk->hold == HOLD_PGRP &&
			 !lock_int_pgrp_alive(e, &lk->holder))
			now = true;
	}
	pthread_mutex_unlock(&e->mu);
	if (now)
		lock_int_release(e, lk, true);
	lease_kick(e);
}

void lock_int_cleanup(struct lock_engine *e, struct lock *lk)
{
	bool stolen;
	int rc;

	pthread_mutex_lock(&e->mu);
	if (lk->busy || !lk->cleanup_wanted) {
		pthread_mutex_unlock(&e->mu);
		return;
	}
	lk->busy = true;
	pthread_mutex_unlock(&e->mu);
	rc = delete_ours(e, lk, now_mono(e) + e->cfg.heartbeat_ms, &stolen);
	pthread_mutex_lock(&e->mu);
	end_write(e, lk);
	if (!rc || ++lk->cleanup_tries >= 20)
		lk->cleanup_wanted = false;
	else
		lk->next_due_mono_ms = now_mono(e) + e->cfg.heartbeat_ms;
	lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	if (!rc && !stolen)
		log_info(TAG, "lost key=%s: removed our stale row", lk->key);
}

void lock_int_notify_lost(struct lock_engine *e)
{
	struct lock *todo[16];
	int n, i;

	do {
		struct lock *lk;

		/* Nothing to tell (the common case): no walk of the list. */
		if (!__atomic_load_n(&e->n_to_notify, __ATOMIC_SEQ_CST))
			return;
		n = 0;
		pthread_mutex_lock(&e->mu);
		for (lk = e->all; lk && n < 16; lk = lk->next) {
			if (lk->state == LOCK_LOST && !lk->lost_notified) {
				lk->lost_notified = true;
				__atomic_sub_fetch(&e->n_to_notify, 1,
						   __ATOMIC_SEQ_CST);
				lock_ref(lk);
				todo[n++] = lk;
			}
		}
		if (!n) /* a count out of step: it is only a hint */
			__atomic_store_n(&e->n_to_notify, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&e->mu);
		for (i = 0; i < n; i++) {
			if (e->cb.on_lost)
				e->cb.on_lost(e->cb.arg, todo[i]);
			/* Only the holder's own group, proved by its leader's
			 * start time; never group 1 (kill(-1) is every
			 * process). */
			if (e->cfg.lost_signal &&
			    host_pgrp_signallable(&e->os, todo[i]->holder.pgid,
						  todo[i]->holder.pgid_start))
				host_signal_pgrp(&e->os, todo[i]->holder.pgid,
						 e->cfg.lost_signal);
			else if (e->cfg.lost_signal)
				log_warn(TAG,
					 "lost key=%s: process group %lld is "
					 "not provably the holder's any more: "
					 "not signalled",
					 todo[i]->key,
					 (long long)todo[i]->holder.pgid);
			lock_unref(e, todo[i]);
		}
	} while (n == 16);
}

/* ---- views ------------------------------------------------------------- */

int lock_snapshot(struct lock_engine *e, struct lock *lk,
		  struct lock_record *out, enum lock_state *state)
{
	int rc;

	pthread_mutex_lock(&e->mu);
	lock_int_trusted_locked(e, lk, now_mono(e));
	/* Held shared, the row as our last renewal found it: every reader
	 * (ours is one of them). */
	rc = record_copy(out, lk->shared && lk->row ? lk->row : &lk->rec);
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

const char *lock_key(const struct lock *lk)
{
	return lk->key;
}

bool lock_is_shared(struct lock_engine *e, struct lock *lk)
{
	bool shared;

	pthread_mutex_lock(&e->mu);
	shared = lk->shared;
	pthread_mutex_unlock(&e->mu);
	return shared;
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

const char *lock_reader_id(struct lock_engine *e, struct lock *lk)
{
	return lock_is_shared(e, lk) ? e->owner : NULL;
}

int lock_downgrade(struct lock_engine *e, struct lock *lk)
{
	struct lock_record rec, cur;
	char expect[RECORD_RVN_MAX];
	bool has = false, unknown = false;
	int64_t deadline, sent;
	int attempt, rc;

	pthread_mutex_lock(&e->mu);
	rc = begin_write(e, lk);
	if (!rc && lk->shared) {
		end_write(e, lk);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	deadline = rc ? 0 : write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
	pthread_mutex_unlock(&e->mu);
	if (rc) {
		lock_int_notify_lost(e);
		return -EIO;
	}
	/* The row becomes shared with our entry alone, written over our own
	 * RVN: no writer can come in between, and readers may join after. */
	record_init(&cur);
	rc = build_shared_record(e, lk->key, &lk->holder, &rec);
	if (rc) {
		pthread_mutex_lock(&e->mu);
		end_write(e, lk);
		pthread_mutex_unlock(&e->mu);
		return rc;
	}
	pthread_mutex_lock(&e->mu);
	{
		rec.acquired_real_ms = lk->rec.acquired_real_ms;
		rec.mode = lk->rec.mode;
		rec.readers[0].fence = lk->rec.fence;
		rec.fence = lk->rec.fence;
	}
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	pthread_mutex_unlock(&e->mu);
	sent = now_mono(e);
	for (attempt = 0; !rc && attempt < 3; attempt++) {
		record_fini(&cur);
		has = false;
		rc = e->store->ops->put_lock(e->store, &rec, expect, deadline,
					     &cur, &has);
		if (rc == -ECANCELED && has &&
		    !strcmp(record_holder_version(&cur, e->owner),
			    rec.readers[0].v))
			rc = 0; /* an earlier attempt landed */
		if (rc == -ECANCELED && has) {
			pthread_mutex_lock(&e->mu);
			if (pending_adopt(lk, cur.rvn)) {
				/* A renewal of ours landed after all. */
				memcpy(expect, cur.rvn, sizeof(expect));
				pthread_mutex_unlock(&e->mu);
				sent = now_mono(e);
				rc = 0;
				continue;
			}
			pthread_mutex_unlock(&e->mu);
		}
		if (rc == 0 || rc == -ECANCELED || rc == -EISDIR ||
		    rc == -ENOMEM || rc == -EACCES || rc == -ENXIO ||
		    rc == -EINVAL)
			break;
		unknown = true; /* it may have landed */
		if (now_mono(e) >= deadline)
			break;
	}
	pthread_mutex_lock(&e->mu);
	if (rc && rc != -ECANCELED && rc != -EISDIR && !unknown) {
		/* Refused before anything was written: still ours as it
		 * was. */
		end_write(e, lk);
		pthread_mutex_unlock(&e->mu);
		record_fini(&rec);
		record_fini(&cur);
		return rc;
	}
	if (!rc) {
		record_fini(&lk->rec);
		lk->rec = rec;
		record_init(&rec);
		memcpy(lk->rec.rvn, lk->rec.readers[0].v, sizeof(lk->rec.rvn));
		lk->shared = true;
		lk->n_pending = 0;
		lk->last_ok_mono_ms = sent;
		lk->next_due_mono_ms = sent + e->cfg.heartbeat_ms;
	} else if (rc == -ECANCELED || rc == -EISDIR) {
		lock_int_mark_lost_locked(e, lk, LOST_STOLEN);
	} else {
		/* Exclusive or shared now? We cannot know: not ours to
		 * trust. Our row (or entry) lapses by its lease. */
		lock_int_mark_lost_locked(e, lk, LOST_DOWNGRADE);
	}
	end_write(e, lk);
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	record_fini(&rec);
	record_fini(&cur);
	if (!rc)
		log_debug(TAG, "downgraded key=%s to shared", lk->key);
	return rc ? -EIO : 0;
}

const struct lock_holder *lock_holder(const struct lock *lk)
{
	return &lk->holder;
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

void lock_each(struct lock_engine *e,
	       void (*fn)(void *arg, const struct lock_info *info), void *arg)
{
	struct lock *lk;
	int64_t now;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	for (lk = e->all; lk; lk = lk->next)
		lock_int_trusted_locked(e, lk, now);
	for (lk = e->all; lk; lk = lk->next) {
		struct lock_info li = {
			.key = lk->key,
			.state = lk->state,
			.lost_reason = lk->lost_reason,
			.rvn = lk->rec.rvn,
			.holder = &lk->holder,
			.acquired_real_ms = lk->rec.acquired_real_ms,
			.last_ok_age_ms = now - lk->last_ok_mono_ms,
			.fence = lk->rec.fence,
			.holder_open = lk->holder_open,
			.shared = lk->shared,
			.row = lk->row,
		};

		if (lk->state == LOCK_RELEASED)
			continue;
		fn(arg, &li);
	}
	pthread_mutex_unlock(&e->mu);
}

size_t lock_count_held(struct lock_engine *e)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = e->n_held;
	pthread_mutex_unlock(&e->mu);
	return n;
}

/* Stopping: every held lock is marked lost and its holder told (poll,
 * lost_signal) before any row is deleted, so that no holder is still
 * running unaware when another mount can take its key. */
static void stop_all_held(struct lock_engine *e)
{
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	for (lk = e->all; lk; lk = lk->next) {
		if (!lock_int_trusted_locked(e, lk, now_mono(e)))
			continue;
		lock_int_mark_lost_locked(e, lk, LOST_STOPPED);
		lk->cleanup_wanted = true;
		lease_index_note_locked(e, lk);
	}
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
}

int lock_release_all(struct lock_engine *e)
{
	struct lock *todo[64];
	int failed = 0, n, i, rounds = 0;

	stop_all_held(e);
	do {
		struct lock *lk;

		n = 0;
		pthread_mutex_lock(&e->mu);
		for (lk = e->all; lk && n < 64; lk = lk->next) {
			if (lk->state == LOCK_HELD ||
			    (lk->state == LOCK_LOST && lk->cleanup_wanted)) {
				lock_ref(lk);
				todo[n++] = lk;
			}
		}
		pthread_mutex_unlock(&e->mu);
		for (i = 0; i < n; i++) {
			if (lock_int_release(e, todo[i], false))
				failed++;
			/* Released, or lost if DynamoDB could not confirm it:
			 * either way, do not pick it again in the next round.
			 */
			pthread_mutex_lock(&e->mu);
			todo[i]->cleanup_wanted = false;
			pthread_mutex_unlock(&e->mu);
			lock_unref(e, todo[i]);
		}
	} while (n == 64 && ++rounds < 1000);
	return failed;
}
