/* flk: file locks as distributed locks (see flk.h): the requests. A
 * request takes its key at once when it can (a local reader shares the
 * mount's shared lock without a request; otherwise one attempt at a time
 * per key, flk_take.c), converts a lock as flock(2) does, or parks as a
 * waiter that the wait thread (flk_wait.c) serves later (a blocking
 * request whose first try DynamoDB did not answer parks too). A waiter is
 * answered exactly once, by whoever removes it from its queue under f->mu.
 * Interrupts find waiters by request pointer and never dereference it.
 * Threads: FUSE workers (requests, interrupts) and the wait workers
 * (flk_unlock of a grant whose requester is gone); f->mu as in
 * flk_int.h. */
#include "flk_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock_rows.h"
#include "log.h"

#define TAG "flk"

struct flk *flk_new(const struct flk_config *cfg, struct lock_engine *eng,
		    struct metrics *m)
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
	f->host = cfg->host ? cfg->host : host_system();
	f->eng = eng;
	f->m = m;
	f->rng = (uint64_t)clk_real_ms(f->host->clk) | 1;
	pthread_mutex_init(&f->mu, NULL);
	clk_cond_init_mono(&f->cv);
	pthread_cond_init(&f->job_cv, NULL);
	smap_init(&f->keys);
	return f;
}

static int conflict_err(enum flk_kind kind)
{
	return kind == FLK_FLOCK ? -EWOULDBLOCK : -EAGAIN;
}

/* mu held. True if the requesting open file acquired the key itself (with
 * O_CREAT) and still holds it, or the requester's process group does by a
 * create whose file is closed (lock_held_by_group): then the key is
 * already the requester's and it is granted at once, ahead of waiters (who
 * wait for that very lock). */
static bool own_lock(struct flk *f, const struct flk_req *r)
{
	struct lock *local;
	bool ours;

	if (r->handle_lock)
		return lock_get_state(f->eng, r->handle_lock) == LOCK_HELD;
	local = lock_find(f->eng, r->key);
	if (!local)
		return false;
	ours = lock_held_by_group(f->eng, local, &r->holder);
	lock_unref(f->eng, local);
	return ours;
}

/* mu held: waits while another attempt on r's key is in flight, as
 * flk_lock says. 0 with *fkp free to try; -EBUSY: r parks behind it;
 * -EIO: a non-blocking r's wait ended undecided. The entry may be freed
 * while we wait: looked up again after every wake-up (*fkp NULL: no
 * memory). */
static int wait_for_attempt(struct flk *f, const struct flk_req *r,
			    struct fkey **fkp)
{
	int64_t end_ms = clk_sys_mono_ms() + FLK_NB_WAIT_MS;
	struct timespec ts;

	while ((*fkp = flk_int_fkey_get(f, r->key, true)) && (*fkp)->taking) {
		if (r->wait) {
			if (!own_lock(f, r))
				return -EBUSY;
			pthread_cond_wait(&f->cv, &f->mu);
			continue;
		}
		/* The machine's clock: a bound on a thread's wait, not on
		 * any lock's trust. */
		if (clk_sys_mono_ms() >= end_ms) {
			log_info(TAG,
				 "file lock key=%s: another request's attempt "
				 "undecided after %d ms",
				 r->key, FLK_NB_WAIT_MS);
			return -EIO;
		}
		clk_mono_timespec(end_ms, &ts);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	return 0;
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

/* mu held: takes the key for r (fk->taking claimed around the store
 * request). 0: granted, fk's holder set; -EBUSY/-EEXIST: held; other
 * -errno. */
static int take_locked(struct flk *f, struct fkey **fkp,
		       const struct flk_req *r)
{
	struct lock *lk = NULL;
	struct fkey *fk = *fkp;
	bool lent;
	int rc;

	fk->taking = true;
	pthread_mutex_unlock(&f->mu);
	rc = flk_int_try_take(f, r->key, &r->holder, r->handle_lock, r->shared,
			      false, &lk, &lent, NULL, NULL, 0);
	pthread_mutex_lock(&f->mu);
	/* The entry stays while taking is set: nobody frees it. */
	fk->taking = false;
	pthread_cond_broadcast(&f->cv);
	if (!rc && flk_int_add_holder(fk, lk, r->shared, r->owner, r->kind,
				      r->holder.pid, r->handle)) {
		pthread_mutex_unlock(&f->mu);
		flk_int_let_go(f, lk, lent);
		pthread_mutex_lock(&f->mu);
		rc = -ENOMEM;
	} else if (!rc && lent) {
		flk_int_lend(fk);
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
	bool lent;
	int rc;

	if (r->shared) {
		lk = fk->lk;
		lock_ref(lk);
		fk->taking = true;
		pthread_mutex_unlock(&f->mu);
		rc = flk_int_downgrade(f, lk);
		pthread_mutex_lock(&f->mu);
		fk->taking = false;
		pthread_cond_broadcast(&f->cv);
		if (!rc && fk->lk == lk)
			fk->shared = true;
		lock_unref(f->eng, lk);
		return rc;
	}
	lk = flk_int_remove_holder(fk, h, &lent);
	if (lk) {
		pthread_mutex_unlock(&f->mu);
		flk_int_let_go(f, lk, lent);
		pthread_mutex_lock(&f->mu);
		pthread_cond_broadcast(&f->cv);
	}
	while ((*fkp = flk_int_fkey_get(f, r->key, true)) && (*fkp)->taking)
		pthread_cond_wait(&f->cv, &f->mu);
	return *fkp ? 1 : -ENOMEM;
}

bool flk_int_lost_by_group(struct flk *f, const struct lock_holder *h,
			   const char *key)
{
	struct lock *lk;

	if (!lock_any_lost(f->eng))
		return false;
	lk = lock_find_lost(f->eng, key, h->pgid, h->pgid_start);
	if (!lk)
		return false;
	lock_unref(f->eng, lk);
	log_info(TAG,
		 "file lock key=%s refused: process group %lld lost it and "
		 "has not unlinked it",
		 key, (long long)h->pgid);
	return true;
}

int flk_lock(struct flk *f, const struct flk_req *r)
{
	struct fkey *fk;
	struct waiter *w;
	bool intr, granted, tried = false;
	int rc;

	/* The group must unlink a lock it lost before it takes the key
	 * again: held for it (LOCK_NB, F_SETLK), and a wait could only end
	 * by that unlink, which the waiting process cannot make: EDEADLK. */
	if (flk_int_lost_by_group(f, &r->holder, r->key))
		return r->wait ? -EDEADLK : conflict_err(r->kind);
	pthread_mutex_lock(&f->mu);
	if (r->wait)
		entering_add(f, r->req);
	/* One attempt at a time per key; a request that finds another's in
	 * flight does not hold its thread for that attempt's outcome (up to
	 * an operation timeout): with every request thread held so, none
	 * would be left to read an interrupt, or any other request of the
	 * mount. A blocking one parks behind it, as a waiter, unless its
	 * open file (or group) holds the key already (own_lock): queued
	 * behind a waiter that waits for that very lock, it would never be
	 * served, so it waits for the outcome. A non-blocking one waits for
	 * the outcome FLK_NB_WAIT_MS at most: undecided then, it fails as a
	 * request DynamoDB did not answer does. */
	rc = wait_for_attempt(f, r, &fk);
	if (!fk) {
		intr = r->wait && entering_del(f, r->req);
		pthread_mutex_unlock(&f->mu);
		return intr ? -EALREADY : -ENOMEM;
	}
	if (rc)
		goto settled;
again:
	granted = false;
	if (flk_int_holder_alive(f, fk)) {
		struct fholder *h =
			flk_int_find_holder(fk, r->owner, r->kind, r->handle);

		/* An fcntl owner that asks again through another open file
		 * is the same process, or an F_OFD_SETLK open file that the
		 * kernel made anew in the struct file of a closed one (the
		 * owner is its address), before we saw that one's RELEASE.
		 * The lock now goes with the newer file's release only: the
		 * late RELEASE must not drop the lock the new file holds. A
		 * process's locks go at its flush anyway. */
		if (h && h->kind == FLK_POSIX)
			h->handle = r->handle;
		if (h && (fk->shared == r->shared || fk->lent)) {
			/* Already ours so (the same open file or process), or
			 * its group's lock, exclusive, lent to it: a no-op. */
			rc = 0;
		} else if (h) {
			rc = convert_locked(f, &fk, r, h);
			if (rc == 1)
				goto again; /* an upgrade: as a new request */
		} else if (r->shared && fk->shared && !fk->head &&
			   !flk_int_writer_waits(f, fk)) {
			/* Another local reader: it shares the mount's lock,
			 * without a request. Not past a queued waiter, nor
			 * while another mount's writer waits (a writer must
			 * not starve). */
			rc = flk_int_add_holder(fk, fk->lk, true, r->owner,
						r->kind, r->holder.pid,
						r->handle);
			granted = !rc;
		} else {
			rc = -EBUSY;
		}
	} else if (fk->head && !own_lock(f, r)) {
		rc = -EBUSY; /* others queued first */
	} else {
		rc = take_locked(f, &fk, r);
		granted = !rc;
		tried = true;
	}
	if (granted) {
		struct lock *lk = fk->lk;

		lock_ref(lk);
		intr = r->wait && entering_del(f, r->req);
		pthread_mutex_unlock(&f->mu);
		if (f->cfg.on_granted)
			f->cfg.on_granted(f->cfg.arg, r->handle, lk);
		lock_unref(f->eng, lk);
		metrics_inc(f->m, MC_ACQUIRES);
		if (intr) {
			/* Its caller was told EINTR: it holds nothing. */
			flk_unlock(f, r->key, r->owner, r->kind, r->handle);
			return -EALREADY;
		}
		return 0;
	}
settled:
	intr = r->wait && entering_del(f, r->req);
	if (intr) {
		/* Answered EINTR already; a no-op or a conversion (already
		 * the owner's lock) stays as it is. */
		flk_int_fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return -EALREADY;
	}
	if (r->wait && store_err_transient(rc)) {
		/* DynamoDB did not answer the first try: a blocking request
		 * waits on ("blocks until acquired"), tried again at the
		 * waiters' pace, as a waiter's failed try is. */
		char why[LOG_ERRNO_MAX];

		log_warn(TAG, "file lock key=%s: %s; waiting on", r->key,
			 log_errno(rc, why, sizeof(why)));
		rc = -EEXIST;
	}
	if (rc == 0 || (rc != -EBUSY && rc != -EEXIST)) {
		flk_int_fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return rc;
	}
	if (!r->wait) {
		flk_int_fkey_maybe_free(f, fk);
		pthread_mutex_unlock(&f->mu);
		return conflict_err(r->kind);
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		flk_int_fkey_maybe_free(f, fk);
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
	w->since_mono_ms = flk_int_now(f);
	w->next_poll_mono_ms = flk_int_now(f) + f->cfg.poll_min_ms;
	/* Its own try was in flight while any waiter there queued (they
	 * found the key taking): it came first. An interrupted request
	 * made again takes back its place. */
	flk_int_restart_enqueue(f, fk, w, tried);
	pthread_mutex_unlock(&f->mu);
	metrics_inc(f->m, MC_WAITS);
	log_debug(TAG, "waiting key=%s pid=%lld", r->key,
		  (long long)r->holder.pid);
	return -EINPROGRESS;
}

void flk_arm(struct flk *f, void *req)
{
	struct fkey *fk;
	struct waiter *w;
	bool answer = false, um = false;
	char v[RECORD_RVN_MAX], *key = NULL;

	pthread_mutex_lock(&f->mu);
	w = flk_int_find_req(f, req, &fk);
	if (w && w->state == W_NEW) {
		if (w->interrupted) {
			flk_int_restart_note(f, fk, w);
			flk_int_dequeue(f, fk, w, &um, v, &key);
			answer = true;
		} else {
			w->state = W_PARKED;
			pthread_cond_broadcast(&f->cv);
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (answer) {
		f->cfg.reply(req, EINTR);
		free(w);
	}
	flk_int_unmark_later(f, um, v, key);
}

void flk_interrupt(struct flk *f, void *req)
{
	struct fkey *fk;
	struct waiter *w;
	bool answer = false, um = false;
	char v[RECORD_RVN_MAX], *key = NULL;

	pthread_mutex_lock(&f->mu);
	w = flk_int_find_req(f, req, &fk);
	if (!w) {
		/* Still inside flk_lock (its first attempt in flight):
		 * answered now, once; flk_lock answers nothing then, and
		 * lets go of what its attempt took. */
		int i = entering_find(f, req);

		if (i >= 0 && !f->entering[i].interrupted) {
			f->entering[i].interrupted = true;
			answer = true;
		}
	}
	if (w) {
		w->interrupted = true;
		if (w->state != W_NEW)
			flk_int_restart_note(f, fk, w);
		if (w->state == W_PARKED) {
			flk_int_dequeue(f, fk, w, &um, v, &key);
			answer = true;
		} else if (w->state == W_BUSY) {
			/* Its worker's request may take an op timeout: the
			 * caller is answered now, and the worker, seeing it
			 * interrupted, lets go of what it took and frees it
			 * (answer() in flk_wait.c; no reply, req is gone). */
			w->req = NULL;
			w = NULL;
			answer = true;
		}
		/* W_NEW: flk_arm answers. */
	}
	pthread_mutex_unlock(&f->mu);
	if (answer) {
		f->cfg.reply(req, EINTR);
		free(w);
	}
	flk_int_unmark_later(f, um, v, key);
}

/* mu held: fk's fcntl holder whose grant came through handle. */
static struct fholder *posix_of_handle(struct fkey *fk, const void *handle)
{
	for (struct fholder *h = fk->holders; h; h = h->next)
		if (h->kind == FLK_POSIX && h->handle == handle)
			return h;
	return NULL;
}

/* flk_unlock of owner's lock of kind (a flock lock: taken through
 * handle), or (posix_handle set) of the fcntl lock granted through
 * posix_handle. */
static int unlock(struct flk *f, const char *key, uint64_t owner,
		  enum flk_kind kind, const void *handle,
		  const void *posix_handle)
{
	struct lock *lk = NULL;
	struct fkey *fk;
	bool lent = false;
	int rc = 0;

	pthread_mutex_lock(&f->mu);
	fk = flk_int_fkey_get(f, key, false);
	if (fk && fk->lk) {
		struct fholder *h =
			posix_handle
				? posix_of_handle(fk, posix_handle)
				: flk_int_find_holder(fk, owner, kind, handle);

		/* The lock goes with its last holder; other local readers
		 * keep it. */
		if (h)
			lk = flk_int_remove_holder(fk, h, &lent);
		if (h && !lk && fk->head)
			fk->head->next_poll_mono_ms = flk_int_now(f);
	}
	pthread_mutex_unlock(&f->mu);
	if (!lk)
		return 0;
	rc = flk_int_let_go(f, lk, lent);
	pthread_mutex_lock(&f->mu);
	fk = flk_int_fkey_get(f, key, false);
	if (fk)
		fk->turn_end_mono_ms = flk_int_now(f);
	if (fk && fk->head)
		fk->head->next_poll_mono_ms = flk_int_now(f); /* next in line */
	if (fk)
		flk_int_fkey_maybe_free(f, fk);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int flk_unlock(struct flk *f, const char *key, uint64_t owner,
	       enum flk_kind kind, const void *handle)
{
	return unlock(f, key, owner, kind, handle, NULL);
}

int flk_release_handle(struct flk *f, const char *key, void *handle)
{
	return unlock(f, key, 0, FLK_POSIX, NULL, handle);
}

int flk_getlk(struct flk *f, const struct flk_req *r, bool *held,
	      bool *held_shared, int64_t *pid)
{
	const char *key = r->key;
	uint64_t owner = r->owner;
	bool shared = r->shared;
	struct lock_record row;
	struct lock *local;
	struct fkey *fk;
	int rc;

	bool ours = false; /* the asker shares the mount's shared lock */
	const char *me = lock_engine_config(f->eng)->owner;
	size_t others = 0;

	*held = *held_shared = false;
	*pid = 0;
	pthread_mutex_lock(&f->mu);
	fk = flk_int_fkey_get(f, key, false);
	if (fk && flk_int_holder_alive(f, fk)) {
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
	/* The asker's own open file or process group holds the key by a
	 * create: its lock would be granted at once (own_lock), so none is
	 * reported. */
	if (!ours && own_lock(f, r))
		return 0;
	local = ours ? NULL : lock_find(f->eng, key);
	if (local) {
		*held_shared = lock_is_shared(f->eng, local);
		*held = !(shared && *held_shared);
		*pid = lock_holder(local)->pid;
		lock_unref(f->eng, local);
		return 0;
	}
	record_init(&row);
	rc = lock_rows_get(f->eng, key, &row);
	if (!rc) {
		bool lapsed = lock_rows_judge(f->eng, &row, NULL);

		/* Held shared elsewhere: a share for a read lock, a conflict
		 * for a write lock; a shared row without readers is free. */
		for (size_t i = 0; i < row.n_readers; i++)
			others += !ours || strcmp(row.readers[i].id, me);
		*held_shared = row.shared;
		*held = !lapsed && !(row.shared && !others) &&
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
	flk_int_drop_holders(fk);
	free(fk->key);
	free(fk);
}

void flk_free(struct flk *f)
{
	if (!f)
		return;
	smap_each(&f->keys, free_key_cb, f);
	smap_fini(&f->keys);
	flk_int_restart_free(f);
	pthread_cond_destroy(&f->cv);
	pthread_cond_destroy(&f->job_cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
