/* engine_steps: the lease thread's work done by the test, and the lock
 * tests' common pieces (see engine_steps.h). Threads: the caller's. */
#include "engine_steps.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lease.h"
#include "lock_rows.h"
#include "store_mem.h"

void engine_steps_due(struct lock_engine *e, const struct clk *clk)
{
	for (int i = 0; i < 1000; i++)
		if (lease_step(e) > clk_mono_ms(clk))
			return;
	CHECK(!"lease_step never settled");
}

void engine_steps_advance(struct clk_fake *c, int64_t ms,
			  void (*each)(void *arg), void *arg)
{
	while (ms > 0) {
		int64_t d = ms < 10 ? ms : 10;

		clk_fake_advance(c, d);
		ms -= d;
		each(arg);
	}
}

struct lock_config engine_steps_config(const char *owner, const char *host,
				       enum hold_mode hold)
{
	struct lock_config cfg = {
		.owner = owner,
		.host = host,
		.lease_ms = 2000,
		.heartbeat_ms = 500,
		.safe_period_ms = 1500,
		.hold = hold,
	};

	return cfg;
}

struct lock_holder engine_steps_holder(int64_t pid, int64_t pgid,
				       const char *cmd)
{
	struct lock_holder h = {
		.pid = pid, .uid = 1000, .gid = 1000, .pgid = pgid, .mode = 0644
	};

	strcpy(h.cmd, cmd);
	return h;
}

int engine_steps_excl(struct lock_engine *e, const char *key, struct lock **lk)
{
	struct lock_holder h = engine_steps_holder(getpid(), getpid(), "flock");

	*lk = NULL;
	return lock_acquire(e, key, &h, lk, NULL, NULL);
}

int engine_steps_poll(struct lock_engine *e, const char *key, struct lock **lk)
{
	struct lock_record r;
	int rc;

	*lk = NULL;
	record_init(&r);
	rc = lock_rows_get(e, key, &r);
	if (!rc && !lock_rows_judge(e, &r, NULL))
		rc = -EEXIST;
	else if (!rc || rc == -ENOENT)
		rc = engine_steps_excl(e, key, lk);
	record_fini(&r);
	return rc;
}

void engine_steps_foreign_row(struct store *st, const char *key,
			      const char *owner, const char *rvn,
			      int64_t lease_ms, int64_t expiry_real_s)
{
	struct lock_record r;

	record_init(&r);
	record_set_str(&r.key, key);
	record_set_str(&r.owner, owner);
	strcpy(r.rvn, rvn);
	r.lease_ms = lease_ms;
	r.expiry_real_s = expiry_real_s;
	CHECK_INT(store_mem_put_raw(st, &r), 0);
	record_fini(&r);
}

bool engine_steps_row(struct store *st, const char *key, struct lock_record *r)
{
	record_fini(r);
	return st->ops->get_lock(st, key, 0, r) == 0;
}

void engine_steps_free(struct lock_engine *e, struct observe *o,
		       struct store *st)
{
	lock_engine_free(e);
	observe_free(o);
	store_free(st);
}

int engine_steps_stop(struct lock_engine *e, struct observe *o,
		      struct store *st)
{
	int rc = lock_release_all(e);

	engine_steps_free(e, o, st);
	return rc;
}
