/* procgrp: process groups proved by their leader's start time (see
 * procgrp.h). */
#include "procgrp.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

uint64_t procgrp_start_time(int64_t pid, int64_t *pgid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	long long grp = 0;
	FILE *f;
	size_t n;

	if (pgid)
		*pgid = 0;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command may hold spaces and ')': fields follow the last ')'. */
	p = strrchr(buf, ')');
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads
	 * itrealvalue starttime */
	if (!p || sscanf(p + 1,
			 " %*c %*d %lld %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			 "%*u %*d %*d %*d %*d %*d %*d %llu",
			 &grp, &start) != 2)
		return 0;
	if (pgid)
		*pgid = grp;
	return start;
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
