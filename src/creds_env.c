/* creds_env: the snapshot of the environment variables the credential chain
 * reads (taken once, in creds_chain_new, by the creating thread), and the
 * environment provider (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN). The snapshot is immutable afterwards and read by the
 * refreshing thread; it is wiped when the chain is freed. */
#include "creds_provider.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const var_names[CREDS_VAR_COUNT] = {
	[CREDS_ACCESS_KEY_ID] = "AWS_ACCESS_KEY_ID",
	[CREDS_SECRET_ACCESS_KEY] = "AWS_SECRET_ACCESS_KEY",
	[CREDS_SESSION_TOKEN] = "AWS_SESSION_TOKEN",
	[CREDS_PROFILE] = "AWS_PROFILE",
	[CREDS_SHARED_CREDENTIALS_FILE] = "AWS_SHARED_CREDENTIALS_FILE",
	[CREDS_CONFIG_FILE] = "AWS_CONFIG_FILE",
	[CREDS_HOME] = "HOME",
	[CREDS_WEB_IDENTITY_TOKEN_FILE] = "AWS_WEB_IDENTITY_TOKEN_FILE",
	[CREDS_ROLE_ARN] = "AWS_ROLE_ARN",
	[CREDS_ROLE_SESSION_NAME] = "AWS_ROLE_SESSION_NAME",
	[CREDS_ENDPOINT_URL_STS] = "AWS_ENDPOINT_URL_STS",
	[CREDS_ENDPOINT_URL] = "AWS_ENDPOINT_URL",
	[CREDS_CONTAINER_RELATIVE_URI] =
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	[CREDS_CONTAINER_FULL_URI] = "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	[CREDS_CONTAINER_AUTH_TOKEN] = "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	[CREDS_CONTAINER_AUTH_TOKEN_FILE] =
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	[CREDS_EC2_METADATA_DISABLED] = "AWS_EC2_METADATA_DISABLED",
	[CREDS_EC2_METADATA_ENDPOINT] = "AWS_EC2_METADATA_SERVICE_ENDPOINT",
};

static char *home_from_passwd(void)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) || !res ||
	    !res->pw_dir || !res->pw_dir[0])
		return NULL;
	return strdup(res->pw_dir);
}

int creds_env_snapshot(struct creds_env *env)
{
	int i;

	memset(env, 0, sizeof(*env));
	for (i = 0; i < CREDS_VAR_COUNT; i++) {
		const char *v = getenv(var_names[i]);

		if (!v || !v[0])
			continue;
		env->val[i] = strdup(v);
		if (!env->val[i])
			goto nomem;
	}
	if (!env->val[CREDS_HOME])
		env->val[CREDS_HOME] = home_from_passwd(); /* may stay NULL */
	return 0;
nomem:
	creds_env_fini(env);
	return -ENOMEM;
}

void creds_env_fini(struct creds_env *env)
{
	int i;

	for (i = 0; i < CREDS_VAR_COUNT; i++) {
		buf_free_secret(env->val[i]);
		env->val[i] = NULL;
	}
}

const char *creds_env_get(const struct creds_env *env, enum creds_var v)
{
	return env->val[v];
}

static int env_fetch(const struct creds_ctx *ctx, struct aws_creds *out,
		     struct aws_error *err)
{
	const char *id = creds_env_get(ctx->env, CREDS_ACCESS_KEY_ID);
	const char *secret = creds_env_get(ctx->env, CREDS_SECRET_ACCESS_KEY);
	const char *token = creds_env_get(ctx->env, CREDS_SESSION_TOKEN);
	int rc;

	if (!id && !secret) {
		awserr_set(err, 0, NULL, "AWS_ACCESS_KEY_ID unset");
		return -ENOKEY;
	}
	if (!id)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "environment: AWS_SECRET_ACCESS_KEY is set "
				  "but AWS_ACCESS_KEY_ID is not");
	if (!secret)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "environment: AWS_ACCESS_KEY_ID is set but "
				  "AWS_SECRET_ACCESS_KEY is not");
	rc = creds_set(out, id, secret, token, 0, "environment");
	if (rc == -EINVAL)
		return creds_fail(err, rc, 0, NULL,
				  "environment: AWS_ACCESS_KEY_ID, "
				  "AWS_SECRET_ACCESS_KEY or AWS_SESSION_TOKEN "
				  "holds spaces or control characters");
	if (rc)
		return creds_fail(err, rc, 0, NULL,
				  "environment: out of memory");
	return 0;
}

const struct creds_provider creds_env_provider = {
	.name = "environment",
	.fetch = env_fetch,
};
