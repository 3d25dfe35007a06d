/* core_procgrp: process groups proved by their leader's start time. Group
 * 1 is never signallable (kill(-1) would reach every process); a live
 * group is the holder's only while its leader is the one recorded (a
 * reused group number is not); a group whose processes are gone is dead. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "procgrp.h"

int main(void)
{
	int64_t grp = 0;
	uint64_t start;
	pid_t child;
	int status;

	/* This process: its start time and group are read back. */
	start = procgrp_start_time(getpid(), &grp);
	CHECK(start > 0);
	CHECK_INT(grp, getpgrp());
	CHECK_INT(procgrp_start_time(-5, NULL), 0);

	/* Group 1 and unknown groups are never signalled. */
	CHECK(!procgrp_signallable(1, 0));
	CHECK(!procgrp_signallable(0, 0));
	CHECK(!procgrp_signallable(-1, 0));

	/* A child leading its own group. */
	child = fork();
	if (child == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(child, child);
	start = procgrp_start_time(child, &grp);
	CHECK(start > 0);
	CHECK_INT(grp, child);
	CHECK(procgrp_alive(child, start));
	CHECK(procgrp_signallable(child, start));
	/* The same number led by another process (a reused number): not the
	 * holder's group. */
	CHECK(!procgrp_alive(child, start + 1));
	CHECK(!procgrp_signallable(child, start + 1));
	/* Unknown leader start: alive by number. */
	CHECK(procgrp_alive(child, 0));
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	CHECK(!procgrp_alive(child, start));
	CHECK(!procgrp_signallable(child, start));
	CHECK_DONE();
}
