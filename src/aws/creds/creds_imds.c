/* creds_imds: the EC2 instance metadata provider, IMDSv2 only: PUT
 * /latest/api/token, then the role name and the role's credentials with the
 * token, at AWS_EC2_METADATA_SERVICE_ENDPOINT (default 169.254.169.254),
 * without proxies and with the short metadata timeout. Skipped when
 * AWS_EC2_METADATA_DISABLED=true. An endpoint that cannot be reached for the
 * token request (refused, unreachable, no connection in time) counts as "not
 * on EC2": the provider passes (-ENOKEY), as it does when no role is
 * attached (404). A token request that went out and got no answer in time
 * is an error that says why it may be (the PUT response hop limit of 1 does
 * not reach a container). Plain HTTP only to the link-local address, its
 * IPv6 form or loopback, unless allow_plain_http. Runs in the refreshing
 * thread only; no shared state; the token is wiped. */
#include "creds_provider.h"
#include "creds_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
#define IMDS_TOKEN_PATH	      "/latest/api/token"
#define IMDS_ROLE_PATH	      "/latest/meta-data/iam/security-credentials/"
#define IMDS_TOKEN_TTL_S      "21600"

struct imds {
	const struct creds_ctx *ctx;
	struct http_client *http;
	char base[512];
	struct buf token;
	struct http_response resp;
};

static int imds_request(struct imds *m, const char *method, const char *path,
			const struct http_header *hdr)
{
	char url[1024];
	struct http_request req = { .method = method,
				    .url = url,
				    .headers = hdr,
				    .n_headers = 1,
				    .timeout_ms = m->ctx->metadata_timeout_ms };

	if ((size_t)snprintf(url, sizeof(url), "%s%s", m->base, path) >=
	    sizeof(url))
		return -EINVAL;
	return http_perform(m->http, &req, &m->resp);
}

static int not_reachable(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET;
}

static int get_token(struct imds *m, struct aws_error *err)
{
	const struct http_header ttl = { "X-aws-ec2-metadata-token-ttl-seconds",
					 IMDS_TOKEN_TTL_S };
	int rc = imds_request(m, "PUT", IMDS_TOKEN_PATH, &ttl);

	if (rc == -ETIMEDOUT && m->resp.sent)
		return creds_fail_transport(
			err, rc,
			"EC2 IMDS did not answer the token request within "
			"%ld ms: hop limit 1 in a container? (raise "
			"HttpPutResponseHopLimit to 2, or set "
			"AWS_EC2_METADATA_DISABLED=true when not on EC2)",
			m->ctx->metadata_timeout_ms);
	if (rc && not_reachable(rc))
		return creds_fail(err, -ENOKEY, 0, NULL,
				  "EC2 IMDS not reachable (%s)", strerror(-rc));
	if (rc)
		return creds_fail_transport(
			err, rc, "EC2 IMDS: token request: %s", strerror(-rc));
	if (m->resp.status == 401 || m->resp.status == 403)
		return creds_fail(err, -EACCES, m->resp.status, NULL,
				  "EC2 IMDS: token request refused (HTTP %ld)",
				  m->resp.status);
	if (m->resp.status != 200)
		return creds_fail(err, creds_status_errno(m->resp.status),
				  m->resp.status, NULL,
				  "EC2 IMDS: token request answered HTTP %ld",
				  m->resp.status);
	rc = buf_append(&m->token, m->resp.body.data, m->resp.body.len);
	if (rc)
		return creds_fail(err, rc, 0, NULL, "EC2 IMDS: out of memory");
	while (m->token.len &&
	       strchr(" \t\r\n", m->token.data[m->token.len - 1]))
		m->token.data[--m->token.len] = '\0';
	if (!m->token.len || !creds_header_safe(m->token.data) ||
	    memchr(m->token.data, '\0', m->token.len))
		return creds_fail(err, -EPROTO, m->resp.status, NULL,
				  "EC2 IMDS: malformed token answer");
	return 0;
}

/* The status of a metadata GET as a result; 404 means no role. */
static int get_status(struct imds *m, int rc, const char *what,
		      struct aws_error *err)
{
	if (rc)
		return creds_fail_transport(err, rc, "EC2 IMDS: %s: %s", what,
					    strerror(-rc));
	if (m->resp.status == 404)
		return creds_fail(err, -ENOKEY, 404, NULL,
				  "EC2 IMDS: no IAM role (HTTP 404 on %s)",
				  what);
	if (m->resp.status != 200)
		return creds_fail(err, creds_status_errno(m->resp.status),
				  m->resp.status, NULL,
				  "EC2 IMDS: %s answered HTTP %ld", what,
				  m->resp.status);
	return 0;
}

/* Plain HTTP only to the metadata service's own addresses or loopback. */
static int endpoint_ok(const struct creds_ctx *ctx, const char *url)
{
	unsigned char a6[16], want6[16];
	struct in_addr a4;
	char host[256];
	int https;

	if (http_url_host(url, host, sizeof(host), &https))
		return 0;
	if (https || ctx->http.allow_plain_http || http_host_is_loopback(host))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return ntohl(a4.s_addr) == 0xa9fea9fe; /* 169.254.169.254 */
	return inet_pton(AF_INET6, host, a6) == 1 &&
	       inet_pton(AF_INET6, "fd00:ec2::254", want6) == 1 &&
	       !memcmp(a6, want6, sizeof(a6));
}

static int role_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 128)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || strchr("+=,.@_-", c)))
			return 0;
	}
	return 1;
}

static int imds_fetch(const struct creds_ctx *ctx, struct aws_creds *out,
		      struct aws_error *err)
{
	const char *disabled =
		creds_env_get(ctx->env, CREDS_EC2_METADATA_DISABLED);
	const char *ep = creds_env_get(ctx->env, CREDS_EC2_METADATA_ENDPOINT);
	struct http_header tok = { "X-aws-ec2-metadata-token", NULL };
	struct imds m = { .ctx = ctx };
	char host[256], path[512], role_path[256];
	const char *body;
	size_t n;
	int rc;

	if (disabled && !strcasecmp(disabled, "true"))
		return creds_fail(err, -ENOKEY, 0, NULL, "EC2 IMDS disabled");
	if (!ep)
		ep = IMDS_DEFAULT_ENDPOINT;
	if (http_url_host_path(ep, host, sizeof(host), path, sizeof(path)) ||
	    (size_t)snprintf(m.base, sizeof(m.base), "%s", ep) >=
		    sizeof(m.base))
		return creds_fail(err, -EINVAL, 0, NULL,
				  "EC2 IMDS: AWS_EC2_METADATA_SERVICE_ENDPOINT "
				  "is not an http(s) URL");
	if (!endpoint_ok(ctx, ep))
		return creds_fail(
			err, -EPERM, 0, NULL,
			"EC2 IMDS: AWS_EC2_METADATA_SERVICE_ENDPOINT "
			"%.100s is plain HTTP to a host that is not "
			"the metadata service or loopback (use https, "
			"or -o allow_plain_http)",
			ep);
	n = strlen(m.base);
	while (n && m.base[n - 1] == '/')
		m.base[--n] = '\0';

	buf_init(&m.token, 4096);
	http_response_init(&m.resp);
	m.http = creds_http_client(ctx, 1);
	if (!m.http) {
		rc = creds_fail(err, -ENOMEM, 0, NULL,
				"EC2 IMDS: out of memory");
		goto out;
	}
	rc = get_token(&m, err);
	if (rc)
		goto out;
	tok.value = m.token.data;

	rc = get_status(&m, imds_request(&m, "GET", IMDS_ROLE_PATH, &tok),
			"the role list", err);
	if (rc)
		goto out;
	body = buf_str(&m.resp.body);
	n = strcspn(body, "\r\n");
	if (!role_name_ok(body, n)) {
		rc = creds_fail(err, -EPROTO, m.resp.status, NULL,
				"EC2 IMDS: malformed role name answer");
		goto out;
	}
	snprintf(role_path, sizeof(role_path), "%s%.*s", IMDS_ROLE_PATH, (int)n,
		 body);

	rc = get_status(&m, imds_request(&m, "GET", role_path, &tok),
			"the role credentials", err);
	if (rc)
		goto out;
	rc = creds_json_parse("EC2 IMDS", "EC2 IMDS", CREDS_JSON_IMDS,
			      m.resp.body.data, m.resp.body.len, out, err);
out:
	http_client_free(m.http);
	buf_fini_wipe(&m.resp.body);
	buf_fini_wipe(&m.token);
	return rc;
}

const struct creds_provider creds_imds_provider = {
	.name = "EC2 IMDS",
	.fetch = imds_fetch,
};
