/* run_lock: taking lockfs-run's lock and reading its identity: the signal
 * handlers and the timer of a wait (-w), the open of the lock file (under
 * -w by a child process sharing our descriptors, which the timer kills),
 * flock(2) on it, and the key, fencing token and owner the command gets in
 * its environment. Main thread (and that child, which only opens); the
 * signal handlers only set flags (and re-arm the wait's timer). */
#include "run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clk.h"
#include "text.h"

#define TEXT_MAX    (256 * 1024) /* a lock's text: fields + 64 KiB data */
#define XATTR_MAX   2048	 /* a key is at most 1024 bytes */
#define RETICK_NS   100000000L	 /* re-interrupt a wait every 100 ms */
#define IDENTITY_MS 10000	 /* reading our lock's fence, at most */

/* Set by signal handlers while waiting for the lock. */
static volatile sig_atomic_t alarm_fired;
static volatile sig_atomic_t term_sig;
static volatile sig_atomic_t have_timer;
/* Which of SIGINT, SIGTERM, SIGHUP on_term caught before the open. */
static bool term_caught[3];
static timer_t wait_timer;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

/* SIGINT/SIGTERM/SIGHUP while waiting: give up the wait. The timer is
 * re-armed so that a flock(2) entered just after this still ends soon. */
static void on_term(int sig)
{
	int saved = errno;

	term_sig = sig;
	if (have_timer) {
		struct itimerspec its = {
			.it_value = { 0, 1000000 },
			.it_interval = { 0, RETICK_NS },
		};

		timer_settime(wait_timer, 0, &its, NULL);
	}
	errno = saved;
}

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a wait must end with EINTR */
	sigaction(sig, &sa, NULL);
}

void run_lock_signals(struct run_sigstate *ss)
{
	size_t i;

	sigprocmask(SIG_SETMASK, NULL, &ss->orig_mask);
	sigaction(SIGALRM, NULL, &ss->orig_alrm);
	install(SIGALRM, on_alarm);
	for (i = 0; i < RUN_N_FWD; i++) {
		sigaction(run_fwd_sigs[i], NULL, &ss->orig[i]);
		ss->ignored[i] = ss->orig[i].sa_handler == SIG_IGN;
		if (!ss->ignored[i] &&
		    (run_fwd_sigs[i] == SIGINT || run_fwd_sigs[i] == SIGTERM ||
		     run_fwd_sigs[i] == SIGHUP))
			install(run_fwd_sigs[i], on_term);
	}
}

/* SIGINT, SIGTERM and SIGHUP that on_term catches: back to their default
 * action (dfl), or to on_term again. */
static void term_signals_default(bool dfl)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction cur;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], NULL, &cur);
		if (dfl && cur.sa_handler == on_term)
			install(sigs[i], SIG_DFL);
		else if (!dfl && cur.sa_handler == SIG_DFL && term_caught[i])
			install(sigs[i], on_term);
		if (dfl)
			term_caught[i] = cur.sa_handler == on_term;
	}
}

/* Dies of sig (after a wait given up because of it). */
void run_lock_die_of(int sig)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	exit(128 + sig);
}

static void timer_arm(int64_t ms)
{
	struct itimerspec its = {
		.it_value = { ms / 1000, (ms % 1000) * 1000000 },
		.it_interval = { 0, RETICK_NS },
	};

	timer_settime(wait_timer, 0, &its, NULL);
}

static void timer_stop(void)
{
	if (!have_timer)
		return;
	have_timer = 0;
	timer_delete(wait_timer);
}

/* Opens the lock file, read-write, or read-only if we may not write it (a
 * lock file we may not write can still be locked); an open a stray signal
 * interrupted is made again, not one the wait's timer or a signal to end
 * the wait did. */
static int open_lock_file(const struct run_opts *o)
{
	int fd;

	for (;;) {
		fd = open(o->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY,
			  0644);
		if (fd < 0 && (errno == EACCES || errno == EROFS))
			fd = open(o->path,
				  O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY,
				  0644);
		if (fd >= 0 || errno != EINTR || alarm_fired || term_sig)
			return fd;
	}
}

/* ---- an open the wait's timer can end -------------------------------- */

/* How long a killed opener may take to go: its request is answered at
 * once by lockfs (a caller being killed), by the kernel when the daemon
 * had not read it yet; a daemon that is stopped may keep it longer, and
 * we do not wait for that. */
#define OPENER_REAP_MS 2000

struct opener {
	const struct run_opts *o;
	int slot;     /* the descriptor number the file is to get */
	pid_t parent; /* dies with it */
};

/* The opener child (it shares our file table): opens the lock file into
 * slot; its exit status is 0 or the open's errno. */
static __attribute__((noreturn)) void opener_main(const struct opener *op)
{
	int fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != op->parent)
		_exit(ECANCELED);
	fd = open_lock_file(op->o);
	if (fd < 0)
		_exit(errno > 0 && errno < 256 ? errno : EIO);
	if (fd != op->slot && dup3(fd, op->slot, O_CLOEXEC) < 0)
		_exit(errno > 0 && errno < 256 ? errno : EIO);
	if (fd != op->slot)
		close(fd);
	_exit(0);
}

/* Waits for the opener, at most ms (-1: for good); 0 when it is gone
 * (*status set), -EINTR at a signal, -ETIMEDOUT. */
static int reap(pid_t pid, int *status, int64_t ms)
{
	int64_t end = ms < 0 ? 0 : clk_sys_mono_ms() + ms;

	for (;;) {
		pid_t w = waitpid(pid, status, ms < 0 ? 0 : WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno == EINTR)
			return -EINTR;
		if (w < 0)
			return -errno;
		if (clk_sys_mono_ms() >= end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

/* Waits for the opener to end: 0 (*status set), -errno, or -EINTR when
 * the timer fired or a signal ended the wait meanwhile (the opener killed
 * then). */
static int open_wait(pid_t pid, int *status)
{
	for (;;) {
		int rc = reap(pid, status, -1);

		if (rc != -EINTR)
			return rc;
		if (alarm_fired || term_sig) {
			kill(pid, SIGKILL);
			reap(pid, status, OPENER_REAP_MS);
			return -EINTR;
		}
	}
}

/* open_lock_file for a wait (-w): the open's lookup and acquire wait on
 * DynamoDB, and lockfs ends them early only for a caller being killed, so
 * the open is made by a child sharing our file table, killed when the
 * timer fires or a signal ends the wait (its acquire, if any, is then
 * given back by lockfs). The descriptor, or -1 with errno (EINTR when the
 * wait ended). */
static int open_bounded(const struct run_opts *o)
{
	struct opener op = { o, -1, getpid() };
	struct sigaction dfl = { .sa_handler = SIG_DFL }, chld;
	int status = 0, rc, e;
	pid_t pid;

	op.slot = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (op.slot < 0)
		return open_lock_file(o);
	/* Ignored SIGCHLD (from our parent) would reap the child for us. */
	sigaction(SIGCHLD, &dfl, &chld);
	/* As fork(2), on a copy of our memory and stack, but sharing the
	 * file table: the descriptor the child opens is ours. */
	pid = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL, NULL, NULL,
			     NULL);
	if (!pid)
		opener_main(&op);
	if (pid < 0) {
		sigaction(SIGCHLD, &chld, NULL);
		close(op.slot);
		return open_lock_file(o);
	}
	rc = open_wait(pid, &status);
	sigaction(SIGCHLD, &chld, NULL);
	if (rc == -EINTR) {
		close(op.slot);
		errno = EINTR;
		return -1;
	}
	if (!rc && WIFEXITED(status) && !WEXITSTATUS(status))
		return op.slot;
	e = rc ? -rc : WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
	close(op.slot);
	errno = e;
	return -1;
}

/* Opens and locks o->path. Returns true with *fd_out set when the lock is
 * ours; otherwise false with *status the exit status (the message already
 * printed). The two are kept apart because a status may be 0: -E 0 makes
 * busy and timed out exit 0, and neither may then run the command. */
bool run_lock_take(const struct run_opts *o, int *fd_out, int *status)
{
	struct sigevent sev;
	char secs[32];
	int fd, err = 0, op = o->shared ? LOCK_SH : LOCK_EX;

	if (o->nonblock || o->wait_ms == 0)
		op |= LOCK_NB;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGALRM;
	if (timer_create(CLOCK_MONOTONIC, &sev, &wait_timer)) {
		run_say("cannot create a timer: %s", strerror(errno));
		*status = EXIT_OSERR;
		return false;
	}
	have_timer = 1;
	/* The wait counts from the open: its lookup and its acquire wait on
	 * DynamoDB too, and the timer ends it (open_bounded). */
	if (o->wait_ms > 0)
		timer_arm(o->wait_ms);
	/* SIGINT, SIGTERM and SIGHUP kill us during the open: lockfs ends
	 * a lookup or an acquire waiting on DynamoDB only for a caller being
	 * killed (a caught signal would not end it); an opener child dies
	 * with us. */
	term_signals_default(true);
	fd = o->wait_ms > 0 ? open_bounded(o) : open_lock_file(o);
	term_signals_default(false);
	if (fd < 0 && errno == EINTR && alarm_fired && !term_sig) {
		err = EWOULDBLOCK; /* timed out in the open */
	} else if (fd < 0) {
		/* A signal to end the wait came while the open went on: we
		 * die of it all the same. */
		timer_stop();
		if (term_sig)
			run_lock_die_of(term_sig);
		run_say("cannot open %s: %s", o->path, strerror(errno));
		*status = EXIT_NOLOCK;
		return false;
	}
	for (; fd >= 0;) {
		if (term_sig)
			break;
		if (alarm_fired && o->wait_ms > 0) {
			err = EWOULDBLOCK;
			break;
		}
		if (!flock(fd, op)) {
			err = 0;
			break;
		}
		err = errno;
		if (err != EINTR)
			break;
		/* Interrupted: the flags above run_say why; anything else
		 * (a stray signal) waits again. */
	}
	timer_stop();
	if (term_sig) {
		if (fd >= 0)
			close(fd); /* releases the lock if granted meanwhile */
		run_lock_die_of(term_sig);
	}
	if (!err) {
		*fd_out = fd;
		return true;
	}
	if (fd >= 0)
		close(fd);
	*status = o->conflict_code;
	if (err == EWOULDBLOCK && o->nonblock) {
		run_say("%s is locked by another holder (busy; -n)", o->path);
		return false;
	}
	if (err == EWOULDBLOCK) {
		text_format_seconds_short(o->wait_ms, secs, sizeof(secs));
		if (fd < 0)
			run_say("%s: its open got no answer within %s s "
				"(timed out; -w %s)",
				o->path, secs, secs);
		else
			run_say("%s is still locked after %s s (timed out; "
				"-w %s)",
				o->path, secs, secs);
		return false;
	}
	run_say("cannot lock %s: %s", o->path, strerror(err));
	*status = EXIT_NOLOCK;
	return false;
}

/* ---- the lock's identity ---------------------------------------------- */

/* Reads the whole text of fd from offset 0 (as much as TEXT_MAX). */
static int read_text(int fd, struct buf *out)
{
	char chunk[8192];
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, chunk, sizeof(chunk), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (buf_append(out, chunk, (size_t)n))
			return 0; /* the fields come first: enough */
		off += n;
	}
}

static char *get_xattr(int fd, const char *name)
{
	char v[XATTR_MAX];
	ssize_t n = fgetxattr(fd, name, v, sizeof(v) - 1);

	if (n < 0)
		return NULL;
	v[n] = '\0';
	return strdup(v);
}

/* Opens path again for reading, and keeps it only if it is the very file
 * fd locked (same device and inode). The name may have been removed and
 * taken again since the lock was granted (which released our lock), or
 * replaced by another file, and the fence and the loss watch must be those
 * of our lock: then *changed is set and -1 returned. -1 alone: the open
 * failed (the locked fd then serves for both). */
static int open_same(const char *path, int fd, bool *changed)
{
	struct stat a, b;
	int vfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	*changed = false;
	if (vfd < 0)
		return -1;
	if (fstat(fd, &a) || fstat(vfd, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		*changed = true;
		close(vfd);
		return -1;
	}
	return vfd;
}

/* The text of our lock's file fd, and its fence, owner and state fields
 * (*fence only when a positive number). An exclusive lock's text is read
 * again while it has no fence and is not lost (the holder's first read
 * allocates the fence with a write that DynamoDB may fail), for at most
 * IDENTITY_MS; a shared lock has none before the first exclusive holder.
 * 0 when that is all there is to know (or the lock is lost); else the
 * last read's -errno, or -ENODATA when it had no fence. */
static int read_identity(int fd, bool shared, struct buf *text, char **fence,
			 char **owner, char **state)
{
	int64_t until = clk_sys_mono_ms() + IDENTITY_MS;
	struct timespec nap = { 0, 250000000L };
	int rc;

	for (;;) {
		free(*fence);
		free(*owner);
		free(*state);
		buf_reset(text);
		rc = read_text(fd, text);
		*fence = run_text_field(buf_str(text), "fence");
		*owner = run_text_field(buf_str(text), "owner");
		*state = run_text_field(buf_str(text), "state");
		if (*fence && (!**fence || !run_all_digits(*fence) ||
			       !strcmp(*fence, "0"))) {
			free(*fence);
			*fence = NULL;
		}
		if (*state && !strcmp(*state, "lost"))
			return 0; /* the caller says so */
		if (!rc && !*fence && !shared)
			rc = -ENODATA;
		if (!rc || term_sig || clk_sys_mono_ms() >= until)
			return rc;
		nanosleep(&nap, NULL);
	}
}

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
		      bool *on_lockfs)
{
	struct buf text = BUF_INIT;
	char *key, *fence = NULL, *owner = NULL, *state = NULL;
	bool changed;
	int rc, vfd;

	buf_init(&text, TEXT_MAX);
	key = get_xattr(fd, "user.lockfs.key");
	*on_lockfs = key != NULL;
	if (key) {
		vfd = open_same(o->path, fd, &changed);
		*view_fd = vfd;
		if (changed) {
			run_say("%s was replaced by another file after the "
				"lock "
				"was granted (removed and taken again?): not "
				"running the command",
				o->path);
			rc = EXIT_NOLOCK;
			goto out;
		}
		/* Read as the holder, the text has the fencing token
		 * (allocated by the holder's first read). */
		rc = read_identity(vfd >= 0 ? vfd : fd, o->shared, &text,
				   &fence, &owner, &state);
		if (term_sig)
			run_lock_die_of(term_sig); /* closes, so releases */
		if (rc) {
			/* The command is promised a token: without one it
			 * does not run (the lock is let go of). */
			run_say("cannot learn the fencing token of %s (key "
				"%s): %s; not running the command",
				o->path, key,
				rc == -ENODATA ? "its text has none (DynamoDB "
						 "failing?)"
					       : strerror(-rc));
			rc = EXIT_NOLOCK;
			goto out;
		}
		if (owner && !*owner) {
			free(owner);
			owner = get_xattr(fd, "user.lockfs.owner");
		}
	}
	if (state && !strcmp(state, "lost")) {
		run_say("lost the lock on %s (key %s) before the command "
			"started",
			o->path, key);
		rc = EXIT_LOST;
		goto out;
	}
	rc = setenv("LOCKFS_KEY", key ? key : o->path, 1) ||
	     setenv("LOCKFS_FENCE", fence ? fence : "", 1) ||
	     setenv("LOCKFS_OWNER", owner ? owner : "", 1);
	if (rc) {
		run_say("cannot set the environment: %s", strerror(errno));
		rc = EXIT_OSERR;
	}
out:
	free(key);
	free(fence);
	free(owner);
	free(state);
	buf_fini(&text);
	return rc;
}

int run_lock_interrupted(void)
{
	return term_sig;
}
