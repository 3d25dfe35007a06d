/* lock_rows_session: the expiry rule for a lock row that names a session
 * (doc/session-leases.md), every mount's, whatever its own mode. A row
 * naming our own live session that no lock of ours holds or takes (a
 * stray row, lock_stray.c) has lapsed now. Otherwise the row
 * is judged by its session item: dead (fenced) -> lapsed now; its version
 * (or its absence, as a version of its own) unchanged for a whole lease
 * of our monotonic clock since our first sighting (observe.c, under the
 * session's key) -> fenced by one conditional write on that version, and
 * then lapsed; anything else (a version that moved, a read or a fence
 * that failed) -> live. The takeover that follows is the acquire's
 * conditional write on the row's RVN, as for any row.
 *
 * Threads: any that judges a row (FUSE workers, the flk wait thread, lease
 * workers). The engine mutex only inside lock_int_stray; the store, the
 * observation and the session view are thread-safe. */
#include "lock_rows.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lock_state.h"
#include "log.h"
#include "session_view.h"
#include "text.h"

#define TAG "session"
/* A version no session item has: the item is absent. */
#define SESSION_ABSENT "\001absent"
/* A listing's rows of one session share one read made this recently. */
#define VIEW_FRESH_MS 500
/* The lease a row of a live session is noted with: never lapsed by its
 * own RVN. */
#define LIVE_LEASE_MS (INT64_MAX / 4)

static bool live(struct lock_engine *e, const struct lock_record *row,
		 struct observation *ob, const struct observation *sob)
{
	struct observation mine;

	observe_note(e->obs, row->key, row->rvn, LIVE_LEASE_MS, &mine);
	if (ob)
		*ob = sob ? *sob : mine;
	if (ob && !sob)
		ob->remaining_ms = e->cfg.lease_ms;
	return false;
}

static bool lapsed(struct lock_engine *e, const struct lock_record *row,
		   struct observation *ob)
{
	return lock_rows_judge_version(e, row->key, row->rvn, 0, ob);
}

/* The session item of key: from a read made moments ago, or read now. */
static int read_session(struct lock_engine *e, const char *key,
			struct session_record *sr)
{
	int64_t now = now_mono(e);
	int rc = session_view_get(e->sview, key, now - VIEW_FRESH_MS, sr);

	if (rc != -EAGAIN)
		return rc;
	rc = e->store->ops->get_session(e->store, key, op_deadline(e), sr);
	if (!rc || rc == -ENOENT)
		session_view_put(e->sview, key, now, rc ? NULL : sr);
	return rc;
}

bool lock_rows_judge_session(struct lock_engine *e,
			     const struct lock_record *row,
			     struct observation *ob)
{
	char okey[RECORD_SESSION_KEY_MAX + 8], why[LOG_ERRNO_MAX];
	struct session_record sr;
	struct observation sob;
	bool absent;
	int rc;

	if (lock_int_stray(e, row, NULL, 0)) {
		/* Names our own live session, yet no lock here holds it or
		 * takes it: held by nobody (lock_stray.c). Lapsed now, for
		 * our acquire to take over on its RVN; other owners go on
		 * respecting it until we do (or our cleanup deletes it). */
		log_debug(TAG,
			  "key=%s: a row of our own session no lock "
			  "holds: lapsed",
			  row->key);
		return lapsed(e, row, ob);
	}
	rc = read_session(e, row->session, &sr);
	if (rc && rc != -ENOENT)
		return live(e, row, ob, NULL); /* unknown: never lapsed */
	if (!rc && sr.dead)
		return lapsed(e, row, ob);
	absent = rc == -ENOENT;
	snprintf(okey, sizeof(okey), "\377s%s", row->session);
	if (!lock_rows_judge_version(e, okey, absent ? SESSION_ABSENT : sr.rvn,
				     absent ? e->cfg.lease_ms : sr.lease_ms,
				     &sob))
		return live(e, row, ob, &sob);
	/* Unchanged for a whole lease: fenced, so that no heartbeat of it
	 * can land from now on (its holder stopped trusting it a safe
	 * period after its last confirmed one, before now). */
	rc = e->store->ops->fence_session(
		e->store, row->session, absent ? NULL : sr.rvn,
		now_real(e) / 1000 + RECORD_EXPIRY_PERIOD_S, op_deadline(e));
	if (rc) {
		/* It moved (a heartbeat landed), or the fence failed: read
		 * it again next time. */
		session_view_forget(e->sview, row->session);
		if (rc != -ECANCELED)
			log_warn(TAG, "fence of session %s failed: %s",
				 row->session, log_errno(rc, why, sizeof(why)));
		return live(e, row, ob, &sob);
	}
	log_info(TAG, "fenced session %s (%s for a lease of %lld ms)",
		 row->session, absent ? "absent" : "unchanged",
		 (long long)(absent ? e->cfg.lease_ms : sr.lease_ms));
	sr.dead = true;
	if (absent)
		text_copy(sr.rvn, sizeof(sr.rvn), "-");
	session_view_put(e->sview, row->session, now_mono(e), &sr);
	observe_forget(e->obs, okey);
	return lapsed(e, row, ob);
}

void lock_rows_session_show(struct lock_engine *e, struct lock_record *row)
{
	struct session_record sr;

	if (!row->session || row->shared)
		return;
	row->lease_ms = e->cfg.lease_ms;
	row->lease_assumed = false; /* the session's lease (ours) judges it */
	if (session_view_get(e->sview, row->session, INT64_MIN, &sr))
		return;
	row->lease_ms = sr.lease_ms;
	if (sr.heartbeat_real_ms > row->heartbeat_real_ms)
		row->heartbeat_real_ms = sr.heartbeat_real_ms;
}
