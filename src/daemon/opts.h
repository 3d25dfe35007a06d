/* opts: the command line and -o options (the same words on the command
 * line, in fstab and in systemd units), their validation, --help and
 * --version. Used by main only, before any thread exists. */
#ifndef LOCKFS_OPTS_H
#define LOCKFS_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lock.h"

/* Defaults of the per-user limits: far above what one user's scripts
 * hold, far below what starves a mount. */
#define OPTS_MAX_LOCKS_PER_USER	  1024
#define OPTS_MAX_WAITERS_PER_USER 1024
#define OPTS_MAX_DIRS_PER_USER	  1024
#define OPTS_MAX_OPENS_PER_USER	  4096

/* How often a file-lock waiter reads a key held elsewhere, at most
 * apart (jittered in [half, whole]), by default and at least. */
#define OPTS_WAIT_POLL_MS     250
#define OPTS_WAIT_POLL_MIN_MS 25

struct lockfs_opts {
	/* as given (malloc'd by fuse_opt) */
	char *table;
	char *region;
	char *endpoint;
	char *profile;
	char *prefix;
	char *owner;
	char *hold_s;
	char *lease_s;
	char *heartbeat_s;
	char *safe_period_s;
	char *wait_poll_s;
	char *lost_signal_s;
	char *attr_timeout_s;
	char *entry_timeout_s;
	char *max_threads_s;
	char *lease_workers_s;
	char *max_locks_s;
	char *max_waiters_s;
	char *max_dirs_s;
	char *max_opens_s;
	char *ca_file;
	char *log_file; /* append log lines here (else see log_choose) */
	int create_table;
	int create_index; /* --create-index: add the parent index, tag rows */
	char *list_s;
	char *sweep_s;
	int allow_break;
	char *release_s;
	int session;		 /* session leases (doc/session-leases.md) */
	int mountpoint_writable; /* do not make the mountpoint immutable */
	int allow_plain_http;	 /* http:// to hosts other than loopback */
	int show_help;
	int show_version;
	char *source;	  /* first of two non-option arguments */
	char *mountpoint; /* the last non-option argument */
	int n_nonopt;

	/* derived by opts_parse */
	int64_t lease_ms;
	int64_t heartbeat_ms;
	int64_t safe_period_ms;
	int64_t wait_poll_ms; /* a file-lock waiter's longest read interval */
	enum hold_mode hold;
	int lost_signal;
	double attr_timeout;
	double entry_timeout;
	unsigned max_threads;
	int lease_workers;  /* 0: the engine's default pool, which grows */
	int list_mode;	    /* enum store_ddb_list: 0 auto, 1 index, 2 scan */
	bool release_async; /* release=async: unlink answers before its delete
			     */
	int64_t sweep_ms;   /* the tagging sweep's period, 0: none */
	/* Per-uid limits (root exempt), 0: none; see fs_quota.h. */
	uint32_t max_locks_per_user;
	uint32_t max_waiters_per_user;
	uint32_t max_dirs_per_user;
	uint32_t max_opens_per_user;
	int foreground;
	int debug;
};

struct fuse_args;

/* Parses argv into o, leaving in args what libfuse must see (mount options
 * such as allow_other). Returns 0, or -1 with a one-line reason in err. */
int opts_parse(int argc, char **argv, struct lockfs_opts *o,
	       struct fuse_args *args, char *err, size_t errlen);
void opts_free(struct lockfs_opts *o);
void opts_print_help(FILE *out, const char *prog);
void opts_print_version(FILE *out);
const char *opts_hold_name(enum hold_mode h);

#endif
