/* store_foreign: lock rows another client (python_dynamodb_lock) wrote, as
 * the DynamoDB store reads them into a lock record. A lease longer than
 * lockfs takes (over 10^9 s) is read as the longest one, never as our own
 * lease: a live python lock with a long lease and a heartbeat longer than
 * ours was taken from its holder. Attributes that only lockfs may give
 * meaning to (lockfs_share, lockfs_session) are believed of a row lockfs
 * wrote (lockfs_acquired) only: a python lock
 * whose additional_attributes used those names was taken (read as an
 * empty shared row, or fenced as a dead session). A reservation is the
 * exception: lockfs writes it without lockfs_acquired. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "ddb.h"
#include "record.h"
#include "store_ddb.h"

#define OUR_LEASE_MS 30000

/* A python_dynamodb_lock row of key k with lease_duration lease. */
static struct ddb_item *python_row(const char *lease)
{
	struct ddb_item *it = ddb_item_new();

	CHECK(it);
	CHECK_INT(ddb_item_set_s(it, "lock_key", "k"), 0);
	CHECK_INT(ddb_item_set_s(it, "sort_key", "-"), 0);
	CHECK_INT(ddb_item_set_s(it, "owner_name", "py-host-1"), 0);
	CHECK_INT(ddb_item_set_s(it, "record_version_number",
				 "5b1e0e3c-97a4-4d6e-9d0a-2b7f3c1d9e11"),
		  0);
	CHECK_INT(ddb_item_set_n(it, "expiry_time", 1790003600), 0);
	CHECK_INT(ddb_item_set_n_text(it, "lease_duration", lease), 0);
	return it;
}

static void read_row(struct ddb_item *it, struct lock_record *r)
{
	record_init(r);
	CHECK_INT(store_ddb_item_to_record(it, OUR_LEASE_MS, r), 0);
	ddb_item_free(it);
}

static void test_long_leases(void)
{
	static const struct {
		const char *lease;
		int64_t ms;
		bool assumed;
	} cases[] = {
		{ "30", 30000, false },
		{ "2.5", 2500, false },
		{ "500000000", 500000000000LL, false },
		{ "1000000000", 1000000000000LL, false },
		/* Over the longest: the longest, not ours (it was ours). */
		{ "2000000000", 1000000000000LL, false },
		{ "1E+100", 1000000000000LL, false },
		/* Unusable: ours, and said to be assumed. */
		{ "0", OUR_LEASE_MS, true },
		{ "-5", OUR_LEASE_MS, true },
		{ "0.0001", OUR_LEASE_MS, true },
	};
	struct lock_record r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_row(python_row(cases[i].lease), &r);
		CHECK_INT(r.lease_ms, cases[i].ms);
		CHECK_INT(r.lease_assumed, cases[i].assumed);
		record_fini(&r);
	}
}

static void test_lockfs_names_in_foreign_rows(void)
{
	struct ddb_item *it = python_row("3");
	struct lock_record r;

	CHECK_INT(ddb_item_set_s(it, "lockfs_share", "shared"), 0);
	CHECK_INT(ddb_item_set_s(it, "lockfs_session", ".lockfs-session/nope"),
		  0);
	read_row(it, &r);
	CHECK(!r.has_lockfs);
	CHECK(!r.shared);
	CHECK(r.session == NULL);
	CHECK_INT(r.lease_ms, 3000);
	record_fini(&r);

	/* The same names on a row lockfs wrote are ours to read. */
	it = python_row("3");
	CHECK_INT(ddb_item_set_n(it, "lockfs_acquired", 1790000000000LL), 0);
	CHECK_INT(
		ddb_item_set_s(it, "lockfs_session", ".lockfs-session/mount-a"),
		0);
	CHECK_INT(ddb_item_set_s(it, "lockfs_reserved_for", "mount-b"), 0);
	read_row(it, &r);
	CHECK(r.has_lockfs);
	CHECK(r.session && !strcmp(r.session, ".lockfs-session/mount-a"));
	CHECK(r.reserved_for && !strcmp(r.reserved_for, "mount-b"));
	record_fini(&r);
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_long_leases);
	CHECK_CASE(test_lockfs_names_in_foreign_rows);
	CHECK_DONE();
}
