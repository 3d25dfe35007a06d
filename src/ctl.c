/* ctl: renders the control files. Called from FUSE workers. */
#include "ctl.h"

#include <inttypes.h>
#include <string.h>

#include "clk.h"
#include "text.h"

struct status_walk {
	struct buf *out;
	int rc;
};

static void one_lock(void *arg, const struct lock_info *li)
{
	struct status_walk *w = arg;
	char acquired[25], age[32];

	if (w->rc)
		return;
	clk_format_rfc3339_ms(li->acquired_real_ms, acquired);
	text_format_seconds(li->last_ok_age_ms, age, sizeof(age));
	w->rc = buf_puts(w->out, "lock: key=");
	if (!w->rc)
		w->rc = text_escape_line(w->out, li->key, strlen(li->key));
	if (!w->rc)
		w->rc = buf_printf(
			w->out,
			" state=%s version=%s pid=%" PRId64 " pgid=%" PRId64
			" uid=%" PRId64 " cmd=%s acquired=%s renewed_ago=%s",
			lock_state_name(li->state),
			li->state == LOCK_LOST ? "-" : li->rvn, li->holder->pid,
			li->holder->pgid, li->holder->uid, li->holder->cmd,
			acquired, age);
	if (!w->rc && li->fence)
		w->rc = buf_printf(w->out, " fence=%" PRIu64, li->fence);
	if (!w->rc && li->state == LOCK_LOST)
		w->rc = buf_printf(w->out, " reason=\"%s\"",
				   lock_lost_reason_name(li->lost_reason));
	if (!w->rc)
		w->rc = buf_putc(w->out, '\n');
}

int ctl_render_status(const struct ctl_info *info, struct lock_engine *e,
		      struct buf *out)
{
	char lease[32], hb[32], safe[32];
	struct status_walk w = { out, 0 };

	text_format_seconds(info->lease_ms, lease, sizeof(lease));
	text_format_seconds(info->heartbeat_ms, hb, sizeof(hb));
	text_format_seconds(info->safe_period_ms, safe, sizeof(safe));
	w.rc = buf_printf(out,
			  "version: %s\nowner: %s\ntable: %s\nregion: %s\n"
			  "endpoint: %s\nprefix: %s\nhold: %s\nlease: %s\n"
			  "heartbeat: %s\nsafe_period: %s\nlocks_held: %zu\n",
			  LOCKFS_VERSION, info->owner, info->table,
			  info->region, info->endpoint, info->prefix,
			  info->hold, lease, hb, safe, lock_count_held(e));
	if (!w.rc)
		lock_each(e, one_lock, &w);
	return w.rc;
}

int ctl_render_metrics(const struct metrics *m, struct buf *out)
{
	return metrics_render(m, out);
}
