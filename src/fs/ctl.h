/* ctl: the control files under <mnt>/.lockfs/: "status" (who this mount
 * is, where it talks to, its lease settings, and the locks it holds that
 * the reader may see, with their state) and "metrics" (Prometheus text,
 * counts only). Every string from users is escaped. No state of its own. */
#ifndef LOCKFS_CTL_H
#define LOCKFS_CTL_H

#include <stdbool.h>

#include "buf.h"
#include "lock.h"
#include "metrics.h"

struct ctl_info {
	const char *owner;
	const char *table;
	const char *region;
	const char *endpoint;
	const char *prefix;
	const char *hold;
	const char *release; /* sync or async (-o release=) */
	int64_t lease_ms;
	int64_t heartbeat_ms;
	int64_t safe_period_ms;
	/* Whether the reader may see the lock of full key held by
	 * holder_uid (as ls would show it); NULL: every lock. Called
	 * without the engine's mutex; it may make requests. */
	bool (*may_see)(void *arg, const char *key, int64_t holder_uid);
	void *may_see_arg;
};

int ctl_render_status(const struct ctl_info *info, struct lock_engine *e,
		      struct buf *out);
int ctl_render_metrics(const struct metrics *m, struct buf *out);

#endif
