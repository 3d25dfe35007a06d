/* store_mem: lock and directory rows in a mutex-protected list indexed by
 * key, fence counters beside them, and fault knobs. Any thread; one mutex
 * (mu) guards everything and is never held while sleeping for an injected
 * delay. */
#include "store_mem.h"

#include <stdio.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "map.h"
#include "store_mem_session.h"
#include "text.h"

struct mem_row {
	struct mem_row *prev, *next;
	int is_dir;
	struct lock_record lock;
	struct dir_record dir;
};

struct mem_fence {
	struct mem_fence *next;
	char *key;
	uint64_t value;
};

struct store_mem {
	struct store base;
	pthread_mutex_t mu;
	struct mem_row *rows;		/* protected by mu */
	struct smap index;		/* mu: "l:"/"d:" + key -> row */
	struct mem_fence *fences;	/* protected by mu */
	struct store_mem_faults faults; /* protected by mu */
	int counts[SMEM__COUNT];	/* protected by mu */
	struct mem_session *sessions;	/* protected by mu */
};

static struct store_mem *to_mem(struct store *s)
{
	return (struct store_mem *)s;
}

/* Called with mu held. Returns 0, or the injected error. *land is set when
 * a write must be applied and then reported as lost. */
static int fault_enter(struct store_mem *m, enum store_mem_op op, int is_write,
		       int *land)
{
	m->counts[op]++;
	*land = 0;
	if (m->faults.down)
		return -ETIMEDOUT;
	if (m->faults.fail_next > 0) {
		m->faults.fail_next--;
		return m->faults.fail_errno ? m->faults.fail_errno : -EIO;
	}
	if (is_write && m->faults.land_then_fail > 0) {
		m->faults.land_then_fail--;
		*land = 1;
	}
	return 0;
}

static void fault_delay(struct store_mem *m)
{
	int ms;

	pthread_mutex_lock(&m->mu);
	ms = m->faults.delay_ms;
	pthread_mutex_unlock(&m->mu);
	if (ms > 0)
		usleep((useconds_t)ms * 1000);
}

/* The index key of a row: "l:" or "d:" and its key. NULL on ENOMEM. */
static char *index_key(const char *key, int is_dir)
{
	char *k;

	return asprintf(&k, "%c:%s", is_dir ? 'd' : 'l', key) < 0 ? NULL : k;
}

/* mu held. */
static struct mem_row *find_row(struct store_mem *m, const char *key,
				int is_dir)
{
	char *k = index_key(key, is_dir);
	struct mem_row *r = k ? smap_get(&m->index, k) : NULL;

	free(k);
	return r;
}

/* mu held. Puts r (its key set) on the list and in the index. */
static int link_row(struct store_mem *m, struct mem_row *r)
{
	char *k = index_key(r->is_dir ? r->dir.key : r->lock.key, r->is_dir);
	int rc = k ? smap_put(&m->index, k, r) : -ENOMEM;

	free(k);
	if (rc)
		return rc;
	r->prev = NULL;
	r->next = m->rows;
	if (m->rows)
		m->rows->prev = r;
	m->rows = r;
	return 0;
}

/* mu held. Takes r off the list and out of the index. */
static void unlink_row(struct store_mem *m, struct mem_row *r)
{
	char *k = index_key(r->is_dir ? r->dir.key : r->lock.key, r->is_dir);

	if (k)
		smap_del(&m->index, k);
	free(k);
	if (r->prev)
		r->prev->next = r->next;
	else
		m->rows = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

static int fill_cur(struct mem_row *r, struct lock_record *cur, bool *has_cur)
{
	if (has_cur)
		*has_cur = r != NULL;
	if (r && cur)
		return record_copy(cur, &r->lock);
	return 0;
}

/* The first steps of every operation: the injected delay, then mu taken
 * and op counted. Returns 0 or the injected error; either way mu is held
 * and *r is key's lock row (NULL when key is NULL, on error, or when there
 * is none). */
static int op_begin(struct store_mem *m, enum store_mem_op op, int is_write,
		    const char *key, struct mem_row **r, int *land)
{
	int rc;

	fault_delay(m);
	pthread_mutex_lock(&m->mu);
	rc = fault_enter(m, op, is_write, land);
	*r = !rc && key ? find_row(m, key, 0) : NULL;
	return rc;
}

/* The last step: releases mu and returns rc, or -ETIMEDOUT for a write that
 * was applied but must be reported lost. */
static int op_end(struct store_mem *m, int rc, int land)
{
	pthread_mutex_unlock(&m->mu);
	return !rc && land ? -ETIMEDOUT : rc;
}

/* The answer to a refused condition: -ECANCELED, and the row as it is in
 * cur (has_cur false when there is none). */
static int refuse(struct mem_row *r, struct lock_record *cur, bool *has_cur)
{
	int rc = fill_cur(r, cur, has_cur);

	return rc ? rc : -ECANCELED;
}

static int mem_get_lock(struct store *s, const char *key, int64_t deadline,
			struct lock_record *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_GET, 0, key, &r, &land);

	if (!rc)
		rc = r ? record_copy(out, &r->lock) : -ENOENT;
	return op_end(m, rc, land);
}

static int mem_lookup(struct store *s, const char *key, int64_t deadline,
		      struct store_lookup *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_LOOKUP, 0, key, &r, &land);

	if (!rc) {
		out->has_lock = r != NULL;
		if (r)
			rc = record_copy(&out->lock, &r->lock);
		r = find_row(m, key, 1);
		out->has_dir = r != NULL;
		if (r && !rc)
			rc = dir_record_copy(&out->dir, &r->dir);
	}
	return op_end(m, rc, land);
}

static int mem_put_lock(struct store *s, const struct lock_record *rec,
			const char *expect_rvn, int64_t deadline,
			struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r, *nr;
	int land, rc = op_begin(m, SMEM_PUT, 1, rec->key, &r, &land);

	if (rc)
		goto out;
	if (find_row(m, rec->key, 1)) {
		rc = -EISDIR; /* as store_ddb: one item per name */
		goto out;
	}
	if (r && (!expect_rvn || strcmp(r->lock.rvn, expect_rvn) ||
		  (rec->shared && r->lock.writer_id))) {
		rc = refuse(r, cur, has_cur);
		goto out;
	}
	if (r) {
		rc = record_copy(&r->lock, rec);
	} else {
		nr = calloc(1, sizeof(*nr));
		rc = nr ? record_copy(&nr->lock, rec) : -ENOMEM;
		if (!rc)
			rc = link_row(m, nr);
		if (rc && nr) {
			record_fini(&nr->lock);
			free(nr);
		}
	}
out:
	return op_end(m, rc, land);
}

static int mem_renew_lock(struct store *s, const char *key,
			  const char *expect_rvn, const struct lock_renewal *rn,
			  int64_t deadline, struct lock_record *cur,
			  bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_RENEW, 1, key, &r, &land);

	if (rc)
		goto out;
	if (rn->reader && rn->set_data) {
		rc = -EINVAL;
		goto out;
	}
	if (!r ||
	    strcmp(record_holder_version(&r->lock, rn->reader), expect_rvn)) {
		rc = refuse(r, cur, has_cur);
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
		rc = fill_cur(r, cur, has_cur); /* the row as it now is */
out:
	return op_end(m, rc, land);
}

static void free_row(struct mem_row *r)
{
	record_fini(&r->lock);
	dir_record_fini(&r->dir);
	free(r);
}

/* mu held. Takes r off the list and out of the index, and frees it. */
static void remove_row(struct store_mem *m, struct mem_row *r)
{
	unlink_row(m, r);
	free_row(r);
}

static int mem_delete_lock(struct store *s, const char *key,
			   const char *expect_rvn, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_DELETE, 1, key, &r, &land);

	if (!rc && (!r || (expect_rvn && strcmp(r->lock.rvn, expect_rvn))))
		rc = refuse(r, cur, has_cur);
	else if (!rc)
		remove_row(m, r);
	return op_end(m, rc, land);
}

/* mu held. The fence counter of key, or NULL if it has none. */
static struct mem_fence *find_fence(struct store_mem *m, const char *key)
{
	struct mem_fence *f;

	for (f = m->fences; f && strcmp(f->key, key); f = f->next)
		;
	return f;
}

static int mem_next_fence(struct store *s, const char *key, int64_t deadline,
			  uint64_t *fence)
{
	struct store_mem *m = to_mem(s);
	struct mem_fence *f = NULL;
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_FENCE, 1, NULL, &r, &land);

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
	return op_end(m, rc, land);
}

static int mem_read_fence(struct store *s, const char *key, int64_t deadline,
			  uint64_t *fence)
{
	struct store_mem *m = to_mem(s);
	struct mem_fence *f;
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_FENCE, 0, NULL, &r, &land);

	if (!rc) {
		f = find_fence(m, key);
		*fence = f ? f->value : 0;
	}
	return op_end(m, rc, land);
}

/* ---- shared rows ---------------------------------------------------- */

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

static int mem_join_shared(struct store *s, const struct lock_record *rec,
			   bool raise_lease, int64_t deadline,
			   struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc;

	if (!rec->shared || rec->n_readers != 1)
		return -EINVAL;
	rc = op_begin(m, SMEM_SHARE, 1, rec->key, &r, &land);
	if (rc)
		goto out;
	if (!r || !r->lock.shared || r->lock.writer_id ||
	    (raise_lease ? r->lock.lease_ms >= rec->lease_ms
			 : r->lock.lease_ms < rec->lease_ms)) {
		rc = refuse(r, cur, has_cur);
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
	return op_end(m, rc, land);
}

static int mem_leave_shared(struct store *s, const char *key,
			    const char *reader_id, const char *expect_v,
			    const char *new_rvn, int64_t deadline,
			    struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && !holder_at(r, reader_id, expect_v)) {
		rc = refuse(r, cur, has_cur);
	} else if (!rc) {
		drop_reader(&r->lock, reader_id);
		text_copy(r->lock.rvn, sizeof(r->lock.rvn), new_rvn);
		if (!r->lock.n_readers && !r->lock.writer_id)
			remove_row(m, r);
	}
	return op_end(m, rc, land);
}

static int mem_evict_reader(struct store *s, const char *key,
			    const char *reader_id, const char *expect_v,
			    int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && !holder_at(r, reader_id, expect_v))
		rc = -ECANCELED;
	else if (!rc)
		drop_reader(&r->lock, reader_id);
	return op_end(m, rc, land);
}

static int mem_mark_writer(struct store *s, const char *key, const char *id,
			   const char *v, const char *replace_v,
			   int64_t deadline, struct lock_record *cur,
			   bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && (!r || !r->lock.shared ||
		    (r->lock.writer_id && strcmp(r->lock.writer_id, id) &&
		     (!replace_v || strcmp(r->lock.writer_v, replace_v)))))
		rc = refuse(r, cur, has_cur);
	else if (!rc)
		rc = record_set_writer(&r->lock, id, v);
	return op_end(m, rc, land);
}

static int mem_clear_writer(struct store *s, const char *key, const char *v,
			    int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	/* A row carries a writer mark or a next mark, never both. */
	if (!rc && r && r->lock.writer_id && !strcmp(r->lock.writer_v, v))
		record_set_writer(&r->lock, NULL, NULL);
	else if (!rc && r && r->lock.next_id && !strcmp(r->lock.next_v, v))
		record_set_next(&r->lock, NULL, NULL);
	else if (!rc)
		rc = -ECANCELED;
	return op_end(m, rc, land);
}

/* Fair handoff of exclusive rows (store.h), with the conditions
 * store_ddb_fair.c gives DynamoDB. */
static int mem_mark_next(struct store *s, const char *key,
			 const char *observed_rvn, const char *id,
			 const char *v, int64_t waited_ms,
			 const char *replace_v, int64_t deadline,
			 struct lock_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SHARE, 1, key, &r, &land);

	if (!rc && (!r || strcmp(r->lock.rvn, observed_rvn) || r->lock.shared ||
		    (r->lock.next_id && strcmp(r->lock.next_id, id) &&
		     (!replace_v || strcmp(r->lock.next_v, replace_v)))))
		rc = refuse(r, cur, has_cur);
	else if (!rc && !(rc = record_set_next(&r->lock, id, v)))
		r->lock.next_waited_ms = waited_ms;
	return op_end(m, rc, land);
}

static int mem_release_lock(struct store *s, const char *key,
			    const char *expect_rvn,
			    const struct lock_record *reservation,
			    int64_t deadline, struct lock_record *cur,
			    bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct lock_record rec;
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_DELETE, 1, key, &r, &land);

	if (!rc && (!r || strcmp(r->lock.rvn, expect_rvn))) {
		rc = refuse(r, cur, has_cur);
	} else if (!rc && !r->lock.next_id) {
		remove_row(m, r);
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
	return op_end(m, rc, land);
}

static int mem_put_dir(struct store *s, const struct dir_record *d,
		       const char *expect_rvn, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *nr, *lk;
	int land, rc = op_begin(m, SMEM_PUT_DIR, 1, d->key, &lk, &land);

	if (rc)
		goto out;
	if (find_row(m, d->key, 1) ||
	    (lk && (!expect_rvn || strcmp(lk->lock.rvn, expect_rvn)))) {
		rc = -EEXIST;
		goto out;
	}
	if (lk) {
		/* A takeover of a lock seen expired: the name's item is a
		 * directory marker now. */
		remove_row(m, lk);
	}
	nr = calloc(1, sizeof(*nr));
	rc = nr ? dir_record_copy(&nr->dir, d) : -ENOMEM;
	if (rc) {
		free(nr);
		goto out;
	}
	nr->is_dir = 1;
	rc = link_row(m, nr);
	if (rc)
		free_row(nr);
out:
	return op_end(m, rc, land);
}

static int mem_set_dir_mode(struct store *s, const char *key, uint32_t mode,
			    int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_PUT_DIR, 1, NULL, &r, &land);

	if (!rc) {
		r = find_row(m, key, 1);
		if (r)
			r->dir.mode = mode & 07777;
		else
			rc = -ENOENT;
	}
	return op_end(m, rc, land);
}

static int mem_delete_dir(struct store *s, const char *key, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_DELETE_DIR, 1, NULL, &r, &land);

	if (!rc) {
		r = find_row(m, key, 1);
		if (r)
			remove_row(m, r);
		else
			rc = -ENOENT;
	}
	return op_end(m, rc, land);
}

static int mem_list(struct store *s, const char *prefix, int64_t deadline,
		    store_row_fn fn, void *arg)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r, *copy = NULL, *nr;
	size_t plen = strlen(prefix);
	int land, rc = op_begin(m, SMEM_LIST, 0, NULL, &r, &land);

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
		free_row(copy);
		copy = nr;
	}
	return rc;
}

/* Session items (store_mem_session.c), each one counted SMEM_SESSION. */
static int mem_create_session(struct store *s, const char *key,
			      const char *owner, const char *rvn,
			      int64_t lease_ms, int64_t expiry,
			      int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_create(&m->sessions, key, rvn, lease_ms);
	return op_end(m, rc, land);
}

static int mem_beat_session(struct store *s, const char *key,
			    const char *expect_rvn, const char *new_rvn,
			    int64_t expiry, int64_t hb_ms, int64_t deadline,
			    struct session_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_beat(m->sessions, key, expect_rvn, new_rvn,
				      hb_ms, cur, has_cur);
	return op_end(m, rc, land);
}

static int mem_get_session(struct store *s, const char *key, int64_t deadline,
			   struct session_record *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SESSION_READ, 0, NULL, &r, &land);

	if (!rc)
		rc = mem_session_get(m->sessions, key, out);
	return op_end(m, rc, land);
}

static int mem_fence_session(struct store *s, const char *key,
			     const char *observed_rvn, int64_t expiry,
			     int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_fence(&m->sessions, key, observed_rvn);
	return op_end(m, rc, land);
}

static int mem_end_session(struct store *s, const char *key,
			   const char *expect_rvn, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_end(&m->sessions, key, expect_rvn);
	return op_end(m, rc, land);
}

int store_mem_session_delete_raw(struct store *s, const char *key)
{
	struct store_mem *m = to_mem(s);
	int rc;

	pthread_mutex_lock(&m->mu);
	rc = mem_session_delete(&m->sessions, key);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

static void mem_destroy(struct store *s)
{
	struct store_mem *m = to_mem(s);
	struct mem_fence *f;

	while (m->rows) {
		struct mem_row *r = m->rows;

		m->rows = r->next;
		free_row(r);
	}
	smap_fini(&m->index);
	mem_session_free_all(&m->sessions);
	while ((f = m->fences)) {
		m->fences = f->next;
		free(f->key);
		free(f);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static const struct store_ops mem_ops = {
	.get_lock = mem_get_lock,
	.lookup = mem_lookup,
	.put_lock = mem_put_lock,
	.renew_lock = mem_renew_lock,
	.delete_lock = mem_delete_lock,
	.next_fence = mem_next_fence,
	.read_fence = mem_read_fence,
	.join_shared = mem_join_shared,
	.leave_shared = mem_leave_shared,
	.evict_reader = mem_evict_reader,
	.mark_writer = mem_mark_writer,
	.clear_writer = mem_clear_writer,
	.mark_next = mem_mark_next,
	.release_lock = mem_release_lock,
	.put_dir = mem_put_dir,
	.set_dir_mode = mem_set_dir_mode,
	.delete_dir = mem_delete_dir,
	.list = mem_list,
	.create_session = mem_create_session,
	.beat_session = mem_beat_session,
	.get_session = mem_get_session,
	.fence_session = mem_fence_session,
	.end_session = mem_end_session,
	.destroy = mem_destroy,
};

struct store *store_mem_new(void)
{
	struct store_mem *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->base.ops = &mem_ops;
	smap_init(&m->index);
	pthread_mutex_init(&m->mu, NULL);
	return &m->base;
}

void store_mem_set_faults(struct store *s, const struct store_mem_faults *f)
{
	struct store_mem *m = to_mem(s);

	pthread_mutex_lock(&m->mu);
	m->faults = *f;
	pthread_mutex_unlock(&m->mu);
}

int store_mem_count(struct store *s, enum store_mem_op op)
{
	struct store_mem *m = to_mem(s);
	int n;

	pthread_mutex_lock(&m->mu);
	n = m->counts[op];
	pthread_mutex_unlock(&m->mu);
	return n;
}

int store_mem_total(struct store *s)
{
	int i, n = 0;

	for (i = 0; i < SMEM__COUNT; i++)
		n += store_mem_count(s, (enum store_mem_op)i);
	return n;
}

int store_mem_put_raw(struct store *s, const struct lock_record *rec)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int rc;

	pthread_mutex_lock(&m->mu);
	r = find_row(m, rec->key, 0);
	if (r) {
		rc = record_copy(&r->lock, rec);
	} else {
		r = calloc(1, sizeof(*r));
		rc = r ? record_copy(&r->lock, rec) : -ENOMEM;
		if (!rc)
			rc = link_row(m, r);
		if (rc && r)
			free_row(r);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int store_mem_delete_raw(struct store *s, const char *key)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;

	pthread_mutex_lock(&m->mu);
	r = find_row(m, key, 0);
	if (r)
		remove_row(m, r);
	pthread_mutex_unlock(&m->mu);
	return r ? 0 : -ENOENT;
}

int store_mem_lock_count(struct store *s)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (r = m->rows; r; r = r->next)
		n += !r->is_dir;
	pthread_mutex_unlock(&m->mu);
	return n;
}
