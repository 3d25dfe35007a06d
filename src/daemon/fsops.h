/* fsops: the libfuse low-level operations of lockfs (see fsops.c). */
#ifndef LOCKFS_FSOPS_H
#define LOCKFS_FSOPS_H

struct fuse_lowlevel_ops;
struct fs;
struct flk;

/* The session's userdata. */
struct fsops_ctx {
	struct fs *fs;
	struct flk *flk;
};

extern const struct fuse_lowlevel_ops fsops_table;

/* flk_config.reply: answers a parked file-lock request. */
int fsops_reply_lock(void *req, int err);

#endif
