/* flk_wait: the wait thread of the file-lock layer and its workers. The
 * wait thread picks the head waiter of each key when it is due; what
 * takes a request is run by one of FLK_WAIT_WORKERS workers, so that one
 * key's slow or hanging request holds up one worker, not every other
 * key's waiters (the wait thread alone is woken by the layer's condition
 * variable; a worker only by a job). Waiters are served so: a shared waiter
 * behind local shared holders is granted at once; other locally held keys are
 * re-checked every poll_min_ms without a request; keys held elsewhere are
 * polled (one consistent GetItem, then the acquire when the row admits it:
 * gone, judged lapsed, or shareable for a reader) with jittered backoff;
 * when more polls are due than workers are free, a worker reads its
 * share of them in one request (run_batch), and each take that follows
 * goes back to the workers as a job of its own. A
 * writer waiting on a key read shared marks the row so that no new reader
 * joins it (lock_writer_mark), refreshes the mark every heartbeat and
 * removes it when no writer waits any more. The wait thread also sweeps
 * the entries of released or lost locks; flk_stop answers every parked
 * request ENOLCK (flk_int_end_err). Time is the host's clock. Threads: the wait
 * thread, the workers, and the caller of flk_start and flk_stop; f->mu as in
 * flk_int.h (a key's `taking` keeps any other thread from serving or
 * trying it while a worker's request for it is in flight). */
#include "flk_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock_rows.h"
#include "log.h"

#define TAG		"flk"
#define FLK_SWEEP_MS	1000
#define FLK_SWEEP_BATCH 256

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct pick {
	struct flk *f;
	int64_t now;
	int64_t wake;
	bool busy;    /* every worker is busy: pick no waiter that needs one */
	bool skipped; /* a due waiter was passed over for that */
	struct fkey *fk;
	/* The due waiters that poll a row held elsewhere (n_due_all of
	 * them), the earliest STORE_GET_LOCKS_MAX in due[]: one worker may
	 * read their rows in one request. */
	struct fkey *due[STORE_GET_LOCKS_MAX];
	size_t n_due, n_due_all;
	/* A waiter whose owner holds its key already (owned_waiter), and
	 * that key: served before anything else; own_convert: in the other
	 * mode (a worker converts the lock). */
	struct waiter *own;
	struct fkey *own_fk;
	bool own_convert;
};

static int64_t due_at(const struct fkey *fk)
{
	return fk->head->next_poll_mono_ms;
}

/* Notes fk (due, polling a row held elsewhere) among p's earliest. */
static void note_due(struct pick *p, struct fkey *fk)
{
	size_t latest = 0;

	p->n_due_all++;
	if (p->n_due < STORE_GET_LOCKS_MAX) {
		p->due[p->n_due++] = fk;
		return;
	}
	for (size_t i = 1; i < p->n_due; i++)
		if (due_at(p->due[i]) > due_at(p->due[latest]))
			latest = i;
	if (due_at(fk) < due_at(p->due[latest]))
		p->due[latest] = fk;
}

/* mu held: a parked waiter of fk whose lock owner (the same open file
 * for flock, the same process for fcntl) holds fk already: two threads
 * that wait on one open file (or one process's two F_SETLKW) are both
 * served when the key comes, as flock(2) and fcntl(2) serve them, not the
 * second only after the first lets go. In the mode it asks (or by its
 * group's lent lock) it is granted at once; in the other mode (*convert)
 * its lock is converted as flock(2) converts one (run_convert). NULL if
 * there is none. */
static struct waiter *owned_waiter(struct flk *f, struct fkey *fk,
				   bool *convert)
{
	if (fk->taking || !flk_int_holder_alive(f, fk))
		return NULL;
	for (struct waiter *w = fk->head; w; w = w->next) {
		if (w->state != W_PARKED ||
		    !flk_int_find_holder(fk, w->owner, w->kind, w->handle))
			continue;
		*convert = fk->shared != w->shared && !fk->lent;
		return w;
	}
	return NULL;
}

/* Considers fk, a waited key, for p. */
static void consider(struct pick *p, struct fkey *fk)
{
	struct waiter *w = fk->head, *own;
	bool convert = false;

	own = owned_waiter(p->f, fk, &convert);
	if (own && convert && own->next_poll_mono_ms > p->now) {
		/* A conversion that failed: tried again at its poll's pace. */
		if (own->next_poll_mono_ms < p->wake)
			p->wake = own->next_poll_mono_ms;
		own = NULL;
	} else if (own && convert && p->busy) {
		p->skipped = true; /* a conversion is a worker's request */
		own = NULL;
	}
	if (own) {
		p->own = own;
		p->own_fk = fk;
		p->own_convert = convert;
		return;
	}
	if (!w || w->state != W_PARKED || fk->taking)
		return;
	if (flk_int_holder_alive(p->f, fk) &&
	    (!fk->shared || (w->shared && flk_int_writer_waits(p->f, fk)))) {
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
	if (p->busy && !(w->shared && flk_int_holder_alive(p->f, fk))) {
		p->skipped = true; /* its request waits for a free worker */
		return;
	}
	if (!flk_int_holder_alive(p->f, fk))
		note_due(p, fk);
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
		w->next_poll_mono_ms = flk_int_now(f) + f->cfg.poll_min_ms;
		return;
	}
	hi = w->backoff_ms;
	lo = hi / 2;
	w->next_poll_mono_ms =
		flk_int_now(f) + lo +
		(int64_t)(rng_next(&f->rng) % (uint64_t)(hi - lo + 1));
	w->backoff_ms =
		hi * 2 > f->cfg.poll_max_ms ? f->cfg.poll_max_ms : hi * 2;
}

/* A waiter's request, from the wait thread to a worker: what the thread
 * read under mu for it. */
struct flk_job {
	struct flk_job *next;
	struct fkey *fk; /* stays while fk->taking */
	struct waiter *w;
	char *key;
	char mark_v[RECORD_RVN_MAX];
	int64_t mark_mono_ms;
	int64_t since;
	bool local;   /* a writer behind our readers: a mark refresh */
	bool no_read; /* the row was read (by a batch): the take at once */
	bool lent;    /* the take's lock is the waiter's group's (lent) */
	bool convert; /* w's owner holds the key in the other mode */
	bool unmark;  /* only our mark's removal (mark_v; no fk, no w) */
	int64_t due;  /* an unmark's: when its grace ends */
	int verdict;  /* a batch member's: its poll's (flk_int_poll_verdict) */
	/* A batch: the polls of these jobs' keys, read in one request
	 * (run_batch); its own fields above are unused. */
	struct flk_job *members;
	size_t n_members;
};

/* mu held, unlocked meanwhile: answers w (dequeued here) with err; a
 * grant (!err) hands over the reference to lk the caller holds (lent: lk
 * is w's group's, only given back on an error; owned: w's owner held lk
 * already, so a waiter gone meanwhile leaves it to the owner's other
 * requests, and no acquire is counted). */
static void answer(struct flk *f, struct fkey *fk, struct waiter *w, char *key,
		   struct lock *lk, bool lent, bool owned, int err)
{
	char v[RECORD_RVN_MAX], *ukey = NULL;
	bool um = false;

	flk_int_dequeue(f, fk, w, &um, v, &ukey);
	pthread_mutex_unlock(&f->mu);
	if (err && lk) /* interrupted while we took it: nothing behind */
		flk_int_let_go(f, lk, lent);
	if (!err && f->cfg.on_granted)
		f->cfg.on_granted(f->cfg.arg, w->handle, lk);
	if (!err)
		lock_unref(f->eng, lk);
	/* No req: answered by its interrupt already (flk_interrupt), so
	 * err is set and a grant was let go of above. */
	if (w->req && f->cfg.reply(w->req, err) && !err && !owned) {
		/* The waiter is gone (killed): give the lock back. */
		flk_unlock(f, key, w->owner, w->kind, w->handle);
	}
	if (!err && !owned)
		metrics_inc(f->m, MC_ACQUIRES);
	flk_int_unmark(f, um, v, ukey);
	free(w);
	free(key);
	pthread_mutex_lock(&f->mu);
}

/* mu held: the outcome of j's request (rc, and lk on a grant): a grant,
 * an answer, or the waiter's next poll. Frees j. */
static void job_done(struct flk *f, struct flk_job *j, int rc, struct lock *lk)
{
	struct waiter *w = j->w;
	struct fkey *fk = j->fk;
	int err;

	/* The key's entry stays while it has waiters: w is still queued. */
	fk->taking = false;
	if (j->mark_v[0]) { /* else fk's stays (run_unmark may set it) */
		memcpy(fk->mark_v, j->mark_v, sizeof(fk->mark_v));
		fk->mark_mono_ms = j->mark_mono_ms;
	}
	pthread_cond_broadcast(&f->cv);

	if (!rc && (w->interrupted || f->stopping)) {
		err = flk_int_end_err(w);
	} else if (!rc) {
		err = flk_int_add_holder(fk, lk, w->shared, w->owner, w->kind,
					 w->holder.pid, w->handle)
			      ? ENOMEM
			      : 0;
		if (!err && j->lent)
			flk_int_lend(fk);
	} else if (rc == -EIO && flk_int_lost_by_group(f, &w->holder, j->key)) {
		/* Its group lost the key meanwhile (another process of it
		 * held it): the wait could only end by the group's unlink. */
		err = EDEADLK;
	} else {
		if (rc != -EBUSY && rc != -EEXIST && log_enabled(LOGL_DEBUG)) {
			char why[LOG_ERRNO_MAX];

			log_debug(TAG, "waiting key=%s: %s (still waiting)",
				  j->key, log_errno(rc, why, sizeof(why)));
		}
		reschedule(f, w, rc);
		if (j->local) /* a mark refresh: once a heartbeat at most */
			w->next_poll_mono_ms =
				flk_int_now(f) +
				lock_engine_config(f->eng)->heartbeat_ms / 2;
		if (!w->interrupted && !f->stopping) {
			free(j->key);
			free(j);
			return;
		}
		err = flk_int_end_err(w);
	}
	if (!err)
		lock_ref(lk); /* the answer's, until on_granted took its own */
	answer(f, fk, w, j->key, lk, j->lent, false, err);
	free(j);
}

static void run_batch(struct flk *f, struct flk_job *b);

/* mu held, unlocked around its request: j's conversion of the lock its
 * waiter's owner holds, as flock(2) converts: exclusive to shared in one
 * write (lock_downgrade), then the waiter is granted; shared to exclusive
 * by dropping the owner's share (the lock released when it was the last),
 * after which the waiter waits on as a new exclusive request. A downgrade
 * that lost the lock fails the waiter (ENOLCK); one refused before it
 * wrote is tried again at the waiter's next poll. Frees j. */
static void run_convert(struct flk *f, struct flk_job *j)
{
	struct fkey *fk = j->fk;
	struct waiter *w = j->w;
	struct lock *lk = NULL;
	bool lent = false;
	int rc = 1;

	if (w->shared) {
		lk = fk->lk;
		lock_ref(lk);
		pthread_mutex_unlock(&f->mu);
		rc = flk_int_downgrade(f, lk);
		pthread_mutex_lock(&f->mu);
		if (!rc && fk->lk == lk)
			fk->shared = true;
		/* Another thread of the owner let go meanwhile: nothing of
		 * the owner's to grant; w waits on as a new request. */
		if (!rc &&
		    (fk->lk != lk ||
		     !flk_int_find_holder(fk, w->owner, w->kind, w->handle)))
			rc = 1;
	} else {
		struct fholder *h =
			flk_int_find_holder(fk, w->owner, w->kind, w->handle);
		struct lock *gone =
			h ? flk_int_remove_holder(fk, h, &lent) : NULL;

		if (gone) {
			pthread_mutex_unlock(&f->mu);
			flk_int_let_go(f, gone, lent);
			pthread_mutex_lock(&f->mu);
		}
	}
	fk->taking = false;
	pthread_cond_broadcast(&f->cv);
	if (!rc && !w->interrupted && !f->stopping) {
		answer(f, fk, w, j->key, lk, false, true, 0);
		free(j);
		return;
	}
	if (lk)
		lock_unref(f->eng, lk);
	if (w->interrupted || f->stopping) {
		answer(f, fk, w, j->key, NULL, false, true, flk_int_end_err(w));
	} else if (rc == -ENOLCK) {
		/* The lock was lost in the downgrade: not taken back. */
		answer(f, fk, w, j->key, NULL, false, true, rc);
	} else {
		reschedule(f, w, rc == 1 ? -EBUSY : rc);
		free(j->key);
	}
	free(j);
}

/* mu held, unlocked around the request: j's removal of our mark
 * (flk_int_unmark_later), unless a writer of ours waits on the key again
 * (the mark is then fk's again) or the stop's time for removals is over.
 * Frees j. */
static void run_unmark(struct flk *f, struct flk_job *j)
{
	struct fkey *fk = flk_int_fkey_get(f, j->key, false);
	bool again = fk && flk_int_writer_queued(fk);
	bool skip = again || (f->stopping && flk_int_now(f) >= f->unmark_until);

	if (again && !fk->mark_v[0]) {
		/* The mark is that writer's now: its last writer's dequeue
		 * removes it (refreshed at its next poll). */
		memcpy(fk->mark_v, j->mark_v, sizeof(fk->mark_v));
		fk->mark_mono_ms = 0;
	}
	pthread_mutex_unlock(&f->mu);
	flk_int_unmark(f, !skip, j->mark_v, j->key);
	free(j);
	pthread_mutex_lock(&f->mu);
}

/* mu held, unlocked around the request: j's request and its outcome.
 * Frees j. */
static void run_job(struct flk *f, struct flk_job *j)
{
	struct waiter *w = j->w;
	struct lock *lk = NULL;
	int rc;

	if (j->unmark) {
		run_unmark(f, j);
		return;
	}
	if (j->members) {
		run_batch(f, j);
		return;
	}
	if (j->convert) {
		run_convert(f, j);
		return;
	}
	pthread_mutex_unlock(&f->mu);
	if (!j->key)
		rc = -ENOMEM;
	else if (j->local)
		flk_int_mark_behind_readers(f, j->key, j->mark_v,
					    &j->mark_mono_ms),
			rc = -EBUSY;
	else
		rc = flk_int_try_take(
			f, j->key, &w->holder, NULL, w->shared, !j->no_read,
			&lk, &j->lent, w->shared ? NULL : j->mark_v,
			&j->mark_mono_ms, flk_int_now(f) - j->since);
	pthread_mutex_lock(&f->mu);
	job_done(f, j, rc, lk);
}

/* mu held: j to a worker (first in line: a take after a batch's read),
 * or run here when there are none. */
static void queue_job(struct flk *f, struct flk_job *j, bool first)
{
	if (!f->n_workers) {
		run_job(f, j); /* flk_step, or no worker could start */
		return;
	}
	j->next = NULL;
	if (first) {
		j->next = f->jobs;
		f->jobs = j;
		if (!f->jobs_tail)
			f->jobs_tail = j;
	} else {
		if (f->jobs_tail)
			f->jobs_tail->next = j;
		else
			f->jobs = j;
		f->jobs_tail = j;
	}
	f->idle_workers--;
	pthread_cond_signal(&f->job_cv);
}

void flk_int_unmark_later(struct flk *f, bool um, const char *v, char *key)
{
	struct flk_job *j = um ? calloc(1, sizeof(*j)) : NULL;

	if (!j) {
		flk_int_unmark(f, um, v, key); /* no memory: here, then */
		return;
	}
	j->unmark = true;
	j->key = key;
	memcpy(j->mark_v, v, sizeof(j->mark_v));
	pthread_mutex_lock(&f->mu);
	if (f->stopping) {
		/* The workers may be gone: here, as the stop's own. */
		pthread_mutex_unlock(&f->mu);
		free(j);
		flk_int_unmark(f, um, v, key);
		return;
	}
	/* The wait thread queues it when its grace ends (turn). */
	j->due = flk_int_now(f) + FLK_UNMARK_GRACE_MS;
	j->next = f->unmarks;
	f->unmarks = j;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* mu held: the removals whose grace ended go to the workers; *wake is
 * the end of the next one's, if earlier. */
static void queue_unmarks(struct flk *f, int64_t *wake)
{
	struct flk_job **pp = &f->unmarks, *j;

	while ((j = *pp)) {
		if (j->due > flk_int_now(f)) {
			if (j->due < *wake)
				*wake = j->due;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		queue_job(f, j, false);
		pp = &f->unmarks; /* queue_job may have run one here */
	}
}

/* mu held, unlocked around the request: the polls of b's members, their
 * rows read in one request. A member whose row admits a take goes back
 * to the workers for it, first in line (its key stays taking), and so
 * does one whose row our writer is to mark (a write: polled again on its
 * own, so that the batch makes no write); the others get their next
 * poll. Frees b. */
static void run_batch(struct flk *f, struct flk_job *b)
{
	size_t n = b->n_members, k = 0;
	struct flk_job **ms = calloc(n, sizeof(*ms)), *m;
	const char **keys = calloc(n, sizeof(*keys));
	struct lock_record *rows = calloc(n, sizeof(*rows));
	int *rcs = calloc(n, sizeof(*rcs));

	pthread_mutex_unlock(&f->mu);
	/* The members are this worker's alone until they are handed on. */
	for (m = b->members; m; m = m->next)
		m->verdict = -ENOMEM;
	if (ms && keys && rows && rcs) {
		for (m = b->members; m; m = m->next) {
			if (!m->key)
				continue;
			ms[k] = m;
			keys[k] = m->key;
			record_init(&rows[k++]);
		}
		if (k)
			lock_rows_get_many(f->eng, keys, k, rows, rcs);
		metrics_add(f->m, MC_WAIT_POLLS, k);
		for (size_t i = 0; i < k; i++) {
			bool w_shared = ms[i]->w->shared;

			ms[i]->verdict = flk_int_poll_verdict(
				f, ms[i]->key, rcs[i], &rows[i], w_shared,
				false, w_shared ? NULL : ms[i]->mark_v,
				&ms[i]->mark_mono_ms,
				flk_int_now(f) - ms[i]->since);
			record_fini(&rows[i]);
		}
	}
	free(ms);
	free(keys);
	free(rows);
	free(rcs);
	pthread_mutex_lock(&f->mu);
	while ((m = b->members)) {
		b->members = m->next;
		if (m->verdict >= 0 && !m->w->interrupted && !f->stopping) {
			/* 0: the take; 1: a poll of its own, to mark the row.
			 */
			m->no_read = !m->verdict;
			queue_job(f, m, true);
		} else {
			job_done(f, m, m->verdict < 0 ? m->verdict : -EINTR,
				 NULL);
		}
	}
	free(b);
}

/* mu held: a job for w, a waiter of fk (its key taking from now on), or
 * NULL (no memory: retried at the next wake-up). */
static struct flk_job *new_job(struct fkey *fk, struct waiter *w, bool local)
{
	struct flk_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	w->state = W_BUSY;
	fk->taking = true;
	j->fk = fk;
	j->w = w;
	j->key = strdup(fk->key);
	j->local = local;
	memcpy(j->mark_v, fk->mark_v, sizeof(j->mark_v));
	j->mark_mono_ms = fk->mark_mono_ms;
	/* How long this mount has waited for its turn: since its head waiter
	 * came, or since its last turn ended, whichever is later. */
	j->since = w->since_mono_ms > fk->turn_end_mono_ms
			   ? w->since_mono_ms
			   : fk->turn_end_mono_ms;
	return j;
}

static int by_due(const void *a, const void *b)
{
	int64_t x = due_at(*(struct fkey *const *)a);
	int64_t y = due_at(*(struct fkey *const *)b);

	return x < y ? -1 : x > y;
}

/* mu held: how many of p's due polls the next worker takes, in one
 * request: an equal share of them per free worker, so that while workers
 * are free a key's poll has a request of its own (a hung read holds up
 * one key), and when due polls outnumber them a worker reads up to
 * STORE_GET_LOCKS_MAX rows at once (one request instead of one per key). */
static size_t batch_size(const struct flk *f, const struct pick *p)
{
	size_t free_workers = f->idle_workers > 0 ? (size_t)f->idle_workers : 1;
	size_t share = (p->n_due_all + free_workers - 1) / free_workers;

	return share < p->n_due ? share : p->n_due;
}

/* mu held: a batch job of the b earliest of p's due polls, or NULL (no
 * memory: they are polled one by one). */
static struct flk_job *new_batch(struct pick *p, size_t b)
{
	struct flk_job *batch = calloc(1, sizeof(*batch)), **tail;

	if (!batch)
		return NULL;
	qsort(p->due, p->n_due, sizeof(p->due[0]), by_due);
	tail = &batch->members;
	for (size_t i = 0; i < b; i++) {
		struct flk_job *m = new_job(p->due[i], p->due[i]->head, false);

		if (!m)
			break;
		*tail = m;
		tail = &m->next;
		batch->n_members++;
	}
	if (!batch->n_members) {
		free(batch);
		return NULL;
	}
	return batch;
}

/* Picks one due waiter and serves it: at once (a reader behind our
 * readers), or by a request a worker makes (run here, by the caller,
 * when there are no workers); due polls of rows held elsewhere may go to
 * one worker together (batch_size). Returns false when none was due, or
 * none could be served now: every worker busy (the next one free
 * broadcasts cv), or no memory for the job (retried at the next
 * wake-up). mu held. */
static bool serve_one(struct flk *f, int64_t *wake)
{
	struct pick p = { .f = f,
			  .now = flk_int_now(f),
			  .wake = flk_int_now(f) + 1000,
			  .busy = f->n_workers && f->idle_workers <= 0 };
	struct flk_job *j;
	struct waiter *w;
	struct fkey *fk;
	bool local;
	size_t b;

	for (struct fkey *k = f->waited; k; k = k->wnext)
		consider(&p, k);
	*wake = p.wake;
	if (p.skipped)
		f->want_worker = true;
	if (p.own && p.own_convert) {
		j = new_job(p.own_fk, p.own, false);
		if (!j)
			return false;
		j->convert = true;
		queue_job(f, j, true);
		return true;
	}
	if (p.own) {
		lock_ref(p.own_fk->lk);
		answer(f, p.own_fk, p.own, strdup(p.own_fk->key), p.own_fk->lk,
		       false, true, 0);
		return true;
	}
	if (!p.fk)
		return false;
	fk = p.fk;
	w = fk->head;
	local = flk_int_holder_alive(f, fk); /* shared here (consider) */
	if (local && w->shared) {
		/* A reader behind our readers: it shares the mount's lock. */
		if (flk_int_add_holder(fk, fk->lk, true, w->owner, w->kind,
				       w->holder.pid, w->handle)) {
			reschedule(f, w, -EBUSY);
			return true;
		}
		lock_ref(fk->lk);
		answer(f, fk, w, strdup(fk->key), fk->lk, false, false, 0);
		return true;
	}
	b = local ? 0 : batch_size(f, &p);
	j = b > 1 ? new_batch(&p, b) : NULL;
	if (!j)
		j = new_job(fk, w, local);
	if (!j)
		return false;
	queue_job(f, j, false);
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
	    !flk_int_holder_alive(sw->f, fk))
		sw->dead[sw->n++] = fk;
}

/* mu held. */
static void sweep_keys(struct flk *f)
{
	struct sweep sw = { .f = f };

	smap_each(&f->keys, sweep_cb, &sw);
	for (int i = 0; i < sw.n; i++)
		flk_int_fkey_maybe_free(f, sw.dead[i]);
}

/* mu held: one turn of the wait thread: the sweep when due, then one due
 * waiter served. false when none was due: *wake is then the host's time
 * of the next work. */
static bool turn(struct flk *f, int64_t *wake)
{
	if (flk_int_now(f) >= f->next_sweep_mono_ms) {
		sweep_keys(f);
		f->next_sweep_mono_ms = flk_int_now(f) + FLK_SWEEP_MS;
	}
	if (serve_one(f, wake))
		return true;
	queue_unmarks(f, wake);
	if (*wake > f->next_sweep_mono_ms)
		*wake = f->next_sweep_mono_ms;
	return false;
}

static void *flk_main(void *arg)
{
	struct flk *f = arg;
	struct timespec ts;
	int64_t wake;

	pthread_mutex_lock(&f->mu);
	while (!f->stopping) {
		if (turn(f, &wake))
			continue;
		/* pthread waits on the machine's clock: as long as the
		 * host's clock has to go until wake. */
		clk_mono_timespec(clk_sys_mono_ms() + (wake - flk_int_now(f)),
				  &ts);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* A worker: runs the jobs the wait thread queues; at flk_stop, once the
 * queue is empty (a job run then answers its waiter EINTR). */
static void *worker_main(void *arg)
{
	struct flk *f = arg;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct flk_job *j;

		f->idle_workers++;
		if (f->want_worker) {
			f->want_worker = false;
			pthread_cond_broadcast(&f->cv);
		}
		while (!f->jobs && !f->stopping)
			pthread_cond_wait(&f->job_cv, &f->mu);
		j = f->jobs;
		if (!j)
			break;
		f->jobs = j->next;
		if (!f->jobs)
			f->jobs_tail = NULL;
		run_job(f, j);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int64_t flk_step(struct flk *f)
{
	int64_t wake = flk_int_now(f);

	pthread_mutex_lock(&f->mu);
	while (!f->stopping && turn(f, &wake))
		;
	pthread_mutex_unlock(&f->mu);
	return wake;
}

int flk_start(struct flk *f)
{
	int rc = 0;

	/* The workers first: n_workers is set before the wait thread that
	 * reads it starts. */
	while (f->n_workers < FLK_WAIT_WORKERS) {
		rc = pthread_create(&f->threads[f->n_threads], NULL,
				    worker_main, f);
		if (rc)
			break;
		f->n_threads++;
		f->n_workers++;
	}
	if (rc)
		log_warn(TAG, "%d wait workers of %d: %s", f->n_workers,
			 FLK_WAIT_WORKERS, strerror(rc));
	rc = pthread_create(&f->threads[f->n_threads], NULL, flk_main, f);
	if (rc) {
		flk_stop(f);
		return -rc;
	}
	f->n_threads++;
	return 0;
}

struct drain {
	struct flk *f;
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
	flk_int_waited_del(d->f, fk);
}

void flk_stop(struct flk *f)
{
	struct drain d = { f, NULL, NULL };
	struct flk_job *j;
	int64_t until;

	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	f->unmark_until =
		flk_int_now(f) + lock_engine_config(f->eng)->op_timeout_ms;
	pthread_cond_broadcast(&f->cv);
	pthread_cond_broadcast(&f->job_cv);
	pthread_mutex_unlock(&f->mu);
	while (f->n_threads > 0)
		pthread_join(f->threads[--f->n_threads], NULL);
	f->n_workers = 0;
	pthread_mutex_lock(&f->mu);
	smap_each(&f->keys, drain_cb, &d);
	/* Removals still in their grace: with the marks below. */
	while ((j = f->unmarks)) {
		struct drain_mark *m = calloc(1, sizeof(*m));

		f->unmarks = j->next;
		if (m) {
			m->key = j->key;
			memcpy(m->v, j->mark_v, sizeof(m->v));
			m->next = d.marks;
			d.marks = m;
		} else {
			free(j->key);
		}
		free(j);
	}
	pthread_mutex_unlock(&f->mu);
	/* The waiters first: they are told at once, not after the marks'
	 * removals, which each take up to an operation timeout while
	 * DynamoDB does not answer (10 s a key, one after another). */
	while (d.list) {
		struct waiter *w = d.list;

		d.list = w->next;
		if (w->req)
			f->cfg.reply(w->req, flk_int_end_err(w));
		free(w);
	}
	/* Then our marks, none begun an operation timeout after the first:
	 * a mark left lapses after a lease, as a dead waiter's does. */
	until = flk_int_now(f) + lock_engine_config(f->eng)->op_timeout_ms;
	while (d.marks) {
		struct drain_mark *m = d.marks;

		d.marks = m->next;
		if (flk_int_now(f) < until)
			lock_writer_unmark(f->eng, m->key, m->v);
		free(m->key);
		free(m);
	}
}
