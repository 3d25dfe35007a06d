/* fuzz_core_render: the text of a lock file, its xattr names and
 * render_field on lock records of any content (every number in its whole
 * type's range, strings of any bytes), for every state. Input: 64 bytes of
 * numbers and flags (missing bytes are 0), then NUL-separated key, owner,
 * version, host, cmd, data and a field name to look up. Checked: the text
 * is valid UTF-8, one "name: value" line per field, known fields in order,
 * each at most once; the xattr list names exactly the fields the text
 * shows, and render_field of each gives exactly the value its line shows
 * (escaped alike); any other field name is -EINVAL, a field the row lacks
 * -ENODATA. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "render.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const field_names[] = {
	"key",	   "state",  "mode",	       "owner",	    "version",
	"fence",   "lease",  "acquired",       "heartbeat", "expires",
	"readers", "holder", "writer_waiting", "data",
};
#define HOLDER	11 /* one line per reading mount on a shared row */
#define N_NAMES (sizeof(field_names) / sizeof(field_names[0]))

static int field_index(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < N_NAMES; i++)
		if (strlen(field_names[i]) == len &&
		    !memcmp(field_names[i], name, len))
			return (int)i;
	return -1;
}

static int64_t take_i64(const uint8_t **p, size_t *left)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < 8; i++) {
		v = v << 8 | (*left ? **p : 0);
		if (*left) {
			(*p)++;
			(*left)--;
		}
	}
	return (int64_t)v;
}

/* The text's value of field i, escaped, or NULL when it has no line. */
static const char *text_value(const char *text, int i, size_t *len)
{
	const char *line = text;
	size_t nl = strlen(field_names[i]);

	while (*line) {
		const char *end = strchr(line, '\n');

		if (!strncmp(line, field_names[i], nl) && line[nl] == ':' &&
		    line[nl + 1] == ' ') {
			*len = (size_t)(end - line) - nl - 2;
			return line + nl + 2;
		}
		line = end + 1;
	}
	return NULL;
}

static void check_text(const char *text, size_t len, bool present[N_NAMES])
{
	const char *line = text;
	int last = -1;

	if (!text_utf8_valid(text, len))
		abort();
	while (*line) {
		const char *end = strchr(line, '\n');
		const char *colon;
		int i;

		if (!end)
			abort(); /* every line ends */
		colon = memchr(line, ':', (size_t)(end - line));
		if (!colon || colon[1] != ' ')
			abort();
		i = field_index(line, (size_t)(colon - line));
		if (i < last || (i == last && i != HOLDER) || i < 0)
			abort(); /* known fields, in order, once (holder: once
				  * per reader) */
		present[i] = true;
		last = i;
		line = end + 1;
	}
	if (!present[1])
		abort(); /* state is always shown */
}

static void check_xattrs(const struct lock_record *r, enum render_state st,
			 const char *text, const bool present[N_NAMES])
{
	struct buf names = BUF_INIT, v = BUF_INIT;
	size_t plen = strlen(RENDER_XATTR_PREFIX), off, n_listed = 0, i;
	bool listed[N_NAMES] = { false };

	if (render_xattr_names(r, &names))
		abort();
	for (off = 0; off < names.len;) {
		const char *nm = names.data + off;
		size_t nl = strlen(nm);
		int k;

		if (strncmp(nm, RENDER_XATTR_PREFIX, plen))
			abort();
		k = field_index(nm + plen, nl - plen);
		if (k < 0 || listed[k])
			abort();
		listed[k] = true;
		n_listed++;
		off += nl + 1;
	}
	for (i = 0; i < N_NAMES; i++) {
		const char *tv;
		size_t tl = 0;
		int rc;

		buf_reset(&v);
		rc = render_field(r, st, field_names[i], &v);
		/* The xattr list is the text's fields (state aside: always
		 * there, in either). */
		if (i != 1 && listed[i] != present[i])
			abort();
		if (rc == -ENODATA) {
			if (present[i])
				abort();
			continue;
		}
		if (rc || !present[i])
			abort();
		tv = text_value(text, (int)i, &tl);
		if (i == HOLDER && r->shared && r->n_readers > 1) {
			/* the readers' lines joined by "; ": the first one
			 * starts it */
			if (!tv || v.len < tl || memcmp(buf_str(&v), tv, tl))
				abort();
			continue;
		}
		if (!tv || v.len != tl || memcmp(buf_str(&v), tv, tl))
			abort(); /* the xattr is exactly the line's value */
	}
	(void)n_listed;
	buf_fini(&names);
	buf_fini(&v);
}

static void render_all(const struct lock_record *r, const char *query)
{
	static const enum render_state states[] = { RENDER_HELD, RENDER_EXPIRED,
						    RENDER_LOST,
						    RENDER_RELEASED };
	struct buf text = BUF_INIT, v = BUF_INIT;
	size_t s;
	int rc;

	for (s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
		bool present[N_NAMES] = { false };

		buf_reset(&text);
		if (render_lock_text(r, states[s], &text))
			abort();
		check_text(buf_str(&text), text.len, present);
		if (states[s] == RENDER_HELD)
			check_xattrs(r, states[s], buf_str(&text), present);
		if (!render_state_name(states[s])[0])
			abort();
	}
	rc = render_field(r, RENDER_HELD, query, &v);
	if (field_index(query, strlen(query)) < 0 ? rc != -EINVAL
						  : (rc && rc != -ENODATA))
		abort();
	buf_fini(&v);
	buf_fini(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t left = size < 64 ? size : 64;
	struct fz_part parts[7];
	struct lock_record r;
	char *query = NULL;
	size_t np, i;
	unsigned flags;

	record_init(&r);
	r.lease_ms = take_i64(&p, &left);
	r.expiry_real_s = take_i64(&p, &left);
	r.pid = take_i64(&p, &left);
	r.uid = take_i64(&p, &left);
	r.gid = take_i64(&p, &left);
	r.acquired_real_ms = take_i64(&p, &left);
	r.heartbeat_real_ms = take_i64(&p, &left);
	r.fence = (uint64_t)take_i64(&p, &left);
	flags = size > 64 ? data[64] : 0;
	r.has_lockfs = flags & 1;
	r.mode = (uint32_t)flags << 3;
	np = size > 65 ? fz_split_n(data + 65, size - 65, "", 1, parts, 7) : 0;
	for (i = 0; i < np; i++) {
		char *s = fz_str(&parts[i]);

		if (!s)
			goto out;
		switch (i) {
		case 0:
			r.key = s;
			break;
		case 1:
			r.owner = s;
			break;
		case 2:
			text_copy(r.rvn, sizeof(r.rvn), s);
			free(s);
			break;
		case 3:
			r.host = s;
			break;
		case 4:
			r.cmd = s;
			break;
		case 5:
			/* data is bytes: keep the part whole, NULs included */
			if (record_set_data(&r, parts[i].p, parts[i].n))
				abort();
			free(s);
			break;
		default:
			query = s;
			break;
		}
	}
	if (flags & 2) {
		r.has_data =
			false; /* data may be absent, or present and empty */
	}
	if (flags & 4) {
		/* Held shared: up to three readers made of the same parts,
		 * and a writer's mark. */
		unsigned n = (flags >> 3) & 3, k;

		r.shared = true;
		for (k = 0; k < n; k++) {
			struct record_reader rd = {
				.id = r.owner ? r.owner : "id",
				.host = r.host,
				.pid = r.pid,
				.uid = r.uid,
				.cmd = r.cmd,
				.heartbeat_real_ms = r.heartbeat_real_ms,
				.acquired_real_ms = r.acquired_real_ms,
				.fence = r.fence,
			};
			char id[32];

			if (k) {
				snprintf(id, sizeof(id), "%s%u",
					 r.owner ? "" : "id", k);
				rd.id = id;
			}
			if (record_reader_add(&r, &rd))
				abort();
		}
		if (flags & 32)
			record_set_str(&r.writer_id, r.key ? r.key : "w");
	}
	render_all(&r, query ? query : "owner");
out:
	free(query);
	record_fini(&r);
	return 0;
}
