/* store_ddb_shared: rows held shared (readers in a map of the lock row,
 * a writer's mark): renew, join, leave, evict, mark and clear, each one
 * conditional write. Stateless; any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

/* The placeholders of the shared expressions: #me is the reader (or the
 * writer's id is a value), the fields always through names. */
#define ME_V  A_READERS ".#me.#v"
#define IS_SH A_SHARE " = :sh"

static const char *const *share_names(const char **names, const char *me)
{
	size_t n = 0;

	if (me) {
		names[n++] = "#me";
		names[n++] = me;
	}
	names[n++] = "#v";
	names[n++] = R_V;
	names[n] = NULL;
	return names;
}

/* The answer of a conditional shared write: -ECANCELED fills *cur. */
static int share_result(struct store_ddb *sd, int rc, struct ddb_item *old,
			struct lock_record *cur, bool *has_cur)
{
	if (has_cur)
		*has_cur = false;
	if (rc == -ECANCELED) {
		int frc = store_ddb_item_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
	return rc;
}

/* The one request of a shared write, once rc (building vals) is 0: key's
 * lock row updated by expr with the values vals, which it frees. rv and
 * *out as ddb_update_item; the answer through share_result. */
static int share_update(struct store_ddb *sd, int rc, const char *key,
			struct ddb_expr *expr, struct ddb_item *vals,
			enum ddb_return rv, int64_t deadline,
			struct ddb_item **out, struct lock_record *cur,
			bool *has_cur)
{
	struct ddb_item *k = rc ? NULL : key_item(key, RECORD_SORT_LOCK);
	struct ddb_call call;

	if (!rc && !k)
		rc = -ENOMEM;
	if (!rc) {
		expr->values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, expr, rv, out,
				     &call);
		rc = share_result(sd, rc, out ? *out : NULL, cur, has_cur);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

int store_ddb_shared_renew(struct store_ddb *sd, const char *key,
			   const char *expect_v, const struct lock_renewal *rn,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur)
{
	struct ddb_item *vals = ddb_item_new(), *out = NULL;
	const char *names[10];
	struct ddb_expr expr = {
		.condition = ME_V " = :old",
		.names = names,
	};
	int rc = (vals && rn->row_rvn) ? 0 : -ENOMEM;

	if (!rc) {
		share_names(names, rn->reader);
		names[4] = "#hb";
		names[5] = R_HB;
		names[6] = "#fe";
		names[7] = R_FENCE;
		names[8] = NULL;
		expr.update =
			rn->set_fence
				? "SET " A_READERS ".#me.#v = :new, " A_READERS
				  ".#me.#hb = :hb, " A_READERS
				  ".#me.#fe = :f, " A_RVN " = :rvn, " A_EXPIRY
				  " = :exp, " A_HB " = :hb"
				: "SET " A_READERS ".#me.#v = :new, " A_READERS
				  ".#me.#hb = :hb, " A_RVN " = :rvn, " A_EXPIRY
				  " = :exp, " A_HB " = :hb";
		if (!rn->set_fence)
			names[6] = NULL; /* DynamoDB refuses unused names */
		rc = ddb_item_set_s(vals, ":new", rn->new_rvn);
	}
	if (!rc)
		rc = ddb_item_set_s(vals, ":old", expect_v);
	if (!rc)
		rc = ddb_item_set_s(vals, ":rvn", rn->row_rvn);
	if (!rc)
		rc = ddb_item_set_n(vals, ":exp", rn->expiry_real_s);
	if (!rc)
		rc = ddb_item_set_n(vals, ":hb", rn->heartbeat_real_ms);
	if (!rc && rn->set_fence)
		rc = ddb_item_set_n(vals, ":f", (int64_t)rn->fence);
	rc = share_update(sd, rc, key, &expr, vals, DDB_RETURN_ALL_NEW,
			  deadline, &out, cur, has_cur);
	if (!rc && out && cur) {
		/* The row as it now is: the other readers too. */
		rc = store_ddb_item_to_record(out, sd->default_lease_ms, cur);
		if (!rc && has_cur)
			*has_cur = true;
	}
	ddb_item_free(out);
	return rc;
}

int store_ddb_shared_join(struct store *s, const struct lock_record *rec,
			  bool raise_lease, int64_t deadline,
			  struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = NULL, *entry = NULL, *old = NULL;
	const char *names[6];
	char lease[32];
	struct ddb_expr expr = { .names = names };
	int rc;

	if (!rec->shared || rec->n_readers != 1)
		return -EINVAL;
	vals = ddb_item_new();
	rc = vals ? store_ddb_item_reader_map(&rec->readers[0], &entry)
		  : -ENOMEM;
	share_names(names, rec->readers[0].id);
	names[2] = NULL; /* #v is not used */
	text_format_seconds_short(rec->lease_ms, lease, sizeof(lease));
	if (raise_lease) {
		expr.update =
			"SET " A_READERS ".#me = :e, " A_RVN
			" = :rvn, " A_EXPIRY " = :exp, " A_LEASE " = :lease";
		expr.condition = IS_SH " AND attribute_not_exists(" A_WRITER
				       ") AND " A_LEASE " < :lease";
	} else {
		expr.update = "SET " A_READERS ".#me = :e, " A_RVN
			      " = :rvn, " A_EXPIRY " = :exp";
		expr.condition = IS_SH " AND attribute_not_exists(" A_WRITER
				       ") AND " A_LEASE " >= :lease";
	}
	if (!rc)
		rc = ddb_item_set_m(vals, ":e", entry);
	if (!rc)
		rc = ddb_item_set_s(vals, ":rvn", rec->rvn);
	if (!rc)
		rc = ddb_item_set_n(vals, ":exp", rec->expiry_real_s);
	if (!rc)
		rc = ddb_item_set_n_text(vals, ":lease", lease);
	if (!rc)
		rc = ddb_item_set_s(vals, ":sh", RECORD_SHARED);
	rc = share_update(sd, rc, rec->key, &expr, vals, DDB_RETURN_NONE,
			  deadline, &old, cur, has_cur);
	ddb_item_free(old);
	ddb_item_free(entry);
	return rc;
}

int store_ddb_shared_leave(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   const char *new_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = ddb_item_new(), *out = NULL;
	const char *names[6];
	struct ddb_expr expr = {
		.update = "SET " A_RVN " = :rvn REMOVE " A_READERS ".#me",
		.condition = ME_V " = :old",
		.names = share_names(names, reader_id),
	};
	struct ddb_call call;
	struct lock_record now;
	int rc = vals ? ddb_item_set_s(vals, ":rvn", new_rvn) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(vals, ":old", expect_v);
	rc = share_update(sd, rc, key, &expr, vals, DDB_RETURN_ALL_NEW,
			  deadline, &out, cur, has_cur);
	record_init(&now);
	if (!rc && out &&
	    !store_ddb_item_to_record(out, sd->default_lease_ms, &now) &&
	    now.shared && !now.n_readers && !now.writer_id) {
		/* The last reader left: the row goes, unless someone joined
		 * or marked it meanwhile. Best effort: a row left behind
		 * without readers is free to anyone (store.h). */
		struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
		struct ddb_item *dv = ddb_item_new();
		struct ddb_expr cond = {
			.condition = A_RVN
			" = :rvn AND size(" A_READERS
			") = :zero AND attribute_not_exists(" A_WRITER ")",
		};

		if (k && dv && !ddb_item_set_s(dv, ":rvn", new_rvn) &&
		    !ddb_item_set_n(dv, ":zero", 0)) {
			cond.values = dv;
			call_init(&call, deadline);
			ddb_delete_item(sd->ddb, sd->table, k, &cond,
					DDB_RETURN_NONE, NULL, &call);
		}
		ddb_item_free(dv);
		ddb_item_free(k);
	}
	record_fini(&now);
	ddb_item_free(out);
	return rc;
}

int store_ddb_shared_evict(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   int64_t deadline)
{
	struct ddb_item *vals = ddb_item_new();
	const char *names[6];
	struct ddb_expr expr = {
		.update = "REMOVE " A_READERS ".#me",
		.condition = ME_V " = :old",
		.names = share_names(names, reader_id),
	};
	int rc = vals ? ddb_item_set_s(vals, ":old", expect_v) : -ENOMEM;

	return share_update(to_sd(s), rc, key, &expr, vals, DDB_RETURN_NONE,
			    deadline, NULL, NULL, NULL);
}

int store_ddb_shared_mark_writer(struct store *s, const char *key,
				 const char *id, const char *v,
				 const char *replace_v, int64_t deadline,
				 struct lock_record *cur, bool *has_cur)
{
	struct ddb_item *vals = ddb_item_new(), *mark = NULL, *old = NULL;
	const char *names[] = { "#id", W_ID, "#v", W_V, NULL };
	struct ddb_expr expr = {
		.update = "SET " A_WRITER " = :w",
		.condition = replace_v ? IS_SH
				     " AND (attribute_not_exists(" A_WRITER
				     ") OR " A_WRITER ".#id = :id OR " A_WRITER
				     ".#v = :stale)"
				       : IS_SH
				     " AND (attribute_not_exists(" A_WRITER
				     ") OR " A_WRITER ".#id = :id)",
		.names = names,
	};
	int rc = vals ? store_ddb_item_writer_map(id, v, &mark) : -ENOMEM;

	if (!replace_v)
		names[2] = NULL; /* #v is not used */
	if (!rc)
		rc = ddb_item_set_m(vals, ":w", mark);
	if (!rc)
		rc = ddb_item_set_s(vals, ":id", id);
	if (!rc)
		rc = ddb_item_set_s(vals, ":sh", RECORD_SHARED);
	if (!rc && replace_v)
		rc = ddb_item_set_s(vals, ":stale", replace_v);
	rc = share_update(to_sd(s), rc, key, &expr, vals, DDB_RETURN_NONE,
			  deadline, &old, cur, has_cur);
	ddb_item_free(old);
	ddb_item_free(mark);
	return rc;
}

int store_ddb_shared_clear_writer(struct store *s, const char *key,
				  const char *v, int64_t deadline)
{
	struct ddb_item *vals = ddb_item_new();
	const char *names[] = { "#v", W_V, NULL };
	/* A row carries a writer mark (shared) or a next mark (exclusive),
	 * never both: whichever is v's goes. */
	struct ddb_expr expr = {
		.update = "REMOVE " A_WRITER ", " A_NEXT,
		.condition = A_WRITER ".#v = :v OR " A_NEXT ".#v = :v",
		.names = names,
	};
	int rc = vals ? ddb_item_set_s(vals, ":v", v) : -ENOMEM;

	return share_update(to_sd(s), rc, key, &expr, vals, DDB_RETURN_NONE,
			    deadline, NULL, NULL, NULL);
}
