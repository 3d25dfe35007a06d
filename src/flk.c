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

#define TAG "flk"

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
	if (fk->lk || fk->head)
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
	return lock_acquire_hold(f->eng, key, h, HOLD_FLOCK, out, NULL, NULL);
}

static void set_holder(struct fkey *fk, struct lock *lk, uint64_t owner,
		       enum flk_kind kind, int64_t pid)
{
	fk->lk = lk;
	fk->owner = owner;
	fk->kind = kind;
	fk->pid = pid;
}

int flk_lock(struct flk *f, const struct flk_req *r)
{
	struct lock *lk = NULL;
	struct fkey *fk;
	struct waiter *w;
	int rc;

	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, r->key, true);
	if (!fk) {
		pthread_mutex_unlock(&f->mu);
		return -ENOMEM;
	}
	if (holder_alive(f, fk)) {
		rc = fk->owner == r->owner && fk->kind == r->kind
			     ? 0
			     : -EBUSY; /* already ours: a no-op */
		if (rc == 0) {
			pthread_mutex_unlock(&f->mu);
			return 0;
		}
	} else if (fk->head) {
		rc = -EBUSY; /* others queued first */
	} else {
		pthread_mutex_unlock(&f->mu);
		rc = try_take(f, r->key, &r->holder, r->handle_lock, false,
			      &lk);
		pthread_mutex_lock(&f->mu);
		fk = fkey_get(f, r->key, true);
		if (!rc && fk && !holder_alive(f, fk)) {
			set_holder(fk, lk, r->owner, r->kind, r->holder.pid);
			pthread_mutex_unlock(&f->mu);
			if (f->cfg.on_granted)
				f->cfg.on_granted(f->cfg.arg, r->handle, lk);
			metrics_inc(f->m, MC_ACQUIRES);
			return 0;
		}
		if (!rc) {
			/* Lost a race with another file lock of this mount. */
			pthread_mutex_unlock(&f->mu);
			lock_release(f->eng, lk);
			lock_unref(f->eng, lk);
			pthread_mutex_lock(&f->mu);
			rc = -EBUSY;
		}
		if (!fk) {
			pthread_mutex_unlock(&f->mu);
			return -ENOMEM;
		}
	}
	if (rc != -EBUSY && rc != -EEXIST) {
		fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return rc;
	}
	if (!r->wait) {
		fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return conflict_err(r->kind);
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
	if (!rc && f->cfg.on_released)
		f->cfg.on_released(f->cfg.arg, key);
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

	if (!w || w->state != W_PARKED || holder_alive(p->f, fk)) {
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
	pthread_mutex_unlock(&f->mu);
	rc = key ? try_take(f, key, &w->holder, NULL, true, &lk) : -ENOMEM;
	pthread_mutex_lock(&f->mu);
	/* The key's entry stays while it has waiters: w is still queued. */
	struct fkey *fk = fkey_get(f, key, false);

	if (!rc && (w->interrupted || f->stopping)) {
		err = EINTR;
	} else if (!rc) {
		set_holder(fk, lk, w->owner, w->kind, w->holder.pid);
		err = 0;
	} else {
		int64_t lo, hi;

		if (rc != -EBUSY && rc != -EEXIST)
			log_debug(TAG, "waiting key=%s: %d (still waiting)",
				  key, rc);
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

static void *flk_main(void *arg)
{
	struct flk *f = arg;
	struct timespec ts;
	int64_t wake;

	pthread_mutex_lock(&f->mu);
	while (!f->stopping) {
		if (serve_one(f, &wake))
			continue;
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
