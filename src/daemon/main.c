/* main: the lockfs process. Parses options, resolves the endpoint and the
 * credentials, checks (or creates) the table, all before going to the
 * background so that every problem reaches the terminal as one line and a
 * non-zero exit; then mounts, runs the multi-threaded session loop, and on
 * unmount or SIGTERM releases every held lock before exiting. Owns the
 * process-wide objects (struct daemon); tear_down frees them in reverse
 * order. main() reads as its steps, each a static function. */
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
#include <sys/resource.h>
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
#include "stopguard.h"
#include "store_ddb.h"
#include "text.h"

#define PREFLIGHT_TIMEOUT_MS 15000
/* lockfs --create-index: the longest wait for the index to be ACTIVE. */
#define INDEX_WAIT_MS (30 * 60 * 1000)

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

/* Everything the process owns, from start-up to teardown. Main thread
 * only; the session keeps the address of fctx, so a struct daemon lives as
 * long as main. */
struct daemon {
	struct fuse_args args;
	struct lockfs_opts o;
	struct aws_settings aws;
	struct creds_chain *creds;
	struct srvclk *sclk;
	struct metrics metrics;
	struct awsreq *req;
	struct ddb *ddb;
	struct store *store;
	struct store_ddb_sweep *sweep;
	struct observe *obs;
	struct lock_engine *eng;
	struct fs *fs;
	struct flk *flk;
	struct fsops_ctx fctx;
	struct fuse_session *se;
	struct stopguard *guard; /* the mount, cut off at a slow stop */
	bool by_signal;		 /* the loop ended on a signal */
	char mnt[PATH_MAX];
	char host[256];
	char logwhere[384];
	char *owner;
	char *fsname;
};

/* Every shared object bound at start, not only lockfs (-z now): a library
 * built without it (libc's interposable calls, NSS modules, some of curl's
 * dependencies) resolves a symbol at its first call, and the resolver saves
 * every vector register, credential bytes included, on that thread's
 * stack, outside the pages kept out of core dumps. The dynamic linker reads
 * LD_BIND_NOW only at exec, so lockfs runs itself again with it, once,
 * before anything else, by its own path (not /proc/self/exe, whose name
 * would become the process's: ps and pgrep would show "exe"); when that
 * cannot be done it goes on as it is.
 *
 * glibc reads its tunables only at exec too, so the same run again sets
 * LOCKFS_MALLOC_TUNABLES: no per-thread cache of freed blocks (tcache) and
 * one arena. Every lease worker and request thread kept its own of both:
 * with 256 lease workers and 10,000 locks they held about 9 MB (RSS 50.5
 * -> 41.4 MB in bench/scale.sh --rtt 0 with lease_workers=256), at no CPU
 * cost measured (bench/cycle.sh 2000 8 3: 490 us a cycle, 521 before).
 * The operator's own GLIBC_TUNABLES follow ours, and so win. */
#define LOCKFS_MALLOC_TUNABLES                                                 \
	"glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1"

static void run_again_bound_and_tuned(char **argv)
{
	const char *now = getenv("LD_BIND_NOW");
	const char *theirs = getenv("GLIBC_TUNABLES");
	char *was = theirs ? strdup(theirs) : NULL;
	char self[PATH_MAX];
	char *tunables = NULL;
	ssize_t n;

	if ((now && now[0]) || (theirs && !was))
		goto out;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(self) - 1)
		goto out;
	self[n] = '\0';
	if (asprintf(&tunables, "%s%s%s", LOCKFS_MALLOC_TUNABLES,
		     was && was[0] ? ":" : "", was ? was : "") < 0) {
		tunables = NULL;
		goto out;
	}
	if (setenv("LD_BIND_NOW", "1", 1) ||
	    setenv("GLIBC_TUNABLES", tunables, 1))
		goto undo;
	execv(self, argv);
undo:
	unsetenv("LD_BIND_NOW");
	if (was)
		setenv("GLIBC_TUNABLES", was, 1);
	else
		unsetenv("GLIBC_TUNABLES");
out:
	free(tunables);
	free(was);
}

/* Secrets in memory: no core dump, no ptrace or /proc/PID/mem by other
 * processes of our uid. Inherited by the daemonized child. */
static void harden_process(void)
{
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
}

/* The HTTP clients besides the lease workers': the request threads', and
 * 16 for flk's workers, the session, the sweep and credentials. */
static int other_clients(const struct lockfs_opts *o)
{
	return (int)o->max_threads + 16;
}

/* A lock's holder costs an open file while the daemon watches its exit (a
 * pidfd): take the hard limit of open files, as a program that needs many
 * should (systemd gives services a soft limit of 1024). Nothing here uses
 * select(). The watches stop short of the limit whatever it is (lease.c),
 * but the HTTP clients need theirs: a limit below that would fail
 * renewals with EMFILE and lose locks, so it is refused before mounting. */
static void raise_open_files(const struct daemon *d)
{
	struct lock_config lc = { .other_clients = other_clients(&d->o),
				  .lease_workers = d->o.lease_workers };
	size_t need = lock_files_needed(&lc);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			log_debug("main",
				  "cannot raise the open files limit: %s",
				  strerror(errno));
			getrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		die("too few open files allowed (RLIMIT_NOFILE %llu): lockfs "
		    "needs at least %zu with max_threads=%u; raise the limit "
		    "(LimitNOFILE=, ulimit -n, prlimit --nofile)",
		    (unsigned long long)rl.rlim_cur, need, d->o.max_threads);
}

/* The options; true when --help or --version was all there was to do. */
static bool parse_options(struct daemon *d, int argc, char **argv)
{
	char err[512];

	if (opts_parse(argc, argv, &d->o, &d->args, err, sizeof(err)))
		die("%s", err);
	if (!d->o.show_help && !d->o.show_version)
		return false;
	if (d->o.show_help)
		opts_print_help(stdout, "lockfs");
	else
		opts_print_version(stdout);
	fuse_opt_free_args(&d->args);
	opts_free(&d->o);
	return true;
}

/* Logging to stderr until the mount, libfuse's messages included. */
static void setup_logging(const struct daemon *d)
{
	log_setup(d->o.debug ? LOGL_DEBUG : LOGL_INFO, false, "lockfs");
	fuse_set_log_func(fuse_log_to_us);
}

/* The mountpoint, resolved and checked now so that a wrong one fails
 * before anything else runs. */
static void check_mountpoint_arg(struct daemon *d)
{
	/* mount.fuse3 with drop_privileges passes an open /dev/fuse as
	 * /dev/fd/N, which libfuse takes as it is. */
	if (d->o.mountpoint && is_dev_fd(d->o.mountpoint)) {
		if (text_copy(d->mnt, sizeof(d->mnt), d->o.mountpoint))
			die("mountpoint %s: name too long", d->o.mountpoint);
	} else if (d->o.mountpoint) {
		check_mountpoint(d->o.mountpoint, d->mnt, sizeof(d->mnt));
	}
}

/* libfuse checks its own options here, before anything else runs (the
 * session only keeps the address of fctx, filled in by build_fs). */
static void new_session(struct daemon *d)
{
	if (!d->o.mountpoint)
		return;
	if (asprintf(&d->fsname,
		     "-ofsname=lockfs:%s,subtype=lockfs,default_"
		     "permissions",
		     d->o.table) < 0 ||
	    fuse_opt_add_arg(&d->args, d->fsname))
		die("out of memory");
	if (d->o.debug && fuse_opt_add_arg(&d->args, "-odebug"))
		die("out of memory");
	d->se = fuse_session_new(&d->args, &fsops_table, sizeof(fsops_table),
				 &d->fctx);
	if (!d->se)
		die("%s (see lockfs --help)", fuse_last_error[0]
						      ? fuse_last_error
						      : "invalid FUSE options");
}

/* Where to talk: profile, region and endpoint, and libcurl. */
static void resolve_endpoint(struct daemon *d)
{
	char err[512];
	int rc;

	if (awscfg_resolve(d->o.profile, d->o.region, d->o.endpoint, &d->aws,
			   err, sizeof(err)))
		die("%s", err);
	rc = awscfg_check_endpoint("DynamoDB", d->aws.endpoint,
				   d->o.allow_plain_http, err, sizeof(err));
	if (rc < 0)
		die("%s", err);
	if (rc > 0)
		log_warn("main", "%s", err);
	if (http_global_init())
		die("cannot initialise libcurl");
}

/* As whom: the credential chain, tried once now. */
static void resolve_credentials(struct daemon *d)
{
	struct aws_creds probe = { 0 };
	struct aws_error aerr;
	int rc;

	struct creds_config cc = {
		.profile = d->aws.profile,
		.region = d->aws.region,
		.http = { .ca_file = d->o.ca_file,
			  .allow_plain_http = d->o.allow_plain_http },
	};
	d->creds = creds_chain_new(&cc);
	if (!d->creds)
		die("out of memory");
	/* The chain has its copies: off /proc/PID/environ with them. */
	creds_env_scrub_process();
	awserr_clear(&aerr);
	rc = creds_chain_get(d->creds, &probe, &aerr);
	if (rc)
		die("%s", aerr.message[0] ? aerr.message : strerror(-rc));
	log_debug("main", "credentials from %s", probe.source);
	aws_creds_clear(&probe);
}

/* The DynamoDB client, its metrics and DynamoDB's time. */
static void connect_dynamodb(struct daemon *d)
{
	/* DynamoDB's time, learned from its answers: the lock rows' TTL and
	 * times and the request signatures use it, not this host's clock. */
	d->sclk = srvclk_new(&clk_system);
	if (!d->sclk)
		die("out of memory");
	metrics_init(&d->metrics);
	ddb_name_metrics(&d->metrics);
	fsops_name_metrics(&d->metrics);
	struct awsreq_config rcfg = {
		.endpoint = d->aws.endpoint,
		.region = d->aws.region,
		.service = "dynamodb",
		.creds = d->creds,
		.http = { .ca_file = d->o.ca_file,
			  .allow_plain_http = d->o.allow_plain_http },
		.metrics = &d->metrics,
		.server_clock = d->sclk,
		/* One HTTP exchange may not take a lock's whole safe period:
		 * a renewal whose answer hangs is tried again in time. */
		.attempt_timeout_ms = attempt_timeout_ms(d->o.safe_period_ms),
	};
	d->req = awsreq_new(&rcfg);
	d->ddb = d->req ? ddb_new(d->req) : NULL;
	if (!d->ddb)
		die("cannot set up the DynamoDB client for %s",
		    d->aws.endpoint);
}

/* The table: created when asked, then checked. False when there is
 * nothing to mount (lockfs --create-table without a mountpoint): then it
 * says the table is ready. */
static bool prepare_table(struct daemon *d)
{
	char err[512];
	bool created = false;
	int ttl_on = 1;

	if (d->o.create_table &&
	    store_ddb_create_table(d->ddb, d->o.table,
				   clk_sys_mono_ms() + 60000, &created, err,
				   sizeof(err)))
		die("table %s at %s: %s", d->o.table, d->aws.endpoint, err);
	if (store_ddb_check_table(d->ddb, d->o.table,
				  clk_sys_mono_ms() + PREFLIGHT_TIMEOUT_MS,
				  &ttl_on, err, sizeof(err)))
		die("%s (endpoint %s, region %s)", err, d->aws.endpoint,
		    d->aws.region);
	if (d->o.create_index &&
	    store_ddb_create_index(d->ddb, d->o.table,
				   clk_sys_mono_ms() + INDEX_WAIT_MS, stdout,
				   err, sizeof(err)))
		die("table %s at %s: %s", d->o.table, d->aws.endpoint, err);
	if (!d->o.mountpoint && d->o.create_index)
		return false;
	if (!d->o.mountpoint) {
		printf("lockfs: table %s %s at %s; ready\n", d->o.table,
		       created ? "created" : "already exists", d->aws.endpoint);
		return false;
	}
	if (!ttl_on)
		log_warn("main",
			 "TTL is not enabled on %s.expiry_time: rows of dead "
			 "daemons stay until taken over",
			 d->o.table);
	return true;
}

/* How listings read the table (-o list=): the index when it is ACTIVE and
 * tagged (one DescribeTable and one GetItem), else a Scan, said once. */
static void choose_listing(struct daemon *d)
{
	enum store_ddb_list mode = (enum store_ddb_list)d->o.list_mode;
	char err[512];
	bool active = false;

	if (mode != STORE_DDB_LIST_SCAN &&
	    store_ddb_index_state(d->ddb, d->o.table,
				  clk_sys_mono_ms() + PREFLIGHT_TIMEOUT_MS,
				  &active, err, sizeof(err)))
		log_warn("main", "%s: listings Scan the table", err);
	if (mode != STORE_DDB_LIST_SCAN && !active)
		log_warn("main",
			 "table %s has no ready index " STORE_DDB_INDEX
			 ": every listing Scans the whole table; add the "
			 "index with lockfs --create-index -o table=%s",
			 d->o.table, d->o.table);
	store_ddb_set_listing(d->store, mode, active);
	if (d->o.sweep_ms && !active)
		log_warn("main", "sweep: no ready index to sweep for");
	if (d->o.sweep_ms && active && d->owner) {
		d->sweep = store_ddb_sweep_new(d->ddb, d->o.table, d->owner,
					       d->o.sweep_ms);
		store_ddb_set_swept(d->store, d->sweep != NULL);
	}
}

/* The lock engine over the DynamoDB store. */
static void build_engine(struct daemon *d)
{
	const struct lockfs_opts *o = &d->o;

	d->owner = o->owner ? strdup(o->owner) : default_owner();
	text_copy(d->host, sizeof(d->host), "localhost");
	gethostname(d->host, sizeof(d->host) - 1);
	d->store = store_ddb_new(d->ddb, o->table, o->lease_ms);
	if (d->store)
		choose_listing(d);
	d->obs = observe_new(srvclk_clock(d->sclk), 0);
	struct lock_config lc = {
		.owner = d->owner,
		.host = d->host,
		.lease_ms = o->lease_ms,
		.heartbeat_ms = o->heartbeat_ms,
		.safe_period_ms = o->safe_period_ms,
		.hold = o->hold,
		.lost_signal = o->lost_signal,
		.recent_release_ms = (int64_t)(o->entry_timeout * 1000),
		.session = o->session,
		.other_clients = other_clients(o),
		.lease_workers = o->lease_workers,
	};
	d->eng = (d->owner && d->store && d->obs)
			 ? lock_engine_new(&lc, d->store, d->obs,
					   srvclk_clock(d->sclk), &d->metrics,
					   NULL)
			 : NULL;
}

/* A listing row of python_dynamodb_lock's: a lock row without lockfs's
 * attributes (a reservation of the fair handoff has none either, but
 * names whom it is for). */
static int find_python_row(void *arg, const struct store_row *row)
{
	char **key = arg;

	if (row->kind != STORE_ROW_LOCK || row->lock->has_lockfs ||
	    row->lock->reserved_for)
		return 0;
	*key = strdup(row->lock->key ? row->lock->key : "?");
	return 1;
}

/* Session mode: refused on a table that python_dynamodb_lock clients use
 * (one listing of the whole table: a Scan, one request per 1 MB page),
 * then the session item created. Either failure ends the mount. */
static void start_session(struct daemon *d)
{
	char *key = NULL, why[LOG_ERRNO_MAX];
	int rc;

	if (!d->o.session || !d->eng)
		return;
	rc = store_ddb_rows_scan(d->store, "", clk_sys_mono_ms() + 60000,
				 find_python_row, &key);
	if (rc)
		die("-o session: cannot list table %s to look for "
		    "python_dynamodb_lock rows: %s",
		    d->o.table, log_errno(rc, why, sizeof(why)));
	if (key) {
		char shown[128];

		text_escape_to(shown, sizeof(shown), key, strlen(key));
		free(key);
		die("-o session refused: table %s holds python_dynamodb_lock "
		    "rows (key %s): their clients cannot see a session's "
		    "heartbeats; use per-lock leases (no -o session) on this "
		    "table",
		    d->o.table, shown);
	}
	rc = lock_session_start(d->eng);
	if (rc)
		die("-o session: cannot create the session item in table %s: "
		    "%s",
		    d->o.table, log_errno(rc, why, sizeof(why)));
}

/* The filesystem and its file locks over the engine, handed to the
 * session's operations. */
static void build_fs(struct daemon *d)
{
	const struct lockfs_opts *o = &d->o;
	int rc;

	struct fs_config fc = {
		.prefix = o->prefix ? o->prefix : "",
		.attr_timeout_s = o->attr_timeout,
		.entry_timeout_s = o->entry_timeout,
		.allow_break = o->allow_break,
		.release_async = o->release_async,
		.root_uid = getuid(),
		.root_gid = getgid(),
		.max_locks_per_user = o->max_locks_per_user,
		.max_waiters_per_user = o->max_waiters_per_user,
		.max_dirs_per_user = o->max_dirs_per_user,
		.max_opens_per_user = o->max_opens_per_user,
		.table = o->table,
		.region = d->aws.region,
		.endpoint = d->aws.endpoint,
		.hold_name = opts_hold_name(o->hold),
		.server_clock = d->sclk,
		.poll_notify = notify_poll_wake,
		.poll_destroy = notify_poll_destroy,
	};
	d->fs = d->eng ? fs_new(&fc, d->eng, &d->metrics) : NULL;
	if (!d->fs)
		die("out of memory");
	struct lock_callbacks cb = {
		.on_lost = fs_on_lost,
		.on_released = fs_on_released,
		.on_acquired = fs_on_acquired,
		.arg = d->fs,
	};
	lock_engine_set_callbacks(d->eng, &cb);
	char *pkey = NULL, *powner = NULL;

	rc = fs_ensure_prefix_dirs(d->fs, &pkey, &powner);
	if (rc == -ENOTDIR)
		die("prefix %s: %s is a lock (owner %s), not a directory: "
		    "a name is a lock or a directory, never both",
		    o->prefix, pkey, powner ? powner : "?");
	free(pkey);
	free(powner);
	if (rc) {
		char why[LOG_ERRNO_MAX];

		log_warn("main",
			 "cannot record the directories of prefix %s: %s; "
			 "other mounts see them once listed",
			 o->prefix, log_errno(rc, why, sizeof(why)));
	}
	struct flk_config flc = {
		.reply = fsops_reply_lock,
		.on_granted = fs_on_granted,
		.around_downgrade = fs_around_downgrade,
		.arg = d->fs,
		.poll_min_ms = o->wait_poll_ms < 50 ? o->wait_poll_ms : 50,
		.poll_max_ms = o->wait_poll_ms,
	};
	d->flk = flk_new(&flc, d->eng, &d->metrics);
	if (!d->flk)
		die("out of memory");
	fs_set_flk(d->fs, d->flk);
	d->fctx.fs = d->fs;
	d->fctx.flk = d->flk;
	d->fctx.metrics = &d->metrics;
}

/* Where the log goes; a log_file that cannot be opened fails here, before
 * the mount. */
static void choose_log_place(struct daemon *d)
{
	struct log_places lp = { d->o.log_file, LOG_SYSLOG_SOCKET,
				 LOG_FALLBACK_FILE };

	if (log_choose(&lp, d->o.foreground, d->logwhere, sizeof(d->logwhere)))
		die("%s", d->logwhere);
}

/* The mount, then to the background (unless -f) with the chosen log. */
static void mount_fs(struct daemon *d)
{
	struct lock_session_info si;

	if (fuse_set_signal_handlers(d->se))
		die("cannot install signal handlers");
	if (!is_dev_fd(d->mnt))
		prepare_mountpoint(d->mnt, sizeof(d->mnt),
				   d->o.mountpoint_writable);
	if (fuse_session_mount(d->se, d->mnt))
		die("cannot mount on %s%s%s", d->mnt,
		    fuse_last_error[0] ? ": " : "", fuse_last_error);
	if (!is_dev_fd(d->mnt))
		d->guard = stopguard_new(d->mnt);
	if (log_chosen_elsewhere())
		fprintf(stderr, "lockfs: mounted %s; logs go to %s\n", d->mnt,
			d->logwhere);
	if (fuse_daemonize(d->o.foreground))
		die("cannot go to the background");
	log_start(d->o.debug ? LOGL_DEBUG : LOGL_INFO, "lockfs");
	memset(&si, 0, sizeof(si));
	if (d->eng)
		lock_session_info(d->eng, &si);
	log_info("main", "mounted %s: table=%s endpoint=%s owner=%s%s%s log=%s",
		 d->mnt, d->o.table, d->aws.endpoint, d->owner,
		 si.on ? " session=" : "", si.on ? si.key : "", d->logwhere);
}

/* Starts the threads and runs the session loop until unmount or a
 * signal. The exit status: 0 for a clean stop, 1 when the threads did not
 * start or the loop failed. */
static int run(struct daemon *d)
{
	struct fuse_loop_config *loop;
	int rc;

	/* Threads start only now, after the fork of fuse_daemonize. */
	ddb_log_failures(d->ddb);
	if (creds_chain_start(d->creds) || lease_start(d->eng) ||
	    flk_start(d->flk) || fs_start(d->fs) ||
	    store_ddb_sweep_start(d->sweep)) {
		log_err("main", "cannot start threads");
		return 1;
	}
	loop = fuse_loop_cfg_create();
	if (!loop)
		return 1;
	fuse_loop_cfg_set_max_threads(loop, d->o.max_threads);
	fuse_loop_cfg_set_clone_fd(loop, 0);
	rc = fuse_session_loop_mt(d->se, loop);
	fuse_loop_cfg_destroy(loop);
	/* Unmounted (0) or ended by a signal (libfuse returns its number):
	 * both are a clean stop. Only a negative value is a failure. */
	d->by_signal = rc > 0;
	if (rc > 0)
		log_info("main", "stopping on signal %d (SIG%s)", rc,
			 sigabbrev_np(rc) ? sigabbrev_np(rc) : "?");
	return rc < 0 ? 1 : 0;
}

/* Unmounted, signalled, or the threads did not start: give every lock
 * back, then unmount. */
static void release_and_unmount(struct daemon *d)
{
	/* Only a loop ended by a signal leaves the mount up and deaf. One
	 * unmounted is gone with its connection (its holders were told),
	 * and its device number may be a new mount's already. */
	struct stopguard *guard = d->by_signal ? d->guard : NULL;
	int unreleased;

	/* Holders cannot be told through the mount from now on (its
	 * requests wait): it is cut off if a lock's trust ends first. */
	stopguard_begin(guard, d->eng, &d->metrics);
	store_ddb_sweep_free(d->sweep); /* stops it: no sweep from now on */
	d->sweep = NULL;
	flk_stop(d->flk);
	fs_stop(d->fs); /* coalesced data is written before the release */
	lease_stop(d->eng);
	/* Every holder learns before any row is deleted. */
	stopguard_cut(guard, "its locks are given back");
	unreleased = lock_release_all(d->eng);
	stopguard_end(guard);
	lock_session_end(d->eng);
	if (unreleased)
		log_warn("main",
			 "%d locks could not be released; they lapse after "
			 "their lease",
			 unreleased);
	else
		log_info("main", "all locks released");
	fuse_remove_signal_handlers(d->se);
	/* libfuse unmounts the path while the connection lives: after a lazy
	 * unmount (umount -l, its holders' files still open) the path may
	 * hold another mount by now, which a signal here used to unmount.
	 * Then the connection ends with the session (its device closed). */
	if (stopguard_gone(guard)) {
		log_info("main", "%s is not this mount any more: not unmounted",
			 d->mnt);
		return;
	}
	fuse_session_unmount(d->se);
}

/* Frees everything, in the reverse order of its making. */
static void tear_down(struct daemon *d)
{
	if (d->se)
		fuse_session_destroy(d->se);
	stopguard_free(d->guard);
	store_ddb_sweep_free(d->sweep);
	flk_free(d->flk);
	fs_free(d->fs);
	lock_engine_free(d->eng);
	observe_free(d->obs);
	store_free(d->store);
	ddb_free(d->ddb);
	awsreq_free(d->req);
	creds_chain_free(d->creds);
	srvclk_free(d->sclk);
	http_global_cleanup();
	fuse_opt_free_args(&d->args);
	free(d->fsname);
	free(d->owner);
	opts_free(&d->o);
}

int main(int argc, char **argv)
{
	struct daemon d = { .args = FUSE_ARGS_INIT(argc, argv) };
	int exit_code = 0;

	run_again_bound_and_tuned(argv);
	harden_process();
	if (parse_options(&d, argc, argv))
		return 0; /* --help, --version */
	setup_logging(&d);
	raise_open_files(&d);
	check_mountpoint_arg(&d);
	new_session(&d);
	resolve_endpoint(&d);
	resolve_credentials(&d);
	connect_dynamodb(&d);
	if (prepare_table(&d)) {
		build_engine(&d);
		start_session(&d);
		build_fs(&d);
		choose_log_place(&d);
		mount_fs(&d);
		exit_code = run(&d);
		release_and_unmount(&d);
	}
	tear_down(&d);
	return exit_code;
}
