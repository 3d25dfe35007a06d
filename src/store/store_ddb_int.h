/* store_ddb_int: what the pieces of the DynamoDB lock store share, private
 * to src/store: the attribute names of the rows, struct store_ddb, and the
 * conversions and operations each piece gives the others. Any thread;
 * struct store_ddb is immutable after store_ddb_new. */
#ifndef LOCKFS_STORE_DDB_INT_H
#define LOCKFS_STORE_DDB_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store_ddb.h"

#define A_KEY	  "lock_key"
#define A_SORT	  "sort_key"
#define A_OWNER	  "owner_name"
#define A_LEASE	  "lease_duration"
#define A_RVN	  "record_version_number"
#define A_EXPIRY  "expiry_time"
#define A_HOST	  "lockfs_host"
#define A_PID	  "lockfs_pid"
#define A_UID	  "lockfs_uid"
#define A_GID	  "lockfs_gid"
#define A_MODE	  "lockfs_mode"
#define A_CMD	  "lockfs_cmd"
#define A_ACQ	  "lockfs_acquired"
#define A_HB	  "lockfs_heartbeat"
#define A_FENCE	  "lockfs_fence"
#define A_DATA	  "lockfs_data"
#define A_CREATED "lockfs_created"
#define A_COUNTER "lockfs_counter"
#define A_KIND	  "lockfs_kind"
#define A_SHARE	  "lockfs_share"
#define A_READERS "lockfs_readers"
#define A_WRITER  "lockfs_writer"
#define A_NEXT	  "lockfs_next"
#define A_RESVD	  "lockfs_reserved_for"
#define A_SESSION "lockfs_session"
#define A_PARENT  "lockfs_parent"

/* The fields of a reader's entry and of a writer's mark (nested maps). In
 * expressions they are always named through placeholders (#v, #hb, ...),
 * as any of them could one day be a reserved word. */
#define R_V	"v"
#define R_HOST	"host"
#define R_PID	"pid"
#define R_UID	"uid"
#define R_CMD	"cmd"
#define R_ACQ	"acquired"
#define R_HB	"heartbeat"
#define R_FENCE "fence"
#define W_ID	"id"
#define W_V	"v"
#define W_WAIT	"w"

/* A directory marker lives in the lock item of its name (sort key "-"), so
 * that one conditional write decides between a lock and a namespace of the
 * same name: an acquire finds the marker, a mkdir finds the lock. It carries
 * the attributes a python_dynamodb_lock client needs and looks to one like a
 * lock held for DIR_LEASE seconds, which it never takes over. Markers
 * written before this (sort key RECORD_SORT_DIR) are still read. */
#define KIND_DIR     "dir"
#define DIR_OWNER    "lockfs:namespace"
#define DIR_LEASE    "1000000000"
#define DIR_EXPIRY_S 253402300799LL /* 9999-12-31: never TTL'd */
#define NOT_DIR	     "attribute_not_exists(" A_KIND ")"
#define IS_DIR	     A_KIND " = :kind"

struct store_ddb {
	struct store base;
	struct ddb *ddb;
	char *table;
	int64_t default_lease_ms;
	/* The listing (store_ddb_index.c): set before the store is shared. */
	enum store_ddb_list list_mode;
	bool index_active;
	bool swept; /* -o sweep: python rows get tagged, auto keeps the index */
	atomic_bool untagged_seen; /* a lock row without lockfs_parent */
	/* BatchGetItem was refused (access denied): get_locks reads one
	 * GetItem per key from then on. */
	atomic_bool batch_refused;
};

static inline struct store_ddb *to_sd(struct store *s)
{
	return (struct store_ddb *)s;
}

static inline void call_init(struct ddb_call *c, int64_t deadline_mono_ms)
{
	memset(c, 0, sizeof(*c));
	c->deadline_mono_ms = deadline_mono_ms;
}

static inline struct ddb_item *key_item(const char *key, const char *sort)
{
	struct ddb_item *k = ddb_item_new();

	if (k && (ddb_item_set_s(k, A_KEY, key) ||
		  ddb_item_set_s(k, A_SORT, sort))) {
		ddb_item_free(k);
		k = NULL;
	}
	return k;
}

/* The item (key, sort), read consistently into *it (freed by the caller
 * whatever the result); -ENOENT when there is none. */
static inline int get_item(struct store_ddb *sd, const char *key,
			   const char *sort, int64_t deadline,
			   struct ddb_item **it)
{
	struct ddb_item *k = key_item(key, sort);
	struct ddb_call call;
	int rc;

	*it = NULL;
	if (!k)
		return -ENOMEM;
	call_init(&call, deadline);
	rc = ddb_get_item(sd->ddb, sd->table, k, true, it, &call);
	ddb_item_free(k);
	return rc;
}

/* Whether a row read back is a directory marker (new or old form). */
static inline bool is_dir_item(const struct ddb_item *it)
{
	const char *v;

	if (!ddb_item_get_s(it, A_SORT, &v) && !strcmp(v, RECORD_SORT_DIR))
		return true;
	return !ddb_item_get_s(it, A_KIND, &v) && !strcmp(v, KIND_DIR);
}

/* ---- store_ddb_item.c: conversions ---------------------------------- */

/* An N attribute as an int64 (ddb_item_get_n): 0, -ENOENT, -EINVAL. */
int store_ddb_item_i64(const struct ddb_item *it, const char *name,
		       int64_t *out);
/* Sets name to data: an S when it is UTF-8 text, else a B. */
int store_ddb_item_set_data(struct ddb_item *it, const char *name,
			    const void *data, size_t len);
/* A reader's entry and a writer's mark as maps. */
int store_ddb_item_reader_map(const struct record_reader *rd,
			      struct ddb_item **out);
int store_ddb_item_writer_map(const char *id, const char *v,
			      struct ddb_item **out);
/* A directory marker as a dir_record. */
int store_ddb_item_to_dir(const struct ddb_item *it, struct dir_record *d);
/* The row a failed condition reported, as a record. */
int store_ddb_item_cur(struct store_ddb *sd, struct ddb_item *old,
		       struct lock_record *cur, bool *has_cur);

/* ---- store_ddb_shared.c: rows held shared ---------------------------- */

/* The shared rows' store_ops (store.h), and the renewal of a row held
 * shared, which store_ddb.c's renew hands over. */
int store_ddb_shared_renew(struct store_ddb *sd, const char *key,
			   const char *expect_v, const struct lock_renewal *rn,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur);
int store_ddb_shared_join(struct store *s, const struct lock_record *rec,
			  bool raise_lease, int64_t deadline,
			  struct lock_record *cur, bool *has_cur);
int store_ddb_shared_leave(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   const char *new_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur);
int store_ddb_shared_evict(struct store *s, const char *key,
			   const char *reader_id, const char *expect_v,
			   int64_t deadline);
int store_ddb_shared_mark_writer(struct store *s, const char *key,
				 const char *id, const char *v,
				 const char *replace_v, int64_t deadline,
				 struct lock_record *cur, bool *has_cur);
int store_ddb_shared_clear_writer(struct store *s, const char *key,
				  const char *v, int64_t deadline);

/* ---- store_ddb_fair.c: fair handoff of exclusive rows --------------- */

int store_ddb_fair_mark_next(struct store *s, const char *key,
			     const char *observed_rvn, const char *id,
			     const char *v, int64_t waited_ms,
			     const char *replace_v, int64_t deadline,
			     struct lock_record *cur, bool *has_cur);
int store_ddb_fair_release(struct store *s, const char *key,
			   const char *expect_rvn,
			   const struct lock_record *reservation,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur);

/* ---- store_ddb_session.c: session items ---------------------------- */

int store_ddb_session_create(struct store *s, const char *key,
			     const char *owner, const char *rvn,
			     int64_t lease_ms, int64_t expiry_real_s,
			     int64_t deadline);
int store_ddb_session_beat(struct store *s, const char *key,
			   const char *expect_rvn, const char *new_rvn,
			   int64_t expiry_real_s, int64_t heartbeat_real_ms,
			   int64_t deadline, struct session_record *cur,
			   bool *has_cur);
int store_ddb_session_get(struct store *s, const char *key, int64_t deadline,
			  struct session_record *out);
int store_ddb_session_fence(struct store *s, const char *key,
			    const char *observed_rvn, int64_t expiry_real_s,
			    int64_t deadline);
int store_ddb_session_end(struct store *s, const char *key,
			  const char *expect_rvn, int64_t deadline);

/* ---- store_ddb_rows.c: fences, directories, listing ------------------ */

/* Their store_ops (store.h). */
int store_ddb_rows_read_fence(struct store *s, const char *key,
			      int64_t deadline, uint64_t *fence);
int store_ddb_rows_next_fence(struct store *s, const char *key,
			      int64_t deadline, uint64_t *fence);
int store_ddb_rows_put_dir(struct store *s, const struct dir_record *d,
			   const char *expect_rvn, int64_t deadline);
int store_ddb_rows_set_dir_mode(struct store *s, const char *key, uint32_t mode,
				int64_t deadline);
int store_ddb_rows_delete_dir(struct store *s, const char *key,
			      int64_t deadline);
int store_ddb_rows_list(struct store *s, const char *prefix, int64_t deadline,
			store_row_fn fn, void *arg);

/* ---- store_ddb_index.c: the parent index ---------------------------- */

/* A hint row: directory key (lock_key) exists only through keys below it
 * (python_dynamodb_lock rows, rows older than the index): written by the
 * backfill so that the index lists it in its parent. Never a lock, never a
 * marker; python clients never read it. */
#define SORT_HINT "lockfs:sub"

/* The parent of key as stored in lockfs_parent: "/" followed by key up to
 * and including its last "/" ("/" for a key without one). */
char *store_ddb_parent_of(const char *key);
/* Sets lockfs_parent on item it of key. 0 or -ENOMEM. */
int store_ddb_index_tag(struct ddb_item *it, const char *key);
/* Notes a lock row read from the table: one without lockfs_parent (a
 * python_dynamodb_lock client's, or older) turns an auto listing to Scan. */
void store_ddb_index_saw(struct store_ddb *sd, const struct ddb_item *it);
/* Whether a listing of prefix is a Query of the index; then lists it. */
bool store_ddb_index_lists(struct store_ddb *sd, const char *prefix);
int store_ddb_index_list(struct store_ddb *sd, const char *prefix,
			 int64_t deadline, store_row_fn fn, void *arg);

/* A listing: where its rows go. by_index: a Query of the index, whose
 * hint rows stand for directories; otherwise a Scan, whose lock rows are
 * noted (store_ddb_index_saw). */
struct row_walk {
	struct store_ddb *sd;
	int64_t deadline;
	store_row_fn fn;
	void *arg;
	bool by_index;
};
/* Every page of rd (a Query when query, else a Scan), each lock row and
 * directory marker to w->fn as a store_row (other rows skipped), until fn
 * returns non-zero. 0 or -errno. */
int store_ddb_walk_pages(struct row_walk *w, bool query,
			 const struct ddb_read *rd);

/* ---- store_ddb_backfill.c: tagging the rows of an existing table ------ */

/* The row that says the index holds every row lockfs wrote before it
 * existed (the backfill finished, or the table was created with it).
 * set: writes it; else reads it (consistent): 0, -ENOENT, -errno. */
#define INDEX_STATE_KEY "lockfs:index"
int store_ddb_index_done(struct ddb *d, const char *table, int64_t deadline,
			 bool set);
/* Tags the rows without lockfs_parent and writes the missing hints (one
 * consistent Scan of the table); progress to out (may be NULL); the
 * counts in *read, *tagged, *hints. 0 or -errno. */
int store_ddb_backfill_rows(struct ddb *d, const char *table, FILE *out,
			    long *read, long *tagged, long *hints);

#endif
