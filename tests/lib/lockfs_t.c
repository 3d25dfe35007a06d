/* lockfs-t: one system call per invocation, for the filesystem test suite
 * (tests/fs). In the style of pjdfstest: prints "0" on success or the errno
 * name (EEXIST, EPERM, ...) on failure; verbs that return data print the
 * data instead of "0". Exit status: 0 success, 1 the call failed, 2 usage.
 *
 *   lockfs-t VERB ARGS...
 *
 * Arguments that are paths, names or data accept escapes, so that names of
 * 300 bytes or with invalid UTF-8 are easy to write:
 *   \xNN        the byte NN (hex)
 *   \\          a backslash
 *   \{N}C       the character C (itself possibly \xNN) N times
 *
 * FLAGS is a comma-separated list of O_RDONLY, O_WRONLY, O_RDWR, O_CREAT,
 * O_EXCL, O_TRUNC, O_APPEND, O_NONBLOCK, O_DIRECTORY, O_NOFOLLOW (or 0).
 * MODE is octal (default 0644).
 *
 * Verbs (see usage() for the list; hold is described in lockfs_t_hold.c,
 * race and cycle in lockfs_t_race.c). Files: lockfs_t_args.c (arguments),
 * lockfs_t_fd.c (verbs on an open file), lockfs_t_path.c (verbs on a
 * path), lockfs_t_hold.c, lockfs_t_race.c. One thread. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lockfs_t.h"

static const struct {
	int num;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" },
	{ ENOENT, "ENOENT" },
	{ ESRCH, "ESRCH" },
	{ EINTR, "EINTR" },
	{ EIO, "EIO" },
	{ ENXIO, "ENXIO" },
	{ E2BIG, "E2BIG" },
	{ EBADF, "EBADF" },
	{ ECHILD, "ECHILD" },
	{ EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" },
	{ EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" },
	{ EXDEV, "EXDEV" },
	{ ENODEV, "ENODEV" },
	{ ENOTDIR, "ENOTDIR" },
	{ EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" },
	{ ENFILE, "ENFILE" },
	{ EMFILE, "EMFILE" },
	{ ETXTBSY, "ETXTBSY" },
	{ EFBIG, "EFBIG" },
	{ ENOSPC, "ENOSPC" },
	{ ESPIPE, "ESPIPE" },
	{ EROFS, "EROFS" },
	{ EMLINK, "EMLINK" },
	{ EPIPE, "EPIPE" },
	{ ERANGE, "ERANGE" },
	{ EDEADLK, "EDEADLK" },
	{ ENAMETOOLONG, "ENAMETOOLONG" },
	{ ENOLCK, "ENOLCK" },
	{ ENOSYS, "ENOSYS" },
	{ ENOTEMPTY, "ENOTEMPTY" },
	{ ELOOP, "ELOOP" },
	{ ENODATA, "ENODATA" },
	{ ENOTTY, "ENOTTY" },
	{ ENOTSUP, "ENOTSUP" },
	{ ENOTCONN, "ENOTCONN" },
	{ ETIMEDOUT, "ETIMEDOUT" },
	{ ECONNREFUSED, "ECONNREFUSED" },
	{ ESTALE, "ESTALE" },
	{ ECANCELED, "ECANCELED" },
	{ EOVERFLOW, "EOVERFLOW" },
	{ EILSEQ, "EILSEQ" },
	{ EPROTO, "EPROTO" },
	{ EDQUOT, "EDQUOT" },
};

const char *errname(int e)
{
	static char buf[32];
	size_t i;

	/* EWOULDBLOCK == EAGAIN and EOPNOTSUPP == ENOTSUP on Linux: the
	 * tests accept either spelling through the names printed here. */
	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].num == e)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "E#%d", e);
	return buf;
}

int fail(int e)
{
	printf("%s\n", errname(e));
	return 1;
}

int done(void)
{
	printf("0\n");
	return 0;
}

void usage(void)
{
	fputs("usage: lockfs-t VERB ARGS...\n"
	      "  open PATH FLAGS [MODE]        read PATH\n"
	      "  write PATH DATA [FLAGS]       fsync PATH FLAGS [MODE]\n"
	      "  poll PATH FLAGS MS [pri]      hold [--pgrp] PATH FLAGS "
	      "[MODE]\n"
	      "  unlink PATH   mkdir PATH MODE   rmdir PATH\n"
	      "  rename A B    link A B    symlink TARGET PATH\n"
	      "  mknod PATH reg|fifo [MODE]    chmod PATH MODE\n"
	      "  chown PATH UID GID            truncate PATH LEN\n"
	      "  utimens PATH                  stat PATH   lstat PATH\n"
	      "  getxattr PATH NAME            listxattr PATH\n"
	      "  setxattr PATH NAME VALUE      removexattr PATH NAME\n"
	      "  statfs PATH                   readdir PATH\n"
	      "  flock PATH FLAGS ex|sh|un[,nb]\n"
	      "  setlk PATH FLAGS wr|rd|un[,wait]   trust PATH\n"
	      "  race PATH flock|setlk N       cycle PATH N\n"
	      "  timed VERB ARGS...            VERB, then \"ms N\": its time\n"
	      "escapes in paths and data: \\xNN  \\\\  \\{N}C\n",
	      stderr);
	exit(2);
}

/* A one-shot syscall driver: what it allocates lives until it exits, so
 * LeakSanitizer (on in the sanitizer build of the tests) has nothing to
 * say about it; the daemon under test keeps full leak checking. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

/* Milliseconds of CLOCK_MONOTONIC. */
static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	const char *verb;
	double t0 = 0;
	bool timed = false;
	int rc;

	/* Every line reaches the test at once, whatever ends the process. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "timed")) {
		/* The verb's own time, without this process's start, which a
		 * loaded machine makes long and uneven. */
		timed = true;
		argv++;
		argc--;
	}
	if (argc < 3)
		usage();
	verb = argv[1];
	argv += 2;
	argc -= 2;
	if (timed) {
		if (!strcmp(verb, "hold") || !strcmp(verb, "race") ||
		    !strcmp(verb, "cycle"))
			usage();
		t0 = mono_ms();
	}

	if (!strcmp(verb, "hold"))
		return hold(argc, argv);
	if (!strcmp(verb, "race"))
		return race(argc, argv);
	if (!strcmp(verb, "cycle"))
		return cycle(argc, argv);
	rc = fd_verb(verb, argc, argv);
	if (rc < 0)
		rc = path_verb(verb, argc, argv);
	if (rc < 0)
		usage();
	if (timed)
		printf("ms %.0f\n", mono_ms() - t0);
	return rc;
}
