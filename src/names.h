/* names: the rules for file names and lock keys. A file <mnt>/a/b/c is the
 * key <prefix>a/b/c. Names are 1..255 bytes of valid UTF-8 without '/' or
 * NUL; "." and ".." are not names; names starting with ".lockfs" are
 * reserved; a whole key is at most 1024 bytes. No state. */
#ifndef LOCKFS_NAMES_H
#define LOCKFS_NAMES_H

#include <stddef.h>

#define NAMES_NAME_MAX 255
#define NAMES_KEY_MAX  1024
#define NAMES_RESERVED ".lockfs"

/* 0, -ENAMETOOLONG (over 255 bytes), -EINVAL (empty, invalid UTF-8, "/",
 * "." or ".."), -EPERM (reserved ".lockfs*"). */
int names_check(const char *name);

/* Joins a directory key (may be "" for the mount root, else without a
 * trailing '/') and a name. 0, -ENAMETOOLONG past NAMES_KEY_MAX bytes
 * (counting the mount prefix, prefix_len), -ENOMEM. *out is malloc'd. */
int names_join(const char *dir, const char *name, size_t prefix_len,
	       char **out);

/* Checks a mount prefix: "" or valid UTF-8 up to 512 bytes, no NUL; it is
 * used as given ("team-a/" or "team-a-"). 0 or -EINVAL. */
int names_check_prefix(const char *prefix);

#endif
