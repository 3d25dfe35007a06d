/* store_ddb_rows: lockfs's own rows beside the locks: fence counters,
 * directory markers, and listing a prefix. Stateless; any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

int store_ddb_rows_read_fence(struct store *s, const char *key,
			      int64_t deadline, uint64_t *fence)
{
	struct ddb_item *it;
	int64_t v = 0;
	int rc = get_item(to_sd(s), key, RECORD_SORT_FENCE, deadline, &it);

	if (rc == -ENOENT) {
		rc = 0; /* never allocated */
	} else if (!rc) {
		rc = store_ddb_item_i64(it, A_COUNTER, &v);
		if (rc == -ENOENT)
			rc = 0, v = 0;
		else if (rc || v < 0)
			rc = -EPROTO;
	}
	if (!rc)
		*fence = (uint64_t)v;
	ddb_item_free(it);
	return rc;
}

int store_ddb_rows_next_fence(struct store *s, const char *key,
			      int64_t deadline, uint64_t *fence)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_FENCE);
	struct ddb_item *vals = ddb_item_new(), *out = NULL;
	struct ddb_expr expr = { .update = "ADD " A_COUNTER " :one" };
	struct ddb_call call;
	int64_t v = 0;
	int rc = (k && vals) ? ddb_item_set_n(vals, ":one", 1) : -ENOMEM;

	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_UPDATED_NEW, &out, &call);
	}
	if (!rc)
		rc = out ? store_ddb_item_i64(out, A_COUNTER, &v) : -EPROTO;
	if (!rc && v <= 0)
		rc = -EPROTO;
	if (!rc)
		*fence = (uint64_t)v;
	ddb_item_free(out);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc == -ENOENT ? -EPROTO : rc;
}

/* The marker of directory d, in the lock item of its name, with a fresh
 * RVN (in rvn: what tells this write from any other). */
static int dir_item(const struct dir_record *d, char *rvn,
		    struct ddb_item **out)
{
	struct ddb_item *it = key_item(d->key, RECORD_SORT_LOCK);
	int rc = it ? text_uuid4(rvn) : -ENOMEM;

	if (!rc)
		rc = store_ddb_index_tag(it, d->key);
	if (!rc)
		rc = ddb_item_set_s(it, A_KIND, KIND_DIR);
	if (!rc)
		rc = ddb_item_set_s(it, A_OWNER, DIR_OWNER);
	if (!rc)
		rc = ddb_item_set_n_text(it, A_LEASE, DIR_LEASE);
	if (!rc)
		rc = ddb_item_set_s(it, A_RVN, rvn);
	if (!rc)
		rc = ddb_item_set_n(it, A_EXPIRY, DIR_EXPIRY_S);
	if (!rc)
		rc = ddb_item_set_n(it, A_MODE, d->mode);
	if (!rc)
		rc = ddb_item_set_n(it, A_UID, d->uid);
	if (!rc)
		rc = ddb_item_set_n(it, A_GID, d->gid);
	if (!rc)
		rc = ddb_item_set_n(it, A_CREATED, d->created_real_ms);
	if (rc) {
		ddb_item_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int store_ddb_rows_put_dir(struct store *s, const struct dir_record *d,
			   const char *expect_rvn, int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *it = NULL, *vals = NULL;
	struct ddb_expr cond = { .condition =
					 "attribute_not_exists(" A_KEY ")" };
	struct ddb_item *old = NULL;
	struct ddb_call call;
	char rvn[RECORD_RVN_MAX];
	const char *now_rvn;
	int rc = dir_item(d, rvn, &it);

	if (!rc && expect_rvn) {
		/* Over a lock seen expired, as a takeover (never a marker). */
		vals = ddb_item_new();
		if (!vals || ddb_item_set_s(vals, ":rvn", expect_rvn))
			rc = -ENOMEM;
		cond.condition = "attribute_not_exists(" A_KEY ") OR (" A_RVN
				 " = :rvn AND " NOT_DIR ")";
		cond.values = vals;
	}
	if (!rc) {
		call_init(&call, deadline);
		rc = ddb_put_item(sd->ddb, sd->table, it, &cond, &old, &call);
	}
	/* Refused with our own marker there: an earlier send of this request
	 * landed (its answer was lost and it went again: by the request
	 * layer, or by curl on a fresh connection). The directory is ours,
	 * made once. */
	if (rc == -ECANCELED && old && !ddb_item_get_s(old, A_RVN, &now_rvn) &&
	    !strcmp(now_rvn, rvn))
		rc = 0;
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(it);
	return rc == -ECANCELED ? -EEXIST : rc;
}

/* Updates (expr->update set) or deletes the marker of key in its lock item,
 * then, when there is none there, a marker of the old form. */
static int on_dir_marker(struct store_ddb *sd, const char *key,
			 struct ddb_expr *expr, int64_t deadline)
{
	const char *sorts[2] = { RECORD_SORT_LOCK, RECORD_SORT_DIR };
	struct ddb_item *old = NULL;
	int i, rc = -ENOENT;

	for (i = 0; i < 2 && rc == -ENOENT; i++) {
		struct ddb_item *k = key_item(key, sorts[i]);
		struct ddb_call call;

		if (!k)
			return -ENOMEM;
		/* Both use :kind, as DynamoDB refuses unused values. */
		expr->condition = i == 0 ? IS_DIR
					 : "attribute_exists(" A_KEY
					   ") AND NOT (" IS_DIR ")";
		call_init(&call, deadline);
		rc = expr->update
			     ? ddb_update_item(sd->ddb, sd->table, k, expr,
					       DDB_RETURN_NONE, NULL, &call)
			     : ddb_delete_item(sd->ddb, sd->table, k, expr,
					       DDB_RETURN_NONE, &old, &call);
		ddb_item_free(k);
		/* A delete the request layer sent more than once (an answer
		 * lost or late) refused with no item there: an earlier
		 * attempt removed it (or, racing, another rmdir did: gone
		 * either way), as a lock's release judges (delete_ours).
		 * curl's own sending again on a fresh connection is not
		 * counted in attempts: that case still reads -ENOENT. */
		if (rc == -ECANCELED && !expr->update && !old &&
		    call.attempts > 1)
			rc = 0;
		ddb_item_free(old);
		old = NULL;
		if (rc == -ECANCELED)
			rc = -ENOENT;
	}
	return rc;
}

int store_ddb_rows_set_dir_mode(struct store *s, const char *key, uint32_t mode,
				int64_t deadline)
{
	struct ddb_item *vals = ddb_item_new();
	struct ddb_expr expr = { .update = "SET " A_MODE " = :m" };
	int rc = -ENOMEM;

	if (vals && !ddb_item_set_n(vals, ":m", mode & 07777) &&
	    !ddb_item_set_s(vals, ":kind", KIND_DIR)) {
		expr.values = vals;
		rc = on_dir_marker(to_sd(s), key, &expr, deadline);
	}
	ddb_item_free(vals);
	return rc;
}

/* The marker of key in its lock item, read consistently: its RVN into
 * rvn. -ENOENT when the item is none, or no marker. */
static int marker_rvn(struct store_ddb *sd, const char *key, int64_t deadline,
		      char rvn[static RECORD_RVN_MAX])
{
	struct ddb_item *it;
	const char *v = NULL;
	int rc = get_item(sd, key, RECORD_SORT_LOCK, deadline, &it);

	if (!rc && !is_dir_item(it))
		rc = -ENOENT;
	if (!rc &&
	    (ddb_item_get_s(it, A_RVN, &v) || strlen(v) >= RECORD_RVN_MAX))
		rc = -EPROTO;
	if (!rc)
		strcpy(rvn, v);
	ddb_item_free(it);
	return rc;
}

/* The marker is deleted on the RVN read just before: a delete that reaches
 * DynamoDB late (held by the network while its resend landed) never
 * removes a marker made again since, whose directory a lock inside then
 * lost on every mount. Refused with no item there, the marker read is
 * gone (this delete sent again, curl's resends included, or another
 * rmdir): 0. Markers of the old form are deleted as before. */
int store_ddb_rows_delete_dir(struct store *s, const char *key,
			      int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = ddb_item_new(), *k = NULL, *old = NULL;
	struct ddb_expr expr = { 0 };
	char rvn[RECORD_RVN_MAX];
	struct ddb_call call;
	int rc = -ENOMEM;

	if (!vals || ddb_item_set_s(vals, ":kind", KIND_DIR))
		goto out;
	expr.values = vals;
	rc = marker_rvn(sd, key, deadline, rvn);
	if (rc == -ENOENT) {
		rc = on_dir_marker(sd, key, &expr, deadline);
		goto out;
	}
	if (rc)
		goto out;
	rc = -ENOMEM;
	k = key_item(key, RECORD_SORT_LOCK);
	if (!k || ddb_item_set_s(vals, ":rvn", rvn))
		goto out;
	expr.condition = IS_DIR " AND " A_RVN " = :rvn";
	call_init(&call, deadline);
	rc = ddb_delete_item(sd->ddb, sd->table, k, &expr, DDB_RETURN_NONE,
			     &old, &call);
	if (rc == -ECANCELED)
		rc = old ? -EBUSY : 0; /* made again meanwhile */
out:
	ddb_item_free(old);
	ddb_item_free(k);
	ddb_item_free(vals);
	return rc;
}

int store_ddb_rows_scan(struct store *s, const char *prefix, int64_t deadline,
			store_row_fn fn, void *arg)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = NULL;
	struct ddb_read rd = {
		.filter = *prefix ? "(" A_SORT " = :lk OR " A_SORT
				    " = :dir) AND begins_with(" A_KEY ", :p)"
				  : A_SORT " = :lk OR " A_SORT " = :dir",
		.consistent = true,
	};
	struct row_walk w = { sd, deadline, fn, arg, false };
	int rc;

	vals = ddb_item_new();
	if (!vals || ddb_item_set_s(vals, ":lk", RECORD_SORT_LOCK) ||
	    ddb_item_set_s(vals, ":dir", RECORD_SORT_DIR) ||
	    (*prefix && ddb_item_set_s(vals, ":p", prefix))) {
		ddb_item_free(vals);
		return -ENOMEM;
	}
	rd.values = vals;
	rc = store_ddb_walk_pages(&w, false, &rd);
	ddb_item_free(vals);
	return rc;
}

int store_ddb_rows_list(struct store *s, const char *prefix, int64_t deadline,
			store_row_fn fn, void *arg)
{
	struct store_ddb *sd = to_sd(s);

	if (store_ddb_index_lists(sd, prefix))
		return store_ddb_index_list(sd, prefix, deadline, fn, arg);
	return store_ddb_rows_scan(s, prefix, deadline, fn, arg);
}
