/* retry_quota: a token count shared by every thread of a client, changed
 * by compare-and-swap only. See retry_quota.h. */
#include "retry_quota.h"

void retry_quota_init(struct retry_quota *q, int max)
{
	q->max = max ? max : RETRY_QUOTA_DEFAULT;
	atomic_init(&q->tokens, q->max < 0 ? 0 : q->max);
}

int retry_quota_take(struct retry_quota *q, bool timeout)
{
	int cost = timeout ? RETRY_QUOTA_TIMEOUT_COST : RETRY_QUOTA_COST;
	int have = atomic_load(&q->tokens);

	if (q->max < 0)
		return cost;
	do {
		if (have < cost)
			return 0;
	} while (!atomic_compare_exchange_weak(&q->tokens, &have, have - cost));
	return cost;
}

void retry_quota_give(struct retry_quota *q, int last)
{
	int back = last > 0 ? last : 1;
	int have = atomic_load(&q->tokens), next;

	if (q->max < 0)
		return;
	do {
		next = have + back > q->max ? q->max : have + back;
		if (next == have)
			return;
	} while (!atomic_compare_exchange_weak(&q->tokens, &have, next));
}

int retry_quota_left(struct retry_quota *q)
{
	return q->max < 0 ? q->max : atomic_load(&q->tokens);
}
