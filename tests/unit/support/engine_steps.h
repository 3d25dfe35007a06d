/* engine_steps: the lease thread's work, done by the test on a fake clock:
 * runs an engine's lease steps that are due now, and moves the fake clock
 * on in 10 ms steps with the test's own work (lease steps of its engines,
 * flk turns) after each. The lock tests' common pieces with it: the
 * engine configuration most of them use, a holder, an acquire and a
 * waiter's poll, rows written as another client writes them, and freeing
 * an engine with its observer and store at a test's end.
 *
 * Threads: the test's one thread (none of it runs a thread itself). */
#ifndef LOCKFS_TEST_ENGINE_STEPS_H
#define LOCKFS_TEST_ENGINE_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "clk.h"
#include "lock.h"
#include "observe.h"
#include "record.h"
#include "store.h"

/* Runs e's lease steps that are due at clk's now; a test fails
 * ("lease_step never settled") when 1000 steps do not get there. */
void engine_steps_due(struct lock_engine *e, const struct clk *clk);

/* Advances c by ms in 10 ms steps, calling each(arg) after every step. */
void engine_steps_advance(struct clk_fake *c, int64_t ms,
			  void (*each)(void *arg), void *arg);

/* A 2 s lease, renewed every 500 ms, trusted for 1.5 s. */
struct lock_config engine_steps_config(const char *owner, const char *host,
				       enum hold_mode hold);

/* A holder of uid and gid 1000, mode 0644, command cmd. */
struct lock_holder engine_steps_holder(int64_t pid, int64_t pgid,
				       const char *cmd);

/* An exclusive acquire of key on e by the test's process (a holder as
 * engine_steps_holder's, command "flock"): lock_acquire's result, *lk
 * NULL unless taken. */
int engine_steps_excl(struct lock_engine *e, const char *key, struct lock **lk);

/* One poll of a file-lock waiter on e (as flk's): read key's row, judge
 * it, and acquire (engine_steps_excl) when it is gone or lapsed. 0 with
 * *lk when taken, -EEXIST when the row is live, other -errno. */
int engine_steps_poll(struct lock_engine *e, const char *key, struct lock **lk);

/* Writes key's row as another client would (owner, rvn, lease_ms and
 * expiry_real_s; nothing else) straight into st, a store_mem. */
void engine_steps_foreign_row(struct store *st, const char *key,
			      const char *owner, const char *rvn,
			      int64_t lease_ms, int64_t expiry_real_s);

/* key's row as stored in st into r (false when there is none). */
bool engine_steps_row(struct store *st, const char *key, struct lock_record *r);

/* Frees e, then o and st, which e used. */
void engine_steps_free(struct lock_engine *e, struct observe *o,
		       struct store *st);

/* The end of a test with its own engine: e's lease path stopped
 * (lease_stop) and its locks unreferenced by the caller, releases every
 * lock, then frees e, o and st. Returns lock_release_all's result, for
 * the caller to check (CHECK_INT(..., 0): a check counts in the file that
 * makes it, check.h). */
int engine_steps_stop(struct lock_engine *e, struct observe *o,
		      struct store *st);

#endif
