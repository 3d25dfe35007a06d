/* opts: fuse_opt tables for lockfs's options, fstab noise discarded,
 * validation with one-line errors. Runs once in main, single-threaded. */
#define FUSE_USE_VERSION 314
#include "opts.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <fuse_opt.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "names.h"
#include "text.h"

enum {
	KEY_HELP,
	KEY_VERSION,
	KEY_DISCARD,
	KEY_FOREGROUND,
	KEY_DEBUG,
};

/* One option a line reads best. */
/* clang-format off */
#define LOCKFS_OPT(t, p) { t, offsetof(struct lockfs_opts, p), 1 }

static const struct fuse_opt lockfs_opt_table[] = {
	LOCKFS_OPT("table=%s", table),
	LOCKFS_OPT("region=%s", region),
	LOCKFS_OPT("endpoint=%s", endpoint),
	LOCKFS_OPT("profile=%s", profile),
	LOCKFS_OPT("prefix=%s", prefix),
	LOCKFS_OPT("owner=%s", owner),
	LOCKFS_OPT("hold=%s", hold_s),
	LOCKFS_OPT("lease=%s", lease_s),
	LOCKFS_OPT("heartbeat=%s", heartbeat_s),
	LOCKFS_OPT("safe_period=%s", safe_period_s),
	LOCKFS_OPT("wait_poll=%s", wait_poll_s),
	LOCKFS_OPT("lost_signal=%s", lost_signal_s),
	LOCKFS_OPT("attr_timeout=%s", attr_timeout_s),
	LOCKFS_OPT("entry_timeout=%s", entry_timeout_s),
	LOCKFS_OPT("max_threads=%s", max_threads_s),
	LOCKFS_OPT("lease_workers=%s", lease_workers_s),
	LOCKFS_OPT("max_locks_per_user=%s", max_locks_s),
	LOCKFS_OPT("max_waiters_per_user=%s", max_waiters_s),
	LOCKFS_OPT("max_dirs_per_user=%s", max_dirs_s),
	LOCKFS_OPT("max_opens_per_user=%s", max_opens_s),
	LOCKFS_OPT("ca_file=%s", ca_file),
	LOCKFS_OPT("log_file=%s", log_file),
	LOCKFS_OPT("create_table", create_table),
	LOCKFS_OPT("--create-table", create_table),
	LOCKFS_OPT("create_index", create_index),
	LOCKFS_OPT("--create-index", create_index),
	LOCKFS_OPT("list=%s", list_s),
	LOCKFS_OPT("sweep=%s", sweep_s),
	LOCKFS_OPT("allow_break", allow_break),
	LOCKFS_OPT("release=%s", release_s),
	LOCKFS_OPT("session", session),
	LOCKFS_OPT("mountpoint_writable", mountpoint_writable),
	LOCKFS_OPT("allow_plain_http", allow_plain_http),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("-f", KEY_FOREGROUND),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	/* fstab and mount(8) words that mean nothing to lockfs */
	FUSE_OPT_KEY("auto", KEY_DISCARD),
	FUSE_OPT_KEY("noauto", KEY_DISCARD),
	FUSE_OPT_KEY("user", KEY_DISCARD),
	FUSE_OPT_KEY("nouser", KEY_DISCARD),
	FUSE_OPT_KEY("users", KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", KEY_DISCARD),
	FUSE_OPT_KEY("nofail", KEY_DISCARD),
	FUSE_OPT_KEY("defaults", KEY_DISCARD),
	FUSE_OPT_KEY("rw", KEY_DISCARD),
	FUSE_OPT_KEY("x-systemd.", KEY_DISCARD),
	FUSE_OPT_KEY("x-systemd.%s", KEY_DISCARD),
	FUSE_OPT_KEY("comment=%s", KEY_DISCARD),
	FUSE_OPT_END
};
/* clang-format on */

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct lockfs_opts *o = data;

	switch (key) {
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case KEY_FOREGROUND:
		o->foreground = 1;
		return 0;
	case KEY_DEBUG:
		o->debug = 1;
		o->foreground = 1;
		return 0;
	case KEY_DISCARD:
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		/* mount.fuse passes "SOURCE MOUNTPOINT": keep the last. */
		o->n_nonopt++;
		free(o->source);
		o->source = o->mountpoint;
		o->mountpoint = strdup(arg);
		return o->mountpoint ? 0 : -1;
	case FUSE_OPT_KEY_OPT:
		if (!strncmp(arg, "x-", 2))
			return 0; /* x-systemd.*, x-gvfs-*: for other tools */
		return 1;	  /* for libfuse (allow_other, fsname, ...) */
	}
	return 1;
}

/* A per-user limit: 0 (none) to 1000000, else the default. */
static int user_limit(const char *name, const char *s, uint32_t dflt,
		      uint32_t *out, char *err, size_t errlen)
{
	int64_t n;

	*out = dflt;
	if (!s)
		return 0;
	if (text_parse_i64(s, &n) || n < 0 || n > 1000000) {
		snprintf(err, errlen,
			 "%s=%s: want a number from 0 (no limit) to 1000000",
			 name, s);
		return -1;
	}
	*out = (uint32_t)n;
	return 0;
}

#define OPTS_SECONDS_MAX_MS   (7LL * 24 * 3600 * 1000)
#define OPTS_HEARTBEAT_MIN_MS 10

/* A duration option: min_ms to 7 days, at most 3 decimals. */
static int seconds(const char *name, const char *s, int64_t min_ms,
		   int64_t dflt, int64_t *out, char *err, size_t errlen)
{
	char lo[32];

	if (!s) {
		*out = dflt;
		return 0;
	}
	if (text_parse_seconds_ms(s, out) || *out < min_ms ||
	    *out > OPTS_SECONDS_MAX_MS) {
		text_format_seconds(min_ms, lo, sizeof(lo));
		snprintf(err, errlen,
			 "%s=%s: want seconds from %s to 604800 (7 days), at "
			 "most 3 decimals, e.g. %s=30 or %s=0.5",
			 name, s, lo, name, name);
		return -1;
	}
	return 0;
}

static int timeout_opt(const char *name, const char *s, double dflt,
		       double *out, char *err, size_t errlen)
{
	int64_t ms;

	if (!s) {
		*out = dflt;
		return 0;
	}
	if (text_parse_seconds_ms(s, &ms) || ms > 3600 * 1000) {
		snprintf(err, errlen,
			 "%s=%s: want seconds from 0 to 3600, e.g. %s=0.5",
			 name, s, name);
		return -1;
	}
	*out = (double)ms / 1000.0;
	return 0;
}

/* name=s, one of n words (NULL: the first): *out is its index; else a
 * one-line error listing them ("want a, b or c"). */
static int keyword(const char *name, const char *s, const char *const *words,
		   int n, int *out, char *err, size_t errlen)
{
	int i, at;

	*out = 0;
	if (!s)
		return 0;
	for (i = 0; i < n; i++) {
		if (!strcmp(s, words[i])) {
			*out = i;
			return 0;
		}
	}
	at = snprintf(err, errlen, "%s=%s: want", name, s);
	for (i = 0; i < n && at >= 0 && (size_t)at < errlen; i++)
		at += snprintf(err + at, errlen - (size_t)at, "%s%s",
			       !i	    ? " "
			       : i == n - 1 ? " or "
					    : ", ",
			       words[i]);
	return -1;
}

static bool table_name_ok(const char *t)
{
	size_t n = strlen(t), i;

	if (n < 3 || n > 255)
		return false;
	for (i = 0; i < n; i++) {
		char c = t[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return false;
	}
	return true;
}

/* Makes the prefix a directory path ("team-a" -> "team-a/") and checks
 * it by the rules of names. 0, or -1 with the reason in err. */
static int check_prefix(struct lockfs_opts *o, char *err, size_t errlen)
{
	char shown[128], *p;
	const char *why;
	int rc;

	if (names_normalize_prefix(o->prefix, &p))
		return -1;
	rc = names_check_prefix(p);
	if (!rc) {
		free(o->prefix);
		o->prefix = p;
		return 0;
	}
	free(p);
	if (rc == -EPERM)
		why = "names starting with .lockfs are reserved";
	else if (rc == -ENAMETOOLONG)
		why = "at most 512 bytes, each name at most 255";
	else
		why = "want names separated by /, none empty, \".\" or "
		      "\"..\", in UTF-8";
	text_escape_to(shown, sizeof(shown), o->prefix, strlen(o->prefix));
	snprintf(err, errlen,
		 "prefix=%s: %s (a directory path, e.g. prefix=team-a/ or "
		 "prefix=a/b)",
		 shown, why);
	return -1;
}

/* owner_name is shown by every client of the table, in status files and
 * logs: printable UTF-8 only (no byte below 0x20, no DEL, no C1 control). */
static bool owner_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (!n || n > 256 || !text_utf8_valid(s, n))
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return false;
		/* U+0080..U+009F: 0xC2 0x80..0x9F in UTF-8 */
		if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f)
			return false;
	}
	return true;
}

static int validate(struct lockfs_opts *o, char *err, size_t errlen)
{
	static const char *const hold_words[] = { "pgrp", "fd", "unlink" };
	static const enum hold_mode holds[] = { HOLD_PGRP, HOLD_FD,
						HOLD_UNLINK };
	static const char *const list_words[] = { "auto", "index", "scan" };
	static const char *const release_words[] = { "sync", "async" };
	int64_t n;
	int pick;

	if (!o->table && o->source && !strncmp(o->source, "lockfs:", 7) &&
	    o->source[7]) {
		o->table = strdup(o->source + 7);
		if (!o->table)
			return -1;
	}
	if (!o->table && !(o->table = strdup("lockfs")))
		return -1;
	if (!table_name_ok(o->table)) {
		snprintf(err, errlen,
			 "table=%s: a DynamoDB table name is 3 to 255 of a-z "
			 "A-Z 0-9 _ - .",
			 o->table);
		return -1;
	}
	if (o->n_nonopt > 2) {
		snprintf(err, errlen,
			 "too many arguments: want [SOURCE] MOUNTPOINT");
		return -1;
	}
	if (seconds("lease", o->lease_s, 1, 30000, &o->lease_ms, err, errlen) ||
	    seconds("heartbeat", o->heartbeat_s, OPTS_HEARTBEAT_MIN_MS, 5000,
		    &o->heartbeat_ms, err, errlen) ||
	    seconds("safe_period", o->safe_period_s, 1, 20000,
		    &o->safe_period_ms, err, errlen))
		return -1;
	if (!o->safe_period_s && o->lease_s && o->safe_period_ms >= o->lease_ms)
		o->safe_period_ms = o->lease_ms * 2 / 3;
	if (!o->heartbeat_s && o->heartbeat_ms >= o->safe_period_ms)
		o->heartbeat_ms = o->safe_period_ms / 4;
	if (o->safe_period_ms >= o->lease_ms) {
		snprintf(
			err, errlen,
			"safe_period must be shorter than lease (a holder must "
			"learn it lost the lock before anyone can take it)");
		return -1;
	}
	if (o->heartbeat_ms >= o->safe_period_ms) {
		snprintf(err, errlen,
			 "heartbeat must be shorter than safe_period (else "
			 "every lock is lost between heartbeats)");
		return -1;
	}
	/* A waiter reads at least every wait_poll (and never more often than
	 * every 25 ms); by default at most every half lease. */
	if (seconds("wait_poll", o->wait_poll_s, OPTS_WAIT_POLL_MIN_MS,
		    OPTS_WAIT_POLL_MS, &o->wait_poll_ms, err, errlen))
		return -1;
	if (!o->wait_poll_s && o->wait_poll_ms > o->lease_ms / 2)
		o->wait_poll_ms = o->lease_ms / 2 > OPTS_WAIT_POLL_MIN_MS
					  ? o->lease_ms / 2
					  : OPTS_WAIT_POLL_MIN_MS;
	if (o->heartbeat_ms < OPTS_HEARTBEAT_MIN_MS) {
		snprintf(err, errlen, "heartbeat must be at least 0.010 s");
		return -1;
	}
	if (keyword("hold", o->hold_s, hold_words, 3, &pick, err, errlen))
		return -1;
	o->hold = holds[pick];
	if (o->lost_signal_s &&
	    text_parse_signal(o->lost_signal_s, &o->lost_signal)) {
		snprintf(err, errlen,
			 "lost_signal=%s: want a signal name (TERM, USR1, ...) "
			 "or a number from 1 to %d",
			 o->lost_signal_s, NSIG - 1);
		return -1;
	}
	/* list: in enum store_ddb_list's order */
	if (keyword("list", o->list_s, list_words, 3, &o->list_mode, err,
		    errlen) ||
	    keyword("release", o->release_s, release_words, 2, &pick, err,
		    errlen))
		return -1;
	o->release_async = pick == 1;
	if (o->sweep_s && strcmp(o->sweep_s, "0") &&
	    seconds("sweep", o->sweep_s, 1000, 0, &o->sweep_ms, err, errlen))
		return -1;
	if (o->prefix && check_prefix(o, err, errlen))
		return -1;
	if (o->owner && !owner_ok(o->owner)) {
		snprintf(err, errlen,
			 "owner: want 1 to 256 bytes of UTF-8 without control "
			 "characters");
		return -1;
	}
	if (timeout_opt("attr_timeout", o->attr_timeout_s, 1.0,
			&o->attr_timeout, err, errlen) ||
	    timeout_opt("entry_timeout", o->entry_timeout_s, 1.0,
			&o->entry_timeout, err, errlen))
		return -1;
	o->max_threads = 16;
	if (o->max_threads_s) {
		if (text_parse_i64(o->max_threads_s, &n) || n < 1 || n > 1024) {
			snprintf(err, errlen,
				 "max_threads=%s: want a number from 1 to 1024",
				 o->max_threads_s);
			return -1;
		}
		o->max_threads = (unsigned)n;
	}
	o->lease_workers = 0; /* 64, growing to 256 while renewals wait */
	if (o->lease_workers_s) {
		if (text_parse_i64(o->lease_workers_s, &n) || n < 1 ||
		    n > 256) {
			snprintf(
				err, errlen,
				"lease_workers=%s: want a number from 1 to 256",
				o->lease_workers_s);
			return -1;
		}
		o->lease_workers = (int)n;
	}
	if (user_limit("max_locks_per_user", o->max_locks_s,
		       OPTS_MAX_LOCKS_PER_USER, &o->max_locks_per_user, err,
		       errlen) ||
	    user_limit("max_waiters_per_user", o->max_waiters_s,
		       OPTS_MAX_WAITERS_PER_USER, &o->max_waiters_per_user, err,
		       errlen) ||
	    user_limit("max_dirs_per_user", o->max_dirs_s,
		       OPTS_MAX_DIRS_PER_USER, &o->max_dirs_per_user, err,
		       errlen) ||
	    user_limit("max_opens_per_user", o->max_opens_s,
		       OPTS_MAX_OPENS_PER_USER, &o->max_opens_per_user, err,
		       errlen))
		return -1;
	if (o->endpoint && strncmp(o->endpoint, "http://", 7) &&
	    strncmp(o->endpoint, "https://", 8)) {
		snprintf(err, errlen,
			 "endpoint=%s: want an http:// or https:// URL",
			 o->endpoint);
		return -1;
	}
	if (!o->mountpoint && !o->create_table && !o->create_index) {
		snprintf(err, errlen, "no mountpoint (try --help)");
		return -1;
	}
	return 0;
}

int opts_parse(int argc, char **argv, struct lockfs_opts *o,
	       struct fuse_args *args, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	args->argc = argc;
	args->argv = argv;
	args->allocated = 0;
	if (fuse_opt_parse(args, o, lockfs_opt_table, opt_proc) == -1) {
		snprintf(err, errlen, "cannot parse the options (try --help)");
		return -1;
	}
	if (o->show_help || o->show_version)
		return 0;
	return validate(o, err, errlen);
}

void opts_free(struct lockfs_opts *o)
{
	char **strs[] = {
		&o->table,	     &o->region,	&o->endpoint,
		&o->profile,	     &o->prefix,	&o->owner,
		&o->hold_s,	     &o->lease_s,	&o->heartbeat_s,
		&o->safe_period_s,   &o->lost_signal_s, &o->attr_timeout_s,
		&o->entry_timeout_s, &o->max_threads_s, &o->ca_file,
		&o->max_locks_s,     &o->max_waiters_s, &o->max_dirs_s,
		&o->max_opens_s,     &o->source,	&o->mountpoint,
		&o->log_file,	     &o->wait_poll_s,	&o->list_s,
		&o->sweep_s,	     &o->release_s,	&o->lease_workers_s,
	};
	size_t i;

	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
}

const char *opts_hold_name(enum hold_mode h)
{
	switch (h) {
	case HOLD_PGRP:
		return "pgrp";
	case HOLD_FD:
		return "fd";
	case HOLD_UNLINK:
		return "unlink";
	case HOLD_FLOCK:
		return "flock";
	}
	return "?";
}

void opts_print_help(FILE *out, const char *prog)
{
	/* The text as it prints. */
	/* clang-format off */
	fprintf(out,
"usage: %s [-f] [-d] [-o OPTION[,OPTION...]] [SOURCE] MOUNTPOINT\n"
"       %s --create-table [-o table=NAME,...]     (create the table, then exit)\n"
"       %s --create-index [-o table=NAME,...]     (add the listing index to a\n"
"                         table and tag its rows, then exit; again: tags\n"
"                         rows python clients wrote since)\n"
"       %s --version | --help\n"
"\n"
"Distributed locks in a DynamoDB table, as files. open(O_CREAT|O_EXCL)\n"
"acquires, unlink releases, cat shows owner, version, fence and expiry.\n"
"\n"
"  -f                     stay in the foreground, log to stderr (or log_file)\n"
"  -d, -o debug           debug logging (implies -f)\n"
"  -o table=NAME          DynamoDB table (default lockfs)\n"
"  -o region=REGION       default: AWS_REGION, AWS_DEFAULT_REGION, the profile\n"
"  -o endpoint=URL        default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL,\n"
"                         then https://dynamodb.REGION.amazonaws.com\n"
"  -o profile=NAME        default: AWS_PROFILE, then \"default\"\n"
"  -o prefix=DIR          the mount shows directory DIR of the table\n"
"                         (e.g. team-a or a/b: keys team-a/NAME)\n"
"  -o lease=S             lease of our locks in seconds (default 30;\n"
"                         0.001 to 604800, as every S below unless said)\n"
"  -o heartbeat=S         renewal period (default 5; spread over many locks)\n"
"  -o safe_period=S       a holder without a renewal this long gives up\n"
"                         its lock (default 20; must be < lease)\n"
"  -o wait_poll=S         a flock/fcntl waiter on a key held elsewhere reads\n"
"                         it at least this often (default 0.25, from 0.025;\n"
"                         one consistent read each: faster handoff, or\n"
"                         fewer reads)\n"
"  -o hold=pgrp|fd|unlink when a lock is released automatically:\n"
"                         pgrp (default) once the acquiring open file is\n"
"                         closed and its process group is gone; fd once the\n"
"                         acquiring open file is closed; unlink: never\n"
"  -o owner=NAME          owner_name written in our rows\n"
"                         (default HOSTNAME:RANDOM, new at every mount)\n"
"  -o create_table        create the table (its TTL, its index) if missing\n"
"     --create-table      the same\n"
"  -o list=auto|index|scan  how ls reads a directory: index, a Query of the\n"
"                         index on the parent directory (cost: the\n"
"                         directory's rows; may be a moment old); scan, a\n"
"                         Scan of the whole table; auto (default): index\n"
"                         until the mount meets a row a python client\n"
"                         wrote, then scan. Without the index: scan\n"
"  -o sweep=S             take part in the fleet's tagging sweep: every S\n"
"                         seconds (1 to 604800) one mount of those with the\n"
"                         option tags the rows python clients wrote (one\n"
"                         Scan of the table), so that the index lists them;\n"
"                         list=auto then keeps the index. Default: off\n"
"  -o release=sync|async  when unlink answers: sync (default) once DynamoDB\n"
"                         confirmed the delete; async at once, the delete\n"
"                         following (this mount waits for it before it\n"
"                         uses the name again; other mounts may see the\n"
"                         lock for one round trip more). async frees the\n"
"                         directory for the next create or unlink sooner\n"
"  -o allow_break         root may remove any lock: other owners', and live\n"
"                         holders' from any session (not rows another\n"
"                         mount keeps through its session)\n"
"  -o session             session leases: one heartbeat per period for the\n"
"                         mount, whatever the locks held; exclusive locks\n"
"                         are written only at acquire and release. For\n"
"                         tables only lockfs uses: refused when the table\n"
"                         holds python_dynamodb_lock rows (one listing at\n"
"                         mount)\n"
"  -o allow_plain_http    allow http:// to hosts other than loopback\n"
"                         (answers can be forged, tokens go in clear)\n"
"  -o mountpoint_writable do not make the mountpoint immutable (by default\n"
"                         lockfs does chattr +i on it, so that nothing\n"
"                         can be created there while lockfs is not\n"
"                         mounted)\n"
"  -o lost_signal=SIG     signal the holder's process group when a lock\n"
"                         is lost (e.g. TERM)\n"
"  -o attr_timeout=S      kernel attribute cache (default 1; 0 to 3600)\n"
"  -o entry_timeout=S     kernel name cache (default 1; 0 to 3600); other\n"
"                         owners' locks are never cached\n"
"  -o max_threads=N       request threads (default 16; 1 to 1024)\n"
"  -o lease_workers=N     renewals in flight at most (1 to 256; default\n"
"                         64, growing to 256 while renewals wait and\n"
"                         more workers renew more)\n"
"  -o max_locks_per_user=N    locks one uid may hold on this mount\n"
"                         (default 1024; 0: no limit; root: none)\n"
"  -o max_waiters_per_user=N  blocking flock/fcntl waits of one uid\n"
"                         (default 1024)\n"
"  -o max_dirs_per_user=N     directories one uid may make through this\n"
"                         mount and not remove (default 1024)\n"
"  -o max_opens_per_user=N    open lock files and listings of one uid\n"
"                         (default 4096); each limit 0 to 1000000; over\n"
"                         any: EDQUOT\n"
"  -o ca_file=PATH        CA bundle for TLS (default: the system's)\n"
"  -o log_file=PATH       append the log to PATH (default: stderr with -f,\n"
"                         else syslog, or /var/log/lockfs.log when there\n"
"                         is no /dev/log; lockfs says which when mounted)\n"
"  plus FUSE mount options: allow_other, ... (default_permissions is\n"
"  always on); fstab words auto, noauto, user, _netdev, nofail, defaults\n"
"  and x-* are accepted and ignored.\n"
"\n"
"Credentials: the AWS default chain (environment, shared files and\n"
"profiles, web identity, ECS, EC2 IMDSv2). Credentials, the endpoint and\n"
"the table are checked before lockfs goes to the background; any problem\n"
"is one line on stderr and exit status 1.\n"
"Files: MOUNTPOINT/.lockfs/status and MOUNTPOINT/.lockfs/metrics.\n"
"See lockfs(8).\n",
		prog, prog, prog, prog);
	/* clang-format on */
}

void opts_print_version(FILE *out)
{
	fprintf(out, "lockfs %s (libfuse %s, %s)\n", LOCKFS_VERSION,
		fuse_pkgversion(), http_library_version());
}
