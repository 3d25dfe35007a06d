/* retry: full-jitter exponential backoff bounded by a caller deadline. */
#ifndef LOCKFS_RETRY_H
#define LOCKFS_RETRY_H

#include <stdint.h>

struct retry_policy {
	int max_attempts; /* including the first; 0: 8 */
	int64_t base_ms;  /* 0: 25 */
	int64_t cap_ms;	  /* 0: 2000 */
};

/* Delay before attempt number `attempt` (2 = first retry): a uniform random
 * value in [0, min(cap, base * 2^(attempt-2))]. rng is a caller-owned state
 * (seed it once, non-zero). */
int64_t retry_backoff_ms(const struct retry_policy *p, int attempt,
			 uint64_t *rng);
/* True if another attempt may start: attempts left and the delay ends before
 * the deadline (deadline 0: no deadline). */
int retry_should_retry(const struct retry_policy *p, int attempts_done,
		       int64_t now_mono_ms, int64_t delay_ms,
		       int64_t deadline_mono_ms);
uint64_t retry_rng_next(uint64_t *rng);
/* Sleeps ms milliseconds (the pause between attempts or polls), resuming
 * after signals. */
void retry_sleep_ms(int64_t ms);

#endif
