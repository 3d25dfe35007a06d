/* awscfg: resolves the profile, region and DynamoDB endpoint from options,
 * the environment and the shared config file (checked as creds_trust says
 * when running as root), and judges an endpoint's transport (plain HTTP
 * only to loopback unless allowed). Called at start-up by the main thread
 * (it reads the environment); no shared state. */
#include "awscfg.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awsini.h"
#include "creds_trust.h"
#include "http.h"
#include "text.h"

static int fail(char *errmsg, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *errmsg, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errmsg && errlen) {
		va_start(ap, fmt);
		vsnprintf(errmsg, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

static int config_path(char *out, size_t len)
{
	const char *p = env("AWS_CONFIG_FILE");
	const char *home = env("HOME");
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	int n;

	if (!home && (!p || p[0] == '~')) {
		if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) ||
		    !res || !res->pw_dir)
			return -ENOENT;
		home = res->pw_dir;
	}
	if (!p)
		n = snprintf(out, len, "%s/.aws/config", home);
	else if (p[0] == '~' && (p[1] == '/' || !p[1]))
		n = snprintf(out, len, "%s%s", home, p + 1);
	else
		n = snprintf(out, len, "%s", p);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The region of the profile in the config file into out ("" if none). */
static int profile_region(const char *profile, char *out, size_t outlen,
			  char *errmsg, size_t errlen)
{
	char path[4096], canon[4096], section[160], why[300];
	struct awsini *ini = NULL;
	const char *v;
	int rc, line = 0;

	out[0] = '\0';
	if (config_path(path, sizeof(path)))
		return 0;
	if (creds_trust_enabled(0)) {
		rc = creds_trust_file(path, getuid(), canon, sizeof(canon), why,
				      sizeof(why));
		if (rc == -ENOENT)
			return 0;
		if (rc == -EPERM)
			return fail(errmsg, errlen,
				    "refusing %.200s: %s (as root, lockfs "
				    "uses AWS files only when they and every "
				    "directory above them are owned by root or "
				    "uid %u and not writable by group or "
				    "others)",
				    path, why, (unsigned)getuid());
		if (rc)
			return fail(errmsg, errlen, "%s", why);
		strcpy(path, canon);
	}
	rc = awsini_load(path, &ini, &line);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc == -EINVAL)
		return fail(errmsg, errlen, "%.200s line %d: syntax error",
			    path, line);
	if (rc)
		return fail(errmsg, errlen, "cannot read %.200s: %s", path,
			    rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
	if (strcmp(profile, "default"))
		snprintf(section, sizeof(section), "profile %s", profile);
	else if (awsini_has_section(ini, "profile default"))
		strcpy(section, "profile default");
	else
		strcpy(section, "default");
	v = awsini_get(ini, section, "region");
	if (v && text_copy(out, outlen, v)) {
		awsini_free(ini);
		return fail(errmsg, errlen, "region in %.200s is too long",
			    path);
	}
	awsini_free(ini);
	return 0;
}

static int region_ok(const char *r)
{
	size_t i;

	for (i = 0; r[i]; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') ||
		      (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
			return 0;
	return i > 0;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

int awscfg_resolve(const char *opt_profile, const char *opt_region,
		   const char *opt_endpoint, struct aws_settings *out,
		   char *errmsg, size_t errlen)
{
	const char *profile, *region, *endpoint;
	char host[256], path[512];
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	if (errmsg && errlen)
		errmsg[0] = '\0';

	profile = opt_profile && opt_profile[0] ? opt_profile
						: env("AWS_PROFILE");
	if (!profile)
		profile = "default";
	if (text_copy(out->profile, sizeof(out->profile), profile))
		return fail(errmsg, errlen, "profile name is too long");

	endpoint = opt_endpoint && opt_endpoint[0] ? opt_endpoint : NULL;
	if (!endpoint)
		endpoint = env("AWS_ENDPOINT_URL_DYNAMODB");
	if (!endpoint)
		endpoint = env("AWS_ENDPOINT_URL");

	region = opt_region && opt_region[0] ? opt_region : env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (region) {
		if (text_copy(out->region, sizeof(out->region), region))
			return fail(errmsg, errlen, "region is too long");
	} else {
		rc = profile_region(out->profile, out->region,
				    sizeof(out->region), errmsg, errlen);
		if (rc)
			return rc;
	}
	if (!out->region[0]) {
		if (!endpoint)
			return fail(errmsg, errlen,
				    "no AWS region: set the region option, "
				    "AWS_REGION, or region in profile "
				    "\"%.60s\" of the config file",
				    out->profile);
		strcpy(out->region, "us-east-1");
	}
	if (!region_ok(out->region))
		return fail(
			errmsg, errlen,
			"bad region \"%.60s\": only a-z, 0-9 and '-' allowed",
			out->region);

	if (endpoint) {
		if (http_url_host_path(endpoint, host, sizeof(host), path,
				       sizeof(path)) ||
		    !printable(endpoint))
			return fail(errmsg, errlen,
				    "bad endpoint \"%.200s\": want "
				    "http(s)://host[:port]",
				    endpoint);
		if (text_copy(out->endpoint, sizeof(out->endpoint), endpoint))
			return fail(errmsg, errlen, "endpoint URL is too long");
		n = strlen(out->endpoint);
		while (n && out->endpoint[n - 1] == '/')
			out->endpoint[--n] = '\0';
		out->endpoint_is_default = 0;
	} else {
		snprintf(out->endpoint, sizeof(out->endpoint),
			 "https://dynamodb.%s.amazonaws.com%s", out->region,
			 strncmp(out->region, "cn-", 3) ? "" : ".cn");
		out->endpoint_is_default = 1;
	}
	return 0;
}

int awscfg_check_endpoint(const char *what, const char *url,
			  int allow_plain_http, char *errmsg, size_t errlen)
{
	int plain = http_url_plain_remote(url);

	if (errmsg && errlen)
		errmsg[0] = '\0';
	if (plain < 0)
		return fail(errmsg, errlen,
			    "bad %s endpoint \"%.200s\": want "
			    "http(s)://host[:port]",
			    what, url);
	if (!plain)
		return 0;
	if (!allow_plain_http) {
		fail(errmsg, errlen,
		     "%s endpoint %.200s: plain HTTP to a host that is not "
		     "loopback (answers could be forged and the session token "
		     "read on the way): use https, or -o allow_plain_http",
		     what, url);
		return -EPERM;
	}
	fail(errmsg, errlen,
	     "%s endpoint %.200s: plain HTTP to a host that is not loopback "
	     "(allow_plain_http): answers can be forged and the session "
	     "token travels in clear",
	     what, url);
	return 1;
}
