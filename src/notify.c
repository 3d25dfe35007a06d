/* notify: a bounded queue of entry invalidations and the thread that sends
 * them. Any thread queues (under n->mu); the notify thread sends, without
 * the mutex held. */
#define FUSE_USE_VERSION 314
#include "notify.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"

#define NOTIFY_QUEUE_MAX 256

struct inval {
	uint64_t parent;
	char name[NAMES_NAME_MAX + 1];
};

struct notify {
	struct fuse_session *se;
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;			  /* mu */
	struct inval q[NOTIFY_QUEUE_MAX]; /* mu: ring buffer */
	size_t head, count;		  /* mu */
};

struct notify *notify_new(void)
{
	struct notify *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	return n;
}

static void *notify_main(void *arg)
{
	struct notify *n = arg;

	pthread_mutex_lock(&n->mu);
	while (!n->stopping) {
		struct inval iv;
		int rc;

		if (!n->count) {
			pthread_cond_wait(&n->cv, &n->mu);
			continue;
		}
		iv = n->q[n->head];
		n->head = (n->head + 1) % NOTIFY_QUEUE_MAX;
		n->count--;
		pthread_mutex_unlock(&n->mu);
		rc = fuse_lowlevel_notify_inval_entry(n->se, iv.parent, iv.name,
						      strlen(iv.name));
		if (rc && rc != -ENOENT)
			log_debug("notify", "inval_entry %s: %d", iv.name, rc);
		pthread_mutex_lock(&n->mu);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

void notify_attach(struct notify *n, struct fuse_session *se)
{
	n->se = se;
}

int notify_start(struct notify *n)
{
	int rc = pthread_create(&n->thread, NULL, notify_main, n);

	if (rc)
		return -rc;
	n->running = true;
	return 0;
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	if (n->running) {
		pthread_mutex_lock(&n->mu);
		n->stopping = true;
		pthread_cond_broadcast(&n->cv);
		pthread_mutex_unlock(&n->mu);
		pthread_join(n->thread, NULL);
	}
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

void notify_inval_entry(void *arg, uint64_t parent, const char *name)
{
	struct notify *n = arg;
	struct inval *iv;

	if (!n || strlen(name) > NAMES_NAME_MAX)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->count == NOTIFY_QUEUE_MAX) {
		n->head = (n->head + 1) % NOTIFY_QUEUE_MAX;
		n->count--;
	}
	iv = &n->q[(n->head + n->count) % NOTIFY_QUEUE_MAX];
	iv->parent = parent;
	strcpy(iv->name, name);
	n->count++;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

void notify_poll_wake(void *ph)
{
	fuse_lowlevel_notify_poll(ph);
}

void notify_poll_destroy(void *ph)
{
	fuse_pollhandle_destroy(ph);
}
