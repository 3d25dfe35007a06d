/* lockfs_t: what the parts of the lockfs-t test tool share: printing a
 * result, the usage, the arguments (lockfs_t_args.c), the calls on an open
 * file (lockfs_t_fd.c) and the verbs each part runs for main (lockfs_t.c).
 * One thread, but for hold's threads command; hold, race and child
 * commands fork. */
#ifndef LOCKFS_TEST_LOCKFS_T_H
#define LOCKFS_TEST_LOCKFS_T_H

#include <stddef.h>
#include <sys/types.h>

/* Exits 2 with the usage when a verb has fewer than n arguments. */
#define NEED(n)                                                                \
	do {                                                                   \
		if (argc < (n))                                                \
			usage();                                               \
	} while (0)

/* An unescaped argument: len bytes at p, NUL-terminated. */
struct bytes {
	char *p;
	size_t len;
};

/* The errno name of e ("EEXIST"), or its number as text. */
const char *errname(int e);
/* Prints the errno name of e; returns 1 (the call failed). */
int fail(int e);
/* Prints "0"; returns 0. */
int done(void);
/* Prints the usage to stderr and exits 2. */
__attribute__((noreturn)) void usage(void);

/* Arguments (lockfs_t_args.c); a malformed one exits 2. */
/* Decodes the escapes of an argument into a new NUL-terminated buffer. */
struct bytes unescape(const char *s);
char *path_arg(const char *s);
int parse_flags(const char *s);
mode_t parse_mode(const char *s);
long long parse_num(const char *s);

/* Calls on an open file, shared by its verbs and hold (lockfs_t_fd.c). */
/* Reads the whole text from offset 0 and prints it as is. */
int read_all(int fd);
int write_data(int fd, const char *arg);
/* events: POLLIN|POLLPRI, or only POLLPRI when pri_only (a lock file is
 * always readable, so only that form waits for a loss). */
int do_poll(int fd, int ms, int pri_only);
int do_flock(int fd, const char *how);
int do_setlk(int fd, const char *how);
/* The same calls, returning 0 or the errno (any thread). */
int flock_errno(int fd, const char *how);
int setlk_errno(int fd, const char *how);

/* hold's threads on its one open file (lockfs_t_threads.c): "threads N
 * flock|setlk HOW" starts N threads each making that call; "joined MS"
 * waits for them. Each prints its own line. */
void threads_start(int fd, const char *arg);
void threads_joined(const char *arg);
int do_getlk(int fd, const char *how);
/* LOCKFS_IOC_TRUST_MS: the ms printed, or the errno name. */
int do_trust(int fd);

/* The verbs: each returns the exit status. fd_verb and path_verb return -1
 * for a verb that is not theirs. */
int hold(int argc, char **argv);
int race(int argc, char **argv);
int cycle(int argc, char **argv);
int fd_verb(const char *verb, int argc, char **argv);
int path_verb(const char *verb, int argc, char **argv);

#endif
