/* base_srvclk: the server clock. The Date parser (RFC 7231 IMF-fixdate:
 * known values, every month and leap years, blanks and case, and what it
 * refuses); one answer's offset sample; the estimator on a fake base clock
 * (wall clock until the first sample, the median of recent samples against
 * odd Dates, old samples dropped, a reset, wall-clock steps that do not move
 * it, refused samples that change nothing); a time that never runs
 * backwards for the estimate's jitter but follows a real step back; and
 * readers racing writers.
 * Threads: the last case runs four. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "clk.h"
#include "log.h"
#include "srvclk.h"

static int parse(const char *s, int64_t *out)
{
	return srvclk_parse_date(s, strlen(s), out);
}

static int64_t parsed(const char *s)
{
	int64_t v = -1;

	CHECK_INT(parse(s, &v), 0);
	return v;
}

static void check_parse(void)
{
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr",
					      "May", "Jun", "Jul", "Aug",
					      "Sep", "Oct", "Nov", "Dec" };
	int64_t v;
	int m;

	/* RFC 7231's example and DynamoDB Local's answer. */
	CHECK_INT(parsed("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
	CHECK_INT(parsed("Mon, 23 Nov 2026 18:30:24 GMT"), 1795458624);
	CHECK_INT(parsed("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
	CHECK_INT(parsed("Fri, 31 Dec 9999 23:59:59 GMT"), 253402300799LL);
	/* Leap days, and years that are not leap years. */
	CHECK_INT(parsed("Tue, 29 Feb 2028 12:00:00 GMT"), 1835438400);
	CHECK_INT(parsed("Tue, 29 Feb 2000 00:00:00 GMT"), 951782400);
	CHECK(parse("Sun, 29 Feb 2100 00:00:00 GMT", &v) == -EINVAL);
	CHECK(parse("Sun, 29 Feb 2027 00:00:00 GMT", &v) == -EINVAL);
	/* Every month's first day agrees with timegm. */
	for (m = 0; m < 12; m++) {
		char s[64];
		struct tm tm = { .tm_year = 2026 - 1900,
				 .tm_mon = m,
				 .tm_mday = 1,
				 .tm_hour = 7 };

		snprintf(s, sizeof(s), "Wed, 01 %s 2026 07:00:00 GMT",
			 months[m]);
		CHECK_INT(parsed(s), (int64_t)timegm(&tm));
	}
	/* A leap second is the next second. */
	CHECK_INT(parsed("Wed, 31 Dec 2026 23:59:60 GMT"),
		  parsed("Fri, 01 Jan 2027 00:00:00 GMT"));
	/* Blanks around it, any case of the names; the weekday is not
	 * checked against the date. */
	CHECK_INT(parsed("  Sun, 06 Nov 1994 08:49:37 GMT\r\n"), 784111777);
	CHECK_INT(parsed("SUN, 06 nov 1994 08:49:37 GMT"), 784111777);
	CHECK_INT(parsed("Mon, 06 Nov 1994 08:49:37 GMT"), 784111777);
	/* Not parsed past len. */
	CHECK_INT(srvclk_parse_date("Sun, 06 Nov 1994 08:49:37 GMTxyz", 29, &v),
		  0);
	CHECK_INT(v, 784111777);

	/* Refused: the obsolete formats, other zones, bad fields. */
	static const char *const bad[] = {
		"",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nov 1994 08:49:37 +0000",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 94 08:49:37 GMT",
		"Sun, 06 Nov 1994 8:49:37 GMT",
		"Sun 06 Nov 1994 08:49:37 GMT ",
		"Xyz, 06 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nox 1994 08:49:37 GMT",
		"Sun, 00 Nov 1994 08:49:37 GMT",
		"Sun, 31 Nov 1994 08:49:37 GMT",
		"Sun, 32 Dec 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1994 08:49:61 GMT",
		"Sun, 06 Nov 1994 08:49:3x GMT",
		"Sun, 06 Nov -994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT GMT",
		"Sun, 06 Nov 1994 08:49:37 GM",
		NULL,
	};
	for (m = 0; bad[m]; m++) {
		v = 42;
		if (parse(bad[m], &v) != -EINVAL) {
			fprintf(stderr, "parsed: \"%s\"\n", bad[m]);
			CHECK(0);
		}
		CHECK_INT(v, 42);
	}
	CHECK(srvclk_parse_date(NULL, 0, &v) == -EINVAL);
	/* Truncated by len. */
	CHECK(srvclk_parse_date("Sun, 06 Nov 1994 08:49:37 GMT", 28, &v) ==
	      -EINVAL);
}

#define DATE_A	 "Mon, 23 Nov 2026 18:30:24 GMT"
#define DATE_A_S 1795458624LL

static void check_sample(void)
{
	int64_t off;

	/* Sent at mono 1000, answered at 1100: the Date's second, plus
	 * half a second, was the server's time at mono 1050. */
	CHECK_INT(srvclk_sample(DATE_A, strlen(DATE_A), 1000, 1100, &off), 0);
	CHECK_INT(off, DATE_A_S * 1000 + 500 - 1050);
	/* A round trip of 0 and of exactly the cap are fine. */
	CHECK_INT(srvclk_sample(DATE_A, strlen(DATE_A), 7, 7, &off), 0);
	CHECK_INT(off, DATE_A_S * 1000 + 500 - 7);
	CHECK_INT(srvclk_sample(DATE_A, strlen(DATE_A), 0, SRVCLK_MAX_RTT_MS,
				&off),
		  0);
	/* Refused: a reply before its request, a round trip over the cap, an
	 * unparseable Date, a Date before 2000. */
	CHECK(srvclk_sample(DATE_A, strlen(DATE_A), 1100, 1000, &off) ==
	      -EINVAL);
	CHECK(srvclk_sample(DATE_A, strlen(DATE_A), 0, SRVCLK_MAX_RTT_MS + 1,
			    &off) == -EINVAL);
	CHECK(srvclk_sample("soon", 4, 0, 1, &off) == -EINVAL);
	CHECK(srvclk_sample("Sun, 06 Nov 1994 08:49:37 GMT", 29, 0, 1, &off) ==
	      -EINVAL);
}

/* A Date string for epoch seconds, into b (64 bytes). */
static const char *format_date(int64_t s, char *b)
{
	time_t t = (time_t)s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(b, 64, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return b;
}

/* The same in one of four rotating buffers (main thread only). */
static const char *date_of(int64_t s)
{
	static char out[4][64];
	static int next;

	return format_date(s, out[next++ % 4]);
}

/* One answer whose Date says server_ms, with a 20 ms round trip centred
 * on the fake base clock's now. */
static int feed(struct srvclk *sc, struct clk_fake *f, int64_t server_ms)
{
	const char *d = date_of(server_ms / 1000);
	int64_t now = clk_mono_ms(&f->clk);

	return srvclk_observe(sc, d, strlen(d), now - 10, now + 10);
}

/* A refusal for the signing time whose Date says server_ms. */
static int reset_at(struct srvclk *sc, struct clk_fake *f, int64_t server_ms)
{
	const char *d = date_of(server_ms / 1000);
	int64_t now = clk_mono_ms(&f->clk);

	return srvclk_reset(sc, d, strlen(d), now - 10, now + 10);
}

static void check_estimator(void)
{
	const int64_t host_real = 1795458000000LL; /* the host's wall clock */
	const int64_t behind = 7200 * 1000;	   /* the host is 2 h behind */
	struct clk_fake f;
	struct srvclk *sc;
	const struct clk *c;
	int64_t srv, i;

	clk_fake_init(&f, host_real);
	sc = srvclk_new(&f.clk);
	CHECK(sc);
	c = srvclk_clock(sc);

	/* Before any answer: the base clock, unchanged. */
	CHECK_INT(clk_real_ms(c), host_real);
	CHECK_INT(clk_mono_ms(c), clk_mono_ms(&f.clk));
	CHECK_INT(srvclk_skew_ms(sc), 0);
	CHECK_INT(srvclk_samples(sc), 0);

	/* A refused sample changes nothing. */
	CHECK(srvclk_observe(sc, "garbage", 7, 0, 1) == -EINVAL);
	CHECK(srvclk_observe(sc, NULL, 0, 0, 1) == -EINVAL);
	CHECK_INT(srvclk_samples(sc), 0);
	CHECK_INT(clk_real_ms(c), host_real);

	/* One answer from a server 2 h ahead: real_ms is the server's time
	 * to within the Date's second. Answers at every phase of the second
	 * keep it there. */
	for (i = 0; i < 20; i++) {
		srv = clk_real_ms(&f.clk) + behind;
		CHECK_INT(feed(sc, &f, srv), 0);
		CHECK(llabs(clk_real_ms(c) - srv) <= 510);
		CHECK(llabs(srvclk_skew_ms(sc) - behind) <= 510);
		clk_fake_advance(&f, 337);
	}
	CHECK_INT(srvclk_samples(sc), SRVCLK_SAMPLES);
	/* Time goes on between answers. */
	srv = clk_real_ms(&f.clk) + behind;
	clk_fake_advance(&f, 60000);
	CHECK(llabs(clk_real_ms(c) - (srv + 60000)) <= 510);

	/* A few odd Dates (a proxy, a bad answer) move nothing: four of nine
	 * samples a day off. */
	srv = clk_real_ms(&f.clk) + behind;
	for (i = 0; i < SRVCLK_SAMPLES / 2; i++)
		CHECK_INT(feed(sc, &f, srv - 86400000LL), 0);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510);

	/* A step of the host's wall clock (its real_ms only; NTP or
	 * date -s) does not move the server's time: it is kept against the
	 * monotonic clock. The skew seen changes by the step. */
	srv = clk_real_ms(c);
	__atomic_add_fetch(&f.real_ms, -3600 * 1000, __ATOMIC_SEQ_CST);
	CHECK_INT(clk_real_ms(c), srv);
	CHECK(llabs(srvclk_skew_ms(sc) - (behind + 3600 * 1000)) <= 510);
	__atomic_add_fetch(&f.real_ms, 3600 * 1000, __ATOMIC_SEQ_CST);

	/* A reset whose Date is far behind the time the nine samples agree
	 * on changes nothing: one refusal with a Date two days old made the
	 * time two days early, every expiry_time with it, and DynamoDB's
	 * TTL deleted a live lock. */
	srv = clk_real_ms(c);
	CHECK_INT(reset_at(sc, &f, srv - 2 * 86400000LL), -EALREADY);
	CHECK_INT(srvclk_samples(sc), SRVCLK_SAMPLES);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510);
	/* One ahead is the safe side: a reset trusts it alone, at once. */
	srv = clk_real_ms(&f.clk) + behind + 300 * 1000;
	CHECK_INT(reset_at(sc, &f, srv), 0);
	CHECK_INT(srvclk_samples(sc), 1);
	CHECK(llabs(clk_real_ms(c) - srv) <= 1010);
	CHECK(llabs(srvclk_skew_ms(sc) - behind - 300 * 1000) <= 1010);
	/* ... and one behind too, when no majority contradicts it. */
	srv = clk_real_ms(&f.clk) - 300 * 1000;
	CHECK_INT(reset_at(sc, &f, srv), 0);
	CHECK(reset_at(sc, &f, srv) == 0);
	CHECK(srvclk_reset(sc, "x", 1, 0, 1) == -EINVAL);
	CHECK_INT(srvclk_samples(sc), 1);
	CHECK(llabs(clk_real_ms(c) - srv) <= 1010);
	CHECK(llabs(srvclk_skew_ms(sc) + 300 * 1000) <= 1010);

	/* Samples older than SRVCLK_MAX_AGE_MS are dropped when the next
	 * one comes: a later answer alone moves the time forward, but not
	 * back (a lone odd Date must not make expiry_time early); a majority
	 * of samples does. */
	clk_fake_advance(&f, SRVCLK_MAX_AGE_MS + 1);
	srv = clk_real_ms(c);
	CHECK_INT(feed(sc, &f, srv - 86400000LL), 0);
	CHECK_INT(srvclk_samples(sc), 1);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510);
	clk_fake_advance(&f, SRVCLK_MAX_AGE_MS + 1);
	srv = clk_real_ms(&f.clk) + 42 * 1000;
	CHECK_INT(feed(sc, &f, srv), 0);
	CHECK_INT(srvclk_samples(sc), 1);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510);
	srv = clk_real_ms(&f.clk) + 30 * 1000;
	for (i = 2; i < SRVCLK_MAJORITY; i++) /* 4 samples in all */
		CHECK_INT(feed(sc, &f, srv), 0);
	CHECK(clk_real_ms(c) - srv >= 11000); /* still the later time */
	CHECK_INT(feed(sc, &f, srv), 0);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510); /* a majority: back */
	clk_fake_advance(&f, SRVCLK_MAX_AGE_MS + 1);
	srv = clk_real_ms(&f.clk) + 42 * 1000;
	CHECK_INT(feed(sc, &f, srv), 0);
	CHECK_INT(srvclk_samples(sc), 1);
	CHECK(llabs(clk_real_ms(c) - srv) <= 510);

	/* Two samples: their mean (the median of an even count). */
	CHECK_INT(feed(sc, &f, srv + 10000), 0);
	CHECK_INT(srvclk_samples(sc), 2);
	CHECK(llabs(clk_real_ms(c) - (srv + 5000)) <= 510);
	srvclk_free(sc);
	srvclk_free(NULL);

	/* The system clocks by default. */
	sc = srvclk_new(NULL);
	CHECK(sc);
	CHECK(llabs(clk_real_ms(srvclk_clock(sc)) - clk_sys_real_ms()) < 1000);
	CHECK(llabs(clk_mono_ms(srvclk_clock(sc)) - clk_sys_mono_ms()) < 1000);
	srvclk_free(sc);
}

/* The time never runs backwards for the jitter of the estimate (answers at
 * every phase of the Date's second, round trips of 0 to 200 ms), stays
 * within a second of the server's, and still follows a real step back. */
static void check_monotone(void)
{
	struct clk_fake f;
	struct srvclk *sc;
	const struct clk *c;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	int64_t last = 0, now, t, err, rtt, truth = 3600 * 1000;
	char b[64];
	int i;

	clk_fake_init(&f, 1795458000123LL);
	sc = srvclk_new(&f.clk);
	CHECK(sc);
	c = srvclk_clock(sc);
	for (i = 0; i < 2000; i++) {
		/* The server's clock is stepped back by 0.5 s at i = 1000
		 * (ignored: the time stays at most SRVCLK_BACKSTEP_MS ahead),
		 * by 10 s more at i = 1500 (followed once the median has it).
		 */
		if (i == 1000)
			truth -= 500;
		if (i == 1500)
			truth -= 10000;
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		rtt = (int64_t)(rng % 201);
		now = clk_mono_ms(&f.clk);
		/* The server stamps its Date at a random point of the trip. */
		format_date((clk_real_ms(&f.clk) + truth +
			     (int64_t)((rng >> 16) % (uint64_t)(rtt + 1))) /
				    1000,
			    b);
		CHECK_INT(srvclk_observe(sc, b, strlen(b), now, now + rtt), 0);
		t = clk_real_ms(c);
		err = t - (clk_real_ms(&f.clk) + truth);
		if (i >= 1500 && i <= 1500 + SRVCLK_SAMPLES / 2) {
			/* Back by 10 s once most samples have it. */
			if (i == 1500 + SRVCLK_SAMPLES / 2)
				CHECK(llabs(err) <= 1000 && t < last - 5000);
		} else if (t < last || err < -1000 ||
			   err > (i >= 1000 && i < 1500
					  ? SRVCLK_BACKSTEP_MS + 1000
					  : 1000)) {
			fprintf(stderr, "i=%d t-last=%lld err=%lld\n", i,
				(long long)(t - last), (long long)err);
			CHECK(0);
		}
		last = t;
		clk_fake_advance(&f, 1 + (int64_t)((rng >> 32) % 1500));
	}
	srvclk_free(sc);
}

/* Readers see a sane time while writers feed samples from other threads. */
struct race {
	struct srvclk *sc;
	int64_t server_offset_ms;
	int bad; /* atomic */
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < 20000; i++) {
		int64_t now = clk_sys_mono_ms();
		char b[64];
		const char *d = format_date(
			(clk_sys_real_ms() + r->server_offset_ms) / 1000, b);

		if (srvclk_observe(r->sc, d, strlen(d), now, now))
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < 200000; i++) {
		int64_t t = clk_real_ms(srvclk_clock(r->sc)) -
			    clk_sys_real_ms() - r->server_offset_ms;

		/* Before the first sample: the system clock itself. */
		if (llabs(t) > 2000 && llabs(t + r->server_offset_ms) > 2000)
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void check_threads(void)
{
	struct race r = { .server_offset_ms = -5400 * 1000 };
	pthread_t w[2], rd[2];
	int i;

	r.sc = srvclk_new(NULL);
	CHECK(r.sc);
	for (i = 0; i < 2; i++) {
		CHECK_INT(pthread_create(&w[i], NULL, race_writer, &r), 0);
		CHECK_INT(pthread_create(&rd[i], NULL, race_reader, &r), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
		pthread_join(rd[i], NULL);
	}
	CHECK_INT(r.bad, 0);
	CHECK_INT(srvclk_samples(r.sc), SRVCLK_SAMPLES);
	CHECK(llabs(srvclk_skew_ms(r.sc) - r.server_offset_ms) <= 1100);
	srvclk_free(r.sc);
}

int main(int argc, char **argv)
{
	/* The skew warnings are expected here. */
	log_setup(LOGL_ERR, false, "base_srvclk");
	check_cases(argc, argv);
	CHECK_CASE(check_parse);
	CHECK_CASE(check_sample);
	CHECK_CASE(check_estimator);
	CHECK_CASE(check_monotone);
	CHECK_CASE(check_threads);
	CHECK_DONE();
}
