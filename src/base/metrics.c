/* metrics: counters and histograms with relaxed atomics; safe from any
 * thread. Rendering reads each value once, so a scrape is not a snapshot. */
#include "metrics.h"

#include <inttypes.h>
#include <string.h>

#include "log.h"

/* Upper bounds of the latency buckets, in microseconds. */
static const uint64_t bucket_le_us[METRICS_LATENCY_BUCKETS] = {
	100,   250,   500,    1000,   2500,   5000,    10000,
	25000, 50000, 100000, 250000, 500000, 1000000, 5000000,
};

static const char *const counter_names[MC__COUNT] = {
	[MC_ACQUIRES] = "lockfs_acquires_total",
	[MC_CONFLICTS] = "lockfs_conflicts_total",
	[MC_TAKEOVERS] = "lockfs_takeovers_total",
	[MC_RELEASES] = "lockfs_releases_total",
	[MC_AUTO_RELEASES] = "lockfs_auto_releases_total",
	[MC_HEARTBEATS_OK] = "lockfs_heartbeats_ok_total",
	[MC_HEARTBEATS_FAILED] = "lockfs_heartbeats_failed_total",
	[MC_LOST] = "lockfs_lost_total",
	[MC_BREAKS] = "lockfs_breaks_total",
	[MC_DDB_RETRIES] = "lockfs_dynamodb_retries_total",
	[MC_DDB_THROTTLES] = "lockfs_dynamodb_throttles_total",
	[MC_WAITS] = "lockfs_waits_total",
	[MC_LEASE_PASSES] = "lockfs_lease_passes_total",
	[MC_SESSION_PASSES] = "lockfs_session_passes_total",
	[MC_WAIT_POLLS] = "lockfs_wait_polls_total",
	[MC_GROUP_CHECKS] = "lockfs_group_checks_total",
	[MC_HEARTBEATS_SKIPPED] = "lockfs_heartbeats_skipped_total",
	[MC_LEASE_IDLE_WAKES] = "lockfs_lease_idle_wakeups_total",
	[MC_DDB_RETRIES_REFUSED] = "lockfs_dynamodb_retries_refused_total",
};

static const char *const counter_help[MC__COUNT] = {
	[MC_ACQUIRES] = "Locks acquired by this mount.",
	[MC_CONFLICTS] =
		"Acquires refused because another owner holds the lock.",
	[MC_TAKEOVERS] = "Acquires of a lock whose lease had lapsed.",
	[MC_RELEASES] = "Locks released by this mount.",
	[MC_AUTO_RELEASES] = "Locks released because their holder went away.",
	[MC_HEARTBEATS_OK] = "Successful lease renewals.",
	[MC_HEARTBEATS_FAILED] = "Failed lease renewals.",
	[MC_LOST] = "Locks this mount lost (stolen or past the safe period).",
	[MC_BREAKS] = "Locks of other owners removed with allow_break.",
	[MC_DDB_RETRIES] =
		"DynamoDB requests sent again after a retryable error.",
	[MC_DDB_THROTTLES] = "Throttling answers from DynamoDB.",
	[MC_WAITS] = "flock/fcntl waits started.",
	[MC_LEASE_PASSES] = "Passes of the lease scheduler (its wake-ups).",
	[MC_SESSION_PASSES] =
		"Passes of the session thread (its wake-ups; -o session).",
	[MC_WAIT_POLLS] = "Rows read by the polls of flock/fcntl waiters "
			  "(several may share one BatchGetItem).",
	[MC_GROUP_CHECKS] = "Process groups holding locks asked of /proc "
			    "whether they are gone.",
	[MC_HEARTBEATS_SKIPPED] =
		"Lease renewals not sent: every lease worker "
		"busy, and too little trust left to be answered.",
	[MC_LEASE_IDLE_WAKES] = "Lease workers woken that found no job to "
				"take (another worker took it first).",
	[MC_DDB_RETRIES_REFUSED] =
		"DynamoDB requests not sent again after a retryable error: "
		"the retry quota shared by all calls was spent.",
};

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void add(uint64_t *p, uint64_t n)
{
	__atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof(*m));
}

void metrics_name_kinds(struct metrics *m, const char *const *names, int n)
{
	if (!m)
		return;
	m->kind_names = names;
	m->n_kinds = n < 0 ? 0 : n > METRICS_KINDS_MAX ? METRICS_KINDS_MAX : n;
}

void metrics_name_ops(struct metrics *m, const char *const *names, int n)
{
	if (!m)
		return;
	m->op_names = names;
	m->n_ops = n < 0 ? 0 : n > METRICS_OPS_MAX ? METRICS_OPS_MAX : n;
}

void metrics_count_op(struct metrics *m, int op)
{
	if (m && op >= 0 && op < m->n_ops)
		add(&m->ops[op], 1);
}

uint64_t metrics_get_op(const struct metrics *m, int op)
{
	return m && op >= 0 && op < m->n_ops ? load(&m->ops[op]) : 0;
}

void metrics_inc(struct metrics *m, enum metric_counter c)
{
	metrics_add(m, c, 1);
}

void metrics_add(struct metrics *m, enum metric_counter c, uint64_t n)
{
	if (m)
		add(&m->counters[c], n);
}

uint64_t metrics_get(const struct metrics *m, enum metric_counter c)
{
	return m ? load(&m->counters[c]) : 0;
}

void metrics_set_held(struct metrics *m, uint64_t n)
{
	if (m)
		__atomic_store_n(&m->locks_held, n, __ATOMIC_RELAXED);
}

void metrics_set_lease_workers(struct metrics *m, uint64_t n)
{
	if (m)
		__atomic_store_n(&m->lease_workers, n, __ATOMIC_RELAXED);
}

void metrics_observe(struct metrics *m, int kind, int64_t us, bool ok)
{
	struct metrics_histogram *h;
	int i;

	if (!m || kind < 0 || kind >= m->n_kinds)
		return;
	if (us < 0)
		us = 0;
	h = &m->req[kind];
	add(&h->count, 1);
	add(&h->sum_us, (uint64_t)us);
	if (!ok)
		add(&h->errors, 1);
	for (i = 0; i < METRICS_LATENCY_BUCKETS; i++) {
		if ((uint64_t)us <= bucket_le_us[i]) {
			add(&h->le[i], 1);
			break;
		}
	}
}

int metrics_render(const struct metrics *m, struct buf *out)
{
	const char *const *names = m->kind_names;
	int rc = 0, c, op, i;

	for (c = 0; c < MC__COUNT && !rc; c++)
		rc = buf_printf(
			out,
			"# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n",
			counter_names[c], counter_help[c], counter_names[c],
			counter_names[c], load(&m->counters[c]));
	if (!rc)
		rc = buf_printf(
			out,
			"# HELP lockfs_locks_held Locks this mount holds now.\n"
			"# TYPE lockfs_locks_held gauge\n"
			"lockfs_locks_held %" PRIu64 "\n",
			load(&m->locks_held));
	if (!rc)
		rc = buf_printf(out,
				"# HELP lockfs_lease_workers Lease workers "
				"running now (renewals in flight at most).\n"
				"# TYPE lockfs_lease_workers gauge\n"
				"lockfs_lease_workers %" PRIu64 "\n",
				load(&m->lease_workers));
	if (!rc)
		rc = buf_printf(
			out,
			"# HELP lockfs_log_lines_lost Log lines not written "
			"(full disk) since the last one written.\n"
			"# TYPE lockfs_log_lines_lost gauge\n"
			"lockfs_log_lines_lost %" PRIu64 "\n",
			log_lines_lost());
	if (!rc && m->n_ops)
		rc = buf_puts(out,
			      "# HELP lockfs_fuse_requests_total Requests "
			      "from the kernel, by filesystem operation.\n"
			      "# TYPE lockfs_fuse_requests_total counter\n");
	for (op = 0; op < m->n_ops && !rc; op++)
		rc = buf_printf(out,
				"lockfs_fuse_requests_total{op=\"%s\"} %" PRIu64
				"\n",
				m->op_names[op], load(&m->ops[op]));
	if (!rc)
		rc = buf_puts(
			out, "# HELP lockfs_dynamodb_requests_total DynamoDB "
			     "requests by operation.\n"
			     "# TYPE lockfs_dynamodb_requests_total counter\n");
	for (op = 0; op < m->n_kinds && !rc; op++)
		rc = buf_printf(out,
				"lockfs_dynamodb_requests_total{operation=\"%"
				"s\"} %" PRIu64 "\n",
				names[op], load(&m->req[op].count));
	if (!rc)
		rc = buf_puts(out,
			      "# HELP lockfs_dynamodb_errors_total DynamoDB "
			      "requests that failed, by operation.\n"
			      "# TYPE lockfs_dynamodb_errors_total counter\n");
	for (op = 0; op < m->n_kinds && !rc; op++)
		rc = buf_printf(out,
				"lockfs_dynamodb_errors_total{operation=\"%s\"}"
				" %" PRIu64 "\n",
				names[op], load(&m->req[op].errors));
	if (!rc)
		rc = buf_puts(
			out,
			"# HELP lockfs_dynamodb_request_seconds DynamoDB "
			"request latency by operation.\n"
			"# TYPE lockfs_dynamodb_request_seconds histogram\n");
	for (op = 0; op < m->n_kinds && !rc; op++) {
		const struct metrics_histogram *h = &m->req[op];
		uint64_t cum = 0;

		for (i = 0; i < METRICS_LATENCY_BUCKETS && !rc; i++) {
			cum += load(&h->le[i]);
			rc = buf_printf(
				out,
				"lockfs_dynamodb_request_seconds_bucket{"
				"operation=\"%s\",le=\"%g\"} %" PRIu64 "\n",
				names[op], bucket_le_us[i] / 1e6, cum);
		}
		if (!rc)
			rc = buf_printf(
				out,
				"lockfs_dynamodb_request_seconds_bucket{"
				"operation=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
				"lockfs_dynamodb_request_seconds_sum{operation="
				"\"%s\"} %.6f\n"
				"lockfs_dynamodb_request_seconds_count{"
				"operation=\"%s\"} %" PRIu64 "\n",
				names[op], load(&h->count), names[op],
				load(&h->sum_us) / 1e6, names[op],
				load(&h->count));
	}
	return rc;
}
