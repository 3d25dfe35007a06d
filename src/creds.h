/* creds: AWS credentials and the default provider chain, in SDK order:
 *   1. environment   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
 *   2. shared files  AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials),
 *                    AWS_CONFIG_FILE (~/.aws/config), profile from the config
 *                    or AWS_PROFILE or "default"; credential_process;
 *                    role_arn + web_identity_token_file in the profile
 *   3. web identity  AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *                    (+ AWS_ROLE_SESSION_NAME) via STS AssumeRoleWithWebIdentity
 *                    at AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, or
 *                    https://sts.<region>.amazonaws.com
 *   4. ECS           AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (169.254.170.2) or
 *                    _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)
 *   5. EC2 IMDSv2    token PUT then role credentials, at
 *                    AWS_EC2_METADATA_SERVICE_ENDPOINT or 169.254.169.254;
 *                    skipped when AWS_EC2_METADATA_DISABLED=true
 * The environment is read when the chain is created. Expiring credentials are
 * cached and refreshed before they expire, one refresh in flight; callers
 * that arrive during a refresh wait for it (or use the cached credentials
 * while they are still valid). Thread-safe. Secrets are wiped when freed and
 * never logged. */
#ifndef LOCKFS_CREDS_H
#define LOCKFS_CREDS_H

#include <stdint.h>

#include "awserr.h"
#include "clk.h"
#include "http.h"

struct aws_creds {
	char *access_key_id;
	char *secret_access_key;
	char *session_token;      /* NULL when none */
	int64_t expires_real_ms;  /* 0: does not expire */
	const char *source;       /* static: "environment", "profile", ... */
};

/* Wipes and frees the strings; the struct can be reused. Accepts NULL. */
void aws_creds_clear(struct aws_creds *c);
/* Deep copy. 0 or -ENOMEM. */
int aws_creds_dup(struct aws_creds *dst, const struct aws_creds *src);

struct creds_config {
	const char *profile;    /* NULL: AWS_PROFILE, then "default" */
	const char *region;     /* for the regional STS endpoint; may be NULL */
	long timeout_ms;        /* per metadata/STS request; 0: 1000 for the
				 * metadata services, 5000 for STS */
	long process_timeout_ms; /* whole credential_process run; 0: 60000 */
	struct http_opts http;  /* STS; metadata requests add no_proxy */
	const struct clk *clock; /* expiry decisions; NULL: the system clocks */
};

struct creds_chain;

struct creds_chain *creds_chain_new(const struct creds_config *cfg);
void creds_chain_free(struct creds_chain *chain);

/* Current credentials, copied into *out (free with aws_creds_clear).
 * Returns 0, or:
 *   -ENOKEY  no provider is configured (err->message says what was tried)
 *   -EACCES  a provider answered with a refusal (e.g. STS AccessDenied)
 *   -EPROTO  a provider's answer was malformed
 *   -EINVAL  a configuration is broken (bad profile, bad file)
 *   other -errno from the transport.
 * A provider that is configured and fails stops the chain with its error; a
 * provider that is not configured passes to the next. */
int creds_chain_get(struct creds_chain *chain, struct aws_creds *out,
		    struct aws_error *err);

#endif
