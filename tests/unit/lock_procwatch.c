/* lock_procwatch: exit notifications by pidfd. A watched child's exit is
 * told within a bound, whether or not it has been reaped, and its reap is
 * told again (however late its parent reaps it); a pid is
 * watched once however often it is added, tells the start time of the
 * process it watches, and is said to have exited when
 * added again after its exit; a process already reaped, pid 1
 * and pids <= 0 are refused; the table is bounded. A thread's id (what
 * FUSE reports for a call made from a thread of a program's own) is
 * watched too, and its process's death is told. The watches (a pidfd is
 * an open file) leave the files kept for others under RLIMIT_NOFILE, as
 * it is at each add. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "procgrp.h"
#include "procwatch.h"

static atomic_int exits;
static _Atomic int64_t last_told; /* the last pid told */

static void on_exit_cb(void *arg, const int64_t *pids, int n)
{
	(void)arg;
	/* No CHECK here: its count is the main thread's. */
	if (n > 0)
		atomic_store(&last_told, pids[n - 1]);
	atomic_fetch_add(&exits, 1);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failure */
		pause();
		_exit(0);
	}
	CHECK(pid > 0);
	return pid;
}

static void *park(void *arg)
{
	int fd = *(int *)arg;
	pid_t tid = gettid();

	if (write(fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(3);
	pause();
	return NULL;
}

/* The child's part (this program run again, see main): a second thread
 * parks and writes its id to fd; the first waits. Run by exec, not after a
 * bare fork: ThreadSanitizer refuses threads in a child forked from a
 * process that has threads (the watch thread). */
static int threaded_child(int fd)
{
	pthread_t t;

	if (pthread_create(&t, NULL, park, &fd))
		return 2;
	pause();
	return 0;
}

/* A child whose second thread parks; *tid: that thread's id. */
static pid_t threaded(const char *self, pid_t *tid)
{
	int p[2];
	pid_t pid;

	CHECK_INT(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		char fd[16];

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* kept across execv */
		close(p[0]);
		snprintf(fd, sizeof(fd), "%d", p[1]);
		execl(self, self, "--threaded-child", fd, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	close(p[1]);
	CHECK_INT((int)read(p[0], tid, sizeof(*tid)), (int)sizeof(*tid));
	close(p[0]);
	CHECK(*tid != pid);
	return pid;
}

/* With 64 files kept for others and a soft limit of 66, two pids are
 * watched and the third is refused (-ENOSPC) whatever the table's own
 * bound; the limit raised again, it is watched. Before, the watches took
 * every file, and the process could open no socket and read no /proc. */
static void watches_leave_files(void)
{
	struct procwatch *pw = procwatch_new(on_exit_cb, NULL, 0);
	struct rlimit old, low;
	pid_t p[3];
	int status;

	CHECK(pw != NULL);
	procwatch_keep_files(pw, 64);
	for (int i = 0; i < 3; i++)
		p[i] = sleeper();
	CHECK_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 66;
	CHECK_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
	CHECK_INT(procwatch_add(pw, p[0]), 0);
	CHECK_INT(procwatch_add(pw, p[1]), 0);
	CHECK_INT(procwatch_add(pw, p[2]), -ENOSPC);
	CHECK_INT((int)procwatch_count(pw), 2);
	CHECK_INT(setrlimit(RLIMIT_NOFILE, &old), 0);
	CHECK_INT(procwatch_add(pw, p[2]), 0);
	procwatch_free(pw);
	for (int i = 0; i < 3; i++) {
		kill(p[i], SIGKILL);
		waitpid(p[i], &status, 0);
	}
}

/* Waits (at most 2 s) for the exit count to reach n; the time it took. */
static int64_t wait_exits(int n)
{
	int64_t start = now_ms();

	while (atomic_load(&exits) < n && now_ms() - start < 2000)
		usleep(200);
	return now_ms() - start;
}

int main(int argc, char **argv)
{
	struct procwatch *pw;
	pid_t a, b, c, gone;
	int status;
	int64_t took;

	if (argc == 3 && !strcmp(argv[1], "--threaded-child"))
		return threaded_child(atoi(argv[2]));
	watches_leave_files();
	pw = procwatch_new(on_exit_cb, NULL, 2);
	CHECK(pw != NULL);
	CHECK_INT(procwatch_add(pw, 1), -EINVAL);
	CHECK_INT(procwatch_add(pw, 0), -EINVAL);
	CHECK_INT(procwatch_add(pw, -5), -EINVAL);

	/* A reaped process cannot be watched. */
	gone = fork();
	if (gone == 0)
		_exit(0);
	CHECK_INT(waitpid(gone, &status, 0), gone);
	CHECK_INT(procwatch_add(pw, gone), -ESRCH);

	/* Added twice, watched once; the table holds two. */
	a = sleeper();
	b = sleeper();
	c = sleeper();
	CHECK_INT(procwatch_add(pw, a), 0);
	CHECK_INT(procwatch_add(pw, a), 0);
	CHECK_INT((int)procwatch_count(pw), 1);
	CHECK_INT(procwatch_add(pw, b), 0);
	{
		uint64_t start = 0; /* which process is watched */

		CHECK_INT(procwatch_add_start(pw, b, &start), 0);
		CHECK(start != 0);
		CHECK(start == procgrp_start_time(b, NULL));
	}
	CHECK_INT(procwatch_add(pw, c), -ENOSPC);

	/* An exit is told while the process is still a zombie; its reap,
	 * which ends its membership of its group, is told again (Linux 6.9+:
	 * this machine's kernel), however late its parent reaps it. */
	kill(a, SIGKILL);
	took = wait_exits(1);
	CHECK_INT(atomic_load(&exits), 1);
	CHECK_INT((int)atomic_load(&last_told), (int)a);
	CHECK(took < 1000);
	printf("exit of an unreaped child told after %lld ms\n",
	       (long long)took);
	CHECK(procwatch_tells_reaps(pw));
	if (procwatch_tells_reaps(pw)) {
		CHECK_INT((int)procwatch_count(pw), 2); /* a awaits its reap */
		/* Added again while it awaits its reap: it exited already. */
		CHECK_INT(procwatch_add(pw, a), -ESRCH);
		usleep(300 * 1000);
		CHECK_INT(atomic_load(&exits), 1);
		CHECK_INT(waitpid(a, &status, 0), a);
		took = wait_exits(2);
		CHECK_INT(atomic_load(&exits), 2);
		CHECK(took < 1000);
		printf("its reap 300 ms later told after %lld ms\n",
		       (long long)took);
		usleep(20 * 1000);
	} else {
		CHECK_INT(waitpid(a, &status, 0), a);
	}
	CHECK_INT((int)procwatch_count(pw), 1);

	/* Room again: c is watched; exits at the same moment may share one
	 * call. */
	CHECK_INT(procwatch_add(pw, c), 0);
	kill(b, SIGKILL);
	kill(c, SIGKILL);
	waitpid(b, &status, 0);
	waitpid(c, &status, 0);
	wait_exits(3);
	usleep(20 * 1000);
	CHECK_INT(atomic_load(&exits) >= 2, 1); /* two exits, maybe one wake */
	CHECK_INT((int)procwatch_count(pw), 0);

	/* A thread's id: watched, and its process's death told. */
	{
		pid_t tid, owner = threaded("/proc/self/exe", &tid);
		int before = atomic_load(&exits);

		CHECK_INT(procwatch_add(pw, tid), 0);
		CHECK_INT((int)procwatch_count(pw), 1);
		kill(owner, SIGKILL);
		took = wait_exits(before + 1);
		CHECK_INT(atomic_load(&exits), before + 1);
		CHECK(took < 1000);
		printf("death of a thread's process told after %lld ms\n",
		       (long long)took);
		waitpid(owner, &status, 0);
		usleep(20 * 1000);
		CHECK_INT((int)procwatch_count(pw), 0);
	}

	/* Freed with a watch outstanding: no callback after it returns. */
	a = sleeper();
	CHECK_INT(procwatch_add(pw, a), 0);
	procwatch_free(pw);
	kill(a, SIGKILL);
	waitpid(a, &status, 0);
	CHECK_DONE();
}
