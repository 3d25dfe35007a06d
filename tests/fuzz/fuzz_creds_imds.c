/* fuzz_creds_imds: the EC2 IMDSv2 provider over scripted HTTP answers: the
 * token answer (it goes back out in a header), the role list, the role's
 * credentials JSON, their error statuses, and the endpoint override.
 * Input: lines ENDPOINT ("" = default), DISABLED, then answers after
 * "\n--\n" (token, role list, credentials), each "STATUS\n" and a body.
 * Checked: the requests are PUT token, GET role list, GET that role, at
 * the endpoint; the token sent is the answer's, trimmed, and can never
 * split a header; the role path is the first line of the list; credentials
 * handed out are usable; every failure is -errno with a one-line message.
 * fuzz-wrap: http_client_new http_client_free http_perform
 * fuzz-src: tests/fuzz/support/fake_http.c
 * fuzz-link: lockfs_creds */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_http.h"
#include "fuzz_creds.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ANSWERS 4
#define ROLE_PATH   "/latest/meta-data/iam/security-credentials/"

/* The base URL the provider must use. */
static void expected_base(const char *ep, char *out, size_t len)
{
	size_t n;

	snprintf(out, len, "%s", ep[0] ? ep : "http://169.254.169.254");
	n = strlen(out);
	while (n && out[n - 1] == '/')
		out[--n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[MAX_ANSWERS + 1], cfg;
	struct fake_answer answers[MAX_ANSWERS];
	struct creds_env env;
	struct creds_ctx ctx;
	struct aws_creds c = { 0 };
	struct aws_error err;
	char *ep, *dis, base[600], want[1200];
	size_t np = fz_split(data, size, "\n--\n", parts, MAX_ANSWERS + 1), i;
	const char *url;
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
	ep = fz_line(&cfg);
	dis = fz_line(&cfg);
	memset(&env, 0, sizeof(env));
	memset(&ctx, 0, sizeof(ctx));
	awserr_clear(&err);
	if (!ep || !dis)
		goto out;
	env.val[CREDS_EC2_METADATA_ENDPOINT] = ep[0] ? ep : NULL;
	env.val[CREDS_EC2_METADATA_DISABLED] = dis[0] ? dis : NULL;
	ctx.env = &env;
	ctx.profile = "default";
	ctx.session_name = "fuzz";
	ctx.metadata_timeout_ms = 1000;
	rc = creds_imds_provider.fetch(&ctx, &c, &err);

	if (dis[0] && !strcasecmp(dis, "true") && fake_http_requests())
		abort(); /* disabled means no request at all */
	expected_base(ep, base, sizeof(base));
	url = fake_http_last_url();
	switch (fake_http_requests()) {
	case 0:
		break;
	case 1:
		snprintf(want, sizeof(want), "%s/latest/api/token", base);
		if (strcmp(url, want))
			abort();
		break;
	case 2:
		snprintf(want, sizeof(want), "%s%s", base, ROLE_PATH);
		if (strcmp(url, want) ||
		    strncmp(buf_str(fake_http_last_headers()),
			    "X-aws-ec2-metadata-token: ", 26))
			abort();
		break;
	case 3: {
		/* The role is the list's first line. */
		struct fz_part list = { answers[1].body, answers[1].len };
		char *role = fz_line(&list);

		if (role) {
			role[strcspn(role, "\r")] = '\0';
			snprintf(want, sizeof(want), "%s%s%s", base, ROLE_PATH,
				 role);
			if (strcmp(url, want))
				abort();
		}
		free(role);
		break;
	}
	default:
		abort(); /* three requests at most */
	}
	if (!rc)
		fz_check_creds(&c, 1);
	else
		fz_check_failure(rc, &err, NULL);
	aws_creds_clear(&c);
out:
	free(ep);
	free(dis);
	return 0;
}
