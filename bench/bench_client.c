/* bench_client: the direct floors' DynamoDB client, lock rows and CPU
 * clock (see bench_client.h). Threads: open and close from the main
 * thread; the rest from any. */
#include "bench_client.h"

#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "awsreq.h"
#include "clk.h"
#include "creds.h"
#include "ddb.h"
#include "http.h"

int bench_client_open(struct bench_client *bc, const char *endpoint)
{
	struct creds_config cc = { 0 };

	memset(bc, 0, sizeof(*bc));
	if (http_global_init())
		return -1;
	bc->creds = creds_chain_new(&cc);
	if (bc->creds) {
		struct awsreq_config rc_cfg = {
			.endpoint = endpoint,
			.region = "us-east-1",
			.service = "dynamodb",
			.creds = bc->creds,
		};

		bc->req = awsreq_new(&rc_cfg);
	}
	bc->ddb = bc->req ? ddb_new(bc->req) : NULL;
	if (!bc->ddb) {
		bench_client_close(bc);
		return -1;
	}
	return 0;
}

void bench_client_close(struct bench_client *bc)
{
	ddb_free(bc->ddb);
	awsreq_free(bc->req);
	creds_chain_free(bc->creds);
	http_global_cleanup();
	memset(bc, 0, sizeof(*bc));
}

struct ddb_item *bench_lock_key(const char *key)
{
	struct ddb_item *k = ddb_item_new();

	if (k && (ddb_item_set_s(k, "lock_key", key) ||
		  ddb_item_set_s(k, "sort_key", "-"))) {
		ddb_item_free(k);
		k = NULL;
	}
	return k;
}

struct ddb_item *bench_lock_row(const char *key, const char *rvn,
				const char *cmd)
{
	struct ddb_item *item = bench_lock_key(key);
	int64_t now_ms = clk_sys_real_ms();
	bool failed;

	if (!item)
		return NULL;
	failed = ddb_item_set_s(item, "owner_name", "bench") ||
		 ddb_item_set_n(item, "lease_duration", 30) ||
		 ddb_item_set_s(item, "record_version_number", rvn) ||
		 ddb_item_set_n(item, "expiry_time", now_ms / 1000 + 3600) ||
		 ddb_item_set_s(item, "lockfs_host", "bench") ||
		 ddb_item_set_n(item, "lockfs_pid", getpid()) ||
		 ddb_item_set_n(item, "lockfs_uid", 0) ||
		 ddb_item_set_n(item, "lockfs_gid", 0) ||
		 ddb_item_set_n(item, "lockfs_mode", 0644) ||
		 ddb_item_set_s(item, "lockfs_cmd", cmd) ||
		 ddb_item_set_n(item, "lockfs_acquired", now_ms) ||
		 ddb_item_set_n(item, "lockfs_heartbeat", now_ms);
	if (failed) {
		ddb_item_free(item);
		return NULL;
	}
	return item;
}

int64_t bench_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}
