/* store_ddb: lock records as DynamoDB items, with the conditions of the
 * python_dynamodb_lock protocol (see store_ddb.h): the store's operations
 * table and the exclusive lock's get, lookup, put, renew and delete; rows
 * held shared, lockfs's own rows and the table are in store_ddb_shared,
 * store_ddb_rows and store_ddb_table. Stateless apart from the table name;
 * any thread. Each operation is one DynamoDB request (retried by the
 * request layer within the deadline when the failure is transient); the
 * lock rows of many keys are one BatchGetItem per 100 keys. */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "log.h"
#include "text.h"

static int sd_get_lock(struct store *s, const char *key, int64_t deadline,
		       struct lock_record *out)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *it;
	int rc = get_item(sd, key, RECORD_SORT_LOCK, deadline, &it);

	if (!rc && is_dir_item(it))
		rc = -ENOENT; /* a namespace: there is no lock */
	store_ddb_index_saw(sd, rc ? NULL : it);
	if (!rc)
		rc = store_ddb_item_to_record(it, sd->default_lease_ms, out);
	ddb_item_free(it);
	return rc;
}

/* One BatchGetItem for keys[0..n) (n <= DDB_BATCH_GET_MAX), each key's
 * item treated as sd_get_lock treats its one. */
static void get_batch(struct store_ddb *sd, const char *const *keys, size_t n,
		      int64_t deadline, struct lock_record *outs, int *rcs)
{
	struct ddb_item *k[DDB_BATCH_GET_MAX] = { 0 };
	struct ddb_item *items[DDB_BATCH_GET_MAX];
	struct ddb_call call;
	size_t i;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		k[i] = key_item(keys[i], RECORD_SORT_LOCK);
		if (!k[i])
			rc = -ENOMEM;
	}
	call_init(&call, deadline);
	if (!rc)
		ddb_batch_get_item(sd->ddb, sd->table,
				   (const struct ddb_item *const *)k, n, true,
				   items, rcs, &call);
	for (i = 0; i < n; i++) {
		if (rc) {
			rcs[i] = rc;
		} else {
			if (!rcs[i] && is_dir_item(items[i]))
				rcs[i] = -ENOENT; /* a namespace: no lock */
			store_ddb_index_saw(sd, rcs[i] ? NULL : items[i]);
			if (!rcs[i])
				rcs[i] = store_ddb_item_to_record(
					items[i], sd->default_lease_ms,
					&outs[i]);
			ddb_item_free(items[i]);
		}
		ddb_item_free(k[i]);
	}
}

/* keys[0..n) (n <= DDB_BATCH_GET_MAX) in one BatchGetItem, or fewer
 * keys per request when it must: an answer too big for the response cap
 * (rows with data up to 64 KiB, or many readers) is asked for again in
 * halves, down to one GetItem per key; a policy that allows GetItem but
 * not BatchGetItem (written for an older lockfs) is said once in the log,
 * and the keys are read one by one from then on. Either way every key gets
 * its answer: waits work, at more requests. */
static void read_rows(struct store_ddb *sd, const char *const *keys, size_t n,
		      int64_t deadline, struct lock_record *outs, int *rcs)
{
	size_t i, half = n / 2;

	if (n > 1 && !atomic_load(&sd->batch_refused)) {
		get_batch(sd, keys, n, deadline, outs, rcs);
		/* (a failed request is every key's error) */
		if (rcs[0] == -EMSGSIZE) {
			read_rows(sd, keys, half, deadline, outs, rcs);
			read_rows(sd, keys + half, n - half, deadline,
				  outs + half, rcs + half);
			return;
		}
		if (rcs[0] != -EACCES)
			return;
		if (!atomic_exchange(&sd->batch_refused, true))
			log_warn("store",
				 "BatchGetItem refused (access denied): "
				 "file-lock waits read their keys with one "
				 "GetItem each until the policy allows "
				 "dynamodb:BatchGetItem "
				 "(contrib/iam/lockfs-policy.json) and the "
				 "mount is restarted");
	}
	for (i = 0; i < n; i++)
		rcs[i] = sd_get_lock(&sd->base, keys[i], deadline, &outs[i]);
}

/* store_ops.get_locks: one BatchGetItem per DDB_BATCH_GET_MAX keys
 * (read_rows); a single key is a GetItem, as get_lock. */
static void sd_get_locks(struct store *s, const char *const *keys, size_t n,
			 int64_t deadline, struct lock_record *outs, int *rcs)
{
	size_t at, chunk;

	for (at = 0; at < n; at += chunk) {
		chunk = n - at < DDB_BATCH_GET_MAX ? n - at : DDB_BATCH_GET_MAX;
		read_rows(to_sd(s), keys + at, chunk, deadline, outs + at,
			  rcs + at);
	}
}

static int sd_lookup(struct store *s, const char *key, int64_t deadline,
		     struct store_lookup *out)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = ddb_item_new();
	struct ddb_read rd = {
		.key_condition = A_KEY " = :k",
		.values = vals,
		.consistent = true,
	};
	struct ddb_page page = { 0 };
	struct ddb_call call;
	size_t i;
	int rc;

	if (!vals || ddb_item_set_s(vals, ":k", key)) {
		ddb_item_free(vals);
		return -ENOMEM;
	}
	call_init(&call, deadline);
	/* A key has at most three rows (lock, directory, fence): one page. */
	rc = ddb_query(sd->ddb, sd->table, &rd, NULL, &page, &call);
	for (i = 0; !rc && i < page.n; i++) {
		const char *sort;

		if (ddb_item_get_s(page.items[i], A_SORT, &sort))
			continue;
		if (is_dir_item(page.items[i])) {
			out->has_dir = true;
			rc = store_ddb_item_to_dir(page.items[i], &out->dir);
		} else if (!strcmp(sort, RECORD_SORT_LOCK)) {
			out->has_lock = true;
			store_ddb_index_saw(sd, page.items[i]);
			rc = store_ddb_item_to_record(page.items[i],
						      sd->default_lease_ms,
						      &out->lock);
		}
	}
	ddb_page_fini(&page);
	ddb_item_free(vals);
	return rc;
}

/* The conditions of a lock row's PutItem: over the row of :rvn (shared:
 * unless a writer marked it), or where no row is. */
#define OVER_SH                                                                \
	"(" A_RVN " = :rvn AND " NOT_DIR " AND attribute_not_exists(" A_WRITER \
	"))"
#define OVER_EX "(" A_RVN " = :rvn AND " NOT_DIR ")"
#define NO_ROW	"attribute_not_exists(" A_KEY ")"

/* No row (expect_rvn NULL); no row or the row of expect_rvn; or
 * (over_only) that row alone. */
static const char *put_condition(const struct lock_record *rec,
				 const char *expect_rvn, bool over_only)
{
	if (!expect_rvn)
		return NO_ROW;
	if (over_only)
		return rec->shared ? OVER_SH : OVER_EX;
	return rec->shared ? NO_ROW " OR " OVER_SH : NO_ROW " OR " OVER_EX;
}

static int put_row(struct store *s, const struct lock_record *rec,
		   const char *expect_rvn, bool over_only, int64_t deadline,
		   struct lock_record *cur, bool *has_cur, bool *unanswered)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *item = NULL, *vals = NULL, *old = NULL;
	struct ddb_expr cond = { 0 };
	struct ddb_call call;
	int rc;

	rc = store_ddb_record_to_item(rec, &item);
	if (rc)
		return rc;
	cond.condition = put_condition(rec, expect_rvn, over_only);
	if (expect_rvn) {
		vals = ddb_item_new();
		if (!vals || ddb_item_set_s(vals, ":rvn", expect_rvn)) {
			rc = -ENOMEM;
			goto out;
		}
		cond.values = vals;
	}
	call_init(&call, deadline);
	rc = ddb_put_item(sd->ddb, sd->table, item, &cond, &old, &call);
	if (unanswered)
		*unanswered = call.unanswered > 0;
	if (rc == -ECANCELED && old && is_dir_item(old)) {
		rc = -EISDIR; /* the name is a namespace */
	} else if (rc == -ECANCELED) {
		int frc = store_ddb_item_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
out:
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(item);
	return rc;
}

static int sd_put_lock(struct store *s, const struct lock_record *rec,
		       const char *expect_rvn, int64_t deadline,
		       struct lock_record *cur, bool *has_cur, bool *unanswered)
{
	return put_row(s, rec, expect_rvn, false, deadline, cur, has_cur,
		       unanswered);
}

static int sd_replace_lock(struct store *s, const struct lock_record *rec,
			   const char *expect_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	if (!expect_rvn)
		return -EINVAL;
	return put_row(s, rec, expect_rvn, true, deadline, cur, has_cur, NULL);
}

static int sd_renew_lock(struct store *s, const char *key,
			 const char *expect_rvn, const struct lock_renewal *rn,
			 int64_t deadline, struct lock_record *cur,
			 bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new(), *old = NULL;
	struct buf update = BUF_INIT;
	struct ddb_expr expr = { 0 };
	struct ddb_call call;
	int rc = (k && vals) ? 0 : -ENOMEM;

	if (rn->reader) {
		ddb_item_free(vals);
		ddb_item_free(k);
		return rn->set_data
			       ? -EINVAL
			       : store_ddb_shared_renew(sd, key, expect_rvn, rn,
							deadline, cur, has_cur);
	}
	if (!rc)
		rc = buf_puts(&update, "SET " A_RVN " = :new, " A_EXPIRY
				       " = :exp, " A_HB " = :hb");
	if (!rc)
		rc = ddb_item_set_s(vals, ":new", rn->new_rvn);
	if (!rc)
		rc = ddb_item_set_s(vals, ":old", expect_rvn);
	if (!rc)
		rc = ddb_item_set_n(vals, ":exp", rn->expiry_real_s);
	if (!rc)
		rc = ddb_item_set_n(vals, ":hb", rn->heartbeat_real_ms);
	if (!rc && rn->set_fence) {
		rc = buf_puts(&update, ", " A_FENCE " = :f");
		if (!rc)
			rc = ddb_item_set_n(vals, ":f", (int64_t)rn->fence);
	}
	if (!rc && rn->set_data && rn->data_len) {
		rc = buf_puts(&update, ", " A_DATA " = :d");
		if (!rc)
			rc = store_ddb_item_set_data(vals, ":d", rn->data,
						     rn->data_len);
	}
	if (!rc && rn->set_data && !rn->data_len)
		rc = buf_puts(&update, " REMOVE " A_DATA);
	if (rc)
		goto out;
	expr.update = buf_str(&update);
	expr.condition = A_RVN " = :old";
	expr.values = vals;
	call_init(&call, deadline);
	rc = ddb_update_item(sd->ddb, sd->table, k, &expr, DDB_RETURN_NONE,
			     &old, &call);
	if (rc == -ECANCELED) {
		int frc = store_ddb_item_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
out:
	buf_fini(&update);
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_delete_lock(struct store *s, const char *key,
			  const char *expect_rvn, int64_t deadline,
			  struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = NULL, *old = NULL;
	struct ddb_expr cond = { 0 };
	struct ddb_call call;
	int rc = k ? 0 : -ENOMEM;

	if (!rc && expect_rvn) {
		vals = ddb_item_new();
		if (!vals || ddb_item_set_s(vals, ":rvn", expect_rvn))
			rc = -ENOMEM;
		cond.condition = A_RVN " = :rvn";
		cond.values = vals;
	} else if (!rc) {
		cond.condition = "attribute_exists(" A_KEY ") AND " NOT_DIR;
	}
	if (!rc) {
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
	ddb_item_free(k);
	return rc;
}

static void sd_destroy(struct store *s)
{
	struct store_ddb *sd = to_sd(s);

	free(sd->table);
	free(sd);
}

static const struct store_ops ddb_store_ops = {
	.get_lock = sd_get_lock,
	.get_locks = sd_get_locks,
	.lookup = sd_lookup,
	.put_lock = sd_put_lock,
	.replace_lock = sd_replace_lock,
	.renew_lock = sd_renew_lock,
	.delete_lock = sd_delete_lock,
	.next_fence = store_ddb_rows_next_fence,
	.read_fence = store_ddb_rows_read_fence,
	.join_shared = store_ddb_shared_join,
	.leave_shared = store_ddb_shared_leave,
	.evict_reader = store_ddb_shared_evict,
	.mark_writer = store_ddb_shared_mark_writer,
	.clear_writer = store_ddb_shared_clear_writer,
	.mark_next = store_ddb_fair_mark_next,
	.release_lock = store_ddb_fair_release,
	.put_dir = store_ddb_rows_put_dir,
	.set_dir_mode = store_ddb_rows_set_dir_mode,
	.delete_dir = store_ddb_rows_delete_dir,
	.list = store_ddb_rows_list,
	.create_session = store_ddb_session_create,
	.beat_session = store_ddb_session_beat,
	.get_session = store_ddb_session_get,
	.fence_session = store_ddb_session_fence,
	.end_session = store_ddb_session_end,
	.destroy = sd_destroy,
};

struct store *store_ddb_new(struct ddb *d, const char *table,
			    int64_t default_lease_ms)
{
	struct store_ddb *sd = calloc(1, sizeof(*sd));

	if (!sd)
		return NULL;
	sd->table = strdup(table);
	if (!sd->table) {
		free(sd);
		return NULL;
	}
	sd->base.ops = &ddb_store_ops;
	sd->ddb = d;
	sd->default_lease_ms = default_lease_ms;
	return &sd->base;
}
