/* store_index: the index on the parent directory (store_ddb_index.c,
 * store_ddb_backfill.c). Without DynamoDB: every row lockfs writes carries
 * lockfs_parent, "/" + its key up to its last "/". Against DynamoDB Local
 * (LOCKFS_DDB_ENDPOINT; skipped, exit 77, when unset): a table made by
 * store_ddb_create_table has the index and is ready; a listing by the index
 * returns a directory's own rows only, a python_dynamodb_lock row (no
 * lockfs_parent) only once tagged, while a Scan and an auto listing that
 * met such a row show it; store_ddb_create_index adds the index to a table
 * made without it, tags the rows without changing their versions, hints a
 * directory known only through a key below it, hides a hint whose
 * directory emptied, and a second run tags nothing. Tables are left behind
 * (DynamoDB Local keeps them in memory). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clk.h"
#include "ddb.h"
#include "ddb_local_env.h"
#include "record.h"
#include "store_ddb.h"
#include "text.h"

static struct ddb *d;

static void lock_rec(struct lock_record *r, const char *key)
{
	record_init(r);
	CHECK_INT(record_set_str(&r->key, key), 0);
	CHECK_INT(record_set_str(&r->owner, "host:test"), 0);
	CHECK_INT(text_uuid4(r->rvn), 0);
	r->lease_ms = 30000;
	r->expiry_real_s = clk_sys_real_ms() / 1000 + 3600;
}

static void check_parent_attr(void)
{
	static const char *const cases[][2] = {
		{ "a/b/c", "/a/b/" }, { "x", "/" },    { "/x", "//" },
		{ "a//b", "/a//" },   { "a/", "/a/" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lock_record r;
		struct ddb_item *it = NULL;
		const char *p;

		lock_rec(&r, cases[i][0]);
		CHECK_INT(store_ddb_record_to_item(&r, &it), 0);
		CHECK_INT(ddb_item_get_s(it, "lockfs_parent", &p), 0);
		CHECK_STR(p, cases[i][1]);
		ddb_item_free(it);
		record_fini(&r);
	}
}

static void new_table(char *name, size_t len, bool with_index)
{
	char uuid[37], msg[256];

	CHECK_INT(text_uuid4(uuid), 0);
	snprintf(name, len, "lockfs-index-test-%.8s", uuid);
	if (with_index) {
		CHECK_INT(store_ddb_create_table(d, name,
						 clk_sys_mono_ms() + 30000,
						 NULL, msg, sizeof(msg)),
			  0);
		return;
	}
	CHECK_INT(ddb_create_table(d, name, "lock_key", "sort_key", NULL), 0);
	CHECK_INT(
		ddb_wait_table_active(d, name, clk_sys_mono_ms() + 30000, NULL),
		0);
}

/* A python_dynamodb_lock client's row: its attributes only. */
static void put_python(const char *table, const char *key, const char *rvn)
{
	struct ddb_item *it = ddb_item_new();

	CHECK(it);
	CHECK_INT(ddb_item_set_s(it, "lock_key", key), 0);
	CHECK_INT(ddb_item_set_s(it, "sort_key", "-"), 0);
	CHECK_INT(ddb_item_set_s(it, "owner_name", "py"), 0);
	CHECK_INT(ddb_item_set_n(it, "lease_duration", 30), 0);
	CHECK_INT(ddb_item_set_s(it, "record_version_number", rvn), 0);
	CHECK_INT(ddb_item_set_n(it, "expiry_time",
				 clk_sys_real_ms() / 1000 + 3600),
		  0);
	CHECK_INT(ddb_put_item(d, table, it, NULL, NULL, NULL), 0);
	ddb_item_free(it);
}

struct names {
	char text[512];
};

/* The listing as "name,name/," (dirs with a trailing /), sorted by the
 * store's order (the index's: by key). */
static int add_name(void *arg, const struct store_row *row)
{
	struct names *n = arg;
	const char *key =
		row->kind == STORE_ROW_LOCK ? row->lock->key : row->dir->key;
	size_t len = strlen(n->text);

	snprintf(n->text + len, sizeof(n->text) - len, "%s%s,", key,
		 row->kind == STORE_ROW_DIR && key[strlen(key) - 1] != '/'
			 ? "(dir)"
			 : "");
	return 0;
}

static const char *list(struct store *st, const char *prefix, struct names *n)
{
	n->text[0] = '\0';
	CHECK_INT(st->ops->list(st, prefix, 0, add_name, n), 0);
	return n->text;
}

static void check_listing(void)
{
	char table[64], msg[256];
	struct lock_record r;
	struct dir_record dr;
	struct store_lookup sl;
	struct names n;
	bool active = false;
	struct store *st;

	new_table(table, sizeof(table), true);
	CHECK_INT(store_ddb_index_state(d, table, 0, &active, msg, sizeof(msg)),
		  0);
	CHECK_INT(active, 1); /* made with the index: ready */
	st = store_ddb_new(d, table, 30000);
	CHECK(st);
	dir_record_init(&dr);
	dr.key = strdup("ix/d");
	dr.mode = 0755;
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), 0);
	dir_record_fini(&dr);
	const char *keys[] = { "ix/d/a", "ix/d/b", "ix/e/z", "ix/d/s/t" };
	for (size_t i = 0; i < 4; i++) {
		lock_rec(&r, keys[i]);
		CHECK_INT(st->ops->put_lock(st, &r, NULL, 0, NULL, NULL, NULL),
			  0);
		record_fini(&r);
	}
	store_ddb_set_listing(st, STORE_DDB_LIST_INDEX, true);
	/* Its own rows only: d/s/t is below, and s has neither marker nor
	 * hint (lockfs writes no hints: the backfill does). */
	CHECK_STR(list(st, "ix/d/", &n), "ix/d/a,ix/d/b,");
	CHECK_STR(list(st, "ix/", &n), "ix/d(dir),");
	/* Not a directory's listing: a Scan, every row below. */
	CHECK(strstr(list(st, "ix/d", &n), "ix/d/s/t,"));
	put_python(table, "ix/d/py", "11111111-1111-4111-8111-111111111111");
	CHECK_STR(list(st, "ix/d/", &n), "ix/d/a,ix/d/b,");
	/* auto: the index, until a python row is met. */
	store_ddb_set_listing(st, STORE_DDB_LIST_AUTO, true);
	CHECK_STR(list(st, "ix/d/", &n), "ix/d/a,ix/d/b,");
	store_lookup_init(&sl);
	CHECK_INT(st->ops->lookup(st, "ix/d/py", 0, &sl), 0);
	CHECK_INT(sl.has_lock, 1);
	store_lookup_fini(&sl);
	CHECK(strstr(list(st, "ix/d/", &n), "ix/d/py,"));
	store_free(st);
	/* list=scan: every row, the python one too. */
	st = store_ddb_new(d, table, 30000);
	CHECK(st);
	store_ddb_set_listing(st, STORE_DDB_LIST_SCAN, true);
	CHECK(strstr(list(st, "ix/d/", &n), "ix/d/py,"));
	/* A table without the index: never a Query of it. */
	store_ddb_set_listing(st, STORE_DDB_LIST_INDEX, false);
	CHECK(strstr(list(st, "ix/d/", &n), "ix/d/py,"));
	store_free(st);
}

/* store_ddb_create_index on table succeeds and says want. */
static void create_index(const char *table, const char *want)
{
	char msg[256], *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	CHECK(f);
	/* DynamoDB Local makes an added index ACTIVE up to a minute later. */
	CHECK_INT(store_ddb_create_index(d, table, clk_sys_mono_ms() + 100000,
					 f, msg, sizeof(msg)),
		  0);
	fclose(f);
	if (!strstr(out, want))
		fprintf(stderr, "create_index said: %s\n", out);
	CHECK(strstr(out, want));
	free(out);
}

static void check_create_index(void)
{
	char table[64], msg[256];
	struct lock_record got;
	struct dir_record dr;
	struct names n;
	bool active = true;
	struct store *st;

	new_table(table, sizeof(table), false);
	CHECK_INT(store_ddb_index_state(d, table, 0, &active, msg, sizeof(msg)),
		  0);
	CHECK_INT(active, 0);
	st = store_ddb_new(d, table, 30000);
	CHECK(st);
	dir_record_init(&dr);
	dr.key = strdup("j");
	CHECK_INT(st->ops->put_dir(st, &dr, NULL, 0), 0);
	dir_record_fini(&dr);
	put_python(table, "j/p1", "22222222-2222-4222-8222-222222222222");
	put_python(table, "j/deep/q", "33333333-3333-4333-8333-333333333333");
	put_python(table, "top", "44444444-4444-4444-8444-444444444444");

	create_index(table, "ready: 4 rows read, 3 tagged, 1 directory hints "
			    "written; 0 keys too long");
	CHECK_INT(store_ddb_index_state(d, table, 0, &active, msg, sizeof(msg)),
		  0);
	CHECK_INT(active, 1);
	/* Versions unchanged: python holders are not disturbed. */
	record_init(&got);
	CHECK_INT(st->ops->get_lock(st, "j/p1", 0, &got), 0);
	CHECK_STR(got.rvn, "22222222-2222-4222-8222-222222222222");
	record_fini(&got);

	store_ddb_set_listing(st, STORE_DDB_LIST_INDEX, true);
	CHECK_STR(list(st, "j/", &n), "j/deep/,j/p1,");
	CHECK_STR(list(st, "", &n), "j(dir),top,");
	CHECK_STR(list(st, "j/deep/", &n), "j/deep/q,");

	/* Again: nothing to tag. */
	create_index(table, "ready: 4 rows read, 0 tagged, 0 directory hints "
			    "written; 0 keys too long");

	/* The hinted directory's last key goes: it is no longer listed. */
	CHECK_INT(st->ops->delete_lock(st, "j/deep/q", NULL, 0, NULL, NULL), 0);
	CHECK_STR(list(st, "j/", &n), "j/p1,");
	store_free(st);
}

int main(int argc, char **argv)
{
	struct ddb_local_env env;
	int rc;

	check_cases(argc, argv);
	CHECK_CASE(check_parent_attr);
	if (check_only && !strcmp(check_only, "check_parent_attr"))
		CHECK_DONE();
	rc = ddb_local_open(&env);
	if (rc)
		return rc;
	d = env.ddb;
	CHECK_CASE(check_listing);
	CHECK_CASE(check_create_index);
	ddb_local_close(&env);
	CHECK_DONE();
}
