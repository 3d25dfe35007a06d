/* creds_profile: the shared-files provider. Reads the credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials; sections "[name]") and
 * the config file (AWS_CONFIG_FILE, ~/.aws/config; "[profile name]" or
 * "[default]") on every fetch, after the owner and mode check of
 * creds_trust when ctx->check_files (as root): a file that fails it is
 * refused, before anything in it is used or run. It takes from the chosen
 * profile, in order:
 * role_arn + web_identity_token_file (STS, via creds_webid), static keys
 * (the credentials file wins over the config file), credential_process (via
 * creds_process). source_profile/credential_source and SSO are refused with
 * -EOPNOTSUPP. Runs in the refreshing thread only; no shared state. */
#include "creds_provider.h"
#include "creds_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awsini.h"
#include "creds_trust.h"

#define PROFILE_PATH_MAX 4096

struct profile_files {
	char cred_path[PROFILE_PATH_MAX];
	char conf_path[PROFILE_PATH_MAX];
	struct awsini *cred; /* NULL when the file is absent */
	struct awsini *conf;
	char conf_section[300]; /* "profile x" or "default" */
	int in_cred, in_conf;
	char who[64]; /* "profile \"x\"" for messages */
};

/* Expands a leading "~/" with HOME. 0 or -ENAMETOOLONG / -ENOENT. */
static int expand_path(const struct creds_ctx *ctx, const char *path,
		       const char *fallback, char *out, size_t outlen)
{
	const char *home = creds_env_get(ctx->env, CREDS_HOME);
	int n;

	if (!path) {
		if (!home)
			return -ENOENT;
		n = snprintf(out, outlen, "%s/%s", home, fallback);
	} else if (path[0] == '~' && (path[1] == '/' || !path[1])) {
		if (!home)
			return -ENOENT;
		n = snprintf(out, outlen, "%s%s", home, path + 1);
	} else {
		n = snprintf(out, outlen, "%s", path);
	}
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* The owner and mode check: 0 with the path to read in canon, -ENOENT when
 * the file is absent, else the refusal in err. */
static int trust(const struct creds_ctx *ctx, const char *path, char *canon,
		 size_t canonlen, struct aws_error *err)
{
	char why[300];
	int rc;

	if (!ctx->check_files) {
		snprintf(canon, canonlen, "%s", path);
		return 0;
	}
	rc = creds_trust_file(path, ctx->trusted_uid, canon, canonlen, why,
			      sizeof(why));
	if (rc == 0 || rc == -ENOENT)
		return rc;
	if (rc != -EPERM)
		return creds_fail(err, rc, 0, NULL, "profile: %s", why);
	return creds_fail(err, -EPERM, 0, NULL,
			  "profile: refusing %.200s: %s (as root, lockfs uses "
			  "AWS files only when they and every directory above "
			  "them are owned by root or uid %u and not writable "
			  "by group or others)",
			  path, why, (unsigned)ctx->trusted_uid);
}

static int load_one(const struct creds_ctx *ctx, const char *path,
		    struct awsini **out, struct aws_error *err)
{
	char canon[PROFILE_PATH_MAX];
	int line = 0, rc;

	*out = NULL;
	if (!path[0])
		return 0;
	rc = trust(ctx, path, canon, sizeof(canon), err);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rc = awsini_load(canon, out, &line);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc == -EINVAL)
		return creds_fail(err, rc, 0, NULL,
				  "profile: %.200s line %d: syntax error", path,
				  line);
	if (rc == -EFBIG)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "profile: %.200s is larger than 1 MiB", path);
	if (rc)
		return creds_fail(err, rc, 0, NULL,
				  "profile: cannot read %.200s: %s", path,
				  strerror(-rc));
	return 0;
}

static void files_fini(struct profile_files *f)
{
	awsini_free(f->cred);
	awsini_free(f->conf);
	f->cred = f->conf = NULL;
}

static int files_load(const struct creds_ctx *ctx, struct profile_files *f,
		      struct aws_error *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	snprintf(f->who, sizeof(f->who), "profile \"%.40s\"", ctx->profile);
	rc = expand_path(
		ctx, creds_env_get(ctx->env, CREDS_SHARED_CREDENTIALS_FILE),
		".aws/credentials", f->cred_path, sizeof(f->cred_path));
	if (rc == -ENAMETOOLONG)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "profile: credentials file path too long");
	rc = expand_path(ctx, creds_env_get(ctx->env, CREDS_CONFIG_FILE),
			 ".aws/config", f->conf_path, sizeof(f->conf_path));
	if (rc == -ENAMETOOLONG)
		return creds_fail(err, -EINVAL, 0, NULL,
				  "profile: config file path too long");
	rc = load_one(ctx, f->cred_path, &f->cred, err);
	if (!rc)
		rc = load_one(ctx, f->conf_path, &f->conf, err);
	if (rc) {
		files_fini(f);
		return rc;
	}
	if (strcmp(ctx->profile, "default"))
		snprintf(f->conf_section, sizeof(f->conf_section), "profile %s",
			 ctx->profile);
	else if (f->conf && awsini_has_section(f->conf, "profile default"))
		strcpy(f->conf_section, "profile default");
	else
		strcpy(f->conf_section, "default");
	f->in_cred = f->cred && awsini_has_section(f->cred, ctx->profile);
	f->in_conf = f->conf && awsini_has_section(f->conf, f->conf_section);
	return 0;
}

/* A key of the profile, the credentials file first. */
static const char *get(const struct creds_ctx *ctx,
		       const struct profile_files *f, const char *key)
{
	const char *v = NULL;

	if (f->in_cred)
		v = awsini_get(f->cred, ctx->profile, key);
	if ((!v || !v[0]) && f->in_conf)
		v = awsini_get(f->conf, f->conf_section, key);
	return v && v[0] ? v : NULL;
}

static int static_keys(const struct creds_ctx *ctx,
		       const struct profile_files *f, struct aws_creds *out,
		       struct aws_error *err)
{
	const struct awsini *ini = NULL;
	const char *sec = NULL, *path = NULL, *id, *secret, *token;
	int rc;

	/* All keys come from one file: the credentials file if it has any. */
	if (f->in_cred &&
	    (awsini_get(f->cred, ctx->profile, "aws_access_key_id") ||
	     awsini_get(f->cred, ctx->profile, "aws_secret_access_key"))) {
		ini = f->cred;
		sec = ctx->profile;
		path = f->cred_path;
	} else if (f->in_conf &&
		   (awsini_get(f->conf, f->conf_section, "aws_access_key_id") ||
		    awsini_get(f->conf, f->conf_section,
			       "aws_secret_access_key"))) {
		ini = f->conf;
		sec = f->conf_section;
		path = f->conf_path;
	}
	if (!ini)
		return -ENOKEY;
	id = awsini_get(ini, sec, "aws_access_key_id");
	secret = awsini_get(ini, sec, "aws_secret_access_key");
	token = awsini_get(ini, sec, "aws_session_token");
	if (!id || !id[0])
		return creds_fail(err, -EINVAL, 0, NULL,
				  "%s in %.160s: aws_secret_access_key without "
				  "aws_access_key_id",
				  f->who, path);
	if (!secret || !secret[0])
		return creds_fail(err, -EINVAL, 0, NULL,
				  "%s in %.160s: aws_access_key_id without "
				  "aws_secret_access_key",
				  f->who, path);
	rc = creds_set(out, id, secret, token, 0, "profile");
	if (rc == -EINVAL)
		return creds_fail(err, rc, 0, NULL,
				  "%s in %.160s: a key holds spaces or control "
				  "characters",
				  f->who, path);
	if (rc)
		return creds_fail(err, rc, 0, NULL, "%s: out of memory",
				  f->who);
	return 0;
}

static int web_identity(const struct creds_ctx *ctx,
			const struct profile_files *f, const char *role_arn,
			struct aws_creds *out, struct aws_error *err)
{
	const char *file = get(ctx, f, "web_identity_token_file");
	const char *session = get(ctx, f, "role_session_name");
	char path[PROFILE_PATH_MAX];

	if (get(ctx, f, "source_profile") || get(ctx, f, "credential_source"))
		return creds_fail(err, -EOPNOTSUPP, 0, NULL,
				  "%s: not supported by lockfs: role_arn with "
				  "source_profile or credential_source (STS "
				  "AssumeRole); use credential_process",
				  f->who);
	if (!file)
		return creds_fail(
			err, -EINVAL, 0, NULL,
			"%s: role_arn without web_identity_token_file", f->who);
	if (expand_path(ctx, file, "", path, sizeof(path)))
		return creds_fail(err, -EINVAL, 0, NULL,
				  "%s: bad web_identity_token_file path",
				  f->who);
	return creds_webid_assume(ctx, f->who, path, role_arn,
				  session ? session : ctx->session_name, out,
				  err);
}

static int profile_fetch(const struct creds_ctx *ctx, struct aws_creds *out,
			 struct aws_error *err)
{
	struct profile_files f;
	const char *v;
	int rc;

	rc = files_load(ctx, &f, err);
	if (rc)
		return rc;
	if (!f.in_cred && !f.in_conf) {
		if (ctx->profile_explicit)
			rc = creds_fail(err, -EINVAL, 0, NULL,
					"%s not found in %.100s or %.100s",
					f.who, f.cred_path, f.conf_path);
		else
			rc = creds_fail(err, -ENOKEY, 0, NULL,
					"no profile \"%.24s\" in the shared "
					"files",
					ctx->profile);
		goto out;
	}
	v = get(ctx, &f, "role_arn");
	if (v) {
		rc = web_identity(ctx, &f, v, out, err);
		goto out;
	}
	rc = static_keys(ctx, &f, out, err);
	if (rc != -ENOKEY)
		goto out;
	v = get(ctx, &f, "credential_process");
	if (v) {
		rc = creds_process_run(ctx, f.who, v, out, err);
		goto out;
	}
	if (get(ctx, &f, "sso_session") || get(ctx, &f, "sso_start_url") ||
	    get(ctx, &f, "sso_account_id")) {
		rc = creds_fail(err, -EOPNOTSUPP, 0, NULL,
				"%s: not supported by lockfs: SSO; use "
				"credential_process = aws configure "
				"export-credentials --profile %.40s --format "
				"process",
				f.who, ctx->profile);
		goto out;
	}
	rc = creds_fail(err, -ENOKEY, 0, NULL,
			"profile \"%.24s\" has no credentials", ctx->profile);
out:
	files_fini(&f);
	return rc;
}

const struct creds_provider creds_profile_provider = {
	.name = "profile",
	.fetch = profile_fetch,
};
