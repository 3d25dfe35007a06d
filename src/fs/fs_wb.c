/* fs_wb: coalesced data writes (see fs_wb.h). Threads: FUSE workers call
 * fs_wb_modify, fs_wb_flush and fs_wb_write_pending; flk's callers (FUSE
 * workers, its wait workers) fs_wb_seal and fs_wb_unseal around a
 * downgrade; the flusher thread writes data whose interval ended and
 * forgets idle entries. wb->mu guards the entry map and every entry
 * field; it is dropped around each engine call (snapshot, modify, state,
 * unref). */
#include "fs_wb.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clk.h"
#include "log.h"
#include "map.h"

#define TAG "fs"
/* A failed write's entry is looked at after this long, and forgotten once
 * its lock is released: until then its holder may still write or close,
 * and is told (the data is not in the table). */
#define ERR_KEEP_MS 60000
/* Entries looked at per sweep. */
#define SWEEP_MAX 64

struct wb_entry {
	struct lock *lk; /* referenced */
	char *data;	 /* the data as the holder sees it (when loaded) */
	size_t len;
	bool loaded;
	bool dirty;	       /* data differs from what was written */
	bool flushing;	       /* a write of it is in flight */
	int users;	       /* callers using it with mu dropped */
	int sealed;	       /* downgrades in flight: writes wait */
	int err;	       /* a background write's error, not yet told */
	int failed;	       /* the last write's error, 0 once one lands:
				* a flush with nothing new to write reports
				* it (its data is not in the table) */
	int64_t err_mono_ms;   /* when err was set, or its lock last found
				* held (entry_idle) */
	int64_t wrote_mono_ms; /* when the last write started */
	int64_t due_mono_ms;   /* dirty: when the flusher writes it */
};

struct fs_wb {
	struct lock_engine *eng;
	const struct clk *clk; /* our monotonic clock (the host's) */
	int64_t interval_ms;
	size_t max_len;
	pthread_mutex_t mu;
	pthread_cond_t wake; /* the flusher: new due entry, or stop */
	pthread_cond_t done; /* a write in flight ended */
	struct imap ents;    /* (uintptr_t)lk -> struct wb_entry */
	pthread_t thread;
	bool running, stopping;
};

static uint64_t key_of(struct lock *lk)
{
	return (uint64_t)(uintptr_t)lk;
}

struct fs_wb *fs_wb_new(struct lock_engine *eng, const struct clk *clk,
			int64_t interval_ms, size_t max_len)
{
	struct fs_wb *wb = calloc(1, sizeof(*wb));
	pthread_condattr_t ca;

	if (!wb)
		return NULL;
	wb->eng = eng;
	wb->clk = clk;
	wb->interval_ms = interval_ms > 0 ? interval_ms : FS_WB_INTERVAL_MS;
	wb->max_len = max_len;
	pthread_mutex_init(&wb->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wb->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&wb->done, NULL);
	imap_init(&wb->ents);
	return wb;
}

/* ---- entries (mu held) -------------------------------------------------- */

static struct wb_entry *entry_get(struct fs_wb *wb, struct lock *lk,
				  bool create)
{
	struct wb_entry *e = imap_get(&wb->ents, key_of(lk));

	if (!e && create) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		if (imap_put(&wb->ents, key_of(lk), e)) {
			free(e);
			return NULL;
		}
		lock_ref(lk);
		e->lk = lk;
	}
	return e;
}

enum idle { IDLE_NO, IDLE_YES, IDLE_IF_RELEASED };

static enum idle entry_idle(const struct fs_wb *wb, const struct wb_entry *e,
			    int64_t now)
{
	if (e->dirty || e->flushing || e->users || e->sealed)
		return IDLE_NO;
	if (e->err || e->failed)
		return now - e->err_mono_ms >= ERR_KEEP_MS ? IDLE_IF_RELEASED
							   : IDLE_NO;
	return now - e->wrote_mono_ms >= wb->interval_ms ? IDLE_YES : IDLE_NO;
}

struct sweep {
	struct fs_wb *wb;
	int64_t now;
	struct lock *unref[SWEEP_MAX];
	uint64_t gone[SWEEP_MAX];
	int n;
	uint64_t maybe[SWEEP_MAX]; /* IDLE_IF_RELEASED, lk referenced */
	struct lock *maybe_lk[SWEEP_MAX];
	int n_maybe;
};

static void sweep_cb(void *arg, uint64_t key, void *value)
{
	struct sweep *s = arg;
	struct wb_entry *e = value;
	enum idle idle = entry_idle(s->wb, e, s->now);

	if (idle == IDLE_YES && s->n < SWEEP_MAX) {
		s->gone[s->n] = key;
		s->unref[s->n++] = e->lk;
	} else if (idle == IDLE_IF_RELEASED && s->n_maybe < SWEEP_MAX) {
		lock_ref(e->lk);
		s->maybe[s->n_maybe] = key;
		s->maybe_lk[s->n_maybe++] = e->lk;
	}
}

/* Forgets idle entries; returns with mu held, after asking the engine
 * about and unreferencing their locks without it. */
static void sweep(struct fs_wb *wb)
{
	struct sweep s = { .wb = wb, .now = clk_mono_ms(wb->clk) };
	bool released[SWEEP_MAX];
	int i;

	imap_each(&wb->ents, sweep_cb, &s);
	if (!s.n && !s.n_maybe)
		return;
	pthread_mutex_unlock(&wb->mu);
	for (i = 0; i < s.n_maybe; i++)
		released[i] =
			lock_get_state(wb->eng, s.maybe_lk[i]) == LOCK_RELEASED;
	pthread_mutex_lock(&wb->mu);
	for (i = 0; i < s.n_maybe; i++) {
		struct wb_entry *e = imap_get(&wb->ents, s.maybe[i]);

		if (!e || e->lk != s.maybe_lk[i] ||
		    entry_idle(wb, e, s.now) != IDLE_IF_RELEASED)
			continue;
		if (released[i] && s.n < SWEEP_MAX) {
			/* Forgotten with its lock. */
			s.gone[s.n] = s.maybe[i];
			s.unref[s.n++] = e->lk;
		} else if (!released[i]) {
			/* Asked again in ERR_KEEP_MS: the others' turn. */
			e->err_mono_ms = s.now;
		}
	}
	for (i = 0; i < s.n; i++) {
		struct wb_entry *e = imap_del(&wb->ents, s.gone[i]);

		if (e)
			free(e->data);
		free(e);
	}
	pthread_mutex_unlock(&wb->mu);
	for (i = 0; i < s.n; i++)
		lock_unref(wb->eng, s.unref[i]);
	for (i = 0; i < s.n_maybe; i++)
		lock_unref(wb->eng, s.maybe_lk[i]);
	pthread_mutex_lock(&wb->mu);
}

/* Loads the lock's current data into e (mu dropped meanwhile). */
static int entry_load(struct fs_wb *wb, struct wb_entry *e)
{
	struct lock_record rec;
	enum lock_state st;
	char *copy = NULL;
	size_t len = 0;
	int rc;

	record_init(&rec);
	pthread_mutex_unlock(&wb->mu);
	rc = lock_snapshot(wb->eng, e->lk, &rec, &st);
	if (!rc && st != LOCK_HELD)
		rc = -EIO;
	if (!rc) {
		len = rec.has_data ? rec.data_len : 0;
		copy = malloc(len + 1);
		if (!copy)
			rc = -ENOMEM;
		else if (len)
			memcpy(copy, rec.data, len);
	}
	record_fini(&rec);
	pthread_mutex_lock(&wb->mu);
	if (rc || e->loaded) {
		free(copy);
		return rc;
	}
	free(e->data);
	e->data = copy;
	e->len = len;
	e->loaded = true;
	return 0;
}

/* Applies a change to e's data (lock_modify_data's rules). */
static int entry_apply(struct wb_entry *e, const void *buf, size_t len,
		       int64_t off, int64_t truncate)
{
	size_t new_len = e->len;
	char *p;

	/* A truncate to the length it has changes nothing: an O_TRUNC open
	 * of an empty lock writes nothing. */
	if (!len && truncate >= 0 && (uint64_t)truncate == e->len)
		return 0;
	if (truncate >= 0 && (size_t)truncate < new_len)
		new_len = (size_t)truncate;
	if (truncate >= 0 && (size_t)truncate > new_len)
		new_len = (size_t)truncate; /* grows with zeros */
	if (len && (size_t)off + len > new_len)
		new_len = (size_t)off + len;
	p = realloc(e->data, new_len + 1);
	if (!p)
		return -ENOMEM;
	if (new_len > e->len)
		memset(p + e->len, 0, new_len - e->len);
	if (len)
		memcpy(p + off, buf, len);
	e->data = p;
	e->len = new_len;
	e->dirty = true;
	return 0;
}

/* Writes e's data if dirty, after any write in flight; mu held, dropped
 * around the engine call. Returns that write's result; with nothing to
 * write, the last write's (another caller's, or the flusher's, that this
 * one may have waited for): 0 only when the data is in the table. */
static int entry_write(struct fs_wb *wb, struct wb_entry *e)
{
	char *copy;
	size_t len;
	int rc;

	while (e->flushing)
		pthread_cond_wait(&wb->done, &wb->mu);
	if (!e->dirty)
		return e->failed;
	len = e->len;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, e->data, len);
	e->dirty = false;
	e->flushing = true;
	e->due_mono_ms = 0;
	e->wrote_mono_ms = clk_mono_ms(wb->clk);
	pthread_mutex_unlock(&wb->mu);
	/* The whole data: cut to len, then bytes [0, len). */
	rc = lock_modify_data(wb->eng, e->lk, len ? copy : NULL, len, 0,
			      (int64_t)len, wb->max_len);
	free(copy);
	pthread_mutex_lock(&wb->mu);
	e->flushing = false;
	e->failed = rc;
	if (rc) {
		/* Reload what the engine has, unless a change came in
		 * meanwhile: that one was answered as written, and its own
		 * write (all of the data) is still to come. Before, the
		 * reload overwrote the buffer without freeing it. */
		if (!e->dirty) {
			free(e->data);
			e->data = NULL;
			e->len = 0;
			e->loaded = false;
		}
		e->err_mono_ms = clk_mono_ms(wb->clk);
	}
	pthread_cond_broadcast(&wb->done);
	return rc;
}

/* Writes e's data for its holder (mu held, dropped meanwhile): a failure
 * is kept for the holder's next write, fsync or close. */
static void write_for_holder(struct fs_wb *wb, struct wb_entry *e)
{
	char why[LOG_ERRNO_MAX];
	int rc = entry_write(wb, e);

	if (!rc || e->err)
		return;
	e->err = rc;
	e->err_mono_ms = clk_mono_ms(wb->clk);
	log_info(TAG,
		 "key=%s: data written in the background failed: %s; the "
		 "holder's next write, fsync or close is told",
		 lock_key(e->lk), log_errno(rc, why, sizeof(why)));
}

/* e's pending data, if any, written for its holder (mu held, dropped
 * meanwhile; e stays while it is written). */
static void write_pending_locked(struct fs_wb *wb, struct wb_entry *e)
{
	if (!e || !e->dirty)
		return;
	e->users++;
	write_for_holder(wb, e);
	e->users--;
}

/* The error kept for e, cleared (it is told once). */
static int take_err(struct wb_entry *e)
{
	int rc = e->err;

	e->err = 0;
	return rc;
}

/* ---- operations --------------------------------------------------------- */

int fs_wb_modify(struct fs_wb *wb, struct lock *lk, const void *buf, size_t len,
		 int64_t off, int64_t truncate)
{
	struct wb_entry *e;
	int64_t now;
	int rc;

	if (off < 0)
		return -EINVAL;
	if ((len && (uint64_t)off + len > wb->max_len) ||
	    (truncate >= 0 && (uint64_t)truncate > wb->max_len))
		return -EFBIG;
	/* A lock known lost (or past its safe period, by the clock) takes
	 * no write, buffered or not: it would be answered as written and
	 * dropped at the flush. */
	if (lock_get_state(wb->eng, lk) != LOCK_HELD)
		return -EIO;
	pthread_mutex_lock(&wb->mu);
	if (!wb->running && wb->ents.count > 64)
		sweep(wb);
	e = entry_get(wb, lk, true);
	if (!e) {
		pthread_mutex_unlock(&wb->mu);
		return -ENOMEM;
	}
	e->users++;
	rc = 0;
	if (e->sealed) {
		/* A downgrade of the lock is in flight: this write comes
		 * after it, refused if the lock is shared by then. */
		while (e->sealed)
			pthread_cond_wait(&wb->done, &wb->mu);
		pthread_mutex_unlock(&wb->mu);
		rc = lock_is_shared(wb->eng, lk) ? -EPERM : 0;
		pthread_mutex_lock(&wb->mu);
	}
	if (!rc)
		rc = take_err(e);
	if (!rc && !e->loaded)
		rc = entry_load(wb, e);
	if (!rc)
		rc = entry_apply(e, buf, len, off, truncate);
	if (rc) {
		e->users--;
		pthread_mutex_unlock(&wb->mu);
		return rc;
	}
	now = clk_mono_ms(wb->clk);
	if (!e->dirty) {
		/* Nothing changed. */
	} else if (len && !e->flushing &&
		   now - e->wrote_mono_ms >= wb->interval_ms) {
		/* The interval is over: written through, now. */
		rc = entry_write(wb, e);
	} else if (!e->due_mono_ms) {
		/* A truncate alone waits an interval from now, so that the
		 * write which follows an O_TRUNC open (echo x > f) goes
		 * with it: one item write, not two. */
		e->due_mono_ms = e->wrote_mono_ms + wb->interval_ms;
		if (e->due_mono_ms < now)
			e->due_mono_ms = len ? now : now + wb->interval_ms;
		pthread_cond_signal(&wb->wake);
	}
	e->users--;
	pthread_mutex_unlock(&wb->mu);
	return rc;
}

int64_t fs_wb_len(struct fs_wb *wb, struct lock *lk)
{
	struct wb_entry *e;
	int64_t len = -1;

	if (!wb || !lk)
		return -1;
	pthread_mutex_lock(&wb->mu);
	e = entry_get(wb, lk, false);
	if (e && e->loaded)
		len = (int64_t)e->len;
	pthread_mutex_unlock(&wb->mu);
	return len;
}

int fs_wb_flush(struct fs_wb *wb, struct lock *lk)
{
	struct wb_entry *e;
	int rc = 0;

	if (!wb || !lk)
		return 0;
	pthread_mutex_lock(&wb->mu);
	e = entry_get(wb, lk, false);
	if (e) {
		e->users++;
		rc = take_err(e);
		if (!rc)
			rc = entry_write(wb, e);
		e->users--;
	}
	pthread_mutex_unlock(&wb->mu);
	return rc;
}

int fs_wb_seal(struct fs_wb *wb, struct lock *lk)
{
	struct wb_entry *e;

	pthread_mutex_lock(&wb->mu);
	e = entry_get(wb, lk, true);
	if (!e) {
		pthread_mutex_unlock(&wb->mu);
		return -ENOMEM;
	}
	e->sealed++;
	write_pending_locked(wb, e);
	pthread_mutex_unlock(&wb->mu);
	return 0;
}

void fs_wb_unseal(struct fs_wb *wb, struct lock *lk)
{
	struct wb_entry *e;

	pthread_mutex_lock(&wb->mu);
	e = entry_get(wb, lk, false);
	if (e && e->sealed) {
		e->sealed--;
		pthread_cond_broadcast(&wb->done);
	}
	pthread_mutex_unlock(&wb->mu);
}

void fs_wb_write_pending(struct fs_wb *wb, struct lock *lk)
{
	if (!wb || !lk)
		return;
	pthread_mutex_lock(&wb->mu);
	write_pending_locked(wb, entry_get(wb, lk, false));
	pthread_mutex_unlock(&wb->mu);
}

/* ---- the flusher thread ------------------------------------------------- */

struct due {
	struct wb_entry *first;
	int64_t first_due;
	bool any_idle_later; /* entries to forget once idle */
};

static void due_cb(void *arg, uint64_t key, void *value)
{
	struct due *d = arg;
	struct wb_entry *e = value;

	if (e->dirty && !e->flushing && e->due_mono_ms &&
	    (!d->first || e->due_mono_ms < d->first_due)) {
		d->first = e;
		d->first_due = e->due_mono_ms;
	}
	if (!e->dirty)
		d->any_idle_later = true;
}

/* Waits on wake until mono_ms of wb->clk (CLOCK_BOOTTIME on the real
 * machine, which a condvar cannot use: the wait is made relative, on
 * CLOCK_MONOTONIC; a suspend meanwhile only makes a write late). */
static void wait_until(struct fs_wb *wb, int64_t mono_ms)
{
	int64_t wait_ms = mono_ms - clk_mono_ms(wb->clk);
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (wait_ms < 1)
		wait_ms = 1;
	ts.tv_sec += wait_ms / 1000;
	ts.tv_nsec += (wait_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&wb->wake, &wb->mu, &ts);
}

static void *flusher_main(void *arg)
{
	struct fs_wb *wb = arg;

	pthread_mutex_lock(&wb->mu);
	while (!wb->stopping) {
		struct due d = { NULL, 0, false };
		int64_t now;

		sweep(wb);
		imap_each(&wb->ents, due_cb, &d);
		now = clk_mono_ms(wb->clk);
		if (d.first && d.first_due <= now) {
			write_for_holder(wb, d.first);
			continue;
		}
		if (d.first)
			wait_until(wb, d.first_due);
		else if (d.any_idle_later || wb->ents.count)
			wait_until(wb, now + wb->interval_ms);
		else
			pthread_cond_wait(&wb->wake, &wb->mu);
	}
	pthread_mutex_unlock(&wb->mu);
	return NULL;
}

int fs_wb_start(struct fs_wb *wb)
{
	int rc;

	if (!wb || wb->running)
		return 0;
	rc = pthread_create(&wb->thread, NULL, flusher_main, wb);
	if (rc)
		return -rc;
	wb->running = true;
	return 0;
}

struct all {
	struct wb_entry *v[64];
	int n;
};

static void dirty_cb(void *arg, uint64_t key, void *value)
{
	struct all *a = arg;
	struct wb_entry *e = value;

	if (a->n < 64 && e->dirty && !e->flushing)
		a->v[a->n++] = e;
}

void fs_wb_stop(struct fs_wb *wb)
{
	int i, rounds;

	if (!wb)
		return;
	pthread_mutex_lock(&wb->mu);
	wb->stopping = true;
	pthread_cond_broadcast(&wb->wake);
	pthread_mutex_unlock(&wb->mu);
	if (wb->running)
		pthread_join(wb->thread, NULL);
	wb->running = false;
	/* Whatever is still pending is written now (bounded rounds: no new
	 * writes come in once the FUSE loop has ended). */
	pthread_mutex_lock(&wb->mu);
	for (rounds = 0; rounds < 1000; rounds++) {
		struct all a = { { 0 }, 0 };

		imap_each(&wb->ents, dirty_cb, &a);
		if (!a.n)
			break;
		for (i = 0; i < a.n; i++)
			a.v[i]->users++;
		for (i = 0; i < a.n; i++) {
			entry_write(wb, a.v[i]);
			a.v[i]->users--;
		}
	}
	pthread_mutex_unlock(&wb->mu);
}

static void free_entry_cb(void *arg, uint64_t key, void *value)
{
	struct fs_wb *wb = arg;
	struct wb_entry *e = value;

	lock_unref(wb->eng, e->lk);
	free(e->data);
	free(e);
}

void fs_wb_free(struct fs_wb *wb)
{
	if (!wb)
		return;
	imap_each(&wb->ents, free_entry_cb, wb);
	imap_fini(&wb->ents);
	pthread_cond_destroy(&wb->wake);
	pthread_cond_destroy(&wb->done);
	pthread_mutex_destroy(&wb->mu);
	free(wb);
}
