/* base_clk: our monotonic clock is CLOCK_BOOTTIME (it counts suspend), and
 * clk_mono_timespec turns its deadlines into CLOCK_MONOTONIC times for
 * condition variables made by clk_cond_init_mono: the conversion with given
 * clock readings (a machine that was suspended, deadlines passed, far away
 * and "never"), then real timed waits that end on time. One thread. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "clk.h"

#define MS 1000000LL
#define S  1000000000LL

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * S + ts->tv_nsec;
}

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts_ns(&ts);
}

static void check_conversion(void)
{
	struct timespec ts;
	/* Booted 10000 s ago, 3600 s of it suspended: CLOCK_MONOTONIC is
	 * 3600 s behind CLOCK_BOOTTIME. */
	int64_t boot = 10000 * S + 123 * MS, mono = 6400 * S + 123 * MS;

	/* 2.5 s from now on our clock is 2.5 s from now on CLOCK_MONOTONIC. */
	clk_mono_timespec_at(10002623, boot, mono, &ts);
	CHECK_INT(ts.tv_sec, 6402);
	CHECK_INT(ts.tv_nsec, 623 * MS);
	CHECK_INT(ts_ns(&ts) - mono, 2500 * MS);

	/* Without the conversion the wait would have ended 3600 s late. */
	CHECK(10002623LL * MS - ts_ns(&ts) == 3600 * S);

	/* A deadline already passed is in the past on CLOCK_MONOTONIC too. */
	clk_mono_timespec_at(9999123, boot, mono, &ts);
	CHECK_INT(ts_ns(&ts), mono - 1000 * MS);
	clk_mono_timespec_at(0, boot, mono, &ts);
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0); /* never negative */
	clk_mono_timespec_at(-5000, boot, mono, &ts);
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0);

	/* "Never" and far deadlines: a year away, no overflow. */
	clk_mono_timespec_at(INT64_MAX, boot, mono, &ts);
	CHECK_INT(ts_ns(&ts) - mono, 365LL * 86400 * S);
	clk_mono_timespec_at(INT64_MIN, boot, mono, &ts);
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0);

	/* Equal clocks (never suspended): the deadline as it is. */
	clk_mono_timespec_at(5000, 4000 * MS, 4000 * MS, &ts);
	CHECK_INT(ts.tv_sec, 5);
	CHECK_INT(ts.tv_nsec, 0);
	/* Nanoseconds carry into seconds. */
	clk_mono_timespec_at(5000, 4000 * MS + 1, 4000 * MS + 999999999, &ts);
	CHECK_INT(ts_ns(&ts), 5000 * MS + 999999998);
	CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < S);
}

static void check_system_clocks(void)
{
	int64_t boot = now_ns(CLOCK_BOOTTIME) / MS, mono = clk_sys_mono_ms();
	int64_t us = clk_sys_mono_us();

	/* clk_sys_mono_* read CLOCK_BOOTTIME, which is ahead of (or equal
	 * to) CLOCK_MONOTONIC by the time spent suspended. */
	CHECK(mono >= boot && mono - boot < 1000);
	CHECK(us / 1000 >= mono && us / 1000 - mono < 1000);
	{
		int64_t m = now_ns(CLOCK_MONOTONIC);

		CHECK(now_ns(CLOCK_BOOTTIME) >= m);
	}
	CHECK(clk_mono_ms(&clk_system) >= mono);
}

/* Timed waits on a clk_cond_init_mono condition variable end at the
 * deadline of our clock: not at once, not much later. */
static void check_timed_wait(void)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	struct timespec ts;
	int64_t start, deadline, woke;
	int rc = 0, i;

	CHECK_INT(clk_cond_init_mono(&cv), 0);
	pthread_mutex_lock(&mu);
	start = clk_sys_mono_ms();
	deadline = start + 200;
	/* Spurious wake-ups are allowed: wait again until the deadline, as
	 * the callers do, but at most a few times. */
	for (i = 0; i < 100 && clk_sys_mono_ms() < deadline; i++) {
		clk_mono_timespec(deadline, &ts);
		rc = pthread_cond_timedwait(&cv, &mu, &ts);
	}
	woke = clk_sys_mono_ms();
	CHECK_INT(rc, ETIMEDOUT);
	CHECK(woke >= deadline);
	CHECK(woke - deadline < 1000);

	/* A passed deadline returns at once. */
	start = clk_sys_mono_ms();
	clk_mono_timespec(start - 5000, &ts);
	CHECK_INT(pthread_cond_timedwait(&cv, &mu, &ts), ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - start < 1000);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cv);
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(check_conversion);
	CHECK_CASE(check_system_clocks);
	CHECK_CASE(check_timed_wait);
	CHECK_DONE();
}
