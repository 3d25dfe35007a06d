/* lease_groups: which process groups holding locks are gone (see
 * lease_groups.h). Each lock that waits on its group carries when its
 * group is next due and whether the group's leader is watched by a pidfd
 * (the proof that the group lives); the exits procwatch tells are kept
 * until the next check, which takes the proof from the groups those
 * processes led. A check walks the locks under engine->mu twice (to pick
 * the groups due, then to act on the answers), with no system call, and
 * asks the host about at most GROUPS_PER_PASS groups between the two with
 * mu let go.
 *
 * Threads: the lease scheduler (or a test's lease_step) checks; procwatch's
 * thread tells exits; FUSE workers start watches (a close). Everything
 * shared is under engine->mu; the host is asked without it. */
#include "lease_groups.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "host.h"
#include "lease_index.h"
#include "lock_state.h"
#include "log.h"
#include "procwatch.h"

#define TAG "lease"

/* A group whose leader is watched is asked again after this (plus up to
 * GROUPS_SPREAD_MS, by its number, so that groups watched at once are not
 * all asked at once), on a grid of GROUPS_GRID_MS (so that the rechecks
 * of many groups cost a pass a second, not a pass each): it can only end
 * unnoticed if its leader joined another group. */
#define GROUPS_RECHECK_MS 10000
#define GROUPS_SPREAD_MS  2500
#define GROUPS_GRID_MS	  1000
#define GROUPS_PER_PASS	  128
#define GROUPS_SAY_MS	  60000 /* a full watch table is said so often */

struct group_ask {
	int64_t pgid;
	uint64_t start;
	bool leads;  /* its recorded leader leads it (so it lives) */
	bool alive;  /* it still has a process */
	int watched; /* its recorded leader is watched running; -1: not
		      * tried yet */
	bool full;   /* it could not be: no open file left for a watch */
};

struct group_batch {
	int n;
	bool more;     /* more groups were due than asked */
	bool suspects; /* a group asked had no watched leader */
	struct group_ask g[GROUPS_PER_PASS];
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* mu held. Whether lk waits on its holder's process group: held, or lost
 * and still shown to that group, with its acquiring file closed. */
static bool waits_on_group(const struct lock *lk)
{
	if (lk->hold != HOLD_PGRP || lk->file_open)
		return false;
	if (lk->state == LOCK_HELD)
		return !lk->release_wanted;
	return lk->state == LOCK_LOST && !lk->dismissed;
}

/* The first tick of the GROUPS_GRID_MS grid after t. A group that could
 * not be watched for want of open files is asked again at the next tick
 * after now, so that such groups are asked together, a pass per
 * GROUPS_PER_PASS of them a second, rather than a pass each. */
static int64_t grid_after(int64_t t)
{
	return (t / GROUPS_GRID_MS + 1) * GROUPS_GRID_MS;
}

static int64_t recheck_at(int64_t now, const struct lock_holder *h)
{
	return grid_after(now + GROUPS_RECHECK_MS + h->pgid % GROUPS_SPREAD_MS);
}

/* mu held. The wait before a group without a watched leader is asked
 * again: pgrp_poll_ms, and after an exit 1, 4, 16 and 64 ms, since an
 * exited process keeps its group alive until its parent reaps it. */
static int64_t suspect_delay(struct lock_engine *e)
{
	static const int64_t burst_ms[] = { 1, 4, 16, 64 };
	int n = (int)(sizeof(burst_ms) / sizeof(burst_ms[0]));
	int64_t d = e->cfg.pgrp_poll_ms;

	if (e->groups.burst > 0) {
		if (e->groups.burst > n)
			e->groups.burst = n;
		if (burst_ms[n - e->groups.burst] < d)
			d = burst_ms[n - e->groups.burst];
		e->groups.burst--;
	}
	return d;
}

static int cmp_pid(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* mu held. Whether pid's exit was told since the last check. */
static bool exit_told(const struct lock_engine *e, int64_t pid)
{
	return e->groups.exits_overflow ||
	       (e->groups.n_exits &&
		bsearch(&pid, e->groups.exits, (size_t)e->groups.n_exits,
			sizeof(int64_t), cmp_pid));
}

static int find(const struct group_batch *b, const struct lock_holder *h)
{
	for (int i = 0; i < b->n; i++)
		if (b->g[i].pgid == h->pgid && b->g[i].start == h->pgid_start)
			return i;
	return -1;
}

/* mu held. pid's exit matters from now on (lease_groups_exited). */
static void note_pid_locked(struct lock_engine *e, int64_t pid)
{
	if (pid > 1 && imap_put(&e->groups.pids, (uint64_t)pid, e))
		e->groups.pids_incomplete = true;
}

/* mu held. The pids whose exit matters for lk. */
static void note_pids_locked(struct lock_engine *e, const struct lock *lk)
{
	note_pid_locked(e, lk->holder.pgid);
	if (!lk->group_proven && lk->holder.pid != lk->holder.pgid)
		note_pid_locked(e, lk->holder.pid);
}

/* mu held. The groups whose leader (or, where the leader is not watched,
 * acquirer) exited lose their proof and are due now; picks the groups
 * due (at most GROUPS_PER_PASS). Every GROUPS_RECHECK_MS, the pids whose
 * exit matters are listed anew, forgetting those of locks gone. */
static void collect_locked(struct lock_engine *e, int64_t now,
			   struct group_batch *b)
{
	bool exits = e->groups.n_exits || e->groups.exits_overflow;
	bool prune = now >= e->groups.prune_mono_ms;
	struct lock *lk;

	if (e->groups.n_exits > 1)
		qsort(e->groups.exits, (size_t)e->groups.n_exits,
		      sizeof(int64_t), cmp_pid);
	if (prune) {
		imap_fini(&e->groups.pids);
		imap_init(&e->groups.pids);
		e->groups.pids_incomplete = false;
		e->groups.prune_mono_ms = now + GROUPS_RECHECK_MS;
	}
	for (lk = e->all; lk; lk = lk->next) {
		if (!waits_on_group(lk))
			continue;
		if (exits &&
		    (exit_told(e, lk->holder.pgid) ||
		     (!lk->group_proven && exit_told(e, lk->holder.pid)))) {
			log_debug(TAG, "group %lld of %s: an exit told",
				  (long long)lk->holder.pgid, lk->key);
			lk->group_proven = false;
			lk->group_due_mono_ms = now;
		}
		if (prune)
			note_pids_locked(e, lk);
		if (lk->group_due_mono_ms > now || find(b, &lk->holder) >= 0)
			continue;
		if (b->n == GROUPS_PER_PASS) {
			b->more = true;
			continue;
		}
		b->g[b->n++] = (struct group_ask){
			.pgid = lk->holder.pgid,
			.start = lk->holder.pgid_start,
			.watched = -1,
		};
		if (!lk->group_proven)
			b->suspects = true;
	}
	e->groups.n_exits = 0;
	e->groups.exits_overflow = false;
}

/* mu not held: reads /proc. */
static void ask_host(struct lock_engine *e, struct group_batch *b)
{
	for (int i = 0; i < b->n; i++) {
		struct group_ask *g = &b->g[i];

		g->leads = g->start &&
			   host_pgrp_signallable(&e->os, g->pgid, g->start);
		g->alive =
			g->leads || host_pgrp_alive(&e->os, g->pgid, g->start);
	}
	metrics_add(e->metrics, MC_GROUP_CHECKS, (uint64_t)b->n);
}

/* mu held. Whether rc is a watch refused for want of open files
 * (procwatch keeps the daemon's sockets and /proc reads theirs): its group
 * is checked once a second instead (GROUPS_GRID_MS), which costs CPU and
 * up to a second of its lock's release; said once a minute. */
static bool watch_refused_locked(struct lock_engine *e, int rc)
{
	struct rlimit rl;

	if (rc != -ENOSPC)
		return false;
	if (!log_gap_due(&e->groups.full_said_mono_ms, now_mono(e),
			 GROUPS_SAY_MS))
		return true;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		rl.rlim_cur = 0;
	log_warn(TAG,
		 "%zu process groups watched, as many as %llu open files "
		 "allow (RLIMIT_NOFILE): the others are checked every %d ms "
		 "instead, which costs CPU and frees their locks up to that "
		 "late; a higher limit (LimitNOFILE=) saves it",
		 procwatch_count(e->procwatch), (unsigned long long)rl.rlim_cur,
		 GROUPS_GRID_MS);
	return true;
}

/* mu held. Watches the process of pid pgid from now on (its exit is
 * told, whatever it is) and says whether it is the recorded leader
 * (started at start) and still running: the proof that the group lives.
 * The process watched must be that leader, not one that took its number
 * since (the watch may begin long after the acquire: a file kept open,
 * then closed). */
static bool leader_watched_locked(struct lock_engine *e, int64_t pgid,
				  uint64_t start, bool *full)
{
	uint64_t watched_start = 0;
	int rc;

	*full = false;
	if (!e->procwatch || pgid <= 1)
		return false;
	if (!start) { /* the leader is unknown: its exit is still told */
		*full = watch_refused_locked(e,
					     procwatch_add(e->procwatch, pgid));
		return false;
	}
	rc = procwatch_add_start(e->procwatch, pgid, &watched_start);
	*full = watch_refused_locked(e, rc);
	return rc == 0 && watched_start == start;
}

/* mu held. leader_watched_locked, once per group and check. */
static bool watch_leader_locked(struct lock_engine *e, struct group_ask *g)
{
	if (g->watched < 0)
		g->watched =
			leader_watched_locked(e, g->pgid, g->start, &g->full);
	return g->watched;
}

/* mu held. lk's group is gone: a held lock is released, a lost one
 * leaves its group's view. */
static void group_gone_locked(struct lock_engine *e, struct lock *lk,
			      int64_t now)
{
	if (lk->state == LOCK_HELD) {
		lk->release_wanted = true;
		lk->next_due_mono_ms = now;
		lease_index_note_locked(e, lk);
	} else {
		lk->dismissed = true;
		lock_int_retire_locked(e, lk);
	}
}

/* mu held. Acts on the answers and returns when the next check is due
 * (within GROUPS_RECHECK_MS, so that a lock that began waiting on its
 * group unannounced is still looked at). */
static int64_t apply_locked(struct lock_engine *e, int64_t now,
			    struct group_batch *b, int64_t delay)
{
	int64_t next = now + GROUPS_RECHECK_MS;
	struct lock *lk, *lk_next;

	for (lk = e->all; lk; lk = lk_next) {
		int i = -1;

		lk_next = lk->next; /* lk may leave the list */
		if (!waits_on_group(lk))
			continue;
		if (b->n && lk->group_due_mono_ms <= now)
			i = find(b, &lk->holder);
		if (i >= 0 && !b->g[i].alive) {
			group_gone_locked(e, lk, now);
			continue;
		}
		if (i >= 0) {
			lk->group_proven = b->g[i].leads &&
					   watch_leader_locked(e, &b->g[i]);
			log_debug(TAG, "group %lld of %s: alive, %s",
				  (long long)lk->holder.pgid, lk->key,
				  lk->group_proven ? "its leader watched"
						   : "polled");
			lk->group_due_mono_ms =
				lk->group_proven ? recheck_at(now, &lk->holder)
				: b->g[i].full	 ? grid_after(now)
						 : now + delay;
		}
		next = min64(next, lk->group_due_mono_ms);
	}
	return next;
}

int64_t lease_groups_check(struct lock_engine *e, int64_t now)
{
	struct group_batch b;
	int64_t next;

	if (now < e->groups.next_check_mono_ms)
		return e->groups.next_check_mono_ms;
	b.n = 0;
	b.more = b.suspects = false;
	collect_locked(e, now, &b);
	if (b.n) {
		pthread_mutex_unlock(&e->mu);
		ask_host(e, &b);
		pthread_mutex_lock(&e->mu);
	}
	next = apply_locked(e, now, &b,
			    b.suspects ? suspect_delay(e)
				       : e->cfg.pgrp_poll_ms);
	/* Exits told meanwhile, or groups left for the next pass: now. */
	if (b.more || e->groups.n_exits || e->groups.exits_overflow)
		next = now;
	e->groups.next_check_mono_ms = next;
	return next;
}

void lease_groups_watch_locked(struct lock_engine *e, struct lock *lk)
{
	const struct lock_holder *h = &lk->holder;
	int64_t now = now_mono(e);
	bool full;

	/* The acquirer is watched too: where the leader is unknown (gone
	 * before the acquire), its exit is the one to tell. */
	lk->group_proven =
		leader_watched_locked(e, h->pgid, h->pgid_start, &full);
	if (e->procwatch && h->pid > 1 && h->pid != h->pgid &&
	    !lk->group_proven)
		watch_refused_locked(e, procwatch_add(e->procwatch, h->pid));
	note_pids_locked(e, lk);
	lk->group_due_mono_ms = lk->group_proven ? recheck_at(now, h)
						 : now + e->cfg.pgrp_poll_ms;
	if (lk->group_due_mono_ms < e->groups.next_check_mono_ms) {
		e->groups.next_check_mono_ms = lk->group_due_mono_ms;
		lock_int_wake_scheduler_by_locked(e, lk->group_due_mono_ms);
	}
}

void lease_groups_exited(void *engine, const int64_t *pids, int n)
{
	struct lock_engine *e = engine;
	bool matter = false;

	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < n; i++) {
		/* An exit no lock's group depends on costs no pass: a
		 * process that acquired and let go, an acquirer whose
		 * leader is watched. */
		if (!e->groups.pids_incomplete &&
		    !imap_get(&e->groups.pids, (uint64_t)pids[i]))
			continue;
		matter = true;
		if (e->groups.n_exits < LEASE_GROUPS_EXITS_MAX)
			e->groups.exits[e->groups.n_exits++] = pids[i];
		else
			e->groups.exits_overflow = true;
	}
	if (!matter) {
		pthread_mutex_unlock(&e->mu);
		return;
	}
	e->groups.next_check_mono_ms = 0;
	e->groups.burst = 4;
	lock_int_wake_scheduler_locked(e);
	pthread_mutex_unlock(&e->mu);
}
