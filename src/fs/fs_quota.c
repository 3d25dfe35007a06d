/* fs_quota: per-uid counters of one mount and their limits (see
 * fs_quota.h). Threads: any FUSE worker, and the flk wait workers through
 * fs_on_granted; q->mu guards the maps and every counter. */
#include "fs_quota.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "clk.h"
#include "log.h"
#include "map.h"

#define TAG	   "fs"
#define LOG_GAP_MS 60000

struct uid_use {
	uint32_t used[FSQ_N]; /* FSQ_LOCKS unused: the engine counts those */
	uint32_t pending;     /* acquires in flight */
	int64_t logged_mono_ms[FSQ_N];
};

struct fs_quota {
	struct fs_quota_limits lim;
	const struct clk *clk; /* times the log lines (the host's) */
	pthread_mutex_t mu;
	struct imap uids; /* uid -> struct uid_use */
	struct smap dirs; /* full key -> uid + 1 (as a pointer) */
};

static const char *const option_names[FSQ_N] = {
	"max_locks_per_user",
	"max_waiters_per_user",
	"max_dirs_per_user",
	"max_opens_per_user",
};

const char *fs_quota_option(enum fs_quota_res r)
{
	return r < FSQ_N ? option_names[r] : "?";
}

struct fs_quota *fs_quota_new(const struct fs_quota_limits *lim,
			      const struct clk *clk)
{
	struct fs_quota *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	if (lim)
		q->lim = *lim;
	q->clk = clk;
	pthread_mutex_init(&q->mu, NULL);
	imap_init(&q->uids);
	smap_init(&q->dirs);
	return q;
}

static void free_use_cb(void *arg, uint64_t key, void *value)
{
	free(value);
}

void fs_quota_free(struct fs_quota *q)
{
	if (!q)
		return;
	imap_each(&q->uids, free_use_cb, NULL);
	imap_fini(&q->uids);
	smap_fini(&q->dirs);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static bool limited(const struct fs_quota *q, uint32_t uid, enum fs_quota_res r)
{
	return uid != 0 && q->lim.max[r] != 0;
}

/* mu held. The counters of uid, created when create is set. */
static struct uid_use *use_of(struct fs_quota *q, uint32_t uid, bool create)
{
	struct uid_use *u = imap_get(&q->uids, uid);

	if (!u && create) {
		u = calloc(1, sizeof(*u));
		if (u && imap_put(&q->uids, uid, u)) {
			free(u);
			u = NULL;
		}
	}
	return u;
}

/* mu held. Frees the counters of uid once they are all zero. */
static void maybe_drop(struct fs_quota *q, uint32_t uid, struct uid_use *u)
{
	int i;

	if (u->pending)
		return;
	for (i = 0; i < FSQ_N; i++)
		if (u->used[i])
			return;
	free(imap_del(&q->uids, uid));
}

/* mu held. Whether to log that uid reached r now (once a minute). */
static bool log_due(struct fs_quota *q, struct uid_use *u, enum fs_quota_res r)
{
	return log_gap_due(&u->logged_mono_ms[r], clk_mono_ms(q->clk),
			   LOG_GAP_MS);
}

static void log_refused(uint32_t uid, enum fs_quota_res r, uint32_t max)
{
	log_warn(TAG,
		 "uid %u reached -o %s=%u: request refused with EDQUOT "
		 "(said once a minute)",
		 uid, fs_quota_option(r), max);
}

int fs_quota_take(struct fs_quota *q, uint32_t uid, enum fs_quota_res r)
{
	struct uid_use *u;
	bool say = false;
	int rc = 0;

	if (!q || r >= FSQ_N || !limited(q, uid, r))
		return 0;
	pthread_mutex_lock(&q->mu);
	u = use_of(q, uid, true);
	if (!u) {
		rc = -ENOMEM;
	} else if (u->used[r] >= q->lim.max[r]) {
		rc = -EDQUOT;
		say = log_due(q, u, r);
	} else {
		u->used[r]++;
	}
	pthread_mutex_unlock(&q->mu);
	if (say)
		log_refused(uid, r, q->lim.max[r]);
	return rc;
}

void fs_quota_give(struct fs_quota *q, uint32_t uid, enum fs_quota_res r)
{
	struct uid_use *u;

	if (!q || r >= FSQ_N || !limited(q, uid, r))
		return;
	pthread_mutex_lock(&q->mu);
	u = use_of(q, uid, false);
	if (u && u->used[r]) {
		u->used[r]--;
		maybe_drop(q, uid, u);
	}
	pthread_mutex_unlock(&q->mu);
}

int fs_quota_lock_begin(struct fs_quota *q, uint32_t uid,
			size_t (*count)(void *arg, uint32_t uid), void *arg)
{
	const uint32_t max = q ? q->lim.max[FSQ_LOCKS] : 0;
	struct uid_use *u;
	bool say = false;
	size_t held;
	int rc = 0;

	if (!q || !limited(q, uid, FSQ_LOCKS))
		return 0;
	pthread_mutex_lock(&q->mu);
	u = use_of(q, uid, true);
	if (!u) {
		pthread_mutex_unlock(&q->mu);
		return -ENOMEM;
	}
	u->pending++; /* this acquire; also keeps u alive while mu is dropped */
	pthread_mutex_unlock(&q->mu);
	held = count(arg, uid);
	pthread_mutex_lock(&q->mu);
	if (held + u->pending > max) {
		u->pending--;
		rc = -EDQUOT;
		say = log_due(q, u, FSQ_LOCKS);
		maybe_drop(q, uid, u);
	}
	pthread_mutex_unlock(&q->mu);
	if (say)
		log_refused(uid, FSQ_LOCKS, max);
	return rc;
}

void fs_quota_lock_end(struct fs_quota *q, uint32_t uid)
{
	struct uid_use *u;

	if (!q || !limited(q, uid, FSQ_LOCKS))
		return;
	pthread_mutex_lock(&q->mu);
	u = use_of(q, uid, false);
	if (u) {
		if (u->pending)
			u->pending--;
		maybe_drop(q, uid, u);
	}
	pthread_mutex_unlock(&q->mu);
}

int fs_quota_dir_made(struct fs_quota *q, uint32_t uid, const char *key)
{
	int rc;

	if (!q || !limited(q, uid, FSQ_DIRS))
		return 0;
	pthread_mutex_lock(&q->mu);
	rc = smap_put(&q->dirs, key, (void *)(uintptr_t)((uint64_t)uid + 1));
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void fs_quota_dir_removed(struct fs_quota *q, const char *key)
{
	uintptr_t v;

	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	v = (uintptr_t)smap_del(&q->dirs, key);
	pthread_mutex_unlock(&q->mu);
	if (v)
		fs_quota_give(q, (uint32_t)(v - 1), FSQ_DIRS);
}
