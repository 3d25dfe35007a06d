/* store_fair_checks: what every store must do for the fair handoff of
 * exclusive rows (store.h: mark_next, release_lock, clear_writer;
 * doc/fair-handoff.md), run on store_mem by lock_fair and on store_ddb
 * against DynamoDB Local by store_local, so that the in-memory store the
 * engine tests use keeps the conditions of the real one; each also with
 * every write sent again after it landed (store_fault). Header-only;
 * single-threaded; keys start with the caller's prefix. */
#ifndef LOCKFS_TEST_STORE_FAIR_CHECKS_H
#define LOCKFS_TEST_STORE_FAIR_CHECKS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "record.h"
#include "store.h"
#include "store_share_checks.h"

/* An exclusive row of key held by owner with RVN rvn. */
static inline void sfc_rec(struct lock_record *r, const char *key,
			   const char *owner, const char *rvn)
{
	record_init(r);
	CHECK_INT(record_set_str(&r->key, key), 0);
	CHECK_INT(record_set_str(&r->owner, owner), 0);
	text_copy(r->rvn, sizeof(r->rvn), rvn);
	r->lease_ms = 30000;
	r->expiry_real_s = ssc_expiry_s(3600);
	r->has_lockfs = true;
	r->mode = 0644;
	r->acquired_real_ms = r->heartbeat_real_ms = 1790000000000LL;
}

/* A reservation as the engine asks for one (the store names whom for). */
static inline void sfc_resv(struct lock_record *r, const char *key,
			    const char *rvn)
{
	record_init(r);
	CHECK_INT(record_set_str(&r->key, key), 0);
	CHECK_INT(record_set_str(&r->owner, RECORD_RESERVED_OWNER), 0);
	text_copy(r->rvn, sizeof(r->rvn), rvn);
	r->lease_ms = 30000;
	r->expiry_real_s = ssc_expiry_s(3600);
}

static inline void sfc_mark(struct store *st, const char *key, const char *rvn,
			    const char *id, const char *v, const char *replace,
			    struct lock_record *cur)
{
	bool has = false;
	int rc = st->ops->mark_next(st, key, rvn, id, v, 1234, replace, 0, cur,
				    &has);

	CHECK_INT(ssc_landed(rc,
			     has && cur->next_id && !strcmp(cur->next_id, id) &&
				     !strcmp(cur->next_v, v),
			     "mark_next", has, cur),
		  0);
}

static inline void store_fair_checks(struct store *st, const char *prefix)
{
	struct lock_record a, resv, cur, row;
	struct lock_renewal rn = { 0 };
	char key[128], key2[128];
	/* Owner ids as lockfs makes them, one with the characters an
	 * expression would choke on without placeholders. */
	const char *idc = "host-c:77aa", *idd = "host.d:9#x y";
	bool has = false;
	int rc;

	snprintf(key, sizeof(key), "%sfair", prefix);
	snprintf(key2, sizeof(key2), "%sfair-shared", prefix);
	record_init(&cur);
	record_init(&row);

	/* A's row; C marks it on the RVN it saw, and only on that. */
	sfc_rec(&a, key, "host-a:1", "r1");
	rc = st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(cur.rvn, "r1"), "put", has, &cur),
		0);
	CHECK_INT(st->ops->mark_next(st, key, "r0", idc, "c1", 0, NULL, 0, &cur,
				     &has),
		  -ECANCELED);
	CHECK(has);
	CHECK_STR(cur.rvn, "r1");
	sfc_mark(st, key, "r1", idc, "c1", NULL, &cur);
	ssc_get(st, key, &row);
	CHECK_STR(row.rvn, "r1"); /* the RVN stays: the holder is unaware */
	CHECK(row.next_id && !strcmp(row.next_id, idc));
	CHECK_STR(row.next_v, "c1");
	CHECK_INT((int)row.next_waited_ms, 1234); /* how long it waited */
	CHECK(!row.reserved_for && !row.writer_id);

	/* One mark at a time: D is refused, unless it replaces the version
	 * it judged stale; C refreshes its own. */
	CHECK_INT(st->ops->mark_next(st, key, "r1", idd, "d1", 0, NULL, 0, &cur,
				     &has),
		  -ECANCELED);
	CHECK(has && cur.next_id && !strcmp(cur.next_id, idc));
	CHECK_INT(st->ops->mark_next(st, key, "r1", idd, "d1", 0, "c0", 0, &cur,
				     &has),
		  -ECANCELED);
	sfc_mark(st, key, "r1", idd, "d1", "c1", &cur);
	ssc_get(st, key, &row);
	CHECK_STR(row.next_id, idd);
	sfc_mark(st, key, "r1", idc, "c2", "d1", &cur);
	sfc_mark(st, key, "r1", idc, "c3", NULL, &cur);
	ssc_get(st, key, &row);
	CHECK_STR(row.next_id, idc);
	CHECK_STR(row.next_v, "c3");

	/* The holder's renewal keeps the mark. */
	rn.new_rvn = "r2";
	rn.expiry_real_s = ssc_expiry_s(3600);
	rn.heartbeat_real_ms = 1790000001000LL;
	rc = st->ops->renew_lock(st, key, "r1", &rn, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.rvn, "r2"), "renew", has,
			     &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_STR(row.rvn, "r2");
	CHECK(row.next_id && !strcmp(row.next_v, "c3"));

	/* A shared row takes no next mark (writers mark it otherwise). */
	record_fini(&a);
	ssc_shared_rec(&a, key2, "s1", 30000, "host-a:1", "a1");
	rc = st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(cur.rvn, "s1"), "put", has, &cur),
		0);
	CHECK_INT(st->ops->mark_next(st, key2, "s1", idc, "c1", 0, NULL, 0,
				     &cur, &has),
		  -ECANCELED);
	ssc_get(st, key2, &row);
	CHECK(!row.next_id);
	rc = st->ops->leave_shared(st, key2, "host-a:1", "a1", "s2", 0, &cur,
				   &has);
	CHECK_INT(ssc_landed(rc, !has || !record_reader_find(&cur, "host-a:1"),
			     "leave", has, &cur),
		  0);
	/* No row: nothing to mark. */
	CHECK_INT(st->ops->mark_next(st, key2, "s2", idc, "c1", 0, NULL, 0,
				     &cur, &has),
		  -ECANCELED);
	CHECK(!has);

	/* The release of a row that is not ours any more is refused, with
	 * the row; ours, marked, becomes C's reservation. */
	sfc_resv(&resv, key, "v1");
	CHECK_INT(st->ops->release_lock(st, key, "r1", &resv, 0, &cur, &has),
		  -ECANCELED);
	CHECK(has);
	CHECK_STR(cur.rvn, "r2");
	rc = st->ops->release_lock(st, key, "r2", &resv, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc,
			     has && !strcmp(cur.rvn, "v1") && cur.reserved_for,
			     "release", has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_STR(row.rvn, "v1");
	CHECK_STR(row.owner, RECORD_RESERVED_OWNER);
	CHECK(row.reserved_for && !strcmp(row.reserved_for, idc));
	CHECK(!row.next_id);
	CHECK_INT((int)row.lease_ms, 30000);

	/* Nobody else takes the reservation (not even by the RVN it
	 * replaced); C does, by its RVN. */
	record_fini(&a);
	sfc_rec(&a, key, "host-b:2", "b1");
	CHECK_INT(st->ops->put_lock(st, &a, NULL, 0, &cur, &has, NULL),
		  -ECANCELED);
	CHECK_INT(st->ops->put_lock(st, &a, "r2", 0, &cur, &has, NULL),
		  -ECANCELED);
	CHECK(has && cur.reserved_for);
	record_fini(&a);
	sfc_rec(&a, key, idc, "c-own");
	rc = st->ops->put_lock(st, &a, "v1", 0, &cur, &has, NULL);
	CHECK_INT(ssc_landed(rc, has && !strcmp(cur.rvn, "c-own"), "takeover",
			     has, &cur),
		  0);
	ssc_get(st, key, &row);
	CHECK_STR(row.rvn, "c-own");
	CHECK(!row.reserved_for && !row.next_id);

	/* A waiter that gives up removes its mark, by its version only. */
	sfc_mark(st, key, "c-own", idd, "d2", NULL, &cur);
	CHECK_INT(st->ops->clear_writer(st, key, "d1", 0), -ECANCELED);
	rc = st->ops->clear_writer(st, key, "d2", 0);
	CHECK(rc == 0 || rc == -ECANCELED); /* sent again: gone already */
	ssc_get(st, key, &row);
	CHECK(!row.next_id);

	/* Unmarked, the release deletes the row; a gone row is refused
	 * without one. */
	record_fini(&resv);
	sfc_resv(&resv, key, "v2");
	rc = st->ops->release_lock(st, key, "c-own", &resv, 0, &cur, &has);
	CHECK_INT(ssc_landed(rc, !has, "release", has, &cur), 0);
	record_fini(&row);
	CHECK_INT(st->ops->get_lock(st, key, 0, &row), -ENOENT);
	CHECK_INT(st->ops->release_lock(st, key, "c-own", &resv, 0, &cur, &has),
		  -ECANCELED);
	CHECK(!has);

	record_fini(&a);
	record_fini(&resv);
	record_fini(&cur);
	record_fini(&row);
	printf("store fair handoff: ok\n");
}

#endif
