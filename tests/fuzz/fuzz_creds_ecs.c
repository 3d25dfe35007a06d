/* fuzz_creds_ecs: the container credentials provider over scripted HTTP
 * answers: the FULL_URI/RELATIVE_URI checks (scheme, host allowed over
 * plain http), the authorization token (value or file), the error body
 * and the credentials JSON. Input: lines RELATIVE_URI, FULL_URI, TOKEN,
 * TOKEN_FILE_CONTENT ("" = unset; a file when the 4th line is there),
 * then answers after "\n--\n", each "STATUS\n" and a body. Checked: a
 * plain-http request goes only to a host curl's own URL parser agrees is
 * a loopback, ECS or EKS address; the token is sent as Authorization and
 * never appears in a message; credentials handed out are usable; every
 * failure is -errno with a one-line message.
 * fuzz-wrap: http_client_new http_client_free http_perform
 * fuzz-src: tests/fuzz/support/fake_http.c
 * fuzz-link: lockfs_creds */
#include <curl/curl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_http.h"
#include "fuzz_creds.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ANSWERS 4

static struct fz_file token_file;

/* The host curl would connect to for url, per curl's URL API. */
static int curl_host(const char *url, char *out, size_t len)
{
	CURLU *u = curl_url();
	char *host = NULL;
	int rc = -1;

	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0) && host &&
	    strlen(host) < len) {
		strcpy(out, host);
		rc = 0;
	}
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

static int allowed_host(const char *h)
{
	return !strcasecmp(h, "localhost") || !strncmp(h, "127.", 4) ||
	       !strcmp(h, "169.254.170.2") || !strcmp(h, "169.254.170.23") ||
	       !strcmp(h, "[::1]") || !strcasecmp(h, "[fd00:ec2::23]");
}

static void check_request(const char *token)
{
	const char *url = fake_http_last_url();
	const char *hdrs = buf_str(fake_http_last_headers());
	char host[512];

	if (!strncasecmp(url, "http://", 7)) {
		/* curl refuses what it cannot parse: nothing is sent then. */
		if (!curl_host(url, host, sizeof(host)) && !allowed_host(host))
			abort();
	}
	if (token && token[0] &&
	    (strncmp(hdrs, "Authorization: ", 15) ||
	     strncmp(hdrs + 15, token, strlen(token))))
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
	char *rel, *full, *tok, *file = NULL, *file_tok = NULL;
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
	rel = fz_line(&cfg);
	full = fz_line(&cfg);
	tok = fz_line(&cfg);
	memset(&env, 0, sizeof(env));
	memset(&ctx, 0, sizeof(ctx));
	awserr_clear(&err);
	if (!rel || !full || !tok)
		goto out;
	if (cfg.n) {
		fz_file_set(&token_file, cfg.p, cfg.n);
		file = token_file.path;
		file_tok = fz_str(&cfg); /* the token in use then */
		if (!file_tok)
			goto out;
	}
	env.val[CREDS_CONTAINER_RELATIVE_URI] = rel[0] ? rel : NULL;
	env.val[CREDS_CONTAINER_FULL_URI] = full[0] ? full : NULL;
	env.val[CREDS_CONTAINER_AUTH_TOKEN] = tok[0] ? tok : NULL;
	env.val[CREDS_CONTAINER_AUTH_TOKEN_FILE] = file;
	ctx.env = &env;
	ctx.profile = "default";
	ctx.session_name = "fuzz";
	ctx.metadata_timeout_ms = 1000;
	rc = creds_ecs_provider.fetch(&ctx, &c, &err);
	if (fake_http_requests())
		check_request(file ? NULL : tok);
	/* The token in use; one that is also part of the URL may be named. */
	secret = file ? file_tok : tok;
	if (strstr(rel, secret) || strstr(full, secret))
		secret = NULL;
	if (!rc)
		fz_check_creds(&c, 1);
	else
		fz_check_failure(rc, &err, secret);
	if (rc == -ENOKEY && (rel[0] || full[0]))
		abort(); /* configured: never "not configured" */
	aws_creds_clear(&c);
out:
	free(rel);
	free(full);
	free(tok);
	free(file_tok);
	return 0;
}
