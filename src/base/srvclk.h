/* srvclk: the server's clock, learned from the Date header of its answers.
 *
 * The lock row's TTL (expiry_time), its heartbeat and acquire times and the
 * SigV4 signing time must be in a time DynamoDB agrees with, whatever the
 * host's wall clock says: a holder whose clock is hours behind would
 * otherwise write a TTL already in the past, and DynamoDB's TTL sweep would
 * delete its live lock. A struct srvclk is a struct clk whose real_ms is
 * DynamoDB's time as estimated from the Date of recent answers, and whose
 * mono_ms is the base clock's.
 *
 * The estimate is kept against the base clock's monotonic time, not its
 * wall clock (server time = base mono + offset), so a step of the host's
 * wall clock (NTP, an operator's date -s) does not move it. Each answer
 * gives one sample: its Date (1 s resolution) was stamped between the
 * request's send and the answer's arrival, so the sample is
 * Date + 0.5 s - (sent + received) / 2, good to 0.5 s plus half the round
 * trip. The published offset is the median of the last samples, so a few
 * odd Dates (a proxy, a bad answer) move nothing. It moves forward at once
 * but backwards only by more than SRVCLK_BACKSTEP_MS (or after a reset), so
 * that the jitter of the estimate never makes the time run backwards; the
 * time is then at most that much ahead of the server's. Further back only
 * on the median of SRVCLK_MAJORITY samples or more, or on a reset that
 * no such majority contradicts: an early time is the unsafe side, as the
 * rows' TTL would be early. Before the first sample real_ms is the base
 * clock's wall clock.
 *
 * Thread-safe: any thread may read the clock (one atomic load) or feed
 * samples (a mutex around the small ring of samples). */
#ifndef LOCKFS_SRVCLK_H
#define LOCKFS_SRVCLK_H

#include <stddef.h>
#include <stdint.h>

#include "clk.h"

#define SRVCLK_SAMPLES	   9	       /* the median is taken over this many */
#define SRVCLK_MAX_RTT_MS  30000       /* slower answers give no sample */
#define SRVCLK_MAX_AGE_MS  900000      /* older samples are dropped */
#define SRVCLK_MIN_DATE_S  946684800LL /* 2000-01-01: earlier is bogus */
#define SRVCLK_BACKSTEP_MS 2000	       /* smaller backward moves are ignored */
#define SRVCLK_MAJORITY	   (SRVCLK_SAMPLES / 2 + 1) /* to move back further */
/* A warning is logged when the host's wall clock is this far from the
 * server's (and again when that changes by as much). */
#define SRVCLK_WARN_SKEW_MS 5000

struct srvclk;

/* base: the clocks to correct (NULL: the system clocks); borrowed. NULL on
 * ENOMEM. */
struct srvclk *srvclk_new(const struct clk *base);
void srvclk_free(struct srvclk *s);

/* The corrected clock: mono_ms is the base's, real_ms the server's time.
 * Valid as long as s. */
const struct clk *srvclk_clock(struct srvclk *s);

/* One answer's Date header value (len bytes, need not be NUL-terminated),
 * with the base clock's mono_ms read just before the request was sent and
 * just after the answer arrived. Returns 0 when the sample was used, else
 * -EINVAL (no Date, not an IMF-fixdate, before SRVCLK_MIN_DATE_S, or a round
 * trip that is negative or longer than SRVCLK_MAX_RTT_MS). */
int srvclk_observe(struct srvclk *s, const char *date, size_t len,
		   int64_t sent_mono_ms, int64_t recv_mono_ms);

/* The server refused a request for its signing time: forget the samples so
 * far (they led to a time the server rejects) and take this answer's alone.
 * Same arguments and results as srvclk_observe, and -EALREADY (nothing
 * changed) when the answer's Date is more than SRVCLK_BACKSTEP_MS behind a
 * time that SRVCLK_MAJORITY recent samples agree on: one odd answer must
 * not make the time early (expiry_time, and so the TTL, with it). */
int srvclk_reset(struct srvclk *s, const char *date, size_t len,
		 int64_t sent_mono_ms, int64_t recv_mono_ms);

/* Server time minus the base clock's wall clock, in ms (0 before the first
 * sample): how far the host's clock is behind (positive) or ahead. */
int64_t srvclk_skew_ms(struct srvclk *s);
/* Samples currently held (0 .. SRVCLK_SAMPLES). */
int srvclk_samples(struct srvclk *s);

/* Parses an RFC 7231 IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the
 * format every HTTP/1.1 server sends, into epoch seconds. Leading and
 * trailing blanks are ignored; names of days and months are matched
 * without regard to case; the weekday is not checked against the date.
 * Returns 0 or -EINVAL (anything else, an impossible date or time included;
 * a leap second's :60 is read as the next second). */
int srvclk_parse_date(const char *s, size_t len, int64_t *epoch_s);

/* The offset sample one answer gives (server ms minus mono ms), for tests;
 * 0 or -EINVAL as srvclk_observe. */
int srvclk_sample(const char *date, size_t len, int64_t sent_mono_ms,
		  int64_t recv_mono_ms, int64_t *offset_ms);

#endif
