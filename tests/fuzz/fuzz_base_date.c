/* fuzz_base_date: the HTTP Date parser and the server-clock estimator on
 * arbitrary bytes. A date that parses must come back the same through its
 * canonical IMF-fixdate form, and feeding it to a server clock must leave
 * a published time within a day of the date. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "srvclk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The canonical form of epoch seconds: "Sun, 06 Nov 1994 08:49:37 GMT". */
static int format_date(int64_t s, char out[64])
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed",
					    "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr",
					      "May", "Jun", "Jul", "Aug",
					      "Sep", "Oct", "Nov", "Dec" };
	time_t t = (time_t)s;
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		return -1;
	snprintf(out, 64, "%s, %02d %s %04d %02d:%02d:%02d GMT",
		 days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
		 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int64_t epoch, again, off;
	struct clk_fake base;
	struct srvclk *sc;
	char canon[64];

	log_setup(LOGL_ERR, false, "fuzz"); /* no skew warning per input */
	if (srvclk_parse_date(s, size, &epoch) == 0) {
		/* Years 0000..9999 only. */
		if (epoch < -62167219200LL || epoch > 253402300800LL)
			abort();
		/* The round trip holds within 4-digit years: a leap second
		 * (:60, read as the next second) of 9999-12-31T23:59 is the
		 * first second of year 10000. */
		if (epoch >= 0 && epoch < 253402300800LL &&
		    format_date(epoch, canon) == 0 &&
		    (srvclk_parse_date(canon, strlen(canon), &again) ||
		     again != epoch))
			abort();
	}
	clk_fake_init(&base, 0);
	sc = srvclk_new(&base.clk);
	if (!sc)
		return 0;
	if (srvclk_observe(sc, s, size, 1000, 1000 + (int64_t)(size % 50)) ==
	    0) {
		if (srvclk_parse_date(s, size, &epoch) ||
		    epoch < SRVCLK_MIN_DATE_S ||
		    srvclk_sample(s, size, 1000, 1000 + (int64_t)(size % 50),
				  &off))
			abort();
		if (llabs(clk_real_ms(srvclk_clock(sc)) - epoch * 1000) >
		    86400000LL)
			abort();
	} else if (srvclk_samples(sc) != 0 ||
		   clk_real_ms(srvclk_clock(sc)) != 0) {
		abort(); /* a refused sample changes nothing */
	}
	srvclk_free(sc);
	return 0;
}
