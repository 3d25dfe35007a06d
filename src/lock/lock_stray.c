/* lock_stray: rows of our own session that nobody holds (session mode,
 * doc/session-leases.md). Other owners respect a row that names a session
 * whose version moves, so a row naming this mount's live session never
 * lapses while the mount runs: if no lock of ours holds its key, only we
 * can remove it. Such a stray row comes from a write of ours whose answer
 * was lost (an acquire given up, a renewal or release never confirmed)
 * or a cleanup that could not finish. This file owns the test of one
 * (lock_int_stray) and the acquires in flight it respects (e->taking);
 * the cleanup (lock_release.c), the acquire (lock_acquire.c) and the
 * judge (lock_rows_session.c) act on it.
 *
 * Why deleting or taking over a stray row on its RVN is safe: nobody else
 * writes a row naming our session (the item is created under a key no
 * item has, and other owners write rows naming their own session or
 * none), so the row is a write of this mount. A lock of ours trusts a row
 * only through a write of its own: its acquire's (in e->taking from
 * before it is sent until the lock is in by_key), or one made while held
 * (the lock is in by_key then). With neither for the key at the test,
 * under mu, no lock trusts the row's RVN, and none can later: a lost lock
 * is never trusted again, and every new write carries a fresh RVN. The
 * delete or takeover is conditioned on that RVN, so a write landing in
 * between only makes it fail.
 *
 * Threads: any that judges, acquires, releases or cleans up (FUSE
 * workers, the flk wait thread, lease workers). engine->mu is taken here,
 * never across a store request. */
#include "lock_state.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

int lock_int_taking_add_locked(struct lock_engine *e, const char *key)
{
	uintptr_t n = (uintptr_t)smap_get(&e->taking, key);

	return smap_put(&e->taking, key, (void *)(n + 1));
}

void lock_int_taking_del_locked(struct lock_engine *e, const char *key)
{
	uintptr_t n = (uintptr_t)smap_get(&e->taking, key);

	if (n <= 1)
		smap_del(&e->taking, key);
	else
		smap_put(&e->taking, key, (void *)(n - 1)); /* replaces */
}

bool lock_int_session_ours_locked(const struct lock_engine *e,
				  const char *session)
{
	return e->cfg.session && session && e->sess.live &&
	       !strcmp(session, e->sess.key);
}

/* mu held: whether a lock of ours other than self holds key, or is
 * releasing it (its delete's outcome decides). One whose trust just ended
 * is marked lost here, and holds nothing (the scheduler, kicked, tells
 * its acquirer). */
static bool held_here_locked(struct lock_engine *e, const char *key,
			     const struct lock *self)
{
	struct lock *lk = smap_get(&e->by_key, key);

	if (!lk || lk == self)
		return false;
	if (lk->state == LOCK_HELD)
		return lock_int_trusted_locked(e, lk, now_mono(e));
	return true;
}

bool lock_int_stray(struct lock_engine *e, const struct lock_record *row,
		    struct lock *self, int taking_self)
{
	bool stray;

	if (!e->cfg.session || !row->key || !row->session || row->shared ||
	    row->reserved_for)
		return false;
	pthread_mutex_lock(&e->mu);
	stray = lock_int_session_ours_locked(e, row->session) &&
		!held_here_locked(e, row->key, self) &&
		(uintptr_t)smap_get(&e->taking, row->key) <=
			(uintptr_t)taking_self;
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e); /* a lock whose trust ended just now */
	return stray;
}
