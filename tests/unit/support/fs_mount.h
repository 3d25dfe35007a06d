/* fs_mount: a mount of the filesystem layer for the fs_* tests, without
 * FUSE: its own observation, lock engine (hold=fd, the real clock) and fs
 * on a store the test's mounts share, with fs_on_lost as the engine's loss
 * callback. Header-only: unit_support is built with the lock layer's
 * headers alone, and only the fs_* tests (which link the fs layer)
 * include this.
 *
 * Threads: the test's. */
#ifndef LOCKFS_TEST_FS_MOUNT_H
#define LOCKFS_TEST_FS_MOUNT_H

#include <sys/stat.h>

#include "check.h"
#include "fs.h"

struct fs_mount {
	struct observe *obs;
	struct lock_engine *eng;
	struct fs *fs;
	struct metrics m;
};

/* The fs configuration of most tests: no prefix, 1 s attribute and entry
 * timeouts, table "t". */
static inline struct fs_config fs_mount_config(void)
{
	struct fs_config fc = {
		.prefix = "",
		.attr_timeout_s = 1,
		.entry_timeout_s = 1,
		.table = "t",
	};

	return fc;
}

/* mt as owner on st (host "h", locks released 1 s ago are recent). */
static inline void fs_mount_init(struct fs_mount *mt, struct store *st,
				 const char *owner, const struct fs_config *fc)
{
	struct lock_config lc = {
		.owner = owner,
		.host = "h",
		.hold = HOLD_FD,
		.recent_release_ms = 1000,
	};
	struct lock_callbacks cb = { .on_lost = fs_on_lost,
				     .on_acquired = fs_on_acquired };

	metrics_init(&mt->m);
	mt->obs = observe_new(&clk_system, 0);
	mt->eng = lock_engine_new(&lc, st, mt->obs, &clk_system, &mt->m, NULL);
	mt->fs = fs_new(fc, mt->eng, &mt->m);
	CHECK(mt->obs && mt->eng && mt->fs);
	cb.arg = mt->fs;
	lock_engine_set_callbacks(mt->eng, &cb);
}

static inline void fs_mount_fini(struct fs_mount *mt)
{
	fs_free(mt->fs);
	lock_engine_free(mt->eng);
	observe_free(mt->obs);
}

/* fs_create of a regular file of mode as c. */
static inline int fs_mount_create(struct fs_mount *mt, const struct fs_ctx *c,
				  uint64_t parent, const char *name,
				  uint32_t mode, int flags, uint64_t *fh)
{
	struct fs_entry e;

	return fs_create(mt->fs, c, parent, name, S_IFREG | mode, flags, &e,
			 fh);
}

#endif
