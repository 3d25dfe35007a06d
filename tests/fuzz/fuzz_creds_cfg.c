/* fuzz_creds_cfg: where lockfs looks and what the shared files say:
 * awscfg_resolve (profile, region and endpoint from options, environment
 * and the config file, with the config file's path from AWS_CONFIG_FILE
 * and HOME), and the shared-files credentials provider on the same files
 * (profiles, static keys, role_arn + web_identity_token_file through STS,
 * credential_process). Nothing runs and nothing outside a private
 * directory is read: credential_process and the token file read are
 * routed here, STS answers are scripted, and file paths from the input
 * are kept inside that directory.
 * Input: lines OPT_PROFILE, OPT_REGION, OPT_ENDPOINT, AWS_PROFILE,
 * AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_DYNAMODB,
 * AWS_ENDPOINT_URL, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE; then
 * after "\n--\n" the config file, the credentials file, what the token
 * file or credential_process gives, and STS answers ("STATUS\n" body).
 * Checked: the precedence of options over variables over the file, a
 * region of [a-z0-9-], an http(s) endpoint without trailing '/', the
 * default endpoint's form; credentials handed out are usable; every
 * failure is -errno with a one-line message.
 * fuzz-wrap: http_client_new http_client_free http_perform
 * fuzz-wrap: creds_process_run creds_read_file
 * fuzz-src: tests/fuzz/support/fake_http.c
 * fuzz-link: lockfs_creds
 * fuzz-runs: 4000 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "awscfg.h"
#include "fake_http.h"
#include "fuzz_creds.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __wrap_creds_process_run(const struct creds_ctx *ctx, const char *who,
			     const char *cmd, struct aws_creds *out,
			     struct aws_error *err);
int __wrap_creds_read_file(const char *path, size_t max, struct buf *out);

#define N_LINES	  10
#define MAX_PARTS 8
#define VAL_MAX	  600

/* The process environment awscfg reads: putenv'd buffers, set in place
 * (an empty value counts as unset), so no exec grows the environment. */
static const char *const var_names[] = {
	"AWS_PROFILE",	      "AWS_REGION",
	"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_DYNAMODB",
	"AWS_ENDPOINT_URL",   "AWS_CONFIG_FILE",
};
#define N_VARS (sizeof(var_names) / sizeof(var_names[0]))
static char var_buf[N_VARS][VAL_MAX + 40];
static char home[64], home_var[80];
static struct fz_part side; /* the token file / credential_process text */

static void setup(void)
{
	char p[128];
	size_t i;

	if (home[0])
		return;
	/* In memory when it can be: every input rewrites four files, and
	 * on ext4 a rewrite through O_TRUNC is flushed to disk at close. */
	snprintf(home, sizeof(home), "/dev/shm/lockfs-fuzz-cfg.XXXXXX");
	if (!mkdtemp(home)) {
		snprintf(home, sizeof(home), "/tmp/lockfs-fuzz-cfg.XXXXXX");
		if (!mkdtemp(home))
			abort();
	}
	snprintf(p, sizeof(p), "%s/.aws", home);
	if (mkdir(p, 0700))
		abort();
	snprintf(home_var, sizeof(home_var), "HOME=%s", home);
	putenv(home_var);
	for (i = 0; i < N_VARS; i++) {
		snprintf(var_buf[i], sizeof(var_buf[i]), "%s=", var_names[i]);
		putenv(var_buf[i]);
	}
}

static void write_file(const char *name, const struct fz_part *content)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", home, name);
	f = fopen(p, "w");
	if (!f)
		abort();
	if (content->n && fwrite(content->p, 1, content->n, f) != content->n)
		abort();
	fclose(f);
}

/* A path from the input, kept inside the private directory: "~..." stays
 * (HOME is that directory), anything else is put under it; ".." and
 * "/proc"-like tricks lose their meaning. */
static void safe_path(const char *in, char *out, size_t len)
{
	char *p;

	if (!in[0]) {
		out[0] = '\0';
		return;
	}
	if (in[0] == '~')
		snprintf(out, len, "%s", in);
	else
		snprintf(out, len, "%s/%s", home, in);
	while ((p = strstr(out, "..")))
		p[0] = p[1] = '_';
}

static void set_var(size_t i, const char *value)
{
	size_t prefix = strlen(var_names[i]) + 1;
	size_t room = sizeof(var_buf[i]) - prefix - 1, n = strlen(value);

	if (n > room)
		n = room;
	memcpy(var_buf[i] + prefix, value, n);
	var_buf[i][prefix + n] = '\0';
}

int __wrap_creds_process_run(const struct creds_ctx *ctx, const char *who,
			     const char *cmd, struct aws_creds *out,
			     struct aws_error *err)
{
	/* Never a shell: the "output" comes from the input. */
	return creds_json_parse(who, "credential_process", CREDS_JSON_PROCESS,
				side.p, side.n, out, err);
}

int __wrap_creds_read_file(const char *path, size_t max, struct buf *out)
{
	buf_reset(out);
	out->max = max;
	if (buf_append(out, side.p, side.n))
		return -EFBIG;
	while (out->len && strchr(" \t\r\n", out->data[out->len - 1]))
		out->data[--out->len] = '\0';
	if (out->len && memchr(out->data, '\0', out->len))
		return -EINVAL;
	return 0;
}

static bool region_ok(const char *r)
{
	return r[0] &&
	       strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(r);
}

static void check_resolve(char *const l[N_LINES])
{
	struct aws_settings s;
	char msg[512] = "", want[700];
	const char *region, *endpoint;
	size_t n;
	int rc;

	rc = awscfg_resolve(l[0], l[1], l[2], &s, msg, sizeof(msg));
	if (rc) {
		if (rc > 0 || !msg[0])
			abort();
		return;
	}
	if (strcmp(s.profile, l[0][0]	? l[0]
			      : l[3][0] ? l[3]
					: "default") ||
	    !region_ok(s.region))
		abort();
	region = l[1][0] ? l[1] : l[4][0] ? l[4] : l[5][0] ? l[5] : NULL;
	if (region && strcmp(s.region, region))
		abort();
	endpoint = l[2][0] ? l[2] : l[6][0] ? l[6] : l[7][0] ? l[7] : NULL;
	if (endpoint) {
		snprintf(want, sizeof(want), "%s", endpoint);
		n = strlen(want);
		while (n && want[n - 1] == '/')
			want[--n] = '\0';
		if (s.endpoint_is_default || strcmp(s.endpoint, want))
			abort();
	} else {
		snprintf(want, sizeof(want),
			 "https://dynamodb.%s.amazonaws.com%s", s.region,
			 strncmp(s.region, "cn-", 3) ? "" : ".cn");
		if (!s.endpoint_is_default || strcmp(s.endpoint, want))
			abort();
	}
	if (strncmp(s.endpoint, "http://", 7) &&
	    strncmp(s.endpoint, "https://", 8))
		abort();
}

static void check_profile(char *const l[N_LINES])
{
	char cred_path[700], conf_path[700];
	struct creds_env env;
	struct creds_ctx ctx;
	struct aws_creds c = { 0 };
	struct aws_error err;
	int rc;

	memset(&env, 0, sizeof(env));
	memset(&ctx, 0, sizeof(ctx));
	awserr_clear(&err);
	safe_path(l[9], cred_path, sizeof(cred_path));
	safe_path(l[8], conf_path, sizeof(conf_path));
	env.val[CREDS_HOME] = home;
	env.val[CREDS_SHARED_CREDENTIALS_FILE] =
		cred_path[0] ? cred_path : NULL;
	env.val[CREDS_CONFIG_FILE] = conf_path[0] ? conf_path : NULL;
	env.val[CREDS_ENDPOINT_URL_STS] = l[7][0] ? l[7] : NULL;
	ctx.env = &env;
	ctx.profile = l[0][0] ? l[0] : l[3][0] ? l[3] : "default";
	ctx.profile_explicit = strcmp(ctx.profile, "default") != 0;
	ctx.region = region_ok(l[1]) ? l[1] : "us-east-1";
	ctx.session_name = "lockfs-fuzz";
	ctx.sts_timeout_ms = 5000;
	rc = creds_profile_provider.fetch(&ctx, &c, &err);
	if (!rc)
		fz_check_creds(&c, 0);
	else
		fz_check_failure(rc, &err, NULL);
	aws_creds_clear(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[MAX_PARTS], cfg, empty = { "", 0 };
	struct fake_answer answers[MAX_PARTS] = { { 0 } };
	char *l[N_LINES] = { NULL }, path[700];
	size_t np = fz_split(data, size, "\n--\n", parts, MAX_PARTS), i;

	setup();
	for (i = 4; i < np; i++) {
		struct fz_part a = parts[i];

		answers[i - 4].rc = 0;
		answers[i - 4].status = fz_number(&a);
		answers[i - 4].body = a.p;
		answers[i - 4].len = a.n;
	}
	fake_http_reset(answers, np > 4 ? np - 4 : 0);
	side = np > 3 ? parts[3] : empty;
	cfg = parts[0];
	for (i = 0; i < N_LINES; i++) {
		l[i] = fz_line(&cfg);
		if (!l[i] || strlen(l[i]) >= VAL_MAX)
			goto out;
	}
	write_file(".aws/config", np > 1 ? &parts[1] : &empty);
	write_file("config", np > 1 ? &parts[1] : &empty);
	write_file(".aws/credentials", np > 2 ? &parts[2] : &empty);
	write_file("credentials", np > 2 ? &parts[2] : &empty);
	for (i = 0; i < 5; i++)
		set_var(i, l[3 + i]);
	safe_path(l[8], path, sizeof(path));
	set_var(5, path);
	check_resolve(l);
	check_profile(l);
out:
	for (i = 0; i < N_LINES; i++)
		free(l[i]);
	return 0;
}
