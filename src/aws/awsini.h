/* awsini: parser for the AWS shared config and credentials files (INI with
 * "[default]", "[profile x]", "[sso-session x]", key = value, comments with
 * '#' or ';', indented continuation lines for nested sections). Bounded:
 * files over 1 MiB are refused. No shared state. */
#ifndef LOCKFS_AWSINI_H
#define LOCKFS_AWSINI_H

#include <stddef.h>

struct awsini; /* parsed file: sections of key/value pairs, owned */

/* Parses text. 0 or -EINVAL (with a line number in *err_line) / -ENOMEM. */
int awsini_parse(const char *text, size_t len, struct awsini **out,
		 int *err_line);
/* Reads and parses a file. -ENOENT if missing; -EFBIG over 1 MiB; -EISDIR
 * or another -errno of open/read; else as awsini_parse. */
int awsini_load(const char *path, struct awsini **out, int *err_line);
void awsini_free(struct awsini *ini);
/* Looks up key (case-insensitive) in the section named exactly section_name
 * (for the config file the caller passes "profile x" or "default"; the
 * parser normalises "[profile   x]" to "profile x"). Repeated sections are
 * merged and a repeated key keeps its last value; continuation lines are
 * joined with '\n'. NULL when absent. The string lives as long as ini. */
const char *awsini_get(const struct awsini *ini, const char *section_name,
		       const char *key);
int awsini_has_section(const struct awsini *ini, const char *section_name);

#endif
