/* lockfs_t_fd: lockfs-t's calls on an open file (read, write, poll,
 * flock, fcntl locks), shared by hold, and the verbs that open a path, make
 * one call and close it: open, read, write, fsync, poll, flock, setlk,
 * trust (LOCKFS_IOC_TRUST_MS).
 * flock_errno and setlk_errno are also called by hold's threads
 * (lockfs_t_threads.c); nothing else here is. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "lockfs_ioctl.h"
#include "lockfs_t.h"

#define MAX_DATA (1u << 20)

int read_all(int fd)
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

int write_data(int fd, const char *arg)
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

int do_poll(int fd, int ms, int pri_only)
{
	struct pollfd p = { .fd = fd,
			    .events = pri_only ? POLLPRI : POLLIN | POLLPRI };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return fail(errno);
	print_revents(n ? p.revents : 0);
	return 0;
}

int flock_errno(int fd, const char *how)
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
	return flock(fd, op) ? errno : 0;
}

int setlk_errno(int fd, const char *how)
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
	return fcntl(fd, strstr(how, ",wait") ? F_SETLKW : F_SETLK, &fl) ? errno
									 : 0;
}

int do_flock(int fd, const char *how)
{
	int e = flock_errno(fd, how);

	return e ? fail(e) : done();
}

int do_setlk(int fd, const char *how)
{
	int e = setlk_errno(fd, how);

	return e ? fail(e) : done();
}

int do_trust(int fd)
{
	int64_t ms;

	if (ioctl(fd, LOCKFS_IOC_TRUST_MS, &ms))
		return fail(errno);
	printf("%lld\n", (long long)ms);
	return 0;
}

int do_getlk(int fd, const char *how)
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

static int with_fd(const char *path, const char *flags, const char *mode,
		   int *fd)
{
	*fd = open(path, parse_flags(flags), mode ? parse_mode(mode) : 0644);
	return *fd < 0 ? fail(errno) : 0;
}

int fd_verb(const char *verb, int argc, char **argv)
{
	int fd, rc;

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
	if (!strcmp(verb, "trust")) {
		NEED(1);
		if (with_fd(path_arg(argv[0]), "O_RDONLY", NULL, &fd))
			return 1;
		rc = do_trust(fd);
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
	return -1;
}
