/* run_common: what the parts of lockfs-run share: its name, its exit
 * statuses, the signals it forwards to the command, their dispositions at
 * start, and its one-line messages. Main thread (the watcher thread never
 * prints). */
#ifndef LOCKFS_RUN_COMMON_H
#define LOCKFS_RUN_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <sysexits.h>

#define PROG "lockfs-run"

/* Exit statuses of lockfs-run's own outcomes (the command's status
 * otherwise). */
#define EXIT_USAGE    EX_USAGE	     /* 64 */
#define EXIT_NOLOCK   EX_UNAVAILABLE /* 69: cannot open or lock */
#define EXIT_OSERR    EX_OSERR	     /* 71: fork, pipe, ... failed */
#define EXIT_CONFLICT EX_TEMPFAIL    /* 75: busy (-n) or timed out (-w) */
#define EXIT_LOST     76	     /* the lock was lost */
#define EXIT_NOEXEC   126	     /* the command cannot be run */
#define EXIT_NOTFOUND 127	     /* the command was not found */

/* The signals forwarded to the command (unless ignored when we started). */
#define RUN_N_FWD 6
extern const int run_fwd_sigs[RUN_N_FWD];

/* Dispositions at start; signals ignored then stay ignored (nohup, "&"
 * without job control) and are not forwarded. */
struct run_sigstate {
	struct sigaction orig[RUN_N_FWD];
	bool ignored[RUN_N_FWD];
	struct sigaction orig_alrm;
	sigset_t orig_mask;
};

/* One line "lockfs-run: ..." on stderr, escaped (text_escape_line's
 * rules), in one write. */
void run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
