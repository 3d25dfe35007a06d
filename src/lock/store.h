/* store: the interface between the lock engine and where lock rows live.
 * Two implementations: store_mem (in memory, with fault knobs, for unit
 * tests) and store_ddb (DynamoDB). Every operation is one request to the
 * backend (the backend may retry transient failures internally within the
 * deadline). Implementations are thread-safe.
 *
 * Conditional operations return -ECANCELED when the condition failed and
 * then fill *cur with the row as it is now (*has_cur false when there is
 * none). A caller that retried a write must compare cur->rvn with the RVN it
 * tried to write: an earlier attempt may have landed. Other errors are
 * -errno: -EAGAIN/-ETIMEDOUT/-EIO/-ECONNREFUSED... (transient), -EACCES,
 * -ENXIO (table missing), -EINVAL. */
#ifndef LOCKFS_STORE_H
#define LOCKFS_STORE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "record.h"

struct store;

/* Whether rc says the store could not be asked or did not answer (the
 * network, throttling, a server error), rather than answering no: worth
 * another try later. */
static inline bool store_err_transient(int rc)
{
	return rc == -EIO || rc == -ETIMEDOUT || rc == -EAGAIN ||
	       rc == -EMFILE || rc == -ECONNREFUSED || rc == -ECONNRESET ||
	       rc == -EHOSTUNREACH || rc == -EPROTO;
}

/* What a renewal (heartbeat, data write, fence record) changes. */
struct lock_renewal {
	const char *new_rvn;
	int64_t expiry_real_s;
	int64_t heartbeat_real_ms;
	bool set_data;
	const void *data;
	size_t data_len;
	bool set_fence;
	uint64_t fence;
	/* A reader's renewal of a shared row: expect_rvn and new_rvn are the
	 * versions of its entry (reader), the row's RVN becomes row_rvn (so
	 * that every other client sees the row renewed), set_fence records
	 * the fence in its entry, and set_data is refused (-EINVAL). On
	 * success *cur is the row as it now is, every reader included. */
	const char *reader;
	const char *row_rvn;
};

/* A mount's session item as read (doc/session-leases.md): its version
 * (a fresh UUID on every heartbeat), whether another owner fenced it, and
 * the lease its holder runs (the one observers judge it by). */
struct session_record {
	char rvn[RECORD_RVN_MAX];
	bool dead;
	int64_t lease_ms;
	int64_t heartbeat_real_ms; /* its last heartbeat's wall time (shown,
				    * never trusted); 0 when unknown */
};

/* One row of a listing. */
enum store_row_kind {
	STORE_ROW_LOCK,
	STORE_ROW_DIR,
};

struct store_row {
	enum store_row_kind kind;
	const struct lock_record *lock; /* STORE_ROW_LOCK */
	const struct dir_record *dir;	/* STORE_ROW_DIR */
};

/* Returns 0 to go on, 1 to stop the listing early, or -errno to abort. */
typedef int (*store_row_fn)(void *arg, const struct store_row *row);

/* The rows of one key: its lock and its directory marker. */
struct store_lookup {
	bool has_lock;
	struct lock_record lock;
	bool has_dir;
	struct dir_record dir;
};

void store_lookup_init(struct store_lookup *l);
void store_lookup_fini(struct store_lookup *l);

/* The most keys one store_ops.get_locks call reads (DynamoDB's limit for
 * one BatchGetItem). */
#define STORE_GET_LOCKS_MAX 100

struct store_ops {
	/* The lock row of key (consistent read). -ENOENT when none (the name
	 * may be a directory). */
	int (*get_lock)(struct store *s, const char *key,
			int64_t deadline_mono_ms, struct lock_record *out);
	/* The lock rows of keys[0..n) (distinct, n at most
	 * STORE_GET_LOCKS_MAX) by consistent reads, in as few requests as
	 * the store can make (DynamoDB: one BatchGetItem): rcs[i] and
	 * outs[i] (initialised by the caller) are what get_lock would give
	 * for keys[i]; -EAGAIN for a key the store was left without an
	 * answer for (DynamoDB's UnprocessedKeys). NULL: get_lock per key
	 * (lock_rows_get_many). */
	void (*get_locks)(struct store *s, const char *const *keys, size_t n,
			  int64_t deadline_mono_ms, struct lock_record *outs,
			  int *rcs);
	/* The lock row and directory row of key, in one request. */
	int (*lookup)(struct store *s, const char *key,
		      int64_t deadline_mono_ms, struct store_lookup *out);
	/* Writes the lock row rec. expect_rvn NULL: only if no lock row exists;
	 * else: if none exists or its RVN is expect_rvn (takeover). -EISDIR
	 * when the name is a directory (nothing in *cur): a lock and a
	 * directory of one name are one item, so this write decides. A
	 * shared rec (rec->shared, its readers) takes over no row that a
	 * writer has marked. *unanswered (when not NULL): whether an
	 * attempt of this write went out and got no answer (a timeout, a
	 * reset: DynamoDB may not have applied it yet), so that it may land
	 * later still, whatever the answer that counts; an attempt that never
	 * left (a refused connection) is not one. */
	int (*put_lock)(struct store *s, const struct lock_record *rec,
			const char *expect_rvn, int64_t deadline_mono_ms,
			struct lock_record *cur, bool *has_cur,
			bool *unanswered);
	/* Writes the lock row rec over the lock row whose RVN is expect_rvn,
	 * and never where no lock row exists: a downgrade of our own row,
	 * which must neither bring back a row broken meanwhile nor, landing
	 * late, one released since. A shared rec takes over no row that a
	 * writer has marked. Answers as put_lock (-ECANCELED without *cur
	 * when there is no row). */
	int (*replace_lock)(struct store *s, const struct lock_record *rec,
			    const char *expect_rvn, int64_t deadline_mono_ms,
			    struct lock_record *cur, bool *has_cur);
	/* Updates the lock row if its RVN is expect_rvn. */
	int (*renew_lock)(struct store *s, const char *key,
			  const char *expect_rvn, const struct lock_renewal *r,
			  int64_t deadline_mono_ms, struct lock_record *cur,
			  bool *has_cur);
	/* Deletes the lock row if its RVN is expect_rvn (expect_rvn NULL: any
	 * lock row, never a directory marker). */
	int (*delete_lock)(struct store *s, const char *key,
			   const char *expect_rvn, int64_t deadline_mono_ms,
			   struct lock_record *cur, bool *has_cur);
	/* Increments the key's fence counter (kept apart from the lock row, so
	 * it survives deletes) and returns the new value. */
	int (*next_fence)(struct store *s, const char *key,
			  int64_t deadline_mono_ms, uint64_t *fence);
	/* The key's fence counter as it is, unchanged (0 when none was ever
	 * allocated): the fence readers are handed. */
	int (*read_fence)(struct store *s, const char *key,
			  int64_t deadline_mono_ms, uint64_t *fence);

	/* Shared rows (record.h). A reader is a mount, known by its owner
	 * id; its version is its entry's v, a fresh UUID on each of its
	 * writes. */

	/* Adds rec's one reader entry (rec->readers[0]) to the row of
	 * rec->key and sets the row's RVN to rec->rvn and its expiry_time,
	 * if the row is held shared, has no writer mark and a lease of at
	 * least rec->lease_ms (raise_lease: of less, which then becomes
	 * rec->lease_ms). An entry of the same id is replaced. -ECANCELED
	 * with *cur otherwise (*has_cur false: no row). */
	int (*join_shared)(struct store *s, const struct lock_record *rec,
			   bool raise_lease, int64_t deadline_mono_ms,
			   struct lock_record *cur, bool *has_cur);
	/* Removes reader_id's entry if its v is expect_v, and sets the row's
	 * RVN to new_rvn; if that left no entry and no writer mark, deletes
	 * the row (a second request, conditioned on new_rvn, no entry and no
	 * mark: a join or a mark in between keeps it). -ECANCELED with *cur
	 * when the entry is not expect_v's. */
	int (*leave_shared)(struct store *s, const char *key,
			    const char *reader_id, const char *expect_v,
			    const char *new_rvn, int64_t deadline_mono_ms,
			    struct lock_record *cur, bool *has_cur);
	/* Removes reader_id's entry if its v is still expect_v (a reader
	 * seen unchanged for a lease); the row's RVN is left as it is.
	 * -ECANCELED when not. */
	int (*evict_reader)(struct store *s, const char *key,
			    const char *reader_id, const char *expect_v,
			    int64_t deadline_mono_ms);
	/* Marks the shared row of key for the waiting writer id, with
	 * version v, if the row is held shared and has no mark, or a mark
	 * of id, or one whose version is replace_v (a stale mark; may be
	 * NULL). The RVN is left as it is. -ECANCELED with *cur when not. */
	int (*mark_writer)(struct store *s, const char *key, const char *id,
			   const char *v, const char *replace_v,
			   int64_t deadline_mono_ms, struct lock_record *cur,
			   bool *has_cur);
	/* Removes the writer mark (shared row) or the next mark (exclusive
	 * row) of key if its version is v: a row never carries both.
	 * -ECANCELED when not. */
	int (*clear_writer)(struct store *s, const char *key, const char *v,
			    int64_t deadline_mono_ms);

	/* Fair handoff of exclusive rows (doc/fair-handoff.md). */

	/* Marks the exclusive row of key for the mount id waiting next,
	 * with version v and the time it has waited (waited_ms), if its RVN
	 * is still observed_rvn, it is not held shared, and it has no next
	 * mark, or one of id, or one whose version is replace_v (stale or
	 * out-waited; may be NULL). The RVN is left as it is. -ECANCELED
	 * with *cur when not. */
	int (*mark_next)(struct store *s, const char *key,
			 const char *observed_rvn, const char *id,
			 const char *v, int64_t waited_ms,
			 const char *replace_v, int64_t deadline_mono_ms,
			 struct lock_record *cur, bool *has_cur);
	/* A holder's release of its exclusive row: deletes it if its RVN is
	 * expect_rvn and it carries no next mark; if it carries one, writes
	 * reservation (key, owner, RVN, lease, expiry set by the caller)
	 * in its place, reserved for the marking mount, on condition that
	 * the RVN and the mark are still those seen. 0 when either landed
	 * (the row is not ours any more); -ECANCELED with *cur when the
	 * row's RVN is not expect_rvn (or there is none). At most a few
	 * requests. */
	int (*release_lock)(struct store *s, const char *key,
			    const char *expect_rvn,
			    const struct lock_record *reservation,
			    int64_t deadline_mono_ms, struct lock_record *cur,
			    bool *has_cur);
	/* Session items (key RECORD_SESSION_PREFIX..., sort key
	 * RECORD_SORT_SESSION): one per mount in session mode. */

	/* Creates the live session key with version rvn, lease_ms and
	 * expiry_time expiry_real_s, if no item of key exists (-EEXIST). */
	int (*create_session)(struct store *s, const char *key,
			      const char *owner, const char *rvn,
			      int64_t lease_ms, int64_t expiry_real_s,
			      int64_t deadline_mono_ms);
	/* A heartbeat: sets the version to new_rvn, expiry_time and the
	 * heartbeat's wall time (lockfs_heartbeat, shown only), if the
	 * item's version is expect_rvn and it is live. 0: confirmed;
	 * -ECANCELED: refused, *cur the item as it is (*has_cur false: none);
	 * other -errno: unknown. */
	int (*beat_session)(struct store *s, const char *key,
			    const char *expect_rvn, const char *new_rvn,
			    int64_t expiry_real_s, int64_t heartbeat_real_ms,
			    int64_t deadline_mono_ms,
			    struct session_record *cur, bool *has_cur);
	/* The session item of key (consistent read); -ENOENT when none. */
	int (*get_session)(struct store *s, const char *key,
			   int64_t deadline_mono_ms,
			   struct session_record *out);
	/* Fences the session: marks it dead if its version is still
	 * observed_rvn (NULL: if there is still no item of key, a dead one
	 * is created), so that no later heartbeat of it lands. -ECANCELED
	 * when the item is not as observed. */
	int (*fence_session)(struct store *s, const char *key,
			     const char *observed_rvn, int64_t expiry_real_s,
			     int64_t deadline_mono_ms);
	/* Deletes the session item if its version is expect_rvn (unmount).
	 * -ECANCELED when not. */
	int (*end_session)(struct store *s, const char *key,
			   const char *expect_rvn, int64_t deadline_mono_ms);

	/* Creates a directory marker; -EEXIST if a marker or a lock of that
	 * name exists, unless the lock carries expect_rvn (a lock seen
	 * expired, taken over as an acquire would). */
	int (*put_dir)(struct store *s, const struct dir_record *d,
		       const char *expect_rvn, int64_t deadline_mono_ms);
	/* Changes a directory marker's mode; -ENOENT if none. */
	int (*set_dir_mode)(struct store *s, const char *key, uint32_t mode,
			    int64_t deadline_mono_ms);
	/* Deletes a directory marker; -ENOENT if none. */
	int (*delete_dir)(struct store *s, const char *key,
			  int64_t deadline_mono_ms);
	/* Calls fn for every lock and directory row whose key starts with
	 * prefix ("" for all), in no particular order, one request per page.
	 * When prefix is a directory's ("" or ending in "/"), a store may
	 * instead give only the rows directly in it, and stand for each
	 * directory below it known only through keys further down by one
	 * row of kind DIR whose key is that directory's followed by "/". */
	int (*list)(struct store *s, const char *prefix,
		    int64_t deadline_mono_ms, store_row_fn fn, void *arg);
	void (*destroy)(struct store *s);
};

struct store {
	const struct store_ops *ops;
};

static inline void store_free(struct store *s)
{
	if (s)
		s->ops->destroy(s);
}

#endif
