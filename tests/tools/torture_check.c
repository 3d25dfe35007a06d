/* lockfs-torture-check: the judge of the torture test (tests/fs/torture.t).
 * Single-threaded. Reads the logs the workers wrote (one line a cycle, see
 * torture_worker.c):
 *
 *   KEY MOUNT PID METHOD OUTCOME FENCE ENTER_NS EXIT_NS CONFIRMED FSYNC STATE
 *   WALL_MS TRUST_NS
 *
 *   lockfs-torture-check LOG...
 *
 * and asserts, for each key, over the confirmed intervals (acquired, and
 * the fsync at the end returned 0): no writer's overlaps any other ([enter,
 * exit], times from the one CLOCK_MONOTONIC of this host), readers (the
 * shared idioms, flocksh-* and fcntlrd-*) overlap only readers, and in
 * enter order a writer's fence is greater than every fence before it
 * (an equal fence on two holders is a failure) while a reader's is at
 * least every writer's before it (readers get the current fence).
 * Then, more strictly, over the trusted intervals: [enter, exit] when
 * confirmed, else [enter, TRUST_NS] when poll(2) still said the lock was
 * trusted (doc/semantics.md, principle 4: the holder is told it lost the
 * lock before anyone else can take it), no two overlap either.
 * Prints figures as "name value" lines, then one OVERLAP, FENCE or TRUST
 * line per violation (both records, at most 50 of each). Exit status 0 when
 * there is no violation, 1 when there is, 2 on usage or unreadable logs. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SHOWN 50

struct rec {
	char key[128], mount[32], method[24], outcome[32], fsync_res[32];
	char state[16];
	int pid, confirmed;
	long long fence;
	uint64_t enter_ns, exit_ns, wall_ms, trust_ns;
	uint64_t end_ns; /* of the interval being judged */
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
		   " %d %31s %15s %" SCNu64 " %" SCNu64,
		   r->key, r->mount, &r->pid, r->method, r->outcome, &r->fence,
		   &r->enter_ns, &r->exit_ns, &r->confirmed, r->fsync_res,
		   r->state, &r->wall_ms, &r->trust_ns) != 13)
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

/* A record as printed in a violation: its line, then its enter time on
 * this host's wall clock (UTC), to find the moment in the daemons' logs. */
static void print_rec(const struct rec *r)
{
	time_t t = (time_t)(r->wall_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	printf("%s [%02d:%02d:%02d.%03dZ]", r->line, tm.tm_hour, tm.tm_min,
	       tm.tm_sec, (int)(r->wall_ms % 1000));
}

static void print_violation(const char *tag, const struct rec *a,
			    const struct rec *b)
{
	printf("%s ", tag);
	print_rec(a);
	printf(" | ");
	print_rec(b);
	printf("\n");
}

/* By key, then by enter. */
static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = *(struct rec *const *)a;
	const struct rec *y = *(struct rec *const *)b;
	int c;

	c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->enter_ns != y->enter_ns)
		return x->enter_ns < y->enter_ns ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

struct verdict {
	long overlaps, fence_errors, nofence;
	long shared_overlaps; /* reader intervals overlapping another reader */
};

/* The shared idioms (torture_worker.c's method names). */
static bool is_reader(const struct rec *r)
{
	return !strncmp(r->method, "flocksh-", 8) ||
	       !strncmp(r->method, "fcntlrd-", 8);
}

/* One key's intervals v[0..n), sorted by enter: overlaps (tag) and, when
 * fences is set, fences that do not strictly increase. */
static void judge_key(struct rec **v, size_t n, const char *tag, bool fences,
		      struct verdict *out)
{
	/* The latest end of any interval so far, and of a writer's; the
	 * greatest fence so far, and a writer's. */
	const struct rec *last_end = NULL, *last_wend = NULL;
	const struct rec *last_fence = NULL, *last_wfence = NULL;
	const struct rec *last_rend = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rec *r = v[i];
		bool rd = is_reader(r);
		/* A writer may overlap nobody, a reader no writer. */
		const struct rec *lim = rd ? last_wend : last_end;

		if (lim && r->enter_ns < lim->end_ns) {
			if (out->overlaps < MAX_SHOWN)
				print_violation(tag, lim, r);
			out->overlaps++;
		}
		if (rd && last_rend && r->enter_ns < last_rend->end_ns)
			out->shared_overlaps++;
		if (!last_end || r->end_ns > last_end->end_ns)
			last_end = r;
		if (!rd && (!last_wend || r->end_ns > last_wend->end_ns))
			last_wend = r;
		if (rd && (!last_rend || r->end_ns > last_rend->end_ns))
			last_rend = r;
		if (!fences)
			continue;
		if (r->fence <= 0) {
			out->nofence++;
			continue;
		}
		if (rd ? last_wfence && r->fence < last_wfence->fence
		       : last_fence && r->fence <= last_fence->fence) {
			if (out->fence_errors < MAX_SHOWN)
				print_violation("FENCE",
						rd ? last_wfence : last_fence,
						r);
			out->fence_errors++;
		}
		if (!last_fence || r->fence > last_fence->fence)
			last_fence = r;
		if (!rd && (!last_wfence || r->fence > last_wfence->fence))
			last_wfence = r;
	}
}

/* Judges the intervals that trusted is 0: confirmed ([enter, exit]), 1:
 * confirmed or trusted by poll (to TRUST_NS when not confirmed). */
static void judge(bool trusted, struct verdict *out)
{
	struct rec **v = calloc(nrecs + 1, sizeof(*v));
	size_t n = 0, i, from;

	if (!v)
		abort();
	for (i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];

		if (r->confirmed)
			r->end_ns = r->exit_ns;
		else if (trusted && !strcmp(r->outcome, "held") && r->trust_ns)
			r->end_ns = r->trust_ns;
		else
			continue;
		v[n++] = r;
	}
	qsort(v, n, sizeof(*v), cmp_rec);
	for (from = 0; from < n; from = i) {
		for (i = from; i < n && !strcmp(v[i]->key, v[from]->key); i++)
			;
		judge_key(v + from, i - from, trusted ? "TRUST" : "OVERLAP",
			  !trusted, out);
	}
	free(v);
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
	struct verdict conf = { 0 }, trust = { 0 };
	long acquisitions = 0, confirmed = 0, trusted_only = 0;
	long long max_fence = 0;
	size_t i;
	int a;

	if (argc < 2) {
		fprintf(stderr, "usage: lockfs-torture-check LOG...\n");
		return 2;
	}
	for (a = 1; a < argc; a++)
		if (load(argv[a]))
			return 2;
	for (i = 0; i < nrecs; i++) {
		const struct rec *r = &recs[i];

		acquisitions += !strcmp(r->outcome, "held");
		confirmed += r->confirmed;
		trusted_only += !r->confirmed && r->trust_ns &&
				!strcmp(r->outcome, "held");
		if (r->confirmed && r->fence > max_fence)
			max_fence = r->fence;
		count(&keys, r->key, r);
		count(&methods, r->method, r);
		count(&mounts, r->mount, r);
		tally_of(&outcomes, r->outcome)->acquisitions++;
	}
	judge(false, &conf);
	judge(true, &trust);
	printf("records %zu\nbad_lines %ld\nacquisitions %ld\n", nrecs,
	       bad_lines, acquisitions);
	printf("confirmed %ld\nunconfirmed %ld\nmax_fence %lld\n", confirmed,
	       acquisitions - confirmed, max_fence);
	printf("trusted_unconfirmed %ld\nconfirmed_nofence %ld\n", trusted_only,
	       conf.nofence);
	printf("overlaps %ld\nfence_errors %ld\ntrust_overlaps %ld\n",
	       conf.overlaps, conf.fence_errors, trust.overlaps);
	printf("shared_overlaps %ld\n", conf.shared_overlaps);
	print_tallies("key", &keys);
	print_tallies("method", &methods);
	print_tallies("mount", &mounts);
	for (i = 0; i < outcomes.n; i++)
		printf("outcome %s %ld\n", outcomes.v[i].name,
		       outcomes.v[i].acquisitions);
	return conf.overlaps || conf.fence_errors || trust.overlaps ? 1 : 0;
}
