/* fs_caller: who asks, as the machine (struct host) describes a FUSE
 * request's pid: the holder its acquire records (process group, session,
 * command), the lock its group lost, whether it acts as a lock's holder,
 * and how many locks a uid holds (for fs_quota). Threads: FUSE workers;
 * no state. */
#include "fs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* The caller's process group (0 when unknown) and its leader's start. */
static int64_t ctx_pgid(struct fs *fs, const struct fs_ctx *ctx,
			uint64_t *start)
{
	struct host_proc p;

	*start = 0;
	if (!ctx || ctx->pid <= 0)
		return 0;
	host_proc(fs->host, ctx->pid, &p);
	if (p.pgid <= 0)
		return 0;
	*start = p.pgid_start;
	return p.pgid;
}

/* A lock the caller's process group lost and has not let go of. */
struct lock *fs_int_lost_of_caller(struct fs *fs, const struct fs_ctx *ctx,
				   const char *rel)
{
	uint64_t start;
	int64_t pgid;
	struct lock *lk;
	char *full;

	/* The common case: no lost lock at all, and no /proc read. */
	if (!lock_any_lost(fs->eng))
		return NULL;
	pgid = ctx_pgid(fs, ctx, &start);
	if (!pgid)
		return NULL;
	full = fs_int_full_key(fs, rel);
	lk = full ? lock_find_lost(fs->eng, full, pgid, start) : NULL;
	free(full);
	return lk;
}

/* What rel is to the caller whose group lost a lock of that name: the
 * lost lock, from memory, whatever the row is now (gone, the stale row of
 * a lost session, another owner's) and without reading it (DynamoDB out of
 * reach is what loses locks): the group sees its lost file until it
 * removes it, unless this mount holds the key again. Returns whether r was
 * replaced (a failed copy leaves r as it was). */
bool fs_int_lost_view(struct fs *fs, const struct fs_ctx *ctx, const char *rel,
		      struct resolved *r)
{
	struct lock *lost = fs_int_lost_of_caller(fs, ctx, rel), *held;
	struct resolved mine;
	bool done = false;
	char *full;

	if (!lost)
		return false;
	full = fs_int_full_key(fs, rel);
	held = full ? lock_find(fs->eng, full) : NULL;
	free(full);
	if (held) {
		lock_unref(fs->eng, held);
		lock_unref(fs->eng, lost);
		return false;
	}
	fs_int_resolved_init(&mine);
	if (!lock_snapshot(fs->eng, lost, &mine.rec, NULL)) {
		mine.kind = K_FILE;
		mine.ours = true;
		mine.state = RENDER_LOST;
		fs_int_resolved_fini(r);
		*r = mine;
		done = true;
	} else {
		fs_int_resolved_fini(&mine);
	}
	lock_unref(fs->eng, lost);
	return done;
}

/* The holder a request of ctx makes, as the machine describes the
 * caller: its process (FUSE names the calling thread: a program that
 * acquires from a thread of its own is held, shown and watched by its
 * process, which outlives that thread), group (and the leader's start),
 * session and command. */
void fs_int_holder_from_ctx(struct fs *fs, const struct fs_ctx *ctx,
			    uint32_t mode, struct lock_holder *h)
{
	struct host_proc who;

	memset(h, 0, sizeof(*h));
	h->pid = ctx->pid;
	h->uid = ctx->uid;
	h->gid = ctx->gid;
	h->mode = mode & 07777;
	host_proc(fs->host, ctx->pid, &who);
	if (who.tgid > 0)
		h->pid = who.tgid;
	h->pgid = who.pgid;
	h->sid = who.sid;
	h->pgid_start = who.pgid > 0 ? who.pgid_start : 0;
	snprintf(h->cmd, sizeof(h->cmd), "%s", who.comm);
	if (!h->cmd[0])
		strcpy(h->cmd, "?");
	/* The command name is shown on one line and stored as a string. */
	for (char *p = h->cmd; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (!text_utf8_valid(h->cmd, strlen(h->cmd)))
		strcpy(h->cmd, "?");
}

/* True if ctx may act as the holder of lk on this mount: the uid that
 * acquired it, or root. */
bool fs_int_is_holder(const struct fs_ctx *ctx, struct lock *lk)
{
	return ctx->uid == 0 || (int64_t)ctx->uid == lock_holder(lk)->uid;
}

/* The count for fs_quota_lock_begin: the locks uid holds here (one
 * look-up: a caller at its limit may retry as often as it likes without
 * costing other locks anything). */
size_t fs_int_count_held(void *arg, uint32_t uid)
{
	return lock_count_held_by(arg, uid);
}
