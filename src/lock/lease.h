/* lease: the lease path of a lock engine: a scheduler thread that makes
 * no request (it ends each lock's trust at the end of its safe period and
 * tells the holder, notices holders that went away, and spaces renewals
 * evenly over the period) and a pool of workers that make the requests
 * (renewals, automatic releases, cleanups of lost locks' rows), one lock
 * each, so that no lock's request waits for another's. See
 * doc/lock-engine.md. */
#ifndef LOCKFS_LEASE_H
#define LOCKFS_LEASE_H

#include <stdint.h>

struct lock_engine;

/* Starts the scheduler and cfg.lease_workers workers (default 64); the
 * pool grows, up to 256 as open files allow, while jobs wait for a
 * worker (a DynamoDB slow to answer: the requests in flight a rate needs
 * grow with the time each takes), and shrinks where that does not pay
 * (lease_pool.h). */
int lease_start(struct lock_engine *e);
/* Stops and joins the threads (idempotent). */
void lease_stop(struct lock_engine *e);
/* Wakes the thread (a lock was added or changed). */
void lease_kick(struct lock_engine *e);
/* One step without threads: bookkeeping plus at most one request, made
 * inline.
 * Returns the monotonic time at which it wants the next step (<= now:
 * at once). Tests drive the engine with this and a fake clock. */
int64_t lease_step(struct lock_engine *e);

#endif
