/* scale: holds many locks on one lockfs mount and watches the daemon keep
 * them: the renewal rate it achieves against the rate the heartbeat period
 * needs, how evenly renewals spread over the seconds, locks lost, the
 * daemon's memory and CPU, and the DynamoDB writes (and their on-demand
 * cost) that holding costs. Driven by bench/scale.sh, which starts DynamoDB
 * Local, the latency proxy and the mount (with -o hold=unlink, so that a
 * lock stays held after its creator closes it).
 *
 *   bench_scale --mnt DIR --pid DAEMON_PID --locks N [--dirs D]
 *               [--threads T] [--hold S] [--settle S] [--acquire-max S]
 *               [--price USD_PER_MILLION_WRU] [--samples FILE]
 *               [--floor RENEWALS_PER_S]
 *
 * Phases: acquire (N open(O_CREAT|O_EXCL) + close, spread round-robin over D
 * directories, by T threads), settle (S seconds, not counted), hold (S
 * seconds). The main thread samples once a second throughout:
 * DIR/.lockfs/metrics, /proc/PID/status (VmRSS) and /proc/PID/stat
 * (utime + stime); with --samples, one line per sample goes to FILE.
 * --floor: the rate the endpoint answered the same renewals at when sent
 * directly (bench_cycle renew, run by scale.sh before the mount): the
 * renewals achieved are also printed against it.
 *
 * Threads: the main thread samples and reports; the T acquirer threads only
 * take indices from an atomic counter and count their own results, which
 * the main thread reads after joining them. The stop flag is atomic. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define MAX_DIRS    4096
#define METRICS_CAP (512 * 1024)
/* Hours in a month, as AWS's pricing calculator counts them. */
#define HOURS_PER_MONTH 730.0

enum op { OP_GET, OP_PUT, OP_UPDATE, OP_DELETE, OP_QUERY, OP_SCAN, OP__COUNT };

static const char *const op_names[OP__COUNT] = {
	"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
};

struct sample {
	int64_t t_us;
	uint64_t hb_ok, hb_failed, lost, held, acquires, retries, throttles;
	uint64_t workers; /* lease workers running */
	uint64_t ops[OP__COUNT];
	double sum_s[OP__COUNT]; /* total request time by operation */
	uint64_t errors;
	long rss_kb;
	uint64_t cpu_ticks;
	int ok; /* the metrics file was read and parsed */
};

struct config {
	const char *mnt;
	const char *samples_path;
	long pid;
	long locks;
	int dirs;
	int threads;
	int hold_s;
	int settle_s;
	int acquire_max_s;
	double price;
	double floor; /* renewals a second sent directly; 0: not measured */
};

struct acquirer {
	const struct config *cfg;
	long ok;
	long failed;
	int first_errno;
	char first_path[512];
};

static atomic_long next_index;
static atomic_int stop_acquiring;

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_until_us(int64_t t_us)
{
	struct timespec ts = { .tv_sec = t_us / 1000000,
			       .tv_nsec = (t_us % 1000000) * 1000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* Reads a whole small file into buf (NUL-terminated); its length or -errno. */
static long read_file(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len + 1 < cap) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return (long)len;
}

/* If line is prefix + OP + "\"} VALUE" for an operation we count: its
 * index, with *value pointing at VALUE; else -1. */
static int op_labelled(const char *line, const char *prefix, const char **value)
{
	size_t n = strlen(prefix), len;
	const char *end;
	int i;

	if (strncmp(line, prefix, n))
		return -1;
	line += n;
	end = strstr(line, "\"} ");
	if (!end)
		return -1;
	len = (size_t)(end - line);
	for (i = 0; i < OP__COUNT; i++)
		if (strlen(op_names[i]) == len &&
		    !strncmp(line, op_names[i], len)) {
			*value = end + 3;
			return i;
		}
	return -1;
}

static int parse_metric_line(struct sample *s, const char *line)
{
	static const struct {
		const char *name;
		size_t off;
	} plain[] = {
		{ "lockfs_heartbeats_ok_total ",
		  offsetof(struct sample, hb_ok) },
		{ "lockfs_heartbeats_failed_total ",
		  offsetof(struct sample, hb_failed) },
		{ "lockfs_lost_total ", offsetof(struct sample, lost) },
		{ "lockfs_locks_held ", offsetof(struct sample, held) },
		{ "lockfs_acquires_total ", offsetof(struct sample, acquires) },
		{ "lockfs_dynamodb_retries_total ",
		  offsetof(struct sample, retries) },
		{ "lockfs_dynamodb_throttles_total ",
		  offsetof(struct sample, throttles) },
		{ "lockfs_lease_workers ", offsetof(struct sample, workers) },
	};
	static const char req[] = "lockfs_dynamodb_requests_total{operation=\"";
	static const char sum[] =
		"lockfs_dynamodb_request_seconds_sum{operation=\"";
	static const char err[] = "lockfs_dynamodb_errors_total{";
	const char *v;
	size_t i;
	int op;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		size_t n = strlen(plain[i].name);

		if (!strncmp(line, plain[i].name, n)) {
			*(uint64_t *)((char *)s + plain[i].off) =
				strtoull(line + n, NULL, 10);
			return 0;
		}
	}
	if (!strncmp(line, err, sizeof(err) - 1)) {
		v = strstr(line, "} ");
		if (v)
			s->errors += strtoull(v + 2, NULL, 10);
		return 0;
	}
	op = op_labelled(line, req, &v);
	if (op >= 0)
		s->ops[op] = strtoull(v, NULL, 10);
	op = op_labelled(line, sum, &v);
	if (op >= 0)
		s->sum_s[op] = strtod(v, NULL);
	return 0;
}

static int read_metrics(const char *mnt, struct sample *s, char *buf)
{
	char path[4096];
	char *line, *save = NULL;
	long n;

	snprintf(path, sizeof(path), "%s/.lockfs/metrics", mnt);
	n = read_file(path, buf, METRICS_CAP);
	if (n < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#' && parse_metric_line(s, line))
			return -EINVAL;
	return 0;
}

static int read_proc(long pid, struct sample *s)
{
	char path[64], buf[4096];
	unsigned long long ut, st;
	const char *p;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	p = strstr(buf, "\nVmRSS:");
	s->rss_kb = p ? strtol(p + 7, NULL, 10) : -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	/* Fields after the command name (which may hold spaces and ')'):
	 * state is field 3, utime 14, stime 15. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			 "%llu",
			 &ut, &st) != 2)
		return -EINVAL;
	s->cpu_ticks = ut + st;
	return 0;
}

static void take_sample(const struct config *cfg, struct sample *s, char *buf)
{
	memset(s, 0, sizeof(*s));
	s->t_us = mono_us();
	s->ok = !read_metrics(cfg->mnt, s, buf);
	if (read_proc(cfg->pid, s))
		s->rss_kb = -1;
}

static int read_heartbeat_ms(const char *mnt, long *ms)
{
	char path[4096], buf[8192];
	const char *p;

	snprintf(path, sizeof(path), "%s/.lockfs/status", mnt);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -errno;
	p = strstr(buf, "\nheartbeat: ");
	if (!p)
		return -EINVAL;
	*ms = (long)(strtod(p + 12, NULL) * 1000 + 0.5);
	return *ms > 0 ? 0 : -EINVAL;
}

static void *acquire_worker(void *arg)
{
	struct acquirer *a = arg;
	const struct config *cfg = a->cfg;
	char path[512];
	long i;
	int fd;

	while (!atomic_load(&stop_acquiring)) {
		i = atomic_fetch_add(&next_index, 1);
		if (i >= cfg->locks)
			break;
		snprintf(path, sizeof(path), "%s/scale-%ld/lock-%ld", cfg->mnt,
			 i % cfg->dirs, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0 && !close(fd)) {
			a->ok++;
			continue;
		}
		if (!a->failed++) {
			a->first_errno = errno;
			snprintf(a->first_path, sizeof(a->first_path), "%s",
				 path);
		}
	}
	return NULL;
}

static int make_dirs(const struct config *cfg)
{
	char path[512];
	int d;

	for (d = 0; d < cfg->dirs; d++) {
		snprintf(path, sizeof(path), "%s/scale-%d", cfg->mnt, d);
		if (mkdir(path, 0755) && errno != EEXIST) {
			fprintf(stderr, "scale: mkdir %s: %s\n", path,
				strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static void log_sample(FILE *f, const char *phase, const struct sample *s,
		       const struct sample *prev, long ticks_per_s)
{
	double dt;

	if (!f)
		return;
	dt = (s->t_us - prev->t_us) / 1e6;
	fprintf(f,
		"%s t_us=%lld dt_s=%.3f metrics_ok=%d renewals=%llu "
		"renewals_per_s=%.1f hb_failed=%llu lost=%llu held=%llu "
		"put=%llu update=%llu delete=%llu query=%llu get=%llu "
		"rss_kb=%ld cpu_s=%.2f\n",
		phase, (long long)s->t_us, dt, s->ok,
		(unsigned long long)(s->hb_ok - prev->hb_ok),
		dt > 0 ? (s->hb_ok - prev->hb_ok) / dt : 0.0,
		(unsigned long long)s->hb_failed, (unsigned long long)s->lost,
		(unsigned long long)s->held,
		(unsigned long long)(s->ops[OP_PUT] - prev->ops[OP_PUT]),
		(unsigned long long)(s->ops[OP_UPDATE] - prev->ops[OP_UPDATE]),
		(unsigned long long)(s->ops[OP_DELETE] - prev->ops[OP_DELETE]),
		(unsigned long long)(s->ops[OP_QUERY] - prev->ops[OP_QUERY]),
		(unsigned long long)(s->ops[OP_GET] - prev->ops[OP_GET]),
		s->rss_kb, (double)s->cpu_ticks / (double)ticks_per_s);
	fflush(f);
}

struct run {
	const struct config *cfg;
	FILE *log;
	char *buf;
	long ticks_per_s;
	long max_rss_kb;
	uint64_t max_workers; /* the lease pool's largest size seen */
	int missed;	      /* samples whose metrics could not be read */
	struct sample last;   /* the newest sample with metrics */
	/* per-second renewal rates during the hold */
	double *rates;
	int n_rates;
};

/* Takes the sample due at t_us into r->last; its renewal rate (since the
 * previous one) in *rate if rate is not NULL. */
static void tick(struct run *r, const char *phase, int64_t t_us, double *rate)
{
	struct sample s;

	sleep_until_us(t_us);
	take_sample(r->cfg, &s, r->buf);
	if (s.rss_kb > r->max_rss_kb)
		r->max_rss_kb = s.rss_kb;
	if (!s.ok) {
		r->missed++;
		return;
	}
	if (s.workers > r->max_workers)
		r->max_workers = s.workers;
	log_sample(r->log, phase, &s, &r->last, r->ticks_per_s);
	if (rate && s.t_us > r->last.t_us)
		*rate = (s.hb_ok - r->last.hb_ok) /
			((s.t_us - r->last.t_us) / 1e6);
	r->last = s;
}

static double per(uint64_t a, uint64_t b, double d)
{
	return d > 0 ? (double)(a - b) / d : 0.0;
}

static void print_ops(const char *what, const struct sample *b,
		      const struct sample *a, double d)
{
	int i;

	printf("  %s", what);
	for (i = 0; i < OP__COUNT; i++)
		if (a->ops[i] != b->ops[i])
			printf(" %s %.2f", op_names[i],
			       per(a->ops[i], b->ops[i], d));
	printf("\n");
}

static void print_latency(const struct sample *b, const struct sample *a)
{
	int i;

	printf("  mean DynamoDB request time (ms):");
	for (i = 0; i < OP__COUNT; i++)
		if (a->ops[i] != b->ops[i])
			printf(" %s %.2f", op_names[i],
			       (a->sum_s[i] - b->sum_s[i]) * 1e3 /
				       (double)(a->ops[i] - b->ops[i]));
	printf("\n");
}

static int acquire_phase(struct run *r, struct sample *before,
			 struct sample *after)
{
	const struct config *cfg = r->cfg;
	struct acquirer acq[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	long ok = 0, failed = 0;
	int64_t t0, next;
	int i, started = 0;
	double secs;

	memset(acq, 0, sizeof(acq));
	*before = r->last;
	t0 = mono_us();
	for (i = 0; i < cfg->threads; i++) {
		acq[i].cfg = cfg;
		if (pthread_create(&tid[i], NULL, acquire_worker, &acq[i]))
			break;
		started++;
	}
	/* Sample while they run; stop them at the deadline. */
	for (next = t0 + 1000000; atomic_load(&next_index) < cfg->locks;
	     next += 1000000) {
		if (next - t0 > (int64_t)cfg->acquire_max_s * 1000000) {
			atomic_store(&stop_acquiring, 1);
			break;
		}
		tick(r, "acquire", next, NULL);
	}
	for (i = 0; i < started; i++) {
		pthread_join(tid[i], NULL);
		ok += acq[i].ok;
		failed += acq[i].failed;
	}
	secs = (mono_us() - t0) / 1e6;
	tick(r, "acquire", mono_us(), NULL);
	*after = r->last;
	printf("acquire: %ld locks in %d directories by %d threads: %ld ok, "
	       "%ld failed, in %.1f s = %.1f acquires per s\n",
	       cfg->locks, cfg->dirs, started, ok, failed, secs, ok / secs);
	for (i = 0; i < started; i++)
		if (acq[i].failed) {
			printf("  first failure: %s: %s\n", acq[i].first_path,
			       strerror(acq[i].first_errno));
			break;
		}
	if (ok)
		print_ops("DynamoDB requests per acquire:", before, after,
			  (double)ok);
	if (ok)
		print_latency(before, after);
	if (ok)
		printf("  daemon CPU while acquiring, per acquire (renewals "
		       "meanwhile included): %.0f us\n",
		       (after->cpu_ticks - before->cpu_ticks) * 1e6 /
			       r->ticks_per_s / ok);
	printf("  locks lost while acquiring: %llu\n",
	       (unsigned long long)(after->lost - before->lost));
	if (atomic_load(&stop_acquiring))
		printf("  stopped at the %d s limit\n", cfg->acquire_max_s);
	return ok ? 0 : -EIO;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* What the hold measured, for the report and the targets line. */
struct hold_result {
	double secs;
	double achieved; /* renewals per s */
	double needed;	 /* N / heartbeat period */
	double busiest;	 /* busiest second / mean of the seconds */
	uint64_t lost;	 /* since mount */
	long max_rss_kb;
};

static void report_spread(const struct run *r, struct hold_result *res)
{
	double mean = 0, *sorted;
	int i, n = r->n_rates;

	for (i = 0; i < n; i++)
		mean += r->rates[i];
	mean = n ? mean / n : 0;
	sorted = n ? malloc(sizeof(double) * (size_t)n) : NULL;
	if (!sorted || mean <= 0) {
		free(sorted);
		return;
	}
	memcpy(sorted, r->rates, sizeof(double) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof(double), cmp_double);
	res->busiest = sorted[n - 1] / mean;
	printf("  renewals in each second (%d seconds): busiest %.0f = %.2fx "
	       "the mean %.1f; median %.0f; quietest %.0f = %.2fx\n",
	       n, sorted[n - 1], res->busiest, mean, sorted[n / 2], sorted[0],
	       sorted[0] / mean);
	free(sorted);
}

/* Writes per second in the hold, their request units and monthly cost. */
static void report_cost(const struct config *cfg, const struct sample *b,
			const struct sample *a, const struct hold_result *res)
{
	double d = res->secs, writes, wru, month, full;

	/* A lock item is well under 1 KB: one write request unit per write. */
	writes = per(a->ops[OP_PUT], b->ops[OP_PUT], d) +
		 per(a->ops[OP_UPDATE], b->ops[OP_UPDATE], d) +
		 per(a->ops[OP_DELETE], b->ops[OP_DELETE], d);
	wru = writes;
	month = wru * 3600 * HOURS_PER_MONTH / 1e6 * cfg->price;
	full = res->needed * 3600 * HOURS_PER_MONTH / 1e6 * cfg->price;
	printf("  DynamoDB writes: %.1f per s = %.1f write request units per "
	       "s\n",
	       writes, wru);
	printf("  on-demand cost at $%.3f per million write request units, "
	       "%.0f h a month:\n",
	       cfg->price, HOURS_PER_MONTH);
	printf("    these writes: $%.2f a month ($%.4f per lock held at the "
	       "end)\n",
	       month, a->held ? month / (double)a->held : 0);
	printf("    one write per lock per period (the rate needed): $%.2f a "
	       "month for %ld locks ($%.4f per lock)\n",
	       full, cfg->locks, cfg->locks ? full / cfg->locks : 0);
}

/* The targets issue 8 sets for 10,000 locks on one mount. */
static const char *verdict(int ok)
{
	return ok ? "yes" : "NO";
}

static void report_targets(const struct hold_result *res)
{
	double ratio = res->needed > 0 ? res->achieved / res->needed : 0;

	printf("  issue 8 targets (set for 10,000 locks on one mount):\n");
	printf("    renewals >= 0.95x needed:        %s (%.3fx)\n",
	       verdict(ratio >= 0.95), ratio);
	if (res->busiest < 0)
		printf("    busiest second <= 1.5x the mean: no data\n");
	else
		printf("    busiest second <= 1.5x the mean: %s (%.2fx)\n",
		       verdict(res->busiest <= 1.5), res->busiest);
	printf("    no lock lost:                    %s (%llu lost)\n",
	       verdict(res->lost == 0), (unsigned long long)res->lost);
	printf("    daemon RSS <= 40 MB:             %s (%.1f MB)\n",
	       verdict(res->max_rss_kb <= 40 * 1024), res->max_rss_kb / 1024.0);
}

static void hold_report(const struct run *r, const struct sample *b,
			const struct sample *a, long hb_ms)
{
	const struct config *cfg = r->cfg;
	struct hold_result res = { .secs = (a->t_us - b->t_us) / 1e6,
				   .busiest = -1 };
	double cpu_s, held_needed;

	res.achieved = per(a->hb_ok, b->hb_ok, res.secs);
	res.needed = (double)cfg->locks * 1000.0 / hb_ms;
	res.lost = a->lost;
	res.max_rss_kb = r->max_rss_kb;
	held_needed = (double)a->held * 1000.0 / hb_ms;
	printf("hold: %.1f s measured (after %d s to settle), heartbeat period "
	       "%.3f s\n",
	       res.secs, cfg->settle_s, hb_ms / 1000.0);
	printf("  renewals per s: %.1f achieved, %.1f needed (N / period): "
	       "%.3fx\n",
	       res.achieved, res.needed,
	       res.needed > 0 ? res.achieved / res.needed : 0);
	if (cfg->floor > 0)
		printf("  against the direct floor (the same UpdateItems sent "
		       "straight, as many in flight as the pool's default): "
		       "%.1f / %.1f = %.3fx\n",
		       res.achieved, cfg->floor, res.achieved / cfg->floor);
	if (a->held != (uint64_t)cfg->locks)
		printf("    (for the %llu locks still held: %.1f needed, "
		       "%.3fx)\n",
		       (unsigned long long)a->held, held_needed,
		       held_needed > 0 ? res.achieved / held_needed : 0);
	report_spread(r, &res);
	printf("  heartbeats failed: %llu; DynamoDB retries %llu, throttles "
	       "%llu, errors %llu\n",
	       (unsigned long long)(a->hb_failed - b->hb_failed),
	       (unsigned long long)(a->retries - b->retries),
	       (unsigned long long)(a->throttles - b->throttles),
	       (unsigned long long)(a->errors - b->errors));
	printf("  locks lost: %llu during the hold, %llu since mount; held at "
	       "the end: %llu of %ld\n",
	       (unsigned long long)(a->lost - b->lost),
	       (unsigned long long)a->lost, (unsigned long long)a->held,
	       cfg->locks);
	printf("  daemon RSS: max %.1f MB over the run, %.1f MB at the end; "
	       "lease workers: at most %llu, %llu at the end\n",
	       r->max_rss_kb / 1024.0, a->rss_kb / 1024.0,
	       (unsigned long long)r->max_workers,
	       (unsigned long long)a->workers);
	cpu_s = (double)(a->cpu_ticks - b->cpu_ticks) / r->ticks_per_s;
	printf("  daemon CPU: %.2f s in the hold (%.2f cores) = %.0f us per "
	       "renewal\n",
	       cpu_s, res.secs > 0 ? cpu_s / res.secs : 0,
	       a->hb_ok > b->hb_ok ? cpu_s * 1e6 / (a->hb_ok - b->hb_ok) : 0);
	print_ops("DynamoDB requests per s:", b, a, res.secs);
	print_latency(b, a);
	report_cost(cfg, b, a, &res);
	report_targets(&res);
}

static int run_all(struct run *r)
{
	const struct config *cfg = r->cfg;
	struct sample acq_before, acq_after, hold_start;
	long hb_ms;
	int64_t t0;
	int i, rc;

	if (read_heartbeat_ms(cfg->mnt, &hb_ms)) {
		fprintf(stderr, "scale: cannot read %s/.lockfs/status\n",
			cfg->mnt);
		return -EIO;
	}
	rc = make_dirs(cfg);
	if (rc)
		return rc;
	take_sample(cfg, &r->last, r->buf);
	if (!r->last.ok) {
		fprintf(stderr, "scale: cannot read %s/.lockfs/metrics\n",
			cfg->mnt);
		return -EIO;
	}
	rc = acquire_phase(r, &acq_before, &acq_after);
	if (rc)
		return rc;
	t0 = mono_us();
	for (i = 1; i <= cfg->settle_s; i++)
		tick(r, "settle", t0 + (int64_t)i * 1000000, NULL);
	hold_start = r->last;
	t0 = mono_us();
	for (i = 1; i <= cfg->hold_s; i++) {
		double rate = -1;

		tick(r, "hold", t0 + (int64_t)i * 1000000, &rate);
		if (rate >= 0)
			r->rates[r->n_rates++] = rate;
	}
	if (r->missed)
		printf("note: %d samples could not read the metrics file\n",
		       r->missed);
	hold_report(r, &hold_start, &r->last, hb_ms);
	return 0;
}

static int usage(void)
{
	fputs("usage: bench_scale --mnt DIR --pid PID --locks N [--dirs D] "
	      "[--threads T]\n"
	      "       [--hold S] [--settle S] [--acquire-max S] "
	      "[--price USD_PER_MILLION_WRU] [--samples FILE]\n"
	      "       [--floor RENEWALS_PER_S]\n",
	      stderr);
	return 2;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
	static const struct option opts[] = {
		{ "mnt", required_argument, NULL, 'm' },
		{ "pid", required_argument, NULL, 'p' },
		{ "locks", required_argument, NULL, 'n' },
		{ "dirs", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "hold", required_argument, NULL, 'H' },
		{ "settle", required_argument, NULL, 's' },
		{ "acquire-max", required_argument, NULL, 'a' },
		{ "price", required_argument, NULL, 'P' },
		{ "samples", required_argument, NULL, 'S' },
		{ "floor", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			cfg->mnt = optarg;
			break;
		case 'p':
			cfg->pid = atol(optarg);
			break;
		case 'n':
			cfg->locks = atol(optarg);
			break;
		case 'd':
			cfg->dirs = atoi(optarg);
			break;
		case 't':
			cfg->threads = atoi(optarg);
			break;
		case 'H':
			cfg->hold_s = atoi(optarg);
			break;
		case 's':
			cfg->settle_s = atoi(optarg);
			break;
		case 'a':
			cfg->acquire_max_s = atoi(optarg);
			break;
		case 'P':
			cfg->price = atof(optarg);
			break;
		case 'S':
			cfg->samples_path = optarg;
			break;
		case 'F':
			cfg->floor = atof(optarg);
			break;
		default:
			return -EINVAL;
		}
	}
	if (!cfg->mnt || cfg->pid < 1 || cfg->locks < 1 || cfg->dirs < 1 ||
	    cfg->dirs > MAX_DIRS || cfg->threads < 1 ||
	    cfg->threads > MAX_THREADS || cfg->hold_s < 2 ||
	    cfg->hold_s > 86400 || cfg->settle_s < 0 || cfg->settle_s > 3600 ||
	    cfg->acquire_max_s < 1 || cfg->acquire_max_s > 86400 ||
	    cfg->price < 0 || cfg->floor < 0)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg = { .dirs = 8,
			      .threads = 8,
			      .hold_s = 60,
			      .settle_s = 5,
			      .acquire_max_s = 1200,
			      .price = 0.625 };
	struct run r = { .cfg = &cfg };
	int rc;

	if (parse_args(argc, argv, &cfg))
		return usage();
	/* Each phase's lines as they come, also into a file (scale.sh's
	 * callers redirect it): a run can be followed, and a profiler
	 * attached at the right phase. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	r.ticks_per_s = sysconf(_SC_CLK_TCK);
	r.buf = malloc(METRICS_CAP);
	r.rates = calloc((size_t)cfg.hold_s, sizeof(double));
	if (!r.buf || !r.rates)
		return 1;
	if (cfg.samples_path) {
		r.log = fopen(cfg.samples_path, "w");
		if (!r.log) {
			fprintf(stderr, "scale: %s: %s\n", cfg.samples_path,
				strerror(errno));
			return 1;
		}
	}
	rc = run_all(&r);
	if (r.log)
		fclose(r.log);
	free(r.buf);
	free(r.rates);
	return rc ? 1 : 0;
}
