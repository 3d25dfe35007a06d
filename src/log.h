/* log: level-checked logging with a subsystem tag; stderr in the foreground,
 * syslog when daemonized. Thread-safe (one write per message). */
#ifndef LOCKFS_LOG_H
#define LOCKFS_LOG_H

#include <stdbool.h>

enum log_level {
	LOGL_ERR = 0,
	LOGL_WARN = 1,
	LOGL_INFO = 2,
	LOGL_DEBUG = 3,
};

/* Set once at start-up, before threads exist. */
void log_setup(enum log_level level, bool use_syslog, const char *ident);
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_at(lvl, tag, ...)                                                  \
	do {                                                                   \
		if (log_enabled(lvl))                                          \
			log_msg(lvl, tag, __VA_ARGS__);                        \
	} while (0)
#define log_err(tag, ...)   log_at(LOGL_ERR, tag, __VA_ARGS__)
#define log_warn(tag, ...)  log_at(LOGL_WARN, tag, __VA_ARGS__)
#define log_info(tag, ...)  log_at(LOGL_INFO, tag, __VA_ARGS__)
#define log_debug(tag, ...) log_at(LOGL_DEBUG, tag, __VA_ARGS__)

#endif
