/* lockfs_t_race: lockfs-t's verbs that loop in one process (and its
 * children):
 *
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
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockfs_t.h"

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

int cycle(int argc, char **argv)
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

int race(int argc, char **argv)
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
