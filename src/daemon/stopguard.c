/* stopguard: a stopping mount cut off before its locks' trust ends (see
 * stopguard.h). Threads: main, and the guard's thread between begin and
 * end; g->mu guards cut, ending and the condition variable's wake-ups. */
#include "stopguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "clk.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"

#define TAG "main"
/* The guard looks again at least this often: heartbeats made while the
 * stop runs move the first trust end later. */
#define GUARD_LOOK_MS 100

struct stopguard {
	char mnt[PATH_MAX];
	dev_t dev;
	bool have_dev;
	struct lock_engine *eng;
	const struct metrics *m;
	uint64_t lost_before; /* MC_LOST when the stop began */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	pthread_t thread;
	bool running, ending, cut; /* mu */
};

/* The device of what is mounted on path now, read without a request to
 * any FUSE daemon (ours may not be answering). */
static int device_of(const char *path, dev_t *dev)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, 0, &sx))
		return -errno;
	*dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	return 0;
}

struct stopguard *stopguard_new(const char *mnt)
{
	struct stopguard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	snprintf(g->mnt, sizeof(g->mnt), "%s", mnt);
	g->have_dev = !device_of(g->mnt, &g->dev);
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	return g;
}

/* Whether the path shows the mount now. */
static bool is_ours(const struct stopguard *g)
{
	dev_t now = 0;

	return g->have_dev && !device_of(g->mnt, &now) && now == g->dev;
}

bool stopguard_gone(struct stopguard *g)
{
	return g && g->have_dev && !is_ours(g);
}

bool stopguard_cut(struct stopguard *g, const char *why)
{
	char err[LOG_ERRNO_MAX];
	int rc;

	if (!g)
		return false;
	pthread_mutex_lock(&g->mu);
	if (g->cut) {
		pthread_mutex_unlock(&g->mu);
		return true;
	}
	/* Ours still, and not a mount made on the path since. */
	if (!is_ours(g)) {
		pthread_mutex_unlock(&g->mu);
		return false;
	}
	rc = umount2(g->mnt, MNT_FORCE | MNT_DETACH | UMOUNT_NOFOLLOW) ? -errno
								       : 0;
	g->cut = !rc;
	pthread_mutex_unlock(&g->mu);
	if (rc)
		log_info(TAG,
			 "stopping: cannot cut the mount off (%s): its "
			 "holders learn when it is unmounted",
			 log_errno(rc, err, sizeof(err)));
	else
		log_info(TAG,
			 "stopping: %s: the mount is cut off (every call on it "
			 "fails, every poll reports an error), so that no "
			 "holder outlives its lock unaware",
			 why);
	return !rc;
}

static void *guard_main(void *arg)
{
	struct stopguard *g = arg;

	pthread_mutex_lock(&g->mu);
	while (!g->ending && !g->cut) {
		int64_t end, now, wait_ms;
		struct timespec ts;

		pthread_mutex_unlock(&g->mu);
		/* A loss (its safe period, a refusal) its holder cannot be
		 * told of through the mount, or a trust that ends now. */
		end = lock_trust_ends_mono_ms(g->eng);
		now = clk_sys_mono_ms();
		if (end <= now ||
		    metrics_get(g->m, MC_LOST) != g->lost_before) {
			stopguard_cut(g, "a lock was lost, or its safe period "
					 "ended, before the stop did");
			pthread_mutex_lock(&g->mu);
			break;
		}
		wait_ms = end - now < GUARD_LOOK_MS ? end - now : GUARD_LOOK_MS;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += wait_ms * 1000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_mutex_lock(&g->mu);
		if (!g->ending)
			pthread_cond_timedwait(&g->cv, &g->mu, &ts);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

void stopguard_begin(struct stopguard *g, struct lock_engine *eng,
		     const struct metrics *m)
{
	if (!g || !eng || !m || g->running)
		return;
	g->eng = eng;
	g->m = m;
	g->lost_before = metrics_get(m, MC_LOST);
	g->running = !pthread_create(&g->thread, NULL, guard_main, g);
}

void stopguard_end(struct stopguard *g)
{
	if (!g || !g->running)
		return;
	pthread_mutex_lock(&g->mu);
	g->ending = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thread, NULL);
	g->running = false;
}

void stopguard_free(struct stopguard *g)
{
	if (!g)
		return;
	stopguard_end(g);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
