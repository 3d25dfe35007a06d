/* mntguard: keeps a lockfs mountpoint from ever being a writable local
 * directory. Before mounting, lockfs makes the directory immutable
 * (chattr +i): while lockfs is mounted nobody sees it, and when lockfs is
 * not (the daemon died and the mount was removed, a nofail fstab mount
 * failed at boot), every create in it fails with EPERM, root included,
 * instead of "acquiring" lock files on the local disk.
 *
 * Threads: main only, before the mount. */
#ifndef LOCKFS_MNTGUARD_H
#define LOCKFS_MNTGUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Makes dir immutable unless it is already. 0, or -errno with a one-line
 * reason in err (e.g. not root, or a filesystem without the flag). */
int mntguard_seal(const char *dir, char *err, size_t errlen);
/* Whether dir is immutable (false when it cannot be told). */
bool mntguard_sealed(const char *dir);

#endif
