/* fuzz_daemon_opts: lockfs's command line (opts_parse with libfuse's
 * fuse_opt, then validate: seconds, signal names, table names, hold modes,
 * prefixes, owners, timeouts, thread counts, endpoints, fstab words) on
 * arbitrary argument vectors. Input: the arguments after "lockfs",
 * NUL-separated. Checked: a parse that succeeds (and is not --help or
 * --version) leaves only values the daemon can use: a table name of 3..255
 * of [A-Za-z0-9_.-], lease > safe_period > heartbeat >= 10 ms with the
 * lease at most 7 days, a known hold mode, a signal in 1..NSIG-1 or none,
 * 1..1024 threads, caches of 0..3600 s, a valid prefix (a directory
 * path ending in '/'), an owner of printable UTF-8 (no control character),
 * an http(s) endpoint, a mountpoint unless only creating the table; a
 * parse that fails says why.
 * fuzz-src: src/daemon/opts.c
 * fuzz-link: lockfs_core lockfs_http PkgConfig::FUSE3 */
#define FUSE_USE_VERSION 314
#include <fuse_opt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "names.h"
#include "opts.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 32

static void check_table(const char *t)
{
	size_t n = strlen(t);

	if (n < 3 || n > 255 ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_-.") != n)
		abort();
}

static bool owner_has_control(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++)
		if (*p < 0x20 || *p == 0x7f ||
		    (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return true;
	return false;
}

static void check_opts(const struct lockfs_opts *o)
{
	if (!o->table)
		abort();
	check_table(o->table);
	if (!(o->lease_ms > o->safe_period_ms &&
	      o->safe_period_ms > o->heartbeat_ms && o->heartbeat_ms >= 10 &&
	      o->lease_ms <= 7LL * 24 * 3600 * 1000))
		abort();
	if (o->hold != HOLD_PGRP && o->hold != HOLD_FD &&
	    o->hold != HOLD_UNLINK)
		abort();
	if (o->lost_signal < 0 || o->lost_signal >= NSIG ||
	    (o->lost_signal_s && !o->lost_signal))
		abort();
	if (o->max_threads < 1 || o->max_threads > 1024 ||
	    o->attr_timeout < 0 || o->attr_timeout > 3600 ||
	    o->entry_timeout < 0 || o->entry_timeout > 3600)
		abort();
	if (o->prefix && names_check_prefix(o->prefix))
		abort();
	if (o->prefix && o->prefix[0] &&
	    o->prefix[strlen(o->prefix) - 1] != '/')
		abort();
	if (o->owner && (!o->owner[0] || strlen(o->owner) > 256 ||
			 !text_utf8_valid(o->owner, strlen(o->owner))))
		abort();
	if (o->owner && owner_has_control(o->owner))
		abort();
	if (o->endpoint && strncmp(o->endpoint, "http://", 7) &&
	    strncmp(o->endpoint, "https://", 8))
		abort();
	if (!o->mountpoint && !o->create_table && !o->create_index)
		abort();
	if (o->n_nonopt > 2)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[MAX_ARGS];
	char *argv[MAX_ARGS + 2] = { NULL };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct lockfs_opts o;
	char err[512];
	size_t np = size ? fz_split_n(data, size, "", 1, parts, MAX_ARGS) : 0;
	int argc = 1, rc;
	size_t i;

	argv[0] = strdup("lockfs");
	for (i = 0; i < np; i++) {
		argv[argc] = fz_str(&parts[i]);
		if (!argv[argc])
			goto out;
		argc++;
	}
	err[0] = '\0';
	rc = opts_parse(argc, argv, &o, &args, err, sizeof(err));
	if (rc == 0 && !o.show_help && !o.show_version)
		check_opts(&o);
	else if (rc && !err[0])
		abort(); /* (it may quote a value with a newline given to it) */
	if (rc != 0 && rc != -1)
		abort();
	opts_free(&o);
	fuse_opt_free_args(&args);
out:
	for (i = 0; i < (size_t)argc; i++)
		free(argv[i]);
	return 0;
}
