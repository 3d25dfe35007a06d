/* ddb_local: every ddb operation against a real DynamoDB Local at
 * LOCKFS_DDB_ENDPOINT (skipped, exit 77, when unset): table creation and
 * TTL, conditional put/update/delete with the old item on failure, missing
 * items and tables, reserved words through placeholders, N and B round
 * trips, Query by hash key, and paged Scan with a filter. Tables are left
 * behind: DynamoDB Local keeps them in memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ddb_local_env.h"
#include "ddb.h"
#include "text.h"

static struct ddb *d;
static char table[64];
/* TTL is enabled on expiry_time: items must not expire during the test. */
static int64_t expiry_s;

static struct ddb_item *key_of(const char *k, const char *sort)
{
	struct ddb_item *key = ddb_item_new();

	CHECK(key);
	CHECK_INT(ddb_item_set_s(key, "lock_key", k), 0);
	CHECK_INT(ddb_item_set_s(key, "sort_key", sort), 0);
	return key;
}

/* A python_dynamodb_lock-shaped lock item. */
static struct ddb_item *lock_item(const char *k, const char *rvn)
{
	struct ddb_item *it = key_of(k, "-");

	CHECK_INT(ddb_item_set_s(it, "owner_name", "host:test"), 0);
	CHECK_INT(ddb_item_set_n(it, "lease_duration", 30), 0);
	CHECK_INT(ddb_item_set_s(it, "record_version_number", rvn), 0);
	CHECK_INT(ddb_item_set_n(it, "expiry_time", expiry_s), 0);
	return it;
}

static void check_s(const struct ddb_item *it, const char *name,
		    const char *want)
{
	const char *s = NULL;

	CHECK_INT(ddb_item_get_s(it, name, &s), 0);
	CHECK_STR(s, want);
}

static void check_tables(void)
{
	struct ddb_table_info info;
	struct ddb_call call = { 0 };
	struct ddb_item *key = key_of("x", "-"), *it;
	char status[32], attr[64];

	/* Nothing yet. */
	CHECK_INT(ddb_describe_table(d, table, &info, &call), -ENXIO);
	CHECK_STR(call.err.type, "ResourceNotFoundException");
	CHECK_INT(ddb_get_item(d, table, key, true, &it, &call), -ENXIO);
	CHECK(!it);

	CHECK_INT(ddb_create_table(d, table, "lock_key", "sort_key", &call), 0);
	CHECK_INT(ddb_create_table(d, table, "lock_key", "sort_key", &call),
		  -EEXIST);
	CHECK_INT(ddb_wait_table_active(d, table, clk_sys_mono_ms() + 30000,
					&call),
		  0);
	CHECK_INT(ddb_describe_table(d, table, &info, &call), 0);
	CHECK_STR(info.status, "ACTIVE");
	CHECK_STR(info.hash_name, "lock_key");
	CHECK_STR(info.hash_type, "S");
	CHECK_STR(info.range_name, "sort_key");
	CHECK_STR(info.range_type, "S");
	CHECK_INT(info.item_count, 0);

	CHECK_INT(ddb_update_ttl(d, table, "expiry_time", true, &call), 0);
	/* Enabling again is refused by DynamoDB, and fine for us. */
	CHECK_INT(ddb_update_ttl(d, table, "expiry_time", true, &call), 0);
	CHECK_INT(ddb_describe_ttl(d, table, status, sizeof(status), attr,
				   sizeof(attr), &call),
		  0);
	CHECK_STR(status, "ENABLED");
	CHECK_STR(attr, "expiry_time");
	/* Another attribute while one is enabled is a real error. */
	CHECK_INT(ddb_update_ttl(d, table, "other_time", true, &call), -EINVAL);
	CHECK_STR(call.err.type, "ValidationException");
	ddb_item_free(key);
}

static void check_conditional_writes(void)
{
	/* DynamoDB refuses placeholders an expression does not use. */
	static const char *const names_k[] = { "#k", "lock_key", NULL };
	static const char *const names[] = { "#r", "record_version_number",
					     NULL };
	struct ddb_item *item = lock_item("locks/a", "rvn-1");
	struct ddb_item *key = key_of("locks/a", "-");
	struct ddb_item *values = ddb_item_new(), *old, *out;
	struct ddb_expr create = { .condition = "attribute_not_exists(#k)",
				   .names = names_k };
	struct ddb_call call = { 0 };
	int64_t n;

	/* New lock, then the same again: refused with the holder's item. */
	CHECK_INT(ddb_put_item(d, table, item, &create, &old, &call), 0);
	CHECK(!old);
	CHECK_INT(call.attempts, 1);
	CHECK_INT(ddb_put_item(d, table, item, &create, &old, &call),
		  -ECANCELED);
	CHECK_STR(call.err.type, "ConditionalCheckFailedException");
	CHECK(old);
	check_s(old, "record_version_number", "rvn-1");
	check_s(old, "owner_name", "host:test");
	CHECK_INT(ddb_item_get_n(old, "lease_duration", &n), 0);
	CHECK_INT(n, 30);
	ddb_item_free(old);

	/* Heartbeat: conditioned on our RVN. */
	struct ddb_expr beat = {
		.condition = "#r = :mine",
		.update = "SET #r = :new, expiry_time = :exp",
		.names = names,
		.values = values,
	};
	CHECK_INT(ddb_item_set_s(values, ":mine", "rvn-1"), 0);
	CHECK_INT(ddb_item_set_s(values, ":new", "rvn-2"), 0);
	CHECK_INT(ddb_item_set_n(values, ":exp", expiry_s + 3600), 0);
	CHECK_INT(ddb_update_item(d, table, key, &beat, DDB_RETURN_ALL_NEW,
				  &out, &call),
		  0);
	check_s(out, "record_version_number", "rvn-2");
	CHECK_INT(ddb_item_get_n(out, "expiry_time", &n), 0);
	CHECK_INT(n, expiry_s + 3600);
	check_s(out, "owner_name", "host:test");
	ddb_item_free(out);
	/* The same heartbeat again: our RVN is gone. */
	CHECK_INT(ddb_update_item(d, table, key, &beat, DDB_RETURN_NONE, &out,
				  &call),
		  -ECANCELED);
	check_s(out, "record_version_number", "rvn-2");
	ddb_item_free(out);

	/* Release with a stale RVN fails, with the current RVN succeeds. */
	ddb_item_remove(values, ":new");
	ddb_item_remove(values, ":exp");
	struct ddb_expr release = { .condition = "#r = :mine",
				    .names = names,
				    .values = values };
	CHECK_INT(ddb_delete_item(d, table, key, &release, DDB_RETURN_NONE,
				  &old, &call),
		  -ECANCELED);
	check_s(old, "record_version_number", "rvn-2");
	ddb_item_free(old);
	CHECK_INT(ddb_item_set_s(values, ":mine", "rvn-2"), 0);
	CHECK_INT(ddb_delete_item(d, table, key, &release, DDB_RETURN_ALL_OLD,
				  &old, &call),
		  0);
	check_s(old, "record_version_number", "rvn-2");
	ddb_item_free(old);
	CHECK_INT(ddb_get_item(d, table, key, true, &out, &call), -ENOENT);
	CHECK(!out);
	/* Releasing what is not there: the condition fails, no item. */
	CHECK_INT(ddb_delete_item(d, table, key, &release, DDB_RETURN_NONE,
				  &old, &call),
		  -ECANCELED);
	CHECK(!old);

	/* Takeover of an observed RVN with PutItem. */
	CHECK_INT(ddb_put_item(d, table, item, &create, NULL, &call), 0);
	struct ddb_item *mine = lock_item("locks/a", "rvn-3");
	struct ddb_expr takeover = { .condition = "#r = :seen",
				     .names = names,
				     .values = values };
	CHECK_INT(ddb_item_set_s(values, ":seen", "rvn-1"), 0);
	ddb_item_remove(values, ":mine");
	CHECK_INT(ddb_put_item(d, table, mine, &takeover, &old, &call), 0);
	CHECK_INT(ddb_put_item(d, table, mine, &takeover, &old, &call),
		  -ECANCELED);
	check_s(old, "record_version_number", "rvn-3");
	ddb_item_free(old);

	ddb_item_free(mine);
	ddb_item_free(values);
	ddb_item_free(key);
	ddb_item_free(item);
}

/* `data` is a reserved word; N and B values come back as written. */
static void check_values(void)
{
	static const char *const names[] = { "#d", "data", NULL };
	static const unsigned char blob[] = { 0, 1, 2, 0xff, 0xfe, 0, 'x' };
	struct ddb_item *item = lock_item("values/1", "rvn-v");
	struct ddb_item *key = key_of("values/1", "-");
	struct ddb_item *values = ddb_item_new(), *got;
	struct ddb_call call = { 0 };
	const char *s;
	void *bytes;
	size_t len;
	int64_t n;
	bool b;

	CHECK_INT(ddb_item_set_b(item, "data", blob, sizeof(blob)), 0);
	CHECK_INT(ddb_item_set_n_text(item, "big", "12345678901234567890.125"),
		  0);
	CHECK_INT(ddb_item_set_n(item, "neg", INT64_MIN), 0);
	CHECK_INT(ddb_item_set_bool(item, "flag", true), 0);
	CHECK_INT(ddb_item_set_s(item, "text", "h\xc3\xa9 \"quoted\" \\ \n"),
		  0);
	CHECK_INT(ddb_item_set_s(item, "empty", ""), 0);
	CHECK_INT(ddb_put_item(d, table, item, NULL, NULL, &call), 0);
	CHECK_INT(ddb_get_item(d, table, key, true, &got, &call), 0);
	CHECK_INT(ddb_item_get_b(got, "data", &bytes, &len), 0);
	CHECK_INT(len, sizeof(blob));
	CHECK(!memcmp(bytes, blob, len));
	free(bytes);
	CHECK_INT(ddb_item_get_n_text(got, "big", &s), 0);
	CHECK_STR(s, "12345678901234567890.125");
	CHECK_INT(ddb_item_get_n(got, "neg", &n), 0);
	CHECK_INT(n, INT64_MIN);
	CHECK_INT(ddb_item_get_bool(got, "flag", &b), 0);
	CHECK(b);
	check_s(got, "text", "h\xc3\xa9 \"quoted\" \\ \n");
	check_s(got, "empty", "");
	CHECK_INT(ddb_item_count(got), ddb_item_count(item));
	ddb_item_free(got);

	/* Through a placeholder: SET #d, condition on #d. */
	struct ddb_expr e = { .condition = "attribute_exists(#d)",
			      .update = "SET #d = :d",
			      .names = names,
			      .values = values };
	CHECK_INT(ddb_item_set_b(values, ":d", "new", 3), 0);
	CHECK_INT(ddb_update_item(d, table, key, &e, DDB_RETURN_UPDATED_NEW,
				  &got, &call),
		  0);
	CHECK_INT(ddb_item_count(got), 1);
	CHECK_INT(ddb_item_get_b(got, "data", &bytes, &len), 0);
	CHECK_INT(len, 3);
	CHECK(!memcmp(bytes, "new", 3));
	free(bytes);
	ddb_item_free(got);
	/* Without the placeholder DynamoDB refuses the reserved word. */
	struct ddb_expr raw = { .update = "SET data = :d", .values = values };
	CHECK_INT(ddb_update_item(d, table, key, &raw, DDB_RETURN_NONE, &got,
				  &call),
		  -EINVAL);
	CHECK_STR(call.err.type, "ValidationException");
	CHECK_INT(call.attempts, 1);

	ddb_item_free(values);
	ddb_item_free(key);
	ddb_item_free(item);
}

static void check_query(void)
{
	static const char *const sorts[] = { "-", "a", "b", "c", "d" };
	static const char *const names[] = { "#k", "lock_key", NULL };
	struct ddb_item *values = ddb_item_new(), *start = NULL;
	struct ddb_read rd = { .key_condition = "#k = :k",
			       .names = names,
			       .values = values,
			       .consistent = true,
			       .limit = 2 };
	struct ddb_page page;
	struct ddb_call call = { 0 };
	char got[32] = "";
	size_t i;
	int pages = 0;

	for (i = 0; i < 5; i++) {
		struct ddb_item *it = key_of("query/k", sorts[i]);

		CHECK_INT(ddb_put_item(d, table, it, NULL, NULL, &call), 0);
		ddb_item_free(it);
	}
	/* A neighbour key that must not show up. */
	struct ddb_item *other = key_of("query/k2", "-");
	CHECK_INT(ddb_put_item(d, table, other, NULL, NULL, &call), 0);
	ddb_item_free(other);

	CHECK_INT(ddb_item_set_s(values, ":k", "query/k"), 0);
	do {
		CHECK_INT(ddb_query(d, table, &rd, start, &page, &call), 0);
		CHECK(page.n <= 2);
		for (i = 0; i < page.n; i++) {
			const char *s;

			CHECK_INT(ddb_item_get_s(page.items[i], "sort_key", &s),
				  0);
			strcat(got, s);
		}
		ddb_item_free(start);
		start = page.last_key;
		page.last_key = NULL;
		ddb_page_fini(&page);
		pages++;
	} while (start && pages < 10);
	CHECK_STR(got, "-abcd");
	CHECK(pages >= 3);

	rd.limit = 0;
	CHECK_INT(ddb_query(d, table, &rd, NULL, &page, &call), 0);
	CHECK_INT(page.n, 5);
	CHECK(!page.last_key);
	ddb_page_fini(&page);
	ddb_item_free(values);
}

static void check_scan(void)
{
	enum { N_MATCH = 23 };
	struct ddb_item *values = ddb_item_new(), *start = NULL;
	struct ddb_read rd = { .filter = "begins_with(lock_key, :p)",
			       .values = values,
			       .consistent = true,
			       .limit = 5 };
	struct ddb_page page;
	struct ddb_call call = { 0 };
	int seen[N_MATCH] = { 0 }, pages = 0, total = 0, i;
	long scanned = 0;
	char k[32];

	for (i = 0; i < N_MATCH; i++) {
		snprintf(k, sizeof(k), "scan/%02d", i);
		struct ddb_item *it = key_of(k, "-");

		CHECK_INT(ddb_put_item(d, table, it, NULL, NULL, &call), 0);
		ddb_item_free(it);
	}
	CHECK_INT(ddb_item_set_s(values, ":p", "scan/"), 0);
	do {
		CHECK_INT(ddb_scan(d, table, &rd, start, &page, &call), 0);
		CHECK(page.scanned <= 5);
		scanned += page.scanned;
		for (size_t j = 0; j < page.n; j++) {
			const char *s;
			int idx;

			CHECK_INT(ddb_item_get_s(page.items[j], "lock_key", &s),
				  0);
			CHECK(!strncmp(s, "scan/", 5));
			idx = atoi(s + 5);
			CHECK(idx >= 0 && idx < N_MATCH);
			seen[idx]++;
			total++;
		}
		ddb_item_free(start);
		start = page.last_key;
		page.last_key = NULL;
		ddb_page_fini(&page);
		pages++;
	} while (start && pages < 100);
	CHECK(!start);
	CHECK_INT(total, N_MATCH);
	for (i = 0; i < N_MATCH; i++)
		CHECK_INT(seen[i], 1);
	CHECK(pages >= 5);
	CHECK(scanned >= N_MATCH);
	ddb_item_free(values);
}

int main(int argc, char **argv)
{
	struct ddb_local_env env;
	char uuid[37];
	int rc = ddb_local_open(&env);

	if (rc)
		return rc;
	d = env.ddb;
	CHECK_INT(text_uuid4(uuid), 0);
	expiry_s = clk_sys_real_ms() / 1000 + 3600;
	snprintf(table, sizeof(table), "lockfs-ddb-test-%.8s", uuid);

	check_tables(); /* and the table the cases use */
	check_cases(argc, argv);
	CHECK_CASE(check_conditional_writes);
	CHECK_CASE(check_values);
	CHECK_CASE(check_query);
	CHECK_CASE(check_scan);
	ddb_local_close(&env);
	CHECK_DONE();
}
