/* observe: key -> (RVN, first seen) under one mutex; a FIFO of insertion
 * order bounds the size. Touched by FUSE workers (lookups, listings,
 * acquires) and the lease thread. */
#include "observe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "record.h"

struct obs {
	struct obs *older, *newer; /* FIFO by first sighting */
	char *key;
	char rvn[RECORD_RVN_MAX];
	int64_t lease_ms;
	int64_t first_seen_mono_ms;
	int64_t first_seen_real_ms;
};

struct observe {
	const struct clk *clk;
	size_t max;
	pthread_mutex_t mu;
	struct smap by_key;	     /* protected by mu */
	struct obs *oldest, *newest; /* protected by mu */
};

struct observe *observe_new(const struct clk *clk, size_t max_entries)
{
	struct observe *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->clk = clk;
	o->max = max_entries ? max_entries : 65536;
	pthread_mutex_init(&o->mu, NULL);
	smap_init(&o->by_key);
	return o;
}

static void unlink_obs(struct observe *o, struct obs *b)
{
	if (b->older)
		b->older->newer = b->newer;
	else
		o->oldest = b->newer;
	if (b->newer)
		b->newer->older = b->older;
	else
		o->newest = b->older;
	b->older = b->newer = NULL;
}

static void push_newest(struct observe *o, struct obs *b)
{
	b->older = o->newest;
	b->newer = NULL;
	if (o->newest)
		o->newest->newer = b;
	else
		o->oldest = b;
	o->newest = b;
}

static void drop(struct observe *o, struct obs *b)
{
	unlink_obs(o, b);
	smap_del(&o->by_key, b->key);
	free(b->key);
	free(b);
}

void observe_free(struct observe *o)
{
	if (!o)
		return;
	while (o->oldest)
		drop(o, o->oldest);
	smap_fini(&o->by_key);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static void judge(const struct observe *o, const struct obs *b,
		  struct observation *out)
{
	int64_t age = clk_mono_ms(o->clk) - b->first_seen_mono_ms;

	out->expired = age >= b->lease_ms;
	out->remaining_ms = out->expired ? 0 : b->lease_ms - age;
	out->first_seen_real_ms = b->first_seen_real_ms;
}

void observe_note(struct observe *o, const char *key, const char *rvn,
		  int64_t lease_ms, struct observation *out)
{
	struct obs *b;

	pthread_mutex_lock(&o->mu);
	b = smap_get(&o->by_key, key);
	if (b && strcmp(b->rvn, rvn)) {
		drop(o, b);
		b = NULL;
	}
	if (!b) {
		while (o->by_key.count >= o->max && o->oldest)
			drop(o, o->oldest);
		b = calloc(1, sizeof(*b));
		if (b && (b->key = strdup(key)) &&
		    !smap_put(&o->by_key, key, b)) {
			strncpy(b->rvn, rvn, sizeof(b->rvn) - 1);
			b->first_seen_mono_ms = clk_mono_ms(o->clk);
			b->first_seen_real_ms = clk_real_ms(o->clk);
			push_newest(o, b);
		} else {
			/* Out of memory: report "just seen", never expired. */
			if (b)
				free(b->key);
			free(b);
			pthread_mutex_unlock(&o->mu);
			out->expired = false;
			out->remaining_ms = lease_ms;
			out->first_seen_real_ms = clk_real_ms(o->clk);
			return;
		}
	}
	/* The lease we judge by is the one the row states now. */
	b->lease_ms = lease_ms;
	judge(o, b, out);
	pthread_mutex_unlock(&o->mu);
}

bool observe_expired_rvn(struct observe *o, const char *key, char *rvn_out)
{
	struct observation ob;
	struct obs *b;
	bool expired = false;

	pthread_mutex_lock(&o->mu);
	b = smap_get(&o->by_key, key);
	if (b) {
		judge(o, b, &ob);
		expired = ob.expired;
		if (expired)
			memcpy(rvn_out, b->rvn, RECORD_RVN_MAX);
	}
	pthread_mutex_unlock(&o->mu);
	return expired;
}

void observe_forget(struct observe *o, const char *key)
{
	struct obs *b;

	pthread_mutex_lock(&o->mu);
	b = smap_get(&o->by_key, key);
	if (b)
		drop(o, b);
	pthread_mutex_unlock(&o->mu);
}
