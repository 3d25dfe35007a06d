/* creds_process: runs a profile's credential_process with /bin/sh -c in its
 * own process group (stdin /dev/null, stdout captured up to 64 KiB, stderr
 * passed through to ours, every other descriptor closed, a minimal
 * environment without lockfs's secrets and with a fixed PATH), kills the
 * group when the time runs out or the chain is freed, and parses the JSON it
 * prints. Runs in the refreshing thread only; no shared state. The captured
 * output is wiped. */
#include "creds_provider.h"
#include "creds_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCESS_MAX_OUTPUT   ((size_t)64 << 10)
#define PROCESS_REAP_POLL_MS 5

static void kill_and_reap(pid_t pid)
{
	int st;

	kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* glibc 2.34 has posix_spawn_file_actions_addclosefrom_np. */
#if defined(__GLIBC__) &&                                                      \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define HAVE_SPAWN_CLOSEFROM 1
#endif

static int spawn_shell(const char *cmd, char *const envp[], int out_fd,
		       pid_t *pid)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dflt;
	int rc;

	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	sigaddset(&dflt, SIGINT);
	sigaddset(&dflt, SIGTERM);
	sigaddset(&dflt, SIGHUP);
	sigaddset(&dflt, SIGCHLD);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
#ifdef HAVE_SPAWN_CLOSEFROM
	/* Our own descriptors are close-on-exec (curl's sockets through
	 * http.c's opensocket callback); whatever else is open (inherited
	 * from whoever started lockfs, opened by a library without
	 * O_CLOEXEC) is closed in the child here. */
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	if (!rc)
		rc = posix_spawnattr_setflags(
			&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				       POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setpgroup(&attr, 0);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&attr, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&attr, &dflt);
	if (!rc)
		rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return -rc;
}

static int cancelled(const int *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE);
}

/* Reads the child's stdout until EOF, the cap, the deadline or a cancel. */
static int read_output(int fd, int64_t deadline_mono_ms, const int *cancel,
		       struct buf *out)
{
	char chunk[4096];
	int rc = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left_ms = deadline_mono_ms - clk_sys_mono_ms();
		ssize_t n;
		int pr;

		if (left_ms <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (cancelled(cancel)) {
			rc = -ECANCELED;
			break;
		}
		pr = poll(&pfd, 1, left_ms > 200 ? 200 : (int)left_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			rc = -errno;
			break;
		}
		if (pr == 0)
			continue;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		rc = buf_append(out, chunk, (size_t)n);
		if (rc)
			break;
	}
	buf_wipe(chunk, sizeof(chunk));
	return rc;
}

/* Waits for the child to exit until the deadline. 0 with *status, or
 * -ETIMEDOUT / -ECANCELED (the child is still running). */
static int wait_exit(pid_t pid, int64_t deadline_mono_ms, const int *cancel,
		     int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		struct timespec ts = { 0, PROCESS_REAP_POLL_MS * 1000000L };

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (clk_sys_mono_ms() >= deadline_mono_ms)
			return -ETIMEDOUT;
		if (cancelled(cancel))
			return -ECANCELED;
		nanosleep(&ts, NULL);
	}
}

int creds_process_run(const struct creds_ctx *ctx, const char *who,
		      const char *cmd, struct aws_creds *out,
		      struct aws_error *err)
{
	int64_t deadline_mono_ms = clk_sys_mono_ms() + ctx->process_timeout_ms;
	struct buf output;
	char what[96];
	int pfd[2], rc, status = 0;
	pid_t pid;

	snprintf(what, sizeof(what), "%s credential_process", who);
	if (pipe2(pfd, O_CLOEXEC))
		return creds_fail(err, -errno, 0, NULL, "%s: pipe: %s", what,
				  strerror(errno));
	rc = spawn_shell(cmd, ctx->env->helper_env, pfd[1], &pid);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return creds_fail(err, rc, 0, NULL,
				  "%s: cannot run /bin/sh: %s", what,
				  strerror(-rc));
	}
	buf_init(&output, PROCESS_MAX_OUTPUT);
	rc = read_output(pfd[0], deadline_mono_ms, ctx->cancel, &output);
	close(pfd[0]);
	if (!rc)
		rc = wait_exit(pid, deadline_mono_ms, ctx->cancel, &status);
	if (rc) {
		kill_and_reap(pid);
		if (rc == -ETIMEDOUT)
			rc = creds_fail(err, rc, 0, NULL,
					"%s: no answer within %ld ms (killed)",
					what, ctx->process_timeout_ms);
		else if (rc == -ECANCELED)
			rc = creds_fail(err, rc, 0, NULL,
					"%s: stopped (lockfs is stopping)",
					what);
		else if (rc == -EFBIG)
			rc = creds_fail(err, -EPROTO, 0, NULL,
					"%s: output larger than %zu bytes",
					what, PROCESS_MAX_OUTPUT);
		else
			rc = creds_fail(err, rc, 0, NULL, "%s: %s", what,
					strerror(-rc));
		goto out;
	}
	if (WIFSIGNALED(status)) {
		rc = creds_fail(err, -EIO, 0, NULL, "%s: killed by signal %d",
				what, WTERMSIG(status));
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		rc = creds_fail(err, -EIO, 0, NULL,
				"%s: exited with status %d (see its stderr)",
				what,
				WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		goto out;
	}
	rc = creds_json_parse(what, "credential_process", CREDS_JSON_PROCESS,
			      output.data, output.len, out, err);
out:
	buf_fini_wipe(&output);
	return rc;
}
