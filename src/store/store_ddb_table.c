/* store_ddb_table: the table's checks and creation at mount time (the
 * main thread, before the engine starts). */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

static void say_error(const char *what, const struct ddb_call *call, char *msg,
		      size_t msglen)
{
	char detail[400];

	awserr_format(&call->err, detail, sizeof(detail));
	snprintf(msg, msglen, "%s: %s", what, detail);
}

int store_ddb_check_table(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, int *ttl_enabled, char *msg,
			  size_t msglen)
{
	struct ddb_table_info ti;
	struct ddb_call call;
	char status[32], attr[256];
	int rc;

	call_init(&call, deadline_mono_ms);
	rc = ddb_describe_table(d, table, &ti, &call);
	if (rc == -ENXIO) {
		snprintf(msg, msglen,
			 "table '%s' does not exist (create it with "
			 "--create-table, or see contrib/create-table.sh)",
			 table);
		return rc;
	}
	if (rc) {
		say_error("cannot describe the table", &call, msg, msglen);
		return rc;
	}
	if (strcmp(ti.status, "ACTIVE")) {
		call_init(&call, deadline_mono_ms);
		rc = ddb_wait_table_active(d, table, deadline_mono_ms, &call);
		if (rc) {
			snprintf(msg, msglen, "table '%s' is %s, not ACTIVE",
				 table, ti.status);
			return rc;
		}
	}
	if (strcmp(ti.hash_name, A_KEY) || strcmp(ti.hash_type, "S") ||
	    strcmp(ti.range_name, A_SORT) || strcmp(ti.range_type, "S")) {
		snprintf(msg, msglen,
			 "table '%s' has the key (%s %s, %s %s); lockfs needs "
			 "HASH lock_key (S) and RANGE sort_key (S)",
			 table, ti.hash_name, ti.hash_type,
			 ti.range_name[0] ? ti.range_name : "no sort key",
			 ti.range_type);
		return -EINVAL;
	}
	if (ttl_enabled) {
		call_init(&call, deadline_mono_ms);
		*ttl_enabled =
			!ddb_describe_ttl(d, table, status, sizeof(status),
					  attr, sizeof(attr), &call) &&
			!strcmp(status, "ENABLED") && !strcmp(attr, A_EXPIRY);
	}
	return 0;
}

int store_ddb_create_table(struct ddb *d, const char *table,
			   int64_t deadline_mono_ms, bool *created, char *msg,
			   size_t msglen)
{
	struct ddb_call call;
	int rc;

	struct ddb_gsi gsi = { STORE_DDB_INDEX, A_PARENT, A_KEY };
	bool made;

	call_init(&call, deadline_mono_ms);
	rc = ddb_create_table_gsi(d, table, A_KEY, A_SORT, &gsi, &call);
	if (rc && rc != -EEXIST) {
		say_error("cannot create the table", &call, msg, msglen);
		return rc;
	}
	made = !rc;
	if (created)
		*created = made;
	call_init(&call, deadline_mono_ms);
	rc = ddb_wait_table_active(d, table, deadline_mono_ms, &call);
	if (rc) {
		say_error("the table did not become ACTIVE", &call, msg,
			  msglen);
		return rc;
	}
	call_init(&call, deadline_mono_ms);
	rc = ddb_update_ttl(d, table, A_EXPIRY, true, &call);
	if (rc) {
		say_error("cannot enable TTL on expiry_time", &call, msg,
			  msglen);
		return rc;
	}
	/* Created with the index: no row to tag, so it is ready. */
	if (made) {
		call_init(&call, deadline_mono_ms);
		rc = ddb_wait_gsi_active(d, table, STORE_DDB_INDEX,
					 deadline_mono_ms, &call);
		if (!rc)
			rc = store_ddb_index_done(d, table, deadline_mono_ms,
						  true);
		if (rc) {
			say_error("the index did not become ACTIVE", &call, msg,
				  msglen);
			return rc;
		}
	}
	return 0;
}
