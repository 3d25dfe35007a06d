/* lockfs-t: one system call per invocation, for the filesystem test suite
 * (tests/fs). In the style of pjdfstest: prints "0" on success or the errno
 * name (EEXIST, EPERM, ...) on failure; verbs that return data print the
 * data instead of "0". Exit status: 0 success, 1 the call failed, 2 usage.
 *
 *   lockfs-t VERB ARGS...
 *
 * Arguments that are paths, names or data accept escapes, so that names of
 * 300 bytes or with invalid UTF-8 are easy to write:
 *   \xNN        the byte NN (hex)
 *   \\          a backslash
 *   \{N}C       the character C (itself possibly \xNN) N times
 *
 * FLAGS is a comma-separated list of O_RDONLY, O_WRONLY, O_RDWR, O_CREAT,
 * O_EXCL, O_TRUNC, O_APPEND, O_NONBLOCK, O_DIRECTORY, O_NOFOLLOW (or 0).
 * MODE is octal (default 0644).
 *
 * Verbs (see usage() for the list):
 *   hold [--pgrp] PATH FLAGS [MODE]
 *       open PATH and keep the fd. Prints "ready" (or the errno name and
 *       exits 1), then reads commands on stdin, one a line; each command's
 *       output is followed by a line "@end". EOF on stdin or "exit" ends it.
 *       --pgrp: setpgid(0, 0) first, so the holder has a process group of
 *       its own. Commands:
 *         read              the text read from offset 0 (or the errno name)
 *         write DATA        write at offset 0: "0" or the errno name
 *         fsync             "0" or the errno name
 *         poll MS [pri]     poll for POLLIN|POLLPRI (only POLLPRI with
 *                           "pri"): the revents names, or "0"
 *         flock ex|sh|un[,nb]   flock(2): "0" or the errno name
 *         setlk wr|rd|un[,wait] fcntl F_SETLK / F_SETLKW
 *         getlk [rd]        fcntl F_GETLK for a write lock (a read lock
 *                           with rd): "unlocked" or "locked type=..
 *         close             close the fd: "0"
 *         child keep|close  fork a child that keeps (or closes) the fd and
 *                           sleeps until killed; prints its pid (children
 *                           are reaped at once: SIGCHLD is ignored)
 *         signals           counts of signals received so far:
 *                           "USR1=n USR2=n HUP=n ALRM=n"
 *         pid               "pid=P pgid=G"
 *         exit              exit 0
 *       USR1, USR2, HUP and ALRM are counted (and interrupt a blocking
 *       flock/fcntl: EINTR); TERM and KILL end the process.
 *   race PATH flock|setlk N
 *       N times: open PATH with O_CREAT|O_RDWR (acquiring it), fork a
 *       child sharing that open file, and let both take a non-blocking
 *       flock (LOCK_EX) or fcntl write lock on it at the same moment
 *       (released together from a pipe); then the parent fsyncs the fd
 *       (0 while the key is still held) before both close it. Prints one
 *       line: "ok=A busy=B lost=C other=D" where ok and busy count the
 *       lock calls that succeeded or gave EWOULDBLOCK/EAGAIN, lost the
 *       rounds whose fsync failed, other any other outcome.
 *   cycle PATH N
 *       N lock cycles in this one process: open PATH with
 *       O_CREAT|O_EXCL|O_RDONLY, close it, unlink it. Prints one line:
 *       "ok=A failed=B" (B: cycles whose open or unlink failed). */
#include <ctype.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_DATA (1u << 20)

static const struct {
	int num;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" },
	{ ENOENT, "ENOENT" },
	{ ESRCH, "ESRCH" },
	{ EINTR, "EINTR" },
	{ EIO, "EIO" },
	{ ENXIO, "ENXIO" },
	{ E2BIG, "E2BIG" },
	{ EBADF, "EBADF" },
	{ ECHILD, "ECHILD" },
	{ EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" },
	{ EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" },
	{ EXDEV, "EXDEV" },
	{ ENODEV, "ENODEV" },
	{ ENOTDIR, "ENOTDIR" },
	{ EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" },
	{ ENFILE, "ENFILE" },
	{ EMFILE, "EMFILE" },
	{ ETXTBSY, "ETXTBSY" },
	{ EFBIG, "EFBIG" },
	{ ENOSPC, "ENOSPC" },
	{ ESPIPE, "ESPIPE" },
	{ EROFS, "EROFS" },
	{ EMLINK, "EMLINK" },
	{ EPIPE, "EPIPE" },
	{ ERANGE, "ERANGE" },
	{ EDEADLK, "EDEADLK" },
	{ ENAMETOOLONG, "ENAMETOOLONG" },
	{ ENOLCK, "ENOLCK" },
	{ ENOSYS, "ENOSYS" },
	{ ENOTEMPTY, "ENOTEMPTY" },
	{ ELOOP, "ELOOP" },
	{ ENODATA, "ENODATA" },
	{ ENOTSUP, "ENOTSUP" },
	{ ENOTCONN, "ENOTCONN" },
	{ ETIMEDOUT, "ETIMEDOUT" },
	{ ECONNREFUSED, "ECONNREFUSED" },
	{ ESTALE, "ESTALE" },
	{ ECANCELED, "ECANCELED" },
	{ EOVERFLOW, "EOVERFLOW" },
	{ EILSEQ, "EILSEQ" },
	{ EPROTO, "EPROTO" },
	{ EDQUOT, "EDQUOT" },
};

static const char *errname(int e)
{
	static char buf[32];
	size_t i;

	/* EWOULDBLOCK == EAGAIN and EOPNOTSUPP == ENOTSUP on Linux: the
	 * tests accept either spelling through the names printed here. */
	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].num == e)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "E#%d", e);
	return buf;
}

static int fail(int e)
{
	printf("%s\n", errname(e));
	return 1;
}

static int done(void)
{
	printf("0\n");
	return 0;
}

static void usage(void)
{
	fputs("usage: lockfs-t VERB ARGS...\n"
	      "  open PATH FLAGS [MODE]        read PATH\n"
	      "  write PATH DATA [FLAGS]       fsync PATH FLAGS [MODE]\n"
	      "  poll PATH FLAGS MS [pri]      hold [--pgrp] PATH FLAGS "
	      "[MODE]\n"
	      "  unlink PATH   mkdir PATH MODE   rmdir PATH\n"
	      "  rename A B    link A B    symlink TARGET PATH\n"
	      "  mknod PATH reg|fifo [MODE]    chmod PATH MODE\n"
	      "  chown PATH UID GID            truncate PATH LEN\n"
	      "  utimens PATH                  stat PATH   lstat PATH\n"
	      "  getxattr PATH NAME            listxattr PATH\n"
	      "  setxattr PATH NAME VALUE      removexattr PATH NAME\n"
	      "  statfs PATH                   readdir PATH\n"
	      "  flock PATH FLAGS ex|sh|un[,nb]\n"
	      "  setlk PATH FLAGS wr|rd|un[,wait]\n"
	      "  race PATH flock|setlk N       cycle PATH N\n"
	      "escapes in paths and data: \\xNN  \\\\  \\{N}C\n",
	      stderr);
	exit(2);
}

/* ---- arguments ---------------------------------------------------------- */

struct bytes {
	char *p;
	size_t len;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Reads one (possibly escaped) character at *s into *out. */
static void one_char(const char **s, char *out)
{
	const char *p = *s;

	if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 &&
	    hexval(p[3]) >= 0) {
		*out = (char)(hexval(p[2]) * 16 + hexval(p[3]));
		*s = p + 4;
	} else if (p[0] == '\\' && p[1] == '\\') {
		*out = '\\';
		*s = p + 2;
	} else {
		*out = *p;
		*s = p + 1;
	}
}

/* Decodes the escapes of an argument into a new NUL-terminated buffer. */
static struct bytes unescape(const char *s)
{
	struct bytes b;
	size_t cap = strlen(s) + 1;

	b.p = malloc(cap);
	b.len = 0;
	if (!b.p) {
		perror("malloc");
		exit(2);
	}
	while (*s) {
		size_t n = 1, i;
		char c;

		if (s[0] == '\\' && s[1] == '{') {
			char *end;

			n = strtoul(s + 2, &end, 10);
			if (*end != '}' || !end[1]) {
				fprintf(stderr,
					"lockfs-t: bad \\{N}C escape\n");
				exit(2);
			}
			s = end + 1;
		}
		one_char(&s, &c);
		if (b.len + n + 1 > cap) {
			cap = (b.len + n + 1) * 2;
			b.p = realloc(b.p, cap);
			if (!b.p) {
				perror("realloc");
				exit(2);
			}
		}
		for (i = 0; i < n; i++)
			b.p[b.len++] = c;
	}
	b.p[b.len] = '\0';
	return b;
}

static char *path_arg(const char *s)
{
	return unescape(s).p;
}

static int parse_flags(const char *s)
{
	static const struct {
		const char *name;
		int flag;
	} names[] = {
		{ "O_RDONLY", O_RDONLY },
		{ "O_WRONLY", O_WRONLY },
		{ "O_RDWR", O_RDWR },
		{ "O_CREAT", O_CREAT },
		{ "O_EXCL", O_EXCL },
		{ "O_TRUNC", O_TRUNC },
		{ "O_APPEND", O_APPEND },
		{ "O_NONBLOCK", O_NONBLOCK },
		{ "O_DIRECTORY", O_DIRECTORY },
		{ "O_NOFOLLOW", O_NOFOLLOW },
		{ "0", 0 },
	};
	char *copy = strdup(s), *tok, *save = NULL;
	int flags = 0;
	size_t i;

	for (tok = strtok_r(copy, ",|", &save); tok;
	     tok = strtok_r(NULL, ",|", &save)) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			fprintf(stderr, "lockfs-t: unknown flag %s\n", tok);
			exit(2);
		}
		flags |= names[i].flag;
	}
	free(copy);
	return flags;
}

static mode_t parse_mode(const char *s)
{
	char *end;
	unsigned long m = strtoul(s, &end, 8);

	if (*end || m > 07777) {
		fprintf(stderr, "lockfs-t: bad mode %s\n", s);
		exit(2);
	}
	return (mode_t)m;
}

static long long parse_num(const char *s)
{
	char *end;
	long long n = strtoll(s, &end, 10);

	if (*end || !*s) {
		fprintf(stderr, "lockfs-t: bad number %s\n", s);
		exit(2);
	}
	return n;
}

/* ---- shared pieces ------------------------------------------------------ */

/* Reads the whole text from offset 0 and prints it as is. */
static int read_all(int fd)
{
	char *buf = malloc(MAX_DATA);
	size_t len = 0;
	ssize_t n;

	if (!buf)
		return fail(ENOMEM);
	do {
		n = pread(fd, buf + len, MAX_DATA - len, (off_t)len);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0 && len < MAX_DATA);
	if (n < 0) {
		free(buf);
		return fail(errno);
	}
	fwrite(buf, 1, len, stdout);
	free(buf);
	return 0;
}

static int write_data(int fd, const char *arg)
{
	struct bytes b = unescape(arg);
	ssize_t n = pwrite(fd, b.p, b.len, 0);
	int e = errno;

	free(b.p);
	if (n < 0)
		return fail(e);
	if ((size_t)n != b.len) {
		printf("short %zd\n", n);
		return 1;
	}
	return done();
}

static void print_revents(short re)
{
	static const struct {
		short bit;
		const char *name;
	} bits[] = {
		{ POLLIN, "POLLIN" },	{ POLLPRI, "POLLPRI" },
		{ POLLOUT, "POLLOUT" }, { POLLERR, "POLLERR" },
		{ POLLHUP, "POLLHUP" }, { POLLNVAL, "POLLNVAL" },
	};
	size_t i;
	int any = 0;

	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		if (re & bits[i].bit) {
			printf("%s%s", any ? "|" : "", bits[i].name);
			any = 1;
		}
	}
	printf("%s\n", any ? "" : "0");
}

/* events: POLLIN|POLLPRI, or only POLLPRI when pri_only (a lock file is
 * always readable, so only that form waits for a loss). */
static int do_poll(int fd, int ms, int pri_only)
{
	struct pollfd p = { .fd = fd,
			    .events = pri_only ? POLLPRI : POLLIN | POLLPRI };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return fail(errno);
	print_revents(n ? p.revents : 0);
	return 0;
}

static int do_flock(int fd, const char *how)
{
	int op = 0;

	if (!strncmp(how, "ex", 2))
		op = LOCK_EX;
	else if (!strncmp(how, "sh", 2))
		op = LOCK_SH;
	else if (!strncmp(how, "un", 2))
		op = LOCK_UN;
	else
		usage();
	if (strstr(how, ",nb"))
		op |= LOCK_NB;
	if (flock(fd, op))
		return fail(errno);
	return done();
}

static int do_setlk(int fd, const char *how)
{
	struct flock fl = { .l_whence = SEEK_SET };

	if (!strncmp(how, "wr", 2))
		fl.l_type = F_WRLCK;
	else if (!strncmp(how, "rd", 2))
		fl.l_type = F_RDLCK;
	else if (!strncmp(how, "un", 2))
		fl.l_type = F_UNLCK;
	else
		usage();
	if (fcntl(fd, strstr(how, ",wait") ? F_SETLKW : F_SETLK, &fl))
		return fail(errno);
	return done();
}

static int do_getlk(int fd, const char *how)
{
	struct flock fl = { .l_type = how && !strcmp(how, "rd") ? F_RDLCK
								: F_WRLCK,
			    .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl))
		return fail(errno);
	if (fl.l_type == F_UNLCK)
		printf("unlocked\n");
	else
		printf("locked type=%s pid=%d\n",
		       fl.l_type == F_WRLCK ? "wr" : "rd", (int)fl.l_pid);
	return 0;
}

/* ---- hold --------------------------------------------------------------- */

static volatile sig_atomic_t n_usr1, n_usr2, n_hup, n_alrm;

static void count_signal(int sig)
{
	if (sig == SIGUSR1)
		n_usr1++;
	else if (sig == SIGUSR2)
		n_usr2++;
	else if (sig == SIGHUP)
		n_hup++;
	else if (sig == SIGALRM)
		n_alrm++;
}

static void child_sleep(int fd, int keep)
{
	pid_t pid = fork();

	if (pid < 0) {
		fail(errno);
		return;
	}
	if (pid == 0) {
		if (!keep)
			close(fd);
		/* Quiet: the parent owns stdout. */
		if (!freopen("/dev/null", "r", stdin) ||
		    !freopen("/dev/null", "w", stdout))
			_exit(1);
		signal(SIGTERM, SIG_DFL);
		for (;;)
			pause();
	}
	printf("%d\n", (int)pid);
}

/* Reads one line from stdin, retrying after a counted signal. */
static char *read_line(char *buf, size_t size)
{
	for (;;) {
		errno = 0;
		if (fgets(buf, (int)size, stdin))
			return buf;
		if (errno == EINTR) {
			clearerr(stdin);
			continue;
		}
		return NULL;
	}
}

static int hold(int argc, char **argv)
{
	struct sigaction sa;
	char line[256];
	int fd, pgrp = 0;

	if (argc > 0 && !strcmp(argv[0], "--pgrp")) {
		pgrp = 1;
		argc--;
		argv++;
	}
	if (argc < 2)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count_signal; /* no SA_RESTART: EINTR is visible */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	/* Children (the "child" command) are reaped at once: a zombie would
	 * still count as a live member of the process group. */
	signal(SIGCHLD, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pgrp && setpgid(0, 0)) {
		fail(errno);
		return 1;
	}
	fd = open(path_arg(argv[0]), parse_flags(argv[1]),
		  argc > 2 ? parse_mode(argv[2]) : 0644);
	if (fd < 0)
		return fail(errno);
	printf("ready\n");
	fflush(stdout);
	while (read_line(line, sizeof(line))) {
		char *cmd = line, *arg;

		line[strcspn(line, "\n")] = '\0';
		arg = strchr(cmd, ' ');
		if (arg)
			*arg++ = '\0';
		if (!strcmp(cmd, "exit")) {
			printf("@end\n");
			return 0;
		} else if (!strcmp(cmd, "read")) {
			read_all(fd);
		} else if (!strcmp(cmd, "write") && arg) {
			write_data(fd, arg);
		} else if (!strcmp(cmd, "fsync")) {
			if (fsync(fd))
				fail(errno);
			else
				done();
		} else if (!strcmp(cmd, "poll") && arg) {
			char *sp = strchr(arg, ' ');

			if (sp)
				*sp++ = '\0';
			do_poll(fd, (int)parse_num(arg),
				sp && !strcmp(sp, "pri"));
		} else if (!strcmp(cmd, "flock") && arg) {
			do_flock(fd, arg);
		} else if (!strcmp(cmd, "setlk") && arg) {
			do_setlk(fd, arg);
		} else if (!strcmp(cmd, "getlk")) {
			do_getlk(fd, arg);
		} else if (!strcmp(cmd, "close")) {
			if (close(fd))
				fail(errno);
			else
				done();
			fd = -1;
		} else if (!strcmp(cmd, "child") && arg) {
			child_sleep(fd, !strcmp(arg, "keep"));
		} else if (!strcmp(cmd, "signals")) {
			printf("USR1=%d USR2=%d HUP=%d ALRM=%d\n", (int)n_usr1,
			       (int)n_usr2, (int)n_hup, (int)n_alrm);
		} else if (!strcmp(cmd, "pid")) {
			printf("pid=%d pgid=%d\n", (int)getpid(),
			       (int)getpgid(0));
		} else {
			printf("unknown command: %s\n", cmd);
		}
		printf("@end\n");
		fflush(stdout);
	}
	return 0;
}

/* ---- path verbs --------------------------------------------------------- */

static int do_stat(const char *path, int follow)
{
	struct stat st;

	if ((follow ? stat : lstat)(path, &st))
		return fail(errno);
	printf("ino=%llu mode=0%o nlink=%llu uid=%u gid=%u size=%lld "
	       "mtime=%lld.%03ld ctime=%lld.%03ld\n",
	       (unsigned long long)st.st_ino, (unsigned)st.st_mode,
	       (unsigned long long)st.st_nlink, (unsigned)st.st_uid,
	       (unsigned)st.st_gid, (long long)st.st_size,
	       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec / 1000000,
	       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec / 1000000);
	return 0;
}

static int do_listxattr(const char *path)
{
	char buf[65536];
	ssize_t n = listxattr(path, buf, sizeof(buf)), i;

	if (n < 0)
		return fail(errno);
	for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		printf("%s\n", buf + i);
	return 0;
}

static int do_getxattr(const char *path, const char *name)
{
	char buf[65536 * 2];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	if (n < 0)
		return fail(errno);
	fwrite(buf, 1, (size_t)n, stdout);
	putchar('\n');
	return 0;
}

static int do_readdir(const char *path)
{
	DIR *d;
	struct dirent *de;

	d = opendir(path);
	if (!d)
		return fail(errno);
	errno = 0;
	while ((de = readdir(d)))
		printf("%s\n", de->d_name);
	if (errno) {
		int e = errno;

		closedir(d);
		return fail(e);
	}
	closedir(d);
	return 0;
}

static int with_fd(const char *path, const char *flags, const char *mode,
		   int *fd)
{
	*fd = open(path, parse_flags(flags), mode ? parse_mode(mode) : 0644);
	return *fd < 0 ? fail(errno) : 0;
}

/* A one-shot syscall driver: what it allocates lives until it exits, so
 * LeakSanitizer (on in the sanitizer build of the tests) has nothing to
 * say about it; the daemon under test keeps full leak checking. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

/* One round of race: both processes lock the same open file at once. */
static void race_round(const char *path, bool use_flock, int *ok, int *busy,
		       int *lost, int *other)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int go[2], back[2], fd, rc, crc = -1;
	char c = 0;
	pid_t pid;

	fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || pipe(go) || pipe(back)) {
		(*other)++;
		if (fd >= 0)
			close(fd);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(back[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		rc = use_flock ? flock(fd, LOCK_EX | LOCK_NB)
			       : fcntl(fd, F_SETLK, &fl);
		c = rc == 0 ? 0 : (errno == EWOULDBLOCK ? 1 : 2);
		if (write(back[1], &c, 1) != 1)
			_exit(3);
		/* Keep a won fcntl lock until the parent has checked. */
		if (read(go[0], &c, 1) < 0)
			_exit(3);
		_exit(0);
	}
	close(go[0]);
	close(back[1]);
	if (pid < 0 || write(go[1], &c, 1) != 1) {
		(*other)++;
	} else {
		rc = use_flock ? flock(fd, LOCK_EX | LOCK_NB)
			       : fcntl(fd, F_SETLK, &fl);
		if (rc == 0)
			(*ok)++;
		else if (errno == EWOULDBLOCK)
			(*busy)++;
		else
			(*other)++;
		if (read(back[0], &c, 1) == 1)
			crc = c;
		if (crc == 0)
			(*ok)++;
		else if (crc == 1)
			(*busy)++;
		else
			(*other)++;
		if (fsync(fd))
			(*lost)++;
	}
	close(go[1]); /* the child ends */
	if (pid > 0)
		waitpid(pid, NULL, 0);
	close(back[0]);
	close(fd);
}

static int cycle(int argc, char **argv)
{
	const char *path;
	long n, ok = 0, failed = 0;

	if (argc < 2)
		usage();
	path = path_arg(argv[0]);
	n = strtol(argv[1], NULL, 10);
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_CREAT | O_EXCL | O_RDONLY, 0644);

		if (fd < 0) {
			failed++;
			continue;
		}
		close(fd);
		if (unlink(path))
			failed++;
		else
			ok++;
	}
	printf("ok=%ld failed=%ld\n", ok, failed);
	return failed ? 1 : 0;
}

static int race(int argc, char **argv)
{
	int ok = 0, busy = 0, lost = 0, other = 0, n;
	const char *path;
	bool use_flock;

	if (argc < 3)
		usage();
	path = path_arg(argv[0]);
	use_flock = !strcmp(argv[1], "flock");
	n = (int)parse_num(argv[2]);
	signal(SIGCHLD, SIG_DFL);
	for (int i = 0; i < n; i++) {
		race_round(path, use_flock, &ok, &busy, &lost, &other);
		unlink(path); /* a fcntl holder in the parent kept it */
	}
	printf("ok=%d busy=%d lost=%d other=%d\n", ok, busy, lost, other);
	return 0;
}

int main(int argc, char **argv)
{
	const char *verb;
	int fd, rc;

	/* Every line reaches the test at once, whatever ends the process. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		usage();
	verb = argv[1];
	argv += 2;
	argc -= 2;

#define NEED(n)                                                                \
	do {                                                                   \
		if (argc < (n))                                                \
			usage();                                               \
	} while (0)

	if (!strcmp(verb, "hold"))
		return hold(argc, argv);
	if (!strcmp(verb, "race"))
		return race(argc, argv);
	if (!strcmp(verb, "cycle"))
		return cycle(argc, argv);
	if (!strcmp(verb, "open")) {
		NEED(2);
		if (with_fd(path_arg(argv[0]), argv[1],
			    argc > 2 ? argv[2] : NULL, &fd))
			return 1;
		close(fd);
		return done();
	}
	if (!strcmp(verb, "read")) {
		if (with_fd(path_arg(argv[0]), "O_RDONLY", NULL, &fd))
			return 1;
		rc = read_all(fd);
		close(fd);
		return rc;
	}
	if (!strcmp(verb, "write")) {
		NEED(2);
		if (with_fd(path_arg(argv[0]), argc > 2 ? argv[2] : "O_WRONLY",
			    NULL, &fd))
			return 1;
		rc = write_data(fd, argv[1]);
		close(fd);
		return rc;
	}
	if (!strcmp(verb, "fsync")) {
		NEED(2);
		if (with_fd(path_arg(argv[0]), argv[1],
			    argc > 2 ? argv[2] : NULL, &fd))
			return 1;
		rc = fsync(fd) ? fail(errno) : done();
		close(fd);
		return rc;
	}
	if (!strcmp(verb, "poll")) {
		NEED(3);
		if (with_fd(path_arg(argv[0]), argv[1], NULL, &fd))
			return 1;
		rc = do_poll(fd, (int)parse_num(argv[2]),
			     argc > 3 && !strcmp(argv[3], "pri"));
		close(fd);
		return rc;
	}
	if (!strcmp(verb, "flock") || !strcmp(verb, "setlk")) {
		NEED(3);
		if (with_fd(path_arg(argv[0]), argv[1], NULL, &fd))
			return 1;
		rc = verb[0] == 'f' ? do_flock(fd, argv[2])
				    : do_setlk(fd, argv[2]);
		close(fd);
		return rc;
	}
	if (!strcmp(verb, "unlink"))
		return unlink(path_arg(argv[0])) ? fail(errno) : done();
	if (!strcmp(verb, "mkdir")) {
		NEED(2);
		return mkdir(path_arg(argv[0]), parse_mode(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "rmdir"))
		return rmdir(path_arg(argv[0])) ? fail(errno) : done();
	if (!strcmp(verb, "rename")) {
		NEED(2);
		return rename(path_arg(argv[0]), path_arg(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "link")) {
		NEED(2);
		return link(path_arg(argv[0]), path_arg(argv[1])) ? fail(errno)
								  : done();
	}
	if (!strcmp(verb, "symlink")) {
		NEED(2);
		return symlink(path_arg(argv[0]), path_arg(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "mknod")) {
		mode_t type;

		NEED(2);
		if (!strcmp(argv[1], "reg"))
			type = S_IFREG;
		else if (!strcmp(argv[1], "fifo"))
			type = S_IFIFO;
		else
			usage();
		return mknod(path_arg(argv[0]),
			     type | (argc > 2 ? parse_mode(argv[2]) : 0644), 0)
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "chmod")) {
		NEED(2);
		return chmod(path_arg(argv[0]), parse_mode(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "chown")) {
		NEED(3);
		return chown(path_arg(argv[0]), (uid_t)parse_num(argv[1]),
			     (gid_t)parse_num(argv[2]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "truncate")) {
		NEED(2);
		return truncate(path_arg(argv[0]), (off_t)parse_num(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "utimens"))
		return utimensat(AT_FDCWD, path_arg(argv[0]), NULL, 0)
			       ? fail(errno)
			       : done();
	if (!strcmp(verb, "stat"))
		return do_stat(path_arg(argv[0]), 1);
	if (!strcmp(verb, "lstat"))
		return do_stat(path_arg(argv[0]), 0);
	if (!strcmp(verb, "getxattr")) {
		NEED(2);
		return do_getxattr(path_arg(argv[0]), argv[1]);
	}
	if (!strcmp(verb, "listxattr"))
		return do_listxattr(path_arg(argv[0]));
	if (!strcmp(verb, "setxattr")) {
		struct bytes v;

		NEED(3);
		v = unescape(argv[2]);
		return setxattr(path_arg(argv[0]), argv[1], v.p, v.len, 0)
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "removexattr")) {
		NEED(2);
		return removexattr(path_arg(argv[0]), argv[1]) ? fail(errno)
							       : done();
	}
	if (!strcmp(verb, "statfs")) {
		struct statfs sf;

		if (statfs(path_arg(argv[0]), &sf))
			return fail(errno);
		printf("namemax=%ld type=0x%lx\n", (long)sf.f_namelen,
		       (unsigned long)sf.f_type);
		return 0;
	}
	if (!strcmp(verb, "readdir"))
		return do_readdir(path_arg(argv[0]));
	usage();
	return 2;
}
