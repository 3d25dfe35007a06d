/* names: the rules for file names, mount prefixes and lock keys. A file
 * <mnt>/a/b/c is the key <prefix>a/b/c. Names are 1..255 bytes of valid UTF-8
 * without '/' or NUL; "." and ".." are not names; names starting with ".lockfs"
 * are reserved; a whole key is at most 1024 bytes. No state. */
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

#define NAMES_PREFIX_MAX 512

/* Checks a mount prefix: "" (none), or the path of a directory: one or
 * more names (each passing names_check), each followed by '/' ("team-a/",
 * "a/b/"), at most NAMES_PREFIX_MAX bytes. 0, or the first failure:
 * -ENAMETOOLONG (over 512 bytes, or a name over 255), -EINVAL (no
 * trailing '/', an empty name as in "/" or "x//y", an invalid name such as
 * ".."), -EPERM (a reserved name, ".lockfs*"). */
int names_check_prefix(const char *prefix);
/* A prefix as written by an operator, made a directory path: "team-a"
 * becomes "team-a/" (a prefix names the directory the mount shows, never
 * the start of a key: keys "team-azz" are not under prefix "team-a").
 * *out is malloc'd; 0 or -ENOMEM. Check the result with
 * names_check_prefix. */
int names_normalize_prefix(const char *prefix, char **out);

#endif
