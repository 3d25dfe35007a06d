/* store_ddb_item: lock records, readers, writers' marks and directory
 * markers to and from DynamoDB items, bounds checked both ways. No state;
 * any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

int store_ddb_item_i64(const struct ddb_item *it, const char *name,
		       int64_t *out)
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
	int rc = store_ddb_item_i64(it, name, &v);

	if (rc)
		return rc;
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

/* lease_duration is decimal seconds (python writes e.g. 30 or 0.5): from
 * 1 ms up, at most LEASE_MAX_S; unreadable, or under 1 ms, the fallback
 * (*assumed). */
#define LEASE_MAX_S 1e9
static int64_t lease_ms_of(const struct ddb_item *it, int64_t fallback,
			   bool *assumed)
{
	const char *txt;
	double v;
	char *end;

	*assumed = true;
	if (ddb_item_get_n_text(it, A_LEASE, &txt))
		return fallback;
	v = strtod(txt, &end);
	if (*end || isnan(v) || v < 0.0005)
		return fallback;
	*assumed = false;
	/* Longer than LEASE_MAX_S (infinite too) is taken as that: the row
	 * says it is not to be taken over for decades, so it is not; read as
	 * our own lease, a live python lock with such a lease and a long
	 * heartbeat period was taken from its holder. */
	if (v > LEASE_MAX_S)
		v = LEASE_MAX_S;
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
	if (!store_ddb_item_i64(m, R_FENCE, &v) && v > 0)
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

/* lockfs_next and lockfs_reserved_for: fair handoff of an exclusive row
 * (a mark without an id or a version is left out). */
static int fair_of_item(const struct ddb_item *it, struct lock_record *r)
{
	struct ddb_item *m = NULL;
	const char *s;
	int64_t w;
	int rc = 0;

	if (!ddb_item_get_m(it, A_NEXT, &m)) {
		const char *id, *v;

		if (!ddb_item_get_s(m, W_ID, &id) &&
		    !ddb_item_get_s(m, W_V, &v))
			rc = record_set_next(r, id, v);
		if (!rc && r->next_id &&
		    !get_ranged(m, W_WAIT, 0, REAL_MS_MAX, &w))
			r->next_waited_ms = w;
		ddb_item_free(m);
	}
	/* (A reservation is written without lockfs_acquired.) */
	if (!rc && !ddb_item_get_s(it, A_RESVD, &s))
		rc = record_set_str(&r->reserved_for, s);
	/* A session is only believed of a row lockfs wrote (has_lockfs):
	 * another client's row is judged by its RVN and lease alone, whatever
	 * it calls its own attributes (a python lock with the additional
	 * attribute lockfs_session was fenced and taken from its live
	 * holder). Marks (lockfs_next) are ours on any row. */
	if (!r->has_lockfs)
		return rc;
	/* The session that keeps the row: only a well-formed key (prefix,
	 * length); anything else is left out, and the row is then judged by
	 * its own RVN and lease (a year, as written in session mode). */
	if (!rc && !ddb_item_get_s(it, A_SESSION, &s) &&
	    record_session_key_ok(s))
		rc = record_set_str(&r->session, s);
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
	r->lease_ms = lease_ms_of(it, default_lease_ms, &r->lease_assumed);
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
	if (!rc && !store_ddb_item_i64(it, A_FENCE, &v) && v > 0)
		r->fence = (uint64_t)v;
	if (!rc && r->has_lockfs) /* (as in fair_of_item) */
		rc = shared_of_item(it, r);
	if (!rc)
		rc = fair_of_item(it, r);
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

int store_ddb_item_set_data(struct ddb_item *it, const char *name,
			    const void *data, size_t len)
{
	if (text_utf8_valid(data, len))
		return ddb_item_set_s_len(it, name, data, len);
	return ddb_item_set_b(it, name, data, len);
}

/* One reader's entry as a map. */
int store_ddb_item_reader_map(const struct record_reader *rd,
			      struct ddb_item **out)
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

int store_ddb_item_writer_map(const char *id, const char *v,
			      struct ddb_item **out)
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
		rc = store_ddb_item_reader_map(&r->readers[i], &m);
		if (!rc)
			rc = ddb_item_set_m(map, r->readers[i].id, m);
		ddb_item_free(m);
		m = NULL;
	}
	if (!rc)
		rc = ddb_item_set_m(it, A_READERS, map);
	if (!rc && r->writer_id) {
		rc = store_ddb_item_writer_map(r->writer_id, r->writer_v, &m);
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
		rc = store_ddb_index_tag(it, r->key);
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
		rc = store_ddb_item_set_data(it, A_DATA, r->data, r->data_len);
	if (!rc && r->shared)
		rc = shared_to_item(r, it);
	if (!rc && r->reserved_for)
		rc = ddb_item_set_s(it, A_RESVD, r->reserved_for);
	if (!rc && r->session)
		rc = record_session_key_ok(r->session)
			     ? ddb_item_set_s(it, A_SESSION, r->session)
			     : -EINVAL;
	if (rc) {
		ddb_item_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int store_ddb_item_to_dir(const struct ddb_item *it, struct dir_record *d)
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
int store_ddb_item_cur(struct store_ddb *sd, struct ddb_item *old,
		       struct lock_record *cur, bool *has_cur)
{
	int rc = 0;

	if (has_cur)
		*has_cur = old != NULL;
	store_ddb_index_saw(sd, old);
	if (old && cur)
		rc = store_ddb_item_to_record(old, sd->default_lease_ms, cur);
	return rc;
}
