/* render: lock text and xattr values from a lock record. Every value is
 * escaped (text_escape_line): keys, owners, commands and data come from
 * other users and other clients. No state. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "clk.h"
#include "text.h"

const char *render_state_name(enum render_state st)
{
	switch (st) {
	case RENDER_HELD:
		return "held";
	case RENDER_EXPIRED:
		return "expired";
	case RENDER_LOST:
		return "lost";
	case RENDER_RELEASED:
		return "released";
	}
	return "unknown";
}

/* Times shown are 1970-01-01 to 9999-12-31 (RFC 3339 has four-digit years);
 * a row with a time outside (a client that wrote garbage) shows no such
 * field rather than a wrapped date. */
#define RENDER_REAL_MS_MAX 253402300799999LL

static bool time_ok(int64_t real_ms)
{
	return real_ms > 0 && real_ms <= RENDER_REAL_MS_MAX;
}

static int put_time(struct buf *out, int64_t real_ms)
{
	char t[25];

	if (!time_ok(real_ms))
		return -ENODATA;
	clk_format_rfc3339_ms(real_ms, t);
	return buf_puts(out, t);
}

/* Each writer appends one field's raw value, or returns -ENODATA. */
typedef int (*field_fn)(const struct lock_record *r, enum render_state st,
			struct buf *out);

static int f_key(const struct lock_record *r, enum render_state st,
		 struct buf *out)
{
	return r->key ? buf_puts(out, r->key) : -ENODATA;
}

static int f_state(const struct lock_record *r, enum render_state st,
		   struct buf *out)
{
	return buf_puts(out, render_state_name(st));
}

static int f_owner(const struct lock_record *r, enum render_state st,
		   struct buf *out)
{
	return r->owner ? buf_puts(out, r->owner) : -ENODATA;
}

static int f_version(const struct lock_record *r, enum render_state st,
		     struct buf *out)
{
	return r->rvn[0] ? buf_puts(out, r->rvn) : -ENODATA;
}

static int f_fence(const struct lock_record *r, enum render_state st,
		   struct buf *out)
{
	return r->fence ? buf_printf(out, "%" PRIu64, r->fence) : -ENODATA;
}

static int f_lease(const struct lock_record *r, enum render_state st,
		   struct buf *out)
{
	char s[32];

	if (r->lease_ms <= 0 || r->lease_assumed) /* left out, not invented */
		return -ENODATA;
	text_format_seconds(r->lease_ms, s, sizeof(s));
	return buf_puts(out, s);
}

static int f_acquired(const struct lock_record *r, enum render_state st,
		      struct buf *out)
{
	return r->has_lockfs && r->acquired_real_ms
		       ? put_time(out, r->acquired_real_ms)
		       : -ENODATA;
}

static int f_heartbeat(const struct lock_record *r, enum render_state st,
		       struct buf *out)
{
	return r->has_lockfs && r->heartbeat_real_ms
		       ? put_time(out, r->heartbeat_real_ms)
		       : -ENODATA;
}

static int f_expires(const struct lock_record *r, enum render_state st,
		     struct buf *out)
{
	int64_t expires;

	/* Both come from the table: their sum may not fit (issue 13). */
	if (!r->has_lockfs || !time_ok(r->heartbeat_real_ms) ||
	    r->lease_ms <= 0 || r->lease_assumed ||
	    __builtin_add_overflow(r->heartbeat_real_ms, r->lease_ms, &expires))
		return -ENODATA;
	return put_time(out, expires);
}

static int f_session(const struct lock_record *r, enum render_state st,
		     struct buf *out)
{
	return r->session ? buf_puts(out, r->session) : -ENODATA;
}

static int f_mode(const struct lock_record *r, enum render_state st,
		  struct buf *out)
{
	return r->shared ? buf_puts(out, "shared") : -ENODATA;
}

static int f_readers(const struct lock_record *r, enum render_state st,
		     struct buf *out)
{
	return r->shared ? buf_printf(out, "%zu", r->n_readers) : -ENODATA;
}

/* One reading mount of a shared row: who holds it there. */
static int put_reader(struct buf *out, const struct record_reader *rd)
{
	int rc = buf_printf(
		out, "host=%s pid=%" PRId64 " uid=%" PRId64 " cmd=%s owner=%s",
		rd->host ? rd->host : "?", rd->pid, rd->uid,
		rd->cmd ? rd->cmd : "?", rd->id ? rd->id : "?");

	if (!rc && time_ok(rd->heartbeat_real_ms)) {
		rc = buf_puts(out, " heartbeat=");
		if (!rc)
			rc = put_time(out, rd->heartbeat_real_ms);
	}
	if (!rc && rd->fence)
		rc = buf_printf(out, " fence=%" PRIu64, rd->fence);
	return rc;
}

/* The holder; of a shared row, every reader (the text gives each its own
 * line, an xattr joins them with "; "). */
static int f_holder(const struct lock_record *r, enum render_state st,
		    struct buf *out)
{
	int rc = 0;

	if (r->shared) {
		if (!r->n_readers)
			return -ENODATA;
		for (size_t i = 0; !rc && i < r->n_readers; i++) {
			if (i)
				rc = buf_puts(out, "; ");
			if (!rc)
				rc = put_reader(out, &r->readers[i]);
		}
		return rc;
	}
	if (!r->has_lockfs)
		return -ENODATA;
	return buf_printf(out, "host=%s pid=%" PRId64 " uid=%" PRId64 " cmd=%s",
			  r->host ? r->host : "?", r->pid, r->uid,
			  r->cmd ? r->cmd : "?");
}

static int f_writer_waiting(const struct lock_record *r, enum render_state st,
			    struct buf *out)
{
	return r->shared && r->writer_id ? buf_puts(out, r->writer_id)
					 : -ENODATA;
}

static int f_data(const struct lock_record *r, enum render_state st,
		  struct buf *out)
{
	return r->has_data ? buf_append(out, r->data, r->data_len) : -ENODATA;
}

static const struct {
	const char *name;
	field_fn fn;
} fields[] = {
	{ "key", f_key },
	{ "state", f_state },
	{ "mode", f_mode },
	{ "owner", f_owner },
	{ "version", f_version },
	{ "fence", f_fence },
	{ "lease", f_lease },
	{ "acquired", f_acquired },
	{ "heartbeat", f_heartbeat },
	{ "expires", f_expires },
	{ "session", f_session },
	{ "readers", f_readers },
	{ "holder", f_holder },
	{ "writer_waiting", f_writer_waiting },
	{ "data", f_data },
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

int render_lock_text(const struct lock_record *rec, enum render_state st,
		     struct buf *out)
{
	struct buf v = BUF_INIT;
	size_t i;
	int rc = 0;

	for (i = 0; i < N_FIELDS && rc >= 0; i++) {
		if (fields[i].fn == f_holder && rec->shared) {
			/* One line per reading mount. */
			for (size_t j = 0; !rc && j < rec->n_readers; j++) {
				buf_reset(&v);
				rc = put_reader(&v, &rec->readers[j]);
				if (!rc)
					rc = buf_puts(out, "holder: ");
				if (!rc)
					rc = text_escape_line(out, v.data,
							      v.len);
				if (!rc)
					rc = buf_putc(out, '\n');
			}
			continue;
		}
		buf_reset(&v);
		rc = fields[i].fn(rec, st, &v);
		if (rc == -ENODATA) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		rc = buf_printf(out, "%s: ", fields[i].name);
		if (!rc)
			rc = text_escape_line(out, v.data, v.len);
		if (!rc)
			rc = buf_putc(out, '\n');
	}
	buf_fini(&v);
	return rc;
}

int render_field(const struct lock_record *rec, enum render_state st,
		 const char *field, struct buf *out)
{
	struct buf v = BUF_INIT;
	size_t i;
	int rc = -EINVAL;

	for (i = 0; i < N_FIELDS; i++) {
		if (strcmp(fields[i].name, field))
			continue;
		/* Escaped as in the text: getfattr prints values raw. */
		rc = fields[i].fn(rec, st, &v);
		if (!rc)
			rc = text_escape_line(out, v.data, v.len);
		break;
	}
	buf_fini(&v);
	return rc;
}

int render_xattr_names(const struct lock_record *rec, struct buf *out)
{
	struct buf v = BUF_INIT;
	size_t i;
	int rc = 0;

	for (i = 0; i < N_FIELDS && !rc; i++) {
		buf_reset(&v);
		rc = fields[i].fn(rec, RENDER_HELD, &v);
		if (rc == -ENODATA) {
			rc = 0;
			continue;
		}
		if (!rc)
			rc = buf_printf(out, "%s%s", RENDER_XATTR_PREFIX,
					fields[i].name);
		if (!rc)
			rc = buf_putc(out, '\0');
	}
	buf_fini(&v);
	return rc;
}
