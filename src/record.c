/* record: lifecycle of lock and directory records. No shared state. */
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void record_init(struct lock_record *r)
{
	memset(r, 0, sizeof(*r));
}

void record_fini(struct lock_record *r)
{
	free(r->key);
	free(r->owner);
	free(r->host);
	free(r->cmd);
	free(r->data);
	record_init(r);
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
	rc = record_set_str(&tmp.key, src->key);
	if (!rc)
		rc = record_set_str(&tmp.owner, src->owner);
	if (!rc)
		rc = record_set_str(&tmp.host, src->host);
	if (!rc)
		rc = record_set_str(&tmp.cmd, src->cmd);
	if (!rc && src->has_data)
		rc = record_set_data(&tmp, src->data, src->data_len);
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

/* store_lookup lives with the records it holds. */
#include "store.h"

void store_lookup_init(struct store_lookup *l)
{
	memset(l, 0, sizeof(*l));
}

void store_lookup_fini(struct store_lookup *l)
{
	record_fini(&l->lock);
	dir_record_fini(&l->dir);
	store_lookup_init(l);
}
