/* procwatch: exit notifications from pidfds (see procwatch.h). One epoll
 * set holds the pidfds and an eventfd that stops the thread; an imap from
 * pid to its pidfd keeps each pid watched once.
 *
 * Threads: callers of procwatch_add and the watch thread; pw->mu guards
 * the map and the count. */
#include "procwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "map.h"

#define PROCWATCH_MAX_DEFAULT 65536
#define STOP_TAG	      UINT64_MAX
#define EVENTS_AT_ONCE	      64

struct procwatch {
	void (*on_exit)(void *arg);
	void *arg;
	size_t max;
	int epfd;
	int stopfd;
	pthread_t thread;
	pthread_mutex_t mu;
	struct imap fds; /* pid -> pidfd + 1; mu */
};

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9: a pidfd of one thread */
#endif

/* A pidfd of pid: a process, or else a thread (a calling thread's id
 * whose process the host could not name), whose end comes with its
 * process's at the latest. Kernels before 6.9 refuse the second: then
 * the poll notices. */
static int pidfd_open_of(int64_t pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);

	if (fd < 0 && (errno == ENOENT || errno == EINVAL))
		fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, PIDFD_THREAD);
	return fd;
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* The watched process pid exited: forget it. */
static void drop(struct procwatch *pw, uint64_t pid)
{
	void *v;

	pthread_mutex_lock(&pw->mu);
	v = imap_del(&pw->fds, pid);
	pthread_mutex_unlock(&pw->mu);
	if (v) {
		int fd = (int)((intptr_t)v - 1);

		epoll_ctl(pw->epfd, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
	}
}

static void *watch_main(void *arg)
{
	struct procwatch *pw = arg;
	struct epoll_event ev[EVENTS_AT_ONCE];

	for (;;) {
		int n = epoll_wait(pw->epfd, ev, EVENTS_AT_ONCE, -1);
		bool exited = false;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == STOP_TAG)
				return NULL;
			drop(pw, ev[i].data.u64);
			exited = true;
		}
		if (exited)
			pw->on_exit(pw->arg);
	}
}

struct procwatch *procwatch_new(void (*on_exit)(void *arg), void *arg,
				size_t max)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = STOP_TAG };
	struct procwatch *pw = calloc(1, sizeof(*pw));
	int rc;

	if (!pw)
		return NULL;
	pw->on_exit = on_exit;
	pw->arg = arg;
	pw->max = max ? max : PROCWATCH_MAX_DEFAULT;
	pw->epfd = epoll_create1(EPOLL_CLOEXEC);
	pw->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&pw->mu, NULL);
	imap_init(&pw->fds);
	if (pw->epfd < 0 || pw->stopfd < 0 ||
	    epoll_ctl(pw->epfd, EPOLL_CTL_ADD, pw->stopfd, &ev))
		goto fail;
	rc = pthread_create(&pw->thread, NULL, watch_main, pw);
	if (rc) {
		errno = rc;
		goto fail;
	}
	return pw;
fail:
	rc = errno;
	if (pw->epfd >= 0)
		close(pw->epfd);
	if (pw->stopfd >= 0)
		close(pw->stopfd);
	imap_fini(&pw->fds);
	pthread_mutex_destroy(&pw->mu);
	free(pw);
	errno = rc;
	return NULL;
}

int procwatch_add(struct procwatch *pw, int64_t pid)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = (uint64_t)pid };
	int fd, rc = 0;

	if (pid <= 1)
		return -EINVAL; /* never init, never "every process" */
	pthread_mutex_lock(&pw->mu);
	if (imap_get(&pw->fds, (uint64_t)pid))
		goto out;
	if (pw->fds.count >= pw->max) {
		rc = -ENOSPC;
		goto out;
	}
	fd = pidfd_open_of(pid);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	/* Registered before it is in the epoll set: an exit at once finds
	 * its entry to drop. */
	rc = imap_put(&pw->fds, (uint64_t)pid, (void *)(intptr_t)(fd + 1));
	if (!rc && epoll_ctl(pw->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		rc = -errno;
		imap_del(&pw->fds, (uint64_t)pid);
	}
	if (rc)
		close(fd);
out:
	pthread_mutex_unlock(&pw->mu);
	return rc;
}

size_t procwatch_count(struct procwatch *pw)
{
	size_t n;

	pthread_mutex_lock(&pw->mu);
	n = pw->fds.count;
	pthread_mutex_unlock(&pw->mu);
	return n;
}

static void close_one(void *arg, uint64_t pid, void *v)
{
	(void)arg;
	(void)pid;
	close((int)((intptr_t)v - 1));
}

void procwatch_free(struct procwatch *pw)
{
	uint64_t one = 1;

	if (!pw)
		return;
	if (write(pw->stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(pw->thread, NULL);
	else
		pthread_cancel(pw->thread), pthread_join(pw->thread, NULL);
	imap_each(&pw->fds, close_one, NULL);
	imap_fini(&pw->fds);
	close(pw->epfd);
	close(pw->stopfd);
	pthread_mutex_destroy(&pw->mu);
	free(pw);
}
