/* mntguard: keeps a lockfs mountpoint from ever being a writable local
 * directory. Before mounting, lockfs makes the directory immutable
 * (chattr +i): while lockfs is mounted nobody sees it, and when lockfs is
 * not (the daemon died and the mount was removed, a nofail fstab mount
 * failed at boot), every create in it fails with EPERM, root included,
 * instead of "acquiring" lock files on the local disk.
 *
 * It also tells what is on the mountpoint already (a live or a dead lockfs
 * mount, a file), so that lockfs never stacks a second daemon on a live
 * mount nor mounts on a file, and can replace a dead mount.
 *
 * Threads: main only, before the mount. */
#ifndef LOCKFS_MNTGUARD_H
#define LOCKFS_MNTGUARD_H

#include <stdbool.h>
#include <stddef.h>

/* What a mountpoint is before lockfs mounts on it. */
enum mntguard_state {
	MNTGUARD_FREE,	      /* a directory with no lockfs mounted on it */
	MNTGUARD_LOCKFS_LIVE, /* a lockfs mount that answers */
	MNTGUARD_LOCKFS_DEAD, /* a lockfs mount whose daemon is gone */
};

struct mntguard_info {
	enum mntguard_state state;
	char source[256]; /* of a lockfs mount there, e.g. lockfs:TABLE */
};

/* Resolves path (symlinks, "..") into dir and says what is mounted there.
 * 0 with *info filled in, or -errno with a one-line reason in err: not a
 * directory (FUSE would mount on a file, where stat then gives EIO), a
 * dead mount of another filesystem, or any other error of stat(2). A dead
 * mount answers ENOTCONN; it is a lockfs one when /proc/self/mountinfo
 * shows fuse.lockfs on top at that path. */
int mntguard_inspect(const char *path, char *dir, size_t dirlen,
		     struct mntguard_info *info, char *err, size_t errlen);
/* Lazily unmounts (MNT_DETACH) the mount on dir: umount2(2) as root,
 * else "fusermount3 -u -z", as libfuse does. 0 or -errno. */
int mntguard_detach(const char *dir);

/* Makes dir immutable unless it is already. 0, or -errno with a one-line
 * reason in err (e.g. not root, or a filesystem without the flag). */
int mntguard_seal(const char *dir, char *err, size_t errlen);
/* Whether dir is immutable (false when it cannot be told). */
bool mntguard_sealed(const char *dir);

#endif
