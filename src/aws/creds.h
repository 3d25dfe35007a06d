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
 * their life when they live less than 10 minutes), one refresh in flight.
 * Until creds_chain_start, the caller that finds the cache due runs the
 * refresh itself (start-up); afterwards a thread of the chain does every
 * refresh, early, and creds_chain_get never runs a provider: it hands out
 * the cached credentials while they are usable (until 10 s before expiry),
 * and only when none are usable waits (bounded) for the refresher. A
 * failed refresh while the cached credentials are still valid is logged and
 * retried 10 s later (sooner near the expiry). No lock is held during
 * network I/O or a credential_process run. Thread-safe.
 *
 * Secrets: kept in pages excluded from core dumps (buf_secret_alloc), one
 * block per credential shared by its copies, wiped when the last copy is
 * cleared; never logged nor put in err->message. When running as root, the
 * shared files are used only if they and their directories are owned by
 * root (or the real uid) and not writable by group or others
 * (creds_trust.h), so that no other user can choose the command lockfs
 * runs or the keys it uses; credential_process gets a minimal environment
 * and no descriptor but stdin, stdout and stderr. */
#ifndef LOCKFS_CREDS_H
#define LOCKFS_CREDS_H

#include <stdint.h>

#include "awserr.h"
#include "clk.h"
#include "http.h"

struct creds_secret;

struct aws_creds {
	char *access_key_id;
	char *secret_access_key;
	char *session_token;	 /* NULL when none */
	int64_t expires_real_ms; /* 0: does not expire */
	const char *source;	 /* static: "environment", "profile", ... */
	/* Internal: the secret pages holding the three strings (creds_set,
	 * aws_creds_dup); NULL when the strings were malloc'd one by one. */
	struct creds_secret *shared;
};

/* Wipes and frees the strings (or drops this copy's share of them) and
 * zeroes the struct, which can be reused. Accepts NULL. */
void aws_creds_clear(struct aws_creds *c);
/* A copy into dst (overwritten, not freed): it shares the immutable secret
 * pages of src, or gets its own when src has none. 0 or -ENOMEM. */
int aws_creds_dup(struct aws_creds *dst, const struct aws_creds *src);

struct creds_config {
	const char *profile; /* NULL: AWS_PROFILE, then "default" */
	const char *region;  /* for the regional STS endpoint; may be NULL */
	long timeout_ms;     /* per metadata/STS request; 0: 1000 for the
			      * metadata services, 5000 for STS */
	long process_timeout_ms; /* whole credential_process run; 0: 60000 */
	struct http_opts http;	 /* STS (its allow_plain_http included);
				  * metadata requests add no_proxy */
	const struct clk *clock; /* expiry decisions; NULL: the system clocks */
	int check_files;	 /* the owner and mode check of the shared files
				  * (creds_trust.h): 0 when running as root, 1
				  * always, -1 never */
};

struct creds_chain;

/* Snapshots the environment. cfg may be NULL (all defaults); its strings
 * are copied. NULL on ENOMEM. */
struct creds_chain *creds_chain_new(const struct creds_config *cfg);
/* Accepts NULL. No creds_chain_get may be running. Stops the refresher
 * (a credential_process it runs is killed). */
void creds_chain_free(struct creds_chain *chain);

/* Starts the refresher thread (after any fork: threads do not survive
 * one). From then on refreshes happen in it only. 0 or -errno. */
int creds_chain_start(struct creds_chain *chain);

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
 *   -EPERM       refused before any use: a shared file failed the owner and
 *                mode check (as root), or a token would go over plain HTTP
 *                to a host that is not loopback
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
/* The same, but once the refresher runs, waits at most max_wait_ms for it
 * when nothing usable is cached (-ETIMEDOUT then). For request paths that
 * must not stall (a lock's renewal). */
int creds_chain_get_wait(struct creds_chain *chain, struct aws_creds *out,
			 struct aws_error *err, long max_wait_ms);

/* Removes AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and
 * AWS_CONTAINER_AUTHORIZATION_TOKEN from this process's environment, their
 * values overwritten in place so that /proc/PID/environ no longer shows
 * them (the names stay there, followed by NUL bytes). Call it after
 * creds_chain_new (which copies them) and before any other thread exists.
 * Returns how many values it wiped. */
int creds_env_scrub_process(void);

#endif
