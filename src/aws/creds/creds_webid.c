/* creds_webid: STS AssumeRoleWithWebIdentity (an unsigned query-protocol
 * POST) and the web identity provider (AWS_WEB_IDENTITY_TOKEN_FILE +
 * AWS_ROLE_ARN + AWS_ROLE_SESSION_NAME). The token file is read again on
 * every call since it rotates; the token and the request body holding it are
 * wiped. The token never goes over plain HTTP to a host that is not
 * loopback unless AWS_ENDPOINT_URL_STS names it and allow_plain_http is set
 * (the generic AWS_ENDPOINT_URL is never used so). Runs in the refreshing
 * thread only; no shared state. */
#include "creds_provider.h"
#include "creds_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awsxml.h"
#include "log.h"

#define WEBID_MAX_TOKEN ((size_t)64 << 10)

static int form_escape(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			rc = buf_putc(b, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			rc = buf_append(b, e, 3);
		}
	}
	return rc;
}

static int valid_region(const char *r)
{
	size_t n = 0;

	for (; r[n]; n++)
		if (!((r[n] >= 'a' && r[n] <= 'z') ||
		      (r[n] >= '0' && r[n] <= '9') || r[n] == '-'))
			return 0;
	return n > 0 && n < 64;
}

static int sts_url(const struct creds_ctx *ctx, const char *who, char *url,
		   size_t len, struct aws_error *err)
{
	const char *u = creds_env_get(ctx->env, CREDS_ENDPOINT_URL_STS);
	const char *var = "AWS_ENDPOINT_URL_STS";
	char host[256], path[1024];

	if (!u) {
		u = creds_env_get(ctx->env, CREDS_ENDPOINT_URL);
		var = "AWS_ENDPOINT_URL";
	}
	if (u) {
		if (http_url_host_path(u, host, sizeof(host), path,
				       sizeof(path)) ||
		    http_url_plain_remote(u) < 0 ||
		    (size_t)snprintf(url, len, "%s", u) >= len)
			return creds_fail(err, -EINVAL, 0, NULL,
					  "%s: the STS endpoint URL is not an "
					  "http(s) URL",
					  who);
		if (!http_url_plain_remote(u))
			return 0;
		if (strcmp(var, "AWS_ENDPOINT_URL_STS") ||
		    !ctx->http.allow_plain_http)
			return creds_fail(err, -EPERM, 0, NULL,
					  "%s: %s %.100s is plain HTTP to a "
					  "host that is not loopback: the web "
					  "identity token is not sent there "
					  "(use https%s)",
					  who, var, u,
					  strcmp(var, "AWS_ENDPOINT_URL_STS")
						  ? ", or set "
						    "AWS_ENDPOINT_URL_STS"
						  : ", or -o allow_plain_http");
		log_warn("creds",
			 "%s: STS endpoint %.100s is plain HTTP to a host that "
			 "is not loopback (allow_plain_http): the web identity "
			 "token and the credentials travel in clear",
			 who, u);
		return 0;
	}
	if (!ctx->region)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "%s: no region for the STS endpoint (set "
				  "the region or AWS_ENDPOINT_URL_STS)",
				  who);
	if (!valid_region(ctx->region))
		return creds_fail(err, -EINVAL, 0, NULL,
				  "%s: bad region for the STS endpoint", who);
	snprintf(url, len, "https://sts.%s.amazonaws.com%s", ctx->region,
		 strncmp(ctx->region, "cn-", 3) ? "" : ".cn");
	return 0;
}

static int build_body(struct buf *body, const char *role_arn,
		      const char *session_name, const char *token)
{
	int rc = buf_puts(body, "Action=AssumeRoleWithWebIdentity"
				"&Version=2011-06-15&RoleArn=");

	if (!rc)
		rc = form_escape(body, role_arn);
	if (!rc)
		rc = buf_puts(body, "&RoleSessionName=");
	if (!rc)
		rc = form_escape(body, session_name);
	if (!rc)
		rc = buf_puts(body, "&WebIdentityToken=");
	if (!rc)
		rc = form_escape(body, token);
	return rc;
}

/* An error answer into err; a message that echoes the token is withheld. */
static int parse_error(const char *who, const struct http_response *resp,
		       const char *token, struct aws_error *err)
{
	char *code = NULL, *msg = NULL;
	int rc;

	awsxml_text(resp->body.data, resp->body.len, "Code", &code);
	awsxml_text(resp->body.data, resp->body.len, "Message", &msg);
	if (code && strstr(code, token)) {
		free(code);
		code = NULL;
	}
	if (msg && strstr(msg, token)) {
		buf_free_secret(msg);
		msg = NULL;
	}
	creds_fail(err, 0, resp->status, code,
		   "%s: STS AssumeRoleWithWebIdentity: %.64s%s%.150s", who,
		   code ? code : "error", msg ? ": " : "", msg ? msg : "");
	/* Escaping can join a withheld token together again ("a\xBAbc..."
	 * is kept as "a\xbabc..."): what is kept is checked too. */
	if ((!code && !msg) || strstr(err->message, token) ||
	    strstr(err->type, token))
		creds_fail(
			err, 0, resp->status, NULL,
			"%s: STS AssumeRoleWithWebIdentity answered HTTP %ld",
			who, resp->status);
	free(code);
	free(msg);
	rc = awserr_to_errno(err);
	return rc ? rc : -EPROTO;
}

static int parse_success(const char *who, const struct http_response *resp,
			 struct aws_creds *out, struct aws_error *err)
{
	static const char *const names[4] = { "AccessKeyId", "SecretAccessKey",
					      "SessionToken", "Expiration" };
	char *v[4] = { NULL, NULL, NULL, NULL };
	int64_t expires_real_ms = 0;
	int i, rc = 0;

	for (i = 0; i < 4 && !rc; i++) {
		rc = awsxml_text(resp->body.data, resp->body.len, names[i],
				 &v[i]);
		if (rc == -ENOMEM)
			rc = creds_fail(err, rc, 0, NULL, "%s: out of memory",
					who);
		else if (rc)
			rc = creds_fail(err, -EPROTO, resp->status, NULL,
					"%s: STS answer %s %s", who,
					rc == -ENOENT ? "lacks"
						      : "has a malformed",
					names[i]);
	}
	if (!rc && creds_parse_expiration(v[3], &expires_real_ms))
		rc = creds_fail(err, -EPROTO, resp->status, NULL,
				"%s: STS Expiration is not an ISO 8601 time "
				"after 1970",
				who);
	if (!rc) {
		rc = creds_set(out, v[0], v[1], v[2], expires_real_ms,
			       "web identity");
		if (rc == -EINVAL)
			rc = creds_fail(err, -EPROTO, resp->status, NULL,
					"%s: STS credentials hold spaces or "
					"control characters",
					who);
		else if (rc)
			rc = creds_fail(err, rc, 0, NULL, "%s: out of memory",
					who);
	}
	for (i = 0; i < 4; i++)
		buf_free_secret(v[i]);
	return rc;
}

int creds_webid_assume(const struct creds_ctx *ctx, const char *who,
		       const char *token_file, const char *role_arn,
		       const char *session_name, struct aws_creds *out,
		       struct aws_error *err)
{
	static const struct http_header hdrs[] = {
		{ "Content-Type",
		  "application/x-www-form-urlencoded; charset=utf-8" },
		{ "Accept", "text/xml" },
	};
	struct http_request req = { .method = "POST",
				    .headers = hdrs,
				    .n_headers = 2 };
	struct buf token, body;
	struct http_response resp;
	struct http_client *http = NULL;
	char url[1024];
	int rc;

	buf_init(&token, WEBID_MAX_TOKEN);
	buf_init(&body, 0);
	http_response_init(&resp);
	rc = sts_url(ctx, who, url, sizeof(url), err);
	if (rc)
		goto out;
	rc = creds_read_file(token_file, WEBID_MAX_TOKEN, &token);
	if (rc || !token.len) {
		rc = creds_fail(err, rc == -ENOMEM ? rc : -EINVAL, 0, NULL,
				"%s: cannot read the web identity token file "
				"%.150s: %s",
				who, token_file,
				rc ? strerror(-rc) : "it is empty");
		goto out;
	}
	rc = build_body(&body, role_arn, session_name, buf_str(&token));
	if (rc) {
		rc = creds_fail(err, rc == -EFBIG ? -EINVAL : rc, 0, NULL,
				"%s: cannot build the STS request", who);
		goto out;
	}
	http = creds_http_client(ctx, 0);
	if (!http) {
		rc = creds_fail(err, -ENOMEM, 0, NULL, "%s: out of memory",
				who);
		goto out;
	}
	req.url = url;
	req.body = body.data;
	req.body_len = body.len;
	req.timeout_ms = ctx->sts_timeout_ms;
	rc = http_perform(http, &req, &resp);
	if (rc) {
		rc = creds_fail_transport(err, rc, "%s: STS %.100s: %s", who,
					  url, http_error_text(&resp, rc));
		goto out;
	}
	if (resp.status != 200)
		rc = parse_error(who, &resp, buf_str(&token), err);
	else
		rc = parse_success(who, &resp, out, err);
out:
	http_client_free(http);
	buf_fini_wipe(&resp.body);
	buf_fini_wipe(&body);
	buf_fini_wipe(&token);
	return rc;
}

static int webid_fetch(const struct creds_ctx *ctx, struct aws_creds *out,
		       struct aws_error *err)
{
	const char *file =
		creds_env_get(ctx->env, CREDS_WEB_IDENTITY_TOKEN_FILE);
	const char *arn = creds_env_get(ctx->env, CREDS_ROLE_ARN);
	const char *session = creds_env_get(ctx->env, CREDS_ROLE_SESSION_NAME);

	/* AWS_ROLE_ARN alone has other uses: only the token file counts. */
	if (!file)
		return creds_fail(err, -ENOKEY, 0, NULL,
				  "AWS_WEB_IDENTITY_TOKEN_FILE unset");
	if (!arn)
		return creds_fail(
			err, -EINVAL, 0, NULL,
			"web identity: AWS_WEB_IDENTITY_TOKEN_FILE is "
			"set but AWS_ROLE_ARN is not");
	return creds_webid_assume(ctx, "web identity", file, arn,
				  session ? session : ctx->session_name, out,
				  err);
}

const struct creds_provider creds_webid_provider = {
	.name = "web identity",
	.fetch = webid_fetch,
};
