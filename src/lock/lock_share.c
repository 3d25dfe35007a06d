/* lock_share: the shared side of the lock engine's protocol with the
 * store. Owns no state of its own: it decides, from rows the store
 * returned, whether a shared acquire creates the row, joins it, takes a
 * readerless one or one judged expired; which readers' entries are dead;
 * whether a row is free; and it sets and judges the marks of waiting
 * writers. Every judgement of "dead" or "stale" is an observation on our
 * monotonic clock by the one rule (lock_rows_judge_version): an entry's or
 * a mark's version unchanged for the row's lease, exactly as a lock's RVN
 * is judged (tenet 3).
 *
 * Threads: FUSE workers (acquires, a waiter's marks through flk), the
 * flk wait thread and the lease workers (evictions after a renewal). No
 * engine mutex is taken here. */
#include "lock_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

/* Each decision (create, join, take a free row, clear a stale mark) is
 * one request; an acquire makes at most this many, all within one op
 * timeout (a user's request is bounded by it, not each of its writes). */
#define SHARE_TRIES 6

/* Observation keys of a reader's entry and of a writer's mark. Keys and
 * ids are valid UTF-8, which never holds the byte 0xff: no observation of
 * a lock's own key can collide with these. */
static char *entry_obs_key(const char *key, const char *id)
{
	char *k;

	return asprintf(&k, "\xffr%s\xff%s", key, id) < 0 ? NULL : k;
}

static char *mark_obs_key(const char *key)
{
	char *k;

	return asprintf(&k, "\xffw%s", key) < 0 ? NULL : k;
}

/* Whether row's writer mark stood still for the row's lease (its writer
 * stopped waiting without removing it, or died). */
static bool mark_stale(struct lock_engine *e, const struct lock_record *row)
{
	bool stale;
	char *k;

	if (!row->writer_id)
		return false;
	k = mark_obs_key(row->key);
	if (!k)
		return false;
	stale = lock_rows_judge_version(e, k, row->writer_v, row->lease_ms,
					NULL);
	free(k);
	return stale;
}

/* A mark of another mount's writer that is not stale. */
static bool other_writer(struct lock_engine *e, const struct lock_record *row)
{
	return row->writer_id && strcmp(row->writer_id, e->owner) &&
	       !mark_stale(e, row);
}

bool lock_share_other_writer(struct lock_engine *e,
			     const struct lock_record *row)
{
	return other_writer(e, row);
}

bool lock_share_row_free(struct lock_engine *e, const struct lock_record *row)
{
	return row->shared && !row->n_readers && !other_writer(e, row);
}

bool lock_row_admits(struct lock_engine *e, const struct lock_record *row,
		     bool shared, bool expired)
{
	if (expired)
		return true;
	if (!shared)
		return lock_row_free(e, row);
	/* Our own mount's writer waits too: flk queues our readers behind
	 * it, so its mark stops them as well. */
	return row->shared && (!row->writer_id || mark_stale(e, row));
}

static bool hard_error(int rc)
{
	return rc == -ENOMEM || rc == -EACCES || rc == -ENXIO || rc == -EINVAL;
}

int lock_share_take(struct lock_engine *e, struct lock_record *rec,
		    const char *takeover_rvn, struct lock_record *cur,
		    bool *has_cur)
{
	const struct lock_record *c = cur;
	const char *me = rec->readers[0].id, *mine = rec->readers[0].v;
	char over[RECORD_RVN_MAX] = "";
	bool join = false, raise = false, unknown = false, may_land;
	struct store *st = e->store;
	int64_t deadline = op_deadline(e);
	int attempt, rc = -EEXIST;

	if (takeover_rvn)
		text_copy(over, sizeof(over), takeover_rvn);
	for (attempt = 0; attempt < SHARE_TRIES; attempt++) {
		if (attempt && now_mono(e) >= deadline)
			break; /* as if out of tries: rc says how it ended */
		record_fini(cur);
		*has_cur = false;
		may_land = true; /* a join cannot tell: it may */
		if (join) {
			/* A fresh row RVN each time: a retry never writes one
			 * an observer may have seen before (ABA). */
			rc = text_uuid4(rec->rvn);
			if (!rc)
				rc = st->ops->join_shared(
					st, rec, raise, deadline, cur, has_cur);
		} else {
			rc = st->ops->put_lock(st, rec, over[0] ? over : NULL,
					       deadline, cur, has_cur,
					       &may_land);
		}
		if (rc == -ECANCELED && *has_cur &&
		    !strcmp(record_holder_version(c, me), mine))
			return 0; /* an earlier attempt of ours landed */
		if (!rc || rc == -EISDIR)
			return rc;
		if (hard_error(rc))
			break;
		if (rc != -ECANCELED) {
			/* Never left (refused): nothing to ask about. */
			if (!may_land && !unknown)
				break;
			unknown = true; /* may have landed: ask again */
			continue;
		}
		/* The row shows no entry of ours: nothing of ours landed. */
		unknown = false;
		if (!*has_cur) {
			join = false; /* gone meanwhile: create it */
			over[0] = '\0';
			continue;
		}
		lock_rows_judge(e, c, NULL);
		if (!c->shared)
			return -EEXIST; /* a writer's (or another client's) */
		if (c->writer_id && strcmp(c->writer_id, e->owner) &&
		    mark_stale(e, c)) {
			/* Its writer is gone: the mark goes, on its version. */
			st->ops->clear_writer(st, rec->key, c->writer_v,
					      deadline);
			log_info(TAG, "key=%s: removed a stale writer mark",
				 rec->key);
		} else if (c->writer_id) {
			return -EEXIST; /* a writer waits: we go after it */
		}
		if (!c->n_readers) {
			/* Every reader left: free, on the RVN we saw. */
			join = false;
			text_copy(over, sizeof(over), c->rvn);
		} else {
			join = true;
			raise = c->lease_ms < rec->lease_ms;
		}
	}
	if (!unknown)
		return rc == -ECANCELED ? -EEXIST : hard_error(rc) ? rc : -EIO;
	/* Our write may be in the row: the lease path removes our entry
	 * once DynamoDB answers (a lock we cannot know we hold is not
	 * ours). */
	lock_int_add_orphan(e, rec, true, false);
	return -EIO;
}

void lock_share_evict(struct lock_engine *e, const char *key,
		      const struct lock_record *row)
{
	for (size_t i = 0; i < row->n_readers; i++) {
		const struct record_reader *rd = &row->readers[i];
		char *k;
		int rc;

		if (!strcmp(rd->id, e->owner))
			continue;
		k = entry_obs_key(key, rd->id);
		if (!k)
			return;
		if (lock_rows_judge_version(e, k, rd->v, row->lease_ms, NULL)) {
			rc = e->store->ops->evict_reader(e->store, key, rd->id,
							 rd->v, op_deadline(e));
			if (!rc)
				lock_rows_forget(e, k);
			log_info(
				TAG,
				"key=%s: reader %s stood still for a lease: %s",
				key, rd->id,
				rc ? "its entry could not be removed"
				   : "its entry was removed");
		}
		free(k);
	}
}

int lock_writer_mark(struct lock_engine *e, const char *key,
		     const struct lock_record *row, char *v)
{
	const char *replace = NULL;
	char nv[RECORD_RVN_MAX];
	struct lock_record cur;
	bool has = false;
	int rc;

	if (!row->shared) /* held exclusively: the next mark */
		return lock_fair_mark(e, key, row, v, 0, 0);
	if (row->writer_id && strcmp(row->writer_id, e->owner)) {
		if (!mark_stale(e, row))
			return -EEXIST;
		replace = row->writer_v; /* its writer is gone */
	}
	rc = text_uuid4(nv);
	if (rc)
		return rc;
	record_init(&cur);
	rc = e->store->ops->mark_writer(e->store, key, e->owner, nv, replace,
					op_deadline(e), &cur, &has);
	if (rc == -ECANCELED && has && cur.writer_id &&
	    !strcmp(cur.writer_id, e->owner) && !strcmp(cur.writer_v, nv))
		rc = 0; /* an earlier attempt landed */
	if (rc == -ECANCELED)
		rc = has && cur.shared ? -EEXIST : -ENOENT;
	if (rc != -EEXIST && rc != -ENOENT)
		text_copy(v, RECORD_RVN_MAX, nv); /* (maybe) ours now */
	record_fini(&cur);
	return rc;
}

void lock_writer_unmark(struct lock_engine *e, const char *key, const char *v)
{
	if (v && v[0] &&
	    e->store->ops->clear_writer(e->store, key, v, op_deadline(e)) ==
		    -ECANCELED)
		lock_fair_unreserve(e, key); /* released to us meanwhile? */
}

int lock_waiter_mark(struct lock_engine *e, const char *key,
		     const struct lock_record *row, char *v, int64_t waited_ms,
		     int64_t margin_ms)
{
	if (!row->shared)
		return lock_fair_mark(e, key, row, v, waited_ms, margin_ms);
	return lock_writer_mark(e, key, row, v);
}
