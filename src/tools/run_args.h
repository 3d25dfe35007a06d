/* run_args: lockfs-run's command line and its reading of the lock text,
 * as functions without side effects (no exit, no output), so that they
 * can be tested and fuzzed: options and their values, signal names, and
 * the "name: value" fields of a lock file. Used by lockfs_run.c only, in
 * its main thread (getopt's state is global). */
#ifndef LOCKFS_RUN_ARGS_H
#define LOCKFS_RUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct run_opts {
	bool nonblock;	   /* -n */
	bool shared;	   /* -s: LOCK_SH */
	int64_t wait_ms;   /* -w; -1: as long as it takes */
	int conflict_code; /* -E */
	int lost_sig;	   /* --signal */
	int64_t grace_ms;  /* --grace */
	const char *path;
	char **argv;
};

enum {
	RUN_ARGS_OK = 0,
	RUN_ARGS_HELP = 1,    /* -h, --help */
	RUN_ARGS_VERSION = 2, /* -V, --version */
};

/* Parses lockfs-run's arguments into o (path and argv point into argv).
 * Returns RUN_ARGS_OK, RUN_ARGS_HELP, RUN_ARGS_VERSION, or -EINVAL with
 * the usage error in err (one line, without the program name). Can be
 * called again (it resets getopt). */
int run_args_parse(int argc, char **argv, struct run_opts *o, char *err,
		   size_t errlen);

/* The value of the first "name: value" line of text, or "" (malloc'd;
 * NULL on ENOMEM). */
char *run_text_field(const char *text, const char *name);

/* True if s is one or more ASCII digits. */
bool run_all_digits(const char *s);

#endif
