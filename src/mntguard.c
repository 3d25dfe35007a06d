/* mntguard: the immutable flag on the mountpoint (see mntguard.h). */
#include "mntguard.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int get_flags(int fd, int *flags)
{
	return ioctl(fd, FS_IOC_GETFLAGS, flags) ? -errno : 0;
}

bool mntguard_sealed(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), flags = 0;
	bool sealed;

	if (fd < 0)
		return false;
	sealed = !get_flags(fd, &flags) && (flags & FS_IMMUTABLE_FL);
	close(fd);
	return sealed;
}

int mntguard_seal(const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), flags = 0;
	int rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	rc = get_flags(fd, &flags);
	if (!rc && !(flags & FS_IMMUTABLE_FL)) {
		flags |= FS_IMMUTABLE_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
			rc = -errno;
	}
	close(fd);
	if (rc == -EPERM || rc == -EACCES)
		snprintf(err, errlen,
			 "only root may make it immutable (chattr +i)");
	else if (rc == -ENOTTY || rc == -EOPNOTSUPP || rc == -EINVAL)
		snprintf(err, errlen,
			 "its filesystem has no immutable flag (chattr +i)");
	else if (rc)
		snprintf(err, errlen, "cannot make it immutable: %s",
			 strerror(-rc));
	return rc;
}
