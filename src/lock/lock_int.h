/* lock_int: what the files of the lock engine's operations share (acquire,
 * renew, release, holder checks, shared locks, views), above lock_state.h.
 * Private to src/lock; lease.c does not include it (it reaches these
 * operations only through the lease_jobs the engine registers). */
#ifndef LOCKFS_LOCK_INT_H
#define LOCKFS_LOCK_INT_H

#include <stdbool.h>

#include "lease_index.h"
#include "lock_state.h"

/* lock_renew.c: a renewal by the lease path (a lease_jobs entry; without
 * mu). 0, -ESTALE (stolen: lost now), other -errno (retried soon). */
int lock_int_heartbeat(struct lock_engine *e, struct lock *lk);

/* lock_release.c (without mu): a release (held -> releasing -> released
 * or lost; a lost lock is let go of); automatic: its keeper went away.
 * And the cleanup of a lost lock's row (a lease_jobs entry). */
int lock_int_release(struct lock_engine *e, struct lock *lk, bool automatic);
void lock_int_cleanup(struct lock_engine *e, struct lock *lk);

/* lock_share.c (without mu). The store side of a shared acquire: creates
 * the row, joins it, takes a free (readerless) one, or takes over one our
 * observation judged expired (takeover_rvn), and resolves lost answers by
 * our entry's version. rec is shared with one reader, ours. 0: we hold it;
 * -EEXIST: refused (*cur the row when known); -EISDIR; -EIO when the
 * outcome stayed unknown (an orphan then removes our entry); other
 * -errno. */
int lock_share_take(struct lock_engine *e, struct lock_record *rec,
		    const char *takeover_rvn, struct lock_record *cur,
		    bool *has_cur);
/* After our renewal found row: removes other readers' entries whose
 * version stood still for the row's lease on our clock (dead mounts). */
void lock_share_evict(struct lock_engine *e, const char *key,
		      const struct lock_record *row);
/* Whether a row is free to take over at once: shared with no reader, and
 * not marked by a live writer of another mount. */
bool lock_share_row_free(struct lock_engine *e, const struct lock_record *row);
/* Whether row carries a live mark of another mount's writer. */
bool lock_share_other_writer(struct lock_engine *e,
			     const struct lock_record *row);

/* ---- lock_session.c: session leases, the holder side ---- */

/* The lease path's session job (lease_jobs.session_beat; busy claimed):
 * one heartbeat, or the creation of a new session after a fenced one. */
void lock_int_session_beat(struct lock_engine *e);
/* An exclusive row about to be written in session mode: names the
 * session (rec->session), with the lease and expiry of a session row;
 * *gen its generation. -EIO when no session is live and trusted now. */
int lock_int_session_claim(struct lock_engine *e, struct lock_record *rec,
			   int *gen);
/* After the write of an acquire that claimed generation gen landed:
 * whether that session still keeps locks (the live one, trusted now).
 * Else *why says what ended it, and the grant is not ours to trust. */
bool lock_int_session_keeps(struct lock_engine *e, int gen,
			    enum lost_reason *why);
/* How long after a failed heartbeat (a lock's or the session's) it is
 * first tried again: a quarter of a heartbeat, 100 ms to 1 s. */
int64_t lock_int_beat_first_retry_ms(const struct lock_engine *e);
/* How often a session lock's own row is rewritten, only so that its
 * expiry_time (a year on) never lets the TTL remove it while held. */
int64_t lock_int_session_refresh_ms(void);
/* fsync of a session lock: a session heartbeat, then a consistent read of
 * the row showing our RVN. 0 or -EIO (the lock lost when it is). */
int lock_int_session_sync(struct lock_engine *e, struct lock *lk);

/* ---- lock_fair.c: fair handoff of exclusive rows ---- */

/* A waiter's mark on row (held exclusively elsewhere, just read): see
 * lock_writer_mark, whose exclusive half it is. A row moved on since the
 * read is marked again on its new RVN (a few times). */
int lock_fair_mark(struct lock_engine *e, const char *key,
		   const struct lock_record *row, char *v, int64_t waited_ms,
		   int64_t margin_ms);
/* Our exclusive row's release (store.h release_lock): deleted, or turned
 * into a reservation for the mount that marked it. 0 either way;
 * -ECANCELED with *cur when the row is not expect's. */
int lock_fair_release(struct lock_engine *e, const char *key,
		      const char *expect, int64_t deadline,
		      struct lock_record *cur, bool *has);
/* A waiter of ours gave up after its mark went: a reservation the row
 * holds for this mount (the release came first) is deleted on its RVN. */
void lock_fair_unreserve(struct lock_engine *e, const char *key);

#endif
