/* retry: full-jitter exponential backoff and the pause between attempts.
 * No shared state: the random state belongs to the caller. */
#include "retry.h"

#include <errno.h>
#include <time.h>

#define RETRY_DEFAULT_ATTEMPTS 8
#define RETRY_DEFAULT_BASE_MS  25
#define RETRY_DEFAULT_CAP_MS   2000

uint64_t retry_rng_next(uint64_t *rng)
{
	/* xorshift64*: plenty for jitter. */
	uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

int64_t retry_backoff_ms(const struct retry_policy *p, int attempt,
			 uint64_t *rng)
{
	int64_t base = p->base_ms ? p->base_ms : RETRY_DEFAULT_BASE_MS;
	int64_t cap = p->cap_ms ? p->cap_ms : RETRY_DEFAULT_CAP_MS;
	int64_t ceiling = base;
	int i;

	for (i = 2; i < attempt && ceiling < cap; i++)
		ceiling *= 2;
	if (ceiling > cap)
		ceiling = cap;
	return (int64_t)(retry_rng_next(rng) % (uint64_t)(ceiling + 1));
}

int retry_should_retry(const struct retry_policy *p, int attempts_done,
		       int64_t now_mono_ms, int64_t delay_ms,
		       int64_t deadline_mono_ms)
{
	int max = p->max_attempts ? p->max_attempts : RETRY_DEFAULT_ATTEMPTS;

	if (attempts_done >= max)
		return 0;
	if (deadline_mono_ms && now_mono_ms + delay_ms >= deadline_mono_ms)
		return 0;
	return 1;
}

void retry_sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
