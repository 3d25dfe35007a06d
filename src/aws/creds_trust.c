/* creds_trust: the ssh-style owner and mode check of the AWS files read as
 * root. Stateless; called by the refreshing thread (creds_profile) and by
 * main's thread at start-up (awscfg). */
#include "creds_trust.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int why_fail(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int why_fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int owner_ok(uid_t owner, uid_t uid)
{
	return owner == 0 || owner == uid;
}

/* One directory on the way to the file. */
static int check_dir(const char *dir, uid_t uid, char *why, size_t whylen)
{
	struct stat st;

	if (stat(dir, &st))
		return why_fail(why, whylen, -errno, "cannot stat %.200s: %s",
				dir, strerror(errno));
	if (!owner_ok(st.st_uid, uid))
		return why_fail(why, whylen, -EPERM,
				"%.200s is owned by uid %u", dir,
				(unsigned)st.st_uid);
	if ((st.st_mode & 022) && !((st.st_mode & S_ISVTX) && st.st_uid == 0))
		return why_fail(why, whylen, -EPERM,
				"%.200s is writable by group or others "
				"(mode %04o)",
				dir, (unsigned)(st.st_mode & 07777));
	return 0;
}

int creds_trust_file(const char *path, uid_t uid, char *canon, size_t canonlen,
		     char *why, size_t whylen)
{
	char real[PATH_MAX], *slash;
	struct stat st;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (!realpath(path, real)) {
		rc = errno;
		if (rc == ENOENT || rc == ENOTDIR)
			return -ENOENT;
		return why_fail(why, whylen, -rc, "cannot resolve %.200s: %s",
				path, strerror(rc));
	}
	if (strlen(real) >= canonlen)
		return why_fail(why, whylen, -ENAMETOOLONG,
				"%.200s: path too long", real);
	strcpy(canon, real);
	if (!strcmp(real, "/dev/null"))
		return 0; /* reads as an empty file, whoever writes to it */
	if (stat(real, &st))
		return why_fail(why, whylen, -errno, "cannot stat %.200s: %s",
				real, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return why_fail(why, whylen, -EPERM,
				"%.200s is not a regular file", real);
	if (!owner_ok(st.st_uid, uid))
		return why_fail(why, whylen, -EPERM,
				"%.200s is owned by uid %u", real,
				(unsigned)st.st_uid);
	if (st.st_mode & 022)
		return why_fail(why, whylen, -EPERM,
				"%.200s is writable by group or others "
				"(mode %04o)",
				real, (unsigned)(st.st_mode & 07777));
	/* The directories, from the parent up to "/" (realpath gave an
	 * absolute path without "." or ".." or links). */
	rc = 0;
	for (;;) {
		slash = strrchr(real, '/');
		if (!slash)
			break;
		if (slash == real) {
			rc = check_dir("/", uid, why, whylen);
			break;
		}
		*slash = '\0';
		rc = check_dir(real, uid, why, whylen);
		if (rc)
			break;
	}
	return rc;
}

int creds_trust_enabled(int mode)
{
	if (mode > 0)
		return 1;
	if (mode < 0)
		return 0;
	return geteuid() == 0;
}
