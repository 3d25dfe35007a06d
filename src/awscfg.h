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

#endif
