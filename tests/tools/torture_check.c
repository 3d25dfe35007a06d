/* lockfs-torture-check: the judge of the torture test (tests/fs/torture.t).
 * Single-threaded. Reads the logs the workers wrote (one line a cycle, see
 * torture_worker.c):
 *
 *   KEY MOUNT PID METHOD OUTCOME FENCE ENTER_NS EXIT_NS CONFIRMED FSYNC STATE
 *
 *   lockfs-torture-check LOG...
 *
 * and asserts, for each key, over the confirmed intervals (acquired, and
 * the fsync at the end returned 0): no two overlap ([enter, exit], times
 * from the one CLOCK_MONOTONIC of this host), and their fences strictly
 * increase in enter order (an equal fence on two holders is a failure).
 * Prints figures as "name value" lines, then one OVERLAP or FENCE line per
 * violation (both records, at most 50 of each). Exit status 0 when there is
 * no violation, 1 when there is, 2 on usage or unreadable logs. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHOWN 50

struct rec {
	char key[128], mount[32], method[24], outcome[32], fsync_res[32];
	char state[16];
	int pid, confirmed;
	long long fence;
	uint64_t enter_ns, exit_ns;
	char *line;
};

struct tally {
	char name[128];
	long acquisitions, confirmed, other;
	long long max_fence;
};

struct tallies {
	struct tally *v;
	size_t n, cap;
};

static struct rec *recs;
static size_t nrecs, caprecs;
static long bad_lines;

static struct tally *tally_of(struct tallies *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v)
			abort();
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	snprintf(t->v[t->n].name, sizeof(t->v[0].name), "%s", name);
	return &t->v[t->n++];
}

static int parse_line(const char *line, struct rec *r)
{
	memset(r, 0, sizeof(*r));
	if (sscanf(line,
		   "%127s %31s %d %23s %31s %lld %" SCNu64 " %" SCNu64
		   " %d %31s %15s",
		   r->key, r->mount, &r->pid, r->method, r->outcome, &r->fence,
		   &r->enter_ns, &r->exit_ns, &r->confirmed, r->fsync_res,
		   r->state) != 11)
		return -EINVAL;
	return 0;
}

static int load(const char *file)
{
	char line[1024];
	FILE *f;

	f = fopen(file, "r");
	if (!f) {
		perror(file);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (nrecs == caprecs) {
			caprecs = caprecs ? 2 * caprecs : 4096;
			recs = realloc(recs, caprecs * sizeof(*recs));
			if (!recs)
				abort();
		}
		if (parse_line(line, &recs[nrecs])) {
			bad_lines++;
			continue;
		}
		recs[nrecs].line = strdup(line);
		nrecs++;
	}
	fclose(f);
	return 0;
}

/* Confirmed intervals first, then by key, then by enter. */
static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c;

	if (x->confirmed != y->confirmed)
		return y->confirmed - x->confirmed;
	c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->enter_ns != y->enter_ns)
		return x->enter_ns < y->enter_ns ? -1 : 1;
	return x->exit_ns < y->exit_ns ? -1 : x->exit_ns > y->exit_ns;
}

struct verdict {
	long overlaps, fence_errors, confirmed_nofence;
};

/* One key's confirmed intervals recs[from..to), sorted by enter. */
static void judge_key(size_t from, size_t to, struct verdict *v)
{
	const struct rec *last_end = NULL, *last_fence = NULL;
	size_t i;

	for (i = from; i < to; i++) {
		const struct rec *r = &recs[i];

		if (last_end && r->enter_ns < last_end->exit_ns) {
			if (v->overlaps < MAX_SHOWN)
				printf("OVERLAP %s | %s\n", last_end->line,
				       r->line);
			v->overlaps++;
		}
		if (!last_end || r->exit_ns > last_end->exit_ns)
			last_end = r;
		if (r->fence <= 0) {
			v->confirmed_nofence++;
			continue;
		}
		if (last_fence && r->fence <= last_fence->fence) {
			if (v->fence_errors < MAX_SHOWN)
				printf("FENCE %s | %s\n", last_fence->line,
				       r->line);
			v->fence_errors++;
		}
		if (!last_fence || r->fence > last_fence->fence)
			last_fence = r;
	}
}

static void count(struct tallies *t, const char *name, const struct rec *r)
{
	struct tally *y = tally_of(t, name);

	if (!strcmp(r->outcome, "held"))
		y->acquisitions++;
	else
		y->other++;
	y->confirmed += r->confirmed;
	if (r->confirmed && r->fence > y->max_fence)
		y->max_fence = r->fence;
}

static void print_tallies(const char *kind, const struct tallies *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		printf("%s %s acquisitions %ld confirmed %ld failed %ld "
		       "max_fence %lld\n",
		       kind, t->v[i].name, t->v[i].acquisitions,
		       t->v[i].confirmed, t->v[i].other, t->v[i].max_fence);
}

/* A one-shot judge: what it allocates lives until it exits. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(int argc, char **argv)
{
	struct tallies keys = { 0 }, methods = { 0 }, mounts = { 0 };
	struct tallies outcomes = { 0 };
	struct verdict v = { 0 };
	long acquisitions = 0, confirmed = 0;
	long long max_fence = 0;
	size_t i, from;
	int a;

	if (argc < 2) {
		fprintf(stderr, "usage: lockfs-torture-check LOG...\n");
		return 2;
	}
	for (a = 1; a < argc; a++)
		if (load(argv[a]))
			return 2;
	qsort(recs, nrecs, sizeof(*recs), cmp_rec);
	for (i = 0; i < nrecs; i++) {
		const struct rec *r = &recs[i];

		acquisitions += !strcmp(r->outcome, "held");
		confirmed += r->confirmed;
		if (r->confirmed && r->fence > max_fence)
			max_fence = r->fence;
		count(&keys, r->key, r);
		count(&methods, r->method, r);
		count(&mounts, r->mount, r);
		tally_of(&outcomes, r->outcome)->acquisitions++;
	}
	for (from = 0; from < nrecs && recs[from].confirmed; from = i) {
		for (i = from; i < nrecs && recs[i].confirmed &&
			       !strcmp(recs[i].key, recs[from].key);
		     i++)
			;
		judge_key(from, i, &v);
	}
	printf("records %zu\nbad_lines %ld\nacquisitions %ld\n", nrecs,
	       bad_lines, acquisitions);
	printf("confirmed %ld\nunconfirmed %ld\nmax_fence %lld\n", confirmed,
	       acquisitions - confirmed, max_fence);
	printf("confirmed_nofence %ld\noverlaps %ld\nfence_errors %ld\n",
	       v.confirmed_nofence, v.overlaps, v.fence_errors);
	print_tallies("key", &keys);
	print_tallies("method", &methods);
	print_tallies("mount", &mounts);
	for (i = 0; i < outcomes.n; i++)
		printf("outcome %s %ld\n", outcomes.v[i].name,
		       outcomes.v[i].acquisitions);
	return v.overlaps || v.fence_errors ? 1 : 0;
}
