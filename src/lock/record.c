/* record: lifecycle of lock and directory records. No shared state. */
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void record_init(struct lock_record *r)
{
	memset(r, 0, sizeof(*r));
}

void record_reader_fini(struct record_reader *rd)
{
	free(rd->id);
	free(rd->host);
	free(rd->cmd);
	memset(rd, 0, sizeof(*rd));
}

static void readers_free(struct record_reader *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		record_reader_fini(&v[i]);
	free(v);
}

void record_fini(struct lock_record *r)
{
	free(r->key);
	free(r->owner);
	free(r->host);
	free(r->cmd);
	free(r->data);
	readers_free(r->readers, r->n_readers);
	free(r->writer_id);
	free(r->next_id);
	free(r->reserved_for);
	free(r->session);
	record_init(r);
}

static int reader_copy(struct record_reader *dst,
		       const struct record_reader *src)
{
	*dst = *src;
	dst->id = dst->host = dst->cmd = NULL;
	if (record_set_str(&dst->id, src->id) ||
	    record_set_str(&dst->host, src->host) ||
	    record_set_str(&dst->cmd, src->cmd)) {
		record_reader_fini(dst);
		return -ENOMEM;
	}
	return 0;
}

const struct record_reader *record_reader_find(const struct lock_record *r,
					       const char *id)
{
	for (size_t i = 0; id && i < r->n_readers; i++)
		if (r->readers[i].id && !strcmp(r->readers[i].id, id))
			return &r->readers[i];
	return NULL;
}

int record_reader_add(struct lock_record *r, const struct record_reader *rd)
{
	struct record_reader copy, *p;
	size_t i;

	if (!rd->id)
		return -EINVAL;
	if (reader_copy(&copy, rd))
		return -ENOMEM;
	for (i = 0; i < r->n_readers; i++) {
		if (!strcmp(r->readers[i].id, rd->id)) {
			record_reader_fini(&r->readers[i]);
			r->readers[i] = copy;
			return 0;
		}
	}
	if (r->n_readers >= RECORD_READERS_MAX) {
		record_reader_fini(&copy);
		return -E2BIG;
	}
	p = realloc(r->readers, (r->n_readers + 1) * sizeof(*p));
	if (!p) {
		record_reader_fini(&copy);
		return -ENOMEM;
	}
	r->readers = p;
	r->readers[r->n_readers++] = copy;
	return 0;
}

const char *record_holder_version(const struct lock_record *r,
				  const char *reader_id)
{
	const struct record_reader *rd;

	if (!reader_id)
		return r->rvn;
	rd = r->shared ? record_reader_find(r, reader_id) : NULL;
	return rd ? rd->v : "";
}

/* v_field: RECORD_MARK_V_MAX bytes. */
static int set_mark(char **id_field, char *v_field, const char *id,
		    const char *v)
{
	int rc = record_set_str(id_field, id);

	if (rc)
		return rc;
	v_field[0] = '\0';
	if (id && v) {
		size_t n = strlen(v);

		if (n >= RECORD_MARK_V_MAX)
			n = RECORD_MARK_V_MAX - 1;
		memcpy(v_field, v, n);
		v_field[n] = '\0';
	}
	return 0;
}

int record_set_writer(struct lock_record *r, const char *id, const char *v)
{
	return set_mark(&r->writer_id, r->writer_v, id, v);
}

int record_set_next(struct lock_record *r, const char *id, const char *v)
{
	return set_mark(&r->next_id, r->next_v, id, v);
}

int record_set_str(char **field, const char *value)
{
	char *s = NULL;

	if (value) {
		s = strdup(value);
		if (!s)
			return -ENOMEM;
	}
	free(*field);
	*field = s;
	return 0;
}

int record_set_data(struct lock_record *r, const void *data, size_t len)
{
	char *p = malloc(len + 1);

	if (!p)
		return -ENOMEM;
	if (len)
		memcpy(p, data, len);
	p[len] = '\0';
	free(r->data);
	r->data = p;
	r->data_len = len;
	r->has_data = true;
	return 0;
}

int record_copy(struct lock_record *dst, const struct lock_record *src)
{
	struct lock_record tmp = *src;
	int rc = 0;

	tmp.key = tmp.owner = tmp.host = tmp.cmd = tmp.data = NULL;
	tmp.has_data = false;
	tmp.data_len = 0;
	tmp.readers = NULL;
	tmp.n_readers = 0;
	tmp.writer_id = tmp.next_id = tmp.reserved_for = tmp.session = NULL;
	rc = record_set_str(&tmp.key, src->key);
	if (!rc)
		rc = record_set_str(&tmp.owner, src->owner);
	if (!rc)
		rc = record_set_str(&tmp.host, src->host);
	if (!rc)
		rc = record_set_str(&tmp.cmd, src->cmd);
	if (!rc && src->has_data)
		rc = record_set_data(&tmp, src->data, src->data_len);
	if (!rc)
		rc = record_set_str(&tmp.writer_id, src->writer_id);
	if (!rc)
		rc = record_set_str(&tmp.next_id, src->next_id);
	if (!rc)
		rc = record_set_str(&tmp.reserved_for, src->reserved_for);
	if (!rc)
		rc = record_set_str(&tmp.session, src->session);
	if (!rc && src->n_readers) {
		tmp.readers = calloc(src->n_readers, sizeof(*tmp.readers));
		if (!tmp.readers)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < src->n_readers; i++) {
			rc = reader_copy(&tmp.readers[i], &src->readers[i]);
			if (!rc)
				tmp.n_readers++;
		}
	}
	if (rc) {
		record_fini(&tmp);
		return rc;
	}
	record_fini(dst);
	*dst = tmp;
	return 0;
}

void dir_record_init(struct dir_record *d)
{
	memset(d, 0, sizeof(*d));
}

void dir_record_fini(struct dir_record *d)
{
	free(d->key);
	dir_record_init(d);
}

int dir_record_copy(struct dir_record *dst, const struct dir_record *src)
{
	char *key = src->key ? strdup(src->key) : NULL;

	if (src->key && !key)
		return -ENOMEM;
	dir_record_fini(dst);
	*dst = *src;
	dst->key = key;
	return 0;
}

bool record_session_key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;

	return n > strlen(RECORD_SESSION_PREFIX) &&
	       n <= RECORD_SESSION_KEY_MAX &&
	       !strncmp(key, RECORD_SESSION_PREFIX,
			strlen(RECORD_SESSION_PREFIX));
}
