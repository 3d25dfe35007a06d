/* store_local: the DynamoDB store (store_ddb) against a real DynamoDB Local
 * at LOCKFS_DDB_ENDPOINT (skipped, exit 77, when unset), for what only the
 * real conditions can show: a directory marker and a lock of one name are
 * one item, so the acquire's and the mkdir's conditional writes decide
 * between them, one of each racing on many names from many threads; a lock
 * seen expired is taken over by mkdir, a marker never by an acquire or a
 * forced delete; markers of the old form (sort key lockfs:dir) are still
 * read, changed and removed; shared rows keep their conditions (joins,
 * renewals, leaves, evictions, writer marks: store_share_checks.h, which
 * lock_share runs on store_mem too), and so do exclusive rows' next marks,
 * releases into reservations and their takeovers (store_fair_checks.h, run
 * on store_mem by lock_fair), and so do session items and a lock row's
 * lockfs_session (store_session_checks.h, run on store_mem by
 * lock_session), also with every write sent again after it landed; the
 * lock rows of many keys in one BatchGetItem (get_locks) are what get_lock
 * gives for each. The test's
 * threads each make their own requests; the table is left behind (DynamoDB
 * Local keeps it in memory). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddb_local_env.h"
#include "clk.h"
#include "ddb.h"
#include "record.h"
#include "store_ddb.h"
#include "store_fault.h"
#include "store_fair_checks.h"
#include "store_session_checks.h"
#include "store_share_checks.h"
#include "text.h"

#define RACE_NAMES 24

static struct ddb *d;
static struct store *st;
static char table[64];

static void lock_rec(struct lock_record *r, const char *key, const char *rvn)
{
	record_init(r);
	CHECK_INT(record_set_str(&r->key, key), 0);
	CHECK_INT(record_set_str(&r->owner, "host:test"), 0);
	text_copy(r->rvn, sizeof(r->rvn), rvn);
	r->lease_ms = 30000;
	r->expiry_real_s = clk_sys_real_ms() / 1000 + 3600;
}

static void dir_rec(struct dir_record *dr, const char *key)
{
	dir_record_init(dr);
	dr->key = strdup(key);
	CHECK(dr->key);
	dr->mode = 0750;
	dr->uid = 1001;
	dr->gid = 1002;
	dr->created_real_ms = clk_sys_real_ms();
}

static void check_one_item_per_name(void)
{
	struct lock_record r, cur;
	struct dir_record dr;
	struct store_lookup sl;
	bool has = false;

	/* A namespace first: an acquire is refused, with nothing to
	 * observe, and a second mkdir too. */
	dir_rec(&dr, "ns");
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), 0);
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), -EEXIST);
	lock_rec(&r, "ns", "rvn-1");
	record_init(&cur);
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL),
		  -EISDIR);
	CHECK(!has);
	/* Nor by a takeover naming the marker's RVN, nor a forced delete. */
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "ns", 0, &sl), 0);
	CHECK(sl.has_dir && !sl.has_lock);
	CHECK_INT(sl.dir.mode, 0750);
	CHECK_INT(sl.dir.uid, 1001);
	store_lookup_fini(&sl);
	CHECK_INT(st->ops->get_lock(st, "ns", 0, &cur), -ENOENT);
	CHECK_INT(st->ops->delete_lock(st, "ns", NULL, 0, NULL, NULL),
		  -ECANCELED);
	CHECK_INT(st->ops->set_dir_mode(st, "ns", 0700, 0), 0);
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "ns", 0, &sl), 0);
	CHECK(sl.has_dir);
	CHECK_INT(sl.dir.mode, 0700);
	store_lookup_fini(&sl);
	CHECK_INT(st->ops->delete_dir(st, "ns", 0), 0);
	CHECK_INT(st->ops->delete_dir(st, "ns", 0), -ENOENT);
	CHECK_INT(st->ops->set_dir_mode(st, "ns", 0700, 0), -ENOENT);
	/* Gone: the name can be a lock now, and then mkdir is refused and
	 * rmdir finds no directory (the lock stays). */
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL), 0);
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), -EEXIST);
	CHECK_INT(st->ops->delete_dir(st, "ns", 0), -ENOENT);
	CHECK_INT(st->ops->set_dir_mode(st, "ns", 0700, 0), -ENOENT);
	CHECK_INT(st->ops->get_lock(st, "ns", 0, &cur), 0);
	CHECK_STR(cur.rvn, "rvn-1");
	/* A lock seen expired is taken over by mkdir with its RVN, not with
	 * another. */
	CHECK_INT(st->ops->put_dir(st, &dr, "rvn-other", 0), -EEXIST);
	CHECK_INT(st->ops->put_dir(st, &dr, "rvn-1", 0), 0);
	CHECK_INT(st->ops->get_lock(st, "ns", 0, &cur), -ENOENT);
	CHECK_INT(st->ops->delete_dir(st, "ns", 0), 0);
	record_fini(&cur);
	record_fini(&r);
	dir_record_fini(&dr);
}

/* replace_lock writes only over the row of the RVN it names: never where
 * no row is (a downgrade landing after its release, or over a row broken
 * meanwhile), nor over another RVN, nor over a directory. */
static void check_replace_only_over(void)
{
	struct lock_record r, cur;
	struct dir_record dr;
	bool has = true;

	lock_rec(&r, "rp/k", "rvn-2");
	record_init(&cur);
	CHECK_INT(st->ops->replace_lock(st, &r, "rvn-1", 0, &cur, &has),
		  -ECANCELED);
	CHECK(!has);
	CHECK_INT(st->ops->get_lock(st, "rp/k", 0, &cur), -ENOENT);
	/* put_lock with the same RVN expected creates the row. */
	CHECK_INT(st->ops->put_lock(st, &r, "rvn-1", 0, &cur, &has, NULL), 0);
	text_copy(r.rvn, sizeof(r.rvn), "rvn-3");
	CHECK_INT(st->ops->replace_lock(st, &r, "rvn-1", 0, &cur, &has),
		  -ECANCELED);
	CHECK(has);
	CHECK_STR(cur.rvn, "rvn-2");
	CHECK_INT(st->ops->replace_lock(st, &r, "rvn-2", 0, &cur, &has), 0);
	CHECK_INT(st->ops->get_lock(st, "rp/k", 0, &cur), 0);
	CHECK_STR(cur.rvn, "rvn-3");
	CHECK_INT(st->ops->delete_lock(st, "rp/k", "rvn-3", 0, NULL, NULL), 0);
	dir_rec(&dr, "rp/d");
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), 0);
	record_fini(&r);
	lock_rec(&r, "rp/d", "rvn-4");
	CHECK_INT(st->ops->replace_lock(st, &r, "rvn-1", 0, &cur, &has),
		  -EISDIR);
	CHECK_INT(st->ops->delete_dir(st, "rp/d", 0), 0);
	dir_record_fini(&dr);
	record_fini(&cur);
	record_fini(&r);
}

/* A marker as the previous version wrote it: its own row. */
static void check_old_markers(void)
{
	struct ddb_item *it = ddb_item_new();
	struct ddb_call call = { 0 };
	struct store_lookup sl;

	CHECK(it);
	CHECK_INT(ddb_item_set_s(it, "lock_key", "old"), 0);
	CHECK_INT(ddb_item_set_s(it, "sort_key", RECORD_SORT_DIR), 0);
	CHECK_INT(ddb_item_set_n(it, "lockfs_mode", 0755), 0);
	CHECK_INT(ddb_put_item(d, table, it, NULL, NULL, &call), 0);
	ddb_item_free(it);
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "old", 0, &sl), 0);
	CHECK(sl.has_dir && !sl.has_lock);
	store_lookup_fini(&sl);
	CHECK_INT(st->ops->set_dir_mode(st, "old", 0711, 0), 0);
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "old", 0, &sl), 0);
	CHECK_INT(sl.dir.mode, 0711);
	store_lookup_fini(&sl);
	CHECK_INT(st->ops->delete_dir(st, "old", 0), 0);
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "old", 0, &sl), 0);
	CHECK(!sl.has_dir && !sl.has_lock);
	store_lookup_fini(&sl);
}

struct count {
	int locks, dirs;
};

static int count_row(void *arg, const struct store_row *row)
{
	struct count *c = arg;

	if (row->kind == STORE_ROW_DIR)
		c->dirs++;
	else
		c->locks++;
	return 0;
}

/* The race of the issue: mkdir on one mount and O_EXCL on another, at once
 * on every name. Each side's result must match what is stored. */
struct racer {
	pthread_barrier_t *go;
	bool dirs; /* this thread makes directories, else locks */
	int won[RACE_NAMES];
};

static void *race_main(void *arg)
{
	struct racer *ra = arg;
	int i;

	for (i = 0; i < RACE_NAMES; i++) {
		char key[32];
		int rc;

		snprintf(key, sizeof(key), "race/%d", i);
		pthread_barrier_wait(ra->go);
		if (ra->dirs) {
			struct dir_record dr;

			dir_rec(&dr, key);
			rc = st->ops->put_dir(st, &dr, NULL, 0);
			dir_record_fini(&dr);
			CHECK(rc == 0 || rc == -EEXIST);
		} else {
			struct lock_record r, cur;
			bool has = false;

			lock_rec(&r, key, "rvn-race");
			record_init(&cur);
			rc = st->ops->put_lock(st, &r, NULL, 0, &cur, &has,
					       NULL);
			record_fini(&cur);
			record_fini(&r);
			CHECK(rc == 0 || rc == -EISDIR);
		}
		ra->won[i] = rc == 0;
	}
	return NULL;
}

static void check_race(void)
{
	pthread_barrier_t go;
	struct racer a = { &go, true, { 0 } }, b = { &go, false, { 0 } };
	pthread_t ta, tb;
	struct count c = { 0, 0 };
	int i, dirs = 0, locks = 0;

	CHECK_INT(pthread_barrier_init(&go, NULL, 2), 0);
	CHECK_INT(pthread_create(&ta, NULL, race_main, &a), 0);
	CHECK_INT(pthread_create(&tb, NULL, race_main, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < RACE_NAMES; i++) {
		struct store_lookup sl;
		char key[32];

		CHECK_INT(a.won[i] + b.won[i], 1);
		snprintf(key, sizeof(key), "race/%d", i);
		store_lookup_init(&sl);
		CHECK_INT(st->ops->lookup(st, key, 0, &sl), 0);
		CHECK_INT(sl.has_dir, a.won[i]);
		CHECK_INT(sl.has_lock, b.won[i]);
		store_lookup_fini(&sl);
		dirs += a.won[i];
		locks += b.won[i];
	}
	/* The listing agrees, and shows each name once. */
	CHECK_INT(st->ops->list(st, "race/", 0, count_row, &c), 0);
	CHECK_INT(c.dirs, dirs);
	CHECK_INT(c.locks, locks);
	printf("race: %d directories, %d locks of %d names\n", dirs, locks,
	       RACE_NAMES);
}

/* The fields a read gives, the same both ways. */
static void check_same_record(const struct lock_record *a,
			      const struct lock_record *b)
{
	CHECK_STR(a->key, b->key);
	CHECK_STR(a->owner, b->owner);
	CHECK_STR(a->rvn, b->rvn);
	CHECK_INT(a->lease_ms, b->lease_ms);
	CHECK_INT(a->expiry_real_s, b->expiry_real_s);
	CHECK_INT(a->has_lockfs, b->has_lockfs);
	CHECK_INT(a->fence, b->fence);
	CHECK_INT(a->shared, b->shared);
	CHECK_INT(a->n_readers, b->n_readers);
}

/* get_locks on keys[0..n): each key's answer is get_lock's. */
static void check_get_locks_match(const char *const *keys, size_t n,
				  const int *want)
{
	struct lock_record outs[STORE_GET_LOCKS_MAX], one;
	int rcs[STORE_GET_LOCKS_MAX];
	size_t i;

	CHECK(st->ops->get_locks);
	for (i = 0; i < n; i++) {
		record_init(&outs[i]);
		rcs[i] = 1;
	}
	st->ops->get_locks(st, keys, n, 0, outs, rcs);
	for (i = 0; i < n; i++) {
		record_init(&one);
		CHECK_INT(rcs[i], st->ops->get_lock(st, keys[i], 0, &one));
		if (want)
			CHECK_INT(rcs[i], want[i]);
		if (!rcs[i])
			check_same_record(&outs[i], &one);
		record_fini(&one);
		record_fini(&outs[i]);
	}
}

/* get_locks (one BatchGetItem): present, absent, directory markers of
 * both forms among them; 100 keys; a write seen by the next read. */
static void check_get_locks(void)
{
	static const char *const keys[] = { "gl/a",   "gl/none", "gl/dir",
					    "gl/c",   "gl/old",	 "gl/none2",
					    "gl/data" };
	static const int want[] = {
		0, -ENOENT, -ENOENT, 0, -ENOENT, -ENOENT, 0
	};
	const char *many[STORE_GET_LOCKS_MAX];
	char names[STORE_GET_LOCKS_MAX][24];
	struct lock_record r, cur, out[2];
	struct lock_renewal rn = { 0 };
	struct dir_record dr;
	struct ddb_item *it = ddb_item_new();
	struct ddb_call call = { 0 };
	bool has = false;
	int rcs[2], i, found = 0;

	lock_rec(&r, "gl/a", "rvn-a");
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL), 0);
	record_fini(&r);
	lock_rec(&r, "gl/c", "rvn-c");
	r.lease_ms = 12000;
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL), 0);
	record_fini(&r);
	lock_rec(&r, "gl/data", "rvn-d");
	CHECK_INT(record_set_data(&r, "payload", 7), 0);
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL), 0);
	record_fini(&r);
	dir_rec(&dr, "gl/dir");
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), 0);
	dir_record_fini(&dr);
	CHECK(it);
	CHECK_INT(ddb_item_set_s(it, "lock_key", "gl/old"), 0);
	CHECK_INT(ddb_item_set_s(it, "sort_key", RECORD_SORT_DIR), 0);
	CHECK_INT(ddb_put_item(d, table, it, NULL, NULL, &call), 0);
	ddb_item_free(it);
	check_get_locks_match(keys, sizeof(keys) / sizeof(keys[0]), want);

	/* The most keys one call takes, every third one held. */
	for (i = 0; i < STORE_GET_LOCKS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "gl100/%d", i);
		many[i] = names[i];
		if (i % 3)
			continue;
		lock_rec(&r, names[i], "rvn-many");
		CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL),
			  0);
		record_fini(&r);
	}
	check_get_locks_match(many, STORE_GET_LOCKS_MAX, NULL);
	for (i = 0; i < STORE_GET_LOCKS_MAX; i++) {
		record_init(&cur);
		if (!st->ops->get_lock(st, names[i], 0, &cur))
			found++;
		record_fini(&cur);
	}
	CHECK_INT(found, (STORE_GET_LOCKS_MAX + 2) / 3);

	/* A write, then at once a read of it: its RVN, then the new one,
	 * then nothing. */
	lock_rec(&r, "gl/fresh", "rvn-1");
	CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, &cur, &has, NULL), 0);
	const char *const two[] = { "gl/fresh", "gl/none" };
	record_init(&out[0]);
	record_init(&out[1]);
	st->ops->get_locks(st, two, 2, 0, out, rcs);
	CHECK_INT(rcs[0], 0);
	CHECK_INT(rcs[1], -ENOENT);
	CHECK_STR(out[0].rvn, "rvn-1");
	record_fini(&out[0]);
	rn.new_rvn = "rvn-2";
	rn.expiry_real_s = r.expiry_real_s;
	rn.heartbeat_real_ms = clk_sys_real_ms();
	CHECK_INT(st->ops->renew_lock(st, "gl/fresh", "rvn-1", &rn, 0, NULL,
				      NULL),
		  0);
	record_init(&out[0]);
	st->ops->get_locks(st, two, 2, 0, out, rcs);
	CHECK_INT(rcs[0], 0);
	CHECK_STR(out[0].rvn, "rvn-2");
	record_fini(&out[0]);
	CHECK_INT(st->ops->delete_lock(st, "gl/fresh", "rvn-2", 0, NULL, NULL),
		  0);
	record_init(&out[0]);
	st->ops->get_locks(st, two, 2, 0, out, rcs);
	CHECK_INT(rcs[0], -ENOENT);
	CHECK_INT(rcs[1], -ENOENT);
	record_fini(&out[0]);
	record_fini(&out[1]);
	record_fini(&r);
}

int main(int argc, char **argv)
{
	struct ddb_local_env env;
	struct store_fault twice;
	char uuid[37], msg[256];
	int rc = ddb_local_open(&env);

	if (rc)
		return rc;
	d = env.ddb;
	CHECK_INT(text_uuid4(uuid), 0);
	snprintf(table, sizeof(table), "lockfs-store-test-%.8s", uuid);
	CHECK_INT(store_ddb_create_table(d, table, clk_sys_mono_ms() + 30000,
					 NULL, msg, sizeof(msg)),
		  0);
	st = store_ddb_new(d, table, 30000);
	CHECK(st);

	check_cases(argc, argv);
	CHECK_CASE(check_one_item_per_name);
	CHECK_CASE(check_replace_only_over);
	CHECK_CASE(check_old_markers);
	CHECK_CASE(check_race);
	CHECK_CASE(check_get_locks);
	store_share_checks(st, "share/");
	store_fair_checks(st, "fair/");
	store_session_checks(st, "session/");
	store_fault_init(&twice, st);
	store_fault_set_send_twice(&twice, 1);
	store_share_checks(&twice.base, "twice/");
	store_fair_checks(&twice.base, "twice/");
	store_session_checks(&twice.base, "twice/");

	store_free(st);
	ddb_local_close(&env);
	CHECK_DONE();
}
