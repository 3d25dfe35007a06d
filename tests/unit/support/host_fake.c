/* host_fake: a machine for tests (see host_fake.h). Threads: any; every
 * field behind f->mu. */
#include "host_fake.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct host_fake *of(void *arg)
{
	return arg;
}

static bool dead_locked(struct host_fake *f, int64_t pgid)
{
	for (int i = 0; i < f->n_groups; i++)
		if (f->groups[i].pgid == pgid)
			return f->groups[i].dead;
	return false;
}

static int64_t process_locked(struct host_fake *f, int64_t pid)
{
	for (int i = 0; i < f->n_threads; i++)
		if (f->threads[i].tid == pid)
			return f->threads[i].tgid;
	return pid;
}

static void fake_proc(void *arg, int64_t pid, struct host_proc *out)
{
	struct host_fake *f = of(arg);

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->mu);
	f->proc_calls++;
	pid = process_locked(f, pid);
	if (!dead_locked(f, pid)) {
		out->tgid = pid;
		out->pgid = pid;
		out->sid = pid;
		out->pgid_start = (uint64_t)pid + 1000;
		snprintf(out->comm, sizeof(out->comm), "fake%lld",
			 (long long)pid);
	}
	pthread_mutex_unlock(&f->mu);
}

static int64_t fake_sid(void *arg, int64_t pid)
{
	struct host_proc p;

	fake_proc(arg, pid, &p);
	return p.pgid > 0 ? p.sid : -1;
}

static int fake_groups(void *arg, int64_t pid, uint32_t *out, int max)
{
	(void)arg;
	(void)pid;
	(void)out;
	(void)max;
	return 0;
}

static uint64_t fake_start_time(void *arg, int64_t pid, int64_t *pgid)
{
	struct host_fake *f = of(arg);
	bool dead;

	pthread_mutex_lock(&f->mu);
	dead = dead_locked(f, pid);
	pthread_mutex_unlock(&f->mu);
	if (pgid)
		*pgid = dead ? 0 : pid;
	return dead ? 0 : (uint64_t)pid + 1000;
}

/* A slow /proc, as the test asked (read without mu: a plain int the test
 * sets before the engine's threads read it, or while they may). */
static void slow_check(struct host_fake *f)
{
	int ms = __atomic_load_n(&f->check_delay_ms, __ATOMIC_RELAXED);

	if (ms > 0)
		usleep((useconds_t)ms * 1000);
}

static bool fake_pgrp_alive(void *arg, int64_t pgid, uint64_t leader_start)
{
	struct host_fake *f = of(arg);
	bool alive;

	(void)leader_start;
	slow_check(f);
	pthread_mutex_lock(&f->mu);
	f->alive_checks++;
	alive = pgid > 0 && !dead_locked(f, pgid);
	pthread_mutex_unlock(&f->mu);
	return alive;
}

static bool fake_pgrp_signallable(void *arg, int64_t pgid,
				  uint64_t leader_start)
{
	struct host_fake *f = of(arg);
	bool ok;

	(void)leader_start;
	slow_check(f);
	pthread_mutex_lock(&f->mu);
	ok = pgid > 1 && !f->not_signallable && !dead_locked(f, pgid);
	pthread_mutex_unlock(&f->mu);
	return ok;
}

static int fake_signal_pgrp(void *arg, int64_t pgid, int sig)
{
	struct host_fake *f = of(arg);

	pthread_mutex_lock(&f->mu);
	f->signals++;
	f->last_pgid = pgid;
	f->last_sig = sig;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static const struct host_ops fake_ops = {
	.proc = fake_proc,
	.sid = fake_sid,
	.groups = fake_groups,
	.start_time = fake_start_time,
	.pgrp_alive = fake_pgrp_alive,
	.pgrp_signallable = fake_pgrp_signallable,
	.signal_pgrp = fake_signal_pgrp,
};

void host_fake_init(struct host_fake *f, const struct clk *clk)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->host.clk = clk;
	f->host.ops = &fake_ops;
	f->host.arg = f;
}

void host_fake_fini(struct host_fake *f)
{
	pthread_mutex_destroy(&f->mu);
}

void host_fake_kill(struct host_fake *f, int64_t pgid)
{
	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->n_groups; i++) {
		if (f->groups[i].pgid == pgid) {
			f->groups[i].dead = true;
			pthread_mutex_unlock(&f->mu);
			return;
		}
	}
	if (f->n_groups < HOST_FAKE_GROUPS) {
		f->groups[f->n_groups].pgid = pgid;
		f->groups[f->n_groups++].dead = true;
	}
	pthread_mutex_unlock(&f->mu);
}

/* *counter, one of f's, read under f->mu. */
static int read_counter(struct host_fake *f, const int *counter)
{
	int n;

	pthread_mutex_lock(&f->mu);
	n = *counter;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int host_fake_signals(struct host_fake *f)
{
	return read_counter(f, &f->signals);
}

int host_fake_alive_checks(struct host_fake *f)
{
	return read_counter(f, &f->alive_checks);
}

void host_fake_thread(struct host_fake *f, int64_t tid, int64_t tgid)
{
	pthread_mutex_lock(&f->mu);
	if (f->n_threads < HOST_FAKE_THREADS) {
		f->threads[f->n_threads].tid = tid;
		f->threads[f->n_threads].tgid = tgid;
		f->n_threads++;
	}
	pthread_mutex_unlock(&f->mu);
}

int host_fake_proc_calls(struct host_fake *f)
{
	return read_counter(f, &f->proc_calls);
}
