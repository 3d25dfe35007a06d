/* observe: what this mount has seen of other owners' locks, for the only
 * expiry rule lockfs trusts: a lock is judged expired when its record
 * version number (RVN) stayed unchanged for its whole lease, measured on our
 * monotonic clock from when we first saw that RVN. Wall-clock fields are
 * never used. Bounded (oldest observations are dropped first, which can only
 * delay a takeover). Thread-safe. The engine and the layers above apply
 * the rule through lock_rows_judge (lock_rows.h), its one place. */
#ifndef LOCKFS_OBSERVE_H
#define LOCKFS_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clk.h"

struct observe;

struct observe *observe_new(const struct clk *clk, size_t max_entries);
void observe_free(struct observe *o);

struct observation {
	bool expired;		    /* unchanged for a whole lease */
	int64_t remaining_ms;	    /* until judged expired (0 when expired) */
	int64_t first_seen_real_ms; /* wall time of the first sighting */
};

/* Records that key has rvn with lease_ms now and tells how long it has been
 * seen unchanged. A different RVN restarts the clock. */
void observe_note(struct observe *o, const char *key, const char *rvn,
		  int64_t lease_ms, struct observation *out);
/* If key has an observation that is expired now, copies its RVN to rvn_out
 * (RECORD_RVN_MAX bytes) and returns true. */
bool observe_expired_rvn(struct observe *o, const char *key, char *rvn_out);
void observe_forget(struct observe *o, const char *key);

#endif
