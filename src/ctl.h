/* ctl: the control files under <mnt>/.lockfs/: "status" (who this mount
 * is, where it talks to, its lease settings, and every lock it holds with
 * its state) and "metrics" (Prometheus text). No state of its own. */
#ifndef LOCKFS_CTL_H
#define LOCKFS_CTL_H

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
	int64_t lease_ms;
	int64_t heartbeat_ms;
	int64_t safe_period_ms;
};

int ctl_render_status(const struct ctl_info *info, struct lock_engine *e,
		      struct buf *out);
int ctl_render_metrics(const struct metrics *m, struct buf *out);

#endif
