/* fs_perm: permission bits and the caller's groups (see fs_perm.h; the
 * groups come from the host, host.h). No state; any thread. */
#include "fs_perm.h"

#include "host.h"

#include <fcntl.h>
#include <string.h>

void fs_perm_cred(const struct host *h, uint32_t uid, uint32_t gid, int32_t pid,
		  struct fs_cred *out)
{
	memset(out, 0, sizeof(*out));
	out->uid = uid;
	out->gid = gid;
	out->ngroups = -1;
	if (pid <= 0)
		return;
	out->ngroups = host_groups(h, pid, out->groups, FS_PERM_NGROUPS);
	if (out->ngroups < 0)
		out->ngroups = -1;
}

bool fs_perm_in_group(const struct fs_cred *c, uint32_t gid)
{
	int i;

	if (c->gid == gid)
		return true;
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

bool fs_perm_may(const struct fs_cred *c, uint32_t mode, uint32_t uid,
		 uint32_t gid, unsigned want)
{
	unsigned have;

	if (c->uid == 0)
		return true;
	if (c->uid == uid)
		have = (mode >> 6) & 7;
	else if (fs_perm_in_group(c, gid))
		have = (mode >> 3) & 7;
	else
		have = mode & 7;
	return (have & want) == want;
}

unsigned fs_perm_open_want(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_WRONLY:
		return FS_PERM_W;
	case O_RDWR:
		return FS_PERM_R | FS_PERM_W;
	default:
		return FS_PERM_R;
	}
}
