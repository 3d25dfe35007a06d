/* procgrp: process groups proved by their leader's start time (see
 * procgrp.h). */
#include "procgrp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Reads a small /proc file whole into buf (NUL-terminated): one open,
 * one read, one close, no stdio buffer. -errno when it cannot be read. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return n;
}

int procgrp_stat(int64_t pid, struct procgrp_stat *out)
{
	char path[64], buf[1024], *open_paren, *close_paren;
	unsigned long long start = 0;
	long long grp = 0, sid = 0;
	ssize_t n;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	n = read_small(path, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		return -ESRCH; /* gone */
	if (n < 0)
		return (int)n; /* this process's trouble (EMFILE, ENOMEM) */
	/* The command may hold spaces and ')': fields follow the last ')'. */
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EINVAL;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads
	 * itrealvalue starttime */
	if (sscanf(close_paren + 1,
		   " %*c %*d %lld %lld %*d %*d %*u %*u %*u %*u %*u %*u "
		   "%*u %*d %*d %*d %*d %*d %*d %llu",
		   &grp, &sid, &start) != 3)
		return -EINVAL;
	len = (size_t)(close_paren - open_paren - 1);
	if (len >= sizeof(out->comm))
		len = sizeof(out->comm) - 1;
	memcpy(out->comm, open_paren + 1, len);
	out->comm[len] = '\0';
	out->pgid = grp;
	out->sid = sid;
	out->start = start;
	return 0;
}

uint64_t procgrp_start_time(int64_t pid, int64_t *pgid)
{
	struct procgrp_stat st;

	if (pgid)
		*pgid = 0;
	if (procgrp_stat(pid, &st))
		return 0;
	if (pgid)
		*pgid = st.pgid;
	return st.start;
}

/* Whether a process other than the recorded leader now leads a group of
 * number pgid (the number was reused). */
static bool replaced(int64_t pgid, uint64_t leader_start)
{
	int64_t grp;
	uint64_t start = procgrp_start_time(pgid, &grp);

	return leader_start && start && grp == pgid && start != leader_start;
}

/* Whether the recorded leader itself still leads group pgid: the only
 * proof that the group is the one recorded. A group without its leader
 * proves nothing: its number may have been reused by a group whose own
 * leader has exited too. */
static bool leader_leads(int64_t pgid, uint64_t leader_start)
{
	int64_t grp;
	uint64_t start = procgrp_start_time(pgid, &grp);

	return leader_start && start == leader_start && grp == pgid;
}

bool procgrp_alive(int64_t pgid, uint64_t leader_start)
{
	if (pgid <= 0)
		return false;
	if (pgid == 1)
		return kill(1, 0) == 0 || errno == EPERM;
	if (kill(-(pid_t)pgid, 0) != 0 && errno != EPERM)
		return false;
	return !replaced(pgid, leader_start);
}

bool procgrp_signallable(int64_t pgid, uint64_t leader_start)
{
	return pgid > 1 && leader_leads(pgid, leader_start);
}
