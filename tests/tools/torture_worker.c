/* lockfs-torture-worker: one contending worker of the torture test
 * (tests/fs/torture.t). Single-threaded; it forks one child per cycle.
 *
 *   lockfs-torture-worker run --dir MNT --mount NAME --keys K1,K2,..
 *       --log FILE --stop FILE --cap SECS [--wait SECS] [--long-pct N]
 *       [--methods excl,flock,fcntl,flocksh,fcntlrd] [--seed N]
 *   lockfs-torture-worker now        prints CLOCK_MONOTONIC in ns
 *
 * "run" loops until the file --stop exists or --cap seconds passed. Each
 * cycle forks a child in a process group of its own (so hold=pgrp ends with
 * it), which picks a key and an idiom (O_CREAT|O_EXCL, flock LOCK_EX,
 * F_SETLKW F_WRLCK, or a reader's flock LOCK_SH or F_SETLKW F_RDLCK, the
 * last two when --methods names them), tries to acquire the key for at most
 * --wait seconds, and when it got it: notes enter (CLOCK_MONOTONIC), reads
 * the lock's text through the holding fd (the holder's first read allocates
 * the fence), works a few ms (now and then much longer, --long-pct), asks
 * poll(2) whether the lock is still trusted (no POLLERR/POLLPRI; the time
 * noted just before the call), calls fsync on the holding fd and notes exit
 * when fsync returned. Only fsync returning 0 confirms the interval [enter,
 * exit]: the holder trusted the lock during all of it. Then it releases the
 * lock (unlink, LOCK_UN, F_UNLCK, close, or just exiting; unlink only when
 * fsync said the lock was still ours, so that a lost holder never removes
 * its successor's lock by name). Every cycle appends one line to --log with
 * one write(2) (O_APPEND):
 *
 *   KEY MOUNT PID METHOD OUTCOME FENCE ENTER_NS EXIT_NS CONFIRMED FSYNC STATE
 *   WALL_MS TRUST_NS
 *
 * OUTCOME is "held" when the key was acquired, else why not (busy, EINTR
 * for a wait that ran out, an errno name, notfuse when the mountpoint was
 * not a FUSE file system at the time). FENCE is -1 when none was read,
 * FSYNC "0" or the errno name, STATE the "state:" line the holder read,
 * WALL_MS this host's CLOCK_REALTIME at enter (at the end when not held),
 * to find the moment in the daemons' logs, TRUST_NS the time poll said the
 * lock was trusted (0 when it did not).
 * The parent kills a child that outlives --wait by far; workers survive
 * their mount dying (errors are logged, the loop goes on, bounded). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FUSE_MAGIC 0x65735546
#define MAX_KEYS   16

struct cfg {
	const char *dir, *mount, *log, *stop;
	char *keys[MAX_KEYS];
	int nkeys;
	double cap_s, wait_s;
	int long_pct;
	int methods; /* bit 0 excl, 1 flock, 2 fcntl, 3 flocksh, 4 fcntlrd */
	unsigned seed;
};

enum method { M_EXCL, M_FLOCK, M_FCNTL, M_FLOCKSH, M_FCNTLRD, M__COUNT };

struct rec {
	const char *key, *method;
	char outcome[32], fsync_res[32], state[16];
	long long fence;
	uint64_t enter_ns, exit_ns, wall_ms, trust_ns;
};

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR && !alarmed)
		;
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0:
		return "0";
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case EINTR:
		return "EINTR";
	case EIO:
		return "EIO";
	case EBADF:
		return "EBADF";
	case EAGAIN:
		return "EAGAIN";
	case EACCES:
		return "EACCES";
	case EBUSY:
		return "EBUSY";
	case EEXIST:
		return "EEXIST";
	case ENODEV:
		return "ENODEV";
	case EINVAL:
		return "EINVAL";
	case ENOLCK:
		return "ENOLCK";
	case EDEADLK:
		return "EDEADLK";
	case ENOSYS:
		return "ENOSYS";
	case ENOTCONN:
		return "ENOTCONN";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ESTALE:
		return "ESTALE";
	case ECONNABORTED:
		return "ECONNABORTED";
	default:
		snprintf(buf, sizeof(buf), "E#%d", e);
		return buf;
	}
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void rec_write(int logfd, const struct cfg *c, const struct rec *r)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line),
		     "%s %s %d %s %s %lld %" PRIu64 " %" PRIu64
		     " %d %s %s %" PRIu64 " %" PRIu64 "\n",
		     r->key, c->mount, (int)getpid(), r->method, r->outcome,
		     r->fence, r->enter_ns, r->exit_ns,
		     !strcmp(r->outcome, "held") && !strcmp(r->fsync_res, "0"),
		     r->fsync_res, r->state,
		     r->wall_ms ? r->wall_ms : wall_ms(), r->trust_ns);
	if (n > 0 && n < (int)sizeof(line) && write(logfd, line, n) != n)
		perror("torture-worker: log write");
}

/* Is fd on a FUSE file system? A lazily unmounted mountpoint is a local
 * directory, where every idiom "succeeds": such an interval is no lock. */
static int on_fuse(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && sf.f_type == FUSE_MAGIC;
}

/* Parses the "fence:" and "state:" lines of the lock's text. */
static void read_text(int fd, struct rec *r)
{
	char buf[8192], *p;
	ssize_t n;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		snprintf(r->state, sizeof(r->state), "%s", errname(errno));
		return;
	}
	buf[n] = '\0';
	p = strstr(buf, "state: ");
	if (p && (p == buf || p[-1] == '\n'))
		sscanf(p + 7, "%15s", r->state);
	p = strstr(buf, "\nfence: ");
	if (p)
		r->fence = strtoll(p + 8, NULL, 10);
}

/* O_CREAT|O_EXCL until taken or the wait ran out: the fd or -errno. */
static int acquire_excl(const char *path, double wait_s, unsigned *seed)
{
	uint64_t deadline = mono_ns() + (uint64_t)(wait_s * 1e9);
	int fd;

	for (;;) {
		fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
		if (mono_ns() >= deadline)
			return -EBUSY;
		sleep_ms(10 + rand_r(seed) % 40);
	}
}

/* open(O_CREAT) then a blocking flock or F_SETLKW (shared for a reader's
 * idiom), interrupted by an alarm after the wait: the fd or -errno. */
static int acquire_wait(const char *path, enum method m, double wait_s)
{
	struct flock fl = { .l_type = m == M_FCNTLRD ? F_RDLCK : F_WRLCK,
			    .l_whence = SEEK_SET };
	int fd, rc, e;

	fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0)
		return -errno;
	alarmed = 0;
	alarm((unsigned)(wait_s + 0.999));
	if (m == M_FLOCK || m == M_FLOCKSH)
		rc = flock(fd, m == M_FLOCKSH ? LOCK_SH : LOCK_EX);
	else
		rc = fcntl(fd, F_SETLKW, &fl);
	e = errno;
	alarm(0);
	if (rc) {
		close(fd);
		return -e;
	}
	return fd;
}

/* The time just before a poll(2) that reported the lock still trusted
 * (no POLLERR, POLLPRI, POLLHUP or POLLNVAL), else 0. */
static uint64_t trusted_at(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };
	uint64_t t = mono_ns();

	if (poll(&p, 1, 0) < 0 ||
	    (p.revents & (POLLERR | POLLPRI | POLLHUP | POLLNVAL)))
		return 0;
	return t;
}

static void release(int fd, const char *path, enum method m, int variant,
		    int ours)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	if (m == M_EXCL && (variant || !ours))
		_exit(0); /* dies holding: hold=pgrp and hold=fd release */
	if (m == M_EXCL)
		unlink(path);
	else if ((m == M_FLOCK || m == M_FLOCKSH) && !variant)
		flock(fd, LOCK_UN);
	else if ((m == M_FCNTL || m == M_FCNTLRD) && !variant)
		fcntl(fd, F_SETLK, &fl);
	close(fd);
}

/* The method column: the idiom, then how it lets go. torture_check.c
 * knows the readers by their names. */
static const char *method_name(enum method m, int variant)
{
	static const char *names[M__COUNT][2] = {
		{ "excl-unlink", "excl-exit" },
		{ "flock-un", "flock-close" },
		{ "fcntl-un", "fcntl-close" },
		{ "flocksh-un", "flocksh-close" },
		{ "fcntlrd-un", "fcntlrd-close" },
	};

	return names[m][variant];
}

static enum method pick_method(const struct cfg *c, unsigned *seed)
{
	enum method m;

	do
		m = (enum method)(rand_r(seed) % M__COUNT);
	while (!(c->methods & (1 << m)));
	return m;
}

/* The whole of one cycle, in the child; never returns. */
static void child_cycle(const struct cfg *c, int logfd, unsigned seed)
{
	struct rec r = { .fence = -1 };
	char path[4096];
	enum method m;
	int fd, variant;
	unsigned work;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	r.key = c->keys[rand_r(&seed) % c->nkeys];
	m = pick_method(c, &seed);
	variant = rand_r(&seed) % 2;
	r.method = method_name(m, variant);
	snprintf(r.fsync_res, sizeof(r.fsync_res), "-");
	snprintf(r.state, sizeof(r.state), "-");
	snprintf(path, sizeof(path), "%s/%s", c->dir, r.key);

	fd = m == M_EXCL ? acquire_excl(path, c->wait_s, &seed)
			 : acquire_wait(path, m, c->wait_s);
	if (fd < 0) {
		snprintf(r.outcome, sizeof(r.outcome), "%s",
			 fd == -EBUSY ? "busy" : errname(-fd));
		rec_write(logfd, c, &r);
		if (fd != -EBUSY && fd != -EINTR)
			sleep_ms(100 + rand_r(&seed) % 200); /* a dead mount */
		_exit(0);
	}
	if (!on_fuse(fd)) {
		snprintf(r.outcome, sizeof(r.outcome), "notfuse");
		rec_write(logfd, c, &r);
		close(fd); /* left on the local disk: torture.t cleans up */
		sleep_ms(100 + rand_r(&seed) % 200);
		_exit(0);
	}
	r.enter_ns = mono_ns();
	r.wall_ms = wall_ms();
	snprintf(r.outcome, sizeof(r.outcome), "held");
	read_text(fd, &r);
	if ((int)(rand_r(&seed) % 100) < c->long_pct)
		work = 200 + rand_r(&seed) % 1300;
	else
		work = 1 + rand_r(&seed) % 5;
	sleep_ms(work);
	r.trust_ns = trusted_at(fd);
	snprintf(r.fsync_res, sizeof(r.fsync_res), "%s",
		 fsync(fd) ? errname(errno) : "0");
	r.exit_ns = mono_ns();
	rec_write(logfd, c, &r);
	release(fd, path, m, variant, !strcmp(r.fsync_res, "0"));
	_exit(0);
}

/* Waits for the child for at most secs; kills its group after that. */
/* Waits for the child until the deadline; 0 once reaped, else -ETIMEDOUT. */
static int wait_child(pid_t pid, uint64_t deadline)
{
	sigset_t set;
	struct timespec ts = { 0, 100000000L };

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (;;) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 0;
		if (mono_ns() >= deadline)
			return -ETIMEDOUT;
		sigtimedwait(&set, NULL, &ts);
	}
}

/* Waits for the child for at most secs, then kills its group. A child in
 * a FUSE request its daemon will never answer cannot die (D state) until
 * the connection is aborted: it is left behind after 5 s more, so that the
 * worker still sees the stop file. */
static void reap(pid_t pid, double secs)
{
	if (!wait_child(pid, mono_ns() + (uint64_t)(secs * 1e9)))
		return;
	fprintf(stderr, "torture-worker: cycle %d overran, killed\n", (int)pid);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	if (wait_child(pid, mono_ns() + 5000000000u))
		fprintf(stderr,
			"torture-worker: cycle %d does not die (stuck in the "
			"kernel), left behind\n",
			(int)pid);
}

static int stop_requested(const struct cfg *c, uint64_t deadline)
{
	return !access(c->stop, F_OK) || mono_ns() >= deadline;
}

static int run(const struct cfg *c)
{
	uint64_t deadline = mono_ns() + (uint64_t)(c->cap_s * 1e9);
	unsigned seed = c->seed;
	struct sigaction sa = { .sa_handler = on_alarm };
	sigset_t set;
	int logfd;
	pid_t pid;

	logfd = open(c->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (logfd < 0) {
		perror(c->log);
		return 1;
	}
	/* No SA_RESTART: the alarm ends a blocking flock/fcntl with EINTR. */
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	while (!stop_requested(c, deadline)) {
		unsigned cseed = rand_r(&seed);

		pid = fork();
		if (pid < 0) {
			perror("torture-worker: fork");
			sleep_ms(500);
			continue;
		}
		if (!pid) {
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			child_cycle(c, logfd, cseed);
		}
		reap(pid, c->wait_s + 20);
	}
	close(logfd);
	return 0;
}

static int parse_methods(const char *s)
{
	static const char *names[M__COUNT] = { "excl", "flock", "fcntl",
					       "flocksh", "fcntlrd" };
	char *copy = strdup(s), *save = NULL, *w;
	int m = 0, i;

	for (w = copy ? strtok_r(copy, ",", &save) : NULL; w;
	     w = strtok_r(NULL, ",", &save))
		for (i = 0; i < M__COUNT; i++)
			if (!strcmp(w, names[i]))
				m |= 1 << i;
	free(copy);
	return m;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lockfs-torture-worker run --dir MNT --mount NAME "
		"--keys K1,K2 --log FILE --stop FILE --cap SECS\n"
		"           [--wait SECS] [--long-pct N] [--methods LIST "
		"(excl,flock,fcntl,flocksh,fcntlrd)] "
		"[--seed N]\n"
		"       lockfs-torture-worker now\n");
	exit(2);
}

static void parse_keys(struct cfg *c, char *list)
{
	char *save = NULL, *k;

	for (k = strtok_r(list, ",", &save); k && c->nkeys < MAX_KEYS;
	     k = strtok_r(NULL, ",", &save))
		c->keys[c->nkeys++] = k;
}

static void parse_args(struct cfg *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", 1, NULL, 'd' },     { "mount", 1, NULL, 'm' },
		{ "keys", 1, NULL, 'k' },    { "log", 1, NULL, 'l' },
		{ "stop", 1, NULL, 's' },    { "cap", 1, NULL, 'c' },
		{ "wait", 1, NULL, 'w' },    { "long-pct", 1, NULL, 'p' },
		{ "methods", 1, NULL, 'M' }, { "seed", 1, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd':
			c->dir = optarg;
			break;
		case 'm':
			c->mount = optarg;
			break;
		case 'k':
			parse_keys(c, optarg);
			break;
		case 'l':
			c->log = optarg;
			break;
		case 's':
			c->stop = optarg;
			break;
		case 'c':
			c->cap_s = atof(optarg);
			break;
		case 'w':
			c->wait_s = atof(optarg);
			break;
		case 'p':
			c->long_pct = atoi(optarg);
			break;
		case 'M':
			c->methods = parse_methods(optarg);
			break;
		case 'S':
			c->seed = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!c->dir || !c->mount || !c->log || !c->stop || !c->nkeys ||
	    c->cap_s <= 0 || c->wait_s <= 0 || !c->methods)
		usage();
}

/* A short-lived test driver: what it allocates lives until it exits. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(int argc, char **argv)
{
	struct cfg c = { .wait_s = 8, .long_pct = 10, .methods = 7 };

	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%" PRIu64 "\n", mono_ns());
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "run"))
		usage();
	c.seed = (unsigned)getpid() ^ (unsigned)mono_ns();
	parse_args(&c, argc - 1, argv + 1);
	return run(&c);
}
