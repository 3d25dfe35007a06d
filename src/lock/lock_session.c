/* lock_session: the holder side of session leases
 * (doc/session-leases.md): the mount's session item, created at start
 * (lock_session_start), heartbeaten once per period by the lease path's
 * session thread (lock_int_session_beat), ended at unmount; what an
 * exclusive lock taken in session mode carries (lock_int_session_claim);
 * and the synchronous proof fsync asks of one (lock_int_session_sync); an
 * acquire while no session is trusted (the moment after one was fenced)
 * waits for the next, until its deadline. A
 * heartbeat refused (fenced by another owner, or the item gone) makes
 * every lock of the session lost; one whose answer is lost leaves them
 * trusted only until the safe period after the last confirmed one ends
 * (lock_int_last_ok: by the clock, whatever any thread does).
 *
 * Threads: main (start, end), the session thread (heartbeats), FUSE
 * workers (claims, fsync). engine->mu is taken around the bookkeeping,
 * never across a store request. */
#include "lock_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG	       "session"
#define CREATE_TRIES   8
#define BEAT_MIN_MS    250
#define ROW_REFRESH_MS (30LL * 86400 * 1000)
/* An acquire between sessions: how long one wait for the next lasts, and
 * how many at most (with the op deadline, whichever ends first). */
#define SESSION_WAIT_MS	  50
#define SESSION_WAITS_MAX 400

static int64_t expiry_s(struct lock_engine *e)
{
	return now_real(e) / 1000 + RECORD_EXPIRY_PERIOD_S;
}

/* mu held: the key of a session: ".lockfs-session/<owner>" for the
 * first, then "#" and 8 random hex digits (one that follows a fenced
 * session, or a restart of a fixed owner whose last session's item is
 * still there: a dead or abandoned key is never used again). */
static void session_key_locked(struct lock_engine *e, bool first,
			       const char *rnd)
{
	if (first)
		snprintf(e->sess.key, sizeof(e->sess.key), "%s%s",
			 RECORD_SESSION_PREFIX, e->owner);
	else
		snprintf(e->sess.key, sizeof(e->sess.key), "%s%s#%.8s",
			 RECORD_SESSION_PREFIX, e->owner, rnd);
}

/* Creates a session item under a key no item has: from generation gen on
 * (an existing one is another incarnation's, or fenced). Without mu, busy
 * claimed. 0 and the session live, or -errno. */
static int create(struct lock_engine *e, int gen)
{
	char key[RECORD_SESSION_KEY_MAX + 1], rvn[LOCK_OUR_RVN_MAX];
	int64_t sent = 0;
	int i, rc = -EEXIST;

	for (i = 0; i < CREATE_TRIES && rc; i++, gen++) {
		rc = text_uuid4(rvn);
		if (rc)
			return rc;
		pthread_mutex_lock(&e->mu);
		session_key_locked(e, !gen, rvn + 28); /* random hex */
		text_copy(key, sizeof(key), e->sess.key);
		pthread_mutex_unlock(&e->mu);
		if (!record_session_key_ok(key))
			return -ENAMETOOLONG;
		sent = now_mono(e);
		rc = e->store->ops->create_session(e->store, key, e->owner, rvn,
						   e->cfg.lease_ms, expiry_s(e),
						   op_deadline(e));
		/* -EEXIST: taken; any other failure may have landed: the
		 * next try takes another key either way. */
		if (rc == -EACCES || rc == -ENXIO || rc == -EINVAL)
			break;
	}
	pthread_mutex_lock(&e->mu);
	if (!rc) {
		e->sess.gen = gen - 1;
		text_copy(e->sess.rvn, sizeof(e->sess.rvn), rvn);
		e->sess.live = true;
		e->sess.n_pending = 0;
		e->sess.last_ok_mono_ms = sent;
		e->sess.last_ok_real_ms = now_real(e);
		e->sess.next_due_mono_ms = sent + e->cfg.heartbeat_ms;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int lock_session_start(struct lock_engine *e)
{
	char why[LOG_ERRNO_MAX];
	int rc;

	if (!e->cfg.session)
		return 0;
	pthread_mutex_lock(&e->mu);
	e->sess.busy = true;
	pthread_mutex_unlock(&e->mu);
	rc = create(e, 0);
	pthread_mutex_lock(&e->mu);
	e->sess.busy = false;
	pthread_mutex_unlock(&e->mu);
	if (rc)
		log_err(TAG, "cannot create the session item %s%s: %s",
			RECORD_SESSION_PREFIX, e->owner,
			log_errno(rc, why, sizeof(why)));
	else /* debug: the mount is not in the background yet, and its
	      * line in the log says it (main.c) */
		log_debug(TAG,
			  "session %s created (one heartbeat every %lld ms)",
			  e->sess.key, (long long)e->cfg.heartbeat_ms);
	return rc;
}

void lock_session_end(struct lock_engine *e)
{
	char key[RECORD_SESSION_KEY_MAX + 1], rvn[LOCK_OUR_RVN_MAX];
	bool live;

	if (!e->cfg.session)
		return;
	pthread_mutex_lock(&e->mu);
	live = e->sess.live;
	e->sess.live = false; /* whatever happens: no lock trusts it now */
	e->sess.next_due_mono_ms = 0;
	text_copy(key, sizeof(key), e->sess.key);
	text_copy(rvn, sizeof(rvn), e->sess.rvn);
	pthread_mutex_unlock(&e->mu);
	if (live)
		e->store->ops->end_session(e->store, key, rvn, op_deadline(e));
}

/* mu held: the session ends for us: every lock it kept is lost (why;
 * told by lock_int_notify_lost), it is never beaten again, and a new
 * session is created next. Returns how many were held until now. */
static int session_drop_locked(struct lock_engine *e, enum lost_reason why)
{
	struct lock *lk;
	int n = 0;

	e->sess.ended_why[(unsigned)e->sess.gen % LOCK_SESSION_ENDS_KEPT] = why;

	e->sess.live = false;
	for (lk = e->all; lk; lk = lk->next) {
		if (lk->in_session && lk->sess_gen == e->sess.gen &&
		    (lk->state == LOCK_HELD || lk->state == LOCK_RELEASING)) {
			/* What status shows as its last renewal from now on:
			 * the session's, which kept it until here. */
			if (e->sess.last_ok_mono_ms > lk->last_ok_mono_ms)
				lk->last_ok_mono_ms = e->sess.last_ok_mono_ms;
			lock_int_mark_lost_locked(e, lk, why);
			n++;
		}
	}
	return n;
}

/* mu held: after session_drop_locked and its log line: the next session. */
static void session_next_locked(struct lock_engine *e)
{
	e->sess.gen++;
	e->sess.next_due_mono_ms = now_mono(e);
	lock_int_kick_locked(e);
	lock_int_wake_session_locked(e);
}

/* mu held: the session is fenced or gone. */
static void session_lost_locked(struct lock_engine *e, bool dead)
{
	int n = session_drop_locked(e, dead ? LOST_SESSION : LOST_SESSION_GONE);

	log_err(TAG,
		"session %s %s: every lock it kept is lost (%d still held "
		"until now); a new session follows",
		e->sess.key,
		dead ? "was fenced by another owner" : "is gone from the table",
		n);
	session_next_locked(e);
}

/* mu held: no heartbeat of the session was confirmed for a safe period,
 * so no lock of it is trusted any more: it is abandoned, never beaten
 * again, so that its version stands still and another owner fences it
 * after a lease. Every row it kept can then lapse, even one our cleanup
 * cannot remove: were it beaten again once DynamoDB answers, such a row
 * would stay held for as long as this mount runs. */
static void session_abandon_locked(struct lock_engine *e)
{
	int n = session_drop_locked(e, LOST_SAFE_PERIOD);

	log_err(TAG,
		"session %s: no heartbeat confirmed within the safe period: "
		"abandoned, its rows lapse after a lease (%d locks still "
		"trusted until now are lost with it); a new session follows",
		e->sess.key, n);
	session_next_locked(e);
}

/* mu held: whether the session trusts its locks now. */
static bool session_trusted_locked(struct lock_engine *e)
{
	return e->sess.live &&
	       now_mono(e) - e->sess.last_ok_mono_ms < e->cfg.safe_period_ms;
}

/* mu held: rvn is a heartbeat of ours whose answer was lost: it landed. */
static bool adopt_pending_locked(struct lock_engine *e, const char *rvn)
{
	for (int i = 0; i < e->sess.n_pending; i++) {
		if (strcmp(e->sess.pending[i].rvn, rvn))
			continue;
		text_copy(e->sess.rvn, sizeof(e->sess.rvn), rvn);
		if (e->sess.pending[i].sent_mono_ms > e->sess.last_ok_mono_ms)
			e->sess.last_ok_mono_ms =
				e->sess.pending[i].sent_mono_ms;
		e->sess.n_pending = 0;
		return true;
	}
	return false;
}

static void pending_add_locked(struct lock_engine *e, const char *rvn,
			       int64_t sent)
{
	if (e->sess.n_pending == LOCK_PENDING_MAX) {
		memmove(&e->sess.pending[0], &e->sess.pending[1],
			sizeof(e->sess.pending[0]) * (LOCK_PENDING_MAX - 1));
		e->sess.n_pending--;
	}
	text_copy(e->sess.pending[e->sess.n_pending].rvn,
		  sizeof(e->sess.pending[0].rvn), rvn);
	e->sess.pending[e->sess.n_pending++].sent_mono_ms = sent;
}

/* One heartbeat of the session (busy claimed by the caller, mu not held):
 * 0 confirmed, -ECANCELED refused (fenced or gone: every lock lost),
 * other -errno unknown (retried soon; trust runs out by the clock). */
static int beat(struct lock_engine *e)
{
	char key[RECORD_SESSION_KEY_MAX + 1], expect[LOCK_OUR_RVN_MAX];
	char next[LOCK_OUR_RVN_MAX], why[LOG_ERRNO_MAX], left[96];
	struct session_record cur;
	int64_t sent = 0, sent_real = 0, deadline, t = e->cfg.heartbeat_ms;
	bool has = false, dead = false;
	int attempt, rc = -EIO;

	pthread_mutex_lock(&e->mu);
	text_copy(key, sizeof(key), e->sess.key);
	text_copy(expect, sizeof(expect), e->sess.rvn);
	pthread_mutex_unlock(&e->mu);
	for (attempt = 0; attempt < 2; attempt++) {
		rc = text_uuid4(next);
		if (rc)
			break;
		sent = now_mono(e);
		sent_real = now_real(e);
		deadline = sent + (t > BEAT_MIN_MS ? t : BEAT_MIN_MS);
		has = false;
		rc = e->store->ops->beat_session(e->store, key, expect, next,
						 expiry_s(e), sent_real,
						 deadline, &cur, &has);
		if (rc == -ECANCELED && has && !cur.dead &&
		    !strcmp(cur.rvn, next))
			rc = 0; /* sent again after it landed */
		if (rc != -ECANCELED)
			break;
		dead = has && cur.dead;
		pthread_mutex_lock(&e->mu);
		if (has && !cur.dead && adopt_pending_locked(e, cur.rvn)) {
			text_copy(expect, sizeof(expect), cur.rvn);
			pthread_mutex_unlock(&e->mu);
			continue; /* an earlier one landed after all */
		}
		pthread_mutex_unlock(&e->mu);
		break;
	}
	/* The table is gone, and the session item with it: as an item
	 * gone (every lock lost now, not at the end of the safe period). */
	if (rc == -ENXIO)
		rc = -ECANCELED;
	pthread_mutex_lock(&e->mu);
	if (!rc) {
		text_copy(e->sess.rvn, sizeof(e->sess.rvn), next);
		e->sess.n_pending = 0;
		if (sent > e->sess.last_ok_mono_ms) {
			e->sess.last_ok_mono_ms = sent;
			e->sess.last_ok_real_ms = sent_real;
		}
		e->sess.next_due_mono_ms = sent + e->cfg.heartbeat_ms;
		e->next_watch_mono_ms = 0; /* safe periods end later now */
		metrics_inc(e->metrics, MC_HEARTBEATS_OK);
	} else if (rc == -ECANCELED) {
		session_lost_locked(e, dead);
		metrics_inc(e->metrics, MC_HEARTBEATS_FAILED);
	} else {
		pending_add_locked(e, next, sent);
		e->sess.next_due_mono_ms =
			now_mono(e) + lock_int_beat_first_retry_ms(e);
		metrics_inc(e->metrics, MC_HEARTBEATS_FAILED);
		log_warn(TAG, "heartbeat of session %s failed: %s; %s", key,
			 log_errno(rc, why, sizeof(why)),
			 lock_int_safe_left(
				 e->sess.last_ok_mono_ms +
					 e->cfg.safe_period_ms - now_mono(e),
				 "its locks are", left, sizeof(left)));
		if (!session_trusted_locked(e))
			session_abandon_locked(e);
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

void lock_int_session_beat(struct lock_engine *e)
{
	bool live;
	int gen;

	pthread_mutex_lock(&e->mu);
	live = e->sess.live;
	gen = e->sess.gen;
	pthread_mutex_unlock(&e->mu);
	if (live) {
		beat(e);
	} else if (create(e, gen)) {
		pthread_mutex_lock(&e->mu);
		e->sess.next_due_mono_ms = now_mono(e) + e->cfg.heartbeat_ms;
		pthread_mutex_unlock(&e->mu);
	} else {
		log_info(TAG, "session %s created", e->sess.key);
	}
	pthread_mutex_lock(&e->mu);
	e->sess.busy = false;
	pthread_cond_broadcast(&e->cv);
	lock_int_wake_session_locked(e); /* when made by another thread */
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
}

/* mu held: waits, until the acquire's deadline, for a session this mount
 * trusts: the one that follows a fenced session (created by the session
 * thread at once), or the current one once a heartbeat is confirmed
 * again. The session thread broadcasts e->cv after each heartbeat or
 * creation; each wait is also bounded in real time, so that the loop ends
 * (SESSION_WAITS_MAX waits) whatever the engine's clock does. */
static bool wait_for_session_locked(struct lock_engine *e)
{
	int64_t deadline = op_deadline(e);
	int waits = 0;

	while (!session_trusted_locked(e) && !e->stopping &&
	       now_mono(e) < deadline && waits++ < SESSION_WAITS_MAX) {
		struct timespec ts;

		clk_mono_timespec(clk_sys_mono_ms() + SESSION_WAIT_MS, &ts);
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	}
	return session_trusted_locked(e);
}

enum lost_reason lock_int_session_loss_locked(const struct lock_engine *e,
					      int gen)
{
	if (gen == e->sess.gen)
		return LOST_SAFE_PERIOD;
	return e->sess.ended_why[(unsigned)gen % LOCK_SESSION_ENDS_KEPT];
}

bool lock_int_session_keeps(struct lock_engine *e, int gen,
			    enum lost_reason *why)
{
	bool keeps;

	pthread_mutex_lock(&e->mu);
	keeps = gen == e->sess.gen && session_trusted_locked(e);
	if (!keeps)
		*why = lock_int_session_loss_locked(e, gen);
	pthread_mutex_unlock(&e->mu);
	return keeps;
}

int lock_int_session_claim(struct lock_engine *e, struct lock_record *rec,
			   int *gen)
{
	int rc = 0;

	pthread_mutex_lock(&e->mu);
	if (!wait_for_session_locked(e))
		rc = -EIO; /* no session trusted now: nothing to hold by */
	else
		rc = record_set_str(&rec->session, e->sess.key);
	*gen = e->sess.gen;
	pthread_mutex_unlock(&e->mu);
	if (rc == -EIO)
		log_warn(TAG,
			 "acquire key=%s refused: no live session (none "
			 "confirmed within the safe period, nor a new one "
			 "created, before the acquire's deadline)",
			 rec->key);
	if (rc)
		return rc;
	rec->lease_ms = RECORD_SESSION_ROW_LEASE_MS;
	rec->expiry_real_s =
		(now_real(e) + RECORD_SESSION_ROW_LEASE_MS) / 1000 +
		RECORD_EXPIRY_PERIOD_S;
	return 0;
}

int64_t lock_int_session_refresh_ms(void)
{
	return ROW_REFRESH_MS;
}

int lock_int_session_sync(struct lock_engine *e, struct lock *lk)
{
	struct lock_record row;
	int64_t deadline;
	int rc;

	/* 1. A heartbeat sent now (after any in flight). */
	pthread_mutex_lock(&e->mu);
	while (e->sess.busy)
		pthread_cond_wait(&e->cv, &e->mu);
	if (!e->sess.live) {
		pthread_mutex_unlock(&e->mu);
		return -EIO;
	}
	e->sess.busy = true;
	pthread_mutex_unlock(&e->mu);
	rc = beat(e);
	pthread_mutex_lock(&e->mu);
	e->sess.busy = false;
	pthread_cond_broadcast(&e->cv);
	lock_int_wake_session_locked(e);
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	if (rc)
		return -EIO;
	/* 2. Our row still carries our RVN, read with the lock claimed (no
	 * write of ours moves it meanwhile). A version of a write of ours
	 * whose answer was lost is ours too: that write landed. */
	pthread_mutex_lock(&e->mu);
	rc = lock_int_begin_write_locked(e, lk);
	if (lock_int_write_started(e, lk, rc, e->cfg.op_timeout_ms, &deadline))
		return -EIO;
	record_init(&row);
	rc = lock_rows_get(e, lk->key, &row);
	if (rc == -ENOENT)
		rc = -ESTALE;
	pthread_mutex_lock(&e->mu);
	if (!rc && strcmp(row.rvn, lk->rec.rvn) &&
	    !lock_int_pending_adopt_locked(lk, row.rvn))
		rc = -ESTALE;
	lock_int_end_write_locked(e, lk);
	if (rc == -ESTALE)
		lock_int_mark_lost_locked(e, lk, LOST_STOLEN);
	if (!rc && !lock_int_trusted_locked(e, lk, now_mono(e)))
		rc = -EIO;
	pthread_mutex_unlock(&e->mu);
	record_fini(&row);
	lock_int_notify_lost(e);
	return rc ? -EIO : 0;
}

void lock_session_info(struct lock_engine *e, struct lock_session_info *out)
{
	int64_t now = now_mono(e);

	memset(out, 0, sizeof(*out));
	out->on = e->cfg.session;
	if (!out->on)
		return;
	pthread_mutex_lock(&e->mu);
	out->live = session_trusted_locked(e);
	text_copy(out->key, sizeof(out->key), e->sess.key);
	out->renewed_ago_ms = now - e->sess.last_ok_mono_ms;
	pthread_mutex_unlock(&e->mu);
}
