/* store_mem: the in-memory store itself: its rows in a list indexed by
 * key, the fault knobs, the steps every operation takes, the session
 * operations (over store_mem_session.c), the ops table and the test API
 * (store_mem.h). Lock rows are in store_mem_lock.c, shared rows in
 * store_mem_share.c, directories in store_mem_dir.c. Any thread; one mutex
 * (mu) guards everything and is never held while sleeping for an injected
 * delay. */
#include "store_mem.h"

#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_mem_int.h"
#include "store_mem_session.h"

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

struct mem_row *mem_find_row(struct store_mem *m, const char *key, int is_dir)
{
	char *k = index_key(key, is_dir);
	struct mem_row *r = k ? smap_get(&m->index, k) : NULL;

	free(k);
	return r;
}

int mem_link_row(struct store_mem *m, struct mem_row *r)
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

int mem_fill_cur(struct mem_row *r, struct lock_record *cur, bool *has_cur)
{
	if (has_cur)
		*has_cur = r != NULL;
	if (r && cur)
		return record_copy(cur, &r->lock);
	return 0;
}

int mem_op_begin(struct store_mem *m, enum store_mem_op op, int is_write,
		 const char *key, struct mem_row **r, int *land)
{
	int rc;

	fault_delay(m);
	pthread_mutex_lock(&m->mu);
	rc = fault_enter(m, op, is_write, land);
	*r = !rc && key ? mem_find_row(m, key, 0) : NULL;
	return rc;
}

int mem_op_end(struct store_mem *m, int rc, int land)
{
	pthread_mutex_unlock(&m->mu);
	return !rc && land ? -ETIMEDOUT : rc;
}

int mem_refuse(struct mem_row *r, struct lock_record *cur, bool *has_cur)
{
	int rc = mem_fill_cur(r, cur, has_cur);

	return rc ? rc : -ECANCELED;
}
void mem_free_row(struct mem_row *r)
{
	record_fini(&r->lock);
	dir_record_fini(&r->dir);
	free(r);
}

void mem_remove_row(struct store_mem *m, struct mem_row *r)
{
	unlink_row(m, r);
	mem_free_row(r);
}

/* Session items (store_mem_session.c), each one counted SMEM_SESSION. */
static int mem_create_session(struct store *s, const char *key,
			      const char *owner, const char *rvn,
			      int64_t lease_ms, int64_t expiry,
			      int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_create(&m->sessions, key, rvn, lease_ms);
	return mem_op_end(m, rc, land);
}

static int mem_beat_session(struct store *s, const char *key,
			    const char *expect_rvn, const char *new_rvn,
			    int64_t expiry, int64_t hb_ms, int64_t deadline,
			    struct session_record *cur, bool *has_cur)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_beat(m->sessions, key, expect_rvn, new_rvn,
				      hb_ms, cur, has_cur);
	return mem_op_end(m, rc, land);
}

static int mem_get_session(struct store *s, const char *key, int64_t deadline,
			   struct session_record *out)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SESSION_READ, 0, NULL, &r, &land);

	if (!rc)
		rc = mem_session_get(m->sessions, key, out);
	return mem_op_end(m, rc, land);
}

static int mem_fence_session(struct store *s, const char *key,
			     const char *observed_rvn, int64_t expiry,
			     int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_fence(&m->sessions, key, observed_rvn);
	return mem_op_end(m, rc, land);
}

static int mem_end_session(struct store *s, const char *key,
			   const char *expect_rvn, int64_t deadline)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;
	int land, rc = mem_op_begin(m, SMEM_SESSION, 1, NULL, &r, &land);

	if (!rc)
		rc = mem_session_end(&m->sessions, key, expect_rvn);
	return mem_op_end(m, rc, land);
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
		mem_free_row(r);
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
	.replace_lock = mem_replace_lock,
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
	r = mem_find_row(m, rec->key, 0);
	if (r) {
		rc = record_copy(&r->lock, rec);
	} else {
		r = calloc(1, sizeof(*r));
		rc = r ? record_copy(&r->lock, rec) : -ENOMEM;
		if (!rc)
			rc = mem_link_row(m, r);
		if (rc && r)
			mem_free_row(r);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int store_mem_delete_raw(struct store *s, const char *key)
{
	struct store_mem *m = to_mem(s);
	struct mem_row *r;

	pthread_mutex_lock(&m->mu);
	r = mem_find_row(m, key, 0);
	if (r)
		mem_remove_row(m, r);
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
