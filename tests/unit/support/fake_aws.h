/* fake_aws: the fixture of unit tests that send DynamoDB requests to a
 * fakehttp server: fake static credentials from the environment (no
 * session token, no instance metadata) and a request layer aimed at the
 * server with fast retries. Header only, for the tests that link the
 * DynamoDB client; single-threaded set-up (it sets the environment). */
#ifndef LOCKFS_FAKE_AWS_H
#define LOCKFS_FAKE_AWS_H

#include <stdlib.h>

#include "awsreq.h"
#include "creds.h"
#include "fakehttp.h"

/* The fake credentials, in the environment and as a chain (NULL on
 * failure; the caller frees it). */
static inline struct creds_chain *fake_aws_creds(void)
{
	struct creds_config cc = { 0 };

	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	unsetenv("AWS_SESSION_TOKEN");
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	return creds_chain_new(&cc);
}

/* A request layer's config for DynamoDB at s, signed with chain, retried
 * after 5 to 20 ms. */
static inline struct awsreq_config
fake_aws_ddb_config(const struct fakehttp *s, struct creds_chain *chain)
{
	struct awsreq_config cfg = {
		.endpoint = fakehttp_url(s),
		.region = "us-east-1",
		.service = "dynamodb",
		.creds = chain,
		.retry = { .base_ms = 5, .cap_ms = 20 },
	};

	return cfg;
}

#endif
