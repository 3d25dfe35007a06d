/* store_session_checks: what every store must do with session items
 * (store.h: create, beat, get, fence and end_session) and a lock row's
 * lockfs_session, run on store_mem by lock_session and on store_ddb
 * against DynamoDB Local by store_local, each also with every heartbeat
 * sent again after it landed (store_fault), so that the in-memory store
 * the engine tests use keeps the conditions of the real one.
 * Header-only; single-threaded; keys carry the caller's tag. */
#ifndef LOCKFS_TEST_STORE_SESSION_CHECKS_H
#define LOCKFS_TEST_STORE_SESSION_CHECKS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "record.h"
#include "store.h"
#include "store_share_checks.h"

static inline void ssn_key(char *out, size_t len, const char *tag,
			   const char *name)
{
	snprintf(out, len, "%s%s%s", RECORD_SESSION_PREFIX, tag, name);
}

/* A heartbeat that must land: sent twice, the second answer is a refusal
 * that shows the first one's version. */
static inline void ssn_beat(struct store *st, const char *key,
			    const char *expect, const char *next)
{
	struct session_record cur;
	bool has = false;
	int rc =
		st->ops->beat_session(st, key, expect, next, ssc_expiry_s(3600),
				      1790000000123LL, 0, &cur, &has);

	if (rc == -ECANCELED && has && !cur.dead && !strcmp(cur.rvn, next))
		rc = 0;
	CHECK_INT(rc, 0);
}

static inline void ssn_basics(struct store *st, const char *tag)
{
	struct session_record sr;
	bool has = false;
	char key[128];

	ssn_key(key, sizeof(key), tag, "a");
	CHECK_INT(st->ops->create_session(st, key, "ownerA", "s1", 3000,
					  ssc_expiry_s(3600), 0),
		  0);
	CHECK_INT(st->ops->create_session(st, key, "ownerA", "s9", 3000,
					  ssc_expiry_s(3600), 0),
		  -EEXIST);
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), 0);
	CHECK_STR(sr.rvn, "s1");
	CHECK(!sr.dead);
	CHECK_INT(sr.lease_ms, 3000);
	ssn_beat(st, key, "s1", "s2");
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), 0);
	CHECK_STR(sr.rvn, "s2");
	CHECK_INT(sr.heartbeat_real_ms, 1790000000123LL);
	/* A stale version is refused, and the answer shows the item. */
	CHECK_INT(st->ops->beat_session(st, key, "s1", "s3", ssc_expiry_s(3600),
					1, 0, &sr, &has),
		  -ECANCELED);
	CHECK(has);
	CHECK_STR(sr.rvn, "s2");
	CHECK(!sr.dead);
	/* The fence: only on the version observed; then no beat lands. */
	CHECK_INT(st->ops->fence_session(st, key, "s1", ssc_expiry_s(3600), 0),
		  -ECANCELED);
	CHECK_INT(st->ops->fence_session(st, key, "s2", ssc_expiry_s(3600), 0),
		  0);
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), 0);
	CHECK(sr.dead);
	CHECK_STR(sr.rvn, "s2");
	has = false;
	CHECK_INT(st->ops->beat_session(st, key, "s2", "s4", ssc_expiry_s(3600),
					1, 0, &sr, &has),
		  -ECANCELED);
	CHECK(has);
	CHECK(sr.dead);
	/* A dead session is not created again either. */
	CHECK_INT(st->ops->create_session(st, key, "ownerA", "s5", 3000,
					  ssc_expiry_s(3600), 0),
		  -EEXIST);
}

static inline void ssn_absent_and_end(struct store *st, const char *tag)
{
	struct session_record sr;
	bool has = true;
	char key[128];

	/* Absent: read as -ENOENT, a beat refused without an item, and the
	 * fence of "absent" creates a dead item (once). */
	ssn_key(key, sizeof(key), tag, "gone");
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), -ENOENT);
	CHECK_INT(st->ops->beat_session(st, key, "x", "y", ssc_expiry_s(3600),
					1, 0, &sr, &has),
		  -ECANCELED);
	CHECK(!has);
	CHECK_INT(st->ops->fence_session(st, key, NULL, ssc_expiry_s(3600), 0),
		  0);
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), 0);
	CHECK(sr.dead);
	CHECK_INT(st->ops->fence_session(st, key, NULL, ssc_expiry_s(3600), 0),
		  -ECANCELED);
	CHECK_INT(st->ops->create_session(st, key, "o", "s1", 3000,
					  ssc_expiry_s(3600), 0),
		  -EEXIST);
	/* The end: only on our version. */
	ssn_key(key, sizeof(key), tag, "end");
	CHECK_INT(st->ops->create_session(st, key, "o", "e1", 3000,
					  ssc_expiry_s(3600), 0),
		  0);
	CHECK_INT(st->ops->end_session(st, key, "e0", 0), -ECANCELED);
	CHECK_INT(st->ops->end_session(st, key, "e1", 0), 0);
	CHECK_INT(st->ops->get_session(st, key, 0, &sr), -ENOENT);
}

static inline int ssn_count_row(void *arg, const struct store_row *row)
{
	(*(int *)arg)++;
	return 0;
}

/* A lock row naming its session keeps lockfs_session; session items are
 * never rows of a listing. */
static inline void ssn_row(struct store *st, const char *tag)
{
	struct lock_record rec, got;
	char key[128], skey[128];
	bool has = false;
	int n = 0, rc;

	snprintf(key, sizeof(key), "%ssession-row", tag);
	ssn_key(skey, sizeof(skey), tag, "row");
	CHECK_INT(st->ops->create_session(st, skey, "o", "r1", 3000,
					  ssc_expiry_s(3600), 0),
		  0);
	record_init(&rec);
	record_init(&got);
	CHECK_INT(record_set_str(&rec.key, key), 0);
	CHECK_INT(record_set_str(&rec.owner, "ownerA"), 0);
	CHECK_INT(record_set_str(&rec.session, skey), 0);
	text_copy(rec.rvn, sizeof(rec.rvn), "k1");
	rec.lease_ms = RECORD_SESSION_ROW_LEASE_MS;
	rec.expiry_real_s = ssc_expiry_s(365 * 86400);
	rec.has_lockfs = true;
	rec.acquired_real_ms = rec.heartbeat_real_ms = 1790000000000LL;
	rc = st->ops->put_lock(st, &rec, NULL, 0, &got, &has, NULL);
	CHECK_INT(
		ssc_landed(rc, has && !strcmp(got.rvn, "k1"), "put", has, &got),
		0);
	CHECK_INT(st->ops->get_lock(st, key, 0, &got), 0);
	CHECK(got.session != NULL);
	CHECK_STR(got.session ? got.session : "", skey);
	CHECK_INT(got.lease_ms, RECORD_SESSION_ROW_LEASE_MS);
	CHECK_INT(
		st->ops->list(st, RECORD_SESSION_PREFIX, 0, ssn_count_row, &n),
		0);
	CHECK_INT(n, 0);
	/* (sent twice, the second delete finds no row) */
	rc = st->ops->delete_lock(st, key, "k1", 0, NULL, NULL);
	CHECK(rc == 0 || rc == -ECANCELED);
	CHECK_INT(st->ops->get_lock(st, key, 0, &got), -ENOENT);
	record_fini(&rec);
	record_fini(&got);
}

static inline void store_session_checks(struct store *st, const char *tag)
{
	ssn_basics(st, tag);
	ssn_absent_and_end(st, tag);
	ssn_row(st, tag);
}

#endif
