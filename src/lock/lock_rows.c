/* lock_rows: the store requests of the layers above the engine, with the
 * engine's deadline, and the one rule by which a row lapses (see
 * lock_rows.h). No state of its own and no engine mutex: the store and
 * the observation are thread-safe.
 *
 * Threads: any (FUSE workers, the flk wait thread, lease workers). */
#include "lock_rows.h"

#include <errno.h>
#include <string.h>

#include "lock_state.h"
#include "log.h"

static int64_t deadline(const struct lock_engine *e)
{
	return op_deadline(e);
}

int lock_rows_get(struct lock_engine *e, const char *key,
		  struct lock_record *out)
{
	return e->store->ops->get_lock(e->store, key, deadline(e), out);
}

void lock_rows_get_many(struct lock_engine *e, const char *const *keys,
			size_t n, struct lock_record *outs, int *rcs)
{
	struct store *s = e->store;
	int64_t d = deadline(e);

	if (s->ops->get_locks) {
		s->ops->get_locks(s, keys, n, d, outs, rcs);
		return;
	}
	for (size_t i = 0; i < n; i++)
		rcs[i] = s->ops->get_lock(s, keys[i], d, &outs[i]);
}

int lock_rows_lookup(struct lock_engine *e, const char *key,
		     struct store_lookup *out)
{
	return e->store->ops->lookup(e->store, key, deadline(e), out);
}

int lock_rows_break(struct lock_engine *e, const char *key, const char *rvn)
{
	int rc;

	if (!rvn)
		return -EINVAL; /* never "any row": only the one seen */
	rc = e->store->ops->delete_lock(e->store, key, rvn, deadline(e), NULL,
					NULL);
	if (!rc)
		lock_rows_forget(e, key);
	return rc;
}

int lock_rows_put_dir(struct lock_engine *e, const struct dir_record *d,
		      bool take_lapsed)
{
	char rvn[RECORD_RVN_MAX];
	bool lapsed = take_lapsed && lock_rows_lapsed_rvn(e, d->key, rvn);

	return e->store->ops->put_dir(e->store, d, lapsed ? rvn : NULL,
				      deadline(e));
}

int lock_rows_set_dir_mode(struct lock_engine *e, const char *key,
			   uint32_t mode)
{
	return e->store->ops->set_dir_mode(e->store, key, mode, deadline(e));
}

int lock_rows_delete_dir(struct lock_engine *e, const char *key)
{
	return e->store->ops->delete_dir(e->store, key, deadline(e));
}

int lock_rows_list(struct lock_engine *e, const char *prefix, store_row_fn fn,
		   void *arg)
{
	return e->store->ops->list(e->store, prefix, deadline(e), fn, arg);
}

bool lock_rows_judge_version(struct lock_engine *e, const char *obs_key,
			     const char *version, int64_t lease_ms,
			     struct observation *ob)
{
	struct observation mine;

	if (!ob)
		ob = &mine;
	if (!obs_key) { /* a row without its key: never judged lapsed */
		ob->expired = false;
		ob->remaining_ms = lease_ms;
		ob->first_seen_real_ms = 0;
		return false;
	}
	observe_note(e->obs, obs_key, version, lease_ms, ob);
	return ob->expired;
}

bool lock_rows_judge(struct lock_engine *e, const struct lock_record *row,
		     struct observation *ob)
{
	/* A row a release reserved for this mount (lock_fair.c) is ours to
	 * take over at once, by its RVN: noted as lapsed (a lease of 0).
	 * To everyone else it is a held row, judged as any. */
	bool ours = row->reserved_for && !strcmp(row->reserved_for, e->owner);

	if (e->cfg.session && !row->has_lockfs && !row->reserved_for &&
	    !__atomic_exchange_n(&e->python_row_logged, 1, __ATOMIC_SEQ_CST))
		log_err("session",
			"a python_dynamodb_lock row (key=%s) is in the table: "
			"session mode is meant for tables only lockfs uses; "
			"rows of this mount carry a lease of a year, so such "
			"clients never take them, but they must not rely on "
			"this mount's liveness",
			row->key ? row->key : "?");
	if (row->session && row->key && !row->shared && !ours)
		return lock_rows_judge_session(e, row, ob);
	return lock_rows_judge_version(e, row->key, row->rvn,
				       ours ? 0 : row->lease_ms, ob);
}

bool lock_rows_lapsed_rvn(struct lock_engine *e, const char *key, char *rvn_out)
{
	return observe_expired_rvn(e->obs, key, rvn_out);
}

void lock_rows_forget(struct lock_engine *e, const char *key)
{
	observe_forget(e->obs, key);
}
