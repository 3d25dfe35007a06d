/* store_mem_share: the in-memory store's shared rows (join, leave,
 * eviction, writer marks), with the conditions of the DynamoDB store. Any
 * thread; each operation runs under the store's mutex (mem_op_begin,
 * mem_op_end). */
#include <errno.h>
#include <string.h>

#include "store_mem_int.h"
#include "text.h"

/* mu held. Removes the entry of id (present). */
static void drop_reader(struct lock_record *r, const char *id)
{
	for (size_t i = 0; i < r->n_readers; i++) {
		if (strcmp(r->readers[i].id, id))
			continue;
		record_reader_fini(&r->readers[i]);
		r->readers[i] = r->readers[--r->n_readers];
		return;
	}
}

/* mu held. Whether r is a row and reader_id holds it at version v. */
static bool holder_at(struct mem_row *r, const char *reader_id, const char *v)
{
	return r && !strcmp(record_holder_version(&r->lock, reader_id), v);
}

int mem_join_shared(struct store *s, const struct lock_record *rec,
		    bool raise_lease, int64_t deadline, struct lock_record *cur,
		    bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc;

	if (!rec->shared || rec->n_readers != 1)
		return -EINVAL;
	rc = mem_op_begin(m, SMEM_SHARE, 1, rec->key, &r, &land);
	if (rc)
		goto out;
	if (!r || !r->lock.shared || r->lock.writer_id ||
	    (raise_lease ? r->lock.lease_ms >= rec->lease_ms
			 : r->lock.lease_ms < rec->lease_ms)) {
		rc = mem_refuse(r, cur, has_cur);
		goto out;
	}
	rc = record_reader_add(&r->lock, &rec->readers[0]);
	if (rc)
		goto out;
	text_copy(r->lock.rvn, sizeof(r->lock.rvn), rec->rvn);
	r->lock.expiry_real_s = rec->expiry_real_s;
	if (raise_lease)
		r->lock.lease_ms = rec->lease_ms;
out:
	return mem_op_end(m, rc, land);
}

int mem_leave_shared(struct store *s, const char *key, const char *reader_id,
		     const char *expect_v, const char *new_rvn,
		     int64_t deadline, struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && !holder_at(r, reader_id, expect_v)) {
		rc = mem_refuse(r, cur, has_cur);
	} else if (!rc) {
		drop_reader(&r->lock, reader_id);
		text_copy(r->lock.rvn, sizeof(r->lock.rvn), new_rvn);
		if (!r->lock.n_readers && !r->lock.writer_id)
			mem_remove_row(m, r);
	}
	return mem_op_end(m, rc, land);
}

int mem_evict_reader(struct store *s, const char *key, const char *reader_id,
		     const char *expect_v, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && !holder_at(r, reader_id, expect_v))
		rc = -ECANCELED;
	else if (!rc)
		drop_reader(&r->lock, reader_id);
	return mem_op_end(m, rc, land);
}

int mem_mark_writer(struct store *s, const char *key, const char *id,
		    const char *v, const char *replace_v, int64_t deadline,
		    struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && (!r || !r->lock.shared ||
		    (r->lock.writer_id && strcmp(r->lock.writer_id, id) &&
		     (!replace_v || strcmp(r->lock.writer_v, replace_v)))))
		rc = mem_refuse(r, cur, has_cur);
	else if (!rc)
		rc = record_set_writer(&r->lock, id, v);
	return mem_op_end(m, rc, land);
}

int mem_clear_writer(struct store *s, const char *key, const char *v,
		     int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	/* A row carries a writer mark or a next mark, never both. */
	if (!rc && r && r->lock.writer_id && !strcmp(r->lock.writer_v, v))
		record_set_writer(&r->lock, NULL, NULL);
	else if (!rc && r && r->lock.next_id && !strcmp(r->lock.next_v, v))
		record_set_next(&r->lock, NULL, NULL);
	else if (!rc)
		rc = -ECANCELED;
	return mem_op_end(m, rc, land);
}
