/* host_fake: a struct host (lock/host.h) for tests: a clock of the test's
 * choosing, process groups that live or die on cue (no fork), and signals
 * recorded instead of sent. A group is alive until host_fake_kill; a
 * caller's pid is a process and its own group leader, unless
 * host_fake_thread makes it a thread of another process (then it is
 * described as that process).
 *
 * Threads: any (one mutex). */
#ifndef LOCKFS_TEST_HOST_FAKE_H
#define LOCKFS_TEST_HOST_FAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "host.h"

#define HOST_FAKE_GROUPS  64
#define HOST_FAKE_THREADS 8

struct host_fake {
	struct host host; /* pass &f->host to the layer under test */
	pthread_mutex_t mu;
	struct {
		int64_t pgid;
		bool dead;
	} groups[HOST_FAKE_GROUPS]; /* groups told dead (or alive again) */
	int n_groups;
	struct {
		int64_t tid, tgid;
	} threads[HOST_FAKE_THREADS]; /* callers that are threads */
	int n_threads;
	int signals;	      /* signals "sent" */
	int64_t last_pgid;    /* the group of the last one */
	int last_sig;	      /* and its number */
	int alive_checks;     /* pgrp_alive calls */
	int proc_calls;	      /* proc calls (who a caller is) */
	bool not_signallable; /* pgrp_signallable answers false */
	int check_delay_ms;   /* pgrp_alive and pgrp_signallable take this
			       * long (a slow /proc); set by the test */
};

void host_fake_init(struct host_fake *f, const struct clk *clk);
void host_fake_fini(struct host_fake *f);
/* Group pgid has no process from now on (its leader exited). */
void host_fake_kill(struct host_fake *f, int64_t pgid);
/* Caller tid is a thread of process tgid (at most HOST_FAKE_THREADS). */
void host_fake_thread(struct host_fake *f, int64_t tid, int64_t tgid);
int host_fake_signals(struct host_fake *f);
int host_fake_alive_checks(struct host_fake *f);
int host_fake_proc_calls(struct host_fake *f);

#endif
