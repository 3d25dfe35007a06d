/* store_mem_lock: the in-memory store's lock rows (get, lookup, put,
 * renew, delete, the fair handoff's next mark and release) and fence
 * counters, with the conditions of the DynamoDB store. Any thread; each
 * operation runs under the store's mutex (mem_op_begin, mem_op_end). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_mem_int.h"
#include "text.h"

int mem_get_lock(struct store *s, const char *key, int64_t deadline,
		 struct lock_record *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_GET, 0, key, &r, &land);

	if (!rc)
		rc = r ? record_copy(out, &r->lock) : -ENOENT;
	return mem_op_end(m, rc, land);
}

int mem_lookup(struct store *s, const char *key, int64_t deadline,
	       struct store_lookup *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_LOOKUP, 0, key, &r, &land);

	if (!rc) {
		out->has_lock = r != NULL;
		if (r)
			rc = record_copy(&out->lock, &r->lock);
		r = mem_find_row(m, key, 1);
		out->has_dir = r != NULL;
		if (r && !rc)
			rc = dir_record_copy(&out->dir, &r->dir);
	}
	return mem_op_end(m, rc, land);
}

/* put_lock, or (over_only) replace_lock. */
static int put_row(struct store *s, const struct lock_record *rec,
		   const char *expect_rvn, bool over_only,
		   struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r, *nr;
	int land, rc = mem_op_begin(m, SMEM_PUT, 1, rec->key, &r, &land);

	if (rc)
		goto out;
	if (mem_find_row(m, rec->key, 1)) {
		rc = -EISDIR; /* as store_ddb: one item per name */
		goto out;
	}
	if ((!r && over_only) ||
	    (r && (!expect_rvn || strcmp(r->lock.rvn, expect_rvn) ||
		   (rec->shared && r->lock.writer_id)))) {
		rc = mem_refuse(r, cur, has_cur);
		goto out;
	}
	if (r) {
		rc = record_copy(&r->lock, rec);
	} else {
		nr = calloc(1, sizeof(*nr));
		rc = nr ? record_copy(&nr->lock, rec) : -ENOMEM;
		if (!rc)
			rc = mem_link_row(m, nr);
		if (rc && nr) {
			record_fini(&nr->lock);
			free(nr);
		}
	}
out:
	return mem_op_end(m, rc, land);
}

int mem_put_lock(struct store *s, const struct lock_record *rec,
		 const char *expect_rvn, int64_t deadline,
		 struct lock_record *cur, bool *has_cur, bool *unanswered)
{
	int rc = put_row(s, rec, expect_rvn, false, cur, has_cur);

	if (unanswered) /* its faults stand for a timeout or a reset */
		*unanswered = store_mem_may_land(rc);
	return rc;
}

int mem_replace_lock(struct store *s, const struct lock_record *rec,
		     const char *expect_rvn, int64_t deadline,
		     struct lock_record *cur, bool *has_cur)
{
	if (!expect_rvn)
		return -EINVAL;
	return put_row(s, rec, expect_rvn, true, cur, has_cur);
}

int mem_renew_lock(struct store *s, const char *key, const char *expect_rvn,
		   const struct lock_renewal *rn, int64_t deadline,
		   struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_RENEW, 1, key, &r, &land);

	if (rc)
		goto out;
	if (rn->reader && rn->set_data) {
		rc = -EINVAL;
		goto out;
	}
	if (!r ||
	    strcmp(record_holder_version(&r->lock, rn->reader), expect_rvn)) {
		rc = mem_refuse(r, cur, has_cur);
		goto out;
	}
	if (rn->reader) {
		struct record_reader *rd =
			(struct record_reader *)record_reader_find(&r->lock,
								   rn->reader);

		text_copy(rd->v, sizeof(rd->v), rn->new_rvn);
		rd->heartbeat_real_ms = rn->heartbeat_real_ms;
		if (rn->set_fence)
			rd->fence = rn->fence;
		text_copy(r->lock.rvn, sizeof(r->lock.rvn), rn->row_rvn);
	} else {
		text_copy(r->lock.rvn, sizeof(r->lock.rvn), rn->new_rvn);
		if (rn->set_data)
			rc = record_set_data(&r->lock, rn->data, rn->data_len);
		if (rn->set_fence)
			r->lock.fence = rn->fence;
	}
	r->lock.expiry_real_s = rn->expiry_real_s;
	r->lock.heartbeat_real_ms = rn->heartbeat_real_ms;
	if (!rc && rn->reader)
		rc = mem_fill_cur(r, cur, has_cur); /* the row as it now is */
out:
	return mem_op_end(m, rc, land);
}

int mem_delete_lock(struct store *s, const char *key, const char *expect_rvn,
		    int64_t deadline, struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_DELETE, 1, key, &r, &land);

	if (!rc && (!r || (expect_rvn && strcmp(r->lock.rvn, expect_rvn))))
		rc = mem_refuse(r, cur, has_cur);
	else if (!rc)
		mem_remove_row(m, r);
	return mem_op_end(m, rc, land);
}

/* mu held. The fence counter of key, or NULL if it has none. */
static struct mem_fence *find_fence(struct store_mem *m, const char *key)
{
	struct mem_fence *f;

	for (f = m->fences; f && strcmp(f->key, key); f = f->next)
		;
	return f;
}

int mem_next_fence(struct store *s, const char *key, int64_t deadline,
		   uint64_t *fence)
{
	struct store_mem *m = to_mem(s);
	struct mem_fence *f = NULL;
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_FENCE, 1, NULL, &r, &land);

	if (!rc && !(f = find_fence(m, key))) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->key = strdup(key))) {
			free(f);
			f = NULL;
			rc = -ENOMEM;
		} else {
			f->next = m->fences;
			m->fences = f;
		}
	}
	if (f)
		*fence = ++f->value;
	return mem_op_end(m, rc, land);
}

int mem_read_fence(struct store *s, const char *key, int64_t deadline,
		   uint64_t *fence)
{
	struct store_mem *m = to_mem(s);
	struct mem_fence *f;
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_FENCE, 0, NULL, &r, &land);

	if (!rc) {
		f = find_fence(m, key);
		*fence = f ? f->value : 0;
	}
	return mem_op_end(m, rc, land);
}

int mem_mark_next(struct store *s, const char *key, const char *observed_rvn,
		  const char *id, const char *v, int64_t waited_ms,
		  const char *replace_v, int64_t deadline,
		  struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && (!r || strcmp(r->lock.rvn, observed_rvn) || r->lock.shared ||
		    (r->lock.next_id && strcmp(r->lock.next_id, id) &&
		     (!replace_v || strcmp(r->lock.next_v, replace_v)))))
		rc = mem_refuse(r, cur, has_cur);
	else if (!rc && !(rc = record_set_next(&r->lock, id, v)))
		r->lock.next_waited_ms = waited_ms;
	return mem_op_end(m, rc, land);
}

int mem_release_lock(struct store *s, const char *key, const char *expect_rvn,
		     const struct lock_record *reservation, int64_t deadline,
		     struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct lock_record rec;
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_DELETE, 1, key, &r, &land);

	if (!rc && (!r || strcmp(r->lock.rvn, expect_rvn))) {
		rc = mem_refuse(r, cur, has_cur);
	} else if (!rc && !r->lock.next_id) {
		mem_remove_row(m, r);
	} else if (!rc) {
		/* The marker's turn: the row becomes its reservation. */
		record_init(&rec);
		rc = record_copy(&rec, reservation);
		if (!rc)
			rc = record_set_str(&rec.reserved_for, r->lock.next_id);
		if (!rc)
			rc = record_copy(&r->lock, &rec);
		record_fini(&rec);
	}
	return mem_op_end(m, rc, land);
}
