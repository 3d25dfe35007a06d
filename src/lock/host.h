/* host: the seam between lockfs and the machine it runs on. Whatever the
 * engine, the file-lock layer and the filesystem learn from the kernel
 * besides FUSE requests goes through a struct host: our clocks, who a
 * caller is (its process group, session, command, groups: /proc),
 * whether a process group still lives, and signals to a group.
 * host_system() is the real machine; tests pass their own (a fake clock,
 * groups that die on cue) to drive the layers without processes.
 *
 * Threads: any. host_system() keeps only a memo of calling threads
 * (behind a mutex of its own); a test's host does its own locking. */
#ifndef LOCKFS_HOST_H
#define LOCKFS_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clk.h"

/* What the machine says of a caller (a FUSE request's pid). */
struct host_proc {
	int64_t tgid;	     /* the process pid is a thread of (pid itself
			      * for a process); <= 0: unknown */
	int64_t pgid;	     /* <= 0: unknown (gone, or outside our PID ns) */
	int64_t sid;	     /* <= 0: unknown */
	uint64_t pgid_start; /* the group leader's start time; 0: unknown */
	char comm[64];	     /* its command name; "" when unknown */
};

struct host_ops {
	/* Fills *out for pid (> 0); fields it cannot learn say unknown. */
	void (*proc)(void *arg, int64_t pid, struct host_proc *out);
	/* The session of pid alone (<= 0: unknown): what an unlink's
	 * session rule needs, a system call where proc reads /proc. */
	int64_t (*sid)(void *arg, int64_t pid);
	/* The supplementary groups of pid, at most max of them in out:
	 * their number, or -1 when unknown. A call of its own, as only a
	 * few permission checks need them (on the real machine they cost
	 * a read of /proc/PID/status). */
	int (*groups)(void *arg, int64_t pid, uint32_t *out, int max);
	/* The start time of pid (0: gone) and, if pgid, its group. */
	uint64_t (*start_time)(void *arg, int64_t pid, int64_t *pgid);
	/* Whether group pgid is the one whose leader started at
	 * leader_start and has a live member (procgrp_alive). */
	bool (*pgrp_alive)(void *arg, int64_t pgid, uint64_t leader_start);
	/* Whether a signal to pgid provably reaches that group only
	 * (procgrp_signallable: never group 1 nor a reused number). */
	bool (*pgrp_signallable)(void *arg, int64_t pgid,
				 uint64_t leader_start);
	/* kill(-pgid, sig): 0 or -errno. */
	int (*signal_pgrp)(void *arg, int64_t pgid, int sig);
};

struct host {
	const struct clk *clk;
	const struct host_ops *ops;
	void *arg;
};

/* The real machine: clk_system, /proc, kill(2). */
const struct host *host_system(void);

/* Whether thread tid of this machine is being killed: SIGKILL pending
 * (a fatal signal, one not caught, becomes SIGKILL for every thread of
 * its process), from /proc/TID/status. False when unknown. */
bool host_sys_kill_pending(int64_t tid);

static inline void host_proc(const struct host *h, int64_t pid,
			     struct host_proc *out)
{
	h->ops->proc(h->arg, pid, out);
}

static inline int64_t host_sid(const struct host *h, int64_t pid)
{
	return h->ops->sid(h->arg, pid);
}

static inline int host_groups(const struct host *h, int64_t pid, uint32_t *out,
			      int max)
{
	return h->ops->groups(h->arg, pid, out, max);
}

static inline uint64_t host_start_time(const struct host *h, int64_t pid,
				       int64_t *pgid)
{
	return h->ops->start_time(h->arg, pid, pgid);
}

static inline bool host_pgrp_alive(const struct host *h, int64_t pgid,
				   uint64_t leader_start)
{
	return h->ops->pgrp_alive(h->arg, pgid, leader_start);
}

static inline bool host_pgrp_signallable(const struct host *h, int64_t pgid,
					 uint64_t leader_start)
{
	return h->ops->pgrp_signallable(h->arg, pgid, leader_start);
}

static inline int host_signal_pgrp(const struct host *h, int64_t pgid, int sig)
{
	return h->ops->signal_pgrp(h->arg, pgid, sig);
}

#endif
