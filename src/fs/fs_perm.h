/* fs_perm: the permission checks lockfs makes itself, where the kernel's
 * (default_permissions) cannot: a create that finds the name taken
 * meanwhile (the kernel checked the directory only), and which locks a
 * reader of .lockfs/status may see. The classic rules: root may do
 * anything; otherwise the owner's, the group's (primary or supplementary)
 * or the others' bits decide.
 *
 * Threads: any (asks the host, no state). */
#ifndef LOCKFS_FS_PERM_H
#define LOCKFS_FS_PERM_H

#include <stdbool.h>
#include <stdint.h>

#define FS_PERM_R 4
#define FS_PERM_W 2
#define FS_PERM_X 1

/* Who asks, with the groups of its process (the host's answer at capture,
 * /proc on the real machine: FUSE requests carry only the primary gid). */
#define FS_PERM_NGROUPS 64
struct fs_cred {
	uint32_t uid;
	uint32_t gid;
	int ngroups; /* -1: unknown (only gid is used) */
	uint32_t groups[FS_PERM_NGROUPS];
};

struct host;
void fs_perm_cred(const struct host *h, uint32_t uid, uint32_t gid, int32_t pid,
		  struct fs_cred *out);
bool fs_perm_in_group(const struct fs_cred *c, uint32_t gid);
/* Whether c may do want (FS_PERM_* bits) to a file of mode, uid, gid. */
bool fs_perm_may(const struct fs_cred *c, uint32_t mode, uint32_t uid,
		 uint32_t gid, unsigned want);
/* The FS_PERM_* bits an open with these flags needs. */
unsigned fs_perm_open_want(int flags);

#endif
