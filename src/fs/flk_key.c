/* flk_key: the state of one key of the file-lock layer: the engine's lock
 * its file locks hold, their holders (one exclusive, or any number
 * sharing the mount's one shared lock), its FIFO of parked waiters and
 * our mark on its row while a writer of ours waits. Everything here runs
 * with f->mu held (flk_int_unmark excepted); callers are the requests
 * (flk.c) and the wait thread and workers (flk_wait.c). */
#include "flk_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fkey *flk_int_fkey_get(struct flk *f, const char *key, bool create)
{
	struct fkey *fk = smap_get(&f->keys, key);

	if (fk || !create)
		return fk;
	fk = calloc(1, sizeof(*fk));
	if (!fk || !(fk->key = strdup(key)) || smap_put(&f->keys, key, fk)) {
		if (fk)
			free(fk->key);
		free(fk);
		return NULL;
	}
	return fk;
}

void flk_int_fkey_maybe_free(struct flk *f, struct fkey *fk)
{
	if (fk->lk || fk->head || fk->taking || fk->mark_v[0])
		return;
	smap_del(&f->keys, fk->key);
	free(fk->key);
	free(fk);
}

void flk_int_drop_holders(struct fkey *fk)
{
	while (fk->holders) {
		struct fholder *h = fk->holders;

		fk->holders = h->next;
		free(h);
	}
	fk->shared = false;
	fk->lent = false;
}

/* Drops the holders' lock if it was released (unlink) or lost meanwhile.
 * Returns true if file locks still hold the key. */
bool flk_int_holder_alive(struct flk *f, struct fkey *fk)
{
	enum lock_state st;

	if (!fk->lk)
		return false;
	st = lock_get_state(f->eng, fk->lk);
	if (st == LOCK_HELD || st == LOCK_RELEASING)
		return true;
	lock_unref(f->eng, fk->lk);
	fk->lk = NULL;
	flk_int_drop_holders(fk);
	return false;
}

/* A flock(2) lock belongs to one open file: its owner is the kernel's
 * open file (struct file), which the kernel reuses at once once freed,
 * while the release of the closed one comes later (FUSE sends it in the
 * background). Matched on the owner alone, a new open file's flock found
 * the closed one's lock and was granted as a no-op, and that release then
 * took the new file's lock: two holders. So its open file (handle, one per
 * FUSE open) must match too. An fcntl lock's owner is a process (or, for
 * F_OFD_SETLK, an open file), whatever descriptor asks. */
struct fholder *flk_int_find_holder(struct fkey *fk, uint64_t owner,
				    enum flk_kind kind, const void *handle)
{
	struct fholder *h;

	for (h = fk->holders; h; h = h->next)
		if (h->owner == owner && h->kind == kind &&
		    (kind != FLK_FLOCK || h->handle == handle))
			return h;
	return NULL;
}

/* Removes h; returns the lock to let go of when it was the last holder
 * (the caller does, without mu: flk_int_let_go with *lent), else NULL. */
struct lock *flk_int_remove_holder(struct fkey *fk, struct fholder *h,
				   bool *lent)
{
	struct fholder **pp;
	struct lock *lk = NULL;

	*lent = false;
	for (pp = &fk->holders; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			free(h);
			break;
		}
	}
	if (!fk->holders) {
		lk = fk->lk;
		*lent = fk->lent;
		fk->lk = NULL;
		fk->shared = false;
		fk->lent = false;
	}
	return lk;
}

void flk_int_lend(struct fkey *fk)
{
	fk->lent = true;
	fk->shared = false;
}

int flk_int_let_go(struct flk *f, struct lock *lk, bool lent)
{
	int rc = lent ? 0 : lock_release(f->eng, lk);

	lock_unref(f->eng, lk);
	return rc;
}

/* mu held: another mount's writer waits on fk's shared lock (seen by its
 * last renewal). */
bool flk_int_writer_waits(struct flk *f, struct fkey *fk)
{
	return fk->lk && fk->shared && lock_writer_waits(f->eng, fk->lk);
}

bool flk_int_writer_queued(const struct fkey *fk)
{
	for (const struct waiter *w = fk->head; w; w = w->next)
		if (!w->shared)
			return true;
	return false;
}

/* mu held. When no writer of ours waits on fk any more, its mark is to go:
 * its version is copied to v (the caller removes it without mu). */
static bool mark_to_clear(struct fkey *fk, char *v)
{
	if (!fk->mark_v[0] || flk_int_writer_queued(fk))
		return false;
	memcpy(v, fk->mark_v, RECORD_RVN_MAX);
	fk->mark_v[0] = '\0';
	return true;
}

void flk_int_enqueue(struct flk *f, struct fkey *fk, struct waiter *w)
{
	w->next = NULL;
	if (fk->tail) {
		fk->tail->next = w;
	} else {
		fk->head = w;
		fk->wprev = NULL;
		fk->wnext = f->waited;
		if (f->waited)
			f->waited->wprev = fk;
		f->waited = fk;
	}
	fk->tail = w;
}

void flk_int_enqueue_first(struct flk *f, struct fkey *fk, struct waiter *w)
{
	if (!fk->head) {
		flk_int_enqueue(f, fk, w);
		return;
	}
	w->next = fk->head;
	fk->head = w;
}

void flk_int_waited_del(struct flk *f, struct fkey *fk)
{
	if (fk->wprev)
		fk->wprev->wnext = fk->wnext;
	else if (f->waited == fk)
		f->waited = fk->wnext;
	if (fk->wnext)
		fk->wnext->wprev = fk->wprev;
	fk->wprev = fk->wnext = NULL;
}

static void queue_remove(struct flk *f, struct fkey *fk, struct waiter *w)
{
	struct waiter **pp;

	for (pp = &fk->head; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	fk->tail = NULL;
	for (w = fk->head; w; w = w->next)
		fk->tail = w;
	if (!fk->head)
		flk_int_waited_del(f, fk);
}

struct waiter *flk_int_find_req(struct flk *f, void *req, struct fkey **fkp)
{
	for (struct fkey *fk = f->waited; fk; fk = fk->wnext)
		for (struct waiter *w = fk->head; w; w = w->next)
			if (w->req == req) {
				*fkp = fk;
				return w;
			}
	*fkp = NULL;
	return NULL;
}

/* mu held. Adds a holder of fk; lk (referenced) becomes fk's lock when
 * it has none (the first holder). -ENOMEM. */
int flk_int_add_holder(struct fkey *fk, struct lock *lk, bool shared,
		       uint64_t owner, enum flk_kind kind, int64_t pid,
		       void *handle)
{
	struct fholder *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->owner = owner;
	h->kind = kind;
	h->pid = pid;
	h->handle = handle;
	h->next = fk->holders;
	fk->holders = h;
	if (!fk->lk) {
		fk->lk = lk;
		fk->shared = shared;
	}
	return 0;
}

/* mu held: the slot remembering owner's interrupted waiter of key, or
 * NULL; slots older than FLK_RESTART_MS are freed on the way. */
static struct restart *restart_find(struct flk *f, const char *key,
				    uint64_t owner, enum flk_kind kind)
{
	int64_t now = flk_int_now(f);
	struct restart *found = NULL;

	for (int i = 0; i < FLK_RESTARTS_MAX; i++) {
		struct restart *r = &f->restarts[i];

		if (r->key && now - r->at_mono_ms > FLK_RESTART_MS) {
			free(r->key);
			r->key = NULL;
		}
		if (r->key && !found && r->owner == owner && r->kind == kind &&
		    !strcmp(r->key, key))
			found = r;
	}
	return found;
}

void flk_int_restart_note(struct flk *f, const struct fkey *fk,
			  const struct waiter *w)
{
	struct restart *r = restart_find(f, fk->key, w->owner, w->kind);

	for (int i = 0; !r && i < FLK_RESTARTS_MAX; i++)
		if (!f->restarts[i].key)
			r = &f->restarts[i];
	/* None free (as many interrupted within FLK_RESTART_MS): it will
	 * queue anew. */
	if (!r)
		return;
	if (!r->key && !(r->key = strdup(fk->key)))
		return;
	r->owner = w->owner;
	r->kind = w->kind;
	r->since_mono_ms = w->since_mono_ms;
	r->at_mono_ms = flk_int_now(f);
}

void flk_int_restart_enqueue(struct flk *f, struct fkey *fk, struct waiter *w,
			     bool first)
{
	struct restart *r = restart_find(f, fk->key, w->owner, w->kind);
	struct waiter **pp;

	if (r) {
		w->since_mono_ms = r->since_mono_ms;
		free(r->key);
		r->key = NULL;
	}
	if (!r || !fk->head) {
		if (first)
			flk_int_enqueue_first(f, fk, w);
		else
			flk_int_enqueue(f, fk, w);
		return;
	}
	/* Ahead of those that came after the one interrupted. */
	for (pp = &fk->head; *pp && (*pp)->since_mono_ms <= w->since_mono_ms;
	     pp = &(*pp)->next)
		;
	w->next = *pp;
	*pp = w;
	if (!w->next)
		fk->tail = w;
}

void flk_int_restart_free(struct flk *f)
{
	for (int i = 0; i < FLK_RESTARTS_MAX; i++) {
		free(f->restarts[i].key);
		f->restarts[i].key = NULL;
	}
}

/* mu held: takes w off fk's queue for good; when it was the last writer
 * waiting, our mark on the row is to go (*um, v, key copied). */
void flk_int_dequeue(struct flk *f, struct fkey *fk, struct waiter *w, bool *um,
		     char *v, char **key)
{
	queue_remove(f, fk, w);
	*um = mark_to_clear(fk, v);
	*key = *um ? strdup(fk->key) : NULL;
	if (!*key)
		*um = false;
	flk_int_fkey_maybe_free(f, fk);
}

/* Without mu: removes our mark (see flk_int_dequeue). */
void flk_int_unmark(struct flk *f, bool um, const char *v, char *key)
{
	if (um)
		lock_writer_unmark(f->eng, key, v);
	free(key);
}
