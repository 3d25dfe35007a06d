/* lockfs_t_threads: hold's commands that make one blocking file lock call
 * from several threads on the one open file at once (a program whose
 * threads share an fd):
 *
 *   threads N flock HOW     N threads each call flock(2) on the fd, HOW as
 *                           for hold's flock (ex, sh, un, ",nb")
 *   threads N setlk HOW     the same with fcntl(2) (",wait": F_SETLKW)
 *       HOW may be a list, HOW/HOW/...: thread i makes the i-th call
 *       (the last one repeats), e.g. "threads 2 flock ex/sh"
 *       prints "started N"; a batch at a time, at most THREADS_MAX
 *   joined MS               waits at most MS ms for the batch: one word
 *                           per thread in start order, "0", the errno
 *                           name, or "-" for one still blocked (a later
 *                           "joined" asks again)
 *
 * Threads: hold's (the commands) and the ones started here, which only
 * make their call and store its result. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lockfs_t.h"

#define THREADS_MAX 16

struct call {
	int fd;
	int posix; /* fcntl, else flock */
	char how[32];
	int result; /* -1 while the call blocks; atomic */
};

static struct call calls[THREADS_MAX];
static int n_calls;

static void *run_call(void *arg)
{
	struct call *c = arg;
	int e = c->posix ? setlk_errno(c->fd, c->how)
			 : flock_errno(c->fd, c->how);

	__atomic_store_n(&c->result, e, __ATOMIC_RELEASE);
	return NULL;
}

static int pending(void)
{
	int n = 0;

	for (int i = 0; i < n_calls; i++)
		n += __atomic_load_n(&calls[i].result, __ATOMIC_ACQUIRE) < 0;
	return n;
}

void threads_start(int fd, const char *arg)
{
	char what[16], how[128];
	const char *next;
	int n;

	if (sscanf(arg, "%d %15s %127s", &n, what, how) != 3 || n < 1 ||
	    n > THREADS_MAX ||
	    (strcmp(what, "flock") && strcmp(what, "setlk"))) {
		printf("bad threads command: %s\n", arg);
		return;
	}
	if (pending()) {
		printf("EBUSY\n"); /* the last batch still blocks */
		return;
	}
	n_calls = 0;
	next = how;
	for (int i = 0; i < n; i++) {
		struct call *c = &calls[i];
		size_t len = strcspn(next, "/");
		pthread_t t;

		c->fd = fd;
		c->posix = !strcmp(what, "setlk");
		snprintf(c->how, sizeof(c->how), "%.*s", (int)len, next);
		if (next[len] == '/')
			next += len + 1;
		c->result = -1;
		if (pthread_create(&t, NULL, run_call, c)) {
			fail(EAGAIN);
			return;
		}
		pthread_detach(t);
		n_calls++;
	}
	printf("started %d\n", n);
}

void threads_joined(const char *arg)
{
	long long ms = parse_num(arg);
	struct timespec nap = { 0, 10 * 1000 * 1000 };

	for (long long waited = 0; pending() && waited < ms; waited += 10)
		nanosleep(&nap, NULL);
	for (int i = 0; i < n_calls; i++) {
		int e = __atomic_load_n(&calls[i].result, __ATOMIC_ACQUIRE);
		const char *word = "-";

		if (e >= 0)
			word = e ? errname(e) : "0";
		printf("%s%s", i ? " " : "", word);
	}
	printf("\n");
}
