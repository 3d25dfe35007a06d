/* lock_fair: fair handoff of keys held exclusively by other owners
 * (doc/fair-handoff.md). A waiter marks the row (lockfs_next, RVN
 * unchanged) so that the holder's release turns it into a reservation
 * for the waiter's mount instead of deleting it; the waiter then takes
 * the reservation over by its RVN, and nobody else may until it lapses.
 * Owns no state: marks are judged stale by the one rule (a version
 * unchanged for the row's lease on our monotonic clock,
 * lock_rows_judge_version), and a reservation for us is judged lapsed at
 * once by lock_rows_judge (lock_rows.c). python_dynamodb_lock clients
 * ignore both: fairness against them is not promised.
 *
 * Threads: the flk wait thread and FUSE workers (marks), FUSE workers and
 * lease workers (releases, lock_release.c). No engine mutex is taken. */
#include "lock_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_rows.h"
#include "log.h"
#include "text.h"

#define TAG "lock"

/* A mark fails when the holder's RVN moved between our read and the
 * write; the failure returns the row, marked again on its RVN. */
#define MARK_TRIES 3

/* The observation key of a row's next mark (0xff never occurs in keys:
 * lock_share.c). */
static char *next_obs_key(const char *key)
{
	char *k;

	return asprintf(&k, "\xffn%s", key) < 0 ? NULL : k;
}

/* Whether row's next mark of another mount may be replaced by ours: it
 * stood still for the row's lease (its mount stopped waiting without
 * removing it, or died), or its mount has waited less than we have. Its
 * wait is what the mark says, plus how long we have seen that version
 * on our clock (an estimate short by at most the time between its write
 * and our first sighting of it: one poll; margin_ms covers that, so that
 * two waiters of about the same age do not take the mark in turns). */
static bool next_replaceable(struct lock_engine *e,
			     const struct lock_record *row, int64_t waited_ms,
			     int64_t margin_ms)
{
	/* A row kept by a session carries a lease of a year: its waiters'
	 * marks are refreshed at their own pace, judged by our lease. */
	int64_t lease = row->session ? e->cfg.lease_ms : row->lease_ms;
	struct observation ob;
	bool stale;
	char *k;

	if (!row->next_id)
		return false;
	k = next_obs_key(row->key);
	if (!k)
		return false;
	stale = lock_rows_judge_version(e, k, row->next_v, lease, &ob);
	free(k);
	if (stale)
		return true;
	return waited_ms >
	       row->next_waited_ms + (lease - ob.remaining_ms) + margin_ms;
}

int lock_fair_mark(struct lock_engine *e, const char *key,
		   const struct lock_record *row, char *v, int64_t waited_ms,
		   int64_t margin_ms)
{
	struct lock_record seen, cur;
	char nv[RECORD_RVN_MAX];
	bool has = false;
	int attempt, rc = -EEXIST;

	record_init(&seen);
	record_init(&cur);
	if (record_copy(&seen, row))
		return -ENOMEM;
	for (attempt = 0; attempt < MARK_TRIES; attempt++) {
		const char *replace = NULL;

		if (seen.shared) {
			rc = -ENOENT;
			break;
		}
		if (seen.next_id && strcmp(seen.next_id, e->owner)) {
			if (!next_replaceable(e, &seen, waited_ms, margin_ms)) {
				rc = -EEXIST; /* another mount is next */
				break;
			}
			replace = seen.next_v; /* gone, or a later waiter */
		}
		rc = text_uuid4(nv);
		if (rc)
			break;
		record_fini(&cur);
		has = false;
		rc = e->store->ops->mark_next(e->store, key, seen.rvn, e->owner,
					      nv, waited_ms, replace,
					      op_deadline(e), &cur, &has);
		if (rc == -ECANCELED && has && cur.next_id &&
		    !strcmp(cur.next_id, e->owner) && !strcmp(cur.next_v, nv))
			rc = 0; /* an earlier attempt landed */
		if (rc != -ECANCELED) {
			if (!rc || rc == -ETIMEDOUT || rc == -EIO ||
			    rc == -EAGAIN)
				text_copy(v, RECORD_RVN_MAX, nv); /* (maybe)
								     ours */
			break;
		}
		if (!has) {
			rc = -ENOENT; /* gone: nothing to wait behind */
			break;
		}
		/* The row moved on (renewed, or taken again): its RVN now. */
		lock_rows_judge(e, &cur, NULL);
		if (cur.reserved_for && !strcmp(cur.reserved_for, e->owner)) {
			rc = 0; /* already ours to take */
			break;
		}
		record_fini(&seen);
		if (record_copy(&seen, &cur)) {
			rc = -ENOMEM;
			break;
		}
		rc = -EEXIST;
	}
	record_fini(&cur);
	record_fini(&seen);
	return rc;
}

int lock_fair_release(struct lock_engine *e, const char *key,
		      const char *expect, int64_t deadline,
		      struct lock_record *cur, bool *has)
{
	struct lock_record resv;
	int rc;

	/* The reservation looks held to everyone else (python clients
	 * included) for a lease of ours, and carries a fresh RVN, so that
	 * it lapses by the usual rule if its waiter never comes. */
	record_init(&resv);
	rc = record_set_str(&resv.key, key);
	if (!rc)
		rc = record_set_str(&resv.owner, RECORD_RESERVED_OWNER);
	if (!rc)
		rc = text_uuid4(resv.rvn);
	resv.lease_ms = e->cfg.lease_ms;
	resv.expiry_real_s = now_real(e) / 1000 + RECORD_EXPIRY_PERIOD_S;
	if (!rc)
		rc = e->store->ops->release_lock(e->store, key, expect, &resv,
						 deadline, cur, has);
	record_fini(&resv);
	return rc;
}

void lock_fair_unreserve(struct lock_engine *e, const char *key)
{
	struct lock_record row;

	/* Our mark was gone: if the holder's release already made the row
	 * our reservation, nobody here wants it any more: it goes now, on
	 * its RVN, rather than keep every other waiter for a lease. */
	record_init(&row);
	if (!lock_rows_get(e, key, &row) && row.reserved_for &&
	    !strcmp(row.reserved_for, e->owner) &&
	    !e->store->ops->delete_lock(e->store, key, row.rvn, op_deadline(e),
					NULL, NULL))
		log_info(TAG, "key=%s: gave back the reservation for us", key);
	record_fini(&row);
}
