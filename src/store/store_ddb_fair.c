/* store_ddb_fair: fair handoff of rows held exclusively
 * (doc/fair-handoff.md): a waiting mount's mark on the row (lockfs_next,
 * the RVN left as it is) and a holder's release that turns a marked row
 * into a reservation for the marker (lockfs_reserved_for) instead of
 * deleting it. Each step one conditional write; stateless; any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Release: a delete, then (on a marked row of ours) a reservation; the
 * mark may change between the two, hence a few rounds. */
#define RELEASE_TRIES 3

int store_ddb_fair_mark_next(struct store *s, const char *key,
			     const char *observed_rvn, const char *id,
			     const char *v, int64_t waited_ms,
			     const char *replace_v, int64_t deadline,
			     struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new(), *mark = NULL, *old = NULL;
	const char *names[] = { "#id", W_ID, "#v", W_V, NULL };
	struct ddb_expr expr = {
		.update = "SET " A_NEXT " = :n",
		.condition =
			replace_v ? A_RVN " = :rvn AND " NOT_DIR
					  " AND attribute_not_exists(" A_SHARE
					  ") AND (attribute_not_exists(" A_NEXT
					  ") OR " A_NEXT ".#id = :id OR " A_NEXT
					  ".#v = :stale)"
				  : A_RVN " = :rvn AND " NOT_DIR
					  " AND attribute_not_exists(" A_SHARE
					  ") AND (attribute_not_exists(" A_NEXT
					  ") OR " A_NEXT ".#id = :id)",
		.names = names,
	};
	struct ddb_call call;
	int rc =
		(k && vals) ? store_ddb_item_writer_map(id, v, &mark) : -ENOMEM;

	if (has_cur)
		*has_cur = false;
	if (!replace_v)
		names[2] = NULL; /* #v is not used */
	if (!rc)
		rc = ddb_item_set_n(mark, W_WAIT, waited_ms);
	if (!rc)
		rc = ddb_item_set_m(vals, ":n", mark);
	if (!rc)
		rc = ddb_item_set_s(vals, ":id", id);
	if (!rc)
		rc = ddb_item_set_s(vals, ":rvn", observed_rvn);
	if (!rc && replace_v)
		rc = ddb_item_set_s(vals, ":stale", replace_v);
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, &old, &call);
		if (rc == -ECANCELED) {
			int frc = store_ddb_item_cur(sd, old, cur, has_cur);

			rc = frc ? frc : rc;
		}
	}
	ddb_item_free(old);
	ddb_item_free(mark);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

/* DeleteItem on our RVN, unless the row is marked. */
static int delete_unmarked(struct store_ddb *sd, struct ddb_item *k,
			   const char *expect_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct ddb_item *vals = ddb_item_new(), *old = NULL;
	struct ddb_expr cond = {
		.condition =
			A_RVN " = :rvn AND attribute_not_exists(" A_NEXT ")",
	};
	struct ddb_call call;
	int rc = vals ? ddb_item_set_s(vals, ":rvn", expect_rvn) : -ENOMEM;

	if (!rc) {
		cond.values = vals;
		call_init(&call, deadline);
		rc = ddb_delete_item(sd->ddb, sd->table, k, &cond,
				     DDB_RETURN_NONE, &old, &call);
	}
	if (rc == -ECANCELED) {
		int frc = store_ddb_item_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
	ddb_item_free(old);
	ddb_item_free(vals);
	return rc;
}

/* PutItem of the reservation for the mark seen (id, v), on our RVN and
 * that mark. */
static int put_reservation(struct store_ddb *sd,
			   const struct lock_record *reservation,
			   const char *expect_rvn, const char *id,
			   const char *v, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct lock_record rec;
	struct ddb_item *item = NULL, *vals = NULL, *old = NULL;
	const char *names[] = { "#v", W_V, NULL };
	struct ddb_expr cond = {
		.condition = A_RVN " = :rvn AND " A_NEXT ".#v = :v",
		.names = names,
	};
	struct ddb_call call;
	int rc;

	record_init(&rec);
	rc = record_copy(&rec, reservation);
	if (!rc)
		rc = record_set_str(&rec.reserved_for, id);
	if (!rc)
		rc = store_ddb_record_to_item(&rec, &item);
	record_fini(&rec);
	if (rc)
		return rc;
	vals = ddb_item_new();
	rc = vals ? ddb_item_set_s(vals, ":rvn", expect_rvn) : -ENOMEM;
	if (!rc)
		rc = ddb_item_set_s(vals, ":v", v);
	if (!rc) {
		cond.values = vals;
		call_init(&call, deadline);
		rc = ddb_put_item(sd->ddb, sd->table, item, &cond, &old, &call);
	}
	if (rc == -ECANCELED) {
		int frc = store_ddb_item_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(item);
	return rc;
}

int store_ddb_fair_release(struct store *s, const char *key,
			   const char *expect_rvn,
			   const struct lock_record *reservation,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	char id[RECORD_RVN_MAX * 2], v[RECORD_RVN_MAX];
	bool has = false;
	int attempt, rc = k && cur ? -EAGAIN : -ENOMEM;

	if (has_cur)
		*has_cur = false;
	for (attempt = 0; k && cur && attempt < RELEASE_TRIES; attempt++) {
		record_fini(cur);
		has = false;
		rc = delete_unmarked(sd, k, expect_rvn, deadline, cur, &has);
		if (rc != -ECANCELED || !has || strcmp(cur->rvn, expect_rvn) ||
		    !cur->next_id)
			break; /* deleted, failed, or not ours */
		/* Ours, and marked: the marker's turn. */
		if (strlen(cur->next_id) >= sizeof(id)) {
			rc = -EINVAL;
			break;
		}
		strcpy(id, cur->next_id);
		text_copy(v, sizeof(v), cur->next_v);
		record_fini(cur);
		has = false;
		rc = put_reservation(sd, reservation, expect_rvn, id, v,
				     deadline, cur, &has);
		if (rc != -ECANCELED || !has || strcmp(cur->rvn, expect_rvn))
			break;
		rc = -EAGAIN; /* the mark changed meanwhile: again */
	}
	if (rc == -ECANCELED && has_cur)
		*has_cur = has;
	ddb_item_free(k);
	return rc;
}
