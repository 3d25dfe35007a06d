/* handoff: how soon a lock passes from one holder to the next.
 *
 *   death  A process in its own group takes DIR_A/d<i> with
 *          open(O_CREAT|O_EXCL) and closes it (held by its group, the
 *          default hold=pgrp), then is killed. Measured: from the kill to
 *          the moment open(O_CREAT|O_EXCL) of the same name in DIR_B
 *          succeeds (tried every millisecond). With DIR_B the same mount
 *          as DIR_A this is the daemon's release (one DeleteItem) plus the
 *          new acquire (one PutItem): no other request is involved.
 *   flock  A holds DIR_A/f<i> with flock(LOCK_EX); a process waits in
 *          flock(LOCK_EX) on DIR_B/f<i> (another mount); A unlocks after
 *          a random 200..700 ms. Measured: from A's LOCK_UN call to the
 *          waiter's grant.
 *
 * usage: handoff death|flock DIR_A DIR_B N
 * Prints "<mode> n=N p50_ms=... p90_ms=... max_ms=..." and each sample
 * with -v as the fifth argument. Every wait is bounded (10 s). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MAX_MS 10000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)((ms - (double)(time_t)(ms / 1000) *
						    1000) *
				      1e6) };

	nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One death handoff; the time in ms, or a negative number on failure. */
static double one_death(const char *a, const char *b, int i)
{
	char pa[4096], pb[4096];
	int pfd[2], status, fd;
	double t0, t;
	char c;
	pid_t child;

	snprintf(pa, sizeof(pa), "%s/d%d", a, i);
	snprintf(pb, sizeof(pb), "%s/d%d", b, i);
	if (pipe(pfd))
		return -1;
	child = fork();
	if (child == 0) {
		setsid();
		fd = open(pa, O_CREAT | O_EXCL | O_RDWR, 0644);
		c = fd >= 0 ? 'y' : 'n';
		if (fd >= 0)
			close(fd);
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	if (child < 0 || read(pfd[0], &c, 1) != 1 || c != 'y') {
		close(pfd[0]);
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
		}
		return -1;
	}
	close(pfd[0]);
	sleep_ms(50);
	t0 = now_ms();
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	for (;;) {
		fd = open(pb, O_CREAT | O_EXCL | O_RDWR, 0644);
		t = now_ms();
		if (fd >= 0)
			break;
		if (errno != EEXIST || t - t0 > WAIT_MAX_MS)
			return -1;
		sleep_ms(1);
	}
	close(fd);
	unlink(pb);
	return t - t0;
}

/* One flock handoff across mounts. */
static double one_flock(const char *a, const char *b, int i, double *shared)
{
	char pa[4096], pb[4096];
	int fa, status;
	double t0;
	pid_t w;

	snprintf(pa, sizeof(pa), "%s/f%d", a, i);
	snprintf(pb, sizeof(pb), "%s/f%d", b, i);
	fa = open(pa, O_CREAT | O_RDWR, 0644);
	if (fa < 0 || flock(fa, LOCK_EX)) {
		if (fa >= 0)
			close(fa);
		return -1;
	}
	*shared = -1;
	w = fork();
	if (w == 0) {
		int fb = open(pb, O_RDWR);

		alarm(WAIT_MAX_MS / 1000 + 1);
		if (fb < 0 || flock(fb, LOCK_EX))
			_exit(1);
		*shared = now_ms();
		flock(fb, LOCK_UN);
		close(fb);
		_exit(0);
	}
	sleep_ms(200 + rand() % 500);
	t0 = now_ms();
	flock(fa, LOCK_UN);
	close(fa);
	waitpid(w, &status, 0);
	unlink(pa);
	if (!WIFEXITED(status) || WEXITSTATUS(status) || *shared < 0)
		return -1;
	return *shared - t0;
}

int main(int argc, char **argv)
{
	double *samples, *shared;
	int n, i, got = 0, failed = 0, verbose;

	if (argc < 5 || (strcmp(argv[1], "death") && strcmp(argv[1], "flock"))) {
		fprintf(stderr, "usage: handoff death|flock DIR_A DIR_B N [-v]\n");
		return 2;
	}
	n = atoi(argv[4]);
	verbose = argc > 5 && !strcmp(argv[5], "-v");
	if (n < 1 || n > 100000)
		return 2;
	samples = calloc((size_t)n, sizeof(*samples));
	shared = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!samples || shared == MAP_FAILED)
		return 1;
	srand((unsigned)getpid());
	for (i = 0; i < n; i++) {
		double ms = argv[1][0] == 'd'
				    ? one_death(argv[2], argv[3], i)
				    : one_flock(argv[2], argv[3], i, shared);

		if (ms < 0) {
			failed++;
			continue;
		}
		if (verbose)
			printf("sample %.2f\n", ms);
		samples[got++] = ms;
	}
	if (!got) {
		fprintf(stderr, "handoff: every attempt failed\n");
		return 1;
	}
	qsort(samples, (size_t)got, sizeof(*samples), cmp_double);
	printf("%s n=%d failed=%d p50_ms=%.1f p90_ms=%.1f max_ms=%.1f\n",
	       argv[1], got, failed, samples[(got - 1) / 2],
	       samples[(got * 9 - 1) / 10], samples[got - 1]);
	return failed ? 1 : 0;
}
