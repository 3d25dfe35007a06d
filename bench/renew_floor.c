/* renew_floor: the direct floor of bench/scale.sh, "cycle renew": how many
 * renewals a second the DynamoDB endpoint answers with THREADS of them in
 * flight, sent straight with lockfs's own client, each the UpdateItem a
 * lockfs heartbeat sends (SET record_version_number, expiry_time and
 * lockfs_heartbeat, conditioned on the previous record_version_number).
 *
 *   cycle renew ENDPOINT TABLE KEYS THREADS SECONDS
 *
 * Each thread first puts its share of KEYS rows (bench-renew-<run>-<t>-<i>,
 * the shape lockfs writes; not timed), then all renew their rows in turn for
 * SECONDS. Prints "renew updates=U threads=T keys=K seconds=S per_s=R
 * mean_ms=M cpu_us=C failures=F" (cpu_us: this process's CPU time per
 * renewal, what lockfs's client spends on one). Exit 1 if any request
 * failed.
 *
 * Threads: the main thread and THREADS workers, which share nothing but
 * the client (struct ddb, thread-safe) and struct start. */
#include "renew_floor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_client.h"
#include "clk.h"
#include "ddb.h"
#include "text.h"

#define RENEW_THREADS_MAX 256
#define RENEW_KEYS_MAX	  1000000
#define RENEW_WARM_S	  5

/* The workers put their rows, wait at ready, the main thread sets until_us,
 * and all pass go (which orders that write before the workers' reads). */
struct start {
	pthread_barrier_t ready, go;
	int64_t from_us;  /* renewals sent from then on count */
	int64_t until_us; /* and none is sent after */
};

struct renewer {
	int id;
	int nkeys;
	struct ddb *ddb;
	const char *table;
	struct start *start;
	char (*rvn)[37];
	long updates;
	long failures;
	int64_t busy_us; /* the requests' time, summed */
};

/* Rows of this run: another run's (same table) are not in its way. */
static long run_id;

static void key_of(const struct renewer *r, int i, char *key, size_t len)
{
	snprintf(key, len, "bench-renew-%ld-%d-%d", run_id, r->id, i);
}

static int put_row(struct renewer *r, int i)
{
	struct ddb_expr put = { .condition = "attribute_not_exists(lock_key)" };
	struct ddb_call c = { 0 };
	struct ddb_item *item;
	char key[64];
	int rc;

	key_of(r, i, key, sizeof(key));
	text_uuid4(r->rvn[i]);
	item = bench_lock_row(key, r->rvn[i], "renew");
	rc = item ? ddb_put_item(r->ddb, r->table, item, &put, NULL, &c) : -1;
	ddb_item_free(item);
	return rc ? -1 : 0;
}

static int renew_row(struct renewer *r, int i)
{
	struct ddb_item *vals = ddb_item_new(), *k;
	struct ddb_expr expr = {
		.update = "SET record_version_number = :new, expiry_time = "
			  ":exp, lockfs_heartbeat = :hb",
		.condition = "record_version_number = :old",
		.values = vals,
	};
	struct ddb_call c = { 0 };
	char key[64], next[37];
	int rc;

	key_of(r, i, key, sizeof(key));
	k = bench_lock_key(key);
	text_uuid4(next);
	rc = !vals || !k || ddb_item_set_s(vals, ":new", next) ||
	     ddb_item_set_s(vals, ":old", r->rvn[i]) ||
	     ddb_item_set_n(vals, ":exp", clk_sys_real_ms() / 1000 + 3600) ||
	     ddb_item_set_n(vals, ":hb", clk_sys_real_ms());
	if (!rc)
		rc = ddb_update_item(r->ddb, r->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &c);
	if (!rc)
		memcpy(r->rvn[i], next, sizeof(next));
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc ? -1 : 0;
}

static void *renewer_main(void *arg)
{
	struct renewer *r = arg;
	int i, setup_failed = 0;

	for (i = 0; i < r->nkeys; i++)
		setup_failed |= put_row(r, i);
	pthread_barrier_wait(&r->start->ready);
	pthread_barrier_wait(&r->start->go);
	if (setup_failed) {
		fprintf(stderr, "renew: thread %d could not put its rows\n",
			r->id);
		r->failures++;
		return NULL;
	}
	for (i = 0; clk_sys_mono_us() < r->start->until_us;
	     i = (i + 1) % r->nkeys) {
		int64_t t0 = clk_sys_mono_us();
		int rc = renew_row(r, i);

		if (t0 < r->start->from_us)
			continue;
		if (rc)
			r->failures++;
		else
			r->updates++;
		r->busy_us += clk_sys_mono_us() - t0;
	}
	return NULL;
}

static void sleep_until(int64_t mono_us)
{
	int64_t left;

	while ((left = mono_us - clk_sys_mono_us()) > 0)
		usleep(left > 100000 ? 100000 : (useconds_t)left);
}

static int run(struct ddb *d, const char *table, int keys, int threads,
	       int seconds)
{
	static struct renewer rs[RENEW_THREADS_MAX];
	pthread_t tid[RENEW_THREADS_MAX];
	struct start start;
	long updates = 0, failures = 0;
	int64_t busy = 0, t0, cpu0, took, cpu;
	int i;

	if (pthread_barrier_init(&start.ready, NULL, (unsigned)threads + 1) ||
	    pthread_barrier_init(&start.go, NULL, (unsigned)threads + 1))
		return 1;
	for (i = 0; i < threads; i++) {
		rs[i] = (struct renewer){
			.id = i, .ddb = d, .table = table, .start = &start
		};
		rs[i].nkeys = keys / threads + (i < keys % threads);
		if (rs[i].nkeys < 1)
			rs[i].nkeys = 1;
		rs[i].rvn = calloc((size_t)rs[i].nkeys, sizeof(*rs[i].rvn));
		if (!rs[i].rvn)
			return 1;
	}
	for (i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, renewer_main, &rs[i]))
			return 1;
	/* Every row is in before the clock starts. */
	pthread_barrier_wait(&start.ready);
	start.from_us = clk_sys_mono_us() + 1000000LL * RENEW_WARM_S;
	start.until_us = start.from_us + 1000000LL * seconds;
	pthread_barrier_wait(&start.go);
	sleep_until(start.from_us);
	t0 = clk_sys_mono_us();
	cpu0 = bench_cpu_us();
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		updates += rs[i].updates;
		failures += rs[i].failures;
		busy += rs[i].busy_us;
		free(rs[i].rvn);
	}
	took = clk_sys_mono_us() - t0;
	cpu = bench_cpu_us() - cpu0;
	pthread_barrier_destroy(&start.ready);
	pthread_barrier_destroy(&start.go);
	printf("renew updates=%ld threads=%d keys=%d seconds=%.3f per_s=%.1f "
	       "mean_ms=%.2f cpu_us=%.0f failures=%ld\n",
	       updates, threads, keys, took / 1e6, updates / (took / 1e6),
	       updates ? busy / 1e3 / (double)(updates + failures) : 0.0,
	       updates ? (double)cpu / (double)updates : 0.0, failures);
	return failures ? 1 : 0;
}

int renew_floor_main(int argc, char **argv)
{
	struct bench_client bc;
	int keys, threads, seconds, rc;

	if (argc != 7)
		return 2;
	keys = atoi(argv[4]);
	threads = atoi(argv[5]);
	seconds = atoi(argv[6]);
	if (keys < 1 || keys > RENEW_KEYS_MAX || threads < 1 ||
	    threads > RENEW_THREADS_MAX || seconds < 1 || seconds > 3600)
		return 2;
	if (bench_client_open(&bc, argv[2]))
		return 1;
	run_id = (long)getpid() * 1000 + (long)(clk_sys_real_ms() % 1000);
	rc = run(bc.ddb, argv[3], keys, threads, seconds);
	bench_client_close(&bc);
	return rc;
}
