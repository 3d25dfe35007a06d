/* lease: the lease path of a lock engine (see lease.h). A scheduler thread
 * that never makes a request: it ends the trust of every lock whose safe
 * period passed (by the clock, at the very millisecond), tells the holders,
 * notices holders that went away, and queues the work that is due. A pool
 * of workers makes the requests (renewals, automatic releases, cleanups),
 * each lock on its own, so that no lock's request waits for another's.
 *
 * Threads: the scheduler and the workers; any thread through lease_kick.
 * Tests without threads drive the same steps with lease_step. Everything
 * shared is under engine->mu. */
#include "lease.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lock_int.h"
#include "log.h"

#define TAG		  "lease"
#define LEASE_IDLE_MS	  1000
#define LEASE_WORKERS	  32
#define LEASE_WORKERS_MAX 256
#define PLAN_BATCH	  256
#define PLAN_SLOTS	  64 /* renewals queued in one pass at most */
#define SLOT_WAKE_MS	  5  /* the scheduler's shortest sleep for slots */

/* In order of precedence when several are due (lease_step runs one). */
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

/* mu held. What the lease path owes lk now, if anything. */
static enum lease_action wanted(const struct lock *lk)
{
	if (lk->busy || lk->queued)
		return ACT_NONE;
	if (lk->state == LOCK_HELD)
		return lk->release_wanted ? ACT_RELEASE : ACT_HEARTBEAT;
	if (lk->state == LOCK_LOST && lk->cleanup_wanted)
		return ACT_CLEANUP;
	return ACT_NONE;
}

/* mu held. Ends the trust of locks past their safe period and notices
 * holders that went away. Returns the earliest time either may next be
 * due. */
static int64_t watch_locked(struct lock_engine *e, int64_t now)
{
	const struct lock_config *cfg = &e->cfg;
	bool check_pgrps = now >= e->next_pgrp_check_mono_ms;
	bool pgrp_watch = false;
	int64_t wake = now + LEASE_IDLE_MS;
	struct lock *lk, *next;

	/* Nothing can be due before the earliest end of a safe period or the
	 * next process-group check: no walk of every lock until then. */
	if (e->next_watch_mono_ms && now < e->next_watch_mono_ms &&
	    (!e->pgrp_watch || !check_pgrps))
		return e->pgrp_watch ? min64(e->next_watch_mono_ms,
					     e->next_pgrp_check_mono_ms)
				     : e->next_watch_mono_ms;

	for (lk = e->all; lk; lk = next) {
		next = lk->next; /* lk may leave the list below */
		if (lock_int_trusted_locked(e, lk, now))
			wake = min64(wake,
				     lk->last_ok_mono_ms + cfg->safe_period_ms);
		if (lk->hold != HOLD_PGRP || lk->holder_open)
			continue;
		if (lk->state == LOCK_HELD && !lk->release_wanted) {
			pgrp_watch = true;
			if (check_pgrps && !lock_int_pgrp_alive(&lk->holder)) {
				lk->release_wanted = true;
				lk->next_due_mono_ms = now;
			}
		} else if (lk->state == LOCK_LOST && !lk->dismissed) {
			/* A lost lock stays visible to its holder's group
			 * until that group is gone (or it unlinks it). */
			pgrp_watch = true;
			if (check_pgrps && !lock_int_pgrp_alive(&lk->holder)) {
				lk->dismissed = true;
				lock_int_retire_locked(e, lk);
			}
		}
	}
	e->next_watch_mono_ms = wake;
	e->pgrp_watch = pgrp_watch;
	if (check_pgrps)
		e->next_pgrp_check_mono_ms = now + cfg->pgrp_poll_ms;
	if (pgrp_watch)
		wake = min64(wake, e->next_pgrp_check_mono_ms);
	return wake;
}

/* mu held. Adds lk to hb[0..*n), the (at most max) most overdue renewals,
 * kept in order of due time. */
static void keep_overdue(struct lock **hb, int *n, int max, struct lock *lk)
{
	int i = *n;

	if (i == max && hb[i - 1]->next_due_mono_ms <= lk->next_due_mono_ms)
		return;
	if (i < max)
		(*n)++;
	else
		i--;
	while (i > 0 && hb[i - 1]->next_due_mono_ms > lk->next_due_mono_ms) {
		hb[i] = hb[i - 1];
		i--;
	}
	hb[i] = lk;
}

/* mu held. Collects up to max due jobs (each lock at most once, claimed by
 * its queued flag and a reference): every due release and cleanup, and the
 * most overdue renewals, one for each slot that has come (renewals are
 * spread evenly over the period, one slot of heartbeat / locks held each),
 * in one walk of the locks. With max 1, the single most urgent job.
 * Returns the number found; *wake is when the next one comes due. */
static int plan_locked(struct lock_engine *e, int64_t now, struct lock **out,
		       int max, int64_t *wake)
{
	/* Slots in microseconds: 10,000 locks at 5 s make 500 us slots. */
	int64_t slot_us = e->cfg.heartbeat_ms * 1000 /
			  (int64_t)(e->n_held ? e->n_held : 1);
	int64_t now_us = now * 1000;
	struct lock *lk, *hb[PLAN_SLOTS], *first = NULL;
	enum lease_action first_act = ACT_NONE;
	int n = 0, n_hb = 0, slots = 0;

	if (slot_us <= 0)
		slot_us = 1;
	if (now_us >= e->next_slot_mono_us) {
		int64_t behind = (now_us - e->next_slot_mono_us) / slot_us + 1;

		slots = behind > PLAN_SLOTS ? PLAN_SLOTS : (int)behind;
		if (max == 1)
			slots = 1;
	}
	*wake = min64(*wake, watch_locked(e, now));
	for (lk = e->all; lk; lk = lk->next) {
		enum lease_action want = wanted(lk);

		if (want == ACT_NONE)
			continue;
		if (lk->next_due_mono_ms > now) {
			*wake = min64(*wake, lk->next_due_mono_ms);
			continue;
		}
		if (want == ACT_HEARTBEAT) {
			if (slots)
				keep_overdue(hb, &n_hb, slots, lk);
			else
				*wake = min64(*wake, (e->next_slot_mono_us +
						      999) / 1000);
		} else if (max == 1) {
			if (!first || want < first_act) {
				first = lk;
				first_act = want;
			}
		} else if (n < max - PLAN_SLOTS) {
			lk->job = want;
			out[n++] = lk;
		} else {
			*wake = now; /* more to do: come back at once */
		}
	}
	if (first) {
		first->job = first_act;
		out[n++] = first;
		n_hb = 0;
	}
	for (int i = 0; i < n_hb; i++) {
		hb[i]->job = ACT_HEARTBEAT;
		out[n++] = hb[i];
	}
	if (n_hb) {
		int64_t next_ms;

		/* The slots used are spent; a backlog of unused ones is not
		 * kept beyond one pass. */
		if (e->next_slot_mono_us < now_us - slot_us * PLAN_SLOTS)
			e->next_slot_mono_us = now_us - slot_us * PLAN_SLOTS;
		e->next_slot_mono_us += slot_us * n_hb;
		next_ms = (e->next_slot_mono_us + 999) / 1000;
		/* At high rates, wake every few ms and send the slots that
		 * came meanwhile together, rather than once per slot. */
		*wake = min64(*wake, next_ms > now + SLOT_WAKE_MS
					     ? next_ms
					     : now + SLOT_WAKE_MS);
	}
	for (int i = 0; i < n; i++) {
		out[i]->queued = true;
		if (out[i]->job == ACT_RELEASE)
			out[i]->release_wanted = false;
		lock_ref(out[i]);
	}
	return n;
}

/* Makes one job's request (mu not held), then gives lk back. */
static void run_job(struct lock_engine *e, struct lock *lk)
{
	switch (lk->job) {
	case ACT_HEARTBEAT:
		lock_int_heartbeat(e, lk);
		break;
	case ACT_RELEASE:
		/* On failure the lock is lost and cleaned up later. */
		lock_int_release(e, lk, true);
		break;
	case ACT_CLEANUP:
		lock_int_cleanup(e, lk);
		break;
	}
	pthread_mutex_lock(&e->mu);
	lk->queued = false;
	/* The scheduler need not look again for a renewal that went well:
	 * its next one is a period away. */
	if (lk->state != LOCK_HELD || lk->release_wanted ||
	    lk->next_due_mono_ms < e->sched_wake_mono_ms) {
		e->kicked = true;
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
	lock_unref(e, lk);
}

int64_t lease_step(struct lock_engine *e)
{
	int64_t now = clk_mono_ms(e->clk), wake = now + LEASE_IDLE_MS;
	struct lock *pick = NULL;
	int n;

	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		return INT64_MAX;
	}
	n = plan_locked(e, now, &pick, 1, &wake);
	pthread_mutex_unlock(&e->mu);
	lock_int_notify_lost(e);
	if (!n)
		return wake;
	run_job(e, pick);
	return now;
}

static void *worker_main(void *arg)
{
	struct lock_engine *e = arg;
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	while (!e->stopping) {
		lk = e->jobs_head;
		if (!lk) {
			pthread_cond_wait(&e->work_cv, &e->mu);
			continue;
		}
		e->jobs_head = lk->job_next;
		if (!e->jobs_head)
			e->jobs_tail = NULL;
		lk->job_next = NULL;
		pthread_mutex_unlock(&e->mu);
		run_job(e, lk);
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* mu held. Queues the jobs for the workers. */
static void enqueue_locked(struct lock_engine *e, struct lock **jobs, int n)
{
	for (int i = 0; i < n; i++) {
		jobs[i]->job_next = NULL;
		if (e->jobs_tail)
			e->jobs_tail->job_next = jobs[i];
		else
			e->jobs_head = jobs[i];
		e->jobs_tail = jobs[i];
	}
	if (n == 1)
		pthread_cond_signal(&e->work_cv);
	else if (n > 1)
		pthread_cond_broadcast(&e->work_cv);
}

static void *scheduler_main(void *arg)
{
	struct lock_engine *e = arg;
	struct lock *jobs[PLAN_BATCH];

	pthread_mutex_lock(&e->mu);
	while (!e->stopping) {
		int64_t now = clk_mono_ms(e->clk), wake = now + LEASE_IDLE_MS;
		struct timespec ts;
		int n;

		e->kicked = false;
		n = plan_locked(e, now, jobs, PLAN_BATCH, &wake);
		enqueue_locked(e, jobs, n);
		pthread_mutex_unlock(&e->mu);
		/* Holders hear of a loss the moment their trust ends. */
		lock_int_notify_lost(e);
		pthread_mutex_lock(&e->mu);
		e->sched_wake_mono_ms = wake;
		if (e->stopping || e->kicked || wake <= clk_mono_ms(e->clk))
			continue;
		clk_mono_timespec(wake, &ts);
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* Stops and joins the threads started so far (mu not held). */
static void stop_threads(struct lock_engine *e, bool scheduler)
{
	pthread_mutex_lock(&e->mu);
	e->stopping = true;
	pthread_cond_broadcast(&e->cv);
	pthread_cond_broadcast(&e->work_cv);
	pthread_mutex_unlock(&e->mu);
	if (scheduler)
		pthread_join(e->thread, NULL);
	for (int i = 0; i < e->n_workers; i++)
		pthread_join(e->workers[i], NULL);
	free(e->workers);
	e->workers = NULL;
	e->n_workers = 0;
}

int lease_start(struct lock_engine *e)
{
	int n = e->cfg.lease_workers > 0 ? e->cfg.lease_workers : LEASE_WORKERS;
	int rc;

	if (e->thread_running)
		return 0;
	if (n > LEASE_WORKERS_MAX)
		n = LEASE_WORKERS_MAX;
	e->stopping = false;
	e->workers = calloc((size_t)n, sizeof(*e->workers));
	if (!e->workers)
		return -ENOMEM;
	for (e->n_workers = 0; e->n_workers < n; e->n_workers++) {
		rc = pthread_create(&e->workers[e->n_workers], NULL,
				    worker_main, e);
		if (rc) {
			stop_threads(e, false);
			return -rc;
		}
	}
	rc = pthread_create(&e->thread, NULL, scheduler_main, e);
	if (rc) {
		stop_threads(e, false);
		return -rc;
	}
	e->thread_running = true;
	return 0;
}

void lease_stop(struct lock_engine *e)
{
	struct lock *lk;

	if (!e->thread_running)
		return;
	stop_threads(e, true);
	/* Jobs never started give their locks back. */
	pthread_mutex_lock(&e->mu);
	lk = e->jobs_head;
	e->jobs_head = e->jobs_tail = NULL;
	pthread_mutex_unlock(&e->mu);
	while (lk) {
		struct lock *next = lk->job_next;

		pthread_mutex_lock(&e->mu);
		lk->queued = false;
		lk->job_next = NULL;
		pthread_mutex_unlock(&e->mu);
		lock_unref(e, lk);
		lk = next;
	}
	e->thread_running = false;
}

void lease_kick(struct lock_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->kicked = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}
