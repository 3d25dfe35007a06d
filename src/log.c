/* log: owns the process-wide log level and sink. Written once in log_setup()
 * before any thread starts, read by every thread afterwards. Every message
 * is escaped as one line (text_escape_to) after formatting: names, owners,
 * commands and data of other users can neither start a forged line nor
 * steer the terminal of whoever reads the journal. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "text.h"

static enum log_level log_level_now = LOGL_WARN;
static bool log_to_syslog;

void log_setup(enum log_level level, bool use_syslog, const char *ident)
{
	log_level_now = level;
	log_to_syslog = use_syslog;
	if (use_syslog)
		openlog(ident ? ident : "lockfs", LOG_PID, LOG_DAEMON);
}

bool log_enabled(enum log_level level)
{
	return level <= log_level_now;
}

static const char *const level_names[] = { "error", "warning", "info",
					   "debug" };

void log_msg(enum log_level level, const char *tag, const char *fmt, ...)
{
	static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO,
					   LOG_DEBUG };
	char raw[1024], line[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(raw))
		n = sizeof(raw) - 1;
	text_escape_to(line, sizeof(line), raw, (size_t)n);
	if (log_to_syslog) {
		syslog(syslog_prio[level], "%s: %s", tag, line);
		return;
	}
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld lockfs %s %s: %s\n", tm.tm_hour,
		tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, level_names[level],
		tag, line);
}
