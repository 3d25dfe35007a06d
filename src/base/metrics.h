/* metrics: process counters and per-kind request latency histograms,
 * updated with relaxed atomics from any thread, rendered as Prometheus text.
 * The request kinds are the caller's (the DynamoDB client names its
 * operations at start-up); this file knows none. One struct metrics per
 * daemon, owned by main and passed down; no globals. */
#ifndef LOCKFS_METRICS_H
#define LOCKFS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

enum metric_counter {
	MC_ACQUIRES,	  /* locks acquired (new or takeover) */
	MC_CONFLICTS,	  /* acquire refused: held by someone else */
	MC_TAKEOVERS,	  /* acquires of a lock judged expired */
	MC_RELEASES,	  /* locks released by this mount */
	MC_AUTO_RELEASES, /* released because the holder went away */
	MC_HEARTBEATS_OK,
	MC_HEARTBEATS_FAILED,
	MC_LOST,	   /* locks this mount lost */
	MC_BREAKS,	   /* others' locks removed with allow_break */
	MC_DDB_RETRIES,	   /* DynamoDB requests sent again */
	MC_DDB_THROTTLES,  /* throttling answers from DynamoDB */
	MC_WAITS,	   /* flock/fcntl waits started */
	MC_LEASE_PASSES,   /* passes (wake-ups) of the lease scheduler */
	MC_SESSION_PASSES, /* passes (wake-ups) of the session thread */
	MC_WAIT_POLLS,	   /* rows read by flock/fcntl waiters' polls */
	MC_GROUP_CHECKS,   /* process groups asked of the host (lease_groups) */
	MC_HEARTBEATS_SKIPPED,	/* renewals not sent: too late, workers busy */
	MC_LEASE_IDLE_WAKES,	/* lease workers woken that found no job */
	MC_DDB_RETRIES_REFUSED, /* retries not made: retry quota spent */
	MC__COUNT
};

#define METRICS_LATENCY_BUCKETS 14
/* Request kinds (histograms) one struct metrics can hold. */
#define METRICS_KINDS_MAX 16
/* Filesystem operations (counters) one struct metrics can hold. */
#define METRICS_OPS_MAX 40

struct metrics_histogram {
	uint64_t count;
	uint64_t errors;
	uint64_t sum_us;
	uint64_t le[METRICS_LATENCY_BUCKETS]; /* non-cumulative bucket counts */
};

struct metrics {
	uint64_t counters[MC__COUNT];
	struct metrics_histogram req[METRICS_KINDS_MAX];
	const char *const *kind_names; /* set once, before any thread runs */
	int n_kinds;
	uint64_t ops[METRICS_OPS_MAX]; /* requests from the kernel, by op */
	const char *const *op_names;   /* set once, before any thread runs */
	int n_ops;
	uint64_t locks_held;	/* gauge, set by the lock engine */
	uint64_t lease_workers; /* gauge, set by the lease pool */
};

/* Zeroes m; it has no request kinds until metrics_name_kinds. */
void metrics_init(struct metrics *m);
/* Names request kinds 0..n-1 (n at most METRICS_KINDS_MAX; names borrowed,
 * must outlive m), in the order they are rendered. Call once, before m is
 * shared. */
void metrics_name_kinds(struct metrics *m, const char *const *names, int n);
/* Names the filesystem operations 0..n-1 (n at most METRICS_OPS_MAX;
 * names borrowed), counted by metrics_count_op and rendered as
 * lockfs_fuse_requests_total{op="..."}. Call once, before m is shared. */
void metrics_name_ops(struct metrics *m, const char *const *names, int n);
/* All functions accept m == NULL and then do nothing. */
void metrics_inc(struct metrics *m, enum metric_counter c);
void metrics_add(struct metrics *m, enum metric_counter c, uint64_t n);
uint64_t metrics_get(const struct metrics *m, enum metric_counter c);
/* One request of operation op (as named by metrics_name_ops) arrived. */
void metrics_count_op(struct metrics *m, int op);
uint64_t metrics_get_op(const struct metrics *m, int op);
void metrics_set_held(struct metrics *m, uint64_t n);
void metrics_set_lease_workers(struct metrics *m, uint64_t n);
/* One request (a single HTTP exchange) of a named kind took us
 * microseconds; a kind without a name is not counted. */
void metrics_observe(struct metrics *m, int kind, int64_t us, bool ok);
/* Appends the Prometheus text exposition of everything. */
int metrics_render(const struct metrics *m, struct buf *out);

#endif
