/* lock_acquire: taking a key: an exclusive acquire (one conditional
 * PutItem, a takeover of a row our observation judged lapsed or of a
 * stray row of our own session (lock_stray.c), a lost answer resolved by
 * writing the same row again), a shared one (through
 * lock_share.c), the tracking of what we took (none -> held), and the
 * downgrade of an exclusive lock to shared (held -> held shared, or lost).
 *
 * Threads: FUSE workers (and the flk wait thread). engine->mu is taken
 * around the bookkeeping, never across a store request. */
#include "lock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

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

/* An acquire whose reply never came, resolved for certain: the same row is
 * written again, on condition that there is no row or it carries our RVN,
 * so that afterwards we hold the key (whether or not the first write
 * landed) or we know another owner does. A takeover whose first write did
 * not land is tried once more. Only when DynamoDB cannot be reached at all
 * before the acquire's deadline is the outcome left open: the RVN is then
 * remembered so the lease path removes the row should it exist, rather
 * than leave it to lapse. */
static int resolve_unknown_acquire(struct lock_engine *e,
				   const struct lock_record *rec,
				   const char *takeover_rvn, int64_t deadline,
				   struct lock_record *cur, bool *has_cur)
{
	int attempt, rc = -EIO;

	for (attempt = 0; attempt < 3; attempt++) {
		record_fini(cur);
		record_init(cur);
		*has_cur = false;
		if (now_mono(e) >= deadline)
			break;
		rc = e->store->ops->put_lock(e->store, rec, rec->rvn, deadline,
					     cur, has_cur, NULL);
		if (rc == -ECANCELED && *has_cur && takeover_rvn &&
		    !strcmp(cur->rvn, takeover_rvn)) {
			/* Our takeover did not land: try it once more. */
			record_fini(cur);
			record_init(cur);
			*has_cur = false;
			rc = e->store->ops->put_lock(e->store, rec,
						     takeover_rvn, deadline,
						     cur, has_cur, NULL);
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
	lock_int_add_orphan(e, rec, false, true);
	return -EIO;
}

/* Step 1, from memory (mu taken): -EEXIST when this mount holds key
 * (*cur our row), -EIO when the acquirer's group lost key and has not let
 * go of it (a lost lock is never silently replaced under its holder). */
static int refuse_if_known(struct lock_engine *e, const char *key,
			   const struct lock_holder *h, struct lock_record *cur,
			   bool *has_cur)
{
	struct lock *lk;
	int rc;

	pthread_mutex_lock(&e->mu);
	lk = lock_int_find_settled_locked(e, key);
	if (lk) {
		rc = cur ? record_copy(cur, &lk->rec) : 0;
		if (!rc && has_cur)
			*has_cur = true;
		pthread_mutex_unlock(&e->mu);
		metrics_inc(e->metrics, MC_CONFLICTS);
		return -EEXIST;
	}
	if (lock_int_find_lost_locked(e, key, h->pgid, h->pgid_start)) {
		/* This group lost key and has not let go of it yet. */
		pthread_mutex_unlock(&e->mu);
		log_info(TAG,
			 "acquire key=%s refused: process group %lld lost "
			 "it and has not unlinked it",
			 key, (long long)h->pgid);
		return -EIO;
	}
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* Whether row is the row of a lost lock of ours that its holder let go
 * of, whose removal is due (rm, then take it again at once): trusted by
 * nobody, free to take over on its RVN. */
static bool let_go_row(struct lock_engine *e, const struct lock_record *row)
{
	bool let_go;

	pthread_mutex_lock(&e->mu);
	let_go = lock_int_let_go_row_locked(e, row);
	pthread_mutex_unlock(&e->mu);
	return let_go;
}

bool lock_row_free(struct lock_engine *e, const struct lock_record *row)
{
	return lock_share_row_free(e, row) || let_go_row(e, row);
}

/* Whether the row that refused an exclusive acquire is free to take over
 * at once: free (lock_row_free: shared with every reader gone, or ours,
 * let go of); or a stray row, naming our own live session while no lock
 * here holds it nor takes it but this acquire (lock_stray.c: nobody holds
 * it, and no other owner ever takes it). */
static bool free_at_once(struct lock_engine *e, const struct lock_record *row)
{
	if (lock_row_free(e, row))
		return true;
	if (!lock_int_stray(e, row, NULL, 1))
		return false;
	log_info(TAG,
		 "acquire key=%s: taking over a row of our own session that "
		 "no lock here holds (rvn=%s)",
		 row->key, row->rvn);
	return true;
}

/* Step 3, exclusive: one conditional PutItem (over the RVN our observation
 * judged lapsed, *takeover), once more over the RVN of a row free at once
 * (free_at_once), and a lost answer resolved. 0: we hold
 * it, *sent the send time of the write that counts, *late whether a
 * write or an attempt of one got no answer on the way (it may still
 * land); -EEXIST: another
 * owner's row (in *cur when *has); -EISDIR; other -errno (-EIO: outcome
 * unknown, an orphan removes the row). */
static int take_exclusive(struct lock_engine *e, struct lock_record *rec,
			  bool *takeover, char *expired_rvn, int64_t *sent,
			  struct lock_record *now_row, bool *has, bool *late)
{
	const char *key = rec->key;
	bool freed = false, unanswered = false;
	/* One deadline for all of it (a second write, the resolution of a
	 * lost answer): an acquire is a user's request, bounded by the op
	 * timeout (each of its writes had one of its own: 40 s in all). */
	int64_t deadline = op_deadline(e);
	int rc;

again:
	rc = e->store->ops->put_lock(e->store, rec,
				     *takeover ? expired_rvn : NULL, deadline,
				     now_row, has, &unanswered);
	if (unanswered)
		*late = true; /* an attempt may land later still */
	if (rc == -ECANCELED && *has && !strcmp(now_row->rvn, rec->rvn))
		rc = 0; /* an earlier attempt of ours landed */
	if (rc == -ECANCELED && *has && !freed && free_at_once(e, now_row)) {
		/* Taken over on the RVN we saw (a join, or a write of ours,
		 * since would have changed it). */
		freed = *takeover = true;
		text_copy(expired_rvn, RECORD_RVN_MAX, now_row->rvn);
		record_fini(now_row);
		*has = false;
		*sent = now_mono(e);
		goto again;
	}
	if (rc == -ECANCELED) {
		if (*has)
			lock_rows_judge(e, now_row, NULL);
		log_debug(TAG, "acquire key=%s: held by owner=%s", key,
			  *has && now_row->owner ? now_row->owner : "?");
		return -EEXIST;
	}
	if (rc == -EISDIR) /* a directory: nothing to observe or wait for */
		return rc;
	if (rc && rc != -ENOMEM && rc != -EACCES && rc != -ENXIO &&
	    rc != -EINVAL) {
		if (!*late) {
			/* No attempt left on a connection (refused, host
			 * unreachable): nothing of it can land. */
			log_debug(TAG, "acquire key=%s: never sent (%d)", key,
				  rc);
			return -EIO;
		}
		/* The outcome is unknown: the write may have landed. */
		rc = resolve_unknown_acquire(e, rec,
					     *takeover ? expired_rvn : NULL,
					     deadline, now_row, has);
		if (!rc)
			*late = true;
	}
	return rc;
}

/* Step 4: what a refused acquire tells its caller (the row, when known). */
static void report_conflict(struct lock_engine *e, int rc,
			    const struct lock_record *now_row, bool has,
			    struct lock_record *cur, bool *has_cur)
{
	if (rc == -EEXIST) {
		if (has && cur)
			record_copy(cur, now_row);
		if (has_cur)
			*has_cur = has;
	}
	metrics_inc(e->metrics, MC_CONFLICTS);
}

/* Step 6: tracks the row we took (none -> held): a new lock on the list
 * and in the key table, referenced by the engine and by the caller (*out).
 * rec is moved into it. -ENOMEM: we hold the row but cannot track it: it
 * is given back (the lease path removes an orphan's row or entry). */
static int track_taken(struct lock_engine *e, struct lock_record *rec,
		       const struct lock_holder *h, enum hold_mode hold,
		       bool shared, int sess_gen, int64_t sent,
		       struct lock **out)
{
	const char *key = rec->key;
	struct lock *lk = calloc(1, sizeof(*lk));
	void (*on_acquired)(void *, const char *);
	void *cb_arg;
	bool nomem;

	const char *slash = strrchr(key, '/');

	if (!lk || !(lk->key = strdup(key)) ||
	    !(lk->dir = strndup(key, slash ? (size_t)(slash - key + 1) : 0))) {
		if (lk)
			free(lk->key);
		free(lk);
		if (shared)
			lock_int_add_orphan(e, rec, true, false);
		else
			e->store->ops->delete_lock(e->store, key, rec->rvn,
						   op_deadline(e), NULL, NULL);
		return -ENOMEM;
	}
	lk->holder = *h;
	lk->hold = hold;
	lk->rec = *rec;
	record_init(rec);
	if (shared) {
		/* Our version is our entry's, not the row's RVN. Until our
		 * first renewal shows every reader, we know of ourselves. */
		lk->shared = true;
		memcpy(lk->rec.rvn, lk->rec.readers[0].v, sizeof(lk->rec.rvn));
		lk->row = calloc(1, sizeof(*lk->row));
		if (lk->row && record_copy(lk->row, &lk->rec))
			lock_int_free_row(lk);
	}
	lk->state = LOCK_HELD;
	lk->file_open = true;
	lk->last_ok_mono_ms = sent;
	lk->next_due_mono_ms = sent + e->cfg.heartbeat_ms;
	if (lk->rec.session) {
		/* Kept by the session's heartbeats: its own row is written
		 * again only to push its expiry_time on (a month). */
		lk->in_session = true;
		lk->sess_gen = sess_gen;
		lk->next_due_mono_ms = sent + lock_int_session_refresh_ms();
	}
	lk->refs = 2; /* the engine's and the caller's */

	pthread_mutex_lock(&e->mu);
	nomem = lease_index_reserve_locked(e, e->n_listed + 1) ||
		lock_int_held_uid_add_locked(e, lk->holder.uid, 1);
	if (!nomem && lock_int_by_dir_add_locked(e, lk)) {
		lock_int_held_uid_add_locked(e, lk->holder.uid, -1);
		nomem = true;
	}
	/* A lock of ours still in by_key for this key is releasing: its
	 * delete landed (ours could not have otherwise), its answer is not
	 * in yet. The key is ours now; its release leaves our entry
	 * (lock_int_detach_key_locked). Before, it took our entry with it,
	 * and the lock was held with no way to find it: flock(1)'s own
	 * O_CREAT lock could not be taken over, nor released. */
	if (!nomem && smap_put(&e->by_key, lk->key, lk)) {
		lock_int_held_uid_add_locked(e, lk->holder.uid, -1);
		lock_int_by_dir_del_locked(e, lk);
		nomem = true;
	}
	if (nomem) {
		pthread_mutex_unlock(&e->mu);
		if (shared)
			lock_int_add_orphan(e, &lk->rec, true, false);
		else
			e->store->ops->delete_lock(e->store, lk->key,
						   lk->rec.rvn, op_deadline(e),
						   NULL, NULL);
		lock_int_free(lk);
		return -ENOMEM;
	}
	lk->in_table = true;
	lock_int_list_add_locked(e, lk);
	e->n_held++;
	metrics_set_held(e->metrics, e->n_held);
	lock_int_forget_recent_locked(e, lk->key);
	on_acquired = e->cb.on_acquired;
	cb_arg = e->cb.arg;
	pthread_mutex_unlock(&e->mu);
	if (on_acquired)
		on_acquired(cb_arg, lk->key);
	*out = lk;
	return 0;
}

static int acquire(struct lock_engine *e, const char *key,
		   const struct lock_holder *h, enum hold_mode hold,
		   bool shared, const void *data, size_t data_len,
		   struct lock **out, struct lock_record *cur, bool *has_cur)
{
	struct lock_record rec, now_row;
	char expired_rvn[RECORD_RVN_MAX];
	bool takeover, has = false, late = false;
	bool taking = !shared && e->cfg.session; /* in e->taking */
	bool claimed = false; /* the row names our session (sess_gen) */
	enum lost_reason ended;
	int64_t sent, took;
	int rc, sess_gen = 0;

	if (has_cur)
		*has_cur = false;
	/* 1. Known here: held by this mount, or lost by this group. */
	rc = refuse_if_known(e, key, h, cur, has_cur);
	if (rc)
		return rc;
	/* 2. The row we write, over the RVN our observation judged lapsed
	 * (if any). */
	takeover = lock_rows_lapsed_rvn(e, key, expired_rvn);
	rc = shared ? build_shared_record(e, key, h, &rec)
		    : build_record(e, key, h, &rec);
	if (rc)
		return rc;
	if (data_len) {
		rc = record_set_data(&rec, data, data_len);
		if (rc) {
			record_fini(&rec);
			return rc;
		}
	}
	if (!shared && e->cfg.session) {
		/* Session mode: the row names the session that keeps it. */
		rc = lock_int_session_claim(e, &rec, &sess_gen);
		if (rc) {
			record_fini(&rec);
			return rc;
		}
		claimed = true;
	}
	record_init(&now_row);
	if (taking) {
		/* In flight from now until tracked (or given up), so that
		 * no row it writes is taken for a stray one meanwhile. */
		pthread_mutex_lock(&e->mu);
		rc = lock_int_taking_add_locked(e, key);
		pthread_mutex_unlock(&e->mu);
		if (rc) {
			taking = false;
			goto out;
		}
	}
	/* 3. The store's answer: one conditional write (and what it takes to
	 * learn its outcome). */
	sent = now_mono(e);
	rc = shared ? lock_share_take(e, &rec, takeover ? expired_rvn : NULL,
				      &now_row, &has)
		    : take_exclusive(e, &rec, &takeover, expired_rvn, &sent,
				     &now_row, &has, &late);
	/* 4. Refused: the caller learns the row. */
	if (rc == -EEXIST || rc == -EISDIR) {
		report_conflict(e, rc, &now_row, has, cur, has_cur);
		goto out;
	}
	if (rc) {
		char msg[LOG_ERRNO_MAX];

		log_warn(TAG, "acquire key=%s failed: %s", key,
			 log_errno(rc, msg, sizeof(msg)));
		goto out;
	}
	/* 5. Ours, unless its trust ended while the write was in flight:
	 * the session the row names ended (or lost our trust), or the write
	 * that counts was sent a safe period ago (retries). It is never
	 * handed out lost; its row goes in the background. */
	took = now_mono(e) - sent;
	if (claimed && !lock_int_session_keeps(e, sess_gen, &ended)) {
		log_warn(TAG,
			 "acquire key=%s failed: its write landed, but the "
			 "session it names no longer keeps locks (%s); its "
			 "row is removed",
			 key, lock_lost_reason_name(ended));
		rc = -EIO;
	} else if (!claimed && took >= e->cfg.safe_period_ms) {
		log_warn(TAG,
			 "acquire key=%s failed: its write was confirmed %lld "
			 "ms after it was sent, past the safe period; its row "
			 "is removed",
			 key, (long long)took);
		rc = -EIO;
	}
	if (rc) {
		lock_int_add_orphan(e, &rec, shared, late);
		goto out;
	}
	/* 6. Ours: tracked, and renewed from now on. */
	rc = track_taken(e, &rec, h, hold, shared, sess_gen, sent, out);
	if (rc)
		goto out;
	if (late) {
		/* A write of it that got no answer may land yet, after the
		 * lock is let go of: its key is looked at for a while then
		 * (lock_release.c). */
		pthread_mutex_lock(&e->mu);
		(*out)->late_until_mono_ms = now_mono(e) + LOCK_LATE_WRITE_MS;
		pthread_mutex_unlock(&e->mu);
	}
	lock_rows_forget(e, key);
	metrics_inc(e->metrics, MC_ACQUIRES);
	if (takeover)
		metrics_inc(e->metrics, MC_TAKEOVERS);
	log_debug(TAG, "acquired key=%s %s=%s%s", key,
		  shared ? "shared v" : "rvn", (*out)->rec.rvn,
		  takeover ? " (takeover)" : "");
	/* The scheduler was woken by track_taken's note only if the lock is
	 * due before it means to look. */
out:
	if (taking) {
		pthread_mutex_lock(&e->mu);
		lock_int_taking_del_locked(e, key);
		pthread_mutex_unlock(&e->mu);
	}
	record_fini(&rec);
	record_fini(&now_row);
	return rc;
}

int lock_acquire_hold(struct lock_engine *e, const char *key,
		      const struct lock_holder *h, enum hold_mode hold,
		      struct lock **out, struct lock_record *cur, bool *has_cur)
{
	return acquire(e, key, h, hold, false, NULL, 0, out, cur, has_cur);
}

int lock_acquire_data(struct lock_engine *e, const char *key,
		      const struct lock_holder *h, enum hold_mode hold,
		      const void *data, size_t len, struct lock **out)
{
	return acquire(e, key, h, hold, false, data, len, out, NULL, NULL);
}

int lock_acquire_shared(struct lock_engine *e, const char *key,
			const struct lock_holder *h, enum hold_mode hold,
			struct lock **out, struct lock_record *cur,
			bool *has_cur)
{
	return acquire(e, key, h, hold, true, NULL, 0, out, cur, has_cur);
}

int lock_acquire(struct lock_engine *e, const char *key,
		 const struct lock_holder *h, struct lock **out,
		 struct lock_record *cur, bool *has_cur)
{
	return lock_acquire_hold(e, key, h, e->cfg.hold, out, cur, has_cur);
}

int lock_downgrade(struct lock_engine *e, struct lock *lk)
{
	struct lock_record rec, cur, excl;
	char expect[RECORD_RVN_MAX];
	bool has = false, unknown = false, watch = false;
	int64_t deadline, sent;
	int attempt, rc;

	pthread_mutex_lock(&e->mu);
	rc = lock_int_begin_write_locked(e, lk);
	if (!rc && lk->shared) {
		lock_int_end_write_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	if (lock_int_write_started(e, lk, rc, e->cfg.op_timeout_ms, &deadline))
		return -EIO;
	/* The row becomes shared with our entry alone, written over our own
	 * RVN: no writer can come in between, and readers may join after. */
	record_init(&cur);
	record_init(&excl);
	rc = build_shared_record(e, lk->key, &lk->holder, &rec);
	if (rc) {
		pthread_mutex_lock(&e->mu);
		lock_int_end_write_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		return rc;
	}
	pthread_mutex_lock(&e->mu);
	rec.acquired_real_ms = lk->rec.acquired_real_ms;
	rec.mode = lk->rec.mode;
	rec.readers[0].fence = lk->rec.fence;
	rec.fence = lk->rec.fence;
	/* The writer's data stays in the row for its readers to see (no
	 * one can change it while the key is shared); the one write in
	 * flight for this lock is this one, so the data is as written. */
	if (lk->rec.has_data)
		rc = record_set_data(&rec, lk->rec.data, lk->rec.data_len);
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	pthread_mutex_unlock(&e->mu);
	sent = now_mono(e);
	for (attempt = 0; !rc && attempt < 3; attempt++) {
		record_fini(&cur);
		has = false;
		rc = e->store->ops->replace_lock(e->store, &rec, expect,
						 deadline, &cur, &has);
		if (rc == -ECANCELED && has &&
		    !strcmp(record_holder_version(&cur, e->owner),
			    rec.readers[0].v))
			rc = 0; /* an earlier attempt landed */
		if (rc == -ECANCELED && has) {
			pthread_mutex_lock(&e->mu);
			if (lock_int_pending_adopt_locked(lk, cur.rvn)) {
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
		lock_int_end_write_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		record_fini(&rec);
		record_fini(&cur);
		return rc;
	}
	if (!rc) {
		if (lock_int_may_land_late_locked(e, lk)) {
			/* An unanswered write of the exclusive acquire cannot
			 * land on the shared row, but may after its release:
			 * an orphan of the exclusive row watches for it. */
			excl = lk->rec;
			record_init(&lk->rec);
			watch = true;
			lk->late_until_mono_ms = 0;
		}
		record_fini(&lk->rec);
		lk->rec = rec;
		record_init(&rec);
		memcpy(lk->rec.rvn, lk->rec.readers[0].v, sizeof(lk->rec.rvn));
		lk->shared = true;
		lk->in_session = false; /* shared rows keep their own lease */
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
	lock_int_end_write_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	if (watch)
		lock_int_add_orphan(e, &excl, false, true);
	record_fini(&excl);
	record_fini(&rec);
	record_fini(&cur);
	if (!rc)
		log_debug(TAG, "downgraded key=%s to shared", lk->key);
	return rc ? -EIO : 0;
}
