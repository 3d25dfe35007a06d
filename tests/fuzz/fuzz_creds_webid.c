/* fuzz_creds_webid: STS AssumeRoleWithWebIdentity over scripted HTTP
 * answers: the STS endpoint from the region or the endpoint variables, the
 * form body built from the role ARN, session name and token file, and the
 * XML success and error answers. Input: lines REGION ("" = none),
 * AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, ROLE_ARN, SESSION, MODE (p: the
 * provider with its variables, else creds_webid_assume), then the token
 * file's content; answers after "\n--\n", each "STATUS\n" and a body.
 * Checked: the URL is the endpoint variable as given or
 * https://sts.REGION.amazonaws.com(.cn); the body is exactly five
 * form-encoded fields (no field can be smuggled in); the token never
 * appears in a message; credentials handed out are usable and expire;
 * every failure is -errno with a one-line message.
 * fuzz-wrap: http_client_new http_client_free http_perform
 * fuzz-src: tests/fuzz/support/fake_http.c
 * fuzz-link: lockfs_creds */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_http.h"
#include "fuzz_creds.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ANSWERS 3
#define N_LINES	    6

static struct fz_file token_file;

static void check_body(const struct buf *b)
{
	static const char head[] =
		"Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=";
	size_t i, amp = 0, eq = 0;

	if (b->len < sizeof(head) - 1 ||
	    memcmp(b->data, head, sizeof(head) - 1))
		abort();
	for (i = 0; i < b->len; i++) {
		char c = b->data[i];

		if (c == '&')
			amp++;
		else if (c == '=')
			eq++;
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			   (c >= '0' && c <= '9') || strchr("-_.~%", c)))
			abort();
	}
	if (amp != 4 || eq != 5 || !strstr(b->data, "&RoleSessionName=") ||
	    !strstr(b->data, "&WebIdentityToken="))
		abort();
}

static void check_url(const char *region, const char *sts, const char *any)
{
	const char *url = fake_http_last_url();
	char want[1100];

	if (sts[0] || any[0]) {
		if (strcmp(url, sts[0] ? sts : any))
			abort();
		return;
	}
	snprintf(want, sizeof(want), "https://sts.%s.amazonaws.com%s", region,
		 strncmp(region, "cn-", 3) ? "" : ".cn");
	if (strcmp(url, want) || strpbrk(region, "/:@?#. "))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[MAX_ANSWERS + 1], cfg;
	struct fake_answer answers[MAX_ANSWERS];
	struct creds_env env;
	struct creds_ctx ctx;
	struct aws_creds c = { 0 };
	struct aws_error err;
	char *l[N_LINES] = { NULL }, *token = NULL;
	const char *secret;
	size_t np = fz_split(data, size, "\n--\n", parts, MAX_ANSWERS + 1), i;
	int rc;

	for (i = 1; i < np; i++) {
		struct fz_part a = parts[i];

		answers[i - 1].rc = 0;
		answers[i - 1].status = fz_number(&a);
		answers[i - 1].body = a.p;
		answers[i - 1].len = a.n;
	}
	fake_http_reset(answers, np - 1);
	cfg = parts[0];
	for (i = 0; i < N_LINES; i++)
		if (!(l[i] = fz_line(&cfg)))
			goto out;
	token = fz_str(&cfg);
	if (!token)
		goto out;
	fz_file_set(&token_file, cfg.p, cfg.n);
	secret = token;
	memset(&env, 0, sizeof(env));
	memset(&ctx, 0, sizeof(ctx));
	awserr_clear(&err);
	env.val[CREDS_ENDPOINT_URL_STS] = l[1][0] ? l[1] : NULL;
	env.val[CREDS_ENDPOINT_URL] = l[2][0] ? l[2] : NULL;
	env.val[CREDS_WEB_IDENTITY_TOKEN_FILE] = token_file.path;
	env.val[CREDS_ROLE_ARN] = l[3][0] ? l[3] : NULL;
	env.val[CREDS_ROLE_SESSION_NAME] = l[4][0] ? l[4] : NULL;
	ctx.env = &env;
	ctx.profile = "default";
	ctx.region = l[0][0] ? l[0] : NULL;
	ctx.session_name = "lockfs-fuzz";
	ctx.sts_timeout_ms = 5000;
	if (l[5][0] == 'p')
		rc = creds_webid_provider.fetch(&ctx, &c, &err);
	else
		rc = creds_webid_assume(&ctx, "web identity", token_file.path,
					l[3], l[4], &c, &err);
	if (fake_http_requests()) {
		if (fake_http_requests() > 1)
			abort(); /* one request, no retry here */
		check_body(fake_http_last_body());
		check_url(l[0], l[1], l[2]);
	}
	/* A token that is also part of a setting (a URL) may be named. */
	for (i = 0; i < N_LINES && secret; i++)
		if (strstr(l[i], secret))
			secret = NULL;
	if (!rc)
		fz_check_creds(&c, 1);
	else
		fz_check_failure(rc, &err, secret);
	aws_creds_clear(&c);
out:
	for (i = 0; i < N_LINES; i++)
		free(l[i]);
	free(token);
	return 0;
}
