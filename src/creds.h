/* creds: AWS credentials and the default provider chain, in SDK order:
 *   1. environment   AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *                    (+ AWS_SESSION_TOKEN); one without the other: -EINVAL
 *   2. shared files  AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials, "[x]")
 *                    and AWS_CONFIG_FILE (~/.aws/config, "[profile x]" or
 *                    "[default]"), profile from the config, AWS_PROFILE or
 *                    "default"; in the profile, in this order: role_arn +
 *                    web_identity_token_file (STS, as in 3), static keys
 *                    (the credentials file wins), credential_process (run by
 *                    /bin/sh -c, bounded output and time). source_profile,
 *                    credential_source and SSO: -EOPNOTSUPP. A profile other
 *                    than "default" that is absent: -EINVAL; an absent
 *                    "default", or a profile without any credential
 *                    setting, passes to the next provider.
 *   3. web identity  AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *                    (+ AWS_ROLE_SESSION_NAME, else "lockfs-<uuid>"): STS
 *                    AssumeRoleWithWebIdentity, unsigned, at
 *                    AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, or
 *                    https://sts.<region>.amazonaws.com[.cn]; the token file
 *                    is read again on every refresh
 *   4. ECS           AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (169.254.170.2)
 *                    or _FULL_URI (https, or http to a loopback, ECS or EKS
 *                    address), with AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
 *                    (read every time) or AWS_CONTAINER_AUTHORIZATION_TOKEN
 *   5. EC2 IMDSv2    token PUT then role credentials, at
 *                    AWS_EC2_METADATA_SERVICE_ENDPOINT or 169.254.169.254,
 *                    no proxy, short timeout; skipped when
 *                    AWS_EC2_METADATA_DISABLED=true; an endpoint that does
 *                    not answer, or no role attached, counts as "not on EC2"
 * The environment is read when the chain is created; the shared files on
 * every refresh. Credentials without an expiry are resolved once. Expiring
 * ones are cached and refreshed 5 minutes before they expire (after half
 * their life when they live less than 10 minutes), one refresh in flight:
 * callers that arrive during a refresh keep getting the cached credentials
 * while they are valid (until 10 s before expiry), else wait for it
 * (bounded). A failed refresh while the cached credentials are still valid
 * is logged and retried 10 s later (sooner near the expiry). No lock is held
 * during network I/O or a credential_process run. Thread-safe. Secrets are
 * wiped when freed and never logged nor put in err->message. */
#ifndef LOCKFS_CREDS_H
#define LOCKFS_CREDS_H

#include <stdint.h>

#include "awserr.h"
#include "clk.h"
#include "http.h"

struct aws_creds {
	char *access_key_id;
	char *secret_access_key;
	char *session_token;	 /* NULL when none */
	int64_t expires_real_ms; /* 0: does not expire */
	const char *source;	 /* static: "environment", "profile", ... */
};

/* Wipes and frees the strings and zeroes the struct, which can be reused.
 * Accepts NULL. */
void aws_creds_clear(struct aws_creds *c);
/* Deep copy into dst (overwritten, not freed). 0 or -ENOMEM. */
int aws_creds_dup(struct aws_creds *dst, const struct aws_creds *src);

struct creds_config {
	const char *profile; /* NULL: AWS_PROFILE, then "default" */
	const char *region;  /* for the regional STS endpoint; may be NULL */
	long timeout_ms;     /* per metadata/STS request; 0: 1000 for the
			      * metadata services, 5000 for STS */
	long process_timeout_ms; /* whole credential_process run; 0: 60000 */
	struct http_opts http;	 /* STS; metadata requests add no_proxy */
	const struct clk *clock; /* expiry decisions; NULL: the system clocks */
};

struct creds_chain;

/* Snapshots the environment. cfg may be NULL (all defaults); its strings
 * are copied. NULL on ENOMEM. */
struct creds_chain *creds_chain_new(const struct creds_config *cfg);
/* Accepts NULL. No creds_chain_get may be running. */
void creds_chain_free(struct creds_chain *chain);

/* Current credentials, copied into *out (free with aws_creds_clear; *out
 * is overwritten, not freed, so clear it before reusing it). err may be
 * NULL; on failure err->message is one line naming the provider and the
 * reason. Returns 0, or:
 *   -ENOKEY      no provider is configured (err->message lists what was
 *                tried: "no AWS credentials: environment (...); ...")
 *   -EACCES      a provider answered with a refusal (STS AccessDenied, HTTP
 *                401/403, IMDS Code other than Success)
 *   -EPROTO      a provider's answer was malformed
 *   -EINVAL      a configuration is broken (bad profile or file, one key
 *                without the other, unreadable token file, no STS region);
 *                also STS 4xx answers such as InvalidIdentityToken, as
 *                awserr_to_errno maps them
 *   -EOPNOTSUPP  the profile uses what lockfs does not support
 *                (source_profile, credential_source, SSO)
 *   -EIO         credential_process failed (non-zero exit), or HTTP 5xx
 *   -EAGAIN      a credentials service throttled (HTTP 429)
 *   -ETIMEDOUT   credential_process or a request took too long
 *   other -errno from the transport (err->transport is set then).
 * A provider that is configured and fails stops the chain with its error; a
 * provider that is not configured passes to the next. */
int creds_chain_get(struct creds_chain *chain, struct aws_creds *out,
		    struct aws_error *err);

#endif
