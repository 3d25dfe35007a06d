/* log: owns the process-wide log level and sink. Written once in log_setup()
 * before any thread starts, read by every thread afterwards. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

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
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
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
