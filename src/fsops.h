/* fsops: the libfuse low-level operations of lockfs (see fsops.c). */
#ifndef LOCKFS_FSOPS_H
#define LOCKFS_FSOPS_H

struct fuse_lowlevel_ops;

extern const struct fuse_lowlevel_ops fsops_table;

#endif
