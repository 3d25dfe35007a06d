/* procwatch: exit notifications from pidfds (see procwatch.h). One epoll
 * set holds the pidfds and an eventfd that stops the thread; an imap from
 * pid to its entry keeps each pid watched once. Where the kernel tells a
 * reap (Linux 6.9+: a pidfd reports EPOLLHUP once its process is reaped),
 * an exited process stays watched, for its reap only, until then or for
 * REAP_WAIT_MS at most; the exited ones are listed oldest first.
 *
 * Threads: callers of procwatch_add and the watch thread; pw->mu guards
 * the map, the entries and the list. */
#include "procwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clk.h"
#include "map.h"
#include "procgrp.h"

#define PROCWATCH_MAX_DEFAULT 65536
#define STOP_TAG	      UINT64_MAX
#define EVENTS_AT_ONCE	      64
/* How long an exited process stays watched for its reap: a parent that
 * reaps later than this leaves its group to the caller's poll. */
#define REAP_WAIT_MS 10000

struct watched {
	uint64_t pid;
	int fd;
	uint64_t start;	   /* its start time (procgrp), read when first asked */
	int64_t exited_ms; /* 0 while it runs; then when its exit was told */
	struct watched *prev, *next; /* the exited ones, oldest first */
};

struct procwatch {
	void (*on_exit)(void *arg, const int64_t *pids, int n);
	void *arg;
	size_t max;
	size_t keep;	 /* open files left to others; mu */
	bool reaps_told; /* the kernel wakes a pidfd at its process's reap */
	int epfd;
	int stopfd;
	pthread_t thread;
	pthread_mutex_t mu;
	struct imap fds;	     /* pid -> struct watched; mu */
	struct watched *old, *young; /* the exited ones; mu */
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

/* mu held. Takes w off the exited list. */
static void unlist_locked(struct procwatch *pw, struct watched *w)
{
	if (!w->exited_ms)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		pw->old = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		pw->young = w->prev;
	w->prev = w->next = NULL;
}

/* mu held. Forgets w: its pidfd leaves the set and is closed. */
static void drop_locked(struct procwatch *pw, struct watched *w)
{
	imap_del(&pw->fds, w->pid);
	unlist_locked(pw, w);
	epoll_ctl(pw->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	close(w->fd);
	free(w);
}

/* mu held. Pid's process exited (events: what its pidfd said): forgotten,
 * or, where the kernel will tell its reap and has not yet, watched for
 * that only (no event asked: EPOLLHUP is always reported). */
static void exited_locked(struct procwatch *pw, uint64_t pid, uint32_t events,
			  int64_t now)
{
	struct watched *w = imap_get(&pw->fds, pid);
	struct epoll_event ev = { .events = 0, .data.u64 = pid };

	if (!w)
		return;
	if (!pw->reaps_told || (events & (EPOLLHUP | EPOLLERR)) ||
	    w->exited_ms || epoll_ctl(pw->epfd, EPOLL_CTL_MOD, w->fd, &ev)) {
		drop_locked(pw, w);
		return;
	}
	w->exited_ms = now;
	w->prev = pw->young;
	if (pw->young)
		pw->young->next = w;
	else
		pw->old = w;
	pw->young = w;
}

/* mu held. Forgets the exited ones not reaped within REAP_WAIT_MS; how
 * long until the oldest left is due (-1: none). */
static int expire_locked(struct procwatch *pw, int64_t now)
{
	while (pw->old && now - pw->old->exited_ms >= REAP_WAIT_MS)
		drop_locked(pw, pw->old);
	return pw->old ? (int)(pw->old->exited_ms + REAP_WAIT_MS - now) : -1;
}

static void *watch_main(void *arg)
{
	struct procwatch *pw = arg;
	struct epoll_event ev[EVENTS_AT_ONCE];
	int timeout = -1;

	for (;;) {
		int n = epoll_wait(pw->epfd, ev, EVENTS_AT_ONCE, timeout);
		int64_t told[EVENTS_AT_ONCE], now;
		int n_told = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		now = clk_sys_mono_ms();
		pthread_mutex_lock(&pw->mu);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == STOP_TAG) {
				pthread_mutex_unlock(&pw->mu);
				return NULL;
			}
			exited_locked(pw, ev[i].data.u64, ev[i].events, now);
			told[n_told++] = (int64_t)ev[i].data.u64;
		}
		timeout = expire_locked(pw, now);
		pthread_mutex_unlock(&pw->mu);
		if (n_told)
			pw->on_exit(pw->arg, told, n_told);
	}
}

/* Whether this kernel tells a process's reap to its pidfd: it came with
 * PIDFD_THREAD (Linux 6.9), which a pidfd of our own thread tries. */
static bool kernel_tells_reaps(void)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, getpid(), PIDFD_THREAD);

	if (fd < 0)
		return false;
	close(fd);
	return true;
#else
	return false;
#endif
}

struct procwatch *procwatch_new(void (*on_exit)(void *arg, const int64_t *pids,
						int n),
				void *arg, size_t max)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = STOP_TAG };
	struct procwatch *pw = calloc(1, sizeof(*pw));
	int rc;

	if (!pw)
		return NULL;
	pw->on_exit = on_exit;
	pw->arg = arg;
	pw->max = max ? max : PROCWATCH_MAX_DEFAULT;
	pw->keep = PROCWATCH_KEEP_DEFAULT;
	pw->reaps_told = kernel_tells_reaps();
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

void procwatch_keep_files(struct procwatch *pw, size_t n)
{
	pthread_mutex_lock(&pw->mu);
	pw->keep = n;
	pthread_mutex_unlock(&pw->mu);
}

/* mu held. How many pids may be watched now: max, and no more pidfds than
 * leave keep open files under the soft RLIMIT_NOFILE (read each time: an
 * operator may change it while we run). Past it, the process would fail
 * to open its sockets and /proc, and every lock would suffer. */
static size_t room_locked(const struct procwatch *pw)
{
	struct rlimit rl;
	size_t room = pw->max;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		size_t files = rl.rlim_cur > pw->keep
				       ? (size_t)(rl.rlim_cur - pw->keep)
				       : 0;

		if (files < room)
			room = files;
	}
	return room;
}

int procwatch_add(struct procwatch *pw, int64_t pid)
{
	return procwatch_add_start(pw, pid, NULL);
}

/* mu held. The start time of w's process: read once, after its pidfd was
 * opened, so that it is that process's (or 0: a process that was reaped
 * before the read, whose exit its pidfd tells at once). */
static uint64_t start_of_locked(struct watched *w)
{
	if (!w->start)
		w->start = procgrp_start_time((int64_t)w->pid, NULL);
	return w->start;
}

int procwatch_add_start(struct procwatch *pw, int64_t pid, uint64_t *start)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = (uint64_t)pid };
	struct watched *w;
	int fd, rc = 0;

	if (pid <= 1)
		return -EINVAL; /* never init, never "every process" */
	pthread_mutex_lock(&pw->mu);
	w = imap_get(&pw->fds, (uint64_t)pid);
	if (w) {
		rc = w->exited_ms ? -ESRCH : 0; /* exited, awaiting its reap */
		if (!rc && start)
			*start = start_of_locked(w);
		goto out;
	}
	if (pw->fds.count >= room_locked(pw)) {
		rc = -ENOSPC;
		goto out;
	}
	w = calloc(1, sizeof(*w));
	fd = w ? pidfd_open_of(pid) : -1;
	if (fd < 0) {
		rc = w ? -errno : -ENOMEM;
		free(w);
		goto out;
	}
	w->pid = (uint64_t)pid;
	w->fd = fd;
	/* Registered before it is in the epoll set: an exit at once finds
	 * its entry. */
	rc = imap_put(&pw->fds, (uint64_t)pid, w);
	if (!rc && epoll_ctl(pw->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		rc = -errno;
		imap_del(&pw->fds, (uint64_t)pid);
	}
	if (rc) {
		close(fd);
		free(w);
	} else if (start) {
		*start = start_of_locked(w);
	}
out:
	pthread_mutex_unlock(&pw->mu);
	return rc;
}

bool procwatch_tells_reaps(const struct procwatch *pw)
{
	return pw->reaps_told;
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
	struct watched *w = v;

	(void)arg;
	(void)pid;
	close(w->fd);
	free(w);
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
