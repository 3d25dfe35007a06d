/* store_mem_dir: the in-memory store's directory rows (put, mode,
 * delete) and the listing of rows by prefix, with the conditions of the
 * DynamoDB store. Any thread; each operation runs under the store's mutex
 * (mem_op_begin, mem_op_end); a listing calls back without it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_mem_int.h"

int mem_put_dir(struct store *s, const struct dir_record *d,
		const char *expect_rvn, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *nr, *lk;
	int land, rc = mem_op_begin(m, SMEM_PUT_DIR, 1, d->key, &lk, &land);

	if (rc)
		goto out;
	if (mem_find_row(m, d->key, 1) ||
	    (lk && (!expect_rvn || strcmp(lk->lock.rvn, expect_rvn)))) {
		rc = -EEXIST;
		goto out;
	}
	if (lk) {
		/* A takeover of a lock seen expired: the name's item is a
		 * directory marker now. */
		mem_remove_row(m, lk);
	}
	nr = calloc(1, sizeof(*nr));
	rc = nr ? dir_record_copy(&nr->dir, d) : -ENOMEM;
	if (rc) {
		free(nr);
		goto out;
	}
	nr->is_dir = 1;
	rc = mem_link_row(m, nr);
	if (rc)
		mem_free_row(nr);
out:
	return mem_op_end(m, rc, land);
}

int mem_set_dir_mode(struct store *s, const char *key, uint32_t mode,
		     int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_PUT_DIR, 1, NULL, &r, &land);

	if (!rc) {
		r = mem_find_row(m, key, 1);
		if (r)
			r->dir.mode = mode & 07777;
		else
			rc = -ENOENT;
	}
	return mem_op_end(m, rc, land);
}

int mem_delete_dir(struct store *s, const char *key, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_DELETE_DIR, 1, NULL, &r, &land);

	if (!rc) {
		r = mem_find_row(m, key, 1);
		if (r)
			mem_remove_row(m, r);
		else
			rc = -ENOENT;
	}
	return mem_op_end(m, rc, land);
}

int mem_list(struct store *s, const char *prefix, int64_t deadline,
	     store_row_fn fn, void *arg)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r, *copy = NULL, *nr;
	size_t plen = strlen(prefix);
	int land, rc = mem_op_begin(m, SMEM_LIST, 0, NULL, &r, &land);

	/* Copy the matching rows so fn runs without the mutex. */
	for (r = m->rows; r && !rc; r = r->next) {
		const char *k = r->is_dir ? r->dir.key : r->lock.key;

		if (strncmp(k, prefix, plen))
			continue;
		nr = calloc(1, sizeof(*nr));
		if (!nr) {
			rc = -ENOMEM;
			break;
		}
		nr->is_dir = r->is_dir;
		rc = r->is_dir ? dir_record_copy(&nr->dir, &r->dir)
			       : record_copy(&nr->lock, &r->lock);
		nr->next = copy;
		copy = nr;
	}
	pthread_mutex_unlock(&m->mu);
	for (r = copy; r && !rc; r = r->next) {
		struct store_row row = {
			.kind = r->is_dir ? STORE_ROW_DIR : STORE_ROW_LOCK,
			.lock = &r->lock,
			.dir = &r->dir,
		};

		rc = fn(arg, &row);
		if (rc > 0)
			rc = 0, r = NULL;
		if (!r)
			break;
	}
	while (copy) {
		nr = copy->next;
		mem_free_row(copy);
		copy = nr;
	}
	return rc;
}
