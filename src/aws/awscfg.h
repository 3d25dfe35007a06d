/* awscfg: resolves where lockfs talks to: profile, region and DynamoDB
 * endpoint, from options, the environment and the shared config file. */
#ifndef LOCKFS_AWSCFG_H
#define LOCKFS_AWSCFG_H

#include <stddef.h>

struct aws_settings {
	char profile[128];
	char region[64];
	char endpoint[512]; /* URL without trailing slash */
	int endpoint_is_default;
};

/* Resolution order:
 *   profile:  opt_profile, AWS_PROFILE, "default"
 *   region:   opt_region, AWS_REGION, AWS_DEFAULT_REGION, "region" of the
 *             profile in AWS_CONFIG_FILE (~/.aws/config; "[profile x]", or
 *             "[default]" / "[profile default]"); if none and an endpoint
 *             was given explicitly, "us-east-1"
 *   endpoint: opt_endpoint, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL,
 *             else https://dynamodb.<region>.amazonaws.com (.com.cn for cn-*)
 * Empty options count as unset; trailing slashes of the endpoint are
 * dropped. Returns 0, or -EINVAL with a one-line reason in errmsg (may be
 * NULL): no region, bad URL scheme, region with characters other than
 * [a-z0-9-], a value too long for its field, a broken config file. */
int awscfg_resolve(const char *opt_profile, const char *opt_region,
		   const char *opt_endpoint, struct aws_settings *out,
		   char *errmsg, size_t errlen);
/* When running as root, the config file read for the region must pass the
 * owner and mode check of creds_trust.h (else -EINVAL, "refusing ..."). */

/* Judges the transport of an endpoint URL (what: "DynamoDB", "STS"):
 * https, or plain HTTP to a loopback host (127.0.0.0/8, ::1, localhost),
 * give 0; plain HTTP to any other host gives -EPERM with a one-line reason
 * in errmsg, or 1 with a warning to log in errmsg when allow_plain_http is
 * set; a URL that is not http(s) gives -EINVAL. */
int awscfg_check_endpoint(const char *what, const char *url,
			  int allow_plain_http, char *errmsg, size_t errlen);

#endif
