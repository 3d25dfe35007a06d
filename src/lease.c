/* lease: the heartbeat thread (see lease.h). Each step takes engine->mu to
 * look at every lock, decides on at most one request, drops the mutex and
 * makes it. Touched by the lease thread, and by any thread through
 * lease_kick. */
#include "lease.h"

#include <errno.h>
#include <stdint.h>

#include "lock_int.h"
#include "log.h"

#define TAG	      "lease"
#define LEASE_IDLE_MS 1000

/* In order of precedence when several are due. */
enum lease_action {
	ACT_RELEASE,
	ACT_HEARTBEAT,
	ACT_CLEANUP,
	ACT_NONE,
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int64_t lease_step(struct lock_engine *e)
{
	const struct lock_config *cfg = &e->cfg;
	enum lease_action act = ACT_NONE;
	struct lock *lk, *pick = NULL, *next;
	int64_t now = clk_mono_ms(e->clk), wake = now + LEASE_IDLE_MS;
	bool pgrp_watch = false;

	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		return INT64_MAX;
	}
	/* The safe period: a holder stops trusting its lease on its own. */
	for (lk = e->all; lk; lk = lk->next) {
		if (lk->state != LOCK_HELD)
			continue;
		if (now - lk->last_ok_mono_ms >= cfg->safe_period_ms)
			lock_int_mark_lost_locked(e, lk, LOST_SAFE_PERIOD);
		else
			wake = min64(wake,
				     lk->last_ok_mono_ms + cfg->safe_period_ms);
	}
	/* Holders that went away. */
	if (now >= e->next_pgrp_check_mono_ms) {
		for (lk = e->all; lk; lk = lk->next) {
			if (lk->state == LOCK_HELD && lk->hold == HOLD_PGRP &&
			    !lk->holder_open && !lk->release_wanted &&
			    !lock_int_pgrp_alive(lk->holder.pgid)) {
				lk->release_wanted = true;
				lk->next_hb_mono_ms = now;
			}
		}
		e->next_pgrp_check_mono_ms = now + cfg->pgrp_poll_ms;
	}
	for (lk = e->all; lk; lk = next) {
		enum lease_action want = ACT_NONE;

		next = lk->next;
		if (lk->state == LOCK_HELD && lk->hold == HOLD_PGRP &&
		    !lk->holder_open)
			pgrp_watch = true;
		if (lk->busy)
			continue;
		if (lk->state == LOCK_HELD)
			want = lk->release_wanted ? ACT_RELEASE : ACT_HEARTBEAT;
		else if (lk->state == LOCK_LOST && lk->cleanup_wanted)
			want = ACT_CLEANUP;
		if (want == ACT_NONE)
			continue;
		if (lk->next_hb_mono_ms > now) {
			wake = min64(wake, lk->next_hb_mono_ms);
			continue;
		}
		/* Due now. Releases first, then the most overdue heartbeat,
		 * then cleanups. */
		if (act == ACT_NONE || want < act ||
		    (want == act &&
		     lk->next_hb_mono_ms < pick->next_hb_mono_ms)) {
			act = want;
			pick = lk;
		}
	}
	if (pgrp_watch)
		wake = min64(wake, e->next_pgrp_check_mono_ms);
	/* Spread heartbeats over the period when many locks are held. */
	if (act == ACT_HEARTBEAT && now < e->next_slot_mono_ms) {
		wake = min64(wake, e->next_slot_mono_ms);
		act = ACT_NONE;
		pick = NULL;
	}
	if (act == ACT_HEARTBEAT)
		e->next_slot_mono_ms =
			now + cfg->heartbeat_ms /
				      (int64_t)(e->n_held ? e->n_held : 1);
	if (pick) {
		lock_ref(pick);
		if (act == ACT_RELEASE)
			pick->release_wanted = false;
	}
	pthread_mutex_unlock(&e->mu);

	lock_int_notify_lost(e);
	switch (act) {
	case ACT_HEARTBEAT:
		lock_int_heartbeat(e, pick);
		break;
	case ACT_RELEASE:
		/* On failure the lock is lost and cleaned up later. */
		lock_int_release(e, pick, true);
		break;
	case ACT_CLEANUP:
		lock_int_cleanup(e, pick);
		break;
	case ACT_NONE:
		break;
	}
	if (pick) {
		lock_unref(e, pick);
		return now;
	}
	return wake;
}

static void *lease_main(void *arg)
{
	struct lock_engine *e = arg;

	while (1) {
		int64_t next = lease_step(e);
		struct timespec ts;

		pthread_mutex_lock(&e->mu);
		if (e->stopping) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		if (!e->kicked && next > clk_mono_ms(e->clk)) {
			clk_mono_timespec(next, &ts);
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		}
		e->kicked = false;
		pthread_mutex_unlock(&e->mu);
	}
	return NULL;
}

int lease_start(struct lock_engine *e)
{
	int rc;

	if (e->thread_running)
		return 0;
	e->stopping = false;
	rc = pthread_create(&e->thread, NULL, lease_main, e);
	if (rc)
		return -rc;
	e->thread_running = true;
	return 0;
}

void lease_stop(struct lock_engine *e)
{
	if (!e->thread_running)
		return;
	pthread_mutex_lock(&e->mu);
	e->stopping = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->thread, NULL);
	e->thread_running = false;
}

void lease_kick(struct lock_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->kicked = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}
