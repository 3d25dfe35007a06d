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
