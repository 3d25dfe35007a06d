/* render: the text a lock file reads as, and the same fields as extended
 * attributes (user.lockfs.<field>). One "name: value" per line, times in
 * RFC 3339 UTC with milliseconds, durations in seconds with 3 decimals.
 * Fields a row does not have are left out. A row held shared has "mode:
 * shared", "readers: N" and one "holder:" line per reading mount (its xattr
 * joins them with "; "), and "writer_waiting:" while a writer of another
 * mount has marked it. Values are escaped to stay on one
 * line and out of the terminal's control (text_escape_line), in the text and
 * in the xattrs alike: each xattr is exactly its line's value. No state. */
#ifndef LOCKFS_RENDER_H
#define LOCKFS_RENDER_H

#include <stdbool.h>

#include "buf.h"
#include "record.h"

enum render_state {
	RENDER_HELD,
	RENDER_EXPIRED,
	RENDER_LOST,
	RENDER_RELEASED, /* read through a file opened before the release */
};

const char *render_state_name(enum render_state st);

/* Appends the whole text. */
int render_lock_text(const struct lock_record *rec, enum render_state st,
		     struct buf *out);

/* Appends the escaped value of one field ("owner", "data", ...), as the
 * text shows it. -ENODATA when
 * the row has no such field, -EINVAL for an unknown name. */
int render_field(const struct lock_record *rec, enum render_state st,
		 const char *field, struct buf *out);

/* Appends the NUL-separated list of "user.lockfs.<field>" names the row
 * has (listxattr format). */
int render_xattr_names(const struct lock_record *rec, struct buf *out);

#define RENDER_XATTR_PREFIX "user.lockfs."

#endif
