/* lock_procgrp: process groups proved by their leader's start time. Group
 * 1 is never signallable (kill(-1) would reach every process); a live
 * group is the holder's only while its leader is the one recorded (a
 * reused group number is not); a group whose processes are gone is dead;
 * a group whose leader has exited is alive (by its number) but never
 * signallable, nor is a group whose leader is unknown. The machine names
 * a caller that is a thread by its process, and still names a caller's
 * group and session when this process can open no file to read /proc. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "host.h"
#include "procgrp.h"

/* A leader that forks a member of its group, then exits. */
static void leaderless_group(void)
{
	int64_t grp = 0;
	uint64_t start;
	pid_t leader, member = 0;
	int pfd[2], status, i;

	/* The member is reparented to this process when the leader dies, so
	 * that it is reaped here (not left a zombie in its group). */
	CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CHECK_INT(pipe(pfd), 0);
	leader = fork();
	if (leader == 0) {
		pid_t m;

		setpgid(0, 0);
		m = fork();
		if (m == 0) {
			close(pfd[1]);
			pause();
			_exit(0);
		}
		if (write(pfd[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(1);
		pause();
		_exit(0);
	}
	setpgid(leader, leader);
	close(pfd[1]);
	CHECK_INT(read(pfd[0], &member, sizeof(member)), (int)sizeof(member));
	close(pfd[0]);
	start = procgrp_start_time(leader, &grp);
	CHECK(start > 0);
	CHECK_INT(grp, leader);
	CHECK(procgrp_signallable(leader, start));
	kill(leader, SIGKILL);
	waitpid(leader, &status, 0);
	/* The member lives on; its group keeps the leader's number. */
	for (i = 0; i < 200 && getpgid(member) != leader; i++)
		usleep(1000);
	CHECK_INT(getpgid(member), leader);
	CHECK(procgrp_alive(leader, start));
	CHECK(!procgrp_signallable(leader, start));
	kill(member, SIGKILL);
	for (i = 0; i < 2000 && waitpid(member, &status, WNOHANG) != member;
	     i++)
		usleep(1000);
	CHECK(!procgrp_alive(leader, start));
}

/* A thread whose name holds spaces and parentheses, as a caller's
 * command may: procgrp_stat reads it whole from /proc/TID/stat, with the
 * process's group and session. */
static void *named_thread(void *arg)
{
	struct procgrp_stat *st = arg;

	prctl(PR_SET_NAME, "a) b (c", 0, 0, 0);
	if (procgrp_stat((int64_t)syscall(SYS_gettid), st))
		st->pgid = -1;
	return NULL;
}

/* One read of /proc/PID/stat says what getpgid, getsid and /proc/PID/comm
 * say, for a process and for a thread of it. */
static void stat_fields(void)
{
	struct procgrp_stat st;
	char comm[64] = "";
	pthread_t t;
	FILE *f;

	CHECK_INT(procgrp_stat(getpid(), &st), 0);
	CHECK_INT(st.pgid, getpgrp());
	CHECK_INT(st.sid, getsid(0));
	CHECK_INT((long long)st.start,
		  (long long)procgrp_start_time(getpid(), NULL));
	f = fopen("/proc/self/comm", "re");
	CHECK(f != NULL);
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	CHECK_STR(st.comm, comm);
	CHECK_INT(pthread_create(&t, NULL, named_thread, &st), 0);
	pthread_join(t, NULL);
	CHECK_STR(st.comm, "a) b (c");
	CHECK_INT(st.pgid, getpgrp());
	CHECK_INT(st.sid, getsid(0));
	CHECK(st.start >= procgrp_start_time(getpid(), NULL));
	/* Gone or never there: an error, and nothing left filled. */
	CHECK(procgrp_stat(-5, &st) < 0);
	CHECK_INT(st.pgid, 0);
	CHECK_STR(st.comm, "");
}

/* What the machine says of a caller that is a thread of its own program
 * (FUSE names the calling thread): its process's number and command
 * (not the thread's name), with the group and session they share. */
struct thread_probe {
	int64_t tid;
	struct host_proc p, again; /* the second answer from the memo */
};

static void *probe_thread(void *arg)
{
	struct thread_probe *tp = arg;

	prctl(PR_SET_NAME, "pool-1-thread-3", 0, 0, 0);
	tp->tid = (int64_t)syscall(SYS_gettid);
	host_proc(host_system(), tp->tid, &tp->p);
	host_proc(host_system(), tp->tid, &tp->again);
	return NULL;
}

static void host_names_the_process(void)
{
	struct thread_probe tp = { 0 };
	struct host_proc me;
	pthread_t t;

	host_proc(host_system(), getpid(), &me);
	CHECK_INT(me.tgid, getpid());
	CHECK_INT(me.pgid, getpgrp());
	CHECK_INT(pthread_create(&t, NULL, probe_thread, &tp), 0);
	pthread_join(t, NULL);
	CHECK(tp.tid > 0 && tp.tid != getpid());
	CHECK_INT(tp.p.tgid, getpid());
	CHECK_STR(tp.p.comm, me.comm);
	CHECK_INT(tp.p.pgid, getpgrp());
	CHECK_INT(tp.p.sid, getsid(0));
	CHECK_INT((long long)tp.p.pgid_start, (long long)me.pgid_start);
	CHECK_INT(tp.again.tgid, getpid());
	CHECK_STR(tp.again.comm, me.comm);
	/* Gone, or never there: nothing known. */
	host_proc(host_system(), tp.tid, &tp.p);
	CHECK_INT(tp.p.tgid, 0);
	CHECK_INT(tp.p.pgid, -1);
}

/* Out of open files: /proc/PID/stat cannot be read (-EMFILE, not "gone"),
 * and the machine asks the kernel for the caller's group and session
 * instead (its leader's start unknown). Before, the caller read as gone
 * (group -1), and a lock it took was let go of at its first close. */
static void out_of_files(void)
{
	struct procgrp_stat st;
	struct host_proc me;
	struct rlimit old, low;
	int fds[64], n = 0;

	CHECK_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	CHECK_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = dup(0)) >= 0)
		n++;
	CHECK(n < 64 && errno == EMFILE);
	CHECK_INT(procgrp_stat(getpid(), &st), -EMFILE);
	host_proc(host_system(), getpid(), &me);
	CHECK_INT(me.pgid, getpgrp());
	CHECK_INT(me.sid, getsid(0));
	CHECK_INT(me.tgid, getpid());
	CHECK_INT((long long)me.pgid_start, 0);
	/* A pid that is gone is still unknown. */
	host_proc(host_system(), 999999, &me);
	CHECK_INT(me.pgid, -1);
	while (n > 0)
		close(fds[--n]);
	CHECK_INT(setrlimit(RLIMIT_NOFILE, &old), 0);
	CHECK_INT(procgrp_stat(getpid(), &st), 0);
}

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
	stat_fields();
	host_names_the_process();
	out_of_files();

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
	/* Unknown leader start: alive by number, never signalled. */
	CHECK(procgrp_alive(child, 0));
	CHECK(!procgrp_signallable(child, 0));
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	CHECK(!procgrp_alive(child, start));
	CHECK(!procgrp_signallable(child, start));

	/* A group whose leader has exited while a member lives (as a reused
	 * number whose new leader exited would look): alive by its number,
	 * not signallable. */
	leaderless_group();
	CHECK_DONE();
}
