/* fs_attr: the attributes the kernel is shown: of rows (locks and
 * directories, whoever wrote them), of the control files, and an entry's
 * timeouts. Rows' times are shown in the host's clock (fs_int_host_time).
 * No state of its own; reads the configuration, the host's clock and the
 * estimate of DynamoDB's. Threads: any. */
#include "fs_int.h"

#include <string.h>
#include <sys/stat.h>

#include "srvclk.h"

int64_t fs_int_host_time(const struct fs *fs, int64_t row_real_ms)
{
	int64_t now = clk_real_ms(fs->host->clk), t = row_real_ms;

	if (!t)
		return 0;
	if (fs->cfg.server_clock)
		t -= srvclk_skew_ms(fs->cfg.server_clock);
	return t < now ? t : now;
}

uint32_t fs_int_shown_id(int64_t id, uint32_t root_id)
{
	if (id < 0 || id == FS_NOBODY_ID || id >= UINT32_MAX)
		return root_id;
	return (uint32_t)id;
}

/* Rows are shown with their owner as recorded (uids name the same users on
 * every host sharing the table, as with NFS), but never with the setuid or
 * setgid bit (nor a sticky bit on a file), and never owned by nobody
 * (65534: the id unmapped users get) or an id out of range: such rows
 * belong to the mount root's owner, so that no such user may chmod them.
 * Rows of other clients (no lockfs attributes) belong to the mount root's
 * owner too. */
void fs_int_dir_attr(const struct fs *fs, uint64_t ino,
		     const struct dir_record *d, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 2;
	if (d && d->key) {
		a->mode = S_IFDIR | (d->mode & 01777);
		a->uid = fs_int_shown_id(d->uid, fs->cfg.root_uid);
		a->gid = fs_int_shown_id(d->gid, fs->cfg.root_gid);
		a->ctime_real_ms = fs_int_host_time(fs, d->created_real_ms);
	} else {
		a->mode = S_IFDIR | (fs->cfg.root_mode & 07777);
		a->uid = fs->cfg.root_uid;
		a->gid = fs->cfg.root_gid;
		a->ctime_real_ms = fs->mount_real_ms;
	}
	a->mtime_real_ms = a->atime_real_ms = a->ctime_real_ms;
	a->size = 4096;
}

static const char *our_owner(const struct fs *fs)
{
	const char *o = lock_engine_config(fs->eng)->owner;

	return o ? o : "";
}

void fs_int_lock_attr(const struct fs *fs, uint64_t ino,
		      const struct lock_record *r, enum render_state st,
		      int64_t seen_real_ms, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	if (r->has_lockfs) {
		bool mine = r->owner && !strcmp(r->owner, our_owner(fs));

		/* A row of this mount names a local user for sure (nobody's
		 * own locks must stay its own: the sticky rule). */
		a->mode = S_IFREG | (r->mode & 0777);
		a->uid = mine && r->uid == FS_NOBODY_ID
				 ? FS_NOBODY_ID
				 : fs_int_shown_id(r->uid, fs->cfg.root_uid);
		a->gid = mine && r->gid == FS_NOBODY_ID
				 ? FS_NOBODY_ID
				 : fs_int_shown_id(r->gid, fs->cfg.root_gid);
		a->ctime_real_ms = fs_int_host_time(fs, r->acquired_real_ms);
		a->mtime_real_ms = fs_int_host_time(fs, r->heartbeat_real_ms);
	} else {
		/* Rows of other clients have no owner or times of ours. */
		a->mode = S_IFREG | 0644;
		a->uid = fs->cfg.root_uid;
		a->gid = fs->cfg.root_gid;
		a->ctime_real_ms = a->mtime_real_ms =
			seen_real_ms ? fs_int_host_time(fs, seen_real_ms)
				     : clk_real_ms(fs->host->clk);
	}
	a->atime_real_ms = a->mtime_real_ms;
	/* The size is the holder's data, not the text (reads are direct I/O
	 * and return the whole text whatever the size): lock-file programs
	 * check that a file they just created is empty (procmail's NFS-safe
	 * creat) and that the pid they wrote is there. */
	a->size = r->has_data ? r->data_len : 0;
}

void fs_int_ctl_attr(struct fs *fs, struct fs_node *n, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = n->ino;
	a->uid = fs->cfg.root_uid;
	a->gid = fs->cfg.root_gid;
	a->ctime_real_ms = a->mtime_real_ms = a->atime_real_ms =
		fs->mount_real_ms;
	if (n->is_dir) {
		a->mode = S_IFDIR | 0555;
		a->nlink = 2;
		a->size = 4096;
	} else {
		a->mode = S_IFREG | 0444;
		a->nlink = 1;
		a->size = 0; /* generated on read (direct I/O) */
		a->mtime_real_ms = clk_real_ms(fs->host->clk);
	}
}

/* Timeouts of an entry. Another owner's lock changes without this mount
 * seeing it: the kernel asks for its name again every time. A lock of ours
 * can go away without the kernel seeing an unlink (a close in fd mode, its
 * group gone, a flock released, a loss): the kernel keeps its name for
 * entry_timeout (which spares the lookup before each unlink of it) but not
 * its attributes, so a stat, access or open of the name asks us
 * (getattr), and once the lock is gone is answered ESTALE, on which the
 * kernel looks the name up again (fs_getattr_ctx): as exact as a lookup,
 * and flock(1)'s O_CREAT open then creates. An exclusive create
 * (O_CREAT|O_EXCL, link, rename's target) always looks a cached name up
 * anew (LOOKUP_EXCL). Directories and .lockfs are kept for both. */
double fs_int_attr_timeout(const struct fs *fs, enum fs_entry_of of)
{
	return of == FS_ENTRY_OWN_LOCK ? 0 : fs->cfg.attr_timeout_s;
}

void fs_int_fill_entry(const struct fs *fs, struct fs_entry *e,
		       enum fs_entry_of of)
{
	e->attr_timeout_s = fs_int_attr_timeout(fs, of);
	e->entry_timeout_s =
		of == FS_ENTRY_OTHERS_LOCK ? 0 : fs->cfg.entry_timeout_s;
}
