/* main: the lockfs process. Parses options, resolves the endpoint and the
 * credentials, checks (or creates) the table, all before going to the
 * background so that every problem reaches the terminal as one line and a
 * non-zero exit; then mounts, runs the multi-threaded session loop, and on
 * unmount or SIGTERM releases every held lock before exiting. Owns the
 * process-wide objects; the cleanup ladder at the end frees them in reverse
 * order. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_log.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "awscfg.h"
#include "awsreq.h"
#include "creds.h"
#include "ddb.h"
#include "flk.h"
#include "fs.h"
#include "fsops.h"
#include "http.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "observe.h"
#include "mntguard.h"
#include "opts.h"
#include "srvclk.h"
#include "store_ddb.h"
#include "text.h"

#define PREFLIGHT_TIMEOUT_MS 15000

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("lockfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* A bail-out before anything runs: no cleanup ladder (and no leak
	 * report in sanitizer builds), exit status 1. */
	fflush(NULL);
	_exit(1);
}

/* libfuse's own messages (a line may come in several calls): the last
 * error line is kept to be the one line of a mount failure. Only main's
 * thread sees them before the session runs. */
static char fuse_last_error[256];
static char fuse_pending[256];

static void fuse_log_to_us(enum fuse_log_level level, const char *fmt,
			   va_list ap)
{
	size_t used = strlen(fuse_pending), n;

	vsnprintf(fuse_pending + used, sizeof(fuse_pending) - used, fmt, ap);
	n = strlen(fuse_pending);
	if (!n || (fuse_pending[n - 1] != '\n' && n < sizeof(fuse_pending) - 1))
		return; /* the rest of the line is still to come */
	while (n && fuse_pending[n - 1] == '\n')
		fuse_pending[--n] = '\0';
	if (level <= FUSE_LOG_ERR)
		text_copy(fuse_last_error, sizeof(fuse_last_error),
			  fuse_pending);
	log_at(level <= FUSE_LOG_WARNING && level > FUSE_LOG_ERR ? LOGL_WARN
								 : LOGL_DEBUG,
	       "fuse", "%s", fuse_pending);
	fuse_pending[0] = '\0';
}

static bool is_dev_fd(const char *path)
{
	const char *p = path + strlen("/dev/fd/");

	if (strncmp(path, "/dev/fd/", strlen("/dev/fd/")) || !*p)
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Resolves the mountpoint into mnt and refuses what lockfs never mounts
 * on: a file, a live lockfs mount (a second daemon stacked on the first),
 * a dead mount of another filesystem. A dead lockfs mount passes: it is
 * replaced just before the mount (prepare_mountpoint). */
static enum mntguard_state check_mountpoint(const char *given, char *mnt,
					    size_t len)
{
	struct mntguard_info mi;
	char why[512];

	if (mntguard_inspect(given, mnt, len, &mi, why, sizeof(why)))
		die("mountpoint %s: %s", given, why);
	if (mi.state == MNTGUARD_LOCKFS_LIVE)
		die("mountpoint %s: lockfs is already mounted there (%s); "
		    "unmount it first (fusermount3 -u %s) or choose another "
		    "directory",
		    mnt, mi.source, mnt);
	return mi.state;
}

/* A dead lockfs mount (ENOTCONN) has no daemon and never will: its
 * connection to the kernel is gone for good, and the locks taken through
 * it lapse after their lease whatever is done here. So detaching it
 * (lazily: processes still in it keep getting errors) and mounting afresh
 * loses nothing, and spares the operator a step. Mounts stacked under it
 * are looked at in turn. */
static void replace_dead_mount(char *mnt, size_t len)
{
	char given[PATH_MAX];
	int i, rc;

	for (i = 0; i < 8; i++) {
		text_copy(given, sizeof(given), mnt);
		if (check_mountpoint(given, mnt, len) != MNTGUARD_LOCKFS_DEAD)
			return;
		rc = mntguard_detach(mnt);
		if (rc)
			die("mountpoint %s: the lockfs mount there is dead "
			    "(its daemon is gone) and cannot be unmounted "
			    "(%s); unmount it (fusermount3 -u %s, or umount "
			    "-l %s)",
			    mnt, strerror(-rc), mnt, mnt);
		fprintf(stderr,
			"lockfs: %s: detached a dead lockfs mount (its daemon "
			"was gone; locks taken through it lapse after their "
			"lease) to mount afresh\n",
			mnt);
	}
	die("mountpoint %s: dead lockfs mounts are stacked there; unmount "
	    "them (umount -l %s)",
	    mnt, mnt);
}

/* Just before the mount: the mountpoint again (another lockfs may have
 * mounted there meanwhile), a dead lockfs mount replaced, and the
 * directory made immutable: never a writable local directory when lockfs
 * is not mounted. */
static void prepare_mountpoint(char *mnt, size_t len, bool writable)
{
	char why[128];

	replace_dead_mount(mnt, len);
	if (writable || !mntguard_seal(mnt, why, sizeof(why)))
		return;
	die("mountpoint %s: %s; lockfs keeps its mountpoint immutable so that "
	    "nothing locks on the local disk when it is not mounted (-o "
	    "mountpoint_writable mounts anyway)",
	    mnt, why);
}

static char *default_owner(void)
{
	char host[256] = "localhost", id[37], *owner;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	if (text_uuid4(id))
		strcpy(id, "00000000");
	id[8] = '\0';
	if (asprintf(&owner, "%s:%s", host, id) < 0)
		return NULL;
	return owner;
}

/* A quarter of the safe period, within [250 ms, 5 s]. */
static long attempt_timeout_ms(int64_t safe_period_ms)
{
	int64_t t = safe_period_ms / 4;

	return (long)(t < 250 ? 250 : t > 5000 ? 5000 : t);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct lockfs_opts o;
	struct aws_settings aws;
	struct creds_chain *creds = NULL;
	struct awsreq *req = NULL;
	struct ddb *ddb = NULL;
	struct store *store = NULL;
	struct observe *obs = NULL;
	struct srvclk *sclk = NULL;
	struct lock_engine *eng = NULL;
	struct fs *fs = NULL;
	struct flk *flk = NULL;
	struct fsops_ctx fctx = { NULL, NULL };
	struct fuse_session *se = NULL;
	struct fuse_loop_config *loop = NULL;
	struct metrics metrics;
	struct aws_creds probe = { 0 };
	struct aws_error aerr;
	char err[512], host[256] = "localhost", mnt[PATH_MAX];
	char *owner = NULL, *fsname = NULL;
	int ttl_on = 1, rc, exit_code = 1, unreleased;
	bool created = false;

	/* Secrets in memory: no core dump, no ptrace or /proc/PID/mem by
	 * other processes of our uid. Inherited by the daemonized child. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	if (opts_parse(argc, argv, &o, &args, err, sizeof(err)))
		die("%s", err);
	if (o.show_help || o.show_version) {
		if (o.show_help)
			opts_print_help(stdout, "lockfs");
		else
			opts_print_version(stdout);
		fuse_opt_free_args(&args);
		opts_free(&o);
		return 0;
	}
	log_setup(o.debug ? LOGL_DEBUG : LOGL_INFO, false, "lockfs");
	fuse_set_log_func(fuse_log_to_us);
	/* mount.fuse3 with drop_privileges passes an open /dev/fuse as
	 * /dev/fd/N, which libfuse takes as it is. */
	if (o.mountpoint && is_dev_fd(o.mountpoint)) {
		if (text_copy(mnt, sizeof(mnt), o.mountpoint))
			die("mountpoint %s: name too long", o.mountpoint);
	} else if (o.mountpoint) {
		check_mountpoint(o.mountpoint, mnt, sizeof(mnt));
	}

	/* libfuse checks its own options here, before anything else runs
	 * (the session only keeps the address of fctx, filled in below). */
	if (o.mountpoint) {
		if (asprintf(&fsname,
			     "-ofsname=lockfs:%s,subtype=lockfs,default_"
			     "permissions",
			     o.table) < 0 ||
		    fuse_opt_add_arg(&args, fsname))
			die("out of memory");
		if (o.debug && fuse_opt_add_arg(&args, "-odebug"))
			die("out of memory");
		se = fuse_session_new(&args, &fsops_table, sizeof(fsops_table),
				      &fctx);
		if (!se)
			die("%s (see lockfs --help)",
			    fuse_last_error[0] ? fuse_last_error
					       : "invalid FUSE options");
	}

	/* Where to talk, as whom. */
	if (awscfg_resolve(o.profile, o.region, o.endpoint, &aws, err,
			   sizeof(err)))
		die("%s", err);
	rc = awscfg_check_endpoint("DynamoDB", aws.endpoint, o.allow_plain_http,
				   err, sizeof(err));
	if (rc < 0)
		die("%s", err);
	if (rc > 0)
		log_warn("main", "%s", err);
	if (http_global_init())
		die("cannot initialise libcurl");
	struct creds_config cc = {
		.profile = aws.profile,
		.region = aws.region,
		.http = { .ca_file = o.ca_file,
			  .allow_plain_http = o.allow_plain_http },
	};
	creds = creds_chain_new(&cc);
	if (!creds)
		die("out of memory");
	/* The chain has its copies: off /proc/PID/environ with them. */
	creds_env_scrub_process();
	awserr_clear(&aerr);
	rc = creds_chain_get(creds, &probe, &aerr);
	if (rc)
		die("%s", aerr.message[0] ? aerr.message : strerror(-rc));
	log_debug("main", "credentials from %s", probe.source);
	aws_creds_clear(&probe);

	/* DynamoDB's time, learned from its answers: the lock rows' TTL and
	 * times and the request signatures use it, not this host's clock. */
	sclk = srvclk_new(&clk_system);
	if (!sclk)
		die("out of memory");
	metrics_init(&metrics);
	ddb_name_metrics(&metrics);
	struct awsreq_config rcfg = {
		.endpoint = aws.endpoint,
		.region = aws.region,
		.service = "dynamodb",
		.creds = creds,
		.http = { .ca_file = o.ca_file,
			  .allow_plain_http = o.allow_plain_http },
		.metrics = &metrics,
		.server_clock = sclk,
		/* One HTTP exchange may not take a lock's whole safe period:
		 * a renewal whose answer hangs is tried again in time. */
		.attempt_timeout_ms = attempt_timeout_ms(o.safe_period_ms),
	};
	req = awsreq_new(&rcfg);
	ddb = req ? ddb_new(req) : NULL;
	if (!ddb)
		die("cannot set up the DynamoDB client for %s", aws.endpoint);

	/* The table: created when asked, then checked. */
	if (o.create_table &&
	    store_ddb_create_table(ddb, o.table, clk_sys_mono_ms() + 60000,
				   &created, err, sizeof(err)))
		die("table %s at %s: %s", o.table, aws.endpoint, err);
	if (store_ddb_check_table(ddb, o.table,
				  clk_sys_mono_ms() + PREFLIGHT_TIMEOUT_MS,
				  &ttl_on, err, sizeof(err)))
		die("%s (endpoint %s, region %s)", err, aws.endpoint,
		    aws.region);
	if (!o.mountpoint) {
		printf("lockfs: table %s %s at %s; ready\n", o.table,
		       created ? "created" : "already exists", aws.endpoint);
		exit_code = 0;
		goto out_aws;
	}
	if (!ttl_on)
		log_warn("main",
			 "TTL is not enabled on %s.expiry_time: rows of dead "
			 "daemons stay until taken over",
			 o.table);

	/* The lock engine and the filesystem. */
	owner = o.owner ? strdup(o.owner) : default_owner();
	gethostname(host, sizeof(host) - 1);
	store = store_ddb_new(ddb, o.table, o.lease_ms);
	obs = observe_new(srvclk_clock(sclk), 0);
	struct lock_config lc = {
		.owner = owner,
		.host = host,
		.lease_ms = o.lease_ms,
		.heartbeat_ms = o.heartbeat_ms,
		.safe_period_ms = o.safe_period_ms,
		.hold = o.hold,
		.lost_signal = o.lost_signal,
		.recent_release_ms = (int64_t)(o.entry_timeout * 1000),
	};
	eng = (owner && store && obs)
		      ? lock_engine_new(&lc, store, obs, srvclk_clock(sclk),
					&metrics, NULL)
		      : NULL;
	struct fs_config fc = {
		.prefix = o.prefix ? o.prefix : "",
		.attr_timeout_s = o.attr_timeout,
		.entry_timeout_s = o.entry_timeout,
		.allow_break = o.allow_break,
		.root_uid = getuid(),
		.root_gid = getgid(),
		.max_locks_per_user = o.max_locks_per_user,
		.max_waiters_per_user = o.max_waiters_per_user,
		.max_dirs_per_user = o.max_dirs_per_user,
		.max_opens_per_user = o.max_opens_per_user,
		.table = o.table,
		.region = aws.region,
		.endpoint = aws.endpoint,
		.hold_name = opts_hold_name(o.hold),
		.poll_notify = notify_poll_wake,
		.poll_destroy = notify_poll_destroy,
	};
	fs = eng ? fs_new(&fc, eng, store, obs, &metrics) : NULL;
	if (!fs)
		die("out of memory");
	struct lock_callbacks cb = { fs_on_lost, fs_on_released, fs };
	lock_engine_set_callbacks(eng, &cb);
	rc = fs_ensure_prefix_dirs(fs);
	if (rc) {
		char why[LOG_ERRNO_MAX];

		log_warn("main",
			 "cannot record the directories of prefix %s: %s; "
			 "other mounts see them once listed",
			 o.prefix, log_errno(rc, why, sizeof(why)));
	}
	struct flk_config flc = {
		.reply = fsops_reply_lock,
		.on_granted = fs_on_granted,
		.arg = fs,
		.poll_min_ms = o.wait_poll_ms < 50 ? o.wait_poll_ms : 50,
		.poll_max_ms = o.wait_poll_ms,
	};
	flk = flk_new(&flc, eng, store, obs, &metrics);
	if (!flk)
		die("out of memory");
	fs_set_flk(fs, flk);
	fctx.fs = fs;
	fctx.flk = flk;

	/* Where the log goes; a log_file that cannot be opened fails here,
	 * before the mount. */
	struct log_places lp = { o.log_file, LOG_SYSLOG_SOCKET,
				 LOG_FALLBACK_FILE };
	char logwhere[384];

	if (log_choose(&lp, o.foreground, logwhere, sizeof(logwhere)))
		die("%s", logwhere);

	/* The mount. */
	if (fuse_set_signal_handlers(se))
		die("cannot install signal handlers");
	if (!is_dev_fd(mnt))
		prepare_mountpoint(mnt, sizeof(mnt), o.mountpoint_writable);
	if (fuse_session_mount(se, mnt))
		die("cannot mount on %s%s%s", mnt,
		    fuse_last_error[0] ? ": " : "", fuse_last_error);
	if (log_chosen_elsewhere())
		fprintf(stderr, "lockfs: mounted %s; logs go to %s\n", mnt,
			logwhere);
	if (fuse_daemonize(o.foreground))
		die("cannot go to the background");
	log_start(o.debug ? LOGL_DEBUG : LOGL_INFO, "lockfs");
	log_info("main", "mounted %s: table=%s endpoint=%s owner=%s log=%s",
		 mnt, o.table, aws.endpoint, owner, logwhere);

	/* Threads start only now, after the fork of fuse_daemonize. */
	if (creds_chain_start(creds) || lease_start(eng) || flk_start(flk) ||
	    fs_start(fs)) {
		log_err("main", "cannot start threads");
		goto out_unmount;
	}
	loop = fuse_loop_cfg_create();
	if (!loop)
		goto out_unmount;
	fuse_loop_cfg_set_max_threads(loop, o.max_threads);
	fuse_loop_cfg_set_clone_fd(loop, 0);
	rc = fuse_session_loop_mt(se, loop);
	/* Unmounted (0) or ended by a signal (libfuse returns its number):
	 * both are a clean stop. Only a negative value is a failure. */
	exit_code = rc < 0 ? 1 : 0;
	if (rc > 0)
		log_info("main", "stopping on signal %d (SIG%s)", rc,
			 sigabbrev_np(rc) ? sigabbrev_np(rc) : "?");

out_unmount:
	/* Unmounted, signalled, or the threads did not start: give every
	 * lock back. */
	fuse_loop_cfg_destroy(loop);
	flk_stop(flk);
	fs_stop(fs); /* coalesced data is written before the release */
	lease_stop(eng);
	unreleased = lock_release_all(eng);
	if (unreleased)
		log_warn("main",
			 "%d locks could not be released; they lapse after "
			 "their lease",
			 unreleased);
	else
		log_info("main", "all locks released");
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
out_aws:
	if (se)
		fuse_session_destroy(se);
	flk_free(flk);
	fs_free(fs);
	lock_engine_free(eng);
	observe_free(obs);
	store_free(store);
	ddb_free(ddb);
	awsreq_free(req);
	creds_chain_free(creds);
	srvclk_free(sclk);
	http_global_cleanup();
	fuse_opt_free_args(&args);
	free(fsname);
	free(owner);
	opts_free(&o);
	return exit_code;
}
