/* store_mem: an in-memory lock store for unit tests and fault injection,
 * with the same conditions as the DynamoDB store. Thread-safe. */
#ifndef LOCKFS_STORE_MEM_H
#define LOCKFS_STORE_MEM_H

#include <errno.h>
#include <stdbool.h>

#include "store.h"

enum store_mem_op {
	SMEM_GET,
	SMEM_LOOKUP,
	SMEM_PUT,
	SMEM_RENEW,
	SMEM_DELETE,
	SMEM_FENCE,
	SMEM_PUT_DIR,
	SMEM_DELETE_DIR,
	SMEM_LIST,
	SMEM_SHARE,	   /* join, leave, eviction, writer marks */
	SMEM_SESSION,	   /* session writes: create, beat, fence, end */
	SMEM_SESSION_READ, /* session reads */
	SMEM__COUNT
};

struct store_mem_faults {
	int fail_next;	    /* the next n operations fail with fail_errno */
	int fail_errno;	    /* e.g. -ETIMEDOUT */
	int down;	    /* every operation fails with -ETIMEDOUT */
	int land_then_fail; /* the next n writes are applied, then report
			     * -ETIMEDOUT (a reply lost on the way back) */
	int delay_ms;	    /* every operation sleeps this long first */
};

/* What the test stores answer in put_lock's *unanswered for a write that
 * failed with rc: a timeout or a reset may have landed (or may yet); a
 * refused connection or an unreachable host never sent anything. */
static inline bool store_mem_may_land(int rc)
{
	return rc && rc != -ECONNREFUSED && rc != -EHOSTUNREACH &&
	       rc != -ECANCELED && rc != -EISDIR && rc != -ENOMEM &&
	       rc != -EACCES && rc != -ENXIO && rc != -EINVAL;
}

struct store *store_mem_new(void);
void store_mem_set_faults(struct store *s, const struct store_mem_faults *f);
/* Operations of one kind seen so far (failed ones included). */
int store_mem_count(struct store *s, enum store_mem_op op);
int store_mem_total(struct store *s);
/* What another client would do: write or delete a lock row as is. */
int store_mem_put_raw(struct store *s, const struct lock_record *rec);
int store_mem_delete_raw(struct store *s, const char *key);
/* What an operator would do: delete a session item as is. */
int store_mem_session_delete_raw(struct store *s, const char *key);
/* Number of lock rows stored. */
int store_mem_lock_count(struct store *s);

#endif
