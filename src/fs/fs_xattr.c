/* fs_xattr: the extended attributes user.lockfs.<field> of lock files
 * (render.h names the fields): a row's fields as lookups see them, the
 * holder's first look at its fence allocating it. Threads: FUSE workers;
 * no state. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static ssize_t copy_out(const struct buf *v, char *buf, size_t size)
{
	if (!size)
		return (ssize_t)v->len;
	if (v->len > size)
		return -ERANGE;
	memcpy(buf, v->data ? v->data : "", v->len);
	return (ssize_t)v->len;
}

/* Writes the pending data of this mount's lock of a file inode, if any. */
static void flush_ino(struct fs *fs, uint64_t ino)
{
	struct lock *lk;
	bool is_dir, fixed;
	char *rel = NULL, *full;

	if (fs_int_node_info(fs, ino, &rel, &is_dir, &fixed) || is_dir ||
	    fixed) {
		free(rel);
		return;
	}
	full = fs_int_full_key(fs, rel);
	lk = full ? lock_find(fs->eng, full) : NULL;
	if (lk) /* an error is the writers' to be told */
		fs_wb_write_pending(fs->wb, lk);
	lock_unref(fs->eng, lk);
	free(full);
	free(rel);
}

/* The row of a file inode, as lookups by ctx see it (a lock its group
 * lost shows as lost), for xattrs. */
static int file_row(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		    struct resolved *r, char **full)
{
	bool is_dir, fixed;
	char *rel = NULL;
	int rc;

	rc = fs_int_node_info(fs, ino, &rel, &is_dir, &fixed);
	if (rc)
		return rc;
	if (is_dir || fixed) {
		free(rel);
		return -ENODATA;
	}
	rc = fs_int_lost_view(fs, ctx, rel, r)
		     ? 0
		     : fs_int_resolve(fs, rel, false, r);
	if (!rc && r->kind != K_FILE)
		rc = -ENOENT;
	if (!rc && full)
		*full = fs_int_full_key(fs, rel);
	free(rel);
	return rc;
}

ssize_t fs_getxattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		    const char *name, char *buf, size_t size)
{
	const size_t plen = strlen(RENDER_XATTR_PREFIX);
	struct buf v = BUF_INIT;
	struct resolved r;
	char *full = NULL;
	ssize_t rc;

	/* Anything but ours is answered without a request (the kernel asks
	 * for security.capability on every write). */
	if (strncmp(name, RENDER_XATTR_PREFIX, plen))
		return -ENODATA;
	fs_int_resolved_init(&r);
	flush_ino(fs, ino);
	rc = file_row(fs, ctx, ino, &r, &full);
	if (!rc && r.ours && !r.rec.fence && !strcmp(name + plen, "fence")) {
		struct lock *lk = full ? lock_find(fs->eng, full) : NULL;

		/* The holder's first look at its fence allocates it. */
		if (lk && fs_int_is_holder(ctx, lk) &&
		    lock_fence(fs->eng, lk, &r.rec.fence))
			r.rec.fence = 0;
		lock_unref(fs->eng, lk);
	}
	if (!rc) {
		rc = render_field(&r.rec, r.state, name + plen, &v);
		if (rc == -EINVAL)
			rc = -ENODATA;
	}
	if (!rc)
		rc = copy_out(&v, buf, size);
	buf_fini(&v);
	fs_int_resolved_fini(&r);
	free(full);
	return rc;
}

ssize_t fs_listxattr(struct fs *fs, const struct fs_ctx *ctx, uint64_t ino,
		     char *buf, size_t size)
{
	struct buf v = BUF_INIT;
	struct resolved r;
	ssize_t rc;

	fs_int_resolved_init(&r);
	rc = file_row(fs, ctx, ino, &r, NULL);
	if (rc == -ENODATA)
		rc = 0; /* directories: no attributes */
	else if (!rc)
		rc = render_xattr_names(&r.rec, &v);
	if (!rc)
		rc = copy_out(&v, buf, size);
	buf_fini(&v);
	fs_int_resolved_fini(&r);
	return rc;
}
