/* store_fault: the fault-injecting store wrapper (see store_fault.h). */
#include "store_fault.h"
#include "store_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SF(s) ((struct store_fault *)(s))

void store_fault_set_down(struct store_fault *f, int down)
{
	__atomic_store_n(&f->down, down, __ATOMIC_SEQ_CST);
}

void store_fault_set_lose_replies(struct store_fault *f, int lose)
{
	__atomic_store_n(&f->lose_replies, lose, __ATOMIC_SEQ_CST);
}

void store_fault_lose_next(struct store_fault *f, int n)
{
	__atomic_store_n(&f->lose_next, n, __ATOMIC_SEQ_CST);
}

void store_fault_set_send_twice(struct store_fault *f, int twice)
{
	__atomic_store_n(&f->send_twice, twice, __ATOMIC_SEQ_CST);
}

void store_fault_set_latency(struct store_fault *f, struct clk_fake *clk,
			     int64_t max_ms, uint64_t (*rnd)(uint64_t n))
{
	f->latency_clk = clk;
	f->latency_max_ms = max_ms;
	f->latency_rnd = rnd;
}

int64_t store_fault_last_deadline(struct store_fault *f)
{
	return __atomic_load_n(&f->last_deadline_mono_ms, __ATOMIC_SEQ_CST);
}

/* Whether a conditional write that answered rc is sent again. */
static bool again(struct store *s, int rc)
{
	return rc == 0 && __atomic_load_n(&SF(s)->send_twice, __ATOMIC_SEQ_CST);
}

/* Takes one of the replies still to lose, if any. */
static bool take_lose_next(struct store_fault *f)
{
	int n = __atomic_load_n(&f->lose_next, __ATOMIC_SEQ_CST);

	while (n > 0)
		if (__atomic_compare_exchange_n(&f->lose_next, &n, n - 1, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return true;
	return false;
}

/* The before hook's verdict on one key of a request. */
static int hook(struct store_fault *f, enum store_fault_op op, const char *key)
{
	return f->before ? f->before(f->arg, op, key) : 0;
}

/* A request's latency on the fake clock, if any. */
static void lag(struct store_fault *f)
{
	if (f->latency_clk && f->latency_rnd && f->latency_max_ms > 0)
		clk_fake_advance(
			f->latency_clk,
			(int64_t)f->latency_rnd((uint64_t)f->latency_max_ms));
}

static int link_down(struct store_fault *f)
{
	int down = __atomic_load_n(&f->down, __ATOMIC_SEQ_CST);

	return down == 2 ? -ECONNREFUSED : down ? -ETIMEDOUT : 0;
}

/* Whether a request may go through; *lose: a write's reply is lost. */
static int gate(struct store *s, enum store_fault_op op, const char *key,
		int64_t deadline_mono_ms, bool write, bool *lose)
{
	struct store_fault *f = SF(s);
	int rc;

	__atomic_store_n(&f->last_deadline_mono_ms, deadline_mono_ms,
			 __ATOMIC_SEQ_CST);
	rc = hook(f, op, key);
	lag(f);
	if (!rc)
		rc = link_down(f);
	*lose = write && (__atomic_load_n(&f->lose_replies, __ATOMIC_SEQ_CST) ||
			  (!rc && take_lose_next(f)));
	return rc;
}

/* The after hook, if any, on a lock row write that reached the inner
 * store. */
static void landed(struct store *s, enum store_fault_op op, const char *key,
		   int rc)
{
	if (SF(s)->after)
		SF(s)->after(SF(s)->arg, op, key, rc);
}

static int after(bool lose, int rc)
{
	return rc == 0 && lose ? -ETIMEDOUT : rc;
}

static int f_get(struct store *s, const char *key, int64_t d,
		 struct lock_record *out)
{
	bool lose;
	int rc = gate(s, SF_GET, key, d, false, &lose);

	return rc ? rc : SF(s)->inner->ops->get_lock(SF(s)->inner, key, d, out);
}

/* Reads keys[idx[0..m)] with the inner store: its get_locks (into
 * scratch records when not every key goes through), else get_lock each. */
static void inner_get_locks(struct store *in, const char *const *keys,
			    const size_t *idx, size_t m, size_t n, int64_t d,
			    struct lock_record *outs, int *rcs)
{
	const char *sub[STORE_GET_LOCKS_MAX];
	struct lock_record *tmp;
	int sub_rcs[STORE_GET_LOCKS_MAX];
	size_t i;

	if (!in->ops->get_locks) {
		for (i = 0; i < m; i++)
			rcs[idx[i]] = in->ops->get_lock(in, keys[idx[i]], d,
							&outs[idx[i]]);
		return;
	}
	if (m == n) {
		in->ops->get_locks(in, keys, n, d, outs, rcs);
		return;
	}
	tmp = calloc(m, sizeof(*tmp));
	for (i = 0; i < m; i++) {
		sub[i] = keys[idx[i]];
		if (tmp)
			record_init(&tmp[i]);
		sub_rcs[i] = -ENOMEM;
	}
	if (tmp)
		in->ops->get_locks(in, sub, m, d, tmp, sub_rcs);
	for (i = 0; i < m; i++) {
		rcs[idx[i]] = sub_rcs[i];
		if (!tmp)
			continue;
		record_fini(&outs[idx[i]]);
		outs[idx[i]] = tmp[i]; /* moved: tmp[i] is not freed */
	}
	free(tmp);
}

/* The lock rows of many keys: one request, so one latency; each key its
 * own before hook (SF_GET, as f_get) and the link's state, so that a
 * fault aimed at one key fails that key alone. */
static void f_get_locks(struct store *s, const char *const *keys, size_t n,
			int64_t d, struct lock_record *outs, int *rcs)
{
	struct store_fault *f = SF(s);
	size_t idx[STORE_GET_LOCKS_MAX], i, m = 0;

	__atomic_store_n(&f->last_deadline_mono_ms, d, __ATOMIC_SEQ_CST);
	for (i = 0; i < n && i < STORE_GET_LOCKS_MAX; i++)
		rcs[i] = hook(f, SF_GET, keys[i]);
	for (; i < n; i++)
		rcs[i] = -EINVAL; /* beyond what one call may ask */
	lag(f);
	for (i = 0; i < n && i < STORE_GET_LOCKS_MAX; i++) {
		if (!rcs[i])
			rcs[i] = link_down(f);
		if (!rcs[i])
			idx[m++] = i;
	}
	if (m)
		inner_get_locks(f->inner, keys, idx, m, n, d, outs, rcs);
}

static int f_lookup(struct store *s, const char *key, int64_t d,
		    struct store_lookup *out)
{
	bool lose;
	int rc = gate(s, SF_LOOKUP, key, d, false, &lose);

	return rc ? rc : SF(s)->inner->ops->lookup(SF(s)->inner, key, d, out);
}

/* A lock row's write (replace: only over the row of expect) through the
 * gate of SF_PUT. */
static int put_through(struct store *s, const struct lock_record *rec,
		       const char *expect, bool replace, int64_t d,
		       struct lock_record *cur, bool *has, bool *unanswered)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_PUT, rec->key, d, true, &lose);
	int tries = 0;

	if (unanswered)
		*unanswered = store_mem_may_land(rc);
	if (rc)
		return rc;
	do {
		rc = replace ? in->ops->replace_lock(in, rec, expect, d, cur,
						     has)
			     : in->ops->put_lock(in, rec, expect, d, cur, has,
						 unanswered);
	} while (tries++ == 0 && again(s, rc));
	landed(s, SF_PUT, rec->key, rc);
	rc = after(lose, rc);
	if (unanswered && store_mem_may_land(rc))
		*unanswered = true; /* a reply lost after it landed */
	return rc;
}

static int f_put(struct store *s, const struct lock_record *rec,
		 const char *expect, int64_t d, struct lock_record *cur,
		 bool *has, bool *unanswered)
{
	return put_through(s, rec, expect, false, d, cur, has, unanswered);
}

static int f_replace(struct store *s, const struct lock_record *rec,
		     const char *expect, int64_t d, struct lock_record *cur,
		     bool *has)
{
	return put_through(s, rec, expect, true, d, cur, has, NULL);
}

static int f_renew(struct store *s, const char *key, const char *expect,
		   const struct lock_renewal *rn, int64_t d,
		   struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_RENEW, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->renew_lock(in, key, expect, rn, d, cur, has);
	if (again(s, rc))
		rc = in->ops->renew_lock(in, key, expect, rn, d, cur, has);
	return after(lose, rc);
}

static int f_delete(struct store *s, const char *key, const char *expect,
		    int64_t d, struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_DELETE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->delete_lock(in, key, expect, d, cur, has);
	if (again(s, rc))
		rc = in->ops->delete_lock(in, key, expect, d, cur, has);
	landed(s, SF_DELETE, key, rc);
	return after(lose, rc);
}

static int f_fence(struct store *s, const char *key, int64_t d, uint64_t *out)
{
	bool lose;
	int rc = gate(s, SF_FENCE, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose,
		     SF(s)->inner->ops->next_fence(SF(s)->inner, key, d, out));
}

static int f_put_dir(struct store *s, const struct dir_record *dr,
		     const char *expect_rvn, int64_t d)
{
	bool lose;
	int rc = gate(s, SF_DIR, dr->key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose, SF(s)->inner->ops->put_dir(SF(s)->inner, dr,
						      expect_rvn, d));
}

static int f_set_dir_mode(struct store *s, const char *key, uint32_t mode,
			  int64_t d)
{
	bool lose;
	int rc = gate(s, SF_DIR, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose, SF(s)->inner->ops->set_dir_mode(SF(s)->inner, key,
							   mode, d));
}

static int f_delete_dir(struct store *s, const char *key, int64_t d)
{
	bool lose;
	int rc = gate(s, SF_DIR, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose, SF(s)->inner->ops->delete_dir(SF(s)->inner, key, d));
}

struct sf_frozen {
	struct lock_record *locks;
	struct dir_record *dirs;
	size_t n_locks, n_dirs, cap_locks, cap_dirs;
};

/* Room for one more of size bytes in *v (n used of *cap). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
	size_t c = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

static int freeze_row(void *arg, const struct store_row *row)
{
	struct sf_frozen *fz = arg;

	if (row->kind == STORE_ROW_LOCK) {
		if (grow((void **)&fz->locks, fz->n_locks, &fz->cap_locks,
			 sizeof(*fz->locks)))
			return -ENOMEM;
		record_init(&fz->locks[fz->n_locks]);
		return record_copy(&fz->locks[fz->n_locks++], row->lock);
	}
	if (grow((void **)&fz->dirs, fz->n_dirs, &fz->cap_dirs,
		 sizeof(*fz->dirs)))
		return -ENOMEM;
	dir_record_init(&fz->dirs[fz->n_dirs]);
	return dir_record_copy(&fz->dirs[fz->n_dirs++], row->dir);
}

void store_fault_thaw_list(struct store_fault *f)
{
	struct sf_frozen *fz = f->frozen;

	if (!fz)
		return;
	for (size_t i = 0; i < fz->n_locks; i++)
		record_fini(&fz->locks[i]);
	for (size_t i = 0; i < fz->n_dirs; i++)
		dir_record_fini(&fz->dirs[i]);
	free(fz->locks);
	free(fz->dirs);
	free(fz);
	f->frozen = NULL;
}

int store_fault_freeze_list(struct store_fault *f)
{
	struct sf_frozen *fz = calloc(1, sizeof(*fz));
	int rc;

	store_fault_thaw_list(f);
	if (!fz)
		return -ENOMEM;
	f->frozen = fz;
	rc = f->inner->ops->list(f->inner, "", 0, freeze_row, fz);
	if (rc)
		store_fault_thaw_list(f);
	return rc;
}

static int frozen_list(struct sf_frozen *fz, const char *prefix,
		       store_row_fn fn, void *arg)
{
	size_t len = strlen(prefix);
	int rc = 0;

	for (size_t i = 0; !rc && i < fz->n_locks; i++) {
		struct store_row row = { STORE_ROW_LOCK, &fz->locks[i], NULL };

		if (!strncmp(fz->locks[i].key, prefix, len))
			rc = fn(arg, &row);
	}
	for (size_t i = 0; !rc && i < fz->n_dirs; i++) {
		struct store_row row = { STORE_ROW_DIR, NULL, &fz->dirs[i] };

		if (!strncmp(fz->dirs[i].key, prefix, len))
			rc = fn(arg, &row);
	}
	return rc > 0 ? 0 : rc;
}

static int f_list(struct store *s, const char *prefix, int64_t d,
		  store_row_fn fn, void *arg)
{
	bool lose;
	int rc = gate(s, SF_LIST, prefix, d, false, &lose);

	if (!rc && SF(s)->frozen)
		return frozen_list(SF(s)->frozen, prefix, fn, arg);
	return rc ? rc
		  : SF(s)->inner->ops->list(SF(s)->inner, prefix, d, fn, arg);
}

static int f_read_fence(struct store *s, const char *key, int64_t d,
			uint64_t *out)
{
	bool lose;
	int rc = gate(s, SF_FENCE, key, d, false, &lose);

	return rc ? rc
		  : SF(s)->inner->ops->read_fence(SF(s)->inner, key, d, out);
}

static int f_join(struct store *s, const struct lock_record *rec, bool raise,
		  int64_t d, struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, rec->key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->join_shared(in, rec, raise, d, cur, has);
	if (again(s, rc))
		rc = in->ops->join_shared(in, rec, raise, d, cur, has);
	return after(lose, rc);
}

static int f_leave(struct store *s, const char *key, const char *id,
		   const char *v, const char *rvn, int64_t d,
		   struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->leave_shared(in, key, id, v, rvn, d, cur, has);
	if (again(s, rc))
		rc = in->ops->leave_shared(in, key, id, v, rvn, d, cur, has);
	return after(lose, rc);
}

static int f_evict(struct store *s, const char *key, const char *id,
		   const char *v, int64_t d)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->evict_reader(in, key, id, v, d);
	if (again(s, rc))
		rc = in->ops->evict_reader(in, key, id, v, d);
	return after(lose, rc);
}

static int f_mark(struct store *s, const char *key, const char *id,
		  const char *v, const char *replace_v, int64_t d,
		  struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->mark_writer(in, key, id, v, replace_v, d, cur, has);
	if (again(s, rc))
		rc = in->ops->mark_writer(in, key, id, v, replace_v, d, cur,
					  has);
	return after(lose, rc);
}

static int f_clear(struct store *s, const char *key, const char *v, int64_t d)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->clear_writer(in, key, v, d);
	if (again(s, rc))
		rc = in->ops->clear_writer(in, key, v, d);
	return after(lose, rc);
}

static int f_mark_next(struct store *s, const char *key, const char *rvn,
		       const char *id, const char *v, int64_t w,
		       const char *replace_v, int64_t d,
		       struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SHARE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->mark_next(in, key, rvn, id, v, w, replace_v, d, cur, has);
	if (again(s, rc))
		rc = in->ops->mark_next(in, key, rvn, id, v, w, replace_v, d,
					cur, has);
	return after(lose, rc);
}

/* A release is a delete to the knobs (it is one, unless the row is
 * marked). */
static int f_release(struct store *s, const char *key, const char *expect,
		     const struct lock_record *resv, int64_t d,
		     struct lock_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_DELETE, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->release_lock(in, key, expect, resv, d, cur, has);
	if (again(s, rc))
		rc = in->ops->release_lock(in, key, expect, resv, d, cur, has);
	landed(s, SF_DELETE, key, rc);
	return after(lose, rc);
}

static int f_create_session(struct store *s, const char *key, const char *owner,
			    const char *rvn, int64_t lease_ms, int64_t expiry,
			    int64_t d)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SESSION, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose, in->ops->create_session(in, key, owner, rvn,
						   lease_ms, expiry, d));
}

static int f_beat_session(struct store *s, const char *key, const char *expect,
			  const char *new_rvn, int64_t expiry, int64_t hb,
			  int64_t d, struct session_record *cur, bool *has)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SESSION, key, d, true, &lose);

	if (rc)
		return rc;
	rc = in->ops->beat_session(in, key, expect, new_rvn, expiry, hb, d, cur,
				   has);
	if (again(s, rc))
		rc = in->ops->beat_session(in, key, expect, new_rvn, expiry, hb,
					   d, cur, has);
	return after(lose, rc);
}

static int f_get_session(struct store *s, const char *key, int64_t d,
			 struct session_record *out)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SESSION_READ, key, d, false, &lose);

	return rc ? rc : in->ops->get_session(in, key, d, out);
}

static int f_fence_session(struct store *s, const char *key,
			   const char *observed, int64_t expiry, int64_t d)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SESSION, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose,
		     in->ops->fence_session(in, key, observed, expiry, d));
}

static int f_end_session(struct store *s, const char *key, const char *expect,
			 int64_t d)
{
	struct store *in = SF(s)->inner;
	bool lose;
	int rc = gate(s, SF_SESSION, key, d, true, &lose);

	if (rc)
		return rc;
	return after(lose, in->ops->end_session(in, key, expect, d));
}

static void f_destroy(struct store *s)
{
	(void)s; /* the wrapper is the caller's; inner is not ours */
}

static const struct store_ops fault_ops = {
	.get_lock = f_get,
	.get_locks = f_get_locks,
	.lookup = f_lookup,
	.put_lock = f_put,
	.replace_lock = f_replace,
	.renew_lock = f_renew,
	.delete_lock = f_delete,
	.next_fence = f_fence,
	.read_fence = f_read_fence,
	.join_shared = f_join,
	.leave_shared = f_leave,
	.evict_reader = f_evict,
	.mark_writer = f_mark,
	.clear_writer = f_clear,
	.mark_next = f_mark_next,
	.release_lock = f_release,
	.put_dir = f_put_dir,
	.set_dir_mode = f_set_dir_mode,
	.delete_dir = f_delete_dir,
	.list = f_list,
	.create_session = f_create_session,
	.beat_session = f_beat_session,
	.get_session = f_get_session,
	.fence_session = f_fence_session,
	.end_session = f_end_session,
	.destroy = f_destroy,
};

void store_fault_init(struct store_fault *f, struct store *inner)
{
	*f = (struct store_fault){ .base.ops = &fault_ops, .inner = inner };
}
