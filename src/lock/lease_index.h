/* lease_index: what the lease scheduler has to look at (see
 * lease_index.c). Every function is called with engine->mu held. */
#ifndef LOCKFS_LEASE_INDEX_H
#define LOCKFS_LEASE_INDEX_H

#include <stddef.h>

struct lock;
struct lock_engine;

/* reserve: room for n locks, -ENOMEM; note: lk's state, wants or due time
 * changed (call after any change that may make it due earlier; it wakes
 * the scheduler when lk is due before the scheduler means to look);
 * forget: lk leaves the engine's list. */
int lease_index_reserve_locked(struct lock_engine *e, size_t n);
void lease_index_note_locked(struct lock_engine *e, struct lock *lk);
void lease_index_forget_locked(struct lock_engine *e, struct lock *lk);
/* The held lock due first (the heap's top), or NULL; pop removes it. */
struct lock *lease_index_top_locked(struct lock_engine *e);
void lease_index_pop_locked(struct lock_engine *e);
/* Unlinks *pp (a place in the urgent list) and returns it. */
struct lock *lease_index_take_urgent_locked(struct lock_engine *e,
					    struct lock **pp);
void lease_index_free(struct lock_engine *e);

#endif
