/* lease: the lease path of a lock engine (see lease.h). A scheduler thread
 * that never makes a request: it ends the trust of every lock whose safe
 * period passed (by the clock, at the very millisecond), tells the holders,
 * notices holders that went away, and queues the work that is due, no
 * more than the workers can take. A pool of workers, grown while jobs
 * wait, makes the requests (renewals, automatic releases, cleanups), each
 * lock on its own, so that no lock's request waits for another's.
 *
 * Threads: the scheduler and the workers; any thread through lease_kick.
 * Tests without threads drive the same steps with lease_step. Everything
 * shared is under engine->mu. */
#include "lease.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lease_groups.h"
#include "lease_index.h"
#include "lock_state.h"
#include "log.h"
#include "procwatch.h"

#define TAG		  "lease"
#define LEASE_IDLE_MS	  1000
#define LEASE_WORKERS	  64
#define LEASE_WORKERS_MAX 256
#define PLAN_BATCH	  256
#define PLAN_SLOTS	  64   /* renewals queued in one pass at most */
#define SLOT_WAKE_MS	  5    /* the scheduler's shortest sleep for slots */
#define BACKLOG_WAKE_MS	  50   /* its longest while renewals wait */
#define LEASE_SWEEP_MS	  1000 /* every lock noted again in the index */
#define LEASE_CLIENTS	  32   /* lock_config.other_clients's default */
/* Open files kept free of pidfds: 3 per HTTP client (its connection and
 * curl's wakeup pair), and some for /proc reads and logs. */
#define LEASE_FILES_PER_CLIENT 3
#define LEASE_FILES_SPARE      64

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

/* mu held. Ends the trust of locks past their safe period. Returns the
 * earliest time another may end. */
static int64_t watch_locked(struct lock_engine *e, int64_t now)
{
	int64_t wake = now + LEASE_IDLE_MS;
	struct lock *lk, *next;

	/* Nothing can be due before the earliest end of a safe period: no
	 * walk of every lock until then. */
	if (e->next_watch_mono_ms && now < e->next_watch_mono_ms)
		return e->next_watch_mono_ms;
	for (lk = e->all; lk; lk = next) {
		next = lk->next; /* lk may leave the list below */
		if (lock_int_trusted_locked(e, lk, now))
			wake = min64(wake, lock_int_safe_end(e, lk));
	}
	e->next_watch_mono_ms = wake;
	return wake;
}

/* mu held. Once a second, every lock is noted again in the index: a
 * change that made one due earlier without telling the index costs it at
 * most a second, never its renewal. */
static void sweep_locked(struct lock_engine *e, int64_t now)
{
	struct lock *lk;

	if (now < e->next_sweep_mono_ms)
		return;
	e->next_sweep_mono_ms = now + LEASE_SWEEP_MS;
	for (lk = e->all; lk; lk = lk->next)
		lease_index_note_locked(e, lk);
}

/* mu held. Claims lk for job want (its queued flag and a reference). */
static void claim(struct lock *lk, enum lease_action want, struct lock **out,
		  int *n)
{
	lk->job = want;
	lk->queued = true;
	if (want == ACT_RELEASE)
		lk->release_wanted = false;
	lock_ref(lk);
	out[(*n)++] = lk;
}

static int room_locked(const struct lock_engine *e, int n);

/* mu held. Claims the due jobs of kind act from the index's short list,
 * up to *n == limit (then comes back at once for the rest). */
static void take_urgent(struct lock_engine *e, enum lease_action act,
			int64_t now, struct lock **out, int *n, int limit,
			int64_t *wake)
{
	struct lock *lk, **pp = &e->urgent;

	while ((lk = *pp)) {
		enum lease_action want = wanted(lk);

		if (want != ACT_RELEASE && want != ACT_CLEANUP && !lk->busy &&
		    !lk->queued) {
			/* Wants neither any more. */
			lease_index_take_urgent_locked(e, pp);
			continue;
		}
		if (want != act) {
			pp = &lk->urgent_next;
			continue;
		}
		if (lk->next_due_mono_ms > now) {
			*wake = min64(*wake, lk->next_due_mono_ms);
			pp = &lk->urgent_next;
			continue;
		}
		if (*n >= limit) {
			if (room_locked(e, *n) > 0)
				*wake = now;
			else
				e->workers_full =
					true; /* an idle worker kicks */
			return;
		}
		lease_index_take_urgent_locked(e, pp);
		claim(lk, want, out, n);
	}
}

/* mu held. How many more jobs the workers can take now, besides the n
 * claimed in this pass: the idle ones, and those the pool wants and has
 * not started yet, less those above what it wants, which end (INT_MAX
 * without workers: lease_step makes its one request itself). */
static int room_locked(const struct lock_engine *e, int n)
{
	if (!e->max_workers)
		return INT_MAX;
	return e->idle_workers + (e->pool.target - e->n_workers) - e->n_jobs -
	       n;
}

/* mu held. How many jobs in all this pass may have claimed: at most max,
 * and what the workers can take (n claimed so far). */
static int urgent_limit(const struct lock_engine *e, int n, int max)
{
	int room = room_locked(e, n);

	if (room <= 0)
		return n;
	return room < max - n ? n + room : max;
}

/* mu held. Whether lk's renewal, now, would most likely be answered after
 * its trust ends: renewals take longer on average than it has left. */
static bool beat_hopeless_locked(struct lock_engine *e, struct lock *lk,
				 int64_t now)
{
	int64_t left = lock_int_safe_end(e, lk) - now;

	/* By the trust left, not by this request's deadline (at most a
	 * heartbeat on): a renewal cut at its heartbeat deadline can be
	 * tried again while trust is left; parked until the safe period
	 * ends, it never is. */
	if (e->beat_ms_avg <= 0)
		return false;
	return left < e->beat_ms_avg;
}

/* mu held. Claims the most overdue renewals from the top of the index's
 * heap, at most slots of them, *n == max in all, and what the workers can
 * take now (the rest wait in the heap, in order, and a worker that finds
 * no job wakes the scheduler). Returns how many.
 * While due renewals wait for workers (renew_backlog), one that would be
 * answered too late is not sent: with the most overdue lock always next,
 * every renewal came too late under a load the workers cannot carry, and
 * nearly every lock was lost; now the locks that can be renewed in time
 * are, and the clock ends the others' trust, as it would have. */
static int take_renewals(struct lock_engine *e, int64_t now, struct lock **out,
			 int *n, int max, int slots, int64_t *wake)
{
	struct lock *lk;
	int taken = 0;

	while ((lk = lease_index_top_locked(e))) {
		if (wanted(lk) != ACT_HEARTBEAT) {
			/* Busy, queued or no longer held: noted again when
			 * that changes. */
			lease_index_pop_locked(e);
			continue;
		}
		if (lk->next_due_mono_ms > now) {
			*wake = min64(*wake, lk->next_due_mono_ms);
			e->renew_backlog = false;
			break;
		}
		if (e->renew_backlog && beat_hopeless_locked(e, lk, now)) {
			lease_index_pop_locked(e);
			/* Past its safe period, not walked yet (tracked after
			 * the last walk): lost now, out of the heap. Parked
			 * at its safe end, <= now, it would be the top again,
			 * forever. */
			if (!lock_int_trusted_locked(e, lk, now))
				continue;
			/* Not looked at again before its trust ends. */
			lk->next_due_mono_ms = lock_int_safe_end(e, lk);
			lease_index_note_locked(e, lk);
			metrics_inc(e->metrics, MC_HEARTBEATS_SKIPPED);
			continue;
		}
		if (room_locked(e, *n) <= 0) {
			e->renew_backlog = true;
			e->renew_late_ms = now - lk->next_due_mono_ms;
			/* Looked at again soon, answers or not: the pool
			 * grows while renewals get late (lease_pool.c). */
			*wake = min64(*wake, now + BACKLOG_WAKE_MS);
			e->workers_full = true; /* an idle worker kicks */
			break;
		}
		if (taken == slots || *n >= max) {
			/* Spaced, not waiting for workers. */
			*wake = min64(*wake,
				      (e->next_slot_mono_us + 999) / 1000);
			e->renew_backlog = false;
			break;
		}
		lease_index_pop_locked(e);
		claim(lk, ACT_HEARTBEAT, out, n);
		taken++;
	}
	if (!lk)
		e->renew_backlog = false;
	return taken;
}

/* mu held. The renewal slots that have come by now_us (renewals are
 * spread evenly over the period, one slot of slot_us each): at most
 * PLAN_SLOTS, or one when a single job is wanted. */
static int slots_come(struct lock_engine *e, int64_t now_us, int64_t slot_us,
		      int max)
{
	int64_t behind;

	if (now_us < e->next_slot_mono_us)
		return 0;
	if (max == 1)
		return 1;
	behind = (now_us - e->next_slot_mono_us) / slot_us + 1;
	return behind > PLAN_SLOTS ? PLAN_SLOTS : (int)behind;
}

/* mu held. n_hb slots were used: they are spent, and a backlog of unused
 * ones is not kept beyond one pass. Returns when the next slot comes (at
 * high rates, a few ms on: the slots that came meanwhile go together). */
static int64_t spend_slots(struct lock_engine *e, int64_t now, int64_t slot_us,
			   int n_hb)
{
	int64_t now_us = now * 1000, next_ms;

	if (e->next_slot_mono_us < now_us - slot_us * PLAN_SLOTS)
		e->next_slot_mono_us = now_us - slot_us * PLAN_SLOTS;
	e->next_slot_mono_us += slot_us * n_hb;
	next_ms = (e->next_slot_mono_us + 999) / 1000;
	return next_ms > now + SLOT_WAKE_MS ? next_ms : now + SLOT_WAKE_MS;
}

/* mu held. Collects up to max due jobs, each lock at most once: every due
 * release and cleanup (from the index's short list), then the most overdue
 * renewals (from the top of its heap), one for each slot that has come
 * (renewals are spread evenly over the period, one slot of heartbeat /
 * locks held each). A pass costs what is due, not what is held. With max
 * 1, the single most urgent job. Returns the number found; *wake is when
 * the next one comes due. */
static int plan_locked(struct lock_engine *e, int64_t now, struct lock **out,
		       int max, int64_t *wake)
{
	/* Slots in microseconds: 10,000 locks at 5 s make 500 us slots. */
	int64_t slot_us = e->cfg.heartbeat_ms * 1000 /
			  (int64_t)(e->n_held ? e->n_held : 1);
	int n = 0, n_hb, slots;

	if (slot_us <= 0)
		slot_us = 1;
	slots = slots_come(e, now * 1000, slot_us, max);
	/* 1. Trust ends by the clock; keepers that went away are noticed. */
	*wake = min64(*wake, watch_locked(e, now));
	sweep_locked(e, now);
	*wake = min64(*wake, e->next_sweep_mono_ms);

	/* 2. In the order lease_step promises: releases, renewals,
	 * cleanups; urgent jobs leave room for the renewal slots, and none
	 * is queued beyond what the workers can take now (a cleanup can
	 * wait: queued ahead of renewals, hundreds of them made every
	 * renewal late). */
	take_urgent(e, ACT_RELEASE, now, out, &n,
		    max == 1 ? 1 : urgent_limit(e, n, max - slots), wake);
	if (max == 1 && n)
		return n;
	n_hb = take_renewals(e, now, out, &n, max, slots, wake);
	if (!(max == 1 && n))
		take_urgent(e, ACT_CLEANUP, now, out, &n,
			    urgent_limit(e, n, max), wake);
	/* 3. The slots used are spent. */
	if (n_hb)
		*wake = min64(*wake, spend_slots(e, now, slot_us, n_hb));
	return n;
}

/* Makes one job's request (mu not held), then gives lk back. */
static void run_job(struct lock_engine *e, struct lock *lk)
{
	switch (lk->job) {
	case ACT_HEARTBEAT:
		e->lease_jobs.heartbeat(e, lk);
		break;
	case ACT_RELEASE:
		/* On failure the lock is lost and cleaned up later. */
		e->lease_jobs.release(e, lk, true);
		break;
	case ACT_CLEANUP:
		e->lease_jobs.cleanup(e, lk);
		break;
	}
	pthread_mutex_lock(&e->mu);
	lk->queued = false;
	lease_index_note_locked(e, lk);
	/* The scheduler need not look again for a renewal that went well:
	 * its next one is a period away. */
	if (lk->state != LOCK_HELD || lk->release_wanted ||
	    lk->next_due_mono_ms < e->sched_wake_mono_ms)
		lock_int_kick_locked(e);
	pthread_mutex_unlock(&e->mu);
	lock_unref(e, lk);
}

/* mu held. Whether the session's heartbeat is due now (session mode);
 * else *wake is no later than when it will be. */
static bool session_due_locked(struct lock_engine *e, int64_t now,
			       int64_t *wake)
{
	if (!e->cfg.session || e->sess.busy || !e->sess.next_due_mono_ms)
		return false;
	if (e->sess.next_due_mono_ms <= now)
		return true;
	*wake = min64(*wake, e->sess.next_due_mono_ms);
	return false;
}

/* The session's own thread: one heartbeat per period, never queued
 * behind the locks' jobs (and never holding up theirs). */
static void *session_main(void *arg)
{
	struct lock_engine *e = arg;

	pthread_mutex_lock(&e->mu);
	while (!e->stopping) {
		int64_t now = clk_mono_ms(e->os.clk),
			wake = now + LEASE_IDLE_MS;
		struct timespec ts;

		metrics_inc(e->metrics, MC_SESSION_PASSES);
		if (session_due_locked(e, now, &wake)) {
			e->sess.busy = true;
			pthread_mutex_unlock(&e->mu);
			e->lease_jobs.session_beat(e);
			pthread_mutex_lock(&e->mu);
			continue;
		}
		/* Its own condition variable: the locks' writes (cv) do
		 * not wake it, only what may make a beat due sooner. */
		clk_mono_timespec(wake, &ts);
		pthread_cond_timedwait(&e->sess_cv, &e->mu, &ts);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

int64_t lease_step(struct lock_engine *e)
{
	int64_t now = clk_mono_ms(e->os.clk), wake = now + LEASE_IDLE_MS;
	struct lock *pick = NULL;
	int n;

	/* 1. Plan (mu held): trust ends by the clock, keepers that went
	 * away are noticed, and the one most urgent due job is claimed. */
	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		return INT64_MAX;
	}
	if (session_due_locked(e, now, &wake)) {
		e->sess.busy = true;
		pthread_mutex_unlock(&e->mu);
		e->lease_jobs.session_beat(e);
		return now;
	}
	/* Groups first: the host is asked with mu let go. */
	wake = min64(wake, lease_groups_check(e, now));
	now = clk_mono_ms(e->os.clk);
	n = e->stopping ? 0 : plan_locked(e, now, &pick, 1, &wake);
	pthread_mutex_unlock(&e->mu);
	/* 2. Acquirers hear of new losses (without mu). */
	lock_int_notify_lost(e);
	if (!n)
		return wake;
	/* 3. That job's request, inline. */
	run_job(e, pick);
	return now;
}

/* mu held. The calling worker leaves the pool (it is above what the pool
 * wants); the scheduler joins it. */
static void worker_end_locked(struct lock_engine *e)
{
	pthread_t self = pthread_self();

	for (int i = 0; i < e->n_workers; i++) {
		if (pthread_equal(e->workers[i], self)) {
			e->workers[i] = e->workers[e->n_workers - 1];
			break;
		}
	}
	e->n_workers--;
	e->ended[e->n_ended++] = self;
	metrics_set_lease_workers(e->metrics, (uint64_t)e->n_workers);
	/* Woken for a job it will not take: another worker takes it. */
	if (e->jobs_head)
		pthread_cond_signal(&e->work_cv);
	lock_int_wake_scheduler_locked(e);
}

static void *worker_main(void *arg)
{
	struct lock_engine *e = arg;
	struct lock *lk;

	pthread_mutex_lock(&e->mu);
	while (!e->stopping) {
		if (e->n_workers > e->pool.target) {
			worker_end_locked(e);
			break;
		}
		lk = e->jobs_head;
		if (!lk) {
			/* Due jobs waited for a worker: here is one. */
			if (e->workers_full) {
				e->workers_full = false;
				lock_int_wake_scheduler_locked(e);
			}
			e->idle_workers++;
			pthread_cond_wait(&e->work_cv, &e->mu);
			e->idle_workers--;
			if (!e->jobs_head && !e->stopping &&
			    e->n_workers <= e->pool.target)
				metrics_inc(e->metrics, MC_LEASE_IDLE_WAKES);
			continue;
		}
		e->n_jobs--;
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

static int lease_workers(const struct lock_config *cfg);

/* mu held (the scheduler). More workers while jobs wait with none idle,
 * up to what the pool wants (lease_pool.c). */
static void grow_locked(struct lock_engine *e)
{
	int want = e->n_jobs - e->idle_workers, was = e->n_workers;

	while (want-- > 0 && e->n_workers < e->pool.target) {
		int rc = pthread_create(&e->workers[e->n_workers], NULL,
					worker_main, e);

		if (rc) {
			/* Not tried again every pass, and room_locked counts
			 * no worker that cannot be had. */
			log_warn(TAG,
				 "lease workers: cannot start more than %d "
				 "(%s): the pool stays at that",
				 e->n_workers, strerror(rc));
			e->max_workers = e->pool.max = e->n_workers;
			if (e->pool.target > e->n_workers)
				e->pool.target = e->n_workers;
			break;
		}
		e->n_workers++;
	}
	metrics_set_lease_workers(e->metrics, (uint64_t)e->n_workers);
	/* Said at the first growth and every 32 workers more. */
	if (e->n_workers > was &&
	    (was == lease_workers(&e->cfg) || e->n_workers / 32 != was / 32))
		log_info(TAG,
			 "lease workers: %d, all busy with %d jobs waiting "
			 "(DynamoDB answers in %lld ms); now %d, at most %d",
			 was, e->n_jobs, (long long)e->beat_ms_avg,
			 e->n_workers, e->max_workers);
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
	e->n_jobs += n;
	/* One wake-up a job, up to the idle workers: a broadcast for a pass's
	 * few jobs woke every idle worker, and all but a few of them only
	 * queued on mu to find the queue empty. */
	for (int i = 0; i < n && i < e->idle_workers; i++)
		pthread_cond_signal(&e->work_cv);
	if (e->n_jobs > e->idle_workers && e->n_workers < e->pool.target)
		grow_locked(e);
}

/* mu held (the scheduler, after a pass). The pool's size is planned
 * (lease_pool.c, which also says when renewals run so late that locks
 * are at stake); returns true to pass again at once (more room). */
static bool size_pool_locked(struct lock_engine *e, int64_t now)
{
	struct lease_pool_seen seen = {
		.now = now,
		.running = e->n_workers,
		.backlog = e->renew_backlog || e->workers_full,
		.late_ms = e->renew_backlog ? e->renew_late_ms : 0,
		.slack_ms = e->cfg.safe_period_ms - e->cfg.heartbeat_ms,
		.beat_ms_avg = e->beat_ms_avg,
	};
	bool shrunk, grew;

	grew = lease_pool_plan_locked(&e->pool, &seen, &shrunk);
	if (shrunk)
		pthread_cond_broadcast(&e->work_cv); /* idle ones end */
	return grew;
}

/* mu held, let go while the workers that ended are joined, and the
 * memory their HTTP clients freed is given back to the system (glibc
 * keeps it in its arenas otherwise: the pool's RSS stayed that of its
 * largest size). */
static void join_ended_locked(struct lock_engine *e)
{
	pthread_t ended[PLAN_BATCH];
	bool trim;
	int n = 0;

	while (e->n_ended && n < PLAN_BATCH)
		ended[n++] = e->ended[--e->n_ended];
	if (!n)
		return;
	trim = e->n_workers <= e->pool.target; /* once, when all ended */
	pthread_mutex_unlock(&e->mu);
	for (int i = 0; i < n; i++)
		pthread_join(ended[i], NULL);
	if (trim)
		malloc_trim(0);
	pthread_mutex_lock(&e->mu);
}

static void *scheduler_main(void *arg)
{
	struct lock_engine *e = arg;
	struct lock *jobs[PLAN_BATCH];

	pthread_mutex_lock(&e->mu);
	while (!e->stopping) {
		int64_t now = clk_mono_ms(e->os.clk),
			wake = now + LEASE_IDLE_MS;
		struct timespec ts;
		int n;

		e->kicked = false;
		metrics_inc(e->metrics, MC_LEASE_PASSES);
		/* Groups first: the host is asked with mu let go. */
		wake = min64(wake, lease_groups_check(e, now));
		if (e->stopping)
			break;
		now = clk_mono_ms(e->os.clk);
		/* While it plans, a change noted needs no wake-up: the
		 * index is read after. */
		e->sched_wake_mono_ms = INT64_MIN;
		n = plan_locked(e, now, jobs, PLAN_BATCH, &wake);
		enqueue_locked(e, jobs, n);
		if (size_pool_locked(e, now))
			wake = now;
		/* Set before mu is let go: a job that ends from now on and
		 * comes due before wake kicks (run_job), never lost. */
		e->sched_wake_mono_ms = wake;
		pthread_mutex_unlock(&e->mu);
		/* Holders hear of a loss the moment their trust ends. */
		lock_int_notify_lost(e);
		log_burst_flush(&e->log_beats, now);
		log_burst_flush(&e->log_lost, now);
		log_burst_flush(&e->log_cleaned, now);
		pthread_mutex_lock(&e->mu);
		join_ended_locked(e);
		if (e->stopping || e->kicked || wake <= clk_mono_ms(e->os.clk))
			continue;
		clk_mono_timespec(wake, &ts);
		pthread_cond_timedwait(&e->sched_cv, &e->mu, &ts);
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
	pthread_cond_broadcast(&e->sess_cv);
	pthread_cond_broadcast(&e->sched_cv);
	pthread_cond_broadcast(&e->work_cv);
	pthread_mutex_unlock(&e->mu);
	if (scheduler)
		pthread_join(e->thread, NULL);
	if (e->sess_thread_running)
		pthread_join(e->sess_thread, NULL);
	e->sess_thread_running = false;
	/* No worker ends from now on (stopping): the lists stand still. */
	for (int i = 0; i < e->n_workers; i++)
		pthread_join(e->workers[i], NULL);
	for (int i = 0; i < e->n_ended; i++)
		pthread_join(e->ended[i], NULL);
	free(e->workers);
	e->workers = e->ended = NULL;
	e->n_workers = e->n_ended = 0;
	e->idle_workers = 0;
	metrics_set_lease_workers(e->metrics, 0);
}

static int lease_workers(const struct lock_config *cfg)
{
	int n = cfg->lease_workers > 0 ? cfg->lease_workers : LEASE_WORKERS;

	return n > LEASE_WORKERS_MAX ? LEASE_WORKERS_MAX : n;
}

size_t lock_files_needed(const struct lock_config *cfg)
{
	int others =
		cfg->other_clients > 0 ? cfg->other_clients : LEASE_CLIENTS;

	return (size_t)(LEASE_FILES_PER_CLIENT * (lease_workers(cfg) + others) +
			LEASE_FILES_SPARE);
}

/* How many workers the pool may grow to beyond n: up to
 * LEASE_WORKERS_MAX, each with the open files of an HTTP client, from at
 * most half of the open files the process may have beyond what it needs
 * (the rest is for the pidfds that watch holders). */
static int extra_workers(const struct lock_config *cfg, int n)
{
	struct rlimit rl;
	int64_t spare, extra = LEASE_WORKERS_MAX - n;

	if (extra <= 0 || getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY)
		return (int)extra;
	spare = (int64_t)rl.rlim_cur / 2 - (int64_t)lock_files_needed(cfg);
	if (spare < LEASE_FILES_PER_CLIENT)
		return 0;
	return (int)min64(extra, spare / LEASE_FILES_PER_CLIENT);
}

int lease_start(struct lock_engine *e)
{
	int n = lease_workers(&e->cfg), extra;
	struct procwatch *pw;
	int rc;

	if (e->thread_running)
		return 0;
	e->stopping = false;
	/* Not grown when the number was chosen (tests). */
	extra = e->cfg.lease_workers > 0 ? 0 : extra_workers(&e->cfg, n);
	e->max_workers = n + extra;
	/* One block: the running workers, then those that ended. */
	e->workers = calloc(2 * (size_t)e->max_workers, sizeof(*e->workers));
	if (!e->workers)
		return -ENOMEM;
	e->ended = e->workers + e->max_workers;
	e->n_ended = 0;
	pthread_mutex_lock(&e->mu); /* workers read n_workers */
	lease_pool_init(&e->pool, n, e->max_workers, e->cfg.lease_pool_idle_ms);
	for (e->n_workers = 0; e->n_workers < n; e->n_workers++) {
		rc = pthread_create(&e->workers[e->n_workers], NULL,
				    worker_main, e);
		if (rc) {
			pthread_mutex_unlock(&e->mu);
			stop_threads(e, false);
			return -rc;
		}
	}
	metrics_set_lease_workers(e->metrics, (uint64_t)e->n_workers);
	pthread_mutex_unlock(&e->mu);
	if (e->cfg.session) {
		rc = pthread_create(&e->sess_thread, NULL, session_main, e);
		if (rc) {
			stop_threads(e, false);
			return -rc;
		}
		e->sess_thread_running = true;
	}
	rc = pthread_create(&e->thread, NULL, scheduler_main, e);
	if (rc) {
		stop_threads(e, false);
		return -rc;
	}
	/* Without it (no pidfds: kernels before 5.3) groups are polled. */
	pw = procwatch_new(lease_groups_exited, e, 0);
	if (pw)
		procwatch_keep_files(
			pw, lock_files_needed(&e->cfg) +
				    (size_t)extra * LEASE_FILES_PER_CLIENT);
	else
		log_warn(TAG,
			 "no exit notifications (%s): process groups "
			 "are polled every %lld ms",
			 strerror(errno), (long long)e->cfg.pgrp_poll_ms);
	pthread_mutex_lock(&e->mu);
	e->procwatch = pw;
	pthread_mutex_unlock(&e->mu);
	e->thread_running = true;
	return 0;
}

void lease_stop(struct lock_engine *e)
{
	struct procwatch *pw;
	struct lock *lk;

	if (!e->thread_running)
		return;
	pthread_mutex_lock(&e->mu);
	pw = e->procwatch;
	e->procwatch = NULL;
	pthread_mutex_unlock(&e->mu);
	procwatch_free(pw); /* its thread may be in lease_groups_exited */
	stop_threads(e, true);
	/* Jobs never started give their locks back. */
	pthread_mutex_lock(&e->mu);
	lk = e->jobs_head;
	e->jobs_head = e->jobs_tail = NULL;
	e->n_jobs = 0;
	e->renew_backlog = e->workers_full = false;
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
	lock_int_kick_locked(e);
	pthread_mutex_unlock(&e->mu);
}
