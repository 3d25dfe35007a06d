/* store_ddb: the lock store on a DynamoDB table in the python_dynamodb_lock
 * schema (HASH lock_key S, RANGE sort_key S; a lock is the row with
 * sort_key "-" and owner_name, lease_duration, record_version_number,
 * expiry_time), plus lockfs's own attributes (lockfs_*) and rows (directory
 * markers and fence counters under other sort keys), which python clients
 * never read. Also the table checks and creation done at mount time. */
#ifndef LOCKFS_STORE_DDB_H
#define LOCKFS_STORE_DDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ddb.h"
#include "store.h"

/* default_lease_ms is used for rows that lack a usable lease_duration.
 * The store borrows d, which must outlive it. */
struct store *store_ddb_new(struct ddb *d, const char *table,
			    int64_t default_lease_ms);

/* Checks that the table exists, is (or becomes, within the deadline)
 * ACTIVE and has the lock schema. 0, or -errno with a one-line reason in
 * msg. *ttl_enabled (may be NULL) tells whether TTL is on expiry_time. */
int store_ddb_check_table(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, int *ttl_enabled, char *msg,
			  size_t msglen);

/* Creates the table (on-demand) if it is missing, waits until it is ACTIVE
 * and enables TTL on expiry_time. 0 or -errno with a reason in msg;
 * *created (may be NULL) tells whether this call created it. */
int store_ddb_create_table(struct ddb *d, const char *table,
			   int64_t deadline_mono_ms, bool *created, char *msg,
			   size_t msglen);

/* How `ls` reads a directory (-o list=): by a Scan of the whole table
 * (SCAN), by a Query of the index on the parent directory (INDEX; Scan
 * when the index is not ACTIVE), or AUTO: INDEX until the mount meets a
 * lock row without lockfs_parent (a python_dynamodb_lock client writes the
 * table), then SCAN. */
enum store_ddb_list {
	STORE_DDB_LIST_AUTO,
	STORE_DDB_LIST_INDEX,
	STORE_DDB_LIST_SCAN,
};

#define STORE_DDB_INDEX "lockfs_parent"

/* Before the store is shared: how it lists, and whether the index is
 * ACTIVE (store_ddb_index_state). */
void store_ddb_set_listing(struct store *s, enum store_ddb_list mode,
			   bool index_active);
/* Whether the table's index on the parent directory exists and is ACTIVE
 * (one DescribeTable). 0 or -errno with a reason in msg. */
int store_ddb_index_state(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, bool *active, char *msg,
			  size_t msglen);
/* lockfs --create-index: adds the index to the table if it has none,
 * waits (until deadline_mono_ms) for it to be ACTIVE, then tags every
 * lock row and directory marker that lacks lockfs_parent (a conditional
 * UpdateItem that sets only that attribute) and writes the hint rows of
 * directories that exist only through keys below them. Idempotent: run it
 * again to tag rows python clients wrote since. Progress and the counts
 * go to out. 0 or -errno with a reason in msg. */
int store_ddb_create_index(struct ddb *d, const char *table,
			   int64_t deadline_mono_ms, FILE *out, char *msg,
			   size_t msglen);

/* -o sweep=S (store_ddb_sweep.c): this mount takes part in the fleet's
 * tagging sweep, at most one Scan of the table per period_ms for all the
 * mounts that do. new: NULL when out of memory; start: after the daemon
 * forks (0 or -errno); free stops it (accepts NULL). */
struct store_ddb_sweep;
struct store_ddb_sweep *store_ddb_sweep_new(struct ddb *d, const char *table,
					    const char *owner,
					    int64_t period_ms);
int store_ddb_sweep_start(struct store_ddb_sweep *sw);
void store_ddb_sweep_free(struct store_ddb_sweep *sw);
/* An auto listing does not turn to Scan when python rows are met: a
 * sweep tags them within its period. Before the store is shared. */
void store_ddb_set_swept(struct store *s, bool swept);

/* Every lock and directory row whose key starts with prefix, by a
 * consistent Scan of the whole table whatever the listing mode: for what
 * must see rows the index does not (python_dynamodb_lock's, untagged).
 * As store_ops.list otherwise. */
int store_ddb_rows_scan(struct store *s, const char *prefix,
			int64_t deadline_mono_ms, store_row_fn fn, void *arg);

/* Item <-> record conversions, exposed for tests and fuzzing. */
int store_ddb_item_to_record(const struct ddb_item *it,
			     int64_t default_lease_ms, struct lock_record *r);
int store_ddb_record_to_item(const struct lock_record *r,
			     struct ddb_item **out);

/* A session item read back (its version, state and lease), range and
 * length checked: -EPROTO without a usable version. */
int store_ddb_session_of_item(const struct ddb_item *it,
			      int64_t default_lease_ms,
			      struct session_record *out);

#endif
