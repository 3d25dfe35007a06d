/* base_metrics: the counters by filesystem operation (what
 * lockfs_fuse_requests_total shows): named once, counted from several
 * threads at once without a lost increment, an unnamed or out-of-range
 * operation ignored, and rendered one line per operation in Prometheus
 * text beside the DynamoDB request counters. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "metrics.h"

#define THREADS	   4
#define PER_THREAD 20000

static const char *const names[] = { "lookup", "create", "unlink" };

static void *count_many(void *arg)
{
	struct metrics *m = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		metrics_count_op(m, 1);
		if (i % 2)
			metrics_count_op(m, 2);
	}
	return NULL;
}

static void test_counted_by_threads(void)
{
	struct metrics m;
	pthread_t t[THREADS];

	metrics_init(&m);
	metrics_name_ops(&m, names, 3);
	for (int i = 0; i < THREADS; i++)
		CHECK_INT(pthread_create(&t[i], NULL, count_many, &m), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_INT(metrics_get_op(&m, 0), 0);
	CHECK_INT(metrics_get_op(&m, 1), THREADS * PER_THREAD);
	CHECK_INT(metrics_get_op(&m, 2), THREADS * PER_THREAD / 2);
}

static void test_unnamed_ignored(void)
{
	struct metrics m;

	metrics_init(&m);
	metrics_count_op(&m, 0); /* nothing named yet */
	metrics_name_ops(&m, names, 2);
	metrics_count_op(&m, 2); /* "unlink" was not named */
	metrics_count_op(&m, -1);
	metrics_count_op(&m, METRICS_OPS_MAX);
	metrics_count_op(NULL, 0);
	CHECK_INT(metrics_get_op(&m, 0), 0);
	CHECK_INT(metrics_get_op(&m, 1), 0);
	CHECK_INT(metrics_get_op(&m, 2), 0);
	CHECK_INT(metrics_get_op(NULL, 0), 0);
}

static void test_rendered(void)
{
	struct metrics m;
	struct buf b = BUF_INIT;
	const char *s;

	metrics_init(&m);
	CHECK_INT(metrics_render(&m, &b), 0);
	CHECK(!strstr(buf_str(&b), "lockfs_fuse_requests_total"));
	buf_fini(&b);

	metrics_name_ops(&m, names, 3);
	metrics_count_op(&m, 0);
	metrics_count_op(&m, 0);
	metrics_count_op(&m, 2);
	b = (struct buf)BUF_INIT;
	CHECK_INT(metrics_render(&m, &b), 0);
	s = buf_str(&b);
	CHECK(strstr(s, "# TYPE lockfs_fuse_requests_total counter\n"));
	CHECK(strstr(s, "\nlockfs_fuse_requests_total{op=\"lookup\"} 2\n"));
	CHECK(strstr(s, "\nlockfs_fuse_requests_total{op=\"create\"} 0\n"));
	CHECK(strstr(s, "\nlockfs_fuse_requests_total{op=\"unlink\"} 1\n"));
	CHECK(strstr(s, "lockfs_acquires_total 0\n"));
	buf_fini(&b);
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_counted_by_threads);
	CHECK_CASE(test_unnamed_ignored);
	CHECK_CASE(test_rendered);
	CHECK_DONE();
}
