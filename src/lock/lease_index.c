/* lease_index: what the lease scheduler has to look at, so that a pass costs
 * what is due, not what is held: a binary min-heap of the held locks by the
 * time of their next renewal, and a short list of the locks that want an
 * automatic release or a cleanup. The engine tells it (lease_index_note_locked)
 * whenever a lock's state, wants or busy/queued flags change in a way that
 * can make it due earlier; a lock whose due time moved later is corrected
 * when it reaches the top. A lock leaves both when it leaves the engine's
 * list. Threads: whoever holds engine->mu (every function here). */
#include <errno.h>
#include <stdlib.h>

#include "lease_index.h"
#include "lock_state.h"

static bool before(const struct lock *a, const struct lock *b)
{
	return a->next_due_mono_ms < b->next_due_mono_ms;
}

static void place(struct lock_engine *e, size_t i, struct lock *lk)
{
	e->hb_heap[i] = lk;
	lk->hb_idx = i + 1;
}

static void sift_up(struct lock_engine *e, size_t i)
{
	struct lock *lk = e->hb_heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!before(lk, e->hb_heap[parent]))
			break;
		place(e, i, e->hb_heap[parent]);
		i = parent;
	}
	place(e, i, lk);
}

static void sift_down(struct lock_engine *e, size_t i)
{
	struct lock *lk = e->hb_heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= e->hb_n)
			break;
		if (c + 1 < e->hb_n && before(e->hb_heap[c + 1], e->hb_heap[c]))
			c++;
		if (!before(e->hb_heap[c], lk))
			break;
		place(e, i, e->hb_heap[c]);
		i = c;
	}
	place(e, i, lk);
}

int lease_index_reserve_locked(struct lock_engine *e, size_t n)
{
	struct lock **h;
	size_t cap;

	if (n <= e->hb_cap)
		return 0;
	cap = e->hb_cap ? e->hb_cap * 2 : 64;
	while (cap < n)
		cap *= 2;
	h = realloc(e->hb_heap, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	e->hb_heap = h;
	e->hb_cap = cap;
	return 0;
}

static void heap_remove(struct lock_engine *e, struct lock *lk)
{
	size_t i = lk->hb_idx - 1;
	struct lock *last;

	lk->hb_idx = 0;
	last = e->hb_heap[--e->hb_n];
	if (last == lk)
		return;
	place(e, i, last);
	if (i > 0 && before(last, e->hb_heap[(i - 1) / 2]))
		sift_up(e, i);
	else
		sift_down(e, i);
}

/* Puts lk at its due time (it is in the heap or there is room: every lock
 * on the engine's list was reserved a place). */
static void heap_update(struct lock_engine *e, struct lock *lk)
{
	if (!lk->hb_idx) {
		if (e->hb_n >= e->hb_cap)
			return; /* cannot happen: reserved in list_add */
		place(e, e->hb_n++, lk);
	}
	sift_up(e, lk->hb_idx - 1);
	sift_down(e, lk->hb_idx - 1);
}

static bool wants_urgent(const struct lock *lk)
{
	return (lk->state == LOCK_HELD && lk->release_wanted) ||
	       (lk->state == LOCK_LOST && lk->cleanup_wanted);
}

void lease_index_note_locked(struct lock_engine *e, struct lock *lk)
{
	if (lk->state == LOCK_HELD && !lk->release_wanted)
		heap_update(e, lk);
	else if (lk->hb_idx)
		heap_remove(e, lk);
	if (wants_urgent(lk) && !lk->urgent) {
		lk->urgent = true;
		lk->urgent_next = e->urgent;
		e->urgent = lk;
	}
	/* Due before the scheduler means to look: it is woken. */
	if (lk->hb_idx || lk->urgent)
		lock_int_wake_scheduler_by_locked(e, lk->next_due_mono_ms);
}

void lease_index_forget_locked(struct lock_engine *e, struct lock *lk)
{
	struct lock **pp;

	if (lk->hb_idx)
		heap_remove(e, lk);
	if (!lk->urgent)
		return;
	for (pp = &e->urgent; *pp; pp = &(*pp)->urgent_next) {
		if (*pp == lk) {
			*pp = lk->urgent_next;
			break;
		}
	}
	lk->urgent = false;
	lk->urgent_next = NULL;
}

struct lock *lease_index_top_locked(struct lock_engine *e)
{
	return e->hb_n ? e->hb_heap[0] : NULL;
}

void lease_index_pop_locked(struct lock_engine *e)
{
	if (e->hb_n)
		heap_remove(e, e->hb_heap[0]);
}

struct lock *lease_index_take_urgent_locked(struct lock_engine *e,
					    struct lock **pp)
{
	struct lock *lk = *pp;

	*pp = lk->urgent_next;
	lk->urgent = false;
	lk->urgent_next = NULL;
	return lk;
}

void lease_index_free(struct lock_engine *e)
{
	free(e->hb_heap);
	e->hb_heap = NULL;
	e->hb_n = e->hb_cap = 0;
	e->urgent = NULL;
}
