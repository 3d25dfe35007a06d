/* creds_env: the snapshot of the environment variables the credential chain
 * reads (taken once, in creds_chain_new, by the creating thread), the
 * environment of credential_process helpers built from it, the scrubbing of
 * the secrets from the process's own environment (creds_env_scrub_process,
 * main's thread before any other exists), and the environment provider
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). The
 * snapshot is immutable afterwards and read by the refreshing thread; it is
 * wiped when the chain is freed. */
#include "creds_provider.h"
#include "creds_util.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "creds.h"

/* The PATH of a credential_process, whatever lockfs's own is. */
#define HELPER_PATH                                                            \
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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

static int is_secret(int i)
{
	return i == CREDS_SECRET_ACCESS_KEY || i == CREDS_SESSION_TOKEN ||
	       i == CREDS_CONTAINER_AUTH_TOKEN;
}

/* What a credential_process gets from our environment besides HOME and
 * PATH: locale, time zone, temporary directory, proxies and certificate
 * stores, and where the AWS files and which profile and region are. */
static const char *const helper_vars[] = {
	"USER",
	"LOGNAME",
	"LANG",
	"LANGUAGE",
	"TZ",
	"TMPDIR",
	"http_proxy",
	"https_proxy",
	"no_proxy",
	"all_proxy",
	"HTTP_PROXY",
	"HTTPS_PROXY",
	"NO_PROXY",
	"ALL_PROXY",
	"SSL_CERT_FILE",
	"SSL_CERT_DIR",
	"AWS_CA_BUNDLE",
	"AWS_PROFILE",
	"AWS_DEFAULT_PROFILE",
	"AWS_REGION",
	"AWS_DEFAULT_REGION",
	"AWS_CONFIG_FILE",
	"AWS_SHARED_CREDENTIALS_FILE",
	"AWS_STS_REGIONAL_ENDPOINTS",
	"AWS_ENDPOINT_URL_STS",
	NULL,
};

static int helper_var(const char *entry)
{
	size_t n = strcspn(entry, "=");
	int i;

	if (!entry[n])
		return 0;
	if (n > 3 && !strncmp(entry, "LC_", 3))
		return 1;
	for (i = 0; helper_vars[i]; i++)
		if (strlen(helper_vars[i]) == n &&
		    !strncmp(entry, helper_vars[i], n))
			return 1;
	return 0;
}

static void free_strv(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int build_helper_env(struct creds_env *env)
{
	size_t n = 0, i, j = 0;
	char **v;

	for (i = 0; environ && environ[i]; i++)
		n++;
	v = calloc(n + 3, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[j++] = strdup(HELPER_PATH);
	if (env->val[CREDS_HOME] &&
	    asprintf(&v[j++], "HOME=%s", env->val[CREDS_HOME]) < 0)
		v[j - 1] = NULL;
	for (i = 0; i < j; i++)
		if (!v[i])
			goto nomem;
	for (i = 0; environ && environ[i] && j < n + 2; i++) {
		if (!helper_var(environ[i]))
			continue;
		v[j] = strdup(environ[i]);
		if (!v[j++])
			goto nomem;
	}
	env->helper_env = v;
	return 0;
nomem:
	for (i = 0; i < n + 3; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

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
		env->val[i] = is_secret(i) ? buf_secret_strdup(v) : strdup(v);
		if (!env->val[i])
			goto nomem;
	}
	if (!env->val[CREDS_HOME])
		env->val[CREDS_HOME] = home_from_passwd(); /* may stay NULL */
	if (build_helper_env(env))
		goto nomem;
	return 0;
nomem:
	creds_env_fini(env);
	return -ENOMEM;
}

void creds_env_fini(struct creds_env *env)
{
	int i;

	for (i = 0; i < CREDS_VAR_COUNT; i++) {
		if (is_secret(i))
			buf_secret_free(env->val[i]);
		else
			buf_free_secret(env->val[i]);
		env->val[i] = NULL;
	}
	free_strv(env->helper_env);
	env->helper_env = NULL;
}

int creds_env_scrub_process(void)
{
	static const char *const secret_vars[] = {
		"AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN",
		NULL,
	};
	int i, n = 0;

	for (i = 0; secret_vars[i]; i++) {
		size_t len = strlen(secret_vars[i]);
		char **e;

		/* Every entry of that name (a duplicate may hide behind the
		 * first), in place: the bytes of the initial environment are
		 * what /proc/PID/environ shows. */
		for (e = environ; e && *e; e++) {
			if (strncmp(*e, secret_vars[i], len) ||
			    (*e)[len] != '=')
				continue;
			buf_wipe(*e + len + 1, strlen(*e + len + 1));
			n++;
		}
		unsetenv(secret_vars[i]);
	}
	return n;
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
