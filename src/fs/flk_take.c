/* flk_take: taking a key for a file lock from the engine: the lock the
 * open file acquired with O_CREAT becomes the file lock's, a poll reads
 * the row first (a held key costs a read, not a failed conditional
 * write) and a writer's poll that finds the row held marks it: read
 * shared, so that no new reader joins; held exclusively, so that its
 * release reserves it for us (lock_writer_mark). Called without f->mu, by
 * the thread that set the key's taking flag (a request or the wait
 * thread); every store request goes through the engine (lock_rows.h).
 * A key the requester's process group holds by a create whose file is
 * closed is lent to its file lock, without a request. */
#include "flk_int.h"

#include <errno.h>
#include <string.h>

#include "lock_rows.h"

/* A writer waiting on a key held elsewhere (row): marks the row, or
 * refreshes our mark once a heartbeat old: on a row read shared, so that
 * no new reader joins it; on one held exclusively, so that its release
 * reserves it for us (doc/fair-handoff.md). The mark
 * (fk's, reached only by the thread holding fk->taking) is our mount's:
 * every writer of ours waiting on the key keeps the same. */
/* Whether row lacks our mark, or bears one a heartbeat old or more. */
static bool mark_due(struct flk *f, const struct lock_record *row,
		     const char *mark_v, int64_t mark_mono_ms)
{
	const char *me = lock_engine_config(f->eng)->owner;
	int64_t hb = lock_engine_config(f->eng)->heartbeat_ms;
	const char *id = row->shared ? row->writer_id : row->next_id;
	const char *v = row->shared ? row->writer_v : row->next_v;
	bool ours = id && mark_v[0] && !strcmp(id, me) && !strcmp(v, mark_v);

	return !ours || flk_int_now(f) - mark_mono_ms >= hb;
}

static void mark_row(struct flk *f, const char *key,
		     const struct lock_record *row, char *mark_v,
		     int64_t *mark_mono_ms, int64_t waited_ms)
{
	if (!mark_due(f, row, mark_v, *mark_mono_ms))
		return;
	/* The longest waiter goes next: a mark of another mount that has
	 * waited (by our estimate, short by up to a poll) less is replaced. */
	if (!lock_waiter_mark(f->eng, key, row, mark_v, waited_ms,
			      f->cfg.poll_max_ms))
		*mark_mono_ms = flk_int_now(f);
}

int flk_int_poll_verdict(struct flk *f, const char *key, int read_rc,
			 const struct lock_record *row, bool shared,
			 bool may_mark, char *mark_v, int64_t *mark_mono_ms,
			 int64_t waited_ms)
{
	bool lapsed;

	if (read_rc == -ENOENT)
		return 0;
	if (read_rc)
		return read_rc;
	lapsed = lock_rows_judge(f->eng, row, NULL);
	if (lock_row_admits(f->eng, row, shared, lapsed))
		return 0;
	if (!shared && mark_v) {
		if (!may_mark && mark_due(f, row, mark_v, *mark_mono_ms))
			return 1;
		mark_row(f, key, row, mark_v, mark_mono_ms, waited_ms);
	}
	return -EEXIST;
}

int flk_int_downgrade(struct flk *f, struct lock *lk)
{
	bool held = f->cfg.around_downgrade &&
		    !f->cfg.around_downgrade(f->cfg.arg, lk, true);
	int rc = lock_downgrade(f->eng, lk);

	if (held)
		f->cfg.around_downgrade(f->cfg.arg, lk, false);
	return rc == -EIO ? -ENOLCK : rc;
}

/* Tries to take key for a file lock (mu not held). 0 with *out; -EBUSY
 * when this mount holds it otherwise; -EEXIST when another owner does;
 * other -errno. With poll, a consistent read comes first so that a held
 * key costs a read, not a failed conditional write; a writer's poll that
 * finds the row held marks it (mark_v, *mark_mono_ms: fk's mark). A
 * shared request that finds the open file's own O_CREAT lock downgrades
 * it; a request whose process group holds the key gets that lock as it
 * is, lent (*lent). */
int flk_int_try_take(struct flk *f, const char *key,
		     const struct lock_holder *h, struct lock *handle_lock,
		     bool shared, bool poll, struct lock **out, bool *lent,
		     char *mark_v, int64_t *mark_mono_ms, int64_t waited_ms)
{
	struct lock *local = lock_find(f->eng, key);
	int rc;

	*lent = false;
	if (local && local != handle_lock &&
	    lock_held_by_group(f->eng, local, h)) {
		/* The requester's process group holds the key (a create under
		 * hold=pgrp): its file lock uses that lock, which stays the
		 * group's (exclusive, even for a shared request). */
		*lent = true;
		*out = local;
		return 0;
	}
	if (local) {
		if (local == handle_lock) {
			/* The open file that acquired it with O_CREAT: the file
			 * lock owns it from now on. */
			lock_set_hold(f->eng, local, HOLD_FLOCK);
			rc = shared ? flk_int_downgrade(f, local) : 0;
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

		record_init(&row);
		rc = lock_rows_get(f->eng, key, &row);
		metrics_inc(f->m, MC_WAIT_POLLS);
		rc = flk_int_poll_verdict(f, key, rc, &row, shared, true,
					  mark_v, mark_mono_ms, waited_ms);
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

/* A writer waiting behind our own readers (mu not held, fk->taking): the
 * row is shared by us and maybe other mounts; it is marked so that no
 * other mount's reader joins meanwhile. */
void flk_int_mark_behind_readers(struct flk *f, const char *key, char *mark_v,
				 int64_t *mark_mono_ms)
{
	struct lock_record row;

	record_init(&row);
	if (!lock_rows_get(f->eng, key, &row))
		mark_row(f, key, &row, mark_v, mark_mono_ms, 0);
	record_fini(&row);
}
