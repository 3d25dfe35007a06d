/* clk: system and fake clocks, and time formatting. No shared state.
 * "Our monotonic clock" is CLOCK_BOOTTIME (it counts suspend); timed waits
 * still use CLOCK_MONOTONIC condition variables, so clk_mono_timespec
 * converts a deadline from the one to the other when the wait starts. */
#include "clk.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t clk_sys_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clk_sys_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clk_sys_real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t sys_mono(const struct clk *c)
{
	(void)c;
	return clk_sys_mono_ms();
}

static int64_t sys_real(const struct clk *c)
{
	(void)c;
	return clk_sys_real_ms();
}

const struct clk clk_system = { .mono_ms = sys_mono, .real_ms = sys_real };

static int64_t fake_mono(const struct clk *c)
{
	const struct clk_fake *f = c->ctx;

	return __atomic_load_n(&f->mono_ms, __ATOMIC_SEQ_CST);
}

static int64_t fake_real(const struct clk *c)
{
	const struct clk_fake *f = c->ctx;

	return __atomic_load_n(&f->real_ms, __ATOMIC_SEQ_CST);
}

void clk_fake_init(struct clk_fake *f, int64_t real_ms)
{
	f->clk.mono_ms = fake_mono;
	f->clk.real_ms = fake_real;
	f->clk.ctx = f;
	f->mono_ms = 1000000;
	f->real_ms = real_ms;
}

void clk_fake_advance(struct clk_fake *f, int64_t ms)
{
	__atomic_add_fetch(&f->mono_ms, ms, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&f->real_ms, ms, __ATOMIC_SEQ_CST);
}

void clk_format_rfc3339_ms(int64_t real_ms, char out[25])
{
	time_t s = (time_t)(real_ms / 1000);
	int ms = (int)(real_ms % 1000);
	struct tm tm;

	if (ms < 0) {
		ms += 1000;
		s -= 1;
	}
	gmtime_r(&s, &tm);
	/* strftime bounds every field; 20 bytes of date-time, then ".mmmZ". */
	if (strftime(out, 21, "%Y-%m-%dT%H:%M:%S", &tm) != 19) {
		strcpy(out, "0000-00-00T00:00:00.000Z");
		return;
	}
	out[19] = '.';
	out[20] = (char)('0' + ms / 100);
	out[21] = (char)('0' + ms / 10 % 10);
	out[22] = (char)('0' + ms % 10);
	out[23] = 'Z';
	out[24] = '\0';
}

#define NS_PER_S  1000000000LL
#define NS_PER_MS 1000000LL
#define YEAR_MS	  (365LL * 86400 * 1000)

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}

void clk_mono_timespec_at(int64_t mono_ms, int64_t boot_now_ns,
			  int64_t clock_mono_now_ns, struct timespec *ts)
{
	int64_t at_ns;

	/* Deadlines far away (INT64_MAX for "never", a fake clock's values)
	 * must not overflow: a year is as good as forever for a timed wait. */
	if (mono_ms > boot_now_ns / NS_PER_MS + YEAR_MS)
		mono_ms = boot_now_ns / NS_PER_MS + YEAR_MS;
	if (mono_ms < boot_now_ns / NS_PER_MS - YEAR_MS)
		mono_ms = boot_now_ns / NS_PER_MS - YEAR_MS;
	at_ns = clock_mono_now_ns + (mono_ms * NS_PER_MS - boot_now_ns);
	if (at_ns < 0)
		at_ns = 0; /* already passed: the wait returns at once */
	ts->tv_sec = (time_t)(at_ns / NS_PER_S);
	ts->tv_nsec = (long)(at_ns % NS_PER_S);
}

void clk_mono_timespec(int64_t mono_ms, struct timespec *ts)
{
	struct timespec boot, mono;

	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clk_mono_timespec_at(mono_ms, ts_ns(&boot), ts_ns(&mono), ts);
}

int clk_cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return -rc;
}
