/* procgrp: which process group a lock's holder is, proved rather than
 * assumed. A process group is known by its number, and numbers are reused:
 * a signal or a liveness check by number alone can reach an unrelated
 * group (or, for group 1, every process: kill(-1)). A holder's group is
 * recorded with its leader's start time (/proc/PID/stat). A group is
 * taken for alive while it has a process and no other process leads a
 * group of that number; it is signalled only while its recorded leader
 * still leads it. Numbers are those of lockfs's PID namespace (the pids
 * FUSE reports), and /proc must be that namespace's.
 *
 * Threads: any (reads /proc, no state). */
#ifndef LOCKFS_PROCGRP_H
#define LOCKFS_PROCGRP_H

#include <stdbool.h>
#include <stdint.h>

/* What /proc/PID/stat says of a process (one read of it). */
struct procgrp_stat {
	int64_t pgid;	/* its process group (0: outside our PID namespace) */
	int64_t sid;	/* its session (0: likewise) */
	uint64_t start; /* its start time, clock ticks since boot */
	char comm[64];	/* its command name (as /proc/PID/comm) */
};

/* Fills *out for pid from one read of /proc/PID/stat: 0, -ESRCH when pid
 * is gone, another -errno when this process cannot read it now (EMFILE:
 * out of open files) or it does not parse (then *out is zeroed). */
int procgrp_stat(int64_t pid, struct procgrp_stat *out);

/* The start time of process pid (clock ticks since boot), or 0 when it is
 * gone or unreadable. Its process group in *pgid when not NULL. */
uint64_t procgrp_start_time(int64_t pid, int64_t *pgid);

/* Whether group pgid, whose leader started at leader_start (0: unknown),
 * still has a process and has not been replaced by another group of the
 * same number. Group 1 is alive while process 1 is. */
bool procgrp_alive(int64_t pgid, uint64_t leader_start);

/* Whether group pgid may be signalled as the holder's: a group number
 * above 1 whose leader is the process recorded (it is alive, started at
 * leader_start and still leads group pgid). A group whose leader has
 * exited or left it, or whose leader is unknown (leader_start 0), is not:
 * its number may belong to an unrelated group by now. */
bool procgrp_signallable(int64_t pgid, uint64_t leader_start);

#endif
