/* base_log: where log lines go and how they read. log_errno names errors
 * ("Connection timed out (ETIMEDOUT)"); stderr that is the journal
 * (JOURNAL_STREAM = its device:inode) gets "<N>" priority prefixes and no
 * time stamp of ours, any other stderr the time stamp; log_choose in the
 * background picks the journal, else syslog when its socket exists, else
 * the fallback file (and says which), else says nothing is visible; a
 * named log_file wins, and one that cannot be opened is an error. The
 * sockets and files are made in a temporary directory; fd 2 is put back
 * after each case. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

#define CHECK_HAS(s, sub)                                                      \
	do {                                                                   \
		if (!strstr((s), (sub)))                                       \
			fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n",        \
				__FILE__, __LINE__, (s), (sub));               \
		CHECK(strstr((s), (sub)) != NULL);                             \
	} while (0)

static char dir[64];
static int saved_stderr = -1;

/* dir/name, kept until the test ends (places point at them). */
static const char *path_of(const char *name)
{
	static char p[64][128];
	static int i;

	CHECK(i < 64);
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i++];
}

/* fd 2 becomes a fresh file NAME in dir. */
static void stderr_to(const char *name)
{
	int fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK(dup2(fd, 2) == 2);
	close(fd);
}

static void stderr_back(void)
{
	CHECK(dup2(saved_stderr, 2) == 2);
}

/* JOURNAL_STREAM naming fd 2 (or, with off 1, another inode). */
static void journal_is_stderr(int off)
{
	struct stat st;
	char v[64];

	CHECK(fstat(2, &st) == 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (unsigned long long)off);
	CHECK(setenv("JOURNAL_STREAM", v, 1) == 0);
}

static const char *slurp(const char *name)
{
	static char buf[8192];
	int fd = open(path_of(name), O_RDONLY);
	ssize_t n;

	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n >= 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

static void test_errno_names(void)
{
	char b[LOG_ERRNO_MAX];

	CHECK_STR(log_errno(-ETIMEDOUT, b, sizeof(b)),
		  "Connection timed out (ETIMEDOUT)");
	CHECK_STR(log_errno(EPROTO, b, sizeof(b)), "Protocol error (EPROTO)");
	CHECK_HAS(log_errno(-ECONNREFUSED, b, sizeof(b)), "(ECONNREFUSED)");
}

/* A burst: LOG_BURST_LINES lines said in a window, the rest counted and
 * said in one line once the window is over (at the next line of the kind,
 * or at a flush); nothing is said of a window that left nothing out. An
 * outage wrote three lines per held lock, 30,000 for 10,000 locks. */
static void test_burst(void)
{
	struct log_burst b = { .level = LOGL_WARN,
			       .tag = "lock",
			       .what = "heartbeat failures",
			       .hint = " (see the metrics)" };
	int64_t t = 5000;
	int said = 0, i;

	stderr_to("burst");
	journal_is_stderr(0);
	log_setup(LOGL_INFO, false, "t");
	for (i = 0; i < 3 * LOG_BURST_LINES; i++)
		said += log_burst_take(&b, t + i);
	CHECK_INT(said, LOG_BURST_LINES);
	log_burst_flush(&b, t + LOG_BURST_MS - 1); /* not over yet */
	CHECK_STR(slurp("burst"), "");
	log_burst_flush(&b, t + LOG_BURST_MS);
	CHECK_STR(slurp("burst"),
		  "<4>warning lock: 40 more heartbeat failures in the 10 s "
		  "after 20 logged (see the metrics)\n");
	log_burst_flush(&b, t + 3 * LOG_BURST_MS); /* nothing left out */
	CHECK(log_burst_take(&b, t + 3 * LOG_BURST_MS));
	CHECK_INT(b.lines, 1);
	for (i = 0; i < LOG_BURST_LINES; i++)
		log_burst_take(&b, t + 3 * LOG_BURST_MS + 1);
	CHECK_INT((int)b.left_out, 1);
	/* The next line of the kind, a window later, says it first. */
	CHECK(log_burst_take(&b, t + 4 * LOG_BURST_MS));
	CHECK_HAS(slurp("burst"), "lock: 1 more heartbeat failures in the 10 s "
				  "after 20 logged");
	stderr_back();
	unsetenv("JOURNAL_STREAM");
}

static void test_journal_prefixes(void)
{
	stderr_to("journal");
	journal_is_stderr(0);
	log_setup(LOGL_INFO, false, "t");
	log_err("lock", "e %d", 1);
	log_warn("lock", "lost key=%s", "k");
	log_info("main", "mounted");
	log_debug("main", "not shown");
	stderr_back();
	CHECK_STR(slurp("journal"), "<3>error lock: e 1\n"
				    "<4>warning lock: lost key=k\n"
				    "<6>info main: mounted\n");

	/* Another inode: a plain stderr, with our time stamp. */
	stderr_to("plain");
	journal_is_stderr(1);
	log_setup(LOGL_INFO, false, "t");
	log_warn("lock", "lost key=%s", "k");
	stderr_back();
	CHECK(strchr(slurp("plain"), '<') == NULL);
	CHECK_HAS(slurp("plain"), " lockfs warning lock: lost key=k\n");
	CHECK(slurp("plain")[2] == ':'); /* HH:MM:SS.mmm first */
	unsetenv("JOURNAL_STREAM");
}

/* A unix socket at path, standing for /dev/log. */
static int fake_syslog(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	CHECK(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	return fd;
}

static void test_background_choice(void)
{
	struct log_places p = { NULL, path_of("log.sock"),
				path_of("fallback.log") };
	char where[384];
	int sock;

	/* No syslog socket: the fallback file, said so, and used. */
	stderr_to("bg-stderr");
	CHECK_INT(log_choose(&p, false, where, sizeof(where)), 0);
	CHECK(log_chosen_elsewhere());
	CHECK_HAS(where, "fallback.log (no syslog socket at ");
	CHECK_HAS(where, "log.sock)");
	log_start(LOGL_INFO, "t");
	log_warn("lock", "lost key=%s", "k");
	log_debug("lock", "not shown");
	stderr_back();
	CHECK_HAS(slurp("fallback.log"), " warning lock: lost key=k\n");
	CHECK_HAS(slurp("fallback.log"), "Z lockfs[");
	CHECK(strstr(slurp("fallback.log"), "not shown") == NULL);
	CHECK_STR(slurp("bg-stderr"), "");

	/* With the socket: syslog. */
	sock = fake_syslog(p.syslog_socket);
	CHECK_INT(log_choose(&p, false, where, sizeof(where)), 0);
	CHECK_HAS(where, "syslog (");
	CHECK_HAS(where, "log.sock)");
	close(sock);
	unlink(p.syslog_socket);

	/* Stderr is the journal: it wins over syslog and the file. */
	sock = fake_syslog(p.syslog_socket);
	stderr_to("bg-journal");
	journal_is_stderr(0);
	CHECK_INT(log_choose(&p, false, where, sizeof(where)), 0);
	CHECK_STR(where, "the journal (stderr)");
	CHECK(log_chosen_elsewhere());
	log_start(LOGL_INFO, "t");
	log_warn("lock", "lost key=%s", "j");
	stderr_back();
	CHECK_STR(slurp("bg-journal"), "<4>warning lock: lost key=j\n");
	unsetenv("JOURNAL_STREAM");
	close(sock);
	unlink(p.syslog_socket);

	/* Neither socket nor a file that opens: said, not silent. */
	p.fallback_file = path_of("no-such-dir/lockfs.log");
	CHECK_INT(log_choose(&p, false, where, sizeof(where)), 0);
	CHECK_HAS(where, "nowhere: no syslog socket at ");
	CHECK_HAS(where, "No such file or directory (ENOENT)");
	CHECK_HAS(where, "log_file=PATH");
}

static void test_log_file(void)
{
	struct log_places p = { path_of("named.log"), path_of("log.sock"),
				path_of("fallback.log") };
	char where[384];

	/* A named file, in the foreground too. */
	stderr_to("fg-stderr");
	CHECK_INT(log_choose(&p, true, where, sizeof(where)), 0);
	CHECK_STR(where, path_of("named.log"));
	CHECK(log_chosen_elsewhere());
	log_start(LOGL_DEBUG, "t");
	log_debug("ddb", "PutItem key=%s", "k");
	stderr_back();
	CHECK_HAS(slurp("named.log"), " debug ddb: PutItem key=k\n");
	CHECK_STR(slurp("fg-stderr"), "");

	/* The foreground without a file: stderr, nothing to say. */
	p.file = NULL;
	CHECK_INT(log_choose(&p, true, where, sizeof(where)), 0);
	CHECK_STR(where, "stderr");
	CHECK(!log_chosen_elsewhere());

	/* A file that cannot be opened: an error that says why. */
	p.file = path_of("no-such-dir/x.log");
	CHECK_INT(log_choose(&p, true, where, sizeof(where)), -ENOENT);
	CHECK_HAS(where, "no-such-dir/x.log: No such file or directory");
	p.file = dir; /* a directory */
	CHECK(log_choose(&p, false, where, sizeof(where)) < 0);
	CHECK_HAS(where, "log_file=");
}

int main(int argc, char **argv)
{
	char cmd[128];

	saved_stderr = dup(2);
	CHECK(saved_stderr >= 0);
	snprintf(dir, sizeof(dir), "/tmp/lockfs-base-log.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	unsetenv("JOURNAL_STREAM");
	check_cases(argc, argv);
	CHECK_CASE(test_errno_names);
	CHECK_CASE(test_journal_prefixes);
	CHECK_CASE(test_burst);
	CHECK_CASE(test_background_choice);
	CHECK_CASE(test_log_file);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	CHECK_DONE();
}
