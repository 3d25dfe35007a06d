/* lock_engine_groups: the lock engine's hold modes and process groups,
 * on the in-memory store: locks kept while their holder (fd, process
 * group) lives and let go when it ends; on a fake machine (host_fake),
 * process groups that die on cue and the lost signal; with the real clock
 * and threads, a lease path whose one slow release delays no other lock
 * and a group's end learnt from its exit; lost locks that are not silently
 * replaced under their process group. Threads: the test's, and the lease
 * threads of the cases on the real clock; children are forked to lead
 * process groups. */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine_fixture.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "procgrp.h"
#include "store_fault.h"
#include "store_mem.h"

/* A child that leads its own process group and waits to be killed; it
 * leads the group by the time this returns (bounded: 200 ms). */
static pid_t group_leader_child(void)
{
	pid_t child = fork();
	int i;

	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failure */
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	for (i = 0; i < 200 && getpgid(child) != child; i++)
		usleep(1000);
	return child;
}

/* A child that leads its own process group with a second process in it
 * (*member, its child, which outlives it). The caller is a subreaper, so
 * that member is its to reap once the leader is gone. */
static pid_t group_with_member(pid_t *member)
{
	pid_t child;
	int p[2], i;

	CHECK_INT(pipe(p), 0);
	child = fork();
	if (child == 0) {
		pid_t m;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		m = fork();
		if (m == 0) {
			prctl(PR_SET_PDEATHSIG,
			      SIGKILL); /* ends with the test */
			pause();
			_exit(0);
		}
		if (write(p[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(3);
		pause();
		_exit(0);
	}
	close(p[1]);
	CHECK_INT((int)read(p[0], member, sizeof(*member)),
		  (int)sizeof(*member));
	close(p[0]);
	for (i = 0; i < 200 && getpgid(child) != child; i++)
		usleep(1000);
	return child;
}

/* A holder that is the leader of its own group, with its start time. */
static struct lock_holder leader_holder(pid_t leader)
{
	struct lock_holder h = holder(leader);

	h.pid = leader;
	h.pgid_start = procgrp_start_time(leader, NULL);
	CHECK(h.pgid_start != 0);
	return h;
}

/* Waits (at most ms) until every one of n locks is released. */
static bool all_released(struct lock_engine *e, struct lock **lks, int n,
			 int ms)
{
	for (int t = 0; t < ms; t++) {
		int i;

		for (i = 0; i < n; i++)
			if (lock_get_state(e, lks[i]) != LOCK_RELEASED)
				break;
		if (i == n)
			return true;
		usleep(1000);
	}
	return false;
}

static pid_t dead_pgrp(void)
{
	pid_t child = fork();

	if (child == 0) {
		setpgid(0, 0);
		_exit(0);
	}
	setpgid(child, child); /* may fail if it already exited; fine */
	waitpid(child, NULL, 0);
	return child;
}

/* An engine of cfg on the real clock and the in-memory store, with its
 * lease threads (the exit watcher among them) started, on host (NULL:
 * this machine), counting into m (may be NULL). Children a test forks
 * are forked before: ThreadSanitizer refuses threads in a child forked
 * from a process that has threads. */
struct live {
	struct store *mem;
	struct observe *o;
	struct lock_engine *e;
};

static struct lock_engine *live_start(struct live *l,
				      const struct lock_config *cfg,
				      const struct host *host,
				      struct metrics *m)
{
	l->mem = store_mem_new();
	l->o = observe_new(&clk_system, 0);
	CHECK(l->mem && l->o);
	l->e = host ? lock_engine_new_host(cfg, l->mem, l->o, host, m, NULL)
		    : lock_engine_new(cfg, l->mem, l->o, &clk_system, m, NULL);
	CHECK(l->e);
	CHECK_INT(lease_start(l->e), 0);
	return l->e;
}

/* Stops the lease threads, lets go of the n locks the test still holds
 * references to, and frees the engine (engine_steps_stop checks it). */
static void live_stop(struct live *l, struct lock **lks, int n)
{
	lease_stop(l->e);
	for (int i = 0; i < n; i++)
		lock_unref(l->e, lks[i]);
	CHECK_INT(engine_steps_stop(l->e, l->o, l->mem), 0);
}

/* key, acquired by h and closed, is still held after a second of lease
 * steps. */
static void check_held_after_close(const char *key, struct lock_holder *h)
{
	struct lock *lk;

	CHECK_INT(lock_acquire(eng, key, h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(1000);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	lock_unref(eng, lk);
}

static void test_hold_modes(void)
{
	struct lock_holder h;
	struct lock *lk;

	/* fd: released the moment the acquiring open file closes. */
	setup(HOLD_FD);
	h = holder(getpgrp());
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK_INT(store_mem_lock_count(st), 0);
	CHECK_INT(released_calls, 1);
	CHECK_INT(metrics_get(&met, MC_AUTO_RELEASES), 1);
	lock_unref(eng, lk);
	teardown();

	/* pgrp: kept while the group lives, released once it is gone. */
	setup(HOLD_PGRP);
	h = holder(getpgrp());
	check_held_after_close("a", &h);
	h = holder(dead_pgrp());
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	advance(1000); /* open: held even though the group is gone */
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	lock_holder_closed(eng, lk);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	lock_unref(eng, lk);

	/* The group dies after the close: found by the lease thread. */
	pid_t child = fork();

	if (child == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(child, child);
	h = holder(child);
	CHECK_INT(lock_acquire(eng, "c", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(300);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	advance(150);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	lock_unref(eng, lk);
	teardown();

	/* unlink: never released automatically. */
	setup(HOLD_UNLINK);
	h = holder(dead_pgrp());
	check_held_after_close("a", &h);
	teardown();
}

/* On a fake machine (no fork, no /proc): a pgrp-mode lock is kept while
 * its holder's group lives and released on the pass after the group dies;
 * a lost lock's holder group is signalled through the host, once, and a
 * group the host cannot prove is the holder's is not. */
static void test_fake_host_groups(void)
{
	struct lock_holder h = holder(4242);
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk;

	setup_on(HOLD_PGRP, true, SIGUSR1);
	CHECK_INT(lock_acquire(eng, "a", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	advance(300);
	CHECK_INT(lock_get_state(eng, lk), LOCK_HELD);
	CHECK(host_fake_alive_checks(&fhost) > 0);
	host_fake_kill(&fhost, 4242);
	advance(150);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK_INT(released_calls, 1);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, lk);

	/* A loss by the safe period: the holder's group hears of it. */
	h = holder(4343);
	CHECK_INT(lock_acquire(eng, "b", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(1600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(host_fake_signals(&fhost), 1);
	CHECK_INT(fhost.last_pgid, 4343);
	CHECK_INT(fhost.last_sig, SIGUSR1);
	store_mem_set_faults(st, &up);
	advance(600);
	CHECK_INT(host_fake_signals(&fhost), 1);
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);

	/* Not provably the holder's group any more: no signal. */
	fhost.not_signallable = true;
	h = holder(4444);
	CHECK_INT(lock_acquire(eng, "c", &h, &lk, NULL, NULL), 0);
	store_mem_set_faults(st, &down);
	advance(1600);
	CHECK_INT(lock_get_state(eng, lk), LOCK_LOST);
	CHECK_INT(host_fake_signals(&fhost), 1);
	store_mem_set_faults(st, &up);
	CHECK_INT(lock_release(eng, lk), 0);
	lock_unref(eng, lk);
	teardown();
}

/* The lease path with threads and the real clock: an automatic release
 * that takes 1.5 s (three safe periods) delays no renewal of another lock. */
static int slow_delete(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	if (op == SF_DELETE && !strcmp(key, "slow"))
		usleep(1500 * 1000);
	return 0;
}

static void test_lease_path_parallel(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_PGRP);
	struct store_fault sf;
	struct store *mem = store_mem_new();
	struct observe *o = observe_new(&clk_system, 0);
	struct lock_engine *e;
	struct lock *slow, *fast;
	struct lock_holder h;
	int renews, status;
	pid_t child;

	CHECK(mem && o);
	cfg.lease_ms = 1000;
	cfg.heartbeat_ms = 100;
	cfg.safe_period_ms = 500;
	cfg.pgrp_poll_ms = 20;
	store_fault_init(&sf, mem);
	sf.before = slow_delete;
	e = lock_engine_new(&cfg, &sf.base, o, &clk_system, NULL, NULL);
	CHECK(e);
	child = group_leader_child();
	/* Started first: starting 65 threads can take longer than the safe
	 * period under ThreadSanitizer on a loaded machine. */
	CHECK_INT(lease_start(e), 0);
	h = holder(child);
	CHECK_INT(lock_acquire(e, "slow", &h, &slow, NULL, NULL), 0);
	lock_holder_closed(e, slow); /* its group still lives */
	h = holder(getpgrp());
	CHECK_INT(lock_acquire(e, "fast", &h, &fast, NULL, NULL), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* The group is gone: slow's release starts and takes 1.5 s. */
	usleep(200 * 1000);
	renews = store_mem_count(mem, SMEM_RENEW);
	usleep(1000 * 1000);
	CHECK(store_mem_count(mem, SMEM_RENEW) >= renews + 5);
	CHECK_INT(lock_get_state(e, fast), LOCK_HELD);
	CHECK_INT(lock_renew_sync(e, fast), 0);
	lease_stop(e);
	CHECK_INT(lock_get_state(e, slow), LOCK_RELEASED);
	lock_unref(e, slow);
	lock_unref(e, fast);
	CHECK_INT(engine_steps_stop(e, o, mem), 0);
}

/* hold=pgrp: the holder group's end is learnt from the exit itself, not
 * from the poll: with the poll a minute apart, the lock is released
 * within a fraction of a second of the holder's death. */
static void test_exit_notification(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct live l;
	struct lock_engine *e;
	struct lock *lk;
	struct lock_holder h;
	int64_t t0, took;
	int status, i;
	pid_t child;

	cfg.pgrp_poll_ms = 60000;
	child = group_leader_child();
	e = live_start(&l, &cfg, NULL, NULL);
	usleep(50 * 1000); /* the first group check is behind us */
	h = holder(child);
	h.pid = child;
	CHECK_INT(lock_acquire(e, "ex", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(e, lk); /* held by its group from now on */
	usleep(20 * 1000);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	t0 = clk_mono_ms(&clk_system);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	for (i = 0; i < 2000 && lock_get_state(e, lk) != LOCK_RELEASED; i++)
		usleep(1000);
	took = clk_mono_ms(&clk_system) - t0;
	CHECK_INT(lock_get_state(e, lk), LOCK_RELEASED);
	CHECK(took < 1000);
	printf("released %lld ms after its holder group died (poll: 60 s)\n",
	       (long long)took);
	live_stop(&l, &lk, 1);
}

/* hold=pgrp: a lock its process group lost is not replaced under it by a
 * new acquire of that group; unlinking it (lock_release) lets go of it. */
static void test_lost_not_replaced(void)
{
	struct lock_holder h = holder(getpgrp());
	struct store_mem_faults down = { .down = 1 }, up = { 0 };
	struct lock *lk, *again, *lost;
	uint64_t start;

	/* Lead a group of our own: the group we were started in may have
	 * lost its leader (a shell that ran us in the background and
	 * exited), and a group without its leader has no start time. */
	CHECK_INT(setpgid(0, 0), 0);
	h = holder(getpgrp());
	start = procgrp_start_time(getpgrp(), NULL);
	h.pgid_start = start;
	setup(HOLD_PGRP);
	CHECK_INT(lock_acquire(eng, "j", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk); /* no fd: held by the group */
	lock_unref(eng, lk);
	store_mem_set_faults(st, &down);
	advance(1600);
	store_mem_set_faults(st, &up);
	advance(600); /* its stale row is cleaned up */
	CHECK_INT(store_mem_lock_count(st), 0);
	lost = lock_find_lost(eng, "j", getpgrp(), start);
	CHECK(lost != NULL);
	CHECK(lock_find_lost(eng, "j", getpgrp() + 100000, 0) == NULL);
	CHECK_INT(lock_acquire(eng, "j", &h, &again, NULL, NULL), -EIO);
	/* A newcomer group that reused the number (its leader started at
	 * another time) is not the holder that lost it. */
	CHECK(start > 0);
	CHECK(lock_find_lost(eng, "j", getpgrp(), start + 1) == NULL);
	/* Another group may take it. */
	{
		struct lock_holder other = holder(getpgrp() + 100000);

		CHECK_INT(lock_acquire(eng, "j", &other, &again, NULL, NULL),
			  0);
		CHECK_INT(lock_release(eng, again), 0);
		lock_unref(eng, again);
	}
	CHECK_INT(lock_release(eng, lost), 0); /* the holder's rm */
	lock_unref(eng, lost);
	CHECK(lock_find_lost(eng, "j", getpgrp(), start) == NULL);
	CHECK_INT(lock_acquire(eng, "j", &h, &again, NULL, NULL), 0);
	CHECK_INT(lock_release(eng, again), 0);
	lock_unref(eng, again);
	teardown();
}

/* A holder group found gone while its lock's heartbeat is in flight: the
 * lock is released as soon as the heartbeat ends, not a heartbeat period
 * later (the heartbeat's answer used to set the lock's next job a period
 * away, over the release the group check had asked for: 5 s by default). */
static int64_t dies_in_renew; /* group the hook kills, once */

static int kill_during_renew(void *arg, enum store_fault_op op, const char *key)
{
	(void)arg;
	(void)key;
	if (op != SF_RENEW || !dies_in_renew)
		return 0;
	host_fake_kill(&fhost, dies_in_renew);
	dies_in_renew = 0;
	/* While the renewal is in flight, a group check comes due and
	 * finds the group gone. */
	clk_fake_advance(&fclk, 200);
	lease_step(eng);
	return 0;
}

static void test_death_during_heartbeat(void)
{
	struct lock_config cfg =
		engine_steps_config("me", "testhost", HOLD_PGRP);
	struct lock_holder h = holder(5151);
	struct store_fault sf;
	struct lock *lk;

	setup_on(HOLD_PGRP, true, 0);
	lock_engine_free(eng);
	store_fault_init(&sf, st);
	sf.before = kill_during_renew;
	eng = lock_engine_new_host(&cfg, &sf.base, obs, &fhost.host, &met,
				   NULL);
	CHECK(eng);
	CHECK_INT(lock_acquire(eng, "hb", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(eng, lk);
	dies_in_renew = 5151;
	advance(cfg.heartbeat_ms); /* the renewal, and the death in it */
	CHECK_INT((int)dies_in_renew, 0);
	advance(20);
	CHECK_INT(lock_get_state(eng, lk), LOCK_RELEASED);
	CHECK_INT(store_mem_lock_count(st), 0);
	lock_unref(eng, lk);
	teardown();
}

/* A close whose group's leader is watched running asks /proc nothing:
 * the watch proves the group (before: a read of /proc at every close,
 * one of the three a lock cycle cost). A group whose leader is not
 * watched, or whose number another process has taken, is still asked. */
static void test_close_of_watched_group(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct host_fake f;
	struct live l;
	struct lock_engine *e;
	struct lock *lk;
	struct lock_holder h;
	int before;

	host_fake_init(&f, &clk_system);
	e = live_start(&l, &cfg, &f.host, NULL); /* the exit watcher */
	/* This process as the leader: watched, and running. */
	h = holder(getpid());
	h.pgid_start = procgrp_start_time(getpid(), NULL);
	CHECK(h.pgid_start != 0);
	CHECK_INT(lock_acquire(e, "w", &h, &lk, NULL, NULL), 0);
	before = host_fake_alive_checks(&f);
	lock_holder_closed(e, lk);
	CHECK_INT(host_fake_alive_checks(&f), before);
	CHECK(lock_holder_live(e, lk));
	CHECK_INT(host_fake_alive_checks(&f), before);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	CHECK_INT(lock_release(e, lk), 0);
	lock_unref(e, lk);
	/* Another process than the leader recorded took its number (another
	 * start time): asked at the close. */
	h.pgid_start++;
	CHECK_INT(lock_acquire(e, "r", &h, &lk, NULL, NULL), 0);
	before = host_fake_alive_checks(&f);
	lock_holder_closed(e, lk);
	CHECK_INT(host_fake_alive_checks(&f), before + 1);
	CHECK_INT(lock_release(e, lk), 0);
	lock_unref(e, lk);
	/* A leader unknown (start 0): asked at the close. */
	h.pgid_start = 0;
	CHECK_INT(lock_acquire(e, "u", &h, &lk, NULL, NULL), 0);
	before = host_fake_alive_checks(&f);
	lock_holder_closed(e, lk);
	CHECK_INT(host_fake_alive_checks(&f), before + 1);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	CHECK_INT(lock_release(e, lk), 0);
	live_stop(&l, &lk, 1);
	host_fake_fini(&f);
}

/* The exit of a lock's acquirer that does not lead its group, whose
 * leader is watched running, costs no group check (before: every such
 * exit made the scheduler walk every lock and ask /proc again, which with
 * 10,000 groups held cost a few ms a lock cycle); the leader's exit still
 * frees the lock. */
static void test_acquirer_exit_costs_nothing(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct live l;
	struct metrics m;
	struct lock_engine *e;
	struct lock *lk;
	struct lock_holder h;
	pid_t leader, acquirer;
	uint64_t c0;
	int status;

	metrics_init(&m);
	leader = group_leader_child();
	acquirer = fork();
	if (acquirer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	CHECK_INT(setpgid(acquirer, leader), 0); /* into the leader's group */
	e = live_start(&l, &cfg, NULL, &m);
	h = leader_holder(leader);
	h.pid = acquirer;
	CHECK_INT(lock_acquire(e, "a", &h, &lk, NULL, NULL), 0);
	lock_holder_closed(e, lk);
	usleep(50 * 1000);
	c0 = metrics_get(&m, MC_GROUP_CHECKS);
	kill(acquirer, SIGKILL);
	CHECK_INT(waitpid(acquirer, &status, 0), acquirer);
	usleep(200 * 1000);
	CHECK_INT((int)(metrics_get(&m, MC_GROUP_CHECKS) - c0), 0);
	CHECK_INT(lock_get_state(e, lk), LOCK_HELD);
	kill(leader, SIGKILL);
	CHECK_INT(waitpid(leader, &status, 0), leader);
	CHECK(all_released(e, &lk, 1, 1000));
	live_stop(&l, &lk, 1);
}

/* hold=pgrp at scale: groups whose leaders are watched by their pidfds
 * are not asked of /proc every poll (before: every group every
 * pgrp_poll_ms, with the engine's mutex held); a group whose leader died
 * while another of its processes lives is polled, and kept until that
 * process dies too; and groups that all die at once are all let go of,
 * from their exits. */
#define SCALE_GROUPS 40

static void test_groups_scale(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct live l;
	struct metrics m;
	struct lock_engine *e;
	struct lock *lks[SCALE_GROUPS], *lm;
	pid_t kids[SCALE_GROUPS], lead, member;
	uint64_t c0, c1, c2;
	int64_t t0, took;
	struct lock_holder h;
	char key[16];
	int i, status;

	metrics_init(&m);
	cfg.pgrp_poll_ms = 20;
	CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	for (i = 0; i < SCALE_GROUPS; i++)
		kids[i] = group_leader_child();
	lead = group_with_member(&member);
	e = live_start(&l, &cfg, NULL, &m);
	for (i = 0; i < SCALE_GROUPS; i++) {
		h = leader_holder(kids[i]);
		snprintf(key, sizeof(key), "g%d", i);
		CHECK_INT(lock_acquire(e, key, &h, &lks[i], NULL, NULL), 0);
		lock_holder_closed(e, lks[i]);
	}
	h = leader_holder(lead);
	CHECK_INT(lock_acquire(e, "m", &h, &lm, NULL, NULL), 0);
	lock_holder_closed(e, lm);

	/* Idle: no group is asked (25 polls of 41 groups before). */
	usleep(100 * 1000);
	c0 = metrics_get(&m, MC_GROUP_CHECKS);
	usleep(500 * 1000);
	c1 = metrics_get(&m, MC_GROUP_CHECKS);
	printf("%d groups held 500 ms: %llu checks of /proc\n",
	       SCALE_GROUPS + 1, (unsigned long long)(c1 - c0));
	CHECK(c1 - c0 < SCALE_GROUPS);
	CHECK_INT(lock_get_state(e, lm), LOCK_HELD);

	/* The leader dies, a process of its group lives: kept, and polled. */
	kill(lead, SIGKILL);
	CHECK_INT(waitpid(lead, &status, 0), lead);
	usleep(300 * 1000);
	CHECK_INT(lock_get_state(e, lm), LOCK_HELD);
	c2 = metrics_get(&m, MC_GROUP_CHECKS);
	CHECK(c2 - c1 >= 5);
	t0 = clk_mono_ms(&clk_system);
	kill(member, SIGKILL);
	CHECK_INT(waitpid(member, &status, 0), member); /* we reap it */
	CHECK(all_released(e, &lm, 1, 1000));
	printf("its last process gone: released after %lld ms\n",
	       (long long)(clk_mono_ms(&clk_system) - t0));

	/* Every group at once. */
	t0 = clk_mono_ms(&clk_system);
	for (i = 0; i < SCALE_GROUPS; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < SCALE_GROUPS; i++)
		waitpid(kids[i], &status, 0);
	CHECK(all_released(e, lks, SCALE_GROUPS, 2000));
	took = clk_mono_ms(&clk_system) - t0;
	printf("%d groups killed at once: all released after %lld ms\n",
	       SCALE_GROUPS, (long long)took);
	CHECK(took < 1000);
	lock_unref(e, lm); /* released already */
	live_stop(&l, lks, SCALE_GROUPS);
	CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

/* The host is asked about groups with the engine's mutex let go: while a
 * check of /proc takes 200 ms (a slow host), acquires and releases of
 * other keys go on (before: each waited for the check). */
static void test_slow_group_check(void)
{
	struct lock_config cfg = long_lease(HOLD_PGRP);
	struct host_fake f;
	struct live l;
	struct lock_engine *e;
	struct lock *held, *lk;
	struct lock_holder h = holder(4747);
	int64_t t0, worst = 0;
	int i;

	host_fake_init(&f, &clk_system);
	cfg.pgrp_poll_ms = 20;
	e = live_start(&l, &cfg, &f.host, NULL);
	/* Group 4747 is no process here: its leader is not watched, so it
	 * is asked every poll. */
	CHECK_INT(lock_acquire(e, "slowgroup", &h, &held, NULL, NULL), 0);
	lock_holder_closed(e, held);
	__atomic_store_n(&f.check_delay_ms, 200, __ATOMIC_RELAXED);
	usleep(50 * 1000);
	for (i = 0; i < 10; i++) {
		int64_t took;

		t0 = clk_mono_ms(&clk_system);
		h = holder(getpgrp());
		CHECK_INT(lock_acquire(e, "other", &h, &lk, NULL, NULL), 0);
		CHECK_INT(lock_release(e, lk), 0);
		lock_unref(e, lk);
		took = clk_mono_ms(&clk_system) - t0;
		if (took > worst)
			worst = took;
		usleep(20 * 1000);
	}
	printf("acquire + release while /proc answers in 200 ms: worst %lld "
	       "ms\n",
	       (long long)worst);
	CHECK(worst < 100);
	CHECK(host_fake_alive_checks(&f) > 0);
	CHECK_INT(lock_get_state(e, held), LOCK_HELD);
	__atomic_store_n(&f.check_delay_ms, 0, __ATOMIC_RELAXED);
	live_stop(&l, &held, 1);
	host_fake_fini(&f);
}

int main(int argc, char **argv)
{
	log_setup(LOGL_ERR, false, NULL);
	check_cases(argc, argv);
	CHECK_CASE(test_hold_modes);
	CHECK_CASE(test_fake_host_groups);
	CHECK_CASE(test_lease_path_parallel);
	CHECK_CASE(test_exit_notification);
	CHECK_CASE(test_lost_not_replaced);
	CHECK_CASE(test_death_during_heartbeat);
	CHECK_CASE(test_close_of_watched_group);
	CHECK_CASE(test_acquirer_exit_costs_nothing);
	CHECK_CASE(test_groups_scale);
	CHECK_CASE(test_slow_group_check);
	CHECK_DONE();
}
