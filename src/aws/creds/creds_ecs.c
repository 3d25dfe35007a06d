/* creds_ecs: the container credentials provider (ECS task roles, EKS Pod
 * Identity): GET AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on 169.254.170.2, or
 * AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback, ECS or
 * EKS address only; host names other than "localhost" are not resolved, so
 * they must use https), with an Authorization header from
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read on every fetch) or
 * AWS_CONTAINER_AUTHORIZATION_TOKEN. Runs in the refreshing thread only; no
 * shared state. */
#include "creds_provider.h"
#include "creds_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#define ECS_HOST      "http://169.254.170.2"
#define ECS_MAX_TOKEN ((size_t)16 << 10)

static int host_allowed(const char *host)
{
	unsigned char a6[16], want6[16];
	struct in_addr a4;

	if (!strcasecmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1) {
		uint32_t ip = ntohl(a4.s_addr);

		return (ip >> 24) == 127 || ip == 0xa9feaa02 /* .170.2 */ ||
		       ip == 0xa9feaa17 /* 169.254.170.23 */;
	}
	if (inet_pton(AF_INET6, host, a6) == 1) {
		if (inet_pton(AF_INET6, "::1", want6) == 1 &&
		    !memcmp(a6, want6, 16))
			return 1;
		if (inet_pton(AF_INET6, "fd00:ec2::23", want6) == 1 &&
		    !memcmp(a6, want6, 16))
			return 1;
	}
	return 0;
}

/* A JSON error answer's code and message, if any, into err. A message that
 * echoes our authorization token is withheld. */
static int status_error(const struct http_response *resp, const char *token,
			struct aws_error *err)
{
	cJSON *root = NULL;
	const cJSON *code = NULL, *msg = NULL;

	if (resp->body.len)
		root = cJSON_ParseWithLength(resp->body.data, resp->body.len);
	if (cJSON_IsObject(root)) {
		code = cJSON_GetObjectItemCaseSensitive(root, "code");
		if (!cJSON_IsString(code))
			code = cJSON_GetObjectItemCaseSensitive(root, "Code");
		msg = cJSON_GetObjectItemCaseSensitive(root, "message");
		if (!cJSON_IsString(msg))
			msg = cJSON_GetObjectItemCaseSensitive(root, "Message");
	}
	if (!cJSON_IsString(code))
		code = NULL;
	if (!cJSON_IsString(msg) ||
	    (token[0] && strstr(msg->valuestring, token)))
		msg = NULL;
	if (code && token[0] && strstr(code->valuestring, token))
		code = NULL;
	creds_fail(err, 0, resp->status, code ? code->valuestring : NULL,
		   "ECS: the credentials endpoint answered HTTP "
		   "%ld%s%.64s%s%.120s",
		   resp->status, code ? ": " : "",
		   code ? code->valuestring : "", msg ? ": " : "",
		   msg ? msg->valuestring : "");
	/* Escaping can join a withheld token together again ("a\xBAbc..."
	 * is kept as "a\xbabc..."): what is kept is checked too. */
	if (token[0] &&
	    (strstr(err->message, token) || strstr(err->type, token)))
		creds_fail(err, 0, resp->status, NULL,
			   "ECS: the credentials endpoint answered HTTP %ld",
			   resp->status);
	cJSON_Delete(root);
	return creds_status_errno(resp->status);
}

static int auth_token(const struct creds_ctx *ctx, struct buf *token,
		      struct aws_error *err)
{
	const char *file =
		creds_env_get(ctx->env, CREDS_CONTAINER_AUTH_TOKEN_FILE);
	const char *value = creds_env_get(ctx->env, CREDS_CONTAINER_AUTH_TOKEN);
	int rc;

	if (file) {
		rc = creds_read_file(file, ECS_MAX_TOKEN, token);
		if (rc)
			return creds_fail(
				err, rc == -ENOMEM ? rc : -EINVAL, 0, NULL,
				"ECS: cannot read "
				"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE "
				"%.150s: %s",
				file, strerror(-rc));
	} else if (value) {
		rc = buf_puts(token, value);
		if (rc)
			return creds_fail(
				err, -EINVAL, 0, NULL,
				"ECS: AWS_CONTAINER_AUTHORIZATION_TOKEN "
				"is too long");
	}
	if (!creds_header_safe(buf_str(token)))
		return creds_fail(err, -EINVAL, 0, NULL,
				  "ECS: the authorization token holds control "
				  "characters");
	return 0;
}

static int ecs_fetch(const struct creds_ctx *ctx, struct aws_creds *out,
		     struct aws_error *err)
{
	const char *rel = creds_env_get(ctx->env, CREDS_CONTAINER_RELATIVE_URI);
	const char *full = creds_env_get(ctx->env, CREDS_CONTAINER_FULL_URI);
	struct http_header hdr = { "Authorization", NULL };
	struct http_request req = { .method = "GET" };
	struct http_client *http = NULL;
	struct http_response resp;
	struct buf token;
	char url[2048], host[256];
	int rc, https = 0;

	if (!rel && !full)
		return creds_fail(err, -ENOKEY, 0, NULL,
				  "AWS_CONTAINER_CREDENTIALS_* unset");
	if (rel) {
		if ((size_t)snprintf(url, sizeof(url), "%s%s%s", ECS_HOST,
				     rel[0] == '/' ? "" : "/",
				     rel) >= sizeof(url) ||
		    !creds_header_safe(rel) || strchr(rel, ' '))
			return creds_fail(
				err, -EINVAL, 0, NULL,
				"ECS: bad "
				"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
		strcpy(host, "169.254.170.2");
	} else {
		if (http_url_host(full, host, sizeof(host), &https) ||
		    (size_t)snprintf(url, sizeof(url), "%s", full) >=
			    sizeof(url) ||
		    !creds_header_safe(full) || strchr(full, ' '))
			return creds_fail(
				err, -EINVAL, 0, NULL,
				"ECS: AWS_CONTAINER_CREDENTIALS_FULL_URI "
				"is not an http(s) URL");
		if (!https && !host_allowed(host))
			return creds_fail(
				err, -EINVAL, 0, NULL,
				"ECS: AWS_CONTAINER_CREDENTIALS_FULL_URI "
				"host %.100s is not allowed over http "
				"(use https, or a loopback, ECS or EKS "
				"address)",
				host);
	}

	buf_init(&token, ECS_MAX_TOKEN);
	http_response_init(&resp);
	rc = auth_token(ctx, &token, err);
	if (rc)
		goto out;
	http = creds_http_client(ctx, 1);
	if (!http) {
		rc = creds_fail(err, -ENOMEM, 0, NULL, "ECS: out of memory");
		goto out;
	}
	if (token.len) {
		hdr.value = buf_str(&token);
		req.headers = &hdr;
		req.n_headers = 1;
	}
	req.url = url;
	req.timeout_ms = ctx->metadata_timeout_ms;
	rc = http_perform(http, &req, &resp);
	if (rc) {
		rc = creds_fail_transport(
			err, rc, "ECS: credentials endpoint on %.100s: %s",
			host, http_error_text(&resp, rc));
		goto out;
	}
	if (resp.status != 200) {
		rc = status_error(&resp, buf_str(&token), err);
		goto out;
	}
	rc = creds_json_parse("ECS", "ECS", CREDS_JSON_ECS, resp.body.data,
			      resp.body.len, out, err);
out:
	http_client_free(http);
	buf_fini_wipe(&resp.body);
	buf_fini_wipe(&token);
	return rc;
}

const struct creds_provider creds_ecs_provider = {
	.name = "ECS",
	.fetch = ecs_fetch,
};
