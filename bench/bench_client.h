/* bench_client: what the direct floors of bench_cycle share (cycle.c's
 * "direct", renew_floor.c's "renew"): lockfs's own DynamoDB client on an
 * endpoint, the lock row lockfs writes, and this process's CPU time. */
#ifndef LOCKFS_BENCH_CLIENT_H
#define LOCKFS_BENCH_CLIENT_H

#include <stdint.h>

struct creds_chain;
struct awsreq;
struct ddb;
struct ddb_item;

struct bench_client {
	struct creds_chain *creds;
	struct awsreq *req;
	struct ddb *ddb; /* thread-safe: every worker shares it */
};

/* The client for endpoint (credentials from the environment, us-east-1).
 * 0, or -1 with nothing left to close. */
int bench_client_open(struct bench_client *bc, const char *endpoint);
void bench_client_close(struct bench_client *bc);

/* The key of lock row key (lock_key, sort_key "-"), or NULL. */
struct ddb_item *bench_lock_key(const char *key);
/* The row lockfs writes for a lock of key held with rvn (holder "bench",
 * command cmd), or NULL. */
struct ddb_item *bench_lock_row(const char *key, const char *rvn,
				const char *cmd);

/* This process's CPU time (user + system), in microseconds. */
int64_t bench_cpu_us(void);

#endif
