/* store_ddb: lock records as DynamoDB items, with the conditions of the
 * python_dynamodb_lock protocol (see store_ddb.h). Stateless apart from the
 * table name; any thread. Each operation is one DynamoDB request (retried
 * by the request layer within the deadline when the failure is transient). */
#include "store_ddb.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

#define A_KEY	  "lock_key"
#define A_SORT	  "sort_key"
#define A_OWNER	  "owner_name"
#define A_LEASE	  "lease_duration"
#define A_RVN	  "record_version_number"
#define A_EXPIRY  "expiry_time"
#define A_HOST	  "lockfs_host"
#define A_PID	  "lockfs_pid"
#define A_UID	  "lockfs_uid"
#define A_GID	  "lockfs_gid"
#define A_MODE	  "lockfs_mode"
#define A_CMD	  "lockfs_cmd"
#define A_ACQ	  "lockfs_acquired"
#define A_HB	  "lockfs_heartbeat"
#define A_FENCE	  "lockfs_fence"
#define A_DATA	  "lockfs_data"
#define A_CREATED "lockfs_created"
#define A_COUNTER "lockfs_counter"
#define A_KIND	  "lockfs_kind"
#define A_SHARE	  "lockfs_share"
#define A_READERS "lockfs_readers"
#define A_WRITER  "lockfs_writer"

/* The fields of a reader's entry and of a writer's mark (nested maps). In
 * expressions they are always named through placeholders (#v, #hb, ...),
 * as any of them could one day be a reserved word. */
#define R_V	"v"
#define R_HOST	"host"
#define R_PID	"pid"
#define R_UID	"uid"
#define R_CMD	"cmd"
#define R_ACQ	"acquired"
#define R_HB	"heartbeat"
#define R_FENCE "fence"
#define W_ID	"id"
#define W_V	"v"

/* A directory marker lives in the lock item of its name (sort key "-"), so
 * that one conditional write decides between a lock and a namespace of the
 * same name: an acquire finds the marker, a mkdir finds the lock. It carries
 * the attributes a python_dynamodb_lock client needs and looks to one like a
 * lock held for DIR_LEASE seconds, which it never takes over. Markers
 * written before this (sort key RECORD_SORT_DIR) are still read. */
#define KIND_DIR     "dir"
#define DIR_OWNER    "lockfs:namespace"
#define DIR_LEASE    "1000000000"
#define DIR_EXPIRY_S 253402300799LL /* 9999-12-31: never TTL'd */
#define NOT_DIR	     "attribute_not_exists(" A_KIND ")"
#define IS_DIR	     A_KIND " = :kind"

struct store_ddb {
	struct store base;
	struct ddb *ddb;
	char *table;
	int64_t default_lease_ms;
};

static struct store_ddb *to_sd(struct store *s)
{
	return (struct store_ddb *)s;
}

static void call_init(struct ddb_call *c, int64_t deadline_mono_ms)
{
	memset(c, 0, sizeof(*c));
	c->deadline_mono_ms = deadline_mono_ms;
}

static struct ddb_item *key_item(const char *key, const char *sort)
{
	struct ddb_item *k = ddb_item_new();

	if (k && (ddb_item_set_s(k, A_KEY, key) ||
		  ddb_item_set_s(k, A_SORT, sort))) {
		ddb_item_free(k);
		k = NULL;
	}
	return k;
}

/* Whether a row read back is a directory marker (new or old form). */
static bool is_dir_item(const struct ddb_item *it)
{
	const char *v;

	if (!ddb_item_get_s(it, A_SORT, &v) && !strcmp(v, RECORD_SORT_DIR))
		return true;
	return !ddb_item_get_s(it, A_KIND, &v) && !strcmp(v, KIND_DIR);
}

/* ---- conversions ------------------------------------------------------- */

static int get_i64(const struct ddb_item *it, const char *name, int64_t *out)
{
	return ddb_item_get_n(it, name, out);
}

/* Every number read from a row is range-checked here, on the way in: any
 * client that can write the table can put any number there, and a value
 * outside its range is treated as absent (never wrapped, clamped or used in
 * arithmetic that could overflow, such as heartbeat + lease). */
#define REAL_MS_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z */
#define REAL_S_MAX  253402300799LL
#define ID_MAX	    4294967294LL /* uid_t, gid_t; (uid_t)-1 is not an id */
#define PID_MAX	    2147483647LL /* pid_t */
#define MODE_MAX    07777

static int get_ranged(const struct ddb_item *it, const char *name, int64_t lo,
		      int64_t hi, int64_t *out)
{
	int64_t v;
	int rc = get_i64(it, name, &v);

	if (rc)
		return rc;
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

/* lease_duration is decimal seconds (python writes e.g. 30 or 0.5): from
 * 1 ms to 10^9 s, else the fallback. */
static int64_t lease_ms_of(const struct ddb_item *it, int64_t fallback)
{
	const char *txt;
	double v;
	char *end;

	if (ddb_item_get_n_text(it, A_LEASE, &txt))
		return fallback;
	v = strtod(txt, &end);
	if (*end || !isfinite(v) || v < 0.0005 || v > 1e9)
		return fallback;
	return (int64_t)llround(v * 1000.0);
}

/* One reader's entry from its map; -ENOENT when it has no version (not
 * an entry lockfs wrote: left out). */
static int reader_of_map(const struct ddb_item *m, const char *id,
			 struct record_reader *rd)
{
	const char *s;
	int64_t v;
	int rc;

	memset(rd, 0, sizeof(*rd));
	if (ddb_item_get_s(m, R_V, &s) || !s[0])
		return -ENOENT;
	text_copy(rd->v, sizeof(rd->v), s);
	rc = record_set_str(&rd->id, id);
	if (!rc && !ddb_item_get_s(m, R_HOST, &s))
		rc = record_set_str(&rd->host, s);
	if (!rc && !ddb_item_get_s(m, R_CMD, &s))
		rc = record_set_str(&rd->cmd, s);
	if (!get_ranged(m, R_PID, 0, PID_MAX, &v))
		rd->pid = v;
	if (!get_ranged(m, R_UID, 0, ID_MAX, &v))
		rd->uid = v;
	if (!get_ranged(m, R_ACQ, 0, REAL_MS_MAX, &v))
		rd->acquired_real_ms = v;
	if (!get_ranged(m, R_HB, 0, REAL_MS_MAX, &v))
		rd->heartbeat_real_ms = v;
	if (!get_i64(m, R_FENCE, &v) && v > 0)
		rd->fence = (uint64_t)v;
	if (rc)
		record_reader_fini(rd);
	return rc;
}

/* lockfs_share, lockfs_readers and lockfs_writer: a row held shared.
 * Anything malformed is left out (never a guess): an entry without a
 * version, a mark without an id. */
static int shared_of_item(const struct ddb_item *it, struct lock_record *r)
{
	struct ddb_item *map = NULL, *m = NULL;
	const char *s, *name;
	int rc = 0;

	if (ddb_item_get_s(it, A_SHARE, &s) || strcmp(s, RECORD_SHARED))
		return 0;
	r->shared = true;
	if (!ddb_item_get_m(it, A_READERS, &map)) {
		for (size_t i = 0; !rc && (name = ddb_item_name_at(map, i));
		     i++) {
			struct record_reader rd;

			if (ddb_item_get_m(map, name, &m))
				continue;
			rc = reader_of_map(m, name, &rd);
			ddb_item_free(m);
			m = NULL;
			if (rc == -ENOENT) {
				rc = 0;
				continue;
			}
			if (!rc)
				rc = record_reader_add(r, &rd);
			record_reader_fini(&rd);
			if (rc == -E2BIG)
				rc = 0; /* shown in part */
		}
		ddb_item_free(map);
	}
	if (!rc && !ddb_item_get_m(it, A_WRITER, &m)) {
		const char *id, *v;

		if (!ddb_item_get_s(m, W_ID, &id) &&
		    !ddb_item_get_s(m, W_V, &v))
			rc = record_set_writer(r, id, v);
		ddb_item_free(m);
	}
	return rc;
}

int store_ddb_item_to_record(const struct ddb_item *it,
			     int64_t default_lease_ms, struct lock_record *r)
{
	const char *s;
	int64_t v;
	int rc;

	record_fini(r);
	if (ddb_item_get_s(it, A_KEY, &s))
		return -EPROTO;
	rc = record_set_str(&r->key, s);
	if (!rc && !ddb_item_get_s(it, A_OWNER, &s))
		rc = record_set_str(&r->owner, s);
	if (!rc && !ddb_item_get_s(it, A_RVN, &s))
		text_copy(r->rvn, sizeof(r->rvn), s);
	r->lease_ms = lease_ms_of(it, default_lease_ms);
	if (!get_ranged(it, A_EXPIRY, 0, REAL_S_MAX, &v))
		r->expiry_real_s = v;
	if (!rc && !get_ranged(it, A_ACQ, 0, REAL_MS_MAX, &v)) {
		r->has_lockfs = true;
		r->acquired_real_ms = v;
		if (!get_ranged(it, A_HB, 0, REAL_MS_MAX, &v))
			r->heartbeat_real_ms = v;
		if (!get_ranged(it, A_PID, 0, PID_MAX, &v))
			r->pid = v;
		if (!get_ranged(it, A_UID, 0, ID_MAX, &v))
			r->uid = v;
		if (!get_ranged(it, A_GID, 0, ID_MAX, &v))
			r->gid = v;
		if (!get_ranged(it, A_MODE, 0, MODE_MAX, &v))
			r->mode = (uint32_t)v;
		if (!ddb_item_get_s(it, A_HOST, &s))
			rc = record_set_str(&r->host, s);
		if (!rc && !ddb_item_get_s(it, A_CMD, &s))
			rc = record_set_str(&r->cmd, s);
	}
	if (!rc && !get_i64(it, A_FENCE, &v) && v > 0)
		r->fence = (uint64_t)v;
	if (!rc)
		rc = shared_of_item(it, r);
	if (!rc) {
		enum ddb_type t = ddb_item_type(it, A_DATA);

		if (t == DDB_T_S && !ddb_item_get_s(it, A_DATA, &s)) {
			rc = record_set_data(r, s, strlen(s));
		} else if (t == DDB_T_B) {
			void *d = NULL;
			size_t n = 0;

			rc = ddb_item_get_b(it, A_DATA, &d, &n);
			if (!rc)
				rc = record_set_data(r, d, n);
			free(d);
		}
	}
	return rc;
}

static int set_data(struct ddb_item *it, const char *name, const void *data,
		    size_t len)
{
	if (text_utf8_valid(data, len))
		return ddb_item_set_s_len(it, name, data, len);
	return ddb_item_set_b(it, name, data, len);
}

/* One reader's entry as a map. */
static int reader_map(const struct record_reader *rd, struct ddb_item **out)
{
	struct ddb_item *m = ddb_item_new();
	int rc = m ? ddb_item_set_s(m, R_V, rd->v) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(m, R_HOST, rd->host ? rd->host : "");
	if (!rc)
		rc = ddb_item_set_n(m, R_PID, rd->pid);
	if (!rc)
		rc = ddb_item_set_n(m, R_UID, rd->uid);
	if (!rc)
		rc = ddb_item_set_s(m, R_CMD, rd->cmd ? rd->cmd : "");
	if (!rc)
		rc = ddb_item_set_n(m, R_ACQ, rd->acquired_real_ms);
	if (!rc)
		rc = ddb_item_set_n(m, R_HB, rd->heartbeat_real_ms);
	if (!rc && rd->fence)
		rc = ddb_item_set_n(m, R_FENCE, (int64_t)rd->fence);
	if (rc) {
		ddb_item_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

static int writer_map(const char *id, const char *v, struct ddb_item **out)
{
	struct ddb_item *m = ddb_item_new();
	int rc = m ? ddb_item_set_s(m, W_ID, id) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(m, W_V, v);
	if (rc) {
		ddb_item_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

static int shared_to_item(const struct lock_record *r, struct ddb_item *it)
{
	struct ddb_item *map = ddb_item_new(), *m = NULL;
	int rc = map ? ddb_item_set_s(it, A_SHARE, RECORD_SHARED) : -ENOMEM;

	for (size_t i = 0; !rc && i < r->n_readers; i++) {
		rc = reader_map(&r->readers[i], &m);
		if (!rc)
			rc = ddb_item_set_m(map, r->readers[i].id, m);
		ddb_item_free(m);
		m = NULL;
	}
	if (!rc)
		rc = ddb_item_set_m(it, A_READERS, map);
	if (!rc && r->writer_id) {
		rc = writer_map(r->writer_id, r->writer_v, &m);
		if (!rc)
			rc = ddb_item_set_m(it, A_WRITER, m);
		ddb_item_free(m);
	}
	ddb_item_free(map);
	return rc;
}

int store_ddb_record_to_item(const struct lock_record *r, struct ddb_item **out)
{
	struct ddb_item *it = key_item(r->key, RECORD_SORT_LOCK);
	char lease[32];
	int rc;

	if (!it)
		return -ENOMEM;
	text_format_seconds_short(r->lease_ms, lease, sizeof(lease));
	rc = ddb_item_set_s(it, A_OWNER, r->owner ? r->owner : "");
	if (!rc)
		rc = ddb_item_set_n_text(it, A_LEASE, lease);
	if (!rc)
		rc = ddb_item_set_s(it, A_RVN, r->rvn);
	if (!rc)
		rc = ddb_item_set_n(it, A_EXPIRY, r->expiry_real_s);
	if (!rc && r->has_lockfs) {
		rc = ddb_item_set_s(it, A_HOST, r->host ? r->host : "");
		if (!rc)
			rc = ddb_item_set_n(it, A_PID, r->pid);
		if (!rc)
			rc = ddb_item_set_n(it, A_UID, r->uid);
		if (!rc)
			rc = ddb_item_set_n(it, A_GID, r->gid);
		if (!rc)
			rc = ddb_item_set_n(it, A_MODE, r->mode);
		if (!rc)
			rc = ddb_item_set_s(it, A_CMD, r->cmd ? r->cmd : "");
		if (!rc)
			rc = ddb_item_set_n(it, A_ACQ, r->acquired_real_ms);
		if (!rc)
			rc = ddb_item_set_n(it, A_HB, r->heartbeat_real_ms);
	}
	if (!rc && r->fence)
		rc = ddb_item_set_n(it, A_FENCE, (int64_t)r->fence);
	if (!rc && r->has_data && r->data_len)
		rc = set_data(it, A_DATA, r->data, r->data_len);
	if (!rc && r->shared)
		rc = shared_to_item(r, it);
	if (rc) {
		ddb_item_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

static int dir_of_item(const struct ddb_item *it, struct dir_record *d)
{
	const char *s;
	int64_t v;

	dir_record_fini(d);
	if (ddb_item_get_s(it, A_KEY, &s))
		return -EPROTO;
	d->key = strdup(s);
	if (!d->key)
		return -ENOMEM;
	d->mode = !get_ranged(it, A_MODE, 0, MODE_MAX, &v) ? (uint32_t)v : 0755;
	if (!get_ranged(it, A_UID, 0, ID_MAX, &v))
		d->uid = v;
	if (!get_ranged(it, A_GID, 0, ID_MAX, &v))
		d->gid = v;
	if (!get_ranged(it, A_CREATED, 0, REAL_MS_MAX, &v))
		d->created_real_ms = v;
	return 0;
}

/* The row a failed condition reported, as a record. */
static int fill_cur(struct store_ddb *sd, struct ddb_item *old,
		    struct lock_record *cur, bool *has_cur)
{
	int rc = 0;

	if (has_cur)
		*has_cur = old != NULL;
	if (old && cur)
		rc = store_ddb_item_to_record(old, sd->default_lease_ms, cur);
	return rc;
}

/* ---- operations -------------------------------------------------------- */

static int sd_get_lock(struct store *s, const char *key, int64_t deadline,
		       struct lock_record *out)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK), *it = NULL;
	struct ddb_call call;
	int rc;

	if (!k)
		return -ENOMEM;
	call_init(&call, deadline);
	rc = ddb_get_item(sd->ddb, sd->table, k, true, &it, &call);
	if (!rc && is_dir_item(it))
		rc = -ENOENT; /* a namespace: there is no lock */
	if (!rc)
		rc = store_ddb_item_to_record(it, sd->default_lease_ms, out);
	ddb_item_free(it);
	ddb_item_free(k);
	return rc;
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
			rc = dir_of_item(page.items[i], &out->dir);
		} else if (!strcmp(sort, RECORD_SORT_LOCK)) {
			out->has_lock = true;
			rc = store_ddb_item_to_record(page.items[i],
						      sd->default_lease_ms,
						      &out->lock);
		}
	}
	ddb_page_fini(&page);
	ddb_item_free(vals);
	return rc;
}

static int sd_put_lock(struct store *s, const struct lock_record *rec,
		       const char *expect_rvn, int64_t deadline,
		       struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *item = NULL, *vals = NULL, *old = NULL;
	struct ddb_expr cond = { 0 };
	struct ddb_call call;
	int rc;

	rc = store_ddb_record_to_item(rec, &item);
	if (rc)
		return rc;
	if (expect_rvn) {
		vals = ddb_item_new();
		if (!vals || ddb_item_set_s(vals, ":rvn", expect_rvn)) {
			rc = -ENOMEM;
			goto out;
		}
		cond.condition =
			rec->shared ? "attribute_not_exists(" A_KEY
				      ") OR (" A_RVN " = :rvn AND " NOT_DIR
				      " AND attribute_not_exists(" A_WRITER "))"
				    : "attribute_not_exists(" A_KEY
				      ") OR (" A_RVN " = :rvn AND " NOT_DIR ")";
		cond.values = vals;
	} else {
		cond.condition = "attribute_not_exists(" A_KEY ")";
	}
	call_init(&call, deadline);
	rc = ddb_put_item(sd->ddb, sd->table, item, &cond, &old, &call);
	if (rc == -ECANCELED && old && is_dir_item(old)) {
		rc = -EISDIR; /* the name is a namespace */
	} else if (rc == -ECANCELED) {
		int frc = fill_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
out:
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(item);
	return rc;
}

static int sd_renew_shared(struct store_ddb *sd, const char *key,
			   const char *expect_v, const struct lock_renewal *rn,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur);

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
		return rn->set_data ? -EINVAL
				    : sd_renew_shared(sd, key, expect_rvn, rn,
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
			rc = set_data(vals, ":d", rn->data, rn->data_len);
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
		int frc = fill_cur(sd, old, cur, has_cur);

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
		int frc = fill_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

/* ---- shared rows -------------------------------------------------------- */

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
		int frc = fill_cur(sd, old, cur, has_cur);

		rc = frc ? frc : rc;
	}
	return rc;
}

static int sd_renew_shared(struct store_ddb *sd, const char *key,
			   const char *expect_v, const struct lock_renewal *rn,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur)
{
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new(), *out = NULL;
	const char *names[10];
	struct ddb_expr expr = {
		.condition = ME_V " = :old",
		.names = names,
	};
	struct ddb_call call;
	int rc = (k && vals && rn->row_rvn) ? 0 : -ENOMEM;

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
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_ALL_NEW, &out, &call);
		if (!rc && out && cur) {
			/* The row as it now is: the other readers too. */
			rc = store_ddb_item_to_record(out, sd->default_lease_ms,
						      cur);
			if (!rc && has_cur)
				*has_cur = true;
		} else {
			rc = share_result(sd, rc, out, cur, has_cur);
		}
	}
	ddb_item_free(out);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_join_shared(struct store *s, const struct lock_record *rec,
			  bool raise_lease, int64_t deadline,
			  struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k, *vals = NULL, *entry = NULL, *old = NULL;
	const char *names[6];
	char lease[32];
	struct ddb_expr expr = { .names = names };
	struct ddb_call call;
	int rc;

	if (!rec->shared || rec->n_readers != 1)
		return -EINVAL;
	k = key_item(rec->key, RECORD_SORT_LOCK);
	vals = ddb_item_new();
	rc = (k && vals) ? reader_map(&rec->readers[0], &entry) : -ENOMEM;
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
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, &old, &call);
		rc = share_result(sd, rc, old, cur, has_cur);
	}
	ddb_item_free(old);
	ddb_item_free(entry);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_leave_shared(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   const char *new_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new(), *out = NULL;
	const char *names[6];
	struct ddb_expr expr = {
		.update = "SET " A_RVN " = :rvn REMOVE " A_READERS ".#me",
		.condition = ME_V " = :old",
		.names = share_names(names, reader_id),
	};
	struct ddb_call call;
	struct lock_record now;
	int rc = (k && vals) ? ddb_item_set_s(vals, ":rvn", new_rvn) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(vals, ":old", expect_v);
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_ALL_NEW, &out, &call);
		rc = share_result(sd, rc, out, cur, has_cur);
	}
	record_init(&now);
	if (!rc && out &&
	    !store_ddb_item_to_record(out, sd->default_lease_ms, &now) &&
	    now.shared && !now.n_readers && !now.writer_id) {
		/* The last reader left: the row goes, unless someone joined
		 * or marked it meanwhile. Best effort: a row left behind
		 * without readers is free to anyone (store.h). */
		struct ddb_item *dv = ddb_item_new();
		struct ddb_expr cond = {
			.condition = A_RVN
			" = :rvn AND size(" A_READERS
			") = :zero AND attribute_not_exists(" A_WRITER ")",
		};

		if (dv && !ddb_item_set_s(dv, ":rvn", new_rvn) &&
		    !ddb_item_set_n(dv, ":zero", 0)) {
			cond.values = dv;
			call_init(&call, deadline);
			ddb_delete_item(sd->ddb, sd->table, k, &cond,
					DDB_RETURN_NONE, NULL, &call);
		}
		ddb_item_free(dv);
	}
	record_fini(&now);
	ddb_item_free(out);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_evict_reader(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new();
	const char *names[6];
	struct ddb_expr expr = {
		.update = "REMOVE " A_READERS ".#me",
		.condition = ME_V " = :old",
		.names = share_names(names, reader_id),
	};
	struct ddb_call call;
	int rc = (k && vals) ? ddb_item_set_s(vals, ":old", expect_v) : -ENOMEM;

	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &call);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_mark_writer(struct store *s, const char *key, const char *id,
			  const char *v, const char *replace_v,
			  int64_t deadline, struct lock_record *cur,
			  bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
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
	struct ddb_call call;
	int rc = (k && vals) ? writer_map(id, v, &mark) : -ENOMEM;

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
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, &old, &call);
		rc = share_result(sd, rc, old, cur, has_cur);
	}
	ddb_item_free(old);
	ddb_item_free(mark);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_clear_writer(struct store *s, const char *key, const char *v,
			   int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_LOCK);
	struct ddb_item *vals = ddb_item_new();
	const char *names[] = { "#v", W_V, NULL };
	struct ddb_expr expr = {
		.update = "REMOVE " A_WRITER,
		.condition = A_WRITER ".#v = :v",
		.names = names,
	};
	struct ddb_call call;
	int rc = (k && vals) ? ddb_item_set_s(vals, ":v", v) : -ENOMEM;

	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &call);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int sd_read_fence(struct store *s, const char *key, int64_t deadline,
			 uint64_t *fence)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = key_item(key, RECORD_SORT_FENCE), *it = NULL;
	struct ddb_call call;
	int64_t v = 0;
	int rc;

	if (!k)
		return -ENOMEM;
	call_init(&call, deadline);
	rc = ddb_get_item(sd->ddb, sd->table, k, true, &it, &call);
	if (rc == -ENOENT) {
		rc = 0; /* never allocated */
	} else if (!rc) {
		rc = get_i64(it, A_COUNTER, &v);
		if (rc == -ENOENT)
			rc = 0, v = 0;
		else if (rc || v < 0)
			rc = -EPROTO;
	}
	if (!rc)
		*fence = (uint64_t)v;
	ddb_item_free(it);
	ddb_item_free(k);
	return rc;
}

static int sd_next_fence(struct store *s, const char *key, int64_t deadline,
			 uint64_t *fence)
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
		rc = out ? get_i64(out, A_COUNTER, &v) : -EPROTO;
	if (!rc && v <= 0)
		rc = -EPROTO;
	if (!rc)
		*fence = (uint64_t)v;
	ddb_item_free(out);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc == -ENOENT ? -EPROTO : rc;
}

/* The marker of directory d, in the lock item of its name. */
static int dir_item(const struct dir_record *d, struct ddb_item **out)
{
	struct ddb_item *it = key_item(d->key, RECORD_SORT_LOCK);
	char rvn[RECORD_RVN_MAX];
	int rc = it ? text_uuid4(rvn) : -ENOMEM;

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

static int sd_put_dir(struct store *s, const struct dir_record *d,
		      const char *expect_rvn, int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *it = NULL, *vals = NULL;
	struct ddb_expr cond = { .condition =
					 "attribute_not_exists(" A_KEY ")" };
	struct ddb_call call;
	int rc = dir_item(d, &it);

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
		rc = ddb_put_item(sd->ddb, sd->table, it, &cond, NULL, &call);
	}
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
					       DDB_RETURN_NONE, NULL, &call);
		ddb_item_free(k);
		if (rc == -ECANCELED)
			rc = -ENOENT;
	}
	return rc;
}

static int sd_set_dir_mode(struct store *s, const char *key, uint32_t mode,
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

static int sd_delete_dir(struct store *s, const char *key, int64_t deadline)
{
	struct ddb_item *vals = ddb_item_new();
	struct ddb_expr expr = { 0 };
	int rc = -ENOMEM;

	if (vals && !ddb_item_set_s(vals, ":kind", KIND_DIR)) {
		expr.values = vals;
		rc = on_dir_marker(to_sd(s), key, &expr, deadline);
	}
	ddb_item_free(vals);
	return rc;
}

static int sd_list(struct store *s, const char *prefix, int64_t deadline,
		   store_row_fn fn, void *arg)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *vals = ddb_item_new(), *start = NULL;
	struct ddb_read rd = {
		.filter = *prefix ? "(" A_SORT " = :lk OR " A_SORT
				    " = :dir) AND begins_with(" A_KEY ", :p)"
				  : A_SORT " = :lk OR " A_SORT " = :dir",
		.values = vals,
		.consistent = true,
	};
	struct lock_record rec;
	struct dir_record dir;
	struct ddb_call call;
	int pages = 0, rc;

	if (!vals || ddb_item_set_s(vals, ":lk", RECORD_SORT_LOCK) ||
	    ddb_item_set_s(vals, ":dir", RECORD_SORT_DIR) ||
	    (*prefix && ddb_item_set_s(vals, ":p", prefix))) {
		ddb_item_free(vals);
		return -ENOMEM;
	}
	record_init(&rec);
	dir_record_init(&dir);
	do {
		struct ddb_page page = { 0 };
		size_t i;

		call_init(&call, deadline);
		rc = ddb_scan(sd->ddb, sd->table, &rd, start, &page, &call);
		ddb_item_free(start);
		start = NULL;
		for (i = 0; !rc && i < page.n; i++) {
			struct store_row row = { 0 };
			const char *sort;

			if (ddb_item_get_s(page.items[i], A_SORT, &sort))
				continue;
			if (is_dir_item(page.items[i])) {
				rc = dir_of_item(page.items[i], &dir);
				row.kind = STORE_ROW_DIR;
				row.dir = &dir;
			} else if (!strcmp(sort, RECORD_SORT_LOCK)) {
				rc = store_ddb_item_to_record(
					page.items[i], sd->default_lease_ms,
					&rec);
				row.kind = STORE_ROW_LOCK;
				row.lock = &rec;
			} else {
				continue;
			}
			if (rc == -EPROTO) {
				rc = 0; /* a row without a key string */
				continue;
			}
			if (!rc)
				rc = fn(arg, &row);
		}
		if (!rc && page.last_key) {
			start = page.last_key;
			page.last_key = NULL;
		}
		ddb_page_fini(&page);
	} while (!rc && start && ++pages < 100000);
	ddb_item_free(start);
	record_fini(&rec);
	dir_record_fini(&dir);
	ddb_item_free(vals);
	return rc > 0 ? 0 : rc;
}

static void sd_destroy(struct store *s)
{
	struct store_ddb *sd = to_sd(s);

	free(sd->table);
	free(sd);
}

static const struct store_ops ddb_store_ops = {
	.get_lock = sd_get_lock,
	.lookup = sd_lookup,
	.put_lock = sd_put_lock,
	.renew_lock = sd_renew_lock,
	.delete_lock = sd_delete_lock,
	.next_fence = sd_next_fence,
	.read_fence = sd_read_fence,
	.join_shared = sd_join_shared,
	.leave_shared = sd_leave_shared,
	.evict_reader = sd_evict_reader,
	.mark_writer = sd_mark_writer,
	.clear_writer = sd_clear_writer,
	.put_dir = sd_put_dir,
	.set_dir_mode = sd_set_dir_mode,
	.delete_dir = sd_delete_dir,
	.list = sd_list,
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

/* ---- the table ----------------------------------------------------------- */

static void say_error(const char *what, const struct ddb_call *call, char *msg,
		      size_t msglen)
{
	char detail[400];

	awserr_format(&call->err, detail, sizeof(detail));
	snprintf(msg, msglen, "%s: %s", what, detail);
}

int store_ddb_check_table(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, int *ttl_enabled, char *msg,
			  size_t msglen)
{
	struct ddb_table_info ti;
	struct ddb_call call;
	char status[32], attr[256];
	int rc;

	call_init(&call, deadline_mono_ms);
	rc = ddb_describe_table(d, table, &ti, &call);
	if (rc == -ENXIO) {
		snprintf(msg, msglen,
			 "table '%s' does not exist (create it with "
			 "--create-table, or see contrib/create-table.sh)",
			 table);
		return rc;
	}
	if (rc) {
		say_error("cannot describe the table", &call, msg, msglen);
		return rc;
	}
	if (strcmp(ti.status, "ACTIVE")) {
		call_init(&call, deadline_mono_ms);
		rc = ddb_wait_table_active(d, table, deadline_mono_ms, &call);
		if (rc) {
			snprintf(msg, msglen, "table '%s' is %s, not ACTIVE",
				 table, ti.status);
			return rc;
		}
	}
	if (strcmp(ti.hash_name, A_KEY) || strcmp(ti.hash_type, "S") ||
	    strcmp(ti.range_name, A_SORT) || strcmp(ti.range_type, "S")) {
		snprintf(msg, msglen,
			 "table '%s' has the key (%s %s, %s %s); lockfs needs "
			 "HASH lock_key (S) and RANGE sort_key (S)",
			 table, ti.hash_name, ti.hash_type,
			 ti.range_name[0] ? ti.range_name : "no sort key",
			 ti.range_type);
		return -EINVAL;
	}
	if (ttl_enabled) {
		call_init(&call, deadline_mono_ms);
		*ttl_enabled =
			!ddb_describe_ttl(d, table, status, sizeof(status),
					  attr, sizeof(attr), &call) &&
			!strcmp(status, "ENABLED") && !strcmp(attr, A_EXPIRY);
	}
	return 0;
}

int store_ddb_create_table(struct ddb *d, const char *table,
			   int64_t deadline_mono_ms, bool *created, char *msg,
			   size_t msglen)
{
	struct ddb_call call;
	int rc;

	call_init(&call, deadline_mono_ms);
	rc = ddb_create_table(d, table, A_KEY, A_SORT, &call);
	if (rc && rc != -EEXIST) {
		say_error("cannot create the table", &call, msg, msglen);
		return rc;
	}
	if (created)
		*created = !rc;
	call_init(&call, deadline_mono_ms);
	rc = ddb_wait_table_active(d, table, deadline_mono_ms, &call);
	if (rc) {
		say_error("the table did not become ACTIVE", &call, msg,
			  msglen);
		return rc;
	}
	call_init(&call, deadline_mono_ms);
	rc = ddb_update_ttl(d, table, A_EXPIRY, true, &call);
	if (rc) {
		say_error("cannot enable TTL on expiry_time", &call, msg,
			  msglen);
		return rc;
	}
	return 0;
}
