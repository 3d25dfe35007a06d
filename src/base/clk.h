/* clk: the two clocks lockfs uses, behind an injectable interface so the lock
 * engine can be tested with a fake clock. Every variable holding a time names
 * its clock and unit: *_mono_ms (our monotonic clock), *_real_ms (epoch).
 *
 * "Our monotonic clock" is CLOCK_BOOTTIME, not CLOCK_MONOTONIC: it never
 * jumps with the wall clock and, unlike CLOCK_MONOTONIC, it keeps counting
 * while the machine is suspended. Leases are measured on it, so a holder
 * that wakes from a suspend longer than its safe period knows at once that
 * its lease is gone (with CLOCK_MONOTONIC it would trust a lock another
 * host has taken meanwhile). */
#ifndef LOCKFS_CLK_H
#define LOCKFS_CLK_H

#include <stdint.h>

struct clk {
	int64_t (*mono_ms)(const struct clk *c);
	int64_t (*real_ms)(const struct clk *c);
	void *ctx;
};

/* The system clocks. */
extern const struct clk clk_system;

int64_t clk_sys_mono_ms(void);
int64_t clk_sys_real_ms(void);
int64_t clk_sys_mono_us(void);

static inline int64_t clk_mono_ms(const struct clk *c)
{
	return c->mono_ms(c);
}

static inline int64_t clk_real_ms(const struct clk *c)
{
	return c->real_ms(c);
}

/* A manual clock for tests: both clocks advance only through clk_fake_advance.
 */
struct clk_fake {
	struct clk clk;
	int64_t mono_ms;
	int64_t real_ms;
};
void clk_fake_init(struct clk_fake *f, int64_t real_ms);
void clk_fake_advance(struct clk_fake *f, int64_t ms);

/* Formats epoch milliseconds as RFC 3339 UTC with milliseconds
 * ("2026-11-22T10:00:00.123Z"); out must hold 25 bytes. */
void clk_format_rfc3339_ms(int64_t real_ms, char out[25]);

/* Fills a timespec for pthread_cond_timedwait on a condition variable made
 * by clk_cond_init_mono. pthread cannot wait on CLOCK_BOOTTIME, so the
 * deadline (our monotonic clock, ms) becomes the CLOCK_MONOTONIC time that
 * is as far away now: deadline - boottime_now + monotonic_now. A suspend
 * during the wait does not count towards it (the wait ends once the rest
 * of it has passed awake); callers read the clock again after waking, as
 * they must for spurious wake-ups anyway, and then see the suspend.
 * A deadline already passed gives a time in the past (the wait returns at
 * once); one more than a year away is cut to a year. */
struct timespec;
void clk_mono_timespec(int64_t mono_ms, struct timespec *ts);
/* The same from given readings of CLOCK_BOOTTIME and CLOCK_MONOTONIC (ns),
 * for tests. */
void clk_mono_timespec_at(int64_t mono_ms, int64_t boot_now_ns,
			  int64_t clock_mono_now_ns, struct timespec *ts);

/* Initialises a condition variable whose timed waits use CLOCK_MONOTONIC
 * (so that they are not moved by changes of the wall clock); give it
 * deadlines through clk_mono_timespec. */
#include <pthread.h>
int clk_cond_init_mono(pthread_cond_t *cv);

#endif
