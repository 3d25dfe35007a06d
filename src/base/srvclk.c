/* srvclk: the server's clock from the Date of its answers (see srvclk.h).
 * Owns the ring of recent offset samples (under mu: whichever thread
 * received an answer) and the published offset (atomic: read by every
 * thread that asks the time, written under mu). */
#include "srvclk.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

struct sample {
	int64_t offset_ms; /* server ms - base mono ms */
	int64_t at_mono_ms;
};

struct srvclk {
	struct clk clk; /* first: handed out as the corrected clock */
	const struct clk *base;
	atomic_bool have;	   /* an offset is published */
	_Atomic int64_t offset_ms; /* server ms - base mono ms */
	pthread_mutex_t mu;
	struct sample ring[SRVCLK_SAMPLES]; /* mu */
	int n, next;			    /* mu */
	bool warned;			    /* mu */
	int64_t warned_skew_ms;		    /* mu */
};

/* ---- the Date header -------------------------------------------------- */

static const char *const day_names[] = { "Mon", "Tue", "Wed", "Thu",
					 "Fri", "Sat", "Sun" };
static const char *const month_names[] = { "Jan", "Feb", "Mar", "Apr",
					   "May", "Jun", "Jul", "Aug",
					   "Sep", "Oct", "Nov", "Dec" };

static int find_name(const char *p, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strncasecmp(p, names[i], 3))
			return i;
	return -1;
}

/* Reads exactly n decimal digits. */
static int digits(const char *p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31 };

	return m == 1 && is_leap(y) ? 29 : days[m];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int srvclk_parse_date(const char *s, size_t len, int64_t *epoch_s)
{
	/* "Sun, 06 Nov 1994 08:49:37 GMT" */
	static const char shape[] = "www, dd mmm yyyy hh:mm:ss GMT";
	const size_t n = sizeof(shape) - 1;
	int day, mon, year, hh, mm, ss;

	if (!s)
		return -EINVAL;
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
		       s[len - 1] == '\r' || s[len - 1] == '\n'))
		len--;
	if (len != n)
		return -EINVAL;
	if (find_name(s, day_names, 7) < 0 || s[3] != ',' || s[4] != ' ' ||
	    s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[19] != ':' ||
	    s[22] != ':' || s[25] != ' ' || strncmp(s + 26, "GMT", 3))
		return -EINVAL;
	mon = find_name(s + 8, month_names, 12);
	if (mon < 0 || digits(s + 5, 2, &day) || digits(s + 12, 4, &year) ||
	    digits(s + 17, 2, &hh) || digits(s + 20, 2, &mm) ||
	    digits(s + 23, 2, &ss))
		return -EINVAL;
	if (day < 1 || day > days_in_month(year, mon) || hh > 23 || mm > 59 ||
	    ss > 60)
		return -EINVAL;
	*epoch_s = days_from_civil(year, mon + 1, day) * 86400 + hh * 3600 +
		   mm * 60 + ss;
	return 0;
}

int srvclk_sample(const char *date, size_t len, int64_t sent_mono_ms,
		  int64_t recv_mono_ms, int64_t *offset_ms)
{
	int64_t date_s;

	if (recv_mono_ms < sent_mono_ms ||
	    recv_mono_ms - sent_mono_ms > SRVCLK_MAX_RTT_MS)
		return -EINVAL;
	if (srvclk_parse_date(date, len, &date_s) || date_s < SRVCLK_MIN_DATE_S)
		return -EINVAL;
	/* The server stamped a time in [Date, Date + 1 s) at some moment
	 * between send and receive: take the middle of both. */
	*offset_ms = date_s * 1000 + 500 - sent_mono_ms +
		     (sent_mono_ms - recv_mono_ms) / 2;
	return 0;
}

/* ---- the clock -------------------------------------------------------- */

static int64_t srv_mono(const struct clk *c)
{
	const struct srvclk *s = c->ctx;

	return clk_mono_ms(s->base);
}

static int64_t srv_real(const struct clk *c)
{
	struct srvclk *s = c->ctx;

	if (!atomic_load(&s->have))
		return clk_real_ms(s->base);
	return clk_mono_ms(s->base) + atomic_load(&s->offset_ms);
}

struct srvclk *srvclk_new(const struct clk *base)
{
	struct srvclk *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->base = base ? base : &clk_system;
	s->clk.mono_ms = srv_mono;
	s->clk.real_ms = srv_real;
	s->clk.ctx = s;
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void srvclk_free(struct srvclk *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

const struct clk *srvclk_clock(struct srvclk *s)
{
	return &s->clk;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Drops samples older than SRVCLK_MAX_AGE_MS (mu held). */
static void drop_old_locked(struct srvclk *s, int64_t now_mono_ms)
{
	struct sample keep[SRVCLK_SAMPLES];
	int i, k = 0;

	for (i = 0; i < s->n; i++) {
		/* Oldest first, so that the ring keeps its order. */
		const struct sample *x =
			&s->ring[(s->next - s->n + i + SRVCLK_SAMPLES) %
				 SRVCLK_SAMPLES];

		if (now_mono_ms - x->at_mono_ms <= SRVCLK_MAX_AGE_MS)
			keep[k++] = *x;
	}
	memcpy(s->ring, keep, sizeof(keep[0]) * (size_t)k);
	s->n = k;
	s->next = k % SRVCLK_SAMPLES;
}

static int64_t median_locked(const struct srvclk *s)
{
	int64_t v[SRVCLK_SAMPLES];
	int i;

	for (i = 0; i < s->n; i++)
		v[i] = s->ring[i].offset_ms;
	qsort(v, (size_t)s->n, sizeof(v[0]), cmp_i64);
	if (s->n % 2)
		return v[s->n / 2];
	return v[s->n / 2 - 1] + (v[s->n / 2] - v[s->n / 2 - 1]) / 2;
}

/* Tells the operator once, and again when it changes by as much, that the
 * host's clock is off (mu held). */
static void warn_skew_locked(struct srvclk *s, int64_t skew_ms)
{
	int64_t moved = skew_ms - s->warned_skew_ms;

	if (llabs(skew_ms) < SRVCLK_WARN_SKEW_MS ||
	    (s->warned && llabs(moved) < SRVCLK_WARN_SKEW_MS))
		return;
	s->warned = true;
	s->warned_skew_ms = skew_ms;
	log_warn("clock",
		 "this host's clock is %lld.%03lld s %s DynamoDB's; lockfs "
		 "uses DynamoDB's time for lock rows and request signing",
		 (long long)(llabs(skew_ms) / 1000),
		 (long long)(llabs(skew_ms) % 1000),
		 skew_ms > 0 ? "behind" : "ahead of");
}

/* Whether off is behind the published offset by more than
 * SRVCLK_BACKSTEP_MS (mu held). */
static bool behind_locked(const struct srvclk *s, int64_t off)
{
	return atomic_load(&s->have) &&
	       atomic_load(&s->offset_ms) - off > SRVCLK_BACKSTEP_MS;
}

/* Whether the published offset is backed by a majority of a full ring of
 * recent samples, each within SRVCLK_BACKSTEP_MS of it (mu held). */
static bool established_locked(const struct srvclk *s)
{
	int64_t cur = atomic_load(&s->offset_ms);
	int i, near = 0;

	for (i = 0; i < s->n; i++)
		near += llabs(s->ring[i].offset_ms - cur) <= SRVCLK_BACKSTEP_MS;
	return near >= SRVCLK_MAJORITY;
}

/* Publishes a new median (mu held). Forward at once; backwards only by
 * more than SRVCLK_BACKSTEP_MS (or after a reset): the median of 1 s Dates
 * wobbles by a few hundred ms from one answer to the next, and times
 * written one after the other (acquired, then heartbeat) must not run
 * backwards for that. A move back by more than that needs a median of at
 * least SRVCLK_MAJORITY samples: a time too early would make the rows'
 * expiry_time early, and DynamoDB's TTL would delete live locks, so a
 * lone Date (the first after the samples aged out, say) may only move the
 * time forward, the safe side. */
static void publish_locked(struct srvclk *s, int64_t med, bool reset)
{
	int64_t cur = atomic_load(&s->offset_ms);

	if (!reset && atomic_load(&s->have) && med < cur &&
	    (cur - med <= SRVCLK_BACKSTEP_MS || s->n < SRVCLK_MAJORITY))
		return;
	atomic_store(&s->offset_ms, med);
	atomic_store(&s->have, true);
}

static int add_sample(struct srvclk *s, bool reset, const char *date,
		      size_t len, int64_t sent_mono_ms, int64_t recv_mono_ms)
{
	int64_t off, med;
	int rc;

	rc = srvclk_sample(date, len, sent_mono_ms, recv_mono_ms, &off);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->mu);
	drop_old_locked(s, recv_mono_ms);
	/* A refusal whose Date is far behind a time that a majority of
	 * recent answers agree on (those requests were signed with it and
	 * accepted) is an odd answer, not our clock's fault: it gets no say
	 * beyond its sample (srvclk_observe took it already). */
	if (reset && behind_locked(s, off) && established_locked(s)) {
		pthread_mutex_unlock(&s->mu);
		return -EALREADY;
	}
	if (reset)
		s->n = s->next = 0;
	s->ring[s->next] = (struct sample){ off, recv_mono_ms };
	s->next = (s->next + 1) % SRVCLK_SAMPLES;
	if (s->n < SRVCLK_SAMPLES)
		s->n++;
	med = median_locked(s);
	publish_locked(s, med, reset);
	warn_skew_locked(s, clk_mono_ms(s->base) + med - clk_real_ms(s->base));
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int srvclk_observe(struct srvclk *s, const char *date, size_t len,
		   int64_t sent_mono_ms, int64_t recv_mono_ms)
{
	return add_sample(s, false, date, len, sent_mono_ms, recv_mono_ms);
}

int srvclk_reset(struct srvclk *s, const char *date, size_t len,
		 int64_t sent_mono_ms, int64_t recv_mono_ms)
{
	return add_sample(s, true, date, len, sent_mono_ms, recv_mono_ms);
}

int64_t srvclk_skew_ms(struct srvclk *s)
{
	if (!atomic_load(&s->have))
		return 0;
	return clk_mono_ms(s->base) + atomic_load(&s->offset_ms) -
	       clk_real_ms(s->base);
}

int srvclk_samples(struct srvclk *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}
