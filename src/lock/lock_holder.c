/* lock_holder: what keeps a held lock, by its hold mode: the acquiring
 * open file, the acquirer's process group (asked of the host), or a file
 * lock; and what happens when the open file closes (fd mode: released now;
 * pgrp mode: watched until the group is gone).
 *
 * Threads: FUSE workers (close, flk). Under engine->mu but for the
 * release, which takes it itself, and lock_holder_live's question to the
 * host. */
#include "lock_int.h"

#include "lease_groups.h"

#define TAG "lock"

bool lock_holder_live(struct lock_engine *e, struct lock *lk)
{
	struct lock_holder h;
	bool live = false, ask = false;

	pthread_mutex_lock(&e->mu);
	if (lock_int_trusted_locked(e, lk, now_mono(e)) &&
	    !lk->release_wanted) {
		switch (lk->hold) {
		case HOLD_PGRP:
			/* Its leader watched running proves the group
			 * (lease_groups); else the group is asked of the
			 * host (/proc) after mu is let go. */
			live = lk->file_open || lk->group_proven;
			ask = !live;
			if (ask)
				h = lk->holder;
			break;
		case HOLD_FD:
			live = lk->file_open;
			break;
		case HOLD_FLOCK:
			live = true;
			break;
		case HOLD_UNLINK:
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
	if (ask)
		live = lock_int_pgrp_alive(e, &h);
	return live;
}

void lock_set_hold(struct lock_engine *e, struct lock *lk, enum hold_mode hold)
{
	pthread_mutex_lock(&e->mu);
	lk->hold = hold;
	lk->release_wanted = false;
	lease_index_note_locked(e, lk);
	if (hold == HOLD_PGRP && !lk->file_open)
		lease_groups_watch_locked(e, lk);
	pthread_mutex_unlock(&e->mu);
}

void lock_holder_closed(struct lock_engine *e, struct lock *lk)
{
	struct lock_holder h;
	bool now = false, ask = false;

	pthread_mutex_lock(&e->mu);
	lk->file_open = false;
	if (lk->hold == HOLD_PGRP)
		lease_groups_watch_locked(e, lk); /* watched from now on */
	if (lk->state == LOCK_HELD) {
		if (lk->hold == HOLD_FD) {
			now = true;
		} else if (lk->hold == HOLD_PGRP && !lk->group_proven) {
			/* Its leader is not watched running (lease_groups):
			 * the host is asked, once mu is let go. */
			ask = true;
			h = lk->holder;
		}
	}
	pthread_mutex_unlock(&e->mu);
	/* A group gone already: released now (lock_int_release settles a
	 * lock whose state changed meanwhile, as it did before when the
	 * state changed between this check and the release). */
	if (ask && !lock_int_pgrp_alive(e, &h))
		now = true;
	if (now)
		lock_int_release(e, lk, true);
}
