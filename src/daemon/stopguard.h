/* stopguard: the holders of a stopping mount learn that their locks are
 * gone before another mount can take them.
 *
 * Once the FUSE loop has ended (on a signal), no request of the mount is
 * answered until it is unmounted: a holder waiting in poll(2) is woken by
 * the loss, asks again, and waits. A stop made slow by DynamoDB (each
 * request an operation timeout) outlasted its locks' safe period, and
 * another mount took a key while its holder still waited (5.6 s in a
 * probe). So the guard cuts the mount off: it aborts the FUSE connection
 * and detaches the mount (umount2 with MNT_FORCE and MNT_DETACH, as root),
 * after which every call on it fails and every poll reports POLLERR. Its
 * thread does so when a lock is lost, or the first lock's trust ends,
 * while the stop runs, and the stop does so itself before it deletes any
 * row.
 *
 * The mount is known by the device number seen right after mounting, read
 * without a request (AT_STATX_DONT_SYNC), so that another mount on the
 * same path is never touched. main arms the guard only for a stop on a
 * signal: the mount is then still up, so its device number is still its
 * own (an unmounted one's may be a new mount's already). Without root the
 * guard can do nothing, and the holders learn at the unmount, as before.
 *
 * Threads: main (new, begin, cut, end, free) and the guard's own thread
 * between begin and end; mu guards the fields they share. */
#ifndef LOCKFS_STOPGUARD_H
#define LOCKFS_STOPGUARD_H

#include <stdbool.h>

struct lock_engine;
struct metrics;
struct stopguard;

/* For the mount on mnt, just made (NULL without memory). */
struct stopguard *stopguard_new(const char *mnt);
/* The stop begins: cut the mount off if a lock of eng is lost (m's
 * MC_LOST grows) or stops being trusted before stopguard_end. */
void stopguard_begin(struct stopguard *g, struct lock_engine *eng,
		     const struct metrics *m);
/* Cuts the mount off now, unless done already; why goes to the log.
 * Whether it is cut off. */
bool stopguard_cut(struct stopguard *g, const char *why);
/* Whether the path is known not to show the mount any more: cut off, or
 * detached (umount -l) and perhaps mounted over by another since. */
bool stopguard_gone(struct stopguard *g);
/* The stop no longer needs the guard's thread. */
void stopguard_end(struct stopguard *g);
void stopguard_free(struct stopguard *g);

#endif
