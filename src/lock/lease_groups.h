/* lease_groups: which process groups holding locks are gone (hold=pgrp,
 * once the acquiring file is closed), at a cost that grows with the groups
 * that may have ended, not with the locks or groups held.
 *
 * A group whose leader this engine watches by its pidfd (procwatch) lives
 * at least until that leader exits, which procwatch tells: such a group is
 * asked of the host (/proc) only every GROUPS_RECHECK_MS, in case its
 * leader left it for another group. A group without that proof (its leader
 * exited, or could not be watched) is asked every pgrp_poll_ms, and 1, 4,
 * 16 and 64 ms after an exit of its leader or of the lock's acquirer, until it
 * is gone or its recorded leader is found leading it again. The host is asked
 * with engine->mu let go, a bounded number of groups at a time, so neither the
 * locks' operations nor the scheduler's renewals wait behind /proc.
 *
 * Threads: the lease scheduler (lease_groups_check), procwatch's thread
 * (lease_groups_exited), FUSE workers (lease_groups_watch_locked). */
#ifndef LOCKFS_LEASE_GROUPS_H
#define LOCKFS_LEASE_GROUPS_H

#include <stdint.h>

struct lock_engine;
struct lock;

/* With engine->mu held: lk waits on its holder's process group from now
 * on (its acquiring file closed). Watches the group's leader for its exit
 * where it can; the scheduler is woken if lk's first check comes before
 * its next wake-up. */
void lease_groups_watch_locked(struct lock_engine *e, struct lock *lk);

/* procwatch's callback (engine->mu not held): these processes exited or
 * were reaped. The groups they led are checked at once. */
void lease_groups_exited(void *engine, const int64_t *pids, int n);

/* With engine->mu held (let go while the host is asked, then taken
 * again): checks the groups due at now; a group found gone has its held
 * locks released (release_wanted) and its lost ones dismissed. Returns
 * when the next check is due. */
int64_t lease_groups_check(struct lock_engine *e, int64_t now);

#endif
