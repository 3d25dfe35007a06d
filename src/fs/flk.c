/* flk: file locks as distributed locks (see flk.h). Per key: the engine's
 * lock the file locks hold, their holders (one exclusive, or any number
 * sharing the mount's one shared lock) and a FIFO of parked waiters. The
 * wait thread serves the head waiter of each key: a shared waiter behind
 * local shared holders is granted at once; other locally held keys are
 * re-checked every poll_min_ms without a request; keys held elsewhere are
 * polled (one consistent GetItem, then the acquire when the row admits
 * it: gone, judged expired, or shareable for a reader) with jittered
 * backoff. A writer waiting on a key read shared marks the row so that no
 * new reader joins it (lock_writer_mark), refreshes the mark every
 * heartbeat and removes it when no writer waits any more. A waiter is
 * answered exactly once, by whoever removes it from its queue under f->mu.
 * Interrupts find waiters by request pointer and never dereference it. */
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
	bool shared;
	struct lock_holder holder;
	void *req;
	void *handle;
	enum waiter_state state;
	bool interrupted;
	int64_t next_poll_mono_ms;
	int64_t backoff_ms;
};

/* One file lock holding a key: an open file (flock) or a process
 * (fcntl), known by its lock owner. */
struct fholder {
	struct fholder *next;
	uint64_t owner;
	enum flk_kind kind;
	int64_t pid;
};

struct fkey {
	char *key;
	/* A thread is taking the key (one store request at most): others wait
	 * for its outcome instead of racing it, so that a grant is never
	 * undone under its holder. */
	bool taking;
	struct lock *lk;	 /* held by file locks, or NULL */
	bool shared;		 /* lk is held shared by every holder */
	struct fholder *holders; /* non-empty exactly while lk is set */
	struct waiter *head, *tail;
	/* Our mark on the row while a writer of ours waits (wait thread and
	 * whoever dequeues the last writer; mu). */
	char mark_v[RECORD_RVN_MAX];
	int64_t mark_mono_ms;
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
	if (fk->lk || fk->head || fk->taking || fk->mark_v[0])
		return;
	smap_del(&f->keys, fk->key);
	free(fk->key);
	free(fk);
}

static void drop_holders(struct fkey *fk)
{
	while (fk->holders) {
		struct fholder *h = fk->holders;

		fk->holders = h->next;
		free(h);
	}
	fk->shared = false;
}

/* Drops the holders' lock if it was released (unlink) or lost meanwhile.
 * Returns true if file locks still hold the key. */
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
	drop_holders(fk);
	return false;
}

static struct fholder *find_holder(struct fkey *fk, uint64_t owner,
				   enum flk_kind kind)
{
	struct fholder *h;

	for (h = fk->holders; h; h = h->next)
		if (h->owner == owner && h->kind == kind)
			return h;
	return NULL;
}

/* Removes h; returns the lock to release when it was the last holder
 * (the caller releases it without mu), else NULL. */
static struct lock *remove_holder(struct fkey *fk, struct fholder *h)
{
	struct fholder **pp;
	struct lock *lk = NULL;

	for (pp = &fk->holders; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			free(h);
			break;
		}
	}
	if (!fk->holders) {
		lk = fk->lk;
		fk->lk = NULL;
		fk->shared = false;
	}
	return lk;
}

/* mu held: another mount's writer waits on fk's shared lock (seen by its
 * last renewal). */
static bool writer_waits(struct flk *f, struct fkey *fk)
{
	return fk->lk && fk->shared && lock_writer_waits(f->eng, fk->lk);
}

static bool has_writer_waiting(const struct fkey *fk)
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
	if (!fk->mark_v[0] || has_writer_waiting(fk))
		return false;
	memcpy(v, fk->mark_v, RECORD_RVN_MAX);
	fk->mark_v[0] = '\0';
	return true;
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

/* A writer waiting on a key read shared (row): marks the row, or refreshes
 * our mark once a heartbeat old, so that no new reader joins it. The mark
 * (fk's, reached only by the thread holding fk->taking) is our mount's:
 * every writer of ours waiting on the key keeps the same. */
static void mark_row(struct flk *f, const char *key,
		     const struct lock_record *row, char *mark_v,
		     int64_t *mark_mono_ms)
{
	int64_t hb = lock_engine_config(f->eng)->heartbeat_ms;
	bool ours =
		row->writer_id && mark_v[0] &&
		!strcmp(row->writer_id, lock_engine_config(f->eng)->owner) &&
		!strcmp(row->writer_v, mark_v);

	if (!row->shared || (ours && now_mono() - *mark_mono_ms < hb))
		return;
	if (!lock_writer_mark(f->eng, key, row, mark_v))
		*mark_mono_ms = now_mono();
}

/* Tries to take key for a file lock (mu not held). 0 with *out; -EBUSY
 * when this mount holds it otherwise; -EEXIST when another owner does;
 * other -errno. With poll, a consistent read comes first so that a held
 * key costs a read, not a failed conditional write; a writer's poll that
 * finds the row shared marks it (mark_v, *mark_mono_ms: fk's mark). A
 * shared request that finds the open file's own O_CREAT lock downgrades
 * it. */
static int try_take(struct flk *f, const char *key, const struct lock_holder *h,
		    struct lock *handle_lock, bool shared, bool poll,
		    struct lock **out, char *mark_v, int64_t *mark_mono_ms)
{
	struct lock *local = lock_find(f->eng, key);
	int rc;

	if (local) {
		if (local == handle_lock) {
			/* The open file that acquired it with O_CREAT: the file
			 * lock owns it from now on. */
			lock_set_hold(f->eng, local, HOLD_FLOCK);
			rc = shared ? lock_downgrade(f->eng, local) : 0;
			if (rc) {
				lock_unref(f->eng, local);
				return rc;
			}
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
			rc = lock_row_admits(f->eng, &row, shared, ob.expired)
				     ? 0
				     : -EEXIST;
			if (rc && !shared && mark_v)
				mark_row(f, key, &row, mark_v, mark_mono_ms);
		} else if (rc == -ENOENT) {
			rc = 0;
		}
		record_fini(&row);
		if (rc)
			return rc;
	}
	rc = shared ? lock_acquire_shared(f->eng, key, h, HOLD_FLOCK, out, NULL,
					  NULL)
		    : lock_acquire_hold(f->eng, key, h, HOLD_FLOCK, out, NULL,
					NULL);
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

/* mu held. Adds a holder of fk; lk (referenced) becomes fk's lock when
 * it has none (the first holder). -ENOMEM. */
static int add_holder(struct fkey *fk, struct lock *lk, bool shared,
		      uint64_t owner, enum flk_kind kind, int64_t pid)
{
	struct fholder *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->owner = owner;
	h->kind = kind;
	h->pid = pid;
	h->next = fk->holders;
	fk->holders = h;
	if (!fk->lk) {
		fk->lk = lk;
		fk->shared = shared;
	}
	return 0;
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
	rc = try_take(f, r->key, &r->holder, r->handle_lock, r->shared, false,
		      &lk, NULL, NULL);
	pthread_mutex_lock(&f->mu);
	/* The entry stays while taking is set: nobody frees it. */
	fk->taking = false;
	pthread_cond_broadcast(&f->cv);
	if (!rc &&
	    add_holder(fk, lk, r->shared, r->owner, r->kind, r->holder.pid)) {
		pthread_mutex_unlock(&f->mu);
		lock_release(f->eng, lk);
		lock_unref(f->eng, lk);
		pthread_mutex_lock(&f->mu);
		rc = -ENOMEM;
	}
	return rc;
}

/* mu held, fk's lock alive and held by r's owner in the other mode (a
 * conversion, flock(2)'s rules). Exclusive to shared: one write, atomic
 * (lock_downgrade), 0 or -errno. Shared to exclusive: not atomic: the
 * share is dropped (the lock released when it was the last) and 1 is
 * returned: the caller goes on as for a new exclusive request, which may
 * wait or fail. *fkp may be freed meanwhile: looked up again. */
static int convert_locked(struct flk *f, struct fkey **fkp,
			  const struct flk_req *r, struct fholder *h)
{
	struct fkey *fk = *fkp;
	struct lock *lk;
	int rc;

	if (r->shared) {
		lk = fk->lk;
		lock_ref(lk);
		fk->taking = true;
		pthread_mutex_unlock(&f->mu);
		rc = lock_downgrade(f->eng, lk);
		pthread_mutex_lock(&f->mu);
		fk->taking = false;
		pthread_cond_broadcast(&f->cv);
		if (!rc && fk->lk == lk)
			fk->shared = true;
		lock_unref(f->eng, lk);
		return rc;
	}
	lk = remove_holder(fk, h);
	if (lk) {
		pthread_mutex_unlock(&f->mu);
		lock_release(f->eng, lk);
		lock_unref(f->eng, lk);
		pthread_mutex_lock(&f->mu);
		pthread_cond_broadcast(&f->cv);
	}
	while ((*fkp = fkey_get(f, r->key, true)) && (*fkp)->taking)
		pthread_cond_wait(&f->cv, &f->mu);
	return *fkp ? 1 : -ENOMEM;
}

int flk_lock(struct flk *f, const struct flk_req *r)
{
	struct fkey *fk;
	struct waiter *w;
	bool intr, granted;
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
again:
	granted = false;
	if (holder_alive(f, fk)) {
		struct fholder *h = find_holder(fk, r->owner, r->kind);

		if (h && fk->shared == r->shared) {
			/* Already ours so (the same open file or process): a
			 * no-op. */
			rc = 0;
		} else if (h) {
			rc = convert_locked(f, &fk, r, h);
			if (rc == 1)
				goto again; /* an upgrade: as a new request */
		} else if (r->shared && fk->shared && !fk->head &&
			   !writer_waits(f, fk)) {
			/* Another local reader: it shares the mount's lock,
			 * without a request. Not past a queued waiter, nor
			 * while another mount's writer waits (a writer must
			 * not starve). */
			rc = add_holder(fk, fk->lk, true, r->owner, r->kind,
					r->holder.pid);
			granted = !rc;
		} else {
			rc = -EBUSY;
		}
	} else if (fk->head && !own_lock(f, r)) {
		rc = -EBUSY; /* others queued first */
	} else {
		rc = take_locked(f, &fk, r);
		granted = !rc;
	}
	if (granted) {
		struct lock *lk = fk->lk;

		lock_ref(lk);
		intr = r->wait && entering_del(f, r->req);
		pthread_mutex_unlock(&f->mu);
		(void)intr; /* granted before the interrupt mattered */
		if (f->cfg.on_granted)
			f->cfg.on_granted(f->cfg.arg, r->handle, lk);
		lock_unref(f->eng, lk);
		metrics_inc(f->m, MC_ACQUIRES);
		return 0;
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
	w->shared = r->shared;
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

/* mu held: takes w off fk's queue for good; when it was the last writer
 * waiting, our mark on the row is to go (*unmark, v, key copied). */
static void dequeue(struct flk *f, struct fkey *fk, struct waiter *w,
		    bool *unmark, char *v, char **key)
{
	queue_remove(fk, w);
	*unmark = mark_to_clear(fk, v);
	*key = *unmark ? strdup(fk->key) : NULL;
	if (!*key)
		*unmark = false;
	fkey_maybe_free(f, fk);
}

/* Without mu: removes our mark (see dequeue). */
static void unmark(struct flk *f, bool unmark, const char *v, char *key)
{
	if (unmark)
		lock_writer_unmark(f->eng, key, v);
	free(key);
}

void flk_arm(struct flk *f, void *req)
{
	struct find_req fr = { req, NULL, NULL };
	bool answer = false, um = false;
	char v[RECORD_RVN_MAX], *key = NULL;

	pthread_mutex_lock(&f->mu);
	smap_each(&f->keys, find_req_cb, &fr);
	if (fr.w && fr.w->state == W_NEW) {
		if (fr.w->interrupted) {
			dequeue(f, fr.fk, fr.w, &um, v, &key);
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
	unmark(f, um, v, key);
}

void flk_interrupt(struct flk *f, void *req)
{
	struct find_req fr = { req, NULL, NULL };
	bool answer = false, um = false;
	char v[RECORD_RVN_MAX], *key = NULL;

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
			dequeue(f, fr.fk, fr.w, &um, v, &key);
			answer = true;
		}
		/* W_NEW: flk_arm answers; W_BUSY: the wait thread does. */
	}
	pthread_mutex_unlock(&f->mu);
	if (answer) {
		f->cfg.reply(req, EINTR);
		free(fr.w);
	}
	unmark(f, um, v, key);
}

int flk_unlock(struct flk *f, const char *key, uint64_t owner,
	       enum flk_kind kind)
{
	struct lock *lk = NULL;
	struct fkey *fk;
	int rc = 0;

	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, key, false);
	if (fk && fk->lk) {
		struct fholder *h = find_holder(fk, owner, kind);

		/* The lock goes with its last holder; other local readers
		 * keep it. */
		if (h)
			lk = remove_holder(fk, h);
		if (h && !lk && fk->head)
			fk->head->next_poll_mono_ms = now_mono();
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

int flk_getlk(struct flk *f, const char *key, uint64_t owner, bool shared,
	      bool *held, bool *held_shared, int64_t *pid)
{
	struct lock_record row;
	struct observation ob;
	struct lock *local;
	struct fkey *fk;
	int rc;

	bool ours = false; /* the asker shares the mount's shared lock */
	const char *me = lock_engine_config(f->eng)->owner;
	size_t others = 0;

	*held = *held_shared = false;
	*pid = 0;
	pthread_mutex_lock(&f->mu);
	fk = fkey_get(f, key, false);
	if (fk && holder_alive(f, fk)) {
		/* Another owner's lock conflicts, unless both are shared. */
		for (struct fholder *h = fk->holders; h; h = h->next) {
			if (h->owner == owner)
				continue;
			*held = !(shared && fk->shared);
			*held_shared = fk->shared;
			*pid = h->pid;
			break;
		}
		/* Alone here with a share: other mounts' readers still
		 * conflict with a write lock. */
		ours = !*held_shared && fk->shared && !shared;
		pthread_mutex_unlock(&f->mu);
		if (!ours)
			return 0;
	} else {
		pthread_mutex_unlock(&f->mu);
	}
	local = ours ? NULL : lock_find(f->eng, key);
	if (local) {
		*held_shared = lock_is_shared(f->eng, local);
		*held = !(shared && *held_shared);
		*pid = lock_holder(local)->pid;
		lock_unref(f->eng, local);
		return 0;
	}
	record_init(&row);
	rc = f->st->ops->get_lock(f->st, key, 0, &row);
	if (!rc) {
		observe_note(f->obs, key, row.rvn, row.lease_ms, &ob);
		/* Held shared elsewhere: a share for a read lock, a conflict
		 * for a write lock; a shared row without readers is free. */
		for (size_t i = 0; i < row.n_readers; i++)
			others += !ours || strcmp(row.readers[i].id, me);
		*held_shared = row.shared;
		*held = !ob.expired && !(row.shared && !others) &&
			!(shared && row.shared);
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

	if (!w || w->state != W_PARKED || fk->taking)
		return;
	if (holder_alive(p->f, fk) &&
	    (!fk->shared || (w->shared && writer_waits(p->f, fk)))) {
		/* A local file lock holds it (or our readers do while
		 * another mount's writer waits): flk_unlock wakes us. */
		return;
	}
	/* Free, held elsewhere, or shared here: a reader at the head joins
	 * the local readers at once; a writer polls the row (marking it). */
	if (w->next_poll_mono_ms > p->now && !(w->shared && fk->lk)) {
		if (w->next_poll_mono_ms < p->wake)
			p->wake = w->next_poll_mono_ms;
		return;
	}
	if (!p->fk || w->next_poll_mono_ms < p->fk->head->next_poll_mono_ms)
		p->fk = fk;
}

/* mu held: the next poll of w, with full jitter within [backoff/2,
 * backoff] (a key held elsewhere), or soon (-EBUSY: held here). */
static void reschedule(struct flk *f, struct waiter *w, int rc)
{
	int64_t lo, hi;

	w->state = W_PARKED;
	if (rc == -EBUSY) {
		w->next_poll_mono_ms = now_mono() + f->cfg.poll_min_ms;
		return;
	}
	hi = w->backoff_ms;
	lo = hi / 2;
	w->next_poll_mono_ms =
		now_mono() + lo +
		(int64_t)(rng_next(&f->rng) % (uint64_t)(hi - lo + 1));
	w->backoff_ms =
		hi * 2 > f->cfg.poll_max_ms ? f->cfg.poll_max_ms : hi * 2;
}

/* A writer waiting behind our own readers (mu not held, fk->taking): the
 * row is shared by us and maybe other mounts; it is marked so that no
 * other mount's reader joins meanwhile. */
static void mark_behind_readers(struct flk *f, const char *key, char *mark_v,
				int64_t *mark_mono_ms)
{
	struct lock_record row;

	record_init(&row);
	if (!f->st->ops->get_lock(f->st, key, 0, &row))
		mark_row(f, key, &row, mark_v, mark_mono_ms);
	record_fini(&row);
}

/* Serves one due waiter; returns false when none was due (mu held). */
static bool serve_one(struct flk *f, int64_t *wake)
{
	struct pick p = { f, now_mono(), now_mono() + 1000, NULL };
	char mark_v[RECORD_RVN_MAX], v[RECORD_RVN_MAX], *ukey = NULL;
	struct lock *lk = NULL;
	int64_t mark_mono_ms;
	struct waiter *w;
	struct fkey *fk;
	bool local, um = false;
	char *key;
	int rc, err;

	smap_each(&f->keys, pick_cb, &p);
	*wake = p.wake;
	if (!p.fk)
		return false;
	fk = p.fk;
	w = fk->head;
	local = holder_alive(f, fk); /* shared here (pick_cb) */
	if (local && w->shared) {
		/* A reader behind our readers: it shares the mount's lock. */
		rc = add_holder(fk, fk->lk, true, w->owner, w->kind,
				w->holder.pid);
		if (rc) {
			reschedule(f, w, -EBUSY);
			return true;
		}
		lk = fk->lk;
		lock_ref(lk);
		key = strdup(fk->key);
		err = 0;
		goto answer;
	}
	w->state = W_BUSY;
	key = strdup(fk->key);
	fk->taking = true;
	memcpy(mark_v, fk->mark_v, sizeof(mark_v));
	mark_mono_ms = fk->mark_mono_ms;
	pthread_mutex_unlock(&f->mu);
	if (!key)
		rc = -ENOMEM;
	else if (local)
		mark_behind_readers(f, key, mark_v, &mark_mono_ms), rc = -EBUSY;
	else
		rc = try_take(f, key, &w->holder, NULL, w->shared, true, &lk,
			      w->shared ? NULL : mark_v, &mark_mono_ms);
	pthread_mutex_lock(&f->mu);
	/* The key's entry stays while it has waiters: w is still queued. */
	fk->taking = false;
	memcpy(fk->mark_v, mark_v, sizeof(mark_v));
	fk->mark_mono_ms = mark_mono_ms;
	pthread_cond_broadcast(&f->cv);

	if (!rc && (w->interrupted || f->stopping)) {
		err = EINTR;
	} else if (!rc) {
		err = add_holder(fk, lk, w->shared, w->owner, w->kind,
				 w->holder.pid)
			      ? ENOMEM
			      : 0;
	} else {
		if (rc != -EBUSY && rc != -EEXIST && log_enabled(LOGL_DEBUG)) {
			char why[LOG_ERRNO_MAX];

			log_debug(TAG, "waiting key=%s: %s (still waiting)",
				  key, log_errno(rc, why, sizeof(why)));
		}
		reschedule(f, w, rc);
		if (local) /* a mark refresh: once a heartbeat at most */
			w->next_poll_mono_ms =
				now_mono() +
				lock_engine_config(f->eng)->heartbeat_ms / 2;
		if (!w->interrupted && !f->stopping) {
			free(key);
			return true;
		}
		err = EINTR;
	}
	if (!err)
		lock_ref(lk); /* the answer's, until on_granted took its own */
answer:
	dequeue(f, fk, w, &um, v, &ukey);
	pthread_mutex_unlock(&f->mu);
	if (err && lk) {
		/* Interrupted while we took it: leave nothing behind. */
		lock_release(f->eng, lk);
		lock_unref(f->eng, lk);
	}
	if (!err && f->cfg.on_granted)
		f->cfg.on_granted(f->cfg.arg, w->handle, lk);
	if (!err)
		lock_unref(f->eng, lk);
	if (f->cfg.reply(w->req, err) && !err) {
		/* The waiter is gone (killed): give the lock back. */
		flk_unlock(f, key, w->owner, w->kind);
	}
	if (!err)
		metrics_inc(f->m, MC_ACQUIRES);
	unmark(f, um, v, ukey);
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
	struct drain_mark {
		struct drain_mark *next;
		char *key;
		char v[RECORD_RVN_MAX];
	} * marks;
};

static void drain_cb(void *arg, const char *key, void *value)
{
	struct drain *d = arg;
	struct fkey *fk = value;
	struct drain_mark *m;

	/* Our marks go with our writers, once the mutex is dropped
	 * (DynamoDB permitting: a mark left behind is stale after a
	 * lease). */
	m = fk->mark_v[0] ? calloc(1, sizeof(*m)) : NULL;
	if (m && (m->key = strdup(fk->key))) {
		memcpy(m->v, fk->mark_v, sizeof(m->v));
		m->next = d->marks;
		d->marks = m;
	} else {
		free(m);
	}
	fk->mark_v[0] = '\0';

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
	struct drain d = { NULL, NULL };

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
	while (d.marks) {
		struct drain_mark *m = d.marks;

		d.marks = m->next;
		lock_writer_unmark(f->eng, m->key, m->v);
		free(m->key);
		free(m);
	}
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
	drop_holders(fk);
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
