/* metrics: process counters and DynamoDB latency histograms, updated with
 * relaxed atomics from any thread, rendered as Prometheus text. One struct
 * metrics per daemon, owned by main and passed down; no globals. */
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
	MC_LOST,	  /* locks this mount lost */
	MC_BREAKS,	  /* others' locks removed with allow_break */
	MC_DDB_RETRIES,	  /* DynamoDB requests sent again */
	MC_DDB_THROTTLES, /* throttling answers from DynamoDB */
	MC_WAITS,	  /* flock/fcntl waits started */
	MC__COUNT
};

enum ddb_op {
	DDB_OP_GET_ITEM,
	DDB_OP_PUT_ITEM,
	DDB_OP_UPDATE_ITEM,
	DDB_OP_DELETE_ITEM,
	DDB_OP_QUERY,
	DDB_OP_SCAN,
	DDB_OP_CREATE_TABLE,
	DDB_OP_DESCRIBE_TABLE,
	DDB_OP_UPDATE_TTL,
	DDB_OP_DESCRIBE_TTL,
	DDB_OP__COUNT
};

#define METRICS_LATENCY_BUCKETS 14

struct metrics_histogram {
	uint64_t count;
	uint64_t errors;
	uint64_t sum_us;
	uint64_t le[METRICS_LATENCY_BUCKETS]; /* non-cumulative bucket counts */
};

struct metrics {
	uint64_t counters[MC__COUNT];
	struct metrics_histogram ddb[DDB_OP__COUNT];
	uint64_t locks_held; /* gauge, set by the lock engine */
};

void metrics_init(struct metrics *m);
/* All functions accept m == NULL and then do nothing. */
void metrics_inc(struct metrics *m, enum metric_counter c);
uint64_t metrics_get(const struct metrics *m, enum metric_counter c);
void metrics_set_held(struct metrics *m, uint64_t n);
/* One DynamoDB request (a single HTTP exchange) of op took us microseconds. */
void metrics_ddb_observe(struct metrics *m, enum ddb_op op, int64_t us,
			 bool ok);
/* Appends the Prometheus text exposition of everything. */
int metrics_render(const struct metrics *m, struct buf *out);

#endif
