/* fs_perm: permission bits and the caller's groups (see fs_perm.h). No
 * state; any thread. */
#include "fs_perm.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The supplementary groups of pid from /proc/PID/status ("Groups:"). */
static int read_groups(int32_t pid, uint32_t *out, int max)
{
	char path[64], line[1024];
	int n = -1;
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 7, *end;

		if (strncmp(line, "Groups:", 7))
			continue;
		n = 0;
		for (;;) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p || n == max)
				break;
			out[n++] = (uint32_t)g;
			p = end;
		}
		break;
	}
	fclose(f);
	return n;
}

void fs_perm_cred(uint32_t uid, uint32_t gid, int32_t pid, struct fs_cred *out)
{
	memset(out, 0, sizeof(*out));
	out->uid = uid;
	out->gid = gid;
	out->ngroups = read_groups(pid, out->groups, FS_PERM_NGROUPS);
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
