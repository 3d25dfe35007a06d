/* lock_state: the engine's core transitions and bookkeeping (see
 * lock_state.h): the list and key table, references, the end of trust by
 * the clock, the transition to lost, retirement, pending RVNs, the claim
 * of a lock's one write in flight, orphans, and telling acquirers of their
 * losses (on_lost, and the lost signal through the host).
 *
 * Threads: FUSE workers, the lease scheduler and its workers. Under
 * engine->mu as each function says; refs is atomic. */
#include "lock_state.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_index.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

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
		return "taken by another owner, or its row deleted";
	case LOST_SAFE_PERIOD:
		return "no heartbeat within the safe period";
	case LOST_RELEASING:
		return "release not confirmed";
	case LOST_STOPPED:
		return "the daemon stopped";
	case LOST_DOWNGRADE:
		return "downgrade to shared not confirmed";
	case LOST_SESSION:
		return "the mount's session was fenced by another owner";
	case LOST_SESSION_GONE:
		return "the mount's session is gone from the table";
	}
	return "";
}

const char *lock_int_safe_left(int64_t left_ms, const char *whom, char *buf,
			       size_t len)
{
	if (left_ms > 0)
		snprintf(buf, len, "%s safe for %lld ms more", whom,
			 (long long)left_ms);
	else
		snprintf(buf, len, "its safe period ended %lld ms ago",
			 (long long)-left_ms);
	return buf;
}

void lock_int_free_row(struct lock *lk)
{
	if (lk->row)
		record_fini(lk->row);
	free(lk->row);
	lk->row = NULL;
}

void lock_int_free(struct lock *lk)
{
	record_fini(&lk->rec);
	lock_int_free_row(lk);
	free(lk->pending);
	free(lk->key);
	free(lk->dir);
	free(lk);
}

void lock_int_free_recent(void *arg, const char *key, void *value)
{
	free(value);
}

static struct lock_link *link_at(struct lock *lk, size_t off)
{
	return (struct lock_link *)((char *)lk + off);
}

/* mu held: lk joins the head of the list map keeps under key, through its
 * link at offset off (offsetof(struct lock, ...)). 0, or -ENOMEM. */
static int keyed_add(struct smap *map, const char *key, struct lock *lk,
		     size_t off)
{
	struct lock *head = smap_get(map, key);
	int rc = smap_put(map, key, lk);

	if (rc)
		return rc;
	link_at(lk, off)->prev = NULL;
	link_at(lk, off)->next = head;
	if (head)
		link_at(head, off)->prev = lk;
	return 0;
}

/* mu held: lk leaves that list (the map's entry goes with its last). */
static void keyed_del(struct smap *map, const char *key, struct lock *lk,
		      size_t off)
{
	struct lock_link *l = link_at(lk, off);

	if (l->prev)
		link_at(l->prev, off)->next = l->next;
	else if (l->next)
		smap_put(map, key, l->next); /* replaces: no allocation */
	else
		smap_del(map, key);
	if (l->next)
		link_at(l->next, off)->prev = l->prev;
	l->prev = l->next = NULL;
}

/* mu held: lk (lost, listed) joins its key's list in lost_by_key, or is
 * counted unindexed. */
static void lost_index_add(struct lock_engine *e, struct lock *lk)
{
	if (keyed_add(&e->lost_by_key, lk->key, lk,
		      offsetof(struct lock, lost_link)))
		e->lost_unindexed++;
	else
		lk->lost_indexed = true;
}

static void lost_index_del(struct lock_engine *e, struct lock *lk)
{
	if (!lk->lost_indexed) {
		e->lost_unindexed--;
		return;
	}
	keyed_del(&e->lost_by_key, lk->key, lk,
		  offsetof(struct lock, lost_link));
	lk->lost_indexed = false;
}

/* Whether lk counts in the lost index: a lost lock, not a watcher, which
 * no caller's group ever held (lookups then read no /proc for it). */
static bool indexed_lost(const struct lock *lk, enum lock_state st)
{
	return st == LOCK_LOST && !lk->watcher;
}

void lock_int_list_add_locked(struct lock_engine *e, struct lock *lk)
{
	lk->prev = NULL;
	lk->next = e->all;
	if (e->all)
		e->all->prev = lk;
	e->all = lk;
	e->n_listed++;
	if (indexed_lost(lk, lk->state)) {
		e->n_lost_listed++;
		lost_index_add(e, lk);
	}
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
	if (indexed_lost(lk, lk->state)) {
		e->n_lost_listed--;
		lost_index_del(e, lk);
	}
	lease_index_forget_locked(e, lk);
}

/* Longest directory prefix counted in held_under (a DynamoDB key is at
 * most 2048 bytes, lockfs's at most 1024): one held deeper is not
 * counted, and its directories are then only known by their rows. */
#define HELD_UNDER_MAX 2048

/* mu held: adds d (+1 or -1) to the count of each of the first n
 * directory prefixes of dir in held_under; returns how many it changed
 * (a +1 stops at the first that finds no memory). */
static size_t held_under_add(struct lock_engine *e, const char *dir, int d,
			     size_t n)
{
	char pre[HELD_UNDER_MAX + 1];
	size_t len = strlen(dir), done = 0;

	for (size_t i = 0; i < len && done < n; i++) {
		uintptr_t c;

		if (dir[i] != '/')
			continue;
		memcpy(pre, dir, i + 1);
		pre[i + 1] = '\0';
		c = (uintptr_t)smap_get(&e->held_under, pre);
		if (d < 0 && c <= 1)
			smap_del(&e->held_under, pre);
		else if (smap_put(&e->held_under, pre, (void *)(c + d)))
			break;
		done++;
	}
	return done;
}

static size_t dir_depth(const char *dir)
{
	size_t n = 0;

	if (strlen(dir) > HELD_UNDER_MAX)
		return 0;
	for (; *dir; dir++)
		n += *dir == '/';
	return n;
}

int lock_int_by_dir_add_locked(struct lock_engine *e, struct lock *lk)
{
	size_t depth = dir_depth(lk->dir);
	size_t done = held_under_add(e, lk->dir, 1, depth);

	if (done < depth || keyed_add(&e->by_dir, lk->dir, lk,
				      offsetof(struct lock, dir_link))) {
		held_under_add(e, lk->dir, -1, done);
		return -ENOMEM;
	}
	return 0;
}

void lock_int_by_dir_del_locked(struct lock_engine *e, struct lock *lk)
{
	keyed_del(&e->by_dir, lk->dir, lk, offsetof(struct lock, dir_link));
	held_under_add(e, lk->dir, -1, dir_depth(lk->dir));
}

int lock_int_held_uid_add_locked(struct lock_engine *e, int64_t uid, int d)
{
	uintptr_t n = (uintptr_t)imap_get(&e->held_by_uid, (uint64_t)uid);

	if (d < 0 && n <= 1) {
		imap_del(&e->held_by_uid, (uint64_t)uid);
		return 0;
	}
	return imap_put(&e->held_by_uid, (uint64_t)uid, (void *)(n + d));
}

void lock_int_detach_key_locked(struct lock_engine *e, struct lock *lk)
{
	if (!lk->in_table)
		return;
	/* A newer lock of ours may hold the key already: its acquire landed
	 * after our delete did, and was answered first (lock_acquire). */
	if (smap_get(&e->by_key, lk->key) == lk)
		smap_del(&e->by_key, lk->key);
	lk->in_table = false;
	lock_int_held_uid_add_locked(e, lk->holder.uid, -1);
	lock_int_by_dir_del_locked(e, lk);
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
		lock_int_free(lk);
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
		lock_int_free(lk);
	else
		lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
}

void lock_int_note_recent_locked(struct lock_engine *e, const char *key)
{
	int64_t *t;

	if (e->cfg.recent_release_ms <= 0)
		return;
	if (e->recent.count > 4096) {
		smap_each(&e->recent, lock_int_free_recent, NULL);
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

void lock_int_forget_recent_locked(struct lock_engine *e, const char *key)
{
	free(smap_del(&e->recent, key));
}

/* mu held. The lock this mount holds for key, or NULL; a release of it in
 * flight is waited for first, so that the key reads as free once it is. */
struct lock *lock_int_find_settled_locked(struct lock_engine *e,
					  const char *key)
{
	struct lock *lk;

	while ((lk = smap_get(&e->by_key, key)) && lk->state == LOCK_RELEASING)
		pthread_cond_wait(&e->cv, &e->mu);
	if (lk && !lock_int_trusted_locked(e, lk, now_mono(e)))
		return NULL; /* its trust just ended: lost, detached */
	return lk;
}

/* mu held. */
/* The lost lock of key that group pgid (led by a process that started at
 * pgid_start; 0: unknown) has not let go of. A group number is reused: a
 * newcomer group of the same number, whose leader started at another time,
 * is not that holder. */
struct lock *lock_int_lost_first_locked(struct lock_engine *e, const char *key)
{
	if (!e->n_lost_listed)
		return NULL;
	if (e->lost_unindexed)
		return e->all; /* the walk: every lock, the caller checks */
	return smap_get(&e->lost_by_key, key);
}

struct lock *lock_int_lost_next_locked(struct lock_engine *e, struct lock *lk)
{
	return e->lost_unindexed ? lk->next : lk->lost_link.next;
}

bool lock_int_let_go_row_locked(struct lock_engine *e,
				const struct lock_record *row)
{
	struct lock *lk;

	if (row->shared || !row->rvn[0])
		return false;
	for (lk = lock_int_lost_first_locked(e, row->key); lk;
	     lk = lock_int_lost_next_locked(e, lk)) {
		if (lk->state != LOCK_LOST || !lk->dismissed ||
		    !lk->cleanup_wanted || lk->shared ||
		    strcmp(lk->key, row->key))
			continue;
		if (!strcmp(lk->rec.rvn, row->rvn))
			return true;
		/* Or a renewal of it that landed unanswered (held in the
		 * outage that lost it). */
		for (int i = 0; i < lk->n_pending; i++)
			if (!strcmp(lk->pending[i].rvn, row->rvn))
				return true;
	}
	return false;
}

struct lock *lock_int_find_lost_locked(struct lock_engine *e, const char *key,
				       int64_t pgid, uint64_t pgid_start)
{
	struct lock *lk;

	if (pgid <= 0 || !e->n_lost_listed)
		return NULL; /* the common case: nothing lost */
	for (lk = lock_int_lost_first_locked(e, key); lk;
	     lk = lock_int_lost_next_locked(e, lk))
		if (lk->state == LOCK_LOST && !lk->dismissed &&
		    lk->lost_reason != LOST_RELEASING &&
		    lk->hold == HOLD_PGRP && lk->holder.pgid == pgid &&
		    (!pgid_start || !lk->holder.pgid_start ||
		     lk->holder.pgid_start == pgid_start) &&
		    !strcmp(lk->key, key))
			return lk;
	return NULL;
}

void lock_int_pending_add_locked(struct lock *lk, const char *rvn, int64_t sent)
{
	if (!lk->pending)
		lk->pending = calloc(LOCK_PENDING_MAX, sizeof(*lk->pending));
	if (!lk->pending) {
		/* Not remembered: if that write landed, the next condition
		 * fails and the lock is taken for lost, never kept on a
		 * guess. */
		log_err(TAG, "key=%s: no memory for an unanswered write",
			lk->key);
		return;
	}
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
bool lock_int_pending_adopt_locked(struct lock *lk, const char *rvn)
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

/* mu held. Waits until no write of lk is in flight, then claims it.
 * -EIO when the lock is not held any more. */
int lock_int_begin_write_locked(struct lock_engine *e, struct lock *lk)
{
	while (lk->busy)
		pthread_cond_wait(&e->cv, &e->mu);
	if (!lock_int_trusted_locked(e, lk, now_mono(e)))
		return -EIO;
	lk->busy = true;
	return 0;
}

void lock_int_end_write_locked(struct lock_engine *e, struct lock *lk)
{
	lk->busy = false;
	lease_index_note_locked(e, lk);
	pthread_cond_broadcast(&e->cv);
}

void lock_int_set_state_locked(struct lock_engine *e, struct lock *lk,
			       enum lock_state st)
{
	bool listed = lk->prev || e->all == lk;

	if (listed && indexed_lost(lk, lk->state) && !indexed_lost(lk, st)) {
		e->n_lost_listed--;
		lost_index_del(e, lk);
	} else if (listed && !indexed_lost(lk, lk->state) &&
		   indexed_lost(lk, st)) {
		e->n_lost_listed++;
		lost_index_add(e, lk);
	}
	lk->state = st;
}

void lock_int_mark_lost_locked(struct lock_engine *e, struct lock *lk,
			       enum lost_reason why)
{
	if (lk->state == LOCK_LOST || lk->state == LOCK_RELEASED)
		return;
	lock_int_set_state_locked(e, lk, LOCK_LOST);
	lk->lost_reason = why;
	/* A row found moved (stolen) or of unknown form (downgrade) that
	 * names our live session may be ours still: other owners never take
	 * it, so it goes unless it is another's (lock_int_cleanup). */
	lk->cleanup_wanted = why == LOST_SAFE_PERIOD || why == LOST_STOPPED ||
			     ((why == LOST_STOLEN || why == LOST_DOWNGRADE) &&
			      lock_int_session_ours_locked(e, lk->rec.session));
	/* Its cleanup within a heartbeat (a session lock's next job was
	 * its monthly rewrite); for a lock whose safe period ended, not
	 * before another owner could take it anyway: a lease after its last
	 * confirmed write. The holder, told now, has until then to stop (the
	 * gap between safe_period and lease, which lockfs-run's --grace
	 * fits); deleted at once, the row gave the key away ~100 ms after
	 * the holder was told. A holder that lets go (rm, its group gone)
	 * makes it due then (release_begin). */
	if (lk->cleanup_wanted) {
		int64_t due = now_mono(e) + e->cfg.heartbeat_ms;

		if (why == LOST_SAFE_PERIOD) {
			int64_t lapse =
				lock_int_last_kept(e, lk) + e->cfg.lease_ms;

			lk->next_due_mono_ms = lapse > due ? lapse : due;
		} else if (lk->next_due_mono_ms > due) {
			lk->next_due_mono_ms = due;
		}
	}
	lk->lost_notified = why == LOST_RELEASING;
	lease_index_note_locked(e, lk);
	e->next_watch_mono_ms = 0; /* the scheduler looks at every lock */
	lock_int_wake_scheduler_locked(e); /* (and tells the acquirer) */
	if (!lk->lost_notified)
		__atomic_add_fetch(&e->n_to_notify, 1, __ATOMIC_SEQ_CST);
	lock_int_detach_key_locked(e, lk);
	if (why == LOST_RELEASING)
		return; /* not a loss: the holder let go */
	if (why == LOST_STOPPED) {
		log_info(TAG, "stopping: key=%s held by pid %lld is given up",
			 lk->key, (long long)lk->holder.pid);
		return;
	}
	metrics_inc(e->metrics, MC_LOST);
	if (log_burst_take(&e->log_lost, now_mono(e)))
		log_warn(TAG, "lost key=%s: %s", lk->key,
			 lock_lost_reason_name(why));
}

bool lock_int_trusted_locked(struct lock_engine *e, struct lock *lk,
			     int64_t now_mono_ms)
{
	if (lk->state != LOCK_HELD)
		return false;
	int64_t ok = lock_int_last_ok(e, lk);

	if (now_mono_ms - ok < e->cfg.safe_period_ms)
		return true;
	/* A lock of an ended session (its acquire was in flight as it
	 * ended) is lost to what ended it. */
	lock_int_mark_lost_locked(
		e, lk,
		lk->in_session ? lock_int_session_loss_locked(e, lk->sess_gen)
			       : LOST_SAFE_PERIOD);
	lock_int_kick_locked(e); /* the scheduler tells the acquirer */
	return false;
}

int64_t lock_trusted_ms(struct lock_engine *e, struct lock *lk)
{
	int64_t now, left = 0;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	if (lock_int_trusted_locked(e, lk, now))
		left = lock_int_safe_end(e, lk) - now;
	pthread_mutex_unlock(&e->mu);
	return left;
}

int64_t lock_trust_ends_mono_ms(struct lock_engine *e)
{
	int64_t now, end = INT64_MAX;
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	for (lk = e->all; lk; lk = lk->next) {
		int64_t t;

		if (lk->watcher || !lock_int_trusted_locked(e, lk, now))
			continue;
		t = lock_int_safe_end(e, lk);
		if (t < end)
			end = t;
	}
	pthread_mutex_unlock(&e->mu);
	return end;
}

/* mu held: the latest a write of lk may still be answered for it to count:
 * the end of its safe period, and at most the operation timeout. */
int64_t lock_int_write_deadline_locked(struct lock_engine *e, struct lock *lk,
				       int64_t max_ms)
{
	int64_t safe_end = lock_int_safe_end(e, lk);
	int64_t d = now_mono(e) + max_ms;

	return d < safe_end ? d : safe_end;
}

int lock_int_write_started(struct lock_engine *e, struct lock *lk, int rc,
			   int64_t max_ms, int64_t *deadline)
{
	*deadline = rc ? 0 : lock_int_write_deadline_locked(e, lk, max_ms);
	pthread_mutex_unlock(&e->mu);
	if (!rc)
		return 0;
	lock_int_notify_lost(e);
	return -EIO;
}

bool lock_int_adopt_landed(struct lock_engine *e, struct lock *lk,
			   const struct lock_record *cur, const char *reader,
			   char *expect, size_t len)
{
	const char *v = record_holder_version(cur, reader);
	bool landed;

	pthread_mutex_lock(&e->mu);
	landed = lock_int_pending_adopt_locked(lk, v);
	if (landed)
		text_copy(expect, len, v);
	pthread_mutex_unlock(&e->mu);
	return landed;
}

bool lock_int_may_land_late_locked(struct lock_engine *e, const struct lock *lk)
{
	return !lk->shared && lk->late_until_mono_ms > now_mono(e);
}

void lock_int_add_orphan(struct lock_engine *e, const struct lock_record *rec,
			 bool shared, bool may_land_late)
{
	struct lock *orphan = calloc(1, sizeof(*orphan));

	if (!orphan || !(orphan->key = strdup(rec->key)) ||
	    record_copy(&orphan->rec, rec)) {
		if (orphan)
			lock_int_free(orphan);
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
	orphan->watcher = true;
	orphan->cleanup_wanted = true;
	orphan->refs = 1;
	orphan->next_due_mono_ms = now_mono(e) + e->cfg.heartbeat_ms;
	if (may_land_late)
		orphan->late_until_mono_ms = now_mono(e) + LOCK_LATE_WRITE_MS;
	pthread_mutex_lock(&e->mu);
	if (lease_index_reserve_locked(e, e->n_listed + 1)) {
		pthread_mutex_unlock(&e->mu);
		lock_int_free(orphan);
		return; /* left to lapse */
	}
	lock_int_list_add_locked(e, orphan);
	lock_int_kick_locked(e);
	pthread_mutex_unlock(&e->mu);
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

bool lock_int_pgrp_alive(struct lock_engine *e, const struct lock_holder *h)
{
	return host_pgrp_alive(&e->os, h->pgid, h->pgid_start);
}

void lock_int_kick_locked(struct lock_engine *e)
{
	pthread_cond_broadcast(&e->cv);
	lock_int_wake_scheduler_locked(e);
}

void lock_int_wake_session_locked(struct lock_engine *e)
{
	pthread_cond_signal(&e->sess_cv);
}

void lock_int_wake_scheduler_locked(struct lock_engine *e)
{
	e->kicked = true;
	pthread_cond_signal(&e->sched_cv);
}

void lock_int_wake_scheduler_by_locked(struct lock_engine *e,
				       int64_t due_mono_ms)
{
	if (due_mono_ms < e->sched_wake_mono_ms)
		lock_int_wake_scheduler_locked(e);
}
