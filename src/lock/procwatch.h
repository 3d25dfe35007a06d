/* procwatch: learns that a process exited when it exits, from its pidfd (a
 * notification from the kernel, not a poll), so that a lock held by a
 * process group is let go of as soon as the group is gone.
 *
 * Each pid is watched once, from procwatch_add until it exits; then
 * on_exit is called with the pids told at once. An exited process keeps its
 * group alive until its parent reaps it: where the kernel tells that too
 * (Linux 6.9+), its entry stays until the reap (10 s at most) and on_exit is
 * called again then; elsewhere the entry goes at the exit. A pidfd names one
 * process, so a reused pid is never mistaken for the one watched.
 *
 * Threads: any thread calls procwatch_add; the watch thread (one, owned
 * here) calls on_exit, with no lock of procwatch held. */
#ifndef LOCKFS_PROCWATCH_H
#define LOCKFS_PROCWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct procwatch;

/* Starts the watch thread. At most max pids are watched at once (0: a
 * default of 65536), and never so many that fewer than
 * procwatch_keep_files open files are left to the process under its
 * RLIMIT_NOFILE of the moment (a pidfd is an open file); past either,
 * procwatch_add says -ENOSPC and the caller relies on its poll. NULL on
 * failure (errno set). */
struct procwatch *procwatch_new(void (*on_exit)(void *arg, const int64_t *pids,
						int n),
				void *arg, size_t max);
/* The open files the watches leave to the rest of the process (sockets,
 * /proc reads, logs): PROCWATCH_KEEP_DEFAULT until set. */
#define PROCWATCH_KEEP_DEFAULT 512
void procwatch_keep_files(struct procwatch *pw, size_t n);
/* Watches pid until it exits. 0 when watched (or already watched and
 * still running); -ESRCH when it exited already (reaped or not); -ENOSPC
 * when full; other -errno. */
int procwatch_add(struct procwatch *pw, int64_t pid);
/* procwatch_add, and when it says 0, *start: the start time (procgrp.h)
 * of the process watched, the one its pidfd names (0: unknown). A pid
 * reused by another process since the watch began is watched anew only
 * once the first has been reaped and forgotten, so *start tells which
 * process is watched. */
int procwatch_add_start(struct procwatch *pw, int64_t pid, uint64_t *start);
/* How many pids are watched now (exited ones awaiting their reap too). */
size_t procwatch_count(struct procwatch *pw);
/* Whether a reap is told (a second on_exit), as said above. */
bool procwatch_tells_reaps(const struct procwatch *pw);
/* Stops the thread and closes every pidfd. */
void procwatch_free(struct procwatch *pw);

#endif
