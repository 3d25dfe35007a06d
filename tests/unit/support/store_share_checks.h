/* store_share_checks: what every store must do with shared rows (store.h),
 * run on store_mem by lock_share and on store_ddb against DynamoDB Local
 * by store_local, so that the in-memory store the engine tests use keeps
 * the conditions of the real one; each also through store_fault sending
 * every write again after it landed, so that a write whose answer was lost
 * is known by its own effect (the one way the engine can tell). Header-only
 * (each test links one store); single-threaded; keys start with the
 * caller's prefix. */
#ifndef LOCKFS_TEST_STORE_SHARE_CHECKS_H
#define LOCKFS_TEST_STORE_SHARE_CHECKS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "clk.h"
#include "record.h"
#include "store.h"
#include "text.h"

/* An expiry_time ahead_s from now. Never a fixed date: DynamoDB Local
 * deletes rows whose expiry_time has passed (TTL) within seconds, in the
 * middle of the checks. */
static inline int64_t ssc_expiry_s(int64_t ahead_s)
{
	return clk_sys_real_ms() / 1000 + ahead_s;
}

static inline void ssc_reader(struct record_reader *rd, const char *id,
			      const char *v)
{
	memset(rd, 0, sizeof(*rd));
	rd->id = (char *)id;
	text_copy(rd->v, sizeof(rd->v), v);
	rd->host = (char *)"h";
	rd->pid = 42;
	rd->uid = 1000;
	rd->cmd = (char *)"cat";
	rd->acquired_real_ms = 1790000000000LL;
	rd->heartbeat_real_ms = 1790000000000LL;
}

/* A shared row of key with one reader (id, v), row RVN rvn, lease_ms. */
static inline void ssc_shared_rec(struct lock_record *r, const char *key,
				  const char *rvn, int64_t lease_ms,
				  const char *id, const char *v)
{
	struct record_reader rd;

	record_init(r);
	CHECK_INT(record_set_str(&r->key, key), 0);
	CHECK_INT(record_set_str(&r->owner, "lockfs:shared"), 0);
	text_copy(r->rvn, sizeof(r->rvn), rvn);
	r->lease_ms = lease_ms;
	r->expiry_real_s = ssc_expiry_s(3600);
	r->has_lockfs = true;
	r->mode = 0644;
	r->acquired_real_ms = r->heartbeat_real_ms = 1790000000000LL;
	r->shared = true;
	ssc_reader(&rd, id, v);
	CHECK_INT(record_reader_add(r, &rd), 0);
}

static inline void ssc_get(struct store *st, const char *key,
			   struct lock_record *out)
{
	record_fini(out);
	CHECK_INT(st->ops->get_lock(st, key, 0, out), 0);
}

static inline const char *ssc_v(const struct lock_record *r, const char *id)
{
	const struct record_reader *rd = record_reader_find(r, id);

	return rd ? rd->v : "(none)";
}

/* A conditional write that the request layer sent again (its first try
 * landed but the answer was lost: a reset connection, a 5xx) is refused
 * the second time by its own effect. The engine takes a refusal that shows
 * its own write as success (lock.c); so do these checks, and say so. */
static inline int ssc_landed(int rc, bool landed, const char *what, bool has,
			     const struct lock_record *row)
{
	size_t i;

	if (rc == -ECANCELED && landed) {
		fprintf(stderr, "note: %s was sent again after it landed\n",
			what);
		return 0;
	}
	if (rc == -ECANCELED) { /* say what refused it */
		fprintf(stderr, "%s refused: has=%d", what, has);
		if (has) {
			fprintf(stderr,
				" rvn=%s shared=%d lease_ms=%lld expiry=%lld "
				"writer=%s/%s readers:",
				row->rvn, row->shared, (long long)row->lease_ms,
				(long long)row->expiry_real_s,
				row->writer_id ? row->writer_id : "-",
				row->writer_v);
			for (i = 0; i < row->n_readers; i++)
				fprintf(stderr, " %s=%s", row->readers[i].id,
					row->readers[i].v);
		}
		fputc('\n', stderr);
	}
	return rc;
}

static inline void store_share_checks(struct store *st, const char *prefix)
{
	struct lock_record a, b, c, cur, row;
	struct lock_renewal rn = { 0 };
	char key[128], key2[128], key3[128];
	/* Owner ids as lockfs makes them (host:random), and one with the
	 * characters an expression would choke on without placeholders. */
	const char *ida = "host-a:1f2e", *idb = "host.b:9#x y";
	bool has = false;
	int rc;
	uint64_t f = 99;

	snprintf(key, sizeof(key), "%sshared", prefix);
	snprintf(key2, sizeof(key2), "%smarked", prefix);
	snprintf(key3, sizeof(key3), "%sfenced", prefix);
	record_init(&cur);
	record_init(&row);

	/* A shared row, made as any lock is: it is held, and every other
	 * client sees the python fields. */
	ssc_shared_rec(&a, key, "r1", 30000, ida, "a1");
	rc = st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(cur.rvn, "r1"), "put", has, &cur),
		0);
	ssc_get(st, key, &row);
	CHECK(row.shared);
	CHECK_INT((int)row.n_readers, 1);
	CHECK_STR(row.rvn, "r1");
	CHECK_STR(ssc_v(&row, ida), "a1");
	CHECK_STR(row.readers[0].cmd, "cat");
	CHECK_INT(row.readers[0].pid, 42);
	CHECK(!row.writer_id);
	/* A second put is refused (an exclusive acquire sees it held). */
	CHECK_INT(st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL),
		  -ECANCELED);
	CHECK(has && cur.shared);

	/* Join: a second reader, the row's RVN moves. */
	ssc_shared_rec(&b, key, "r2", 30000, idb, "b1");
	rc = st->ops->join_shared(st, &b, false, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(ssc_v(&cur, idb), "b1"), "join",
			     has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_INT((int)row.n_readers, 2);
	CHECK_STR(row.rvn, "r2");
	CHECK_STR(ssc_v(&row, idb), "b1");
	CHECK_STR(ssc_v(&row, ida), "a1");
	/* A reader with a longer lease raises the row's, never lowers it. */
	record_fini(&b);
	ssc_shared_rec(&b, key, "r3", 60000, idb, "b2");
	CHECK_INT(st->ops->join_shared(st, &b, false, 0, &cur, &has),
		  -ECANCELED);
	CHECK(has && cur.lease_ms == 30000);
	rc = st->ops->join_shared(st, &b, true, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(ssc_v(&cur, idb), "b2"), "join",
			     has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_INT(row.lease_ms, 60000);
	CHECK_STR(ssc_v(&row, idb), "b2");
	CHECK_INT(st->ops->join_shared(st, &b, true, 0, &cur, &has),
		  -ECANCELED);

	/* A reader's renewal: its entry and the row's RVN, conditioned on its
	 * own version; the answer is the whole row. */
	rn.new_rvn = "a2";
	rn.row_rvn = "r4";
	rn.reader = ida;
	rn.expiry_real_s = ssc_expiry_s(7200);
	rn.heartbeat_real_ms = 1790000005000LL;
	record_fini(&cur);
	rc = st->ops->renew_lock(st, key, "a1", &rn, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(ssc_v(&cur, ida), "a2"),
			     "renew", has, &cur),
		  0);
	CHECK(has && cur.shared);
	CHECK_STR(cur.rvn, "r4");
	CHECK_INT((int)cur.n_readers, 2);
	CHECK_STR(ssc_v(&cur, ida), "a2");
	CHECK_STR(ssc_v(&cur, idb), "b2");
	CHECK_INT(cur.expiry_real_s, rn.expiry_real_s);
	rn.new_rvn = "a3";
	rn.row_rvn = "r5";
	CHECK_INT(st->ops->renew_lock(st, key, "a1", &rn, 0, &cur, &has),
		  -ECANCELED);
	CHECK(has);
	CHECK_STR(ssc_v(&cur, ida), "a2");
	/* The row's RVN is no reader's version. */
	CHECK_INT(st->ops->renew_lock(st, key, "r4", &rn, 0, &cur, &has),
		  -ECANCELED);
	rn.set_data = true;
	rn.data = "x";
	rn.data_len = 1;
	CHECK_INT(st->ops->renew_lock(st, key, "a2", &rn, 0, &cur, &has),
		  -EINVAL);
	rn.set_data = false;
	rn.set_fence = true;
	rn.fence = 7;
	rc = st->ops->renew_lock(st, key, "a2", &rn, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(ssc_v(&cur, ida), "a3"),
			     "renew", has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_INT((int)record_reader_find(&row, ida)->fence, 7);
	CHECK_STR(row.rvn, "r5");
	rn.set_fence = false;
	/* An exclusive renewal of the row's RVN would be an owner's write:
	 * it is refused too (no reader is named). */

	/* A waiting writer marks the row: the RVN stays, new readers wait,
	 * readers already in renew as before. */
	rc = st->ops->mark_writer(st, key, "w", "w1", NULL, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.writer_v, "w1"), "mark",
			     has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_STR(row.rvn, "r5");
	CHECK(row.writer_id);
	CHECK_STR(row.writer_id, "w");
	CHECK_STR(row.writer_v, "w1");
	ssc_shared_rec(&c, key, "r6", 30000, "host-c:77", "c1");
	CHECK_INT(st->ops->join_shared(st, &c, false, 0, &cur, &has),
		  -ECANCELED);
	if (!has || !cur.writer_id)
		fprintf(stderr,
			"join refused: has=%d shared=%d n=%zu rvn=%s w=%s\n",
			has, cur.shared, cur.n_readers, cur.rvn,
			cur.writer_id ? cur.writer_id : "-");
	CHECK(has && cur.writer_id);
	/* Its own mark is refreshed; another writer's is refused unless it
	 * names the stale version it saw. */
	rc = st->ops->mark_writer(st, key, "w", "w2", NULL, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.writer_v, "w2"), "mark",
			     has, &cur),
		  0);
	CHECK_INT(st->ops->mark_writer(st, key, "x", "x1", NULL, 0, &cur, &has),
		  -ECANCELED);
	CHECK_INT(st->ops->mark_writer(st, key, "x", "x1", "w1", 0, &cur, &has),
		  -ECANCELED);
	rc = st->ops->mark_writer(st, key, "x", "x1", "w2", 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.writer_v, "x1"), "mark",
			     has, &cur),
		  0);
	CHECK_INT(st->ops->clear_writer(st, key, "w2", 0), -ECANCELED);
	rc = st->ops->clear_writer(st, key, "x1", 0);
	ssc_get(st, key, &row);
	CHECK_INT(ssc_landed(rc, !row.writer_id, "clear", true, &row), 0);
	CHECK(!row.writer_id);
	rc = st->ops->join_shared(st, &c, false, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(ssc_v(&cur, "host-c:77"), "c1"),
			     "join", has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_INT((int)row.n_readers, 3);

	/* A dead reader's entry goes on its version, not the row's RVN. */
	CHECK_INT(st->ops->evict_reader(st, key, "host-c:77", "c0", 0),
		  -ECANCELED);
	rc = st->ops->evict_reader(st, key, "host-c:77", "c1", 0);
	ssc_get(st, key, &row);
	CHECK_INT(ssc_landed(rc, !record_reader_find(&row, "host-c:77"),
			     "evict", true, &row),
		  0);
	CHECK_INT(st->ops->evict_reader(st, key, "host-c:77", "c1", 0),
		  -ECANCELED);
	ssc_get(st, key, &row);
	CHECK_INT((int)row.n_readers, 2);
	CHECK_STR(row.rvn, "r6");

	/* Leaving: on one's own version only; the row stays while a reader
	 * is left, and goes with the last. */
	CHECK_INT(
		st->ops->leave_shared(st, key, idb, "b1", "r7", 0, &cur, &has),
		-ECANCELED);
	CHECK(has);
	CHECK_STR(ssc_v(&cur, idb), "b2");
	rc = st->ops->leave_shared(st, key, idb, "b2", "r7", 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !record_reader_find(&cur, idb), "leave",
			     has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_INT((int)row.n_readers, 1);
	CHECK_STR(row.rvn, "r7");
	rc = st->ops->leave_shared(st, key, ida, "a3", "r8", 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, !has, "leave", has, &cur),
		  0); /* the row went with it */
	CHECK_INT(st->ops->get_lock(st, key, 0, &row), -ENOENT);
	CHECK_INT(st->ops->join_shared(st, &c, false, 0, &cur, &has),
		  -ECANCELED);
	CHECK(!has);

	/* A marked row is left to its writer when the last reader leaves:
	 * no reader may take it (not even by its RVN), the writer may. */
	record_fini(&a);
	ssc_shared_rec(&a, key2, "m1", 30000, ida, "a1");
	rc = st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(cur.rvn, "m1"), "put", has, &cur),
		0);
	rc = st->ops->mark_writer(st, key2, "w", "w1", NULL, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.writer_v, "w1"), "mark",
			     has, &cur),
		  0);
	rc = st->ops->leave_shared(st, key2, ida, "a1", "m2", 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !record_reader_find(&cur, ida), "leave",
			     has, &cur),
		  0);
	ssc_get(st, key2, &row);
	CHECK(row.shared && !row.n_readers && row.writer_id);
	CHECK_STR(row.rvn, "m2");
	record_fini(&a);
	ssc_shared_rec(&a, key2, "m3", 30000, ida, "a2");
	CHECK_INT(st->ops->put_lock(st, &a, "m2", 0, &cur, &has, NULL),
		  -ECANCELED);
	record_fini(&a);
	record_init(&a);
	CHECK_INT(record_set_str(&a.key, key2), 0);
	CHECK_INT(record_set_str(&a.owner, "w"), 0);
	strcpy(a.rvn, "x1");
	a.lease_ms = 30000;
	a.expiry_real_s = ssc_expiry_s(3600);
	rc = st->ops->put_lock(st, &a, "m2", 0, &cur, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(cur.rvn, "x1"), "put", has, &cur),
		0);
	ssc_get(st, key2, &row);
	CHECK(!row.shared && !row.writer_id && !row.n_readers);
	CHECK_STR(row.rvn, "x1");
	/* An exclusive row is never marked nor joined. */
	CHECK_INT(
		st->ops->mark_writer(st, key2, "w", "w2", NULL, 0, &cur, &has),
		-ECANCELED);
	rc = st->ops->delete_lock(st, key2, "x1", 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, !has, "delete", has, &cur), 0);

	/* Fences: readers read the counter as it is. */
	CHECK_INT(st->ops->read_fence(st, key3, 0, &f), 0);
	CHECK_INT((int)f, 0);
	CHECK_INT(st->ops->next_fence(st, key3, 0, &f), 0);
	CHECK_INT((int)f, 1);
	CHECK_INT(st->ops->read_fence(st, key3, 0, &f), 0);
	CHECK_INT((int)f, 1);
	CHECK_INT(st->ops->read_fence(st, key3, 0, &f), 0);
	CHECK_INT((int)f, 1);

	record_fini(&a);
	record_fini(&b);
	record_fini(&c);
	record_fini(&cur);
	record_fini(&row);
	printf("store shared rows: ok\n");
}

#endif
