/* flk: file locks as distributed locks (see flk.h). Per key: the file lock
 * holding it (owner, kind, the engine's lock) and a FIFO of parked waiters.
 * The wait thread serves the head waiter of each key: locally held keys
 * are re-checked every poll_min_ms without a request; keys held elsewhere
 * are polled (one consistent GetItem, then the acquire when the row is gone
 * or judged expired) with jittered backoff. A waiter is answered exactly
 * once, by whoever removes it from its queue under f->mu. Interrupts find
 * waiters by request pointer and never dereference it. */
#include "flk.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "log.h"
#include "map.h"

#define TAG		 "flk"
#define FLK_ENTERING_MAX 64
#define FLK_SWEEP_MS	 1000
#define FLK_SWEEP_BATCH	 256

enum waiter_state {
	W_NEW,	  /* parked, not yet armed (interrupt function pending) */
	W_PARKED, /* eligible for the wait thread */
	W_BUSY,	  /* the wait thread is trying to acquire for it */
};

struct waiter {
	struct waiter *next;
	uint64_t owner;
	enum flk_kind kind;
	struct lock_holder holder;
	void *req;
	void *handle;
	enum waiter_state state;
	bool interrupted;
	int64_t next_poll_mono_ms;
	int64_t backoff_ms;
};

struct fkey {
	char *key;
	/* A thread is taking the key (one store request at most): others wait
	 * for its outcome instead of racing it, so that a grant is never
	 * undone under its holder. */
	bool taking;
	struct lock *lk; /* held by a file lock, or NULL */
	uint64_t owner;
	enum flk_kind kind;
	int64_t pid;
	struct waiter *head, *tail;
};

struct flk {
	struct flk_config cfg;
	struct lock_engine *eng;
	struct store *st;
	struct observe *obs;
	struct metrics *m;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct smap keys; /* mu: key -> struct fkey */
	/* Blocking requests inside flk_lock, not yet parked: an interrupt
	 * that reaches one of them is remembered here. */
	struct entering {
		void *req;
		bool interrupted;
	} entering[FLK_ENTERING_MAX];
	int n_entering;		    /* mu */
	int64_t next_sweep_mono_ms; /* wait thread only */
	pthread_t thread;
	bool running;
	bool stopping; /* mu */
	uint64_t rng;  /* wait thread only */
};

static int64_t now_mono(void)
{
	return clk_sys_mono_ms();
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct flk *flk_new(const struct flk_config *cfg, struct lock_engine *eng,
		    struct store *store, struct observe *obs, struct metrics *m)
{
	struct flk *f = calloc(1, sizeof(*f));
	int64_t lease = lock_engine_config(eng)->lease_ms;

	if (!f)
		return NULL;
	f->cfg = *cfg;
	if (f->cfg.poll_min_ms <= 0)
		f->cfg.poll_min_ms = 50;
	if (f->cfg.poll_max_ms <= 0)
		f->cfg.poll_max_ms = lease / 4 < 1000 ? lease / 4 : 1000;
	if (f->cfg.poll_max_ms < f->cfg.poll_min_ms)
		f->cfg.poll_max_ms = f->cfg.poll_min_ms;
	f->eng = eng;
	f->st = store;
	f->obs = obs;
	f->m = m;
	f->rng = (uint64_t)clk_sys_real_ms() | 1;
	pthread_mutex_init(&f->mu, NULL);
	clk_cond_init_mono(&f->cv);
	smap_init(&f->keys);
	return f;
}

/* ---- keys (mu held) ------------------------------------------------------ */

static struct fkey *fkey_get(struct flk *f, const char *key, bool create)
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

static void fkey_maybe_free(struct flk *f, struct fkey *fk)
{
	if (fk->lk || fk->head || fk->taking)
		return;
	smap_del(&f->keys, fk->key);
	free(fk->key);
	free(fk);
}

/* Drops the holder's lock if it was released (unlink) or lost meanwhile.
 * Returns true if a file lock still holds the key. */
static bool holder_alive(struct flk *f, struct fkey *fk)
{
	enum lock_state st;

	if (!fk->lk)
		return false;
	st = lock_get_state(f->eng, fk->lk);
	if (st == LOCK_HELD || st == LOCK_RELEASING)
		return true;
	lock_unref(f->eng, fk->lk);
	fk->lk = NULL;
	return false;
}

static void queue_remove(struct fkey *fk, struct waiter *w)
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
}

/* Finds the waiter of a request anywhere. */
struct find_req {
	void *req;
	struct fkey *fk;
	struct waiter *w;
};

static void find_req_cb(void *arg, const char *key, void *value)
{
	struct find_req *fr = arg;
	struct fkey *fk = value;
	struct waiter *w;

	for (w = fk->head; w && !fr->w; w = w->next) {
		if (w->req == fr->req) {
			fr->fk = fk;
			fr->w = w;
		}
	}
}

/* ---- acquiring --------------------------------------------------------- */

static int conflict_err(enum flk_kind kind)
{
	return kind == FLK_FLOCK ? -EWOULDBLOCK : -EAGAIN;
}

/* Tries to take key for a file lock (mu not held). 0 with *out; -EBUSY
 * when this mount holds it otherwise; -EEXIST when another owner does;
 * other -errno. With poll, a consistent read comes first so that a held
 * key costs a read, not a failed conditional write. */
static int try_take(struct flk *f, const char *key, const struct lock_holder *h,
		    struct lock *handle_lock, bool poll, struct lock **out)
{
	struct lock *local = lock_find(f->eng, key);
	int rc;

	if (local) {
		if (local == handle_lock) {
			/* The open file that acquired it with O_CREAT: the file
			 * lock owns it from now on. */
			lock_set_hold(f->eng, local, HOLD_FLOCK);
			*out = local;
			return 0;
		}
		lock_unref(f->eng, local);
		return -EBUSY;
	}
	if (poll) {
		struct lock_record row;
		struct observation ob;

		record_init(&row);
		rc = f->st->ops->get_lock(f->st, key, 0, &row);
		if (!rc) {
			observe_note(f->obs, key, row.rvn, row.lease_ms, &ob);
			rc = ob.expired ? 0 : -EEXIST;
		} else if (rc == -ENOENT) {
			rc = 0;
		}
		record_fini(&row);
		if (rc)
			return rc;
	}
	rc = lock_acquire_hold(f->eng, key, h, HOLD_FLOCK, out, NULL, NULL);
	/* A directory of that name (made after this file was opened) holds
	 * the name as a lock would, for as long as it exists. */
	return rc == -EISDIR ? -EEXIST : rc;
}

/* mu held. True if the requesting open file acquired the key itself (with
 * O_CREAT) and still holds it: then the key is already the requester's and
 * it is granted at once, ahead of waiters (who wait for that very lock). */
static bool own_lock(struct flk *f, const struct flk_req *r)
{
	return r->handle_lock &&
	       lock_get_state(f->eng, r->handle_lock) == LOCK_HELD;
}

/* mu held. The request's slot among the entering ones, or -1. */
static int entering_find(struct flk *f, void *req)
{
	for (int i = 0; i < f->n_entering; i++)
		if (f->entering[i].req == req)
			return i;
	return -1;
}

static void entering_add(struct flk *f, void *req)
{
	if (!req || f->n_entering == FLK_ENTERING_MAX)
		return; /* then an early interrupt is caught by flk_arm's
			 * caller checking the request (see fsops) */
	f->entering[f->n_entering].req = req;
	f->entering[f->n_entering++].interrupted = false;
}

/* Removes req; returns whether it was interrupted meanwhile. */
static bool entering_del(struct flk *f, void *req)
{
	int i = entering_find(f, req);
	bool intr;

	if (i < 0)
		return false;
	intr = f->entering[i].interrupted;
	f->entering[i] = f->entering[--f->n_entering];
	return intr;
}

static void set_holder(struct fkey *fk, struct lock *lk, uint64_t owner,
		       enum flk_kind kind, int64_t pid)
{
	fk->lk = lk;
	fk->owner = owner;
	fk->kind = kind;
	fk->pid = pid;
}

/* mu held: takes the key for r (fk->taking claimed around the store
 * request). 0: granted, fk's holder set; -EBUSY/-EEXIST: held; other
 * -errno. */
static int take_locked(struct flk *f, struct fkey **fkp,
		       const struct flk_req *r)
{
	struct lock *lk = NULL;
	struct fkey *fk = *fkp;
	int rc;

	fk->taking = true;
	pthread_mutex_unlock(&f->mu);
	rc = try_take(f, r->key, &r->holder, r->handle_lock, false, &lk);
	pthread_mutex_lock(&f->mu);
	/* The entry stays while taking is set: nobody frees it. */
	fk->taking = false;
	pthread_cond_broadcast(&f->cv);
	if (!rc)
		set_holder(fk, lk, r->owner, r->kind, r->holder.pid);
	return rc;
}

int flk_lock(struct flk *f, const struct flk_req *r)
{
	struct fkey *fk;
	struct waiter *w;
	bool intr;
	int rc;

	pthread_mutex_lock(&f->mu);
	if (r->wait)
		entering_add(f, r->req);
	/* One attempt at a time per key: wait for the outcome of another
	 * (bounded by its request's deadline). The entry may be freed while
	 * we wait: look it up again after every wake-up. */
	while ((fk = fkey_get(f, r->key, true)) && fk->taking)
		pthread_cond_wait(&f->cv, &f->mu);
	if (!fk) {
		if (r->wait)
			entering_del(f, r->req);
		pthread_mutex_unlock(&f->mu);
		return -ENOMEM;
	}
	if (holder_alive(f, fk)) {
		/* Already ours (the same open file or process): a no-op. */
		rc = fk->owner == r->owner && fk->kind == r->kind ? 0 : -EBUSY;
	} else if (fk->head && !own_lock(f, r)) {
		rc = -EBUSY; /* others queued first */
	} else {
		rc = take_locked(f, &fk, r);
		if (!rc) {
			struct lock *lk = fk->lk;

			intr = r->wait && entering_del(f, r->req);
			pthread_mutex_unlock(&f->mu);
			(void)intr; /* granted before the interrupt mattered */
			if (f->cfg.on_granted)
				f->cfg.on_granted(f->cfg.arg, r->handle, lk);
			metrics_inc(f->m, MC_ACQUIRES);
			return 0;
		}
	}
	intr = r->wait && entering_del(f, r->req);
	if (rc == 0 || (rc != -EBUSY && rc != -EEXIST)) {
		fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return rc;
	}
	if (!r->wait || intr) {
		fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return r->wait ? -EINTR : conflict_err(r->kind);
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return -ENOMEM;
	}
	w->owner = r->owner;
	w->kind = r->kind;
	w->holder = r->holder;
	w->req = r->req;
	w->handle = r->handle;
	w->state = W_NEW;
	w->backoff_ms = f->cfg.poll_min_ms;
	w->next_poll_mono_ms = now_mono() + f->cfg.poll_min_ms;
	if (fk->tail)
		fk->tail->next = w;
	else
		fk->head = w;
	fk->tail = w;
	pthread_mutex_unlock(&f->mu);
	metrics_inc(f->m, MC_WAITS);
	log_debug(TAG, "waiting key=%s pid=%lld", r->key,
		  (long long)r->holder.pid);
	return -EINPROGRESS;
}

void flk_arm(struct flk *f, void *req)
{
	struct find_req fr = { req, NULL, NULL };
	bool answer = false;

	pthread_mutex_lock(&f->mu);
	smap_each(&f->keys, find_req_cb, &fr);
	if (fr.w && fr.w->state == W_NEW) {
		if (fr.w->interrupted) {
			queue_remove(fr.fk, fr.w);
			fkey_maybe_free(f, fr.fk);
			answer = true;
		} else {
			fr.w->state = W_PARKED;
			pthread_cond_broadcast(&f->cv);
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (answer) {
		f->cfg.reply(req, EINTR);
		free(fr.w);
	}
}

void flk_interrupt(struct flk *f, void *req)
{
	struct find_req fr = { req, NULL, NULL };
	bool answer = false;

	pthread_mutex_lock(&f->mu);
	smap_each(&f->keys, find_req_cb, &fr);
	if (!fr.w) {
		/* Still inside flk_lock (its first attempt in flight): it
		 * answers EINTR instead of parking. */
		int i = entering_find(f, req);

		if (i >= 0)
			f->entering[i].interrupted = true;
	}
	if (fr.w) {
		fr.w->interrupted = true;
		if (fr.w->state == W_PARKED) {
			queue_remove(fr.fk, fr.w);
			fkey_maybe_free(f, fr.fk);
			answer = true;
		}
		/* W_NEW: flk_arm answers; W_BUSY: the wait thread does. */
	}
	pthread_mutex_unlock(&f->mu);
	if (answer) {
		f->cfg.reply(req, EINTR);
		free(fr.w);
	}
}

int flk_unlock(struct flk *f, const char *key, uint64_t owner,
	       enum flk_kind kind)
{
	struct lock *lk = NULL;
	struct fkey *fk;
	int rc = 0;

	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, key, false);
	if (fk && fk->lk && fk->owner == owner && fk->kind == kind) {
		lk = fk->lk;
		fk->lk = NULL;
	}
	pthread_mutex_unlock(&f->mu);
	if (!lk)
		return 0;
	rc = lock_release(f->eng, lk);
	lock_unref(f->eng, lk);
	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, key, false);
	if (fk && fk->head)
		fk->head->next_poll_mono_ms = now_mono(); /* next in line */
	if (fk)
		fkey_maybe_free(f, fk);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int flk_getlk(struct flk *f, const char *key, uint64_t owner, bool *held,
	      int64_t *pid)
{
	struct lock_record row;
	struct observation ob;
	struct lock *local;
	struct fkey *fk;
	int rc;

	*held = false;
	*pid = 0;
	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, key, false);
	if (fk && holder_alive(f, fk)) {
		*held = fk->owner != owner;
		*pid = fk->pid;
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	pthread_mutex_unlock(&f->mu);
	local = lock_find(f->eng, key);
	if (local) {
		*held = true;
		*pid = lock_holder(local)->pid;
		lock_unref(f->eng, local);
		return 0;
	}
	record_init(&row);
	rc = f->st->ops->get_lock(f->st, key, 0, &row);
	if (!rc) {
		observe_note(f->obs, key, row.rvn, row.lease_ms, &ob);
		*held = !ob.expired;
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	record_fini(&row);
	return rc;
}

size_t flk_key_count(struct flk *f)
{
	size_t n;

	pthread_mutex_lock(&f->mu);
	n = f->keys.count;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* ---- the wait thread ----------------------------------------------------- */

struct pick {
	struct flk *f;
	int64_t now;
	int64_t wake;
	struct fkey *fk;
};

static void pick_cb(void *arg, const char *key, void *value)
{
	struct pick *p = arg;
	struct fkey *fk = value;
	struct waiter *w = fk->head;

	if (!w || w->state != W_PARKED || fk->taking ||
	    holder_alive(p->f, fk)) {
		/* A local file lock holds it: flk_unlock wakes us. */
		return;
	}
	if (w->next_poll_mono_ms > p->now) {
		if (w->next_poll_mono_ms < p->wake)
			p->wake = w->next_poll_mono_ms;
		return;
	}
	if (!p->fk || w->next_poll_mono_ms < p->fk->head->next_poll_mono_ms)
		p->fk = fk;
}

/* Serves one due waiter; returns false when none was due (mu held). */
static bool serve_one(struct flk *f, int64_t *wake)
{
	struct pick p = { f, now_mono(), now_mono() + 1000, NULL };
	struct lock *lk = NULL;
	struct waiter *w;
	char *key;
	int rc, err;

	smap_each(&f->keys, pick_cb, &p);
	*wake = p.wake;
	if (!p.fk)
		return false;
	w = p.fk->head;
	w->state = W_BUSY;
	key = strdup(p.fk->key);
	p.fk->taking = true;
	pthread_mutex_unlock(&f->mu);
	rc = key ? try_take(f, key, &w->holder, NULL, true, &lk) : -ENOMEM;
	pthread_mutex_lock(&f->mu);
	/* The key's entry stays while it has waiters: w is still queued. */
	struct fkey *fk = p.fk;

	fk->taking = false;
	pthread_cond_broadcast(&f->cv);

	if (!rc && (w->interrupted || f->stopping)) {
		err = EINTR;
	} else if (!rc) {
		set_holder(fk, lk, w->owner, w->kind, w->holder.pid);
		err = 0;
	} else {
		int64_t lo, hi;

		if (rc != -EBUSY && rc != -EEXIST && log_enabled(LOGL_DEBUG)) {
			char why[LOG_ERRNO_MAX];

			log_debug(TAG, "waiting key=%s: %s (still waiting)",
				  key, log_errno(rc, why, sizeof(why)));
		}
		w->state = W_PARKED;
		if (rc == -EBUSY) {
			w->next_poll_mono_ms = now_mono() + f->cfg.poll_min_ms;
		} else {
			/* Full jitter within [backoff/2, backoff]. */
			hi = w->backoff_ms;
			lo = hi / 2;
			w->next_poll_mono_ms =
				now_mono() + lo +
				(int64_t)(rng_next(&f->rng) %
					  (uint64_t)(hi - lo + 1));
			w->backoff_ms = hi * 2 > f->cfg.poll_max_ms
						? f->cfg.poll_max_ms
						: hi * 2;
		}
		if (!w->interrupted && !f->stopping) {
			free(key);
			return true;
		}
		err = EINTR;
	}
	queue_remove(fk, w);
	fkey_maybe_free(f, fk);
	pthread_mutex_unlock(&f->mu);
	if (err && lk) {
		/* Interrupted while we took it: leave nothing behind. */
		lock_release(f->eng, lk);
		lock_unref(f->eng, lk);
	}
	if (!err && f->cfg.on_granted)
		f->cfg.on_granted(f->cfg.arg, w->handle, lk);
	if (f->cfg.reply(w->req, err) && !err) {
		/* The waiter is gone (killed): give the lock back. */
		flk_unlock(f, key, w->owner, w->kind);
	}
	if (!err)
		metrics_inc(f->m, MC_ACQUIRES);
	free(w);
	free(key);
	pthread_mutex_lock(&f->mu);
	return true;
}

/* Entries whose file lock was released (unlink) or lost meanwhile, with
 * nobody waiting: collected, then freed. */
struct sweep {
	struct flk *f;
	struct fkey *dead[FLK_SWEEP_BATCH];
	int n;
};

static void sweep_cb(void *arg, const char *key, void *value)
{
	struct sweep *sw = arg;
	struct fkey *fk = value;

	if (sw->n < FLK_SWEEP_BATCH && !fk->taking && !fk->head &&
	    !holder_alive(sw->f, fk))
		sw->dead[sw->n++] = fk;
}

/* mu held. */
static void sweep_keys(struct flk *f)
{
	struct sweep sw = { .f = f };

	smap_each(&f->keys, sweep_cb, &sw);
	for (int i = 0; i < sw.n; i++)
		fkey_maybe_free(f, sw.dead[i]);
}

static void *flk_main(void *arg)
{
	struct flk *f = arg;
	struct timespec ts;
	int64_t wake;

	pthread_mutex_lock(&f->mu);
	while (!f->stopping) {
		if (now_mono() >= f->next_sweep_mono_ms) {
			sweep_keys(f);
			f->next_sweep_mono_ms = now_mono() + FLK_SWEEP_MS;
		}
		if (serve_one(f, &wake))
			continue;
		if (wake > f->next_sweep_mono_ms)
			wake = f->next_sweep_mono_ms;
		clk_mono_timespec(wake, &ts);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int flk_start(struct flk *f)
{
	int rc = pthread_create(&f->thread, NULL, flk_main, f);

	if (rc)
		return -rc;
	f->running = true;
	return 0;
}

struct drain {
	struct waiter *list;
};

static void drain_cb(void *arg, const char *key, void *value)
{
	struct drain *d = arg;
	struct fkey *fk = value;

	while (fk->head) {
		struct waiter *w = fk->head;

		fk->head = w->next;
		w->next = d->list;
		d->list = w;
	}
	fk->tail = NULL;
}

void flk_stop(struct flk *f)
{
	struct drain d = { NULL };

	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (f->running)
		pthread_join(f->thread, NULL);
	f->running = false;
	pthread_mutex_lock(&f->mu);
	smap_each(&f->keys, drain_cb, &d);
	pthread_mutex_unlock(&f->mu);
	while (d.list) {
		struct waiter *w = d.list;

		d.list = w->next;
		f->cfg.reply(w->req, EINTR);
		free(w);
	}
}

static void free_key_cb(void *arg, const char *key, void *value)
{
	struct flk *f = arg;
	struct fkey *fk = value;

	while (fk->head) {
		struct waiter *w = fk->head;

		fk->head = w->next;
		free(w);
	}
	if (fk->lk)
		lock_unref(f->eng, fk->lk);
	free(fk->key);
	free(fk);
}

void flk_free(struct flk *f)
{
	if (!f)
		return;
	smap_each(&f->keys, free_key_cb, f);
	smap_fini(&f->keys);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
