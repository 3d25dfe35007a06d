/* creds_secrets: how the credential chain keeps secrets and whom it trusts:
 * the ssh-style owner and mode check of the shared files (creds_trust), a
 * profile whose files fail it refused before its credential_process runs,
 * the helper's minimal environment and descriptors, the refresher thread
 * (a slow credential_process never delays a caller while the cached
 * credentials are usable; with none usable the wait is bounded; freeing
 * the chain stops a running helper), secrets in pages excluded from core
 * dumps, and the secrets wiped from /proc/self/environ (in a re-executed
 * copy of this program, whose initial environment holds them). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "awscfg.h"
#include "creds_test.h"
#include "creds_trust.h"

static struct aws_creds c;
static struct aws_error e;

static int trust(const char *name, uid_t uid, char *why, size_t whylen)
{
	char canon[PATH_MAX];

	return creds_trust_file(ct_path(name), uid, canon, sizeof(canon), why,
				whylen);
}

static void test_trust(void)
{
	char canon[PATH_MAX], real[PATH_MAX], why[300];
	uid_t me = getuid();

	ct_env_reset();
	ct_write("ok", "x");
	CHECK_INT(creds_trust_file(ct_path("ok"), me, canon, sizeof(canon), why,
				   sizeof(why)),
		  0);
	CHECK(realpath(ct_path("ok"), real) != NULL);
	CHECK_STR(canon, real);

	/* Group- or world-writable file. */
	CHECK(chmod(ct_path("ok"), 0620) == 0);
	CHECK_INT(trust("ok", me, why, sizeof(why)), -EPERM);
	CHECK_CONTAINS(why, "writable by group or others (mode 0620)");
	CHECK(chmod(ct_path("ok"), 0602) == 0);
	CHECK_INT(trust("ok", me, why, sizeof(why)), -EPERM);
	CHECK(chmod(ct_path("ok"), 0644) == 0);
	CHECK_INT(trust("ok", me, why, sizeof(why)), 0);

	/* Owned by someone else. */
	if (me == 0) {
		CHECK(chown(ct_path("ok"), 65534, 65534) == 0);
		CHECK_INT(trust("ok", 0, why, sizeof(why)), -EPERM);
		CHECK_CONTAINS(why, "is owned by uid 65534");
		CHECK_INT(trust("ok", 65534, why, sizeof(why)), 0);
		CHECK(chown(ct_path("ok"), 0, 0) == 0);
	} else {
		CHECK_INT(trust("ok", me + 1, why, sizeof(why)), -EPERM);
		CHECK_CONTAINS(why, "is owned by uid");
	}

	/* A directory on the way that others may write. */
	CHECK(mkdir(ct_path("open"), 0700) == 0);
	ct_write("open/config", "x");
	CHECK(chmod(ct_path("open"), 0777) == 0);
	CHECK_INT(trust("open/config", me, why, sizeof(why)), -EPERM);
	CHECK_CONTAINS(why, "/open is writable by group or others (mode 0777)");
	CHECK(chmod(ct_path("open"), 0770) == 0);
	CHECK_INT(trust("open/config", me, why, sizeof(why)), -EPERM);
	/* Sticky and owned by root (as /tmp): nobody else can replace what
	 * is in it. Sticky and owned by another user: no. */
	CHECK(chmod(ct_path("open"), 01777) == 0);
	CHECK_INT(trust("open/config", me, why, sizeof(why)),
		  me == 0 ? 0 : -EPERM);
	if (me == 0) {
		CHECK(chown(ct_path("open"), 65534, 65534) == 0);
		CHECK_INT(trust("open/config", 0, why, sizeof(why)), -EPERM);
		CHECK_CONTAINS(why, "/open is owned by uid 65534");
		CHECK(chown(ct_path("open"), 0, 0) == 0);
	}
	CHECK(chmod(ct_path("open"), 0755) == 0);
	CHECK_INT(trust("open/config", me, why, sizeof(why)), 0);

	/* A link is judged by where it leads, and canon is that place. */
	CHECK(chmod(ct_path("open"), 0777) == 0);
	CHECK(symlink(ct_path("open/config"), ct_path("link")) == 0);
	CHECK_INT(trust("link", me, why, sizeof(why)), -EPERM);
	CHECK_CONTAINS(why, "/open is writable");
	CHECK(chmod(ct_path("open"), 0755) == 0);
	CHECK_INT(creds_trust_file(ct_path("link"), me, canon, sizeof(canon),
				   why, sizeof(why)),
		  0);
	CHECK(realpath(ct_path("open/config"), real) != NULL);
	CHECK_STR(canon, real);

	/* Absent, not a file, /dev/null. */
	CHECK_INT(trust("absent", me, why, sizeof(why)), -ENOENT);
	CHECK_INT(trust("absent/config", me, why, sizeof(why)), -ENOENT);
	CHECK_INT(trust("ok/config", me, why, sizeof(why)), -ENOENT);
	CHECK_INT(trust("open", me, why, sizeof(why)), -EPERM);
	CHECK_CONTAINS(why, "not a regular file");
	CHECK(mkfifo(ct_path("fifo"), 0600) == 0);
	CHECK_INT(trust("fifo", me, why, sizeof(why)), -EPERM);
	CHECK_INT(creds_trust_file("/dev/null", me, canon, sizeof(canon), why,
				   sizeof(why)),
		  0);
	CHECK_INT(creds_trust_enabled(1), 1);
	CHECK_INT(creds_trust_enabled(-1), 0);
	CHECK_INT(creds_trust_enabled(0), geteuid() == 0);
}

#define PROC_JSON                                                              \
	"printf '{\"Version\":1,\"AccessKeyId\":\"AKIDPROC\","                 \
	"\"SecretAccessKey\":\"SECRETPROC\"}'"

/* A profile whose files fail the check is refused before its
 * credential_process runs; the region lookup refuses it too (as root). */
static void test_refused_before_run(void)
{
	struct creds_config cfg = { .profile = "p", .check_files = 1 };
	char conf[1024], region_err[512];
	struct aws_settings s;

	ct_env_reset();
	CHECK(mkdir(ct_path("aws"), 0700) == 0);
	setenv("AWS_CONFIG_FILE", ct_path("aws/config"), 1);
	snprintf(conf, sizeof(conf),
		 "[profile p]\nregion = eu-west-1\n"
		 "credential_process = touch %s; " PROC_JSON "\n",
		 ct_path("ran"));
	ct_write("aws/config", conf);

	CHECK(chmod(ct_path("aws"), 0777) == 0);
	CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EPERM);
	CHECK_CONTAINS(e.message, "profile: refusing ");
	CHECK_CONTAINS(e.message, "/aws is writable by group or others");
	CHECK(!strchr(e.message, '\n'));
	CHECK(access(ct_path("ran"), F_OK) != 0);
	if (geteuid() == 0) {
		CHECK_INT(awscfg_resolve("p", NULL, NULL, &s, region_err,
					 sizeof(region_err)),
			  -EINVAL);
		CHECK_CONTAINS(region_err, "refusing ");
		/* The case of the issue: .aws of another user, 0777. */
		CHECK(chown(ct_path("aws"), 65534, 65534) == 0);
		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EPERM);
		CHECK_CONTAINS(e.message, "/aws is owned by uid 65534");
		CHECK(chmod(ct_path("aws"), 0700) == 0);
		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EPERM);
		CHECK(chown(ct_path("aws"), 0, 0) == 0);
		CHECK(access(ct_path("ran"), F_OK) != 0);
	}
	/* A credentials file beside it fails alone: refused too. */
	CHECK(chmod(ct_path("aws"), 0700) == 0);
	ct_write_mode("aws/credentials", "[p]\n", 0666);
	setenv("AWS_SHARED_CREDENTIALS_FILE", ct_path("aws/credentials"), 1);
	CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EPERM);
	CHECK_CONTAINS(e.message, "/aws/credentials is writable");
	CHECK(access(ct_path("ran"), F_OK) != 0);
	CHECK(chmod(ct_path("aws/credentials"), 0600) == 0);

	/* Fixed: it runs. */
	CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
	CHECK_STR(c.access_key_id, "AKIDPROC");
	CHECK(access(ct_path("ran"), F_OK) == 0);
	if (geteuid() == 0) {
		CHECK_INT(awscfg_resolve("p", NULL, NULL, &s, region_err,
					 sizeof(region_err)),
			  0);
		CHECK_STR(s.region, "eu-west-1");
	}
	/* check_files = -1: never checked. */
	unlink(ct_path("ran"));
	CHECK(chmod(ct_path("aws"), 0777) == 0);
	cfg.check_files = -1;
	CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
	CHECK(access(ct_path("ran"), F_OK) == 0);
	CHECK(chmod(ct_path("aws"), 0700) == 0);
}

static void read_text(const char *path, char *out, size_t outlen)
{
	FILE *f = fopen(path, "r");
	size_t n;

	CHECK(f != NULL);
	n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	fclose(f);
}

static void fd_handler(const struct fakehttp_request *req,
		       struct fakehttp_response *resp, void *arg)
{
	(void)req;
	(void)arg;
	resp->body = "{}";
}

/* The helper's environment and descriptors. */
static void test_helper_env_fds(void)
{
	struct creds_config cfg = { .profile = "p" };
	struct fakehttp *srv = fakehttp_start(fd_handler, NULL);
	struct http_client *http = http_client_new(NULL);
	struct http_response r;
	char conf[1024], env[16384], fds[256];
	int leak;

	CHECK(srv && http);
	ct_env_reset();
	/* A keep-alive connection of curl's, and a descriptor opened
	 * without O_CLOEXEC (as one inherited from whoever started us). */
	http_response_init(&r);
	struct http_request get = { .method = "GET", .url = fakehttp_url(srv) };
	CHECK_INT(http_perform(http, &get, &r), 0);
	leak = open("/dev/null", O_RDONLY);
	CHECK(leak >= 3);
	CHECK_INT(fcntl(leak, F_DUPFD, 50), 50); /* F_DUPFD: no O_CLOEXEC */
	close(leak);

	setenv("AWS_SESSION_TOKEN", "TOKENLEAK", 1); /* alone: not used */
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "CONTAINERLEAK", 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/WEBIDLEAK", 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/ROLELEAK", 1);
	setenv("LOCKFS_PRIVATE_FOO", "FOOLEAK", 1);
	setenv("LANG", "C.UTF-8", 1);
	setenv("LC_TIME", "C", 1);
	setenv("AWS_REGION", "eu-west-1", 1);
	setenv("https_proxy", "http://127.0.0.1:3", 1);
	snprintf(conf, sizeof(conf),
		 "[profile p]\ncredential_process = env > %s; "
		 "ls /proc/$$/fd > %s; " PROC_JSON "\n",
		 ct_path("env.out"), ct_path("fd.out"));
	ct_write("config", conf);
	CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
	CHECK_STR(c.access_key_id, "AKIDPROC");

	read_text(ct_path("env.out"), env, sizeof(env));
	CHECK_CONTAINS(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
			    "/usr/bin:/sbin:/bin\n");
	CHECK_CONTAINS(env, "HOME=");
	CHECK_CONTAINS(env, "LANG=C.UTF-8\n");
	CHECK_CONTAINS(env, "LC_TIME=C\n");
	CHECK_CONTAINS(env, "AWS_REGION=eu-west-1\n");
	CHECK_CONTAINS(env, "https_proxy=http://127.0.0.1:3\n");
	CHECK_CONTAINS(env, "AWS_CONFIG_FILE=");
	CHECK_LACKS(env, "LEAK");
	CHECK_LACKS(env, "AWS_SESSION_TOKEN");
	CHECK_LACKS(env, "AWS_ROLE_ARN");
	CHECK_LACKS(env, "LOCKFS_");

	/* 0, 1, 2 (and what the shell opens itself, as dash's saved
	 * stdout on 10), never ours. */
	read_text(ct_path("fd.out"), fds, sizeof(fds));
	CHECK(!strncmp(fds, "0\n1\n", 4));
	CHECK_CONTAINS(fds, "\n2\n");
	CHECK_LACKS(fds, "\n50\n");

	close(50);
	http_response_fini(&r);
	http_client_free(http);
	fakehttp_stop(srv);
	unsetenv("LANG");
	unsetenv("LC_TIME");
	unsetenv("https_proxy");
	unsetenv("LOCKFS_PRIVATE_FOO");
}

/* A clock the test moves while the refresher reads it. */
static _Atomic int64_t clock_off_ms;
static int64_t base_mono_ms, base_real_ms;

static int64_t t_mono(const struct clk *k)
{
	(void)k;
	return base_mono_ms + atomic_load(&clock_off_ms);
}

static int64_t t_real(const struct clk *k)
{
	(void)k;
	return base_real_ms + atomic_load(&clock_off_ms);
}

static const struct clk test_clock = { t_mono, t_real, NULL };

static void put(const char *name, const char *text)
{
	/* Written whole, then renamed: the helper never reads half. */
	char tmp[64];

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	ct_write(tmp, text);
	CHECK(rename(ct_path(tmp), ct_path(name)) == 0);
}

static void put_exp(int64_t off_ms)
{
	char exp[32];

	clk_format_rfc3339_ms(base_real_ms + off_ms, exp);
	put("exp", exp);
}

/* One get bounded by wait_ms; returns how long it took. */
static int64_t timed_get(struct creds_chain *ch, long wait_ms, int *rc)
{
	int64_t t0 = clk_sys_mono_ms();

	aws_creds_clear(&c);
	*rc = creds_chain_get_wait(ch, &c, &e, wait_ms);
	return clk_sys_mono_ms() - t0;
}

/* Polls (bounded) until a get gives the key id want. */
static int wait_for_key(struct creds_chain *ch, const char *want, int secs)
{
	int64_t until = clk_sys_mono_ms() + secs * 1000LL;
	struct timespec ts = { 0, 50 * 1000000L };
	int rc;

	while (clk_sys_mono_ms() < until) {
		timed_get(ch, 100, &rc);
		if (!rc && !strcmp(c.access_key_id, want))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void test_refresher(void)
{
	struct creds_config cfg = { .profile = "p",
				    .clock = &test_clock,
				    .process_timeout_ms = 20000 };
	struct creds_chain *ch;
	char conf[2048];
	int64_t took, t0;
	int rc, i;

	ct_env_reset();
	base_mono_ms = clk_sys_mono_ms();
	base_real_ms = clk_sys_real_ms();
	atomic_store(&clock_off_ms, 0);
	put("delay", "0");
	put("n", "0");
	put_exp(10 * 60 * 1000);
	snprintf(conf, sizeof(conf),
		 "[profile p]\ncredential_process = D=%s; "
		 "sleep \"$(cat $D/delay)\"; n=$(($(cat $D/n) + 1)); "
		 "echo $n > $D/n.new; mv $D/n.new $D/n; "
		 "printf '{\"Version\":1,\"AccessKeyId\":\"AKID%%s\","
		 "\"SecretAccessKey\":\"S\",\"SessionToken\":\"T\","
		 "\"Expiration\":\"%%s\"}' $n \"$(cat $D/exp)\"\n",
		 ct_dir);
	ct_write("config", conf);

	ch = creds_chain_new(&cfg);
	CHECK(ch != NULL);
	/* Before the refresher runs, the caller resolves (start-up). */
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_STR(c.access_key_id, "AKID1");
	CHECK_INT(creds_chain_start(ch), 0);

	/* Due for refresh (5 minutes before expiry) with a helper that takes
	 * 2 s: callers keep getting the cached credentials at once. */
	put("delay", "2");
	atomic_store(&clock_off_ms, 6 * 60 * 1000);
	for (i = 0; i < 8; i++) {
		struct timespec ts = { 0, 60 * 1000000L };

		took = timed_get(ch, 5000, &rc);
		CHECK_INT(rc, 0);
		CHECK_STR(c.access_key_id, "AKID1");
		CHECK(took < 150);
		nanosleep(&ts, NULL);
	}
	t0 = clk_sys_mono_ms();
	CHECK_INT(wait_for_key(ch, "AKID2", 15), 0);
	CHECK(clk_sys_mono_ms() - t0 > 500); /* the helper's own time */

	/* Nothing usable (past expiry) and a slow refresh: the wait is
	 * bounded by the caller's limit. */
	put_exp(60 * 60 * 1000);
	atomic_store(&clock_off_ms, 11 * 60 * 1000);
	took = timed_get(ch, 300, &rc);
	CHECK_INT(rc, -ETIMEDOUT);
	CHECK(took >= 250 && took < 1500);
	CHECK_CONTAINS(e.message, "did not finish within 300 ms");
	CHECK_INT(wait_for_key(ch, "AKID3", 15), 0);

	/* Freeing the chain stops a helper that is running. */
	put("delay", "30");
	atomic_store(&clock_off_ms, 56 * 60 * 1000);
	took = timed_get(ch, 5000, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(c.access_key_id, "AKID3");
	CHECK(took < 150);
	{
		struct timespec ts = { 0, 400 * 1000000L };

		nanosleep(&ts, NULL);
	}
	t0 = clk_sys_mono_ms();
	creds_chain_free(ch);
	CHECK(clk_sys_mono_ms() - t0 < 2000);
	aws_creds_clear(&c);
}

/* Whether addr lies in a mapping marked "dd" (MADV_DONTDUMP). */
static int in_dontdump(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t a = (uintptr_t)addr, lo = 0, hi = 0;
	char line[512];
	int found = 0, inside = 0;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		unsigned long l, h;

		/* A mapping's line starts with its (lowercase hex) range,
		 * a field's with a capital letter. */
		if (strchr("0123456789abcdef", line[0]) &&
		    sscanf(line, "%lx-%lx ", &l, &h) == 2) {
			lo = l;
			hi = h;
			inside = a >= lo && a < hi;
			continue;
		}
		if (inside && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line, " dd") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

/* In the re-executed child: the secrets are in the initial environment. */
static int scrub_child(void)
{
	struct creds_chain *ch;
	char env[65536];
	size_t n = 0, i;
	FILE *f;

	ch = creds_chain_new(NULL);
	CHECK(ch != NULL);
	CHECK_INT(creds_env_scrub_process(), 3);
	f = fopen("/proc/self/environ", "r");
	CHECK(f != NULL);
	n = fread(env, 1, sizeof(env) - 1, f);
	fclose(f);
	for (i = 0; i < n; i++)
		if (!env[i])
			env[i] = '\n';
	env[n] = '\0';
	CHECK_LACKS(env, "SCRUBSECRET");
	CHECK_LACKS(env, "SCRUBTOKEN");
	CHECK_LACKS(env, "SCRUBCONTAINER");
	CHECK_CONTAINS(env, "AWS_SECRET_ACCESS_KEY=\n");
	CHECK_CONTAINS(env, "AWS_ACCESS_KEY_ID=AKIDSCRUB\n");
	CHECK(getenv("AWS_SECRET_ACCESS_KEY") == NULL);
	CHECK(getenv("AWS_SESSION_TOKEN") == NULL);
	CHECK_STR(getenv("AWS_ACCESS_KEY_ID"), "AKIDSCRUB");
	/* The chain kept its copies, in pages a core dump leaves out. */
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_STR(c.secret_access_key, "SCRUBSECRET");
	CHECK_STR(c.session_token, "SCRUBTOKEN");
	CHECK(in_dontdump(c.secret_access_key));
	CHECK(in_dontdump(c.session_token));
	aws_creds_clear(&c);
	creds_chain_free(ch);
	printf("scrub child: %d checks\n", check_count);
	return 0;
}

static void test_scrub(void)
{
	char home[600], asan[600], ubsan[600];
	char *argv[] = { "creds_secrets", "scrub-child", NULL };
	char *envp[] = { "AWS_ACCESS_KEY_ID=AKIDSCRUB",
			 "AWS_SECRET_ACCESS_KEY=SCRUBSECRET",
			 "AWS_SESSION_TOKEN=SCRUBTOKEN",
			 "AWS_CONTAINER_AUTHORIZATION_TOKEN=SCRUBCONTAINER",
			 "AWS_EC2_METADATA_DISABLED=true",
			 "AWS_CONFIG_FILE=/dev/null",
			 "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			 home,
			 asan,
			 ubsan,
			 NULL };
	pid_t pid;
	int st;

	snprintf(home, sizeof(home), "HOME=%s", ct_dir);
	snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s",
		 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
	snprintf(ubsan, sizeof(ubsan), "UBSAN_OPTIONS=%s",
		 getenv("UBSAN_OPTIONS") ? getenv("UBSAN_OPTIONS") : "");
	CHECK_INT(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp),
		  0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_INT(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "scrub-child"))
		return scrub_child();
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_trust);
	CHECK_CASE(test_refused_before_run);
	CHECK_CASE(test_helper_env_fds);
	CHECK_CASE(test_refresher);
	CHECK_CASE(test_scrub);
	aws_creds_clear(&c);
	CHECK_DONE();
}
