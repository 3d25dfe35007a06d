/* fuzz_creds: checks shared by the credential-provider harnesses (header
 * only, static inline): what a provider hands out, what it says when it
 * fails, and small in-memory files (memfd) that stand for token files.
 * Single-threaded, like the harnesses. */
#ifndef LOCKFS_FUZZ_CREDS_H
#define LOCKFS_FUZZ_CREDS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "creds_provider.h"
#include "creds_util.h"

/* Credentials a provider returned: non-empty printable ASCII without
 * spaces (they go into HTTP headers), a source, an expiry after the epoch
 * when asked (an Expiration at or before 1970 is refused: expires_real_ms
 * 0 would mean "never expires"). */
static inline void fz_check_creds(const struct aws_creds *c, int expiring)
{
	const char *s[3] = { c->access_key_id, c->secret_access_key,
			     c->session_token };
	int i;

	if (!s[0] || !s[1] || !s[0][0] || !s[1][0] || !c->source ||
	    (expiring && c->expires_real_ms <= 0))
		abort();
	for (i = 0; i < 3; i++)
		for (const char *p = s[i]; p && *p; p++)
			if ((unsigned char)*p <= 0x20 ||
			    (unsigned char)*p >= 0x7f)
				abort();
}

/* A failure: a -errno and a one-line message that names no secret (only
 * checked for secrets long enough not to appear by chance). */
static inline void fz_check_failure(int rc, const struct aws_error *err,
				    const char *secret)
{
	size_t n = secret ? strlen(secret) : 0, i;

	if (rc >= 0 || rc < -4095 || !err->message[0] ||
	    !memchr(err->message, '\0', sizeof(err->message)) ||
	    strchr(err->message, '\n'))
		abort();
	if (n < 16)
		return;
	for (i = 0; i < n; i++)
		if (!((secret[i] >= 'a' && secret[i] <= 'z') ||
		      (secret[i] >= 'A' && secret[i] <= 'Z') ||
		      (secret[i] >= '0' && secret[i] <= '9')))
			return;
	if (strstr(err->message, secret))
		abort();
}

/* An in-memory file and its path, created once. */
struct fz_file {
	int fd;
	char path[64];
};

static inline void fz_file_set(struct fz_file *f, const char *data, size_t len)
{
	if (!f->path[0]) {
		f->fd = memfd_create("fuzz", 0);
		if (f->fd < 0)
			abort();
		snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
	}
	if (ftruncate(f->fd, 0) ||
	    (len && pwrite(f->fd, data, len, 0) != (ssize_t)len))
		abort();
}

#endif
