/* run_lock: taking lockfs-run's lock and the identity the command gets
 * (run_lock.c). Main thread. */
#ifndef LOCKFS_RUN_LOCK_H
#define LOCKFS_RUN_LOCK_H

#include <stdbool.h>

#include "run_args.h"
#include "run_common.h"

/* Saves the dispositions at start into ss and installs the wait's
 * handlers: SIGALRM, and SIGINT, SIGTERM, SIGHUP unless ignored. */
void run_lock_signals(struct run_sigstate *ss);
/* Dies of sig (after a wait given up because of it). */
void run_lock_die_of(int sig);
/* Opens and locks o->path. Returns true with *fd_out set when the lock is
 * ours; otherwise false with *status the exit status (the message already
 * printed). The two are kept apart because a status may be 0: -E 0 makes
 * busy and timed out exit 0, and neither may then run the command. */
bool run_lock_take(const struct run_opts *o, int *fd_out, int *status);
/* Sets LOCKFS_KEY, LOCKFS_FENCE and LOCKFS_OWNER for the command.
 *
 * On lockfs the text is read through a second open file, opened now that
 * the lock is ours (*view_fd): a file opened before a wait may still be
 * bound to the previous holder on this mount (reading "state: released"
 * and that holder's fence), or to no lock at all when the key was held on
 * another mount (no fence allocated, no POLLPRI on loss). A file opened
 * while we hold the key is bound to our lock. Returns 0, EXIT_LOST if the
 * lock is already lost, or another exit status. */
int run_lock_identity(const struct run_opts *o, int fd, int *view_fd,
		      bool *on_lockfs);
/* The signal (SIGINT, SIGTERM, SIGHUP) that ended a wait, or 0. */
int run_lock_interrupted(void);

#endif
