/* creds_trust: whether a file that lockfs reads as root (the AWS shared
 * config and credentials files, which may name a command to run) can be
 * trusted, judged the way ssh judges its keys (StrictModes). No shared
 * state; any thread. */
#ifndef LOCKFS_CREDS_TRUST_H
#define LOCKFS_CREDS_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* Resolves path (realpath) into canon and checks it: a regular file (or
 * /dev/null) owned by root or uid and not writable by group or others, and
 * every directory from its parent up to "/" owned by root or uid and not
 * writable by group or others; a world-writable directory is accepted only
 * when it is sticky and owned by root (/tmp): nobody else can then rename or
 * remove what root or uid put in it. Read the file through canon afterwards,
 * so that no symbolic link is followed again.
 * Returns 0, -ENOENT when the file (or a directory on its way) does not
 * exist, -EPERM with a one-line reason in why ("/h/.aws is owned by uid
 * 1001"), or another -errno (why says which path). */
int creds_trust_file(const char *path, uid_t uid, char *canon, size_t canonlen,
		     char *why, size_t whylen);

/* Whether the files are to be checked, for creds_config.check_files and
 * awscfg: mode 0 means "when running as root" (effective uid 0), 1 always,
 * -1 never. */
int creds_trust_enabled(int mode);

#endif
