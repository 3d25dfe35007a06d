/* log: owns the process-wide log level and sink. Written in log_setup(),
 * log_choose() and log_start() before any thread starts (main's thread),
 * read by every thread afterwards. Every message is escaped as one line
 * (text_escape_to) after formatting: names, owners, commands and data of
 * other users can neither start a forged line nor steer the terminal of
 * whoever reads the journal. A line is one write(2), so lines of threads
 * (and of daemons sharing a log file, O_APPEND) never interleave. The
 * bursts' counters (log_burst_*) are under one mutex of their own, taken
 * by any thread. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

enum log_sink {
	LOG_SINK_STDERR,  /* "HH:MM:SS.mmm lockfs level tag: text" on fd 2 */
	LOG_SINK_JOURNAL, /* "<N>level tag: text" on fd 2, the journal */
	LOG_SINK_SYSLOG,
	LOG_SINK_FILE, /* dated lines with the pid on fd 2, a log file */
};

static enum log_level log_level_now = LOGL_WARN;
static enum log_sink log_sink_now = LOG_SINK_STDERR;

/* What log_choose picked, for log_start. */
static enum log_sink chosen_sink = LOG_SINK_STDERR;
static int chosen_fd = -1;
static bool chosen_elsewhere;

static const char *const level_names[] = { "error", "warning", "info",
					   "debug" };
static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

/* Whether fd is the stream systemd connected to the journal: JOURNAL_STREAM
 * holds its "device:inode" in decimal (systemd.exec(5)). */
static bool fd_is_journal(int fd)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!v || !*v)
		return false;
	errno = 0;
	dev = strtoull(v, &end, 10);
	if (errno || end == v || *end != ':')
		return false;
	v = end + 1;
	ino = strtoull(v, &end, 10);
	if (errno || end == v || *end)
		return false;
	if (fstat(fd, &st))
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

static void open_syslog(const char *ident)
{
	openlog(ident ? ident : "lockfs", LOG_PID, LOG_DAEMON);
}

void log_setup(enum log_level level, bool use_syslog, const char *ident)
{
	log_level_now = level;
	if (use_syslog) {
		log_sink_now = LOG_SINK_SYSLOG;
		open_syslog(ident);
	} else {
		log_sink_now =
			fd_is_journal(2) ? LOG_SINK_JOURNAL : LOG_SINK_STDERR;
	}
}

static bool is_socket(const char *path)
{
	struct stat st;

	return path && !stat(path, &st) && S_ISSOCK(st.st_mode);
}

static int open_log_file(const char *path)
{
	int fd = open(path,
		      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
			      O_NOFOLLOW,
		      0640);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL; /* a log file, not a fifo or a device */
	}
	return fd;
}

/* The background's choice when no file is named. */
static int choose_background(const struct log_places *p, char *where,
			     size_t wherelen)
{
	char why[LOG_ERRNO_MAX];
	int fd;

	if (fd_is_journal(2)) {
		fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
		if (fd >= 0) {
			chosen_sink = LOG_SINK_JOURNAL;
			chosen_fd = fd;
			snprintf(where, wherelen, "the journal (stderr)");
			return 0;
		}
	}
	if (is_socket(p->syslog_socket)) {
		chosen_sink = LOG_SINK_SYSLOG;
		snprintf(where, wherelen, "syslog (%s)", p->syslog_socket);
		return 0;
	}
	fd = p->fallback_file ? open_log_file(p->fallback_file) : -ENOENT;
	if (fd >= 0) {
		chosen_sink = LOG_SINK_FILE;
		chosen_fd = fd;
		snprintf(where, wherelen, "%s (no syslog socket at %s)",
			 p->fallback_file, p->syslog_socket);
		return 0;
	}
	/* Said at mount time, so never silently. */
	chosen_sink = LOG_SINK_SYSLOG;
	snprintf(where, wherelen,
		 "nowhere: no syslog socket at %s and %s: %s (use -o "
		 "log_file=PATH or -f)",
		 p->syslog_socket,
		 p->fallback_file ? p->fallback_file : "no fallback file",
		 log_errno(fd, why, sizeof(why)));
	return 0;
}

int log_choose(const struct log_places *p, bool foreground, char *where,
	       size_t wherelen)
{
	char why[LOG_ERRNO_MAX];
	int fd;

	if (chosen_fd >= 0)
		close(chosen_fd);
	chosen_fd = -1;
	chosen_elsewhere = true;
	if (p->file) {
		fd = open_log_file(p->file);
		if (fd < 0) {
			snprintf(where, wherelen, "log_file=%s: %s", p->file,
				 log_errno(fd, why, sizeof(why)));
			return fd;
		}
		chosen_sink = LOG_SINK_FILE;
		chosen_fd = fd;
		snprintf(where, wherelen, "%s", p->file);
		return 0;
	}
	if (!foreground)
		return choose_background(p, where, wherelen);
	chosen_elsewhere = false;
	chosen_sink = fd_is_journal(2) ? LOG_SINK_JOURNAL : LOG_SINK_STDERR;
	snprintf(where, wherelen, "%s",
		 chosen_sink == LOG_SINK_JOURNAL ? "the journal (stderr)"
						 : "stderr");
	return 0;
}

bool log_chosen_elsewhere(void)
{
	return chosen_elsewhere;
}

void log_start(enum log_level level, const char *ident)
{
	log_level_now = level;
	if (chosen_fd >= 0) {
		/* dup2 leaves fd 2 without close-on-exec: helpers' stderr. */
		if (dup2(chosen_fd, 2) < 0)
			chosen_sink = LOG_SINK_SYSLOG;
		close(chosen_fd);
		chosen_fd = -1;
	}
	log_sink_now = chosen_sink;
	if (log_sink_now == LOG_SINK_SYSLOG)
		open_syslog(ident);
}

bool log_enabled(enum log_level level)
{
	return level <= log_level_now;
}

bool log_gap_due(int64_t *last_ms, int64_t now_ms, int64_t gap_ms)
{
	int64_t last = __atomic_load_n(last_ms, __ATOMIC_RELAXED);

	return (!last || now_ms - last >= gap_ms) &&
	       __atomic_compare_exchange_n(last_ms, &last, now_ms, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static pthread_mutex_t burst_mu = PTHREAD_MUTEX_INITIALIZER;

/* burst_mu held: ends b's window if it is over, saying what it left out. */
static void burst_roll_locked(struct log_burst *b, int64_t now_ms)
{
	if (b->start_ms && now_ms - b->start_ms < LOG_BURST_MS)
		return;
	if (b->left_out)
		log_at(b->level, b->tag,
		       "%llu more %s in the %lld s after %d logged%s",
		       (unsigned long long)b->left_out, b->what,
		       (long long)((now_ms - b->start_ms) / 1000), b->lines,
		       b->hint ? b->hint : "");
	b->start_ms = now_ms ? now_ms : 1;
	b->lines = 0;
	b->left_out = 0;
}

bool log_burst_take(struct log_burst *b, int64_t now_ms)
{
	bool say;

	pthread_mutex_lock(&burst_mu);
	burst_roll_locked(b, now_ms);
	say = b->lines < LOG_BURST_LINES;
	if (say)
		b->lines++;
	else
		b->left_out++;
	pthread_mutex_unlock(&burst_mu);
	return say;
}

void log_burst_flush(struct log_burst *b, int64_t now_ms)
{
	pthread_mutex_lock(&burst_mu);
	if (b->left_out)
		burst_roll_locked(b, now_ms);
	pthread_mutex_unlock(&burst_mu);
}

const char *log_errno(int err, char *buf, size_t len)
{
	const char *name;
	char msg[64];

	if (err < 0)
		err = -err;
	name = strerrorname_np(err);
	snprintf(buf, len, "%s (%s)", strerror_r(err, msg, sizeof(msg)),
		 name ? name : "unknown errno");
	return buf;
}

/* The line as the sink wants it, newline included; its length. */
static int format_line(char *out, size_t outlen, enum log_level level,
		       const char *tag, const char *text)
{
	struct timespec ts;
	struct tm tm;
	int n;

	if (log_sink_now == LOG_SINK_JOURNAL)
		return snprintf(out, outlen, "<%d>%s %s: %s\n",
				syslog_prio[level], level_names[level], tag,
				text);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (log_sink_now == LOG_SINK_FILE)
		n = snprintf(out, outlen,
			     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ "
			     "lockfs[%ld] %s %s: %s\n",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			     tm.tm_hour, tm.tm_min, tm.tm_sec,
			     ts.tv_nsec / 1000000, (long)getpid(),
			     level_names[level], tag, text);
	else
		n = snprintf(
			out, outlen, "%02d:%02d:%02d.%03ld lockfs %s %s: %s\n",
			tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
			level_names[level], tag, text);
	return n;
}

/* Lines that could not be written (a full disk, a closed pipe), and the
 * error of the last; any thread. */
static _Atomic uint64_t lines_lost;
static _Atomic int lines_lost_errno;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* After lines were lost: a line saying how many and why, written first;
 * 0 once written (the count starts again), else -errno. */
static int write_lost_note(void)
{
	char note[256], why[LOG_ERRNO_MAX], line[300];
	uint64_t lost = atomic_load(&lines_lost);
	int rc, len;

	snprintf(note, sizeof(note),
		 "%llu log line(s) could not be written: %s",
		 (unsigned long long)lost,
		 log_errno(-atomic_load(&lines_lost_errno), why, sizeof(why)));
	len = format_line(line, sizeof(line), LOGL_WARN, "log", note);
	if (len <= 0 || (size_t)len >= sizeof(line))
		return -EINVAL;
	rc = write_all(2, line, (size_t)len);
	if (!rc)
		atomic_fetch_sub(&lines_lost, lost);
	return rc;
}

/* Writes a line. One that cannot be written is counted; once lines can
 * be written again, the first is preceded by one that says how many were
 * lost, and why. */
static void write_line(const char *p, size_t n)
{
	int rc = 0;

	if (atomic_load(&lines_lost))
		rc = write_lost_note();
	if (!rc)
		rc = write_all(2, p, n);
	if (rc) {
		atomic_store(&lines_lost_errno, -rc);
		atomic_fetch_add(&lines_lost, 1);
	}
}

uint64_t log_lines_lost(void)
{
	return atomic_load(&lines_lost);
}

void log_msg(enum log_level level, const char *tag, const char *fmt, ...)
{
	char raw[1024], line[2048], out[2200];
	va_list ap;
	int n, saved = errno;

	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(raw))
		n = sizeof(raw) - 1;
	text_escape_to(line, sizeof(line), raw, (size_t)n);
	if (log_sink_now == LOG_SINK_SYSLOG) {
		syslog(syslog_prio[level], "%s: %s", tag, line);
		errno = saved;
		return;
	}
	n = format_line(out, sizeof(out), level, tag, line);
	if (n > 0 && (size_t)n >= sizeof(out)) {
		n = sizeof(out) - 1;
		out[n - 1] = '\n';
	}
	if (n > 0)
		write_line(out, (size_t)n);
	errno = saved;
}
