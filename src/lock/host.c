/* host: the real machine behind struct host (see host.h): clk_system,
 * /proc, tgkill(2), getsid(2), kill(2), and getpgid(2) where /proc cannot
 * be read. Any thread; its only state is a memo of the calling threads
 * seen (behind its own mutex) and when it last logged an unreadable
 * /proc (atomic). */
#include "host.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clk.h"
#include "log.h"
#include "procgrp.h"

/* Unreadable /proc is said at most once a minute. */
#define PROC_WARN_MS 60000

static FILE *open_status(int64_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%lld/status", (long long)pid);
	return fopen(path, "re");
}

bool host_sys_kill_pending(int64_t tid)
{
	unsigned long long set, pending = 0;
	char line[256];
	FILE *f = open_status(tid);

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigPnd: %llx", &set) == 1 ||
		    sscanf(line, "ShdPnd: %llx", &set) == 1)
			pending |= set;
	fclose(f);
	return (pending >> (SIGKILL - 1)) & 1;
}

/* The supplementary groups of pid from /proc/PID/status ("Groups:"). */
static int read_groups(int64_t pid, uint32_t *out, int max)
{
	char line[1024];
	int n = -1;
	FILE *f = open_status(pid);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 7, *end;

		if (strncmp(line, "Groups:", 7))
			continue;
		n = 0;
		for (;;) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p || n == max)
				break;
			out[n++] = (uint32_t)g;
			p = end;
		}
		break;
	}
	fclose(f);
	return n;
}

/* The process tid is a thread of, from /proc/TID/status ("Tgid:"); 0
 * when unknown. */
static int64_t read_tgid(int64_t tid)
{
	char line[256];
	long long tgid = 0;
	FILE *f = open_status(tid);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %lld", &tgid) == 1)
			break;
	fclose(f);
	return tgid > 0 ? tgid : 0;
}

/* Threads seen calling, by id and start time (which name one thread for
 * good: an id is reused only by a task started later): their process and
 * its command, so that a thread pool's callers cost those reads once
 * each. Direct-mapped; a collision costs the reads again. */
#define THREAD_MEMO_SLOTS 256

static struct {
	int64_t tid;
	uint64_t start;
	int64_t tgid;
	char comm[64];
} thread_memo[THREAD_MEMO_SLOTS];
static pthread_mutex_t thread_memo_mu = PTHREAD_MUTEX_INITIALIZER;

/* The process thread tid (started at start) belongs to, and its command
 * into comm; 0 when unknown. */
static int64_t process_of_thread(int64_t tid, uint64_t start,
				 char comm[static 64])
{
	unsigned i = (unsigned)(((uint64_t)tid * 0x9E3779B97F4A7C15ULL) >> 56);
	struct procgrp_stat proc;
	int64_t tgid = 0;

	pthread_mutex_lock(&thread_memo_mu);
	if (thread_memo[i].tid == tid && thread_memo[i].start == start) {
		tgid = thread_memo[i].tgid;
		memcpy(comm, thread_memo[i].comm, 64);
	}
	pthread_mutex_unlock(&thread_memo_mu);
	if (tgid)
		return tgid;
	tgid = read_tgid(tid);
	/* The process's command, not its thread's name. */
	if (tgid <= 0 || procgrp_stat(tgid, &proc))
		return tgid;
	memcpy(comm, proc.comm, 64);
	pthread_mutex_lock(&thread_memo_mu);
	thread_memo[i].tid = tid;
	thread_memo[i].start = start;
	thread_memo[i].tgid = tgid;
	memcpy(thread_memo[i].comm, proc.comm, 64);
	pthread_mutex_unlock(&thread_memo_mu);
	return tgid;
}

/* Whether pid is a thread's id that leads no process (tgkill(pid, pid, 0)
 * says ESRCH), without reading /proc. */
static bool thread_only(int64_t pid)
{
	return syscall(SYS_tgkill, (pid_t)pid, (pid_t)pid, 0) && errno == ESRCH;
}

/* When /proc cannot be read for a reason of ours (out of open files, a
 * hidden pid), a live caller's group and session still come from the
 * kernel by system calls: its lock is held for its group (not proved by
 * the leader's start, so its group is polled) instead of being let go of
 * at its first close. */
static void proc_by_syscalls(int64_t pid, int err, struct host_proc *out)
{
	static int64_t warned_mono_ms;
	pid_t g = getpgid((pid_t)pid), s = getsid((pid_t)pid);
	char why[LOG_ERRNO_MAX];

	if (g < 0)
		return; /* gone */
	/* A thread: its process only /proc would name. As in /proc, 0 is a
	 * group or session led from outside our PID namespace. */
	out->tgid = thread_only(pid) ? 0 : pid;
	out->pgid = g;
	out->sid = s >= 0 ? s : -1;
	if (log_gap_due(&warned_mono_ms, clk_sys_mono_ms(), PROC_WARN_MS))
		log_warn("host",
			 "cannot read /proc/%lld/stat: %s; process groups "
			 "are asked of the kernel and polled meanwhile",
			 (long long)pid, log_errno(err, why, sizeof(why)));
}

/* One read of /proc/PID/stat gives the group, the session and the
 * command; the group leader's start time costs a second read only when
 * pid does not lead its group. FUSE names the calling thread, which is
 * the process itself unless a program calls from a thread of its own (a
 * thread pool): tgkill(pid, pid, 0) tells which without reading /proc
 * (ESRCH: pid leads no process), and a thread's process and its command
 * cost two reads the first time that thread calls. */
static void sys_proc(void *arg, int64_t pid, struct host_proc *out)
{
	struct procgrp_stat st;
	int rc;

	(void)arg;
	memset(out, 0, sizeof(*out));
	out->pgid = -1;
	out->sid = -1;
	if (pid <= 0)
		return;
	rc = procgrp_stat(pid, &st);
	/* Unreadable for want of files, or hidden (a /proc mounted with
	 * hidepid, for a daemon not root) while the process lives. */
	if (rc == -ESRCH && (!kill((pid_t)pid, 0) || errno == EPERM))
		rc = -EACCES;
	if (rc && rc != -ESRCH && rc != -EINVAL)
		proc_by_syscalls(pid, rc, out);
	if (rc)
		return;
	out->tgid = thread_only(pid) ? process_of_thread(pid, st.start, st.comm)
				     : pid;
	out->pgid = st.pgid;
	out->sid = st.sid;
	if (st.pgid == pid) {
		out->pgid_start = st.start;
	} else if (st.pgid > 0) {
		int64_t grp;
		uint64_t start = procgrp_start_time(st.pgid, &grp);

		/* The leader only: a process that took the number of a
		 * leader gone (its group lives on) leads nothing here. */
		out->pgid_start = grp == st.pgid ? start : 0;
	}
	snprintf(out->comm, sizeof(out->comm), "%s", st.comm);
}

static int64_t sys_sid(void *arg, int64_t pid)
{
	pid_t sid;

	(void)arg;
	if (pid <= 0)
		return -1;
	sid = getsid((pid_t)pid);
	return sid > 0 ? sid : -1;
}

static int sys_groups(void *arg, int64_t pid, uint32_t *out, int max)
{
	(void)arg;
	return pid > 0 ? read_groups(pid, out, max) : -1;
}

static uint64_t sys_start_time(void *arg, int64_t pid, int64_t *pgid)
{
	(void)arg;
	return procgrp_start_time(pid, pgid);
}

static bool sys_pgrp_alive(void *arg, int64_t pgid, uint64_t leader_start)
{
	(void)arg;
	return procgrp_alive(pgid, leader_start);
}

static bool sys_pgrp_signallable(void *arg, int64_t pgid, uint64_t leader_start)
{
	(void)arg;
	return procgrp_signallable(pgid, leader_start);
}

static int sys_signal_pgrp(void *arg, int64_t pgid, int sig)
{
	(void)arg;
	if (pgid <= 1)
		return -EINVAL; /* never kill(-1) nor kill(0) */
	return kill(-(pid_t)pgid, sig) ? -errno : 0;
}

static const struct host_ops sys_ops = {
	.proc = sys_proc,
	.sid = sys_sid,
	.groups = sys_groups,
	.start_time = sys_start_time,
	.pgrp_alive = sys_pgrp_alive,
	.pgrp_signallable = sys_pgrp_signallable,
	.signal_pgrp = sys_signal_pgrp,
};

static const struct host sys_host = { .clk = &clk_system, .ops = &sys_ops };

const struct host *host_system(void)
{
	return &sys_host;
}
