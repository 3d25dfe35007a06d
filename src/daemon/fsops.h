/* fsops: the libfuse low-level operations of lockfs (see fsops.c). */
#ifndef LOCKFS_FSOPS_H
#define LOCKFS_FSOPS_H

struct fuse_lowlevel_ops;
struct fs;
struct flk;
struct metrics;

/* The session's userdata. */
struct fsops_ctx {
	struct fs *fs;
	struct flk *flk;
	struct metrics *metrics; /* requests counted by operation */
};

extern const struct fuse_lowlevel_ops fsops_table;

/* Names the operations in m (lockfs_fuse_requests_total{op=...}); once,
 * before the session runs. */
void fsops_name_metrics(struct metrics *m);

/* flk_config.reply: answers a parked file-lock request. */
int fsops_reply_lock(void *req, int err);

#endif
