/* lockfs_t_hold: lockfs-t's hold verb, a process that keeps a file open
 * and runs commands on it from stdin:
 *
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
 *         trust             LOCKFS_IOC_TRUST_MS: ms of trust left, or
 *                           the errno name
 *         getlk [rd]        fcntl F_GETLK for a write lock (a read lock
 *                           with rd): "unlocked" or "locked type=..
 *         close             close the fd: "0"
 *         threads N flock|setlk HOW[/HOW...]   N threads make those
 *                           calls on the fd at once; "joined MS" collects
 *                           their results
 *                           (lockfs_t_threads.c)
 *         child keep|close  fork a child that keeps (or closes) the fd and
 *                           sleeps until killed; prints its pid (children
 *                           are reaped at once: SIGCHLD is ignored)
 *         signals           counts of signals received so far:
 *                           "USR1=n USR2=n HUP=n ALRM=n"
 *         pid               "pid=P pgid=G"
 *         exit              exit 0
 *       USR1, USR2, HUP and ALRM are counted (and interrupt a blocking
 *       flock/fcntl: EINTR); TERM and KILL end the process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lockfs_t.h"

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

int hold(int argc, char **argv)
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
		} else if (!strcmp(cmd, "trust")) {
			do_trust(fd);
		} else if (!strcmp(cmd, "getlk")) {
			do_getlk(fd, arg);
		} else if (!strcmp(cmd, "close")) {
			if (close(fd))
				fail(errno);
			else
				done();
			fd = -1;
		} else if (!strcmp(cmd, "threads") && arg) {
			threads_start(fd, arg);
		} else if (!strcmp(cmd, "joined") && arg) {
			threads_joined(arg);
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
