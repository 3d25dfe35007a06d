/* store_mem_int: what the parts of the in-memory store share, private to
 * them: the store and its rows, the steps every operation takes (the
 * injected delay and faults, the mutex) and the store_ops each part
 * implements for the ops table (store_mem.c). Any thread; everything in the
 * store is guarded by its one mutex, mu. */
#ifndef LOCKFS_TEST_STORE_MEM_INT_H
#define LOCKFS_TEST_STORE_MEM_INT_H

#include <pthread.h>

#include "map.h"
#include "store_mem.h"

struct mem_row {
	struct mem_row *prev, *next;
	int is_dir;
	struct lock_record lock;
	struct dir_record dir;
};

struct mem_fence {
	struct mem_fence *next;
	char *key;
	uint64_t value;
};

struct store_mem {
	struct store base;
	pthread_mutex_t mu;
	struct mem_row *rows;		/* protected by mu */
	struct smap index;		/* mu: "l:"/"d:" + key -> row */
	struct mem_fence *fences;	/* protected by mu */
	struct store_mem_faults faults; /* protected by mu */
	int counts[SMEM__COUNT];	/* protected by mu */
	struct mem_session *sessions;	/* protected by mu */
};

static inline struct store_mem *to_mem(struct store *s)
{
	return (struct store_mem *)s;
}

/* mu held. */
struct mem_row *mem_find_row(struct store_mem *m, const char *key, int is_dir);

/* mu held. Puts r (its key set) on the list and in the index. */
int mem_link_row(struct store_mem *m, struct mem_row *r);

/* Frees r, a row off the list (or never on it). */
void mem_free_row(struct mem_row *r);

/* mu held. Takes r off the list and out of the index, and frees it. */
void mem_remove_row(struct store_mem *m, struct mem_row *r);

/* Copies row r into cur when both are set; *has_cur (if set) says whether
 * there is a row. */
int mem_fill_cur(struct mem_row *r, struct lock_record *cur, bool *has_cur);

/* The first steps of every operation: the injected delay, then mu taken
 * and op counted. Returns 0 or the injected error; either way mu is held
 * and *r is key's lock row (NULL when key is NULL, on error, or when there
 * is none). */
int mem_op_begin(struct store_mem *m, enum store_mem_op op, int is_write,
		 const char *key, struct mem_row **r, int *land);

/* The last step: releases mu and returns rc, or -ETIMEDOUT for a write that
 * was applied but must be reported lost. */
int mem_op_end(struct store_mem *m, int rc, int land);

/* The answer to a refused condition: -ECANCELED, and the row as it is in
 * cur (has_cur false when there is none). */
int mem_refuse(struct mem_row *r, struct lock_record *cur, bool *has_cur);

/* Lock rows and fence counters (store_mem_lock.c). */
int mem_get_lock(struct store *s, const char *key, int64_t deadline,
		 struct lock_record *out);
int mem_lookup(struct store *s, const char *key, int64_t deadline,
	       struct store_lookup *out);
int mem_put_lock(struct store *s, const struct lock_record *rec,
		 const char *expect_rvn, int64_t deadline,
		 struct lock_record *cur, bool *has_cur, bool *unanswered);
int mem_replace_lock(struct store *s, const struct lock_record *rec,
		     const char *expect_rvn, int64_t deadline,
		     struct lock_record *cur, bool *has_cur);
int mem_renew_lock(struct store *s, const char *key, const char *expect_rvn,
		   const struct lock_renewal *rn, int64_t deadline,
		   struct lock_record *cur, bool *has_cur);
int mem_delete_lock(struct store *s, const char *key, const char *expect_rvn,
		    int64_t deadline, struct lock_record *cur, bool *has_cur);
int mem_next_fence(struct store *s, const char *key, int64_t deadline,
		   uint64_t *fence);
int mem_read_fence(struct store *s, const char *key, int64_t deadline,
		   uint64_t *fence);
/* Fair handoff of exclusive rows (store.h), with the conditions
 * store_ddb_fair.c gives DynamoDB. */
int mem_mark_next(struct store *s, const char *key, const char *observed_rvn,
		  const char *id, const char *v, int64_t waited_ms,
		  const char *replace_v, int64_t deadline,
		  struct lock_record *cur, bool *has_cur);
int mem_release_lock(struct store *s, const char *key, const char *expect_rvn,
		     const struct lock_record *reservation, int64_t deadline,
		     struct lock_record *cur, bool *has_cur);

/* Shared rows (store_mem_share.c). */
int mem_join_shared(struct store *s, const struct lock_record *rec,
		    bool raise_lease, int64_t deadline, struct lock_record *cur,
		    bool *has_cur);
int mem_leave_shared(struct store *s, const char *key, const char *reader_id,
		     const char *expect_v, const char *new_rvn,
		     int64_t deadline, struct lock_record *cur, bool *has_cur);
int mem_evict_reader(struct store *s, const char *key, const char *reader_id,
		     const char *expect_v, int64_t deadline);
int mem_mark_writer(struct store *s, const char *key, const char *id,
		    const char *v, const char *replace_v, int64_t deadline,
		    struct lock_record *cur, bool *has_cur);
int mem_clear_writer(struct store *s, const char *key, const char *v,
		     int64_t deadline);

/* Directory rows and listing (store_mem_dir.c). */
int mem_put_dir(struct store *s, const struct dir_record *d,
		const char *expect_rvn, int64_t deadline);
int mem_set_dir_mode(struct store *s, const char *key, uint32_t mode,
		     int64_t deadline);
int mem_delete_dir(struct store *s, const char *key, int64_t deadline);
int mem_list(struct store *s, const char *prefix, int64_t deadline,
	     store_row_fn fn, void *arg);

#endif
