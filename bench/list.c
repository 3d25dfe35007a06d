/* list: what a directory listing costs, read directly, for bench/list.sh.
 *
 *   populate ENDPOINT TABLE DIR N THREADS
 *           makes the directory DIR (its marker) and writes N live lock
 *           rows DIR/k00000.. as another lockfs mount would
 *           (store_ddb_record_to_item: lockfs_parent included; lease
 *           1 h), from THREADS threads
 *   query ENDPOINT TABLE DIR ROUNDS
 *           the floor: a raw paginated Query of the index lockfs_parent
 *           for DIR (eventually consistent, every attribute), ROUNDS times
 *   scan ENDPOINT TABLE DIR ROUNDS
 *           the old way: a paginated consistent Scan of the whole table
 *           filtered by the prefix "DIR/", ROUNDS times
 *   ls DIR ROUNDS
 *           what `ls -l` does through a mount: opendir, readdir and an
 *           lstat of every entry, ROUNDS times
 *
 * query, scan and ls print "<mode> rounds=R items=N pages=P median_ms=...
 * min_ms=... max_ms=..." (pages: requests per round). One thread each but
 * populate's; lockfs's own DynamoDB client. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "awsreq.h"
#include "clk.h"
#include "creds.h"
#include "ddb.h"
#include "record.h"
#include "store_ddb.h"
#include "text.h"

#define MAX_ROUNDS 1000

struct client {
	struct creds_chain *creds;
	struct awsreq *req;
	struct ddb *ddb;
};

static int client_open(struct client *c, const char *endpoint)
{
	struct creds_config cc = { 0 };

	if (http_global_init())
		return -1;
	c->creds = creds_chain_new(&cc);
	struct awsreq_config cfg = {
		.endpoint = endpoint,
		.region = "us-east-1",
		.service = "dynamodb",
		.creds = c->creds,
	};
	c->req = c->creds ? awsreq_new(&cfg) : NULL;
	c->ddb = c->req ? ddb_new(c->req) : NULL;
	return c->ddb ? 0 : -1;
}

static void client_close(struct client *c)
{
	ddb_free(c->ddb);
	awsreq_free(c->req);
	creds_chain_free(c->creds);
	http_global_cleanup();
}

struct filler {
	struct ddb *ddb;
	const char *table, *dir;
	long from, to;
	int failures;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	char key[4096];

	for (long i = f->from; i < f->to; i++) {
		struct lock_record r;
		struct ddb_item *it = NULL;

		record_init(&r);
		snprintf(key, sizeof(key), "%s/k%05ld", f->dir, i);
		if (record_set_str(&r.key, key) ||
		    record_set_str(&r.owner, "bench:other") ||
		    text_uuid4(r.rvn)) {
			f->failures++;
			record_fini(&r);
			continue;
		}
		r.lease_ms = 3600 * 1000;
		r.expiry_real_s = clk_sys_real_ms() / 1000 + 7200;
		r.has_lockfs = true;
		r.acquired_real_ms = r.heartbeat_real_ms = clk_sys_real_ms();
		r.mode = 0644;
		r.pid = 4242;
		if (record_set_str(&r.host, "bench-host") ||
		    record_set_str(&r.cmd, "bench") ||
		    store_ddb_record_to_item(&r, &it) ||
		    ddb_put_item(f->ddb, f->table, it, NULL, NULL, NULL))
			f->failures++;
		ddb_item_free(it);
		record_fini(&r);
	}
	return NULL;
}

static int populate(struct ddb *d, const char *table, const char *dir, long n,
		    int threads)
{
	struct filler fs[64];
	pthread_t tid[64];
	int failures = 0;

	if (threads < 1 || threads > 64 || n < 1)
		return 2;
	/* The directory, as mkdir makes it. */
	struct store *st = store_ddb_new(d, table, 30000);
	struct dir_record dr;
	int rc;

	if (!st)
		return 1;
	dir_record_init(&dr);
	dr.key = strdup(dir);
	dr.mode = 0755;
	dr.created_real_ms = clk_sys_real_ms();
	rc = dr.key ? st->ops->put_dir(st, &dr, NULL, 0) : -ENOMEM;
	dir_record_fini(&dr);
	store_free(st);
	if (rc && rc != -EEXIST)
		return 1;
	for (int i = 0; i < threads; i++) {
		fs[i] = (struct filler){
			d, table, dir, n * i / threads, n * (i + 1) / threads, 0
		};
		pthread_create(&tid[i], NULL, fill, &fs[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		failures += fs[i].failures;
	}
	printf("populate dir=%s rows=%ld failures=%d\n", dir, n, failures);
	return failures ? 1 : 0;
}

/* One paginated read of every page: its items and pages. */
static int read_all(struct ddb *d, const char *table, bool query,
		    const struct ddb_read *rd, long *items, long *pages)
{
	struct ddb_item *start = NULL;
	int rc;

	*items = *pages = 0;
	do {
		struct ddb_page page = { 0 };

		rc = query ? ddb_query(d, table, rd, start, &page, NULL)
			   : ddb_scan(d, table, rd, start, &page, NULL);
		ddb_item_free(start);
		start = page.last_key;
		page.last_key = NULL;
		*items += (long)page.n;
		(*pages)++;
		ddb_page_fini(&page);
	} while (!rc && start);
	ddb_item_free(start);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *mode, int64_t *us, int rounds, long items,
		   long pages)
{
	qsort(us, (size_t)rounds, sizeof(*us), cmp_i64);
	printf("%s rounds=%d items=%ld pages=%ld median_ms=%.2f min_ms=%.2f "
	       "max_ms=%.2f\n",
	       mode, rounds, items, pages, us[rounds / 2] / 1000.0,
	       us[0] / 1000.0, us[rounds - 1] / 1000.0);
}

static int read_rounds(struct ddb *d, const char *table, const char *dir,
		       bool query, int rounds)
{
	struct ddb_item *vals = ddb_item_new();
	char *p = NULL;
	int64_t us[MAX_ROUNDS];
	long items = 0, pages = 0;
	int rc = 0;

	if (!vals || rounds < 1 || rounds > MAX_ROUNDS ||
	    asprintf(&p, query ? "/%s/" : "%s/", dir) < 0)
		return 2;
	struct ddb_read rd = {
		.key_condition = query ? "lockfs_parent = :p" : NULL,
		.index = query ? STORE_DDB_INDEX : NULL,
		.filter = query ? NULL
				: "(sort_key = :lk OR sort_key = :dir) AND "
				  "begins_with(lock_key, :p)",
		.values = vals,
		.consistent = !query,
	};
	if (ddb_item_set_s(vals, ":p", p) ||
	    (!query && (ddb_item_set_s(vals, ":lk", RECORD_SORT_LOCK) ||
			ddb_item_set_s(vals, ":dir", RECORD_SORT_DIR))))
		rc = 2;
	for (int i = 0; !rc && i < rounds; i++) {
		int64_t t0 = clk_sys_mono_us();

		rc = read_all(d, table, query, &rd, &items, &pages);
		us[i] = clk_sys_mono_us() - t0;
	}
	if (!rc)
		report(query ? "query" : "scan", us, rounds, items, pages);
	ddb_item_free(vals);
	free(p);
	return rc ? 1 : 0;
}

static int ls_rounds(const char *dir, int rounds)
{
	int64_t us[MAX_ROUNDS];
	long items = 0;

	if (rounds < 1 || rounds > MAX_ROUNDS)
		return 2;
	for (int i = 0; i < rounds; i++) {
		int64_t t0 = clk_sys_mono_us();
		DIR *d = opendir(dir);
		struct dirent *de;
		struct stat st;

		if (!d) {
			perror(dir);
			return 1;
		}
		items = 0;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			if (fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW)) {
				perror(de->d_name);
				closedir(d);
				return 1;
			}
			items++;
		}
		closedir(d);
		us[i] = clk_sys_mono_us() - t0;
	}
	report("ls", us, rounds, items, 0);
	return 0;
}

int main(int argc, char **argv)
{
	struct client c;
	int rc;

	if (argc == 4 && !strcmp(argv[1], "ls"))
		return ls_rounds(argv[2], atoi(argv[3]));
	if (argc < 6 || (strcmp(argv[1], "populate") && argc != 6)) {
		fprintf(stderr,
			"usage: list populate ENDPOINT TABLE DIR N THREADS\n"
			"       list query|scan ENDPOINT TABLE DIR ROUNDS\n"
			"       list ls DIR ROUNDS\n");
		return 2;
	}
	if (client_open(&c, argv[2]))
		return 1;
	if (!strcmp(argv[1], "populate") && argc == 7)
		rc = populate(c.ddb, argv[3], argv[4], atol(argv[5]),
			      atoi(argv[6]));
	else if (!strcmp(argv[1], "query") || !strcmp(argv[1], "scan"))
		rc = read_rounds(c.ddb, argv[3], argv[4],
				 !strcmp(argv[1], "query"), atoi(argv[5]));
	else
		rc = 2;
	client_close(&c);
	return rc;
}
