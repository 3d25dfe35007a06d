/* log: level-checked logging with a subsystem tag, to one sink: stderr (with
 * sd-daemon "<N>" priority prefixes when stderr is the journal), syslog, or
 * a log file. Thread-safe (one write per message). */
#ifndef LOCKFS_LOG_H
#define LOCKFS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOGL_ERR = 0,
	LOGL_WARN = 1,
	LOGL_INFO = 2,
	LOGL_DEBUG = 3,
};

/* Where a daemon's lines may go; main passes LOG_PLACES_DEFAULT, tests
 * their own paths. */
struct log_places {
	const char *file;	   /* -o log_file, or NULL */
	const char *syslog_socket; /* "/dev/log" */
	const char *fallback_file; /* used when there is no syslog socket */
};

#define LOG_SYSLOG_SOCKET "/dev/log"
#define LOG_FALLBACK_FILE "/var/log/lockfs.log"

/* Set once at start-up, before threads exist: stderr (use_syslog false;
 * "<N>" prefixes when stderr is the journal) or syslog. */
void log_setup(enum log_level level, bool use_syslog, const char *ident);

/* Picks the sink of the mount, before it goes to the background: the log
 * file when one is named (in the foreground too); else in the foreground
 * stderr; in the background stderr when it is the journal, syslog when
 * places->syslog_socket is a socket, else places->fallback_file. Opens the
 * file now (so that a bad path fails at mount time) and keeps it, or a copy
 * of stderr, open for log_start. where gets a phrase for the operator
 * ("syslog (/dev/log)", "/var/log/lockfs.log (no syslog socket at
 * /dev/log)"). 0, or -errno with where saying why (the named file cannot
 * be opened). */
int log_choose(const struct log_places *places, bool foreground, char *where,
	       size_t wherelen);
/* Whether the chosen sink is not the stderr the user is looking at (so
 * that main says where the lines go). */
bool log_chosen_elsewhere(void);
/* Switches to the chosen sink, in the process that stays (after the fork
 * of going to the background): a file or the journal becomes fd 2, so
 * that whatever else writes to stderr (credential helpers) lands there
 * too. Before threads exist. */
void log_start(enum log_level level, const char *ident);

bool log_enabled(enum log_level level);
/* Lines that could not be written to stderr or the log file since the
 * last one that could (a full disk): the next line written is preceded
 * by one that says how many were lost, and why. */
uint64_t log_lines_lost(void);
void log_msg(enum log_level level, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "Connection timed out (ETIMEDOUT)" for -ETIMEDOUT or ETIMEDOUT, into
 * buf; returns buf. */
#define LOG_ERRNO_MAX 96
const char *log_errno(int err, char *buf, size_t len);

/* For a line said at most once per gap_ms: whether it is due at now_ms,
 * *last_ms being when it was last said (0: never), which it then becomes.
 * Atomic: one thread of several wins a due line, with no lock held. */
bool log_gap_due(int64_t *last_ms, int64_t now_ms, int64_t gap_ms);

/* Lines of one kind that come by the thousand at once (one per lock when
 * an outage or a lost session takes them all): at most LOG_BURST_LINES of
 * them in a window of LOG_BURST_MS; the rest are counted, and one line
 * says how many ("N more <what> in the last S s ...") once the window is
 * over: at the next line of the kind, or at log_burst_flush. Thread-safe
 * (one mutex for every burst). */
#define LOG_BURST_LINES 20
#define LOG_BURST_MS	10000
struct log_burst {
	enum log_level level; /* of the "N more" line */
	const char *tag;
	const char *what; /* "heartbeat failures" */
	const char *hint; /* appended to the "N more" line: where to look */
	int64_t start_ms; /* the window's start; 0: none yet */
	int lines;	  /* said in this window */
	uint64_t left_out;
};
/* Whether a line of b's kind may be said at now_ms (monotonic); false:
 * it was counted instead. */
bool log_burst_take(struct log_burst *b, int64_t now_ms);
/* Says how many were left out, if the window is over. */
void log_burst_flush(struct log_burst *b, int64_t now_ms);

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
