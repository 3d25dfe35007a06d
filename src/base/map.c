/* map: chained hash tables that double when the load passes 1. No shared
 * state; callers serialise access. */
#include "map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct map_slot {
	struct map_slot *next;
	uint64_t hash;
	uint64_t ikey;
	char *skey;
	void *value;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int grow(struct map_slot ***buckets, size_t *nbuckets, size_t count)
{
	size_t n = *nbuckets ? *nbuckets * 2 : 16, i;
	struct map_slot **nb;

	if (count < *nbuckets)
		return 0;
	nb = calloc(n, sizeof(*nb));
	if (!nb)
		return *nbuckets ? 0 : -ENOMEM; /* keep working, just slower */
	for (i = 0; i < *nbuckets; i++) {
		struct map_slot *s = (*buckets)[i], *next;

		for (; s; s = next) {
			next = s->next;
			s->next = nb[s->hash & (n - 1)];
			nb[s->hash & (n - 1)] = s;
		}
	}
	free(*buckets);
	*buckets = nb;
	*nbuckets = n;
	return 0;
}

static void fini(struct map_slot **buckets, size_t nbuckets)
{
	size_t i;

	for (i = 0; i < nbuckets; i++) {
		struct map_slot *s = buckets[i], *next;

		for (; s; s = next) {
			next = s->next;
			free(s->skey);
			free(s);
		}
	}
	free(buckets);
}

void smap_init(struct smap *m)
{
	memset(m, 0, sizeof(*m));
}

void smap_fini(struct smap *m)
{
	fini(m->buckets, m->nbuckets);
	smap_init(m);
}

static struct map_slot **sfind(const struct smap *m, const char *key,
			       uint64_t h)
{
	struct map_slot **pp;

	if (!m->nbuckets)
		return NULL;
	for (pp = &m->buckets[h & (m->nbuckets - 1)]; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && !strcmp((*pp)->skey, key))
			return pp;
	return NULL;
}

void *smap_get(const struct smap *m, const char *key)
{
	struct map_slot **pp = sfind(m, key, hash_str(key));

	return pp ? (*pp)->value : NULL;
}

int smap_put(struct smap *m, const char *key, void *value)
{
	uint64_t h = hash_str(key);
	struct map_slot **pp = sfind(m, key, h), *s;

	if (pp) {
		(*pp)->value = value;
		return 0;
	}
	if (grow(&m->buckets, &m->nbuckets, m->count))
		return -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->skey = strdup(key))) {
		free(s);
		return -ENOMEM;
	}
	s->hash = h;
	s->value = value;
	s->next = m->buckets[h & (m->nbuckets - 1)];
	m->buckets[h & (m->nbuckets - 1)] = s;
	m->count++;
	return 0;
}

void *smap_del(struct smap *m, const char *key)
{
	struct map_slot **pp = sfind(m, key, hash_str(key)), *s;
	void *v;

	if (!pp)
		return NULL;
	s = *pp;
	*pp = s->next;
	v = s->value;
	free(s->skey);
	free(s);
	m->count--;
	return v;
}

void smap_each(const struct smap *m,
	       void (*fn)(void *arg, const char *key, void *value), void *arg)
{
	size_t i;

	for (i = 0; i < m->nbuckets; i++) {
		struct map_slot *s;

		for (s = m->buckets[i]; s; s = s->next)
			fn(arg, s->skey, s->value);
	}
}

void imap_init(struct imap *m)
{
	memset(m, 0, sizeof(*m));
}

void imap_fini(struct imap *m)
{
	fini(m->buckets, m->nbuckets);
	imap_init(m);
}

static struct map_slot **ifind(const struct imap *m, uint64_t key)
{
	struct map_slot **pp;

	if (!m->nbuckets)
		return NULL;
	for (pp = &m->buckets[hash_u64(key) & (m->nbuckets - 1)]; *pp;
	     pp = &(*pp)->next)
		if ((*pp)->ikey == key)
			return pp;
	return NULL;
}

void *imap_get(const struct imap *m, uint64_t key)
{
	struct map_slot **pp = ifind(m, key);

	return pp ? (*pp)->value : NULL;
}

int imap_put(struct imap *m, uint64_t key, void *value)
{
	struct map_slot **pp = ifind(m, key), *s;
	uint64_t h = hash_u64(key);

	if (pp) {
		(*pp)->value = value;
		return 0;
	}
	if (grow(&m->buckets, &m->nbuckets, m->count))
		return -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->hash = h;
	s->ikey = key;
	s->value = value;
	s->next = m->buckets[h & (m->nbuckets - 1)];
	m->buckets[h & (m->nbuckets - 1)] = s;
	m->count++;
	return 0;
}

void *imap_del(struct imap *m, uint64_t key)
{
	struct map_slot **pp = ifind(m, key), *s;
	void *v;

	if (!pp)
		return NULL;
	s = *pp;
	*pp = s->next;
	v = s->value;
	free(s);
	m->count--;
	return v;
}

void imap_each(const struct imap *m,
	       void (*fn)(void *arg, uint64_t key, void *value), void *arg)
{
	size_t i;

	for (i = 0; i < m->nbuckets; i++) {
		struct map_slot *s;

		for (s = m->buckets[i]; s; s = s->next)
			fn(arg, s->ikey, s->value);
	}
}
