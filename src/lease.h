/* lease: the heartbeat thread of a lock engine. It renews each held lock
 * once per heartbeat period (spread evenly over the period when many are
 * held), marks a lock lost once safe_period passes without a successful
 * renewal, releases locks whose holders went away, and cleans up lost locks
 * whose rows still carry our RVN. */
#ifndef LOCKFS_LEASE_H
#define LOCKFS_LEASE_H

#include <stdint.h>

struct lock_engine;

int lease_start(struct lock_engine *e);
/* Stops and joins the thread (idempotent). */
void lease_stop(struct lock_engine *e);
/* Wakes the thread (a lock was added or changed). */
void lease_kick(struct lock_engine *e);
/* One step, as the thread runs it: bookkeeping plus at most one request.
 * Returns the monotonic time at which it wants the next step (<= now:
 * at once). Tests drive the engine with this and a fake clock. */
int64_t lease_step(struct lock_engine *e);

#endif
