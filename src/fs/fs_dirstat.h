/* fs_dirstat: what this mount knows of each directory's entries, for its
 * attributes: how many subdirectories it has (st_nlink is 2 + that once
 * counted) and when its entries last changed (st_mtime, st_ctime). See
 * fs_dirstat.c. */
#ifndef LOCKFS_FS_DIRSTAT_H
#define LOCKFS_FS_DIRSTAT_H

#include <stdint.h>

#include "fs.h"

struct fs_dirstat;

struct fs_dirstat *fs_dirstat_new(void);
void fs_dirstat_free(struct fs_dirstat *ds);

/* An entry of dir was added or removed through this mount at real_ms:
 * subdirs is +1 for a directory made, -1 for one removed, 0 for a lock. */
void fs_dirstat_changed(struct fs_dirstat *ds, const char *dir, int subdirs,
			int64_t real_ms);
/* dir was made through this mount at real_ms: it has no subdirectory. */
void fs_dirstat_made(struct fs_dirstat *ds, const char *dir, int64_t real_ms);
/* dir is gone. */
void fs_dirstat_removed(struct fs_dirstat *ds, const char *dir);

/* What a listing of dir found: subdirs directories, and a hash of its
 * names (fs_dirstat_hash_name summed over them), at real_ms. A listing
 * that differs from the one before counts as a change. */
void fs_dirstat_listed(struct fs_dirstat *ds, const char *dir, int subdirs,
		       uint64_t names_hash, int64_t real_ms);
uint64_t fs_dirstat_hash_name(const char *name, int is_dir);

/* Puts what is known of dir into a: nlink 2 + its subdirectories when
 * counted, else 1 (not counted yet: no listing of it on this mount); mtime
 * and ctime no earlier than its last change. */
void fs_dirstat_apply(struct fs_dirstat *ds, const char *dir,
		      struct fs_attr *a);

#endif
