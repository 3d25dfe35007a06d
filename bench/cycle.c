/* cycle: the cost of one lock cycle, two ways, in one process.
 *
 *   mount   open(O_CREAT|O_EXCL) + close + unlink of a file in a lockfs
 *           mount (lookup, create, release and unlink reach the daemon)
 *   direct  the two DynamoDB requests such a cycle needs, sent straight
 *           over HTTP with lockfs's own client: PutItem conditioned on
 *           attribute_not_exists, then DeleteItem conditioned on the RVN
 *
 *   flock   flock(LOCK_EX) + flock(LOCK_UN) on a file each thread opened
 *           (O_RDWR|O_CREAT) once before timing (bench/flock.sh)
 *   hold    no cycles: takes H keys with flock for bench/flock.sh and keeps
 *           them until told (below)
 *   stat    stat(DIR) once a "cycle": on a mount with attr_timeout=0 each
 *           is a getattr of its root, which the daemon answers from
 *           memory (bench/cycle.sh: what one kernel request costs it)
 *   renew   no cycles: the renewal floor of bench/scale.sh
 *           (renew_floor.c)
 *
 * usage: cycle mount DIR N THREADS [fresh|dirs|fresh,dirs]
 *        cycle direct ENDPOINT TABLE N THREADS
 *        cycle flock DIR N THREADS        (thread i cycles on DIR/f<i>)
 *        cycle hold DIR H
 *        cycle stat DIR N THREADS
 *        cycle renew ENDPOINT TABLE KEYS THREADS SECONDS
 * hold raises RLIMIT_NOFILE as needed, opens DIR/h<i> (O_RDWR|O_CREAT) and
 * flocks it (LOCK_EX|LOCK_NB) for i < H in a few threads, and prints
 * "held H s=SECONDS"; then it reads commands from stdin, one a line:
 * "free" lets go of every key (LOCK_UN, then close) and prints "free H
 * s=SECONDS", "hold" takes them again and prints "held ...". It exits on
 * stdin's EOF (or SIGTERM), which lets go of whatever it holds; a failed
 * open or flock ends it with status 1.
 * Each thread cycles on its own key (with "fresh", a new key every cycle),
 * all in DIR, or with "dirs" each in a directory of its own (DIR/d<i>,
 * made first): the kernel serializes creates and unlinks per directory.
 * Prints: "<mode> cycles=N threads=T total_s=... per_s=... p50_us=...
 * p90_us=... p99_us=... cpu_us=..." (cpu_us: this process's CPU time per
 * cycle, user and system: for direct, what lockfs's client spends on the
 * two requests; for mount, the system calls into FUSE). The driver script
 * bench/cycle.sh runs both and prints the ratio. With CYCLE_SAMPLES=FILE in the
 * environment, every cycle's time in microseconds is appended to FILE, one per
 * line (for the plots). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_client.h"
#include "clk.h"
#include "ddb.h"
#include "renew_floor.h"
#include "text.h"

struct worker {
	int id;
	long n;
	int64_t *lat_us;
	int failures;
	/* mount */
	const char *dir;
	int fresh;
	int dirs;
	/* direct */
	struct ddb *ddb;
	const char *table;
};

static void *mount_worker(void *arg)
{
	struct worker *w = arg;
	char path[4096];
	long i;

	char dir[3800];

	if (w->dirs) {
		snprintf(dir, sizeof(dir), "%s/d%d", w->dir, w->id);
		if (mkdir(dir, 0755) && errno != EEXIST) {
			w->failures = (int)w->n;
			return NULL;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", w->dir);
	}
	snprintf(path, sizeof(path), "%s/bench-%d", dir, w->id);
	for (i = 0; i < w->n; i++) {
		int64_t t0 = clk_sys_mono_us();
		int fd;

		if (w->fresh)
			snprintf(path, sizeof(path), "%s/bench-%d-%ld", dir,
				 w->id, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || close(fd) || unlink(path))
			w->failures++;
		w->lat_us[i] = clk_sys_mono_us() - t0;
	}
	return NULL;
}

static void *flock_worker(void *arg)
{
	struct worker *w = arg;
	char path[4096];
	long i;
	int fd;

	snprintf(path, sizeof(path), "%s/f%d", w->dir, w->id);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		w->failures = (int)w->n;
		return NULL;
	}
	for (i = 0; i < w->n; i++) {
		int64_t t0 = clk_sys_mono_us();

		if (flock(fd, LOCK_EX) || flock(fd, LOCK_UN))
			w->failures++;
		w->lat_us[i] = clk_sys_mono_us() - t0;
	}
	close(fd);
	return NULL;
}

static void *stat_worker(void *arg)
{
	struct worker *w = arg;
	struct stat st;
	long i;

	for (i = 0; i < w->n; i++) {
		int64_t t0 = clk_sys_mono_us();

		if (stat(w->dir, &st))
			w->failures++;
		w->lat_us[i] = clk_sys_mono_us() - t0;
	}
	return NULL;
}

static void *direct_worker(void *arg)
{
	struct worker *w = arg;
	char key[64], rvn[37];
	long i;

	snprintf(key, sizeof(key), "bench-direct-%d", w->id);
	for (i = 0; i < w->n; i++) {
		struct ddb_item *item, *k = bench_lock_key(key);
		struct ddb_item *vals = ddb_item_new();
		struct ddb_expr put = {
			.condition = "attribute_not_exists(lock_key)"
		};
		struct ddb_expr del = { .condition =
						"record_version_number = :rvn",
					.values = vals };
		struct ddb_call c1 = { 0 }, c2 = { 0 };
		int64_t t0;

		text_uuid4(rvn);
		/* The same item shape lockfs writes. */
		item = bench_lock_row(key, rvn, "cycle");
		t0 = clk_sys_mono_us();
		if (!item || !k || !vals || ddb_item_set_s(vals, ":rvn", rvn) ||
		    ddb_put_item(w->ddb, w->table, item, &put, NULL, &c1) ||
		    ddb_delete_item(w->ddb, w->table, k, &del, DDB_RETURN_NONE,
				    NULL, &c2))
			w->failures++;
		w->lat_us[i] = clk_sys_mono_us() - t0;
		ddb_item_free(item);
		ddb_item_free(k);
		ddb_item_free(vals);
	}
	return NULL;
}

/* hold: H keys taken with flock by HOLD_THREADS threads, each taking the
 * next index; "take" 0 lets them go (LOCK_UN, then close). */
#define HOLD_THREADS 4

struct holder {
	const char *dir;
	long h;
	int *fds;
	int take;
	atomic_long next;
	atomic_int failed;
};

static void *hold_worker(void *arg)
{
	struct holder *hd = arg;
	char path[4096];
	long i;
	int fd;

	while (!atomic_load(&hd->failed) &&
	       (i = atomic_fetch_add(&hd->next, 1)) < hd->h) {
		snprintf(path, sizeof(path), "%s/h%ld", hd->dir, i);
		if (!hd->take) {
			if (flock(hd->fds[i], LOCK_UN))
				goto fail;
			close(hd->fds[i]);
			hd->fds[i] = -1;
			continue;
		}
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			goto fail;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			int e = errno;

			close(fd);
			errno = e;
			goto fail;
		}
		hd->fds[i] = fd;
	}
	return NULL;
fail:
	fprintf(stderr, "cycle hold: %s: %s\n", path, strerror(errno));
	atomic_store(&hd->failed, 1);
	return NULL;
}

/* Takes (take 1) or lets go of (take 0) every key; prints the line. */
static int hold_all(struct holder *hd, int take)
{
	pthread_t tid[HOLD_THREADS];
	int64_t t0 = clk_sys_mono_us();
	int i, started = 0;

	hd->take = take;
	atomic_store(&hd->next, 0);
	for (i = 0; i < HOLD_THREADS; i++)
		if (!pthread_create(&tid[started], NULL, hold_worker, hd))
			started++;
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (!started || atomic_load(&hd->failed))
		return 1;
	printf("%s %ld s=%.1f\n", take ? "held" : "free", hd->h,
	       (clk_sys_mono_us() - t0) / 1e6);
	fflush(stdout);
	return 0;
}

/* RLIMIT_NOFILE at least NEED (the hard limit too, when we may). */
static int raise_nofile(rlim_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = need;
	if (rl.rlim_max < need)
		rl.rlim_max = need;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}

static int hold(const char *dir, long h)
{
	struct holder hd = { .dir = dir, .h = h };
	char line[64];
	int held, rc;

	rc = raise_nofile((rlim_t)h + 64);
	if (rc) {
		fprintf(stderr, "cycle hold: RLIMIT_NOFILE %ld: %s\n", h + 64,
			strerror(-rc));
		return 1;
	}
	hd.fds = calloc((size_t)h, sizeof(int));
	if (!hd.fds)
		return 1;
	rc = hold_all(&hd, 1);
	held = !rc;
	while (!rc && fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "free\n") && held) {
			rc = hold_all(&hd, 0);
			held = 0;
		} else if (!strcmp(line, "hold\n") && !held) {
			rc = hold_all(&hd, 1);
			held = !rc;
		} else {
			fprintf(stderr, "cycle hold: ignored: %s", line);
		}
	}
	/* EOF: exiting closes whatever is held, which lets it go. */
	free(hd.fds);
	return rc;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int run(const char *mode, struct worker *ws, int threads, long n,
	       void *(*fn)(void *))
{
	pthread_t tid[256];
	int64_t *all = calloc((size_t)(n * threads), sizeof(int64_t));
	int64_t t0, total_us, cpu0, cpu;
	int i, failures = 0;
	const char *samples_path;

	if (!all)
		return 1;
	t0 = clk_sys_mono_us();
	cpu0 = bench_cpu_us();
	for (i = 0; i < threads; i++) {
		ws[i].id = i;
		ws[i].n = n;
		ws[i].lat_us = all + (size_t)i * (size_t)n;
		pthread_create(&tid[i], NULL, fn, &ws[i]);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		failures += ws[i].failures;
	}
	total_us = clk_sys_mono_us() - t0;
	cpu = bench_cpu_us() - cpu0;
	qsort(all, (size_t)(n * threads), sizeof(int64_t), cmp64);
	samples_path = getenv("CYCLE_SAMPLES");
	if (samples_path && *samples_path) {
		FILE *f = fopen(samples_path, "a");

		if (!f) {
			perror(samples_path);
			free(all);
			return 1;
		}
		for (long j = 0; j < n * threads; j++)
			fprintf(f, "%lld\n", (long long)all[j]);
		if (fclose(f)) {
			perror(samples_path);
			free(all);
			return 1;
		}
	}
	printf("%s cycles=%ld threads=%d failures=%d total_s=%.3f per_s=%.1f "
	       "p50_us=%lld p90_us=%lld p99_us=%lld cpu_us=%.0f\n",
	       mode, n * threads, threads, failures, total_us / 1e6,
	       (double)(n * threads) / (total_us / 1e6),
	       (long long)all[n * threads / 2],
	       (long long)all[n * threads * 9 / 10],
	       (long long)all[n * threads * 99 / 100],
	       (double)cpu / (double)(n * threads));
	free(all);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct worker ws[256];
	int threads, rc;
	long n;

	memset(ws, 0, sizeof(ws));
	if (argc >= 5 && !strcmp(argv[1], "mount")) {
		n = atol(argv[3]);
		threads = atoi(argv[4]);
		if (n < 1 || threads < 1 || threads > 256)
			return 2;
		const char *how = argc > 5 ? argv[5] : "";
		char name[64];

		for (int i = 0; i < threads; i++) {
			ws[i].dir = argv[2];
			ws[i].fresh = strstr(how, "fresh") != NULL;
			ws[i].dirs = strstr(how, "dirs") != NULL;
		}
		snprintf(name, sizeof(name), "mount%s%s",
			 ws[0].fresh ? "-fresh" : "",
			 ws[0].dirs ? "-dirs" : "");
		return run(name, ws, threads, n, mount_worker);
	}
	if (argc == 6 && !strcmp(argv[1], "direct")) {
		n = atol(argv[4]);
		threads = atoi(argv[5]);
		if (n < 1 || threads < 1 || threads > 256)
			return 2;
		struct bench_client bc;

		if (bench_client_open(&bc, argv[2]))
			return 1;
		for (int i = 0; i < threads; i++) {
			ws[i].ddb = bc.ddb;
			ws[i].table = argv[3];
		}
		rc = run("direct", ws, threads, n, direct_worker);
		bench_client_close(&bc);
		return rc;
	}
	if (argc == 5 &&
	    (!strcmp(argv[1], "flock") || !strcmp(argv[1], "stat"))) {
		n = atol(argv[3]);
		threads = atoi(argv[4]);
		if (n < 1 || threads < 1 || threads > 256)
			return 2;
		for (int i = 0; i < threads; i++)
			ws[i].dir = argv[2];
		return run(argv[1], ws, threads, n,
			   argv[1][0] == 'f' ? flock_worker : stat_worker);
	}
	if (argc == 7 && !strcmp(argv[1], "renew"))
		return renew_floor_main(argc, argv);
	if (argc == 4 && !strcmp(argv[1], "hold")) {
		n = atol(argv[3]);
		if (n < 1 || n > 10000000)
			return 2;
		return hold(argv[2], n);
	}
	fprintf(stderr,
		"usage: cycle mount DIR N THREADS [fresh|dirs|fresh,dirs]\n"
		"       cycle direct ENDPOINT TABLE N THREADS\n"
		"       cycle flock DIR N THREADS\n"
		"       cycle hold DIR H\n"
		"       cycle stat DIR N THREADS\n"
		"       cycle renew ENDPOINT TABLE KEYS THREADS SECONDS\n");
	return 2;
}
