/* lock_release: giving keys back: a release (held -> releasing ->
 * released, or lost when not confirmed), letting go of a lost lock, the
 * cleanup of a lost lock's row by the lease path (in session mode, for as
 * long as the row names our live session), with a row of ours moved on
 * by a write we lost track of deleted on its new version (lock_stray.c),
 * and the release of every lock when the daemon stops (held -> lost,
 * stopped, then the rows go, many at once, for at most an operation
 * timeout).
 *
 * Threads: FUSE workers (release, unlink), lease workers (automatic
 * releases, cleanups), main (stop) and the threads it starts for it. engine->mu
 * is taken around the bookkeeping, never across a store request. */
#include "lock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

/* The cleanup of a lost lock's row: tries at the heartbeat's pace; past
 * CLEANUP_TRIES, per-lock rows are left to lapse by observation, but a
 * row naming our live session never lapses while we run, so its cleanup
 * goes on, each wait twice the last, up to a lease. */
#define CLEANUP_TRIES 20
/* A refused delete whose row, read back, is a stray row of ours
 * (lock_stray.c): deleted on the version read, this many times at most. */
#define STRAY_TRIES 3

/* Deletes the row if it still carries one of our RVNs (or, exclusive and
 * marked by a waiting mount, turns it into that mount's reservation:
 * doc/fair-handoff.md), or if, moved on by a write of ours whose answer
 * was lost, it is a stray row of our own session: deleted on the version
 * read back. Returns 0 when the row is not ours any more (deleted now,
 * gone, or someone else's: *stolen says which, and *gone, when not NULL,
 * whether it was gone already), -errno when DynamoDB could not be asked
 * (-EAGAIN: a stray row that kept moving). Busy claimed. */
static int delete_ours(struct lock_engine *e, struct lock *lk, int64_t deadline,
		       bool *stolen, bool *gone)
{
	char expect[RECORD_RVN_MAX], row_rvn[RECORD_RVN_MAX];
	const char *reader;
	struct lock_record cur;
	bool has = false;
	int attempt, strays = 0, rc = 0;

	*stolen = false;
	if (gone)
		*gone = false;
	pthread_mutex_lock(&e->mu);
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	reader = lk->shared ? e->owner : NULL;
	pthread_mutex_unlock(&e->mu);
	record_init(&cur);
	for (attempt = 0; attempt < 2 + strays; attempt++) {
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
			/* Deleted, or reserved for the mount marked next
			 * (lock_fair.c): not ours either way. */
			rc = lock_fair_release(e, lk->key, expect, deadline,
					       &cur, &has);
		}
		if (rc != -ECANCELED)
			break;
		rc = 0;
		if (!has || (reader && !record_reader_find(&cur, reader))) {
			if (gone) /* deleted by our earlier attempt, or
				   * expired (or, shared, our entry) */
				*gone = true;
			break;
		}
		if (lock_int_adopt_landed(e, lk, &cur, reader, expect,
					  sizeof(expect)))
			continue;
		if (!reader && lock_int_stray(e, &cur, lk, 0)) {
			/* Moved by a write of ours we lost track of: still
			 * naming our session, held by no lock here. */
			rc = -EAGAIN; /* it keeps moving: tried again later */
			if (strays++ == STRAY_TRIES)
				break;
			log_info(TAG,
				 "key=%s: our row moved on (rvn=%s, a write of "
				 "ours whose answer was lost): deleting it on "
				 "that version",
				 lk->key, cur.rvn);
			text_copy(expect, sizeof(expect), cur.rvn);
			continue;
		}
		*stolen = true;
		break;
	}
	record_fini(&cur);
	return rc;
}

/* A lost lock is let go of by its acquirer (unlink, close, stop):
 * nothing to give back but our row, if it is still there (mu held on
 * entry, dropped on return). Stopping counts an unconfirmed delete of a
 * lock held until then as not released. */
static int let_go_of_lost(struct lock_engine *e, struct lock *lk)
{
	bool want = lk->cleanup_wanted;
	bool stopped = lk->lost_reason == LOST_STOPPED;
	bool stolen = false, watch;
	int rc = 0;

	lk->dismissed = true;
	lk->cleanup_wanted = false;
	if (want)
		lk->busy = true;
	pthread_mutex_unlock(&e->mu);
	if (want)
		rc = delete_ours(e, lk, op_deadline(e), &stolen, NULL);
	pthread_mutex_lock(&e->mu);
	if (want) {
		if (rc)
			lk->cleanup_wanted = true;
		lock_int_end_write_locked(e, lk);
	}
	/* A write of its acquire that got no answer may land yet: as at a
	 * release, an orphan looks at the key for a while, unless the
	 * cleanup still to come does (look_again_later). */
	watch = !stopped && !lk->cleanup_wanted &&
		lock_int_may_land_late_locked(e, lk);
	lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	if (watch)
		lock_int_add_orphan(e, &lk->rec, false, true);
	return stopped ? rc : 0;
}

/* releasing -> lost (release not confirmed), mu held on entry, dropped on
 * return: the delete may have landed, so the lock is never believed in
 * again; its row, if still ours, goes when DynamoDB answers again. */
static int release_unconfirmed(struct lock_engine *e, struct lock *lk, int rc)
{
	char why[LOG_ERRNO_MAX];

	lock_int_set_state_locked(e, lk, LOCK_HELD);
	lock_int_mark_lost_locked(e, lk, LOST_RELEASING);
	lk->cleanup_wanted = true;
	lk->lost_notified = true; /* the acquirer is letting go */
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

/* releasing -> released, mu held on entry, dropped on return. */
static void released(struct lock_engine *e, struct lock *lk, bool stolen,
		     bool automatic)
{
	/* A write of its acquire that got no answer may land yet: an orphan
	 * looks at the key for a while (look_again_later). */
	bool watch = lock_int_may_land_late_locked(e, lk);

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
	lock_int_set_state_locked(e, lk, LOCK_RELEASED);
	lock_int_detach_key_locked(e, lk);
	/* Free now, as lookups here may take it: not a share we left,
	 * whose row other mounts' readers may still hold (a lookup said
	 * ENOENT for a second while their share was alive), nor a key a
	 * newer lock of ours took meanwhile. */
	if (!lk->shared && !smap_get(&e->by_key, lk->key))
		lock_int_note_recent_locked(e, lk->key);
	lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	if (watch)
		lock_int_add_orphan(e, &lk->rec, false, true);
	lock_rows_forget(e, lk->key);
	metrics_inc(e->metrics, automatic ? MC_AUTO_RELEASES : MC_RELEASES);
	log_debug(TAG, "released key=%s%s", lk->key,
		  automatic ? " (holder gone)" : "");
	if (automatic && e->cb.on_released)
		e->cb.on_released(e->cb.arg, lk->key);
}

/* Steps 1 and 2 of a release: after any write of the lock in flight, held
 * -> releasing (the key reads as busy to this mount until step 3). 1: the
 * delete is to be made (release_finish); 0 or -errno: nothing more to do
 * (already released, or a lost lock let go of). */
static int release_begin(struct lock_engine *e, struct lock *lk)
{
	pthread_mutex_lock(&e->mu);
	/* A lost lock whose row's cleanup is in flight, or has failed
	 * before (DynamoDB not answering, as when it was lost): let go of
	 * now, its cleanup going on in the background. Its holder's rm
	 * waited for that request, then made its own, an operation timeout
	 * each; and the background cleanup ran out of tries meanwhile. */
	if (lk->state == LOCK_LOST && lk->lost_reason != LOST_STOPPED &&
	    lk->cleanup_wanted &&
	    (lk->busy || lk->cleanup_tries > 0 ||
	     lk->lost_reason == LOST_SAFE_PERIOD)) {
		/* (Lost to failed renewals, DynamoDB is likely out of reach:
		 * its cleanup, kept back until the lease ends while the
		 * holder might still run, is due now that it let go.) */
		if (!lk->busy && lk->next_due_mono_ms > now_mono(e)) {
			lk->next_due_mono_ms = now_mono(e);
			lease_index_note_locked(e, lk);
			lock_int_kick_locked(e);
		}
		lk->dismissed = true;
		lock_int_retire_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	/* 1. After any write of it in flight. */
	while (lk->busy)
		pthread_cond_wait(&e->cv, &e->mu);
	if (lk->state == LOCK_RELEASED) {
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	if (lk->state == LOCK_LOST)
		return let_go_of_lost(e, lk);
	/* 2. held -> releasing: one conditional delete (or a reader's
	 * leave) on our RVN, made by release_finish. */
	lock_int_set_state_locked(e, lk, LOCK_RELEASING);
	lk->busy = true;
	pthread_mutex_unlock(&e->mu);
	return 1;
}

/* Step 3: the delete, then releasing -> released, or lost when not
 * confirmed. */
static int release_finish(struct lock_engine *e, struct lock *lk,
			  bool automatic)
{
	bool stolen = false;
	int rc = delete_ours(e, lk, op_deadline(e), &stolen, NULL);

	pthread_mutex_lock(&e->mu);
	lock_int_end_write_locked(e, lk);
	if (rc)
		return release_unconfirmed(e, lk, rc);
	released(e, lk, stolen, automatic);
	return 0;
}

int lock_int_release(struct lock_engine *e, struct lock *lk, bool automatic)
{
	int rc = release_begin(e, lk);

	return rc == 1 ? release_finish(e, lk, automatic) : rc;
}

int lock_release(struct lock_engine *e, struct lock *lk)
{
	return lock_int_release(e, lk, false);
}

int lock_release_begin(struct lock_engine *e, struct lock *lk)
{
	return release_begin(e, lk);
}

int lock_release_finish(struct lock_engine *e, struct lock *lk)
{
	return release_finish(e, lk, false);
}

/* A heartbeat doubled n times, up to a lease: the waits of a cleanup
 * past CLEANUP_TRIES, and of the looks at a key a late write may reach. */
static int64_t doubled_wait(const struct lock_engine *e, int n)
{
	int64_t hb = e->cfg.heartbeat_ms > 0 ? e->cfg.heartbeat_ms : 1;
	int64_t cap = e->cfg.lease_ms > hb ? e->cfg.lease_ms : hb;
	int64_t wait = hb;

	while (n-- > 0 && wait < cap)
		wait *= 2;
	return wait < cap ? wait : cap;
}

/* mu held: how long the cleanup of lk waits before its next try: a
 * heartbeat, then (past CLEANUP_TRIES) twice the last wait, up to a
 * lease. */
static int64_t cleanup_wait(const struct lock_engine *e, const struct lock *lk)
{
	return doubled_wait(e, lk->cleanup_tries - CLEANUP_TRIES + 1);
}

/* mu held: whether lk, whose cleanup just succeeded (its row deleted,
 * gone, or another owner's), looks at its key again later, and if so
 * when: an orphan of an acquire whose write, or one of its attempts, may
 * still land (lock_int_add_orphan). Had one landed after the look, the
 * row would name us while no lock of ours holds it, and in session mode
 * other owners would respect it for as long as the mount ran. */
static bool look_again_later(const struct lock_engine *e, struct lock *lk)
{
	int64_t now = now_mono(e);

	if (now >= lk->late_until_mono_ms)
		return false;
	lk->next_due_mono_ms = now + doubled_wait(e, lk->late_looks++);
	return true;
}

void lock_int_cleanup(struct lock_engine *e, struct lock *lk)
{
	bool stolen, gone;
	int rc;

	pthread_mutex_lock(&e->mu);
	if (lk->busy || !lk->cleanup_wanted) {
		pthread_mutex_unlock(&e->mu);
		return;
	}
	lk->busy = true;
	pthread_mutex_unlock(&e->mu);
	rc = delete_ours(e, lk, now_mono(e) + e->cfg.heartbeat_ms, &stolen,
			 &gone);
	pthread_mutex_lock(&e->mu);
	lock_int_end_write_locked(e, lk);
	if (!rc)
		lk->cleanup_wanted = look_again_later(e, lk);
	else if (++lk->cleanup_tries < CLEANUP_TRIES ||
		 lock_int_session_ours_locked(e, lk->rec.session))
		lk->next_due_mono_ms = now_mono(e) + cleanup_wait(e, lk);
	else
		lk->cleanup_wanted = false;
	lock_int_retire_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	if (!rc && !stolen && !gone &&
	    log_burst_take(&e->log_cleaned, now_mono(e)))
		log_info(TAG, "lost key=%s: removed our stale row", lk->key);
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

/* The releases of lock_release_all: RELEASE_ALL_THREADS at a time, none
 * started once a whole op_timeout_ms has gone since the first (a row not
 * deleted by then lapses after its lease, as when DynamoDB cannot be
 * reached at all). */
#define RELEASE_ALL_THREADS 16

struct release_all {
	struct lock_engine *e;
	struct lock **todo;
	size_t n;
	size_t next;   /* mu: the next of todo to release */
	int failed;    /* mu */
	int64_t until; /* no release starts after this (our clock) */
};

static void *release_some(void *arg)
{
	struct release_all *ra = arg;
	struct lock_engine *e = ra->e;

	for (;;) {
		struct lock *lk;
		bool late;
		int rc;

		pthread_mutex_lock(&e->mu);
		late = now_mono(e) >= ra->until;
		if (ra->next >= ra->n || late) {
			if (late)
				ra->failed += (int)(ra->n - ra->next);
			ra->next = ra->n;
			pthread_mutex_unlock(&e->mu);
			return NULL;
		}
		lk = ra->todo[ra->next++];
		pthread_mutex_unlock(&e->mu);
		rc = lock_int_release(e, lk, false);
		/* Released, or lost if DynamoDB could not confirm it: either
		 * way, not picked again. */
		pthread_mutex_lock(&e->mu);
		lk->cleanup_wanted = false;
		ra->failed += rc != 0;
		pthread_mutex_unlock(&e->mu);
	}
}

static bool to_release(const struct lock *lk)
{
	return lk->state == LOCK_HELD ||
	       (lk->state == LOCK_LOST && lk->cleanup_wanted);
}

/* mu held: the locks still to give back, referenced, in a new array of
 * *n; NULL when there are none (*n 0) or no memory for it (*n how many
 * there are). */
static struct lock **to_release_locked(struct lock_engine *e, size_t *n)
{
	struct lock **todo, *lk;

	*n = 0;
	for (lk = e->all; lk; lk = lk->next)
		*n += to_release(lk);
	todo = *n ? calloc(*n, sizeof(*todo)) : NULL;
	if (!todo)
		return NULL;
	*n = 0;
	for (lk = e->all; lk; lk = lk->next) {
		if (to_release(lk)) {
			lock_ref(lk);
			todo[(*n)++] = lk;
		}
	}
	return todo;
}

int lock_release_all(struct lock_engine *e)
{
	struct release_all ra = { .e = e };
	pthread_t t[RELEASE_ALL_THREADS];
	int started = 0;

	stop_all_held(e);
	pthread_mutex_lock(&e->mu);
	ra.todo = to_release_locked(e, &ra.n);
	ra.until = now_mono(e) + e->cfg.op_timeout_ms;
	pthread_mutex_unlock(&e->mu);
	if (!ra.todo)
		return (int)ra.n; /* no memory: they lapse after their lease */
	/* Every release waits one round trip: many in flight, so that a
	 * mount holding thousands stops in seconds, not one round trip
	 * after another. */
	while (started < RELEASE_ALL_THREADS && (size_t)started < ra.n &&
	       !pthread_create(&t[started], NULL, release_some, &ra))
		started++;
	release_some(&ra); /* this thread too */
	while (started > 0)
		pthread_join(t[--started], NULL);
	for (size_t i = 0; i < ra.n; i++)
		lock_unref(e, ra.todo[i]);
	free(ra.todo);
	return ra.failed;
}
