/* mntguard: the immutable flag on the mountpoint (see mntguard.h). */
#include "mntguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "text.h"

#define MOUNTINFO   "/proc/self/mountinfo"
#define LOCKFS_TYPE "fuse.lockfs"

extern char **environ;

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

/* ---- what is on the mountpoint ------------------------------------------ */

static void say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int octal(char c)
{
	return c >= '0' && c <= '7' ? c - '0' : -1;
}

/* Decodes in place the escapes of a mountinfo field (\040 for a space,
 * \011 tab, \012 newline, \134 backslash). */
static void unescape(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && octal(s[1]) >= 0 && octal(s[1]) <= 3 &&
		    octal(s[2]) >= 0 && octal(s[3]) >= 0) {
			*out++ = (char)(octal(s[1]) << 6 | octal(s[2]) << 3 |
					octal(s[3]));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* Splits one line of mountinfo in place: the mount point (field 5) and,
 * after the "-" that ends the optional fields (7 on), the filesystem type
 * and the source. 0, or -EINVAL for a line of another shape. */
static int parse_mountinfo(char *line, char **mnt, char **type, char **src)
{
	char *save = NULL, *tok;
	int field = 0;
	bool sep = false;

	*mnt = *type = *src = NULL;
	for (tok = strtok_r(line, " \n", &save); tok && !*src;
	     tok = strtok_r(NULL, " \n", &save)) {
		field++;
		if (field == 5)
			*mnt = tok;
		else if (field >= 7 && !sep)
			sep = !strcmp(tok, "-");
		else if (sep && !*type)
			*type = tok;
		else if (sep)
			*src = tok;
	}
	if (!*mnt || !*src)
		return -EINVAL;
	unescape(*mnt);
	unescape(*src);
	return 0;
}

/* The type and source of the mount on top at dir: the last line of
 * mountinfo that names dir (a mount stacked on another comes after it).
 * 0, -ENOENT when nothing is mounted on dir, or -errno. */
static int top_mount(const char *dir, char *type, size_t typelen, char *src,
		     size_t srclen)
{
	FILE *f = fopen(MOUNTINFO, "re");
	char *line = NULL, *m, *t, *s;
	size_t cap = 0;
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (parse_mountinfo(line, &m, &t, &s) || strcmp(m, dir))
			continue;
		text_copy(type, typelen, t);
		text_copy(src, srclen, s);
		rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}

/* The real path of the parent of path, then its last component: how a
 * dead mount's mountpoint is named, since looking it up gives ENOTCONN. */
static int resolve_by_parent(const char *path, char *dir, size_t dirlen)
{
	char copy[PATH_MAX], parent[PATH_MAX], *slash, *base;
	size_t n;

	if (text_copy(copy, sizeof(copy), path))
		return -ENAMETOOLONG;
	n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	slash = strrchr(copy, '/');
	base = slash ? slash + 1 : copy;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -ENOTCONN;
	if (slash)
		*slash = '\0';
	if (!realpath(slash ? (slash == copy ? "/" : copy) : ".", parent))
		return -errno;
	n = (size_t)snprintf(dir, dirlen, "%s/%s",
			     strcmp(parent, "/") ? parent : "", base);
	return n < dirlen ? 0 : -ENAMETOOLONG;
}

static int resolve(const char *path, char *dir, size_t dirlen)
{
	char real[PATH_MAX];

	if (realpath(path, real))
		return text_copy(dir, dirlen, real) ? -ENAMETOOLONG : 0;
	if (errno != ENOTCONN)
		return -errno;
	return resolve_by_parent(path, dir, dirlen);
}

/* Whether the FUSE mount on dir has lost its daemon. stat(2) may answer
 * from the attributes the kernel cached (for attr_timeout) even then;
 * statfs(2) always asks the daemon, and a dead connection answers
 * ENOTCONN. */
static bool fuse_dead(const char *dir, const char *type)
{
	struct statfs sfs;

	if (strcmp(type, "fuse") && strncmp(type, "fuse.", 5))
		return false;
	return statfs(dir, &sfs) && errno == ENOTCONN;
}

static void say_dead(const char *dir, const char *type, char *err,
		     size_t errlen)
{
	if (type)
		say(err, errlen,
		    "%s: the %s mount there is dead (its daemon is gone); "
		    "unmount it (fusermount3 -u %s, or umount -l %s)",
		    strerror(ENOTCONN), type, dir, dir);
	else
		say(err, errlen,
		    "%s: a dead FUSE mount (its daemon is gone) is on its "
		    "path; find it with findmnt and unmount it (fusermount3 "
		    "-u, or umount -l)",
		    strerror(ENOTCONN));
}

int mntguard_inspect(const char *path, char *dir, size_t dirlen,
		     struct mntguard_info *info, char *err, size_t errlen)
{
	char type[64] = "";
	struct stat st;
	bool mounted, lockfs;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = resolve(path, dir, dirlen);
	if (rc == -ENOTCONN)
		say_dead(path, NULL, err, errlen);
	else if (rc)
		say(err, errlen, "%s", strerror(-rc));
	if (rc)
		return rc;
	mounted = !top_mount(dir, type, sizeof(type), info->source,
			     sizeof(info->source));
	lockfs = mounted && !strcmp(type, LOCKFS_TYPE);
	rc = stat(dir, &st) ? -errno : 0;
	if (!rc && mounted && fuse_dead(dir, type))
		rc = -ENOTCONN;
	if (rc) {
		if (rc == -ENOTCONN && lockfs) {
			info->state = MNTGUARD_LOCKFS_DEAD;
			return 0;
		}
		if (rc == -ENOTCONN)
			say_dead(dir, mounted ? type : NULL, err, errlen);
		else
			say(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		say(err, errlen,
		    "not a directory (lockfs mounts on a directory)");
		return -ENOTDIR;
	}
	info->state = lockfs ? MNTGUARD_LOCKFS_LIVE : MNTGUARD_FREE;
	return 0;
}

/* "fusermount3 -u -z DIR", quietly: how a user who is not root unmounts
 * the FUSE mount they made. */
static int fusermount_detach(const char *dir)
{
	char *const argv[] = { (char *)"fusermount3", (char *)"-u",
			       (char *)"-z", (char *)dir, NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc, status;

	if (posix_spawn_file_actions_init(&fa))
		return -ENOMEM;
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -rc;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EPERM;
}

int mntguard_detach(const char *dir)
{
	if (!umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW))
		return 0;
	if (errno != EPERM)
		return -errno;
	return fusermount_detach(dir);
}
