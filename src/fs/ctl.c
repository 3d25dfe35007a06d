/* ctl: renders the control files. Called from FUSE workers. The locks of
 * the status file are copied out of the engine first (its mutex is held
 * only for the copy), then filtered by the reader's view (which may ask
 * DynamoDB about directories) and rendered escaped. */
#include "ctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "text.h"

struct status_line {
	char *key;
	enum lock_state state;
	enum lost_reason lost_reason;
	char rvn[RECORD_RVN_MAX];
	struct lock_holder holder;
	int64_t acquired_real_ms;
	int64_t last_ok_age_ms;
	uint64_t fence;
	bool shared;
	char *readers; /* shared: the reading mounts' owners, "," between */
};

struct status_copy {
	struct status_line *v;
	size_t n, cap;
	int rc;
};

/* Runs with the engine mutex held: copies only. */
static void copy_one(void *arg, const struct lock_info *li)
{
	struct status_copy *c = arg;
	struct status_line *l;

	if (c->rc)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct status_line *p = realloc(c->v, cap * sizeof(*p));

		if (!p) {
			c->rc = -ENOMEM;
			return;
		}
		c->v = p;
		c->cap = cap;
	}
	l = &c->v[c->n];
	memset(l, 0, sizeof(*l));
	l->key = strdup(li->key);
	if (!l->key) {
		c->rc = -ENOMEM;
		return;
	}
	l->state = li->state;
	l->lost_reason = li->lost_reason;
	text_copy(l->rvn, sizeof(l->rvn), li->rvn ? li->rvn : "");
	l->holder = *li->holder;
	l->acquired_real_ms = li->acquired_real_ms;
	l->last_ok_age_ms = li->last_ok_age_ms;
	l->fence = li->fence;
	l->shared = li->shared;
	if (li->shared && li->row && li->row->n_readers) {
		struct buf b = BUF_INIT;

		for (size_t i = 0; i < li->row->n_readers && !c->rc; i++)
			c->rc = buf_printf(&b, "%s%s", i ? "," : "",
					   li->row->readers[i].id);
		l->readers = c->rc ? NULL : strdup(buf_str(&b));
		buf_fini(&b);
	}
	c->n++;
}

static int put_escaped(struct buf *out, const char *s)
{
	return text_escape_line(out, s, strlen(s));
}

/* A value of a lock: line (a key, a command, readers): escaped as a line,
 * and a space as \x20, so that the line splits into its fields at spaces
 * whatever a key or a command holds (a key "x state=lost" cannot pass for
 * a field). */
static int put_field(struct buf *out, const char *s)
{
	struct buf e = BUF_INIT;
	int rc = put_escaped(&e, s);

	for (size_t i = 0; !rc && i < e.len; i++)
		rc = e.data[i] == ' ' ? buf_puts(out, "\\x20")
				      : buf_putc(out, e.data[i]);
	buf_fini(&e);
	return rc;
}

static int render_line(struct buf *out, const struct status_line *l)
{
	char acquired[25], age[32];
	int rc;

	clk_format_rfc3339_ms(l->acquired_real_ms, acquired);
	text_format_seconds(l->last_ok_age_ms, age, sizeof(age));
	rc = buf_puts(out, "lock: key=");
	if (!rc)
		rc = put_field(out, l->key);
	if (!rc)
		rc = buf_printf(out,
				" state=%s version=%s pid=%" PRId64
				" pgid=%" PRId64 " uid=%" PRId64 " cmd=",
				lock_state_name(l->state),
				l->state == LOCK_LOST ? "-" : l->rvn,
				l->holder.pid, l->holder.pgid, l->holder.uid);
	if (!rc)
		rc = put_field(out, l->holder.cmd);
	if (!rc)
		rc = buf_printf(out, " acquired=%s renewed_ago=%s", acquired,
				age);
	if (!rc && l->fence)
		rc = buf_printf(out, " fence=%" PRIu64, l->fence);
	if (!rc && l->shared) {
		/* Every mount reading it, as our last renewal saw the row. */
		rc = buf_puts(out, " mode=shared readers=");
		if (!rc)
			rc = put_field(out, l->readers ? l->readers : "-");
	}
	if (!rc && l->state == LOCK_LOST)
		rc = buf_printf(out, " reason=\"%s\"",
				lock_lost_reason_name(l->lost_reason));
	if (!rc)
		rc = buf_putc(out, '\n');
	return rc;
}

/* Session mode: the session that keeps this mount's exclusive locks. */
static int render_session(const struct lock_session_info *session,
			  struct buf *out)
{
	char ago[32];
	int rc = buf_puts(out, "session: ");

	if (!rc)
		rc = put_escaped(out, *session->key ? session->key : "-");
	text_format_seconds(session->renewed_ago_ms, ago, sizeof(ago));
	if (!rc)
		rc = buf_printf(
			out, "\nsession_state: %s\nsession_renewed_ago: %s\n",
			session->live ? "live" : "none", ago);
	return rc;
}

static int render_header(const struct ctl_info *info, size_t held,
			 size_t listed, const struct lock_session_info *session,
			 struct buf *out)
{
	char lease[32], hb[32], safe[32];
	const char *names[] = { "owner",  "table", "region", "endpoint",
				"prefix", "hold",  "release" };
	const char *vals[] = { info->owner,    info->table,  info->region,
			       info->endpoint, info->prefix, info->hold,
			       info->release };
	size_t i;
	int rc;

	text_format_seconds(info->lease_ms, lease, sizeof(lease));
	text_format_seconds(info->heartbeat_ms, hb, sizeof(hb));
	text_format_seconds(info->safe_period_ms, safe, sizeof(safe));
	rc = buf_printf(out, "version: %s\n", LOCKFS_VERSION);
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !rc; i++) {
		rc = buf_printf(out, "%s: ", names[i]);
		if (!rc)
			rc = put_escaped(out, vals[i] ? vals[i] : "");
		if (!rc)
			rc = buf_putc(out, '\n');
	}
	if (!rc)
		rc = buf_printf(out,
				"lease: %s\nheartbeat: %s\nsafe_period: %s\n"
				"locks_held: %zu\nlocks_listed: %zu\n",
				lease, hb, safe, held, listed);
	if (!rc && session->on)
		rc = render_session(session, out);
	return rc;
}

int ctl_render_status(const struct ctl_info *info, struct lock_engine *e,
		      struct buf *out)
{
	struct status_copy c = { 0 };
	struct lock_session_info session;
	size_t i, listed = 0;
	size_t held = lock_count_held(e);
	bool *show = NULL;
	int rc;

	lock_each(e, copy_one, &c);
	rc = c.rc;
	if (!rc && c.n && !(show = calloc(c.n, sizeof(*show))))
		rc = -ENOMEM;
	for (i = 0; i < c.n && !rc; i++) {
		show[i] = !info->may_see ||
			  info->may_see(info->may_see_arg, c.v[i].key,
					c.v[i].holder.uid);
		listed += show[i];
	}
	lock_session_info(e, &session);
	if (!rc)
		rc = render_header(info, held, listed, &session, out);
	for (i = 0; i < c.n && !rc; i++)
		if (show[i])
			rc = render_line(out, &c.v[i]);
	for (i = 0; i < c.n; i++) {
		free(c.v[i].key);
		free(c.v[i].readers);
	}
	free(c.v);
	free(show);
	return rc;
}

int ctl_render_metrics(const struct metrics *m, struct buf *out)
{
	return metrics_render(m, out);
}
