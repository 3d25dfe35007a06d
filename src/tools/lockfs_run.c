/* lockfs-run: runs a command while holding a lock file, like flock(1) or
 * `consul lock`. Owns all of this program: its options, taking flock(LOCK_EX,
 * or LOCK_SH with -s) on the lock file (on a lockfs mount that is the key's
 * distributed lock), the command's environment (LOCKFS_KEY, LOCKFS_FENCE,
 * LOCKFS_OWNER), its process group and terminal, forwarding signals to it,
 * stopping it when the lock is lost, and the exit status. Taking the lock
 * and reading its identity are in run_lock.c, the messages in
 * run_common.c.
 *
 * On lockfs the lock file is opened a second time once the lock is granted;
 * that file (bound to our lock) gives the fencing token and reports loss.
 *
 * The lock's trust also ends by our clock: lockfs says how long it trusts
 * the lock (LOCKFS_IOC_TRUST_MS, counted here from the moment we asked),
 * and when that time passes without a newer word, because the daemon is
 * stopped or hung and can report nothing, the command is stopped as on a
 * reported loss, before another host can take the key.
 *
 * Threads: the main thread does everything except two waits: a watcher
 * thread sits in poll(2) on that file for POLLPRI (lockfs reports a lost
 * lock as POLLERR|POLLPRI) and reports through a pipe, and a trust thread
 * asks how long the lock stays trusted and moves the end of trust on; so the
 * main loop never waits on the file system while the command runs. Signals are
 * blocked in all threads while the command runs and read from a signalfd;
 * before, their handlers only set flags (and re-arm the wait's timer). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sysexits.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clk.h"
#include "lockfs_ioctl.h"
#include "run_args.h"
#include "run_common.h"
#include "run_lock.h"
#include "text.h"

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	run_say("%s (usage: %s [OPTIONS] LOCKFILE -- COMMAND [ARGS...]; "
		"see --help)",
		msg, PROG);
	exit(EXIT_USAGE);
}

static const char help_text[] =
	"Usage: lockfs-run [OPTIONS] LOCKFILE -- COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND while holding an exclusive flock(2) lock on LOCKFILE\n"
	"(created if missing), or a shared one with -s. On a lockfs mount "
	"that\n"
	"is the distributed lock of the file's key, across every mount of the\n"
	"DynamoDB table.\n"
	"\n"
	"Options:\n"
	"  -n, --nonblock, --nb   fail at once if the lock is held\n"
	"  -s, --shared           take a shared lock (LOCK_SH): any number of\n"
	"                         shared holders at once, on any mount; an\n"
	"                         exclusive holder excludes them all\n"
	"  -w, --wait, --timeout SECONDS\n"
	"                         wait at most SECONDS for the lock (up to 3\n"
	"                         decimals; default: as long as it takes)\n"
	"  -E, --conflict-exit-code CODE\n"
	"                         exit status when busy or timed out (COMMAND\n"
	"                         is then not run; 0..255, default 75)\n"
	"      --signal SIG       signal for COMMAND's process group when the\n"
	"                         lock is lost (name or number, default TERM;\n"
	"                         one that ends a process: not STOP, CONT,\n"
	"                         CHLD...)\n"
	"      --grace SECONDS    then SIGKILL if it still runs (default 10)\n"
	"  -h, --help             show this help and exit\n"
	"  -V, --version          show the version and exit\n"
	"\n"
	"COMMAND runs in a process group of its own (given the terminal's\n"
	"foreground if lockfs-run has it) and inherits stdin, stdout and\n"
	"stderr, not the lock file. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1\n"
	"and SIGUSR2 sent to lockfs-run are passed on to that group. If the\n"
	"lock is lost while COMMAND runs (lockfs reports POLLPRI on the lock\n"
	"file, or the trust lockfs last confirmed runs out on lockfs-run's\n"
	"own clock: a stopped or hung daemon cannot report), the group gets\n"
	"--signal, then SIGKILL after --grace seconds.\n"
	"When COMMAND exits the lock is released.\n"
	"\n"
	"Environment of COMMAND:\n"
	"  LOCKFS_KEY     the lock's key (user.lockfs.key), else LOCKFILE\n"
	"  LOCKFS_FENCE   the lock's fencing token (\"fence:\"), else empty;\n"
	"                 with -s, the last exclusive holder's (empty before\n"
	"                 any)\n"
	"  LOCKFS_OWNER   the lock's owner (\"owner:\"), else empty\n"
	"\n"
	"Exit status:\n"
	"  COMMAND's status, or 128+N if it died of signal N, unless:\n"
	"  64   usage error\n"
	"  69   LOCKFILE cannot be opened or locked (no such directory,\n"
	"       EIO, ENOLCK, ...), or names another file once the lock is\n"
	"       granted, or the lock's fencing token cannot be learnt\n"
	"       (COMMAND is never run with it empty)\n"
	"  71   a system call failed (fork, pipe...)\n"
	"  75   busy (-n) or timed out (-w): COMMAND was not run; -E\n"
	"       changes it (with -E 0 too, COMMAND is not run)\n"
	"  76   the lock was lost while COMMAND ran (whatever its status),\n"
	"       or its file was removed (rm: its release)\n"
	"  126  COMMAND cannot be run; 127: COMMAND not found\n"
	"  SIGINT, SIGTERM or SIGHUP while waiting for the lock end the\n"
	"  wait: lockfs-run dies of that signal and leaves no lock behind.\n"
	"\n"
	"Examples:\n"
	"  lockfs-run -n /mnt/locks/nightly -- /usr/local/bin/nightly\n"
	"  lockfs-run -w 30 /mnt/locks/deploy -- \\\n"
	"          sh -c 'deploy --fence \"$LOCKFS_FENCE\"'\n"
	"\n"
	"See lockfs-run(1) and lockfs(8).\n";

static void help(void)
{
	fputs(help_text, stdout);
}

/* ---- options ---------------------------------------------------------- */

static const char *sig_name(int sig, char *tmp, size_t len)
{
	const char *a = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;

	if (a)
		snprintf(tmp, len, "SIG%s", a);
	else
		snprintf(tmp, len, "signal %d", sig);
	return tmp;
}

/* The options (run_args.c); a usage error or --help/--version ends here. */
static void parse_opts(int argc, char **argv, struct run_opts *o)
{
	char err[512];

	switch (run_args_parse(argc, argv, o, err, sizeof(err))) {
	case RUN_ARGS_OK:
		return;
	case RUN_ARGS_HELP:
		help();
		exit(0);
	case RUN_ARGS_VERSION:
		printf("%s %s\n", PROG, LOCKFS_VERSION);
		exit(0);
	default:
		usage_error("%s", err);
	}
}

/* ---- watching for loss ------------------------------------------------ */

/* Only a file opened after the grant is watched: a file opened before a
 * wait may be bound to the previous holder's lock on this mount, and that
 * one being lost is no news of ours. */
struct watch {
	int fd;	    /* the file to poll for POLLPRI */
	int report; /* write end: one byte when lost */
};

/* Owns arg (a malloc'd struct watch): it may outlive its creator's frame. */
static void *watch_main(void *arg)
{
	struct watch w = *(struct watch *)arg;
	struct pollfd p = { .fd = w.fd, .events = POLLPRI };

	free(arg);

	for (;;) {
		int rc = poll(&p, 1, -1);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || (p.revents & POLLNVAL))
			return NULL;
		if (p.revents & (POLLPRI | POLLERR | POLLHUP)) {
			/* lockfs: lost; a dead daemon (ENOTCONN) too. */
			if (write(w.report, "L", 1) < 0)
				return NULL;
			return NULL;
		}
	}
}

/* ---- trust by the clock ------------------------------------------------ */

/* The end of our lock's trust on our monotonic clock (the daemon's clock
 * too: CLOCK_BOOTTIME), as lockfs last confirmed it. */
struct trust {
	int fd;
	int report;	     /* write end: one byte once lockfs says it is
			      * not ours or not trusted any more */
	int64_t end_mono_ms; /* atomic */
};

/* How long lockfs trusts our lock from now (LOCKFS_IOC_TRUST_MS): 0 or an
 * errno (ENODATA: not held by this mount any more; ENOTTY: not lockfs, or
 * a lockfs without it). */
static int read_trust(int fd, int64_t *ms)
{
	if (ioctl(fd, LOCKFS_IOC_TRUST_MS, ms))
		return errno;
	return *ms < 0 ? EINVAL : 0;
}

/* arg: the struct trust it shares with the main loop (static: it lives
 * until we exit). Asks a few times per remaining trust (at most once a
 * second), and moves the end on with each answer; once lockfs says the
 * lock is not ours (released by an rm) or not trusted any more, the trust
 * ends now and it says so (the watcher may not have: the last answer's
 * end stood, up to a safe period after another holder took the key). */
static void *trust_main(void *arg)
{
	struct trust *t = arg;

	for (;;) {
		int64_t t0 = clk_sys_mono_ms(), ms = 0, nap = 200;
		int e = read_trust(t->fd, &ms);
		struct timespec ts;

		if (e == ENODATA || (!e && !ms)) {
			__atomic_store_n(&t->end_mono_ms, t0, __ATOMIC_RELEASE);
			if (write(t->report, "T", 1) < 0)
				return NULL;
			return NULL; /* not ours, or not trusted, any more */
		}
		if (!e) {
			if (t0 + ms >
			    __atomic_load_n(&t->end_mono_ms, __ATOMIC_ACQUIRE))
				__atomic_store_n(&t->end_mono_ms, t0 + ms,
						 __ATOMIC_RELEASE);
			nap = ms / 4;
		}
		nap = nap < 50 ? 50 : nap > 1000 ? 1000 : nap;
		ts.tv_sec = nap / 1000;
		ts.tv_nsec = (nap % 1000) * 1000000;
		nanosleep(&ts, NULL);
	}
}

/* Starts t's thread on fd, after a first answer; false when there is none
 * (another file system, or a lockfs without the ioctl): the watcher alone
 * then reports a loss. */
static bool trust_start(struct trust *t, int fd, int report)
{
	pthread_t th;
	int64_t t0 = clk_sys_mono_ms(), ms;

	if (fd < 0 || read_trust(fd, &ms))
		return false;
	t->fd = fd;
	t->report = report;
	t->end_mono_ms = t0 + ms;
	/* Without the thread, the first answer's end stands. */
	if (!pthread_create(&th, NULL, trust_main, t))
		pthread_detach(th); /* never joined: our exit ends it */
	return true;
}

/* ---- running the command ---------------------------------------------- */

struct child {
	pid_t pid;
	bool tty; /* the command has the terminal's foreground */
	bool done;
	int status;
};

static void child_exec(const struct run_opts *o, struct run_sigstate *ss,
		       bool tty, int report, pid_t parent)
{
	size_t i;
	int e;

	/* Should we die (SIGKILL, the OOM killer), our lock goes with our
	 * open file, so the command must not run on unprotected: the kernel
	 * kills it then. Had we died before this call, it would not. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(EXIT_OSERR);
	setpgid(0, 0);
	if (tty)
		tcsetpgrp(STDIN_FILENO, getpid()); /* SIGTTOU is blocked */
	for (i = 0; i < RUN_N_FWD; i++)
		sigaction(run_fwd_sigs[i], &ss->orig[i], NULL);
	sigaction(SIGALRM, &ss->orig_alrm, NULL);
	sigprocmask(SIG_SETMASK, &ss->orig_mask, NULL);
	execvp(o->argv[0], o->argv);
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(EXIT_NOEXEC);
	_exit(e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* Forks and execs the command; returns 0, or an exit status. */
static int spawn(const struct run_opts *o, struct run_sigstate *ss,
		 struct child *c)
{
	pid_t parent;
	int p[2], e;
	ssize_t n;

	c->tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	if (pipe2(p, O_CLOEXEC)) {
		run_say("cannot make a pipe: %s", strerror(errno));
		return EXIT_OSERR;
	}
	parent = getpid();
	c->pid = fork();
	if (c->pid < 0) {
		run_say("cannot fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return EXIT_OSERR;
	}
	if (c->pid == 0) {
		close(p[0]);
		child_exec(o, ss, c->tty, p[1], parent);
	}
	close(p[1]);
	/* Both sides set the group (and terminal), whichever runs first. */
	setpgid(c->pid, c->pid);
	if (c->tty)
		tcsetpgrp(STDIN_FILENO, c->pid);
	do {
		n = read(p[0], &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof(e)) {
		run_say("cannot run %s: %s", o->argv[0], strerror(e));
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
		c->done = true;
		c->status = e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
		return c->status;
	}
	return 0;
}

/* The command stopped (^Z, SIGTTIN, ...) while it had the terminal: take
 * the terminal back and stop too, so that the shell sees the job stop; when
 * continued, hand it back (if we are in the foreground) and continue the
 * command. */
static void job_stopped(struct child *c)
{
	tcsetpgrp(STDIN_FILENO, getpgrp());
	kill(getpid(), SIGSTOP);
	if (tcgetpgrp(STDIN_FILENO) == getpgrp())
		tcsetpgrp(STDIN_FILENO, c->pid);
	kill(-c->pid, SIGCONT);
}

static void reap(struct child *c)
{
	int st;
	pid_t r;

	while (!c->done) {
		r = waitpid(c->pid, &st, WNOHANG | WUNTRACED);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (WIFSTOPPED(st)) {
			if (c->tty)
				job_stopped(c);
			continue;
		}
		c->done = true;
		c->status =
			WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	}
}

static bool is_forwarded(const struct run_sigstate *ss, int sig)
{
	size_t i;

	for (i = 0; i < RUN_N_FWD; i++)
		if (run_fwd_sigs[i] == sig)
			return !ss->ignored[i];
	return false;
}

/* The lock is lost (why says how we know): --signal to the command's
 * process group now, SIGKILL after --grace (*kill_at_mono_ms). */
static void stop_command(const struct run_opts *o, const struct child *c,
			 const char *why, int64_t *kill_at_mono_ms)
{
	char sname[32], gs[32], then[64] = "";

	if (o->lost_sig != SIGKILL) {
		text_format_seconds_short(o->grace_ms, gs, sizeof(gs));
		snprintf(then, sizeof(then),
			 ", SIGKILL in %s s if it still runs", gs);
	}
	run_say("%s; sending %s to process group %d%s", why,
		sig_name(o->lost_sig, sname, sizeof(sname)), (int)c->pid, then);
	kill(-c->pid, o->lost_sig);
	if (o->lost_sig != SIGKILL)
		*kill_at_mono_ms = clk_sys_mono_ms() + o->grace_ms;
}

/* ms until the earlier of two deadlines on our clock (-1: none), for
 * poll(2): at most a minute. */
static int ms_until(int64_t a, int64_t b)
{
	int64_t at = a < 0 ? b : b < 0 ? a : a < b ? a : b, left;

	if (at < 0)
		return -1;
	left = at - clk_sys_mono_ms();
	return left < 0 ? 0 : (int)(left > 60000 ? 60000 : left);
}

/* Waits for the command, forwarding signals and acting on loss: reported
 * by lost_fd, or the end of trust (t, NULL if lockfs gives none) passed
 * without a newer word. Returns true if the lock was lost. */
static bool supervise(const struct run_opts *o, struct run_sigstate *ss,
		      int sfd, int lost_fd, struct trust *t, struct child *c,
		      const char *key)
{
	int64_t kill_at_mono_ms = -1;
	bool lost = false;
	char gs[32], why[PATH_MAX + 512];

	while (!c->done) {
		struct pollfd p[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = lost ? -1 : lost_fd, .events = POLLIN },
		};
		int64_t trust_end = t && !lost
					    ? __atomic_load_n(&t->end_mono_ms,
							      __ATOMIC_ACQUIRE)
					    : -1;

		if (poll(p, 2, ms_until(kill_at_mono_ms, trust_end)) < 0 &&
		    errno != EINTR) {
			run_say("poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents) {
			lost = true;
			snprintf(why, sizeof(why),
				 "lost the lock on %s (key %s) while the "
				 "command ran",
				 o->path, key);
			stop_command(o, c, why, &kill_at_mono_ms);
		} else if (t && !lost &&
			   clk_sys_mono_ms() >=
				   __atomic_load_n(&t->end_mono_ms,
						   __ATOMIC_ACQUIRE)) {
			lost = true;
			snprintf(why, sizeof(why),
				 "lost the lock on %s (key %s) while the "
				 "command ran (no renewal confirmed within "
				 "its safe period: DynamoDB out of reach, or "
				 "the daemon stopped or hung)",
				 o->path, key);
			stop_command(o, c, why, &kill_at_mono_ms);
		}
		if (p[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if ((int)si.ssi_signo == SIGCHLD)
					continue;
				if (is_forwarded(ss, (int)si.ssi_signo))
					kill(-c->pid, (int)si.ssi_signo);
			}
		}
		reap(c);
		if (!c->done && kill_at_mono_ms >= 0 &&
		    clk_sys_mono_ms() >= kill_at_mono_ms) {
			text_format_seconds_short(o->grace_ms, gs, sizeof(gs));
			run_say("the command still runs %s s after losing the "
				"lock; sending SIGKILL to process group %d",
				gs, (int)c->pid);
			kill(-c->pid, SIGKILL);
			kill_at_mono_ms = -1;
		}
	}
	if (!lost) {
		/* A loss reported as the command ended still counts. */
		struct pollfd p = { .fd = lost_fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1) {
			lost = true;
			run_say("lost the lock on %s (key %s) while the "
				"command "
				"ran",
				o->path, key);
		}
	}
	return lost;
}

/* Runs the command while we hold the lock, watching watch_fd (if >= 0) for
 * its loss; returns the command's exit status (or lockfs-run's own), *lost
 * set if the lock was lost meanwhile. */
static int run_command(const struct run_opts *o, struct run_sigstate *ss,
		       const sigset_t *sigs, int watch_fd, bool *lost)
{
	struct child c = { 0 };
	/* static: the trust thread may outlive this frame until we exit. */
	static struct trust trust;
	struct watch *w;
	pthread_t watcher;
	int sfd, lost_pipe[2], rc, err;
	bool has_trust;

	sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(lost_pipe, O_CLOEXEC)) {
		run_say("cannot watch signals: %s", strerror(errno));
		return EXIT_OSERR;
	}
	has_trust = trust_start(&trust, watch_fd, lost_pipe[1]);
	rc = spawn(o, ss, &c);
	if (rc)
		return rc;
	w = watch_fd >= 0 ? malloc(sizeof(*w)) : NULL;
	if (w) {
		w->fd = watch_fd;
		w->report = lost_pipe[1];
		err = pthread_create(&watcher, NULL, watch_main, w);
		if (!err) {
			/* Never joined: our exit ends it. */
			pthread_detach(watcher);
		} else {
			free(w);
			/* Run on, unwatched, rather than kill the command. */
			run_say("warning: cannot watch %s for loss: %s",
				o->path, strerror(err));
		}
	} else if (watch_fd >= 0) {
		run_say("warning: cannot watch %s for loss: %s", o->path,
			strerror(ENOMEM));
	}
	*lost = supervise(o, ss, sfd, lost_pipe[0], has_trust ? &trust : NULL,
			  &c, getenv("LOCKFS_KEY"));
	if (c.tty)
		tcsetpgrp(STDIN_FILENO, getpgrp());
	/* The watcher (detached) may still wait in poll(2); exiting ends
	 * it. */
	return *lost ? EXIT_LOST : c.status;
}

/* The file whose POLLPRI means our lock is lost: the one opened after the
 * grant; on other file systems none. */
static int watch_fd(bool on_lockfs, int fd, int view_fd)
{
	if (!on_lockfs)
		return -1;
	return view_fd >= 0 ? view_fd : fd;
}

int main(int argc, char **argv)
{
	struct run_opts o;
	struct run_sigstate ss;
	sigset_t sigs;
	int fd = -1, view_fd = -1, rc;
	bool lost = false, on_lockfs = false;
	size_t i;

	parse_opts(argc, argv, &o);
	run_lock_signals(&ss);
	if (!run_lock_take(&o, &fd, &rc))
		return rc; /* busy, timed out or failed: never run COMMAND */

	/* Held. From here on signals are read from a signalfd. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGALRM);
	sigaddset(&sigs, SIGTTOU); /* for tcsetpgrp from the background */
	for (i = 0; i < RUN_N_FWD; i++)
		sigaddset(&sigs, run_fwd_sigs[i]);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if (run_lock_interrupted()) {
		close(fd);
		run_lock_die_of(run_lock_interrupted());
	}
	rc = run_lock_identity(&o, fd, &view_fd, &on_lockfs);
	if (rc == EXIT_LOST)
		lost = true;
	else if (!rc)
		rc = run_command(&o, &ss, &sigs,
				 watch_fd(on_lockfs, fd, view_fd), &lost);
	if (view_fd >= 0)
		close(view_fd);
	/* A lost lock has nothing to release (lockfs answers EIO). */
	if (!lost && flock(fd, LOCK_UN))
		run_say("warning: releasing %s: %s", o.path, strerror(errno));
	if (close(fd) && !lost)
		run_say("warning: closing %s: %s", o.path, strerror(errno));
	return rc;
}
