/* creds_provider: the interface between the credential chain (creds.c) and
 * its providers (creds_env, creds_profile, creds_webid, creds_ecs,
 * creds_imds, creds_process); the helpers they share are in creds_util.h.
 * Internal to lockfs_creds. A provider runs in the one thread doing a
 * refresh, with no lock held; everything it reads through struct creds_ctx
 * is immutable while the chain exists. */
#ifndef LOCKFS_CREDS_PROVIDER_H
#define LOCKFS_CREDS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "awserr.h"
#include "buf.h"
#include "clk.h"
#include "creds.h"
#include "http.h"

/* The environment variables the chain reads, copied once when the chain is
 * created (creds_env_snapshot). */
enum creds_var {
	CREDS_ACCESS_KEY_ID,
	CREDS_SECRET_ACCESS_KEY,
	CREDS_SESSION_TOKEN,
	CREDS_PROFILE,
	CREDS_SHARED_CREDENTIALS_FILE,
	CREDS_CONFIG_FILE,
	CREDS_HOME,
	CREDS_WEB_IDENTITY_TOKEN_FILE,
	CREDS_ROLE_ARN,
	CREDS_ROLE_SESSION_NAME,
	CREDS_ENDPOINT_URL_STS,
	CREDS_ENDPOINT_URL,
	CREDS_CONTAINER_RELATIVE_URI,
	CREDS_CONTAINER_FULL_URI,
	CREDS_CONTAINER_AUTH_TOKEN,
	CREDS_CONTAINER_AUTH_TOKEN_FILE,
	CREDS_EC2_METADATA_DISABLED,
	CREDS_EC2_METADATA_ENDPOINT,
	CREDS_VAR_COUNT
};

struct creds_env {
	char *val[CREDS_VAR_COUNT]; /* NULL when unset or empty; the secret
				     * ones in secret pages (buf.h) */
	/* The environment of a credential_process: a fixed PATH and the few
	 * variables a helper may need (HOME, locale, proxies, the AWS
	 * profile, region and file locations), never a key, token or token
	 * file of lockfs's own. NULL-terminated "NAME=value" strings. */
	char **helper_env;
};

/* creds_env.c: copies the variables (HOME falls back to the password
 * database) and builds helper_env. 0 or -ENOMEM. */
int creds_env_snapshot(struct creds_env *env);
/* Wipes and frees every value (some are secrets). */
void creds_env_fini(struct creds_env *env);
/* The value, or NULL when the variable was unset or empty. */
const char *creds_env_get(const struct creds_env *env, enum creds_var v);

/* What a provider sees. */
struct creds_ctx {
	const struct creds_env *env;
	const char *profile;	  /* config, AWS_PROFILE, else "default" */
	int profile_explicit;	  /* not "default": a missing one is an error */
	const char *region;	  /* NULL when unknown */
	const char *session_name; /* default RoleSessionName */
	long metadata_timeout_ms; /* ECS and IMDS, per request */
	long sts_timeout_ms;	  /* STS, per request */
	long process_timeout_ms;  /* credential_process, whole run */
	struct http_opts http;	  /* base options; metadata adds no_proxy */
	int check_files;	  /* the shared files must pass creds_trust */
	uid_t trusted_uid;	  /* besides root, for creds_trust */
	const int *cancel;	  /* set (atomically) when the chain is being
				   * freed: a credential_process run stops */
};

/* A provider. fetch returns
 *   0        with *out filled (out->source set),
 *   -ENOKEY  when it is not configured: the chain moves on; err->message
 *            holds a short self-contained reason ("AWS_ACCESS_KEY_ID
 *            unset") that the chain joins into its "no AWS credentials"
 *            summary (all five must fit in err->message),
 *   other    -errno when it is configured and failed: the chain stops;
 *            err->message is one line naming the provider, never a secret. */
struct creds_provider {
	const char *name;
	int (*fetch)(const struct creds_ctx *ctx, struct aws_creds *out,
		     struct aws_error *err);
};

extern const struct creds_provider creds_env_provider;
extern const struct creds_provider creds_profile_provider;
extern const struct creds_provider creds_webid_provider;
extern const struct creds_provider creds_ecs_provider;
extern const struct creds_provider creds_imds_provider;

/* creds_webid.c: STS AssumeRoleWithWebIdentity with the token read from
 * token_file now. who names the caller in messages ("web identity",
 * "profile \"x\""). Returns as a provider's fetch (never -ENOKEY). */
int creds_webid_assume(const struct creds_ctx *ctx, const char *who,
		       const char *token_file, const char *role_arn,
		       const char *session_name, struct aws_creds *out,
		       struct aws_error *err);

/* creds_process.c: runs cmd with /bin/sh -c (stdin /dev/null, stderr
 * inherited, stdout bounded, no other descriptor, the environment
 * ctx->env->helper_env), within ctx->process_timeout_ms, and parses its
 * JSON. Returns as a provider's fetch (never -ENOKEY): -ETIMEDOUT, -EIO
 * (non-zero exit), -EPROTO (bad output), -ECANCELED (the chain is being
 * freed). */
int creds_process_run(const struct creds_ctx *ctx, const char *who,
		      const char *cmd, struct aws_creds *out,
		      struct aws_error *err);

#endif
