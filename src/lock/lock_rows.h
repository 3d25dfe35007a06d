/* lock_rows: the engine's door to the store for layers above it (the
 * filesystem, the file-lock layer). Every store request they make goes
 * through here, so that it carries the engine's deadline (now +
 * cfg.op_timeout_ms on our monotonic clock, as the engine's own
 * user-facing requests do) instead of the request layer's default; and
 * every judgement "has this row lapsed?" is made by one rule, here:
 * a row (or a version inside one) seen unchanged for its whole lease,
 * measured on our monotonic clock from our first sighting, has lapsed
 * (observe.h). Wall-clock fields of a row never decide it.
 *
 * The requests return what the store returns (store.h), unchanged; none
 * touches the engine's locks or its mutex.
 *
 * Threads: any (FUSE workers, the flk wait thread, lease workers). */
#ifndef LOCKFS_LOCK_ROWS_H
#define LOCKFS_LOCK_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "observe.h"
#include "record.h"
#include "store.h"

struct lock_engine;

/* The lock row of key, by a consistent read: 0 and *out (initialised by
 * the caller, filled here); -ENOENT when there is none (the name may be a
 * directory); other -errno (store.h). */
int lock_rows_get(struct lock_engine *e, const char *key,
		  struct lock_record *out);
/* The lock rows of keys[0..n) (distinct; n at most STORE_GET_LOCKS_MAX),
 * as lock_rows_get gives them one by one: rcs[i] 0 with outs[i] filled
 * (initialised by the caller), -ENOENT, -EAGAIN (the store left that key
 * unread: ask again later) or another -errno, for that key alone. One
 * request where the store can batch them (store_ops.get_locks), one per
 * key where it cannot. */
void lock_rows_get_many(struct lock_engine *e, const char *const *keys,
			size_t n, struct lock_record *outs, int *rcs);
/* The lock row and the directory row of key in one request (out
 * initialised with store_lookup_init). 0 or -errno. */
int lock_rows_lookup(struct lock_engine *e, const char *key,
		     struct store_lookup *out);
/* Breaks another owner's lock: deletes key's lock row if its RVN is still
 * rvn (exactly the row the caller saw), and forgets our observation of
 * key. 0 when deleted; -ECANCELED when the row changed or went meanwhile;
 * other -errno. Never deletes a directory marker. */
int lock_rows_break(struct lock_engine *e, const char *key, const char *rvn);
/* Creates the directory marker d. take_lapsed false: -EEXIST if a marker
 * or a lock of that name exists. take_lapsed true: a lock row our
 * observation has judged lapsed (lock_rows_lapsed_rvn) is taken over as
 * an acquire would take it; a live one still gives -EEXIST. */
int lock_rows_put_dir(struct lock_engine *e, const struct dir_record *d,
		      bool take_lapsed);
/* Changes the mode of key's directory marker; -ENOENT if none. */
int lock_rows_set_dir_mode(struct lock_engine *e, const char *key,
			   uint32_t mode);
/* Deletes key's directory marker; -ENOENT if none. */
int lock_rows_delete_dir(struct lock_engine *e, const char *key);
/* Calls fn for every lock and directory row whose key starts with prefix
 * ("" for all), in no order, as store_ops.list does (fn returns 0 to go
 * on, 1 to stop early, -errno to abort). One deadline covers the whole
 * listing. 0 or -errno. */
int lock_rows_list(struct lock_engine *e, const char *prefix, store_row_fn fn,
		   void *arg);

/* The expiry rule. Notes row (its key, RVN and lease) as seen now, and
 * returns true when it has lapsed: the same RVN seen for a whole lease of
 * our monotonic clock. ob, when not NULL, gets the details (the time left
 * until it lapses, and the wall time of our first sighting of that RVN).
 * A different RVN restarts the count. This says nothing of a shared row
 * without readers, which is free at once (lock_row_free). */
bool lock_rows_judge(struct lock_engine *e, const struct lock_record *row,
		     struct observation *ob);
/* The same rule for a version that is not a row's RVN (a reader's entry,
 * a writer's mark: lock_share.c), noted under obs_key, which must not be
 * a lock's key. */
bool lock_rows_judge_version(struct lock_engine *e, const char *obs_key,
			     const char *version, int64_t lease_ms,
			     struct observation *ob);
/* lock_rows_session.c: lock_rows_judge's rule for a row that names a
 * session (row->session): judged by that session item (read, or from a
 * read made moments ago): dead -> lapsed; its version (or its absence)
 * unchanged for a lease of our clock -> fenced (a conditional write on
 * that version), then lapsed; else live. ob gets the session's
 * observation (the time left, our first sighting of its version). */
bool lock_rows_judge_session(struct lock_engine *e,
			     const struct lock_record *row,
			     struct observation *ob);
/* For display: a row naming a session (just judged) shows the lease of
 * its session and the session's last heartbeat (as last read) instead
 * of the year and the acquire its row carries. Others: unchanged. */
void lock_rows_session_show(struct lock_engine *e, struct lock_record *row);
/* Without noting anything: if our observation of key's row has lapsed by
 * now, copies the RVN seen (RECORD_RVN_MAX bytes) to rvn_out and returns
 * true (a conditional write on that RVN takes the row over). */
bool lock_rows_lapsed_rvn(struct lock_engine *e, const char *key,
			  char *rvn_out);
/* Drops our observation of key (or of an obs_key): the row is ours now,
 * gone, or broken. */
void lock_rows_forget(struct lock_engine *e, const char *key);

#endif
