/* lock_renew: the writes that renew a held lock: the lease path's
 * heartbeat, a synchronous renewal (fsync, touch), a data write, and the
 * fence; each is one conditional UpdateItem on our RVN (held -> held, or
 * held -> lost when the row is another's), serialised with every other
 * write of the lock by its busy claim.
 *
 * Threads: lease workers (heartbeats), FUSE workers (the rest). engine->mu
 * is taken around the bookkeeping, never across a store request. */
#include "lock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "text.h"

#define TAG "lock"

/* Sends a renewal (busy claimed by the caller, mu not held). Returns 0 when
 * the write is confirmed ours, -ESTALE when the row is someone else's (or
 * gone), other -errno when the outcome is unknown. settle: a caller waits
 * for this write (a data write, a fence, an explicit renewal), so one
 * whose outcome is unknown (store_err_transient: no answer, or none that
 * could be read) is sent once more, conditioned on the same version,
 * while the deadline allows: if the first landed, the second is
 * refused with the first's version on the row, which is adopted as ours
 * (it was remembered as unanswered), and written again; if it did not,
 * the second lands (and the first, should it arrive late, is refused).
 * Heartbeats do not settle: the lease path tries them again on its own
 * schedule, and the next one adopts a landed write the same way. */
static int write_renewal(struct lock_engine *e, struct lock *lk,
			 struct lock_renewal *rn, int64_t deadline, bool settle)
{
	char expect[RECORD_RVN_MAX], next_rvn[RECORD_RVN_MAX];
	char row_rvn[RECORD_RVN_MAX];
	const char *reader;
	struct lock_record cur;
	int64_t sent = 0;
	bool has = false, unsettled = false;
	int attempt, rc = -EIO;

	pthread_mutex_lock(&e->mu);
	memcpy(expect, lk->rec.rvn, sizeof(expect));
	/* Held shared, our version is our entry's; the row's RVN moves on
	 * every reader's write, so that other clients see it renewed. */
	reader = lk->shared ? e->owner : NULL;
	pthread_mutex_unlock(&e->mu);
	record_init(&cur);
	for (attempt = 0; attempt < 3; attempt++) {
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
		if (settle && !unsettled && store_err_transient(rc) &&
		    now_mono(e) < deadline) {
			unsettled = true;
			pthread_mutex_lock(&e->mu);
			lock_int_pending_add_locked(lk, next_rvn, sent);
			pthread_mutex_unlock(&e->mu);
			continue;
		}
		if (rc != -ECANCELED)
			break;
		if (has && lock_int_adopt_landed(e, lk, &cur, reader, expect,
						 sizeof(expect)))
			continue; /* an earlier write of ours landed after all
				   */
		rc = -ESTALE;
		break;
	}
	if (rc == -ENXIO) {
		/* The table is gone (ResourceNotFoundException): no row of
		 * ours is left, a definite answer as a refusal is. Lost now,
		 * not at the end of the safe period: a table made again
		 * meanwhile lets other owners take the key at once. */
		log_warn(TAG, "key=%s: the table is gone: the lock is lost",
			 lk->key);
		rc = -ESTALE;
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
		lock_int_pending_add_locked(lk, next_rvn, sent);
	}
	pthread_mutex_unlock(&e->mu);
	record_fini(&cur);
	return rc;
}

/* lk's busy claim is held (in_session changes only under it). */
static void fill_renewal(struct lock_engine *e, const struct lock *lk,
			 struct lock_renewal *rn)
{
	int64_t real_ms = now_real(e);

	memset(rn, 0, sizeof(*rn));
	rn->expiry_real_s = real_ms / 1000 + RECORD_EXPIRY_PERIOD_S;
	if (lk->in_session) /* a session row: never TTL'd while held */
		rn->expiry_real_s += RECORD_SESSION_ROW_LEASE_MS / 1000;
	rn->heartbeat_real_ms = real_ms;
}

/* mu held: a failed heartbeat of lk in the log (a few of them a window:
 * an outage fails every lock's at once, see log_burst). */
static void say_beat_failed(struct lock_engine *e, const struct lock *lk,
			    int rc)
{
	char why[LOG_ERRNO_MAX], left[96];

	if (!log_burst_take(&e->log_beats, now_mono(e)))
		return;
	log_warn(TAG, "heartbeat key=%s failed: %s; %s", lk->key,
		 log_errno(rc, why, sizeof(why)),
		 lock_int_safe_left(lock_int_last_ok(e, lk) +
					    e->cfg.safe_period_ms - now_mono(e),
				    "lock", left, sizeof(left)));
}

/* mu held: the bookkeeping after a renewal of any kind. */
static void after_renewal(struct lock_engine *e, struct lock *lk, int rc)
{
	if (rc == 0) {
		lk->beat_failures = 0;
		/* A release asked for meanwhile (its keeper went away while
		 * the renewal was in flight) stays due now. */
		if (lk->state == LOCK_HELD && !lk->release_wanted)
			lk->next_due_mono_ms =
				lk->last_ok_mono_ms +
				(lk->in_session ? lock_int_session_refresh_ms()
						: e->cfg.heartbeat_ms);
	} else if (rc == -ESTALE) {
		lock_int_mark_lost_locked(e, lk, LOST_STOLEN);
	}
}

/* The end of a write begun with lock_int_begin_write_locked that renewed
 * lk (rc, its answer): the claim let go of, the bookkeeping, and -EIO for
 * a lock the clock no longer trusts; a fence, when one was written, known
 * to be read. Takes mu; tells of losses. */
static int end_renewal(struct lock_engine *e, struct lock *lk, int rc,
		       bool fence)
{
	pthread_mutex_lock(&e->mu);
	lock_int_end_write_locked(e, lk);
	after_renewal(e, lk, rc);
	if (!rc && !lock_int_trusted_locked(e, lk, now_mono(e)))
		rc = -EIO;
	if (!rc && fence)
		lk->fence_read = true; /* a reader's may be 0: none yet */
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	return rc;
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

/* mu held: a renewal that took ms is counted in the average (the last
 * eight or so weigh most); one that failed only when it took longer than
 * the average: cut at its deadline, it says only that an answer takes at
 * least that long (the ones sent with little trust left would else bring
 * the average below the round trip). */
static void note_beat_time_locked(struct lock_engine *e, int64_t ms, int rc)
{
	if (ms < 0)
		ms = 0;
	if (rc && ms <= e->beat_ms_avg)
		return;
	e->beat_ms_avg =
		e->beat_ms_avg ? (e->beat_ms_avg * 7 + ms + 4) / 8 : ms + 1;
}

/* How long after its failures-th failure in a row (0: the first) a
 * heartbeat is tried again, with trust_left ms of trust left: a quarter of
 * a heartbeat (100 ms to 1 s), then twice as long each time, up to a
 * heartbeat, so that a store that refuses (throttles) or does not answer
 * is not asked faster than the locks need (the calls' own retries are
 * bounded by the client's retry quota, retry_quota.h); but never more
 * than half the trust left, down to that first wait, so that the tries
 * close in on the end of the safe period and a store back before it
 * finds the lock still renewed in time. */
int64_t lock_int_beat_first_retry_ms(const struct lock_engine *e)
{
	int64_t first = e->cfg.heartbeat_ms / 4;

	return first < 100 ? 100 : first > 1000 ? 1000 : first;
}

static int64_t beat_retry_ms(const struct lock_engine *e, int failures,
			     int64_t trust_left)
{
	int64_t beat = e->cfg.heartbeat_ms;
	int64_t first = lock_int_beat_first_retry_ms(e), retry = first;

	for (; failures > 0 && retry < beat; failures--)
		retry *= 2;
	/* Never past a heartbeat, unless that is under the 100 ms floor. */
	if (retry > beat && beat >= first)
		retry = beat;
	if (retry > trust_left / 2)
		retry = trust_left / 2 > first ? trust_left / 2 : first;
	return retry;
}

int lock_int_heartbeat(struct lock_engine *e, struct lock *lk)
{
	struct lock_renewal rn;
	int64_t deadline, now, took;
	bool full;
	int rc;

	pthread_mutex_lock(&e->mu);
	now = now_mono(e);
	if (lk->busy || !lock_int_trusted_locked(e, lk, now)) {
		pthread_mutex_unlock(&e->mu);
		lock_int_notify_lost(e);
		return 0;
	}
	lk->busy = true;
	deadline = lock_int_write_deadline_locked(e, lk, e->cfg.heartbeat_ms);
	full = deadline >= now + e->cfg.heartbeat_ms;
	pthread_mutex_unlock(&e->mu);

	fill_renewal(e, lk, &rn);
	rc = write_renewal(e, lk, &rn, deadline, false);
	took = now_mono(e) - now; /* the write alone */
	if (rc == 0)
		evict_dead_readers(e, lk);

	pthread_mutex_lock(&e->mu);
	lock_int_end_write_locked(e, lk);
	after_renewal(e, lk, rc);
	note_beat_time_locked(e, took, rc);
	/* A sign of DynamoDB's load for the pool: a success, or a failure
	 * of a request that had a whole heartbeat (not one cut early by the
	 * end of its lock's trust, nor one that found its lock lost). */
	if (rc == 0 || (rc != -ESTALE && full))
		lease_pool_answer_locked(&e->pool, now + took, rc == 0);
	if (rc == 0) {
		metrics_inc(e->metrics, MC_HEARTBEATS_OK);
	} else if (rc != -ESTALE) {
		/* Lost while this renewal was in flight: its cleanup's time,
		 * set then (a lease after the last kept write, while the
		 * holder may still run), stands. */
		if (lk->state == LOCK_HELD) {
			int64_t at = now_mono(e);

			lk->next_due_mono_ms =
				at +
				beat_retry_ms(e, lk->beat_failures++,
					      lock_int_last_ok(e, lk) +
						      e->cfg.safe_period_ms -
						      at);
		}
		metrics_inc(e->metrics, MC_HEARTBEATS_FAILED);
		say_beat_failed(e, lk, rc);
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
	bool in_session;
	int rc;

	pthread_mutex_lock(&e->mu);
	in_session = lk->in_session;
	pthread_mutex_unlock(&e->mu);
	if (in_session)
		return lock_int_session_sync(e, lk);
	pthread_mutex_lock(&e->mu);
	rc = lock_int_begin_write_locked(e, lk);
	if (lock_int_write_started(e, lk, rc, e->cfg.op_timeout_ms, &deadline))
		return -EIO;
	fill_renewal(e, lk, &rn);
	rc = end_renewal(e, lk, write_renewal(e, lk, &rn, deadline, true),
			 false);
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
	rc = lock_int_begin_write_locked(e, lk);
	if (rc) {
		pthread_mutex_unlock(&e->mu);
		lock_int_notify_lost(e);
		return -EIO;
	}
	if (lk->shared) {
		lock_int_end_write_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		return -EPERM;
	}
	deadline = lock_int_write_deadline_locked(e, lk, e->cfg.op_timeout_ms);
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
	fill_renewal(e, lk, &rn);
	rn.set_data = true;
	rn.data = data;
	rn.data_len = new_len;
	rc = write_renewal(e, lk, &rn, deadline, true);
done:
	rc = end_renewal(e, lk, rc, false);
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
	rc = lock_int_begin_write_locked(e, lk);
	if (!rc && (lk->rec.fence || lk->fence_read)) {
		/* Allocated by another thread while we waited. */
		*fence = lk->rec.fence;
		lock_int_end_write_locked(e, lk);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	shared = lk->shared;
	if (lock_int_write_started(e, lk, rc, e->cfg.op_timeout_ms, &deadline))
		return -EIO;
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
		deadline = lock_int_write_deadline_locked(e, lk,
							  e->cfg.op_timeout_ms);
		pthread_mutex_unlock(&e->mu);
		fill_renewal(e, lk, &rn);
		rn.set_fence = true;
		rn.fence = f;
		rc = write_renewal(e, lk, &rn, deadline, true);
	}
	rc = end_renewal(e, lk, rc, true);
	if (rc)
		return -EIO;
	*fence = f;
	return 0;
}
