/* session_view: session key -> (last read, when) under one mutex. Touched
 * by whoever judges a row (FUSE workers, the flk wait thread, lease
 * workers). */
#include "session_view.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "map.h"

#define VIEW_MAX 4096

struct sv_entry {
	int64_t read_mono_ms;
	bool absent;
	struct session_record rec;
};

struct session_view {
	pthread_mutex_t mu;
	struct smap map; /* mu */
};

struct session_view *session_view_new(void)
{
	struct session_view *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	pthread_mutex_init(&v->mu, NULL);
	smap_init(&v->map);
	return v;
}

static void free_entry(void *arg, const char *key, void *value)
{
	free(value);
}

void session_view_free(struct session_view *v)
{
	if (!v)
		return;
	smap_each(&v->map, free_entry, NULL);
	smap_fini(&v->map);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

int session_view_get(struct session_view *v, const char *key,
		     int64_t since_mono_ms, struct session_record *out)
{
	struct sv_entry *en;
	int rc = -EAGAIN;

	pthread_mutex_lock(&v->mu);
	en = smap_get(&v->map, key);
	if (en && en->read_mono_ms >= since_mono_ms) {
		rc = en->absent ? -ENOENT : 0;
		if (!rc)
			*out = en->rec;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

void session_view_put(struct session_view *v, const char *key,
		      int64_t read_mono_ms, const struct session_record *sr)
{
	struct sv_entry *en;

	pthread_mutex_lock(&v->mu);
	en = smap_get(&v->map, key);
	if (!en) {
		if (v->map.count >= VIEW_MAX) {
			smap_each(&v->map, free_entry, NULL);
			smap_fini(&v->map);
			smap_init(&v->map);
		}
		en = calloc(1, sizeof(*en));
		if (en && smap_put(&v->map, key, en)) {
			free(en);
			en = NULL;
		}
	}
	if (en) {
		en->read_mono_ms = read_mono_ms;
		en->absent = !sr;
		if (sr)
			en->rec = *sr;
	}
	pthread_mutex_unlock(&v->mu);
}

void session_view_forget(struct session_view *v, const char *key)
{
	pthread_mutex_lock(&v->mu);
	free(smap_del(&v->map, key));
	pthread_mutex_unlock(&v->mu);
}
