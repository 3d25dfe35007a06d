/* host: the real machine behind struct host (see host.h): clk_system,
 * /proc, getpgid(2), getsid(2), kill(2). No state; any thread. */
#include "host.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procgrp.h"

/* The supplementary groups of pid from /proc/PID/status ("Groups:"). */
static int read_groups(int64_t pid, uint32_t *out, int max)
{
	char path[64], line[1024];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%lld/status", (long long)pid);
	f = fopen(path, "re");
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

static void read_comm(int64_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%lld/comm", (long long)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void sys_proc(void *arg, int64_t pid, struct host_proc *out)
{
	(void)arg;
	memset(out, 0, sizeof(*out));
	out->pgid = -1;
	out->sid = -1;
	out->ngroups = -1;
	if (pid <= 0)
		return;
	out->pgid = getpgid((pid_t)pid);
	out->sid = getsid((pid_t)pid);
	out->pgid_start =
		out->pgid > 0 ? procgrp_start_time(out->pgid, NULL) : 0;
	read_comm(pid, out->comm, sizeof(out->comm));
	out->ngroups = read_groups(pid, out->groups, HOST_NGROUPS);
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
