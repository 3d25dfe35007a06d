/* fs_wb: the holder's data writes, coalesced. Every data write rewrites the
 * whole lock item (up to 64 KiB: up to 64 write units each), so a lock's
 * data is written to DynamoDB at most once per interval: a write that
 * comes sooner is merged into the data kept here and written when the
 * interval ends (by the flusher thread), or earlier when the holder
 * fsyncs or closes the file or this mount reads the lock. A truncate is
 * never written through: it goes with the write that follows it (echo x >
 * f costs one item write), and one to the length the data has is none.
 * 200 one-byte pwrites in a loop thus cost two item writes, not 200.
 * An error of a write made in the background (the lock was lost: EIO) is
 * returned by the next write, fsync or close of that lock by a descriptor
 * open for writing (fs_wb_flush; others use fs_wb_write_pending), kept
 * while the lock is held.
 *
 * Threads: FUSE workers, flk's wait workers (seal) and the flusher
 * thread. wb->mu guards the entries;
 * it is never held across an engine call. At most one write of a lock's
 * data is in flight at a time (an entry's flushing flag). */
#ifndef LOCKFS_FS_WB_H
#define LOCKFS_FS_WB_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

#define FS_WB_INTERVAL_MS 100

struct fs_wb;

/* clk: our monotonic clock, which times the intervals (the host's). */
struct fs_wb *fs_wb_new(struct lock_engine *eng, const struct clk *clk,
			int64_t interval_ms, size_t max_len);
/* The flusher thread (without it, pending data is written by the next
 * write after the interval, fsync, close or read). */
int fs_wb_start(struct fs_wb *wb);
/* Writes everything pending and stops the thread. */
void fs_wb_stop(struct fs_wb *wb);
void fs_wb_free(struct fs_wb *wb);

/* The data of lk (held by the caller's holder) changes as
 * lock_modify_data says (bytes [off, off+len) become buf; truncate >= 0
 * cuts it first). 0 or -errno (-EFBIG past max_len; an earlier background
 * write's error). */
int fs_wb_modify(struct fs_wb *wb, struct lock *lk, const void *buf, size_t len,
		 int64_t off, int64_t truncate);
/* The length of lk's data as its holder wrote it, pending writes
 * included, when an entry has it; else -1 (the lock's record has it).
 * What stat shows the holder: an O_APPEND write goes where the kernel's
 * size says, which a stat refreshes. */
int64_t fs_wb_len(struct fs_wb *wb, struct lock *lk);
/* Writes lk's pending data now and waits for a write in flight. 0, or the
 * error of that write or of an earlier one in the background. */
int fs_wb_flush(struct fs_wb *wb, struct lock *lk);
/* Writes lk's pending data now (after a write in flight) for whoever
 * holds it, not for this caller: an error is kept for the holder's next
 * write, fsync or close, as a background write's is. Before a downgrade,
 * so that the shared row carries the data as written. */
void fs_wb_write_pending(struct fs_wb *wb, struct lock *lk);
/* Around a request that may downgrade lk to shared: fs_wb_seal makes
 * writes to lk wait (a write that comes meanwhile is ordered after the
 * downgrade: EPERM if lk is shared by then) and writes its pending data
 * (as fs_wb_write_pending), so that the shared row carries every write
 * answered before; fs_wb_unseal lets writes go on. 0 or -ENOMEM (not
 * sealed). */
int fs_wb_seal(struct fs_wb *wb, struct lock *lk);
void fs_wb_unseal(struct fs_wb *wb, struct lock *lk);

#endif
