/* creds_process: credential_process in a profile: success with and without
 * Expiration, bad JSON, a wrong Version, non-zero exit, death by signal, a
 * command that never ends (killed at the timeout, even when it closed its
 * stdout), oversized output, stderr passed through, and no secret in
 * messages. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "creds_test.h"

static struct aws_creds c;
static struct aws_error e;

static int run(const char *command, long timeout_ms)
{
	struct creds_config cfg = { .profile = "p",
				    .process_timeout_ms = timeout_ms };
	char conf[2048];

	ct_env_reset();
	snprintf(conf, sizeof(conf), "[profile p]\ncredential_process = %s\n",
		 command);
	ct_write("config", conf);
	aws_creds_clear(&c);
	awserr_clear(&e);
	return ct_get_cfg(&cfg, &c, &e);
}

static void test_success(void)
{
	ct_write_mode("helper.sh",
		      "#!/bin/sh\n"
		      "echo x >> \"$(dirname \"$0\")/runs\"\n"
		      "cat <<EOF\n"
		      "{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\",\n"
		      " \"SecretAccessKey\": \"SECRETPROC\",\n"
		      " \"SessionToken\": \"TOKENPROC\",\n"
		      " \"Expiration\": \"2999-01-01T00:00:00Z\"}\n"
		      "EOF\n",
		      0700);
	{
		char cmd[600];

		/* Arguments and quoting go through /bin/sh -c. */
		snprintf(cmd, sizeof(cmd), "\"%s\" --some 'args here'",
			 ct_path("helper.sh"));
		CHECK_INT(run(cmd, 0), 0);
	}
	CHECK_STR(c.access_key_id, "AKIDPROC");
	CHECK_STR(c.secret_access_key, "SECRETPROC");
	CHECK_STR(c.session_token, "TOKENPROC");
	CHECK(c.expires_real_ms > clk_sys_real_ms() + 100LL * 365 * 86400000);
	CHECK_STR(c.source, "credential_process");

	/* No Expiration: static credentials, no token. */
	CHECK_INT(run("printf '{\"Version\":1,\"AccessKeyId\":\"A\","
		      "\"SecretAccessKey\":\"S\"}'",
		      0),
		  0);
	CHECK_INT(c.expires_real_ms, 0);
	CHECK(c.session_token == NULL);

	/* Static keys in the same profile win over the process. */
	{
		struct creds_config cfg = { .profile = "p" };

		ct_env_reset();
		ct_write("config", "[profile p]\ncredential_process = false\n");
		ct_write("credentials", "[p]\naws_access_key_id = AKIDSTATIC\n"
					"aws_secret_access_key = S\n");
		CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
		CHECK_STR(c.access_key_id, "AKIDSTATIC");
	}
}

static void test_failures(void)
{
	int64_t t0;

	CHECK_INT(run("echo 'not json'", 0), -EPROTO);
	CHECK_CONTAINS(e.message, "profile \"p\" credential_process");
	CHECK_CONTAINS(e.message, "not valid JSON");
	CHECK_INT(run("echo '{\"Version\":2,\"AccessKeyId\":\"A\","
		      "\"SecretAccessKey\":\"SECRETV2\"}'",
		      0),
		  -EPROTO);
	CHECK_CONTAINS(e.message, "Version");
	CHECK_LACKS(e.message, "SECRETV2");
	CHECK_INT(run("echo '{\"Version\":1,\"AccessKeyId\":\"A\"}'", 0),
		  -EPROTO);
	CHECK_INT(run("echo '{\"Version\":1,\"AccessKeyId\":\"A\","
		      "\"SecretAccessKey\":\"S\",\"Expiration\":\"soon\"}'",
		      0),
		  -EPROTO);
	CHECK_CONTAINS(e.message, "Expiration");

	/* Non-zero exit, even with valid JSON on stdout. */
	CHECK_INT(run("echo '{\"Version\":1,\"AccessKeyId\":\"A\","
		      "\"SecretAccessKey\":\"SECRETEXIT\"}'; exit 3",
		      0),
		  -EIO);
	CHECK_CONTAINS(e.message, "exited with status 3");
	CHECK_LACKS(e.message, "SECRETEXIT");
	CHECK_INT(run("kill -TERM $$", 0), -EIO);
	CHECK_CONTAINS(e.message, "signal");
	CHECK_INT(run("/nonexistent/helper", 0), -EIO);
	CHECK_CONTAINS(e.message, "status 127");

	/* Never ends: killed at the timeout. */
	t0 = clk_sys_mono_ms();
	CHECK_INT(run("sleep 20", 300), -ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - t0 < 5000);
	CHECK_CONTAINS(e.message, "no answer within 300 ms");
	/* Closes stdout, then hangs: still killed at the timeout. */
	t0 = clk_sys_mono_ms();
	CHECK_INT(run("exec >&-; sleep 20", 300), -ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - t0 < 5000);
	/* Prints forever: stopped at the output cap. */
	t0 = clk_sys_mono_ms();
	CHECK_INT(run("yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 10000), -EPROTO);
	CHECK(clk_sys_mono_ms() - t0 < 5000);
	CHECK_CONTAINS(e.message, "output larger than");
}

static void test_stderr_passes(void)
{
	int saved = dup(2), fd;
	char got[4096];
	ssize_t n;

	/* The command's stderr is ours: capture ours in a file. */
	fd = open(ct_path("stderr.txt"), O_CREAT | O_TRUNC | O_RDWR, 0600);
	CHECK(fd >= 0 && saved >= 0);
	CHECK(dup2(fd, 2) == 2);
	CHECK_INT(run("echo helper-diagnostic >&2; exit 1", 0), -EIO);
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	n = pread(fd, got, sizeof(got) - 1, 0);
	close(fd);
	CHECK(n > 0);
	got[n] = '\0';
	CHECK_CONTAINS(got, "helper-diagnostic");
	/* stdin is /dev/null: a command reading it sees EOF at once. */
	CHECK_INT(run("cat; echo '{\"Version\":1,\"AccessKeyId\":\"A\","
		      "\"SecretAccessKey\":\"S\"}'",
		      2000),
		  0);
}

static void test_refresh_runs_again(void)
{
	struct creds_config cfg = { .profile = "p" };
	struct creds_chain *ch;
	char conf[1024], runs[64] = "";
	FILE *f;

	/* Static output is cached: the command runs once. */
	ct_env_reset();
	unlink(ct_path("runs"));
	snprintf(conf, sizeof(conf),
		 "[profile p]\ncredential_process = echo x >> '%s'; "
		 "echo '{\"Version\":1,\"AccessKeyId\":\"A\","
		 "\"SecretAccessKey\":\"S\"}'\n",
		 ct_path("runs"));
	ct_write("config", conf);
	ch = creds_chain_new(&cfg);
	CHECK(ch != NULL);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	creds_chain_free(ch);
	f = fopen(ct_path("runs"), "r");
	CHECK(f != NULL);
	CHECK(fread(runs, 1, sizeof(runs) - 1, f) > 0);
	fclose(f);
	CHECK_STR(runs, "x\n");
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_success);
	CHECK_CASE(test_failures);
	CHECK_CASE(test_stderr_passes);
	CHECK_CASE(test_refresh_runs_again);
	aws_creds_clear(&c);
	CHECK_DONE();
}
