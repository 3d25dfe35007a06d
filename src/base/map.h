/* map: two small hash maps used across the core: string keys (smap, which
 * owns a copy of each key) and 64-bit keys (imap). Values are borrowed
 * pointers. Not thread-safe: the owner's mutex protects a map. */
#ifndef LOCKFS_MAP_H
#define LOCKFS_MAP_H

#include <stddef.h>
#include <stdint.h>

struct map_slot;

struct smap {
	struct map_slot **buckets;
	size_t nbuckets;
	size_t count;
};

struct imap {
	struct map_slot **buckets;
	size_t nbuckets;
	size_t count;
};

void smap_init(struct smap *m);
/* Frees the map's storage (not the values). */
void smap_fini(struct smap *m);
void *smap_get(const struct smap *m, const char *key);
/* Inserts or replaces. 0 or -ENOMEM. */
int smap_put(struct smap *m, const char *key, void *value);
/* Removes and returns the value (NULL if absent). */
void *smap_del(struct smap *m, const char *key);
/* Calls fn for every entry; fn must not change the map. */
void smap_each(const struct smap *m,
	       void (*fn)(void *arg, const char *key, void *value), void *arg);

void imap_init(struct imap *m);
void imap_fini(struct imap *m);
void *imap_get(const struct imap *m, uint64_t key);
int imap_put(struct imap *m, uint64_t key, void *value);
void *imap_del(struct imap *m, uint64_t key);
void imap_each(const struct imap *m,
	       void (*fn)(void *arg, uint64_t key, void *value), void *arg);

#endif
