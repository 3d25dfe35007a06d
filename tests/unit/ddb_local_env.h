/* ddb_local_env: the client the tests that talk to a real DynamoDB Local
 * (LOCKFS_DDB_ENDPOINT) share: fake static credentials, no IMDS, us-east-1.
 * Header-only, as only those tests link the DynamoDB layer. */
#ifndef LOCKFS_TEST_DDB_LOCAL_ENV_H
#define LOCKFS_TEST_DDB_LOCAL_ENV_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ddb.h"

struct ddb_local_env {
	struct creds_chain *chain;
	struct awsreq *req;
	struct ddb *ddb;
};

/* 0 with env ready, or 77 (skip) when LOCKFS_DDB_ENDPOINT is unset. */
static inline int ddb_local_open(struct ddb_local_env *env)
{
	const char *endpoint = getenv("LOCKFS_DDB_ENDPOINT");
	struct creds_config cc = { 0 };

	if (!endpoint || !endpoint[0]) {
		printf("skip: LOCKFS_DDB_ENDPOINT is not set (start DynamoDB "
		       "Local with contrib/dynamodb-local and set it to "
		       "http://127.0.0.1:PORT)\n");
		return 77;
	}
	CHECK_INT(http_global_init(), 0);
	setenv("AWS_ACCESS_KEY_ID", "fake", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "fake", 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	env->chain = creds_chain_new(&cc);
	CHECK(env->chain);
	struct awsreq_config cfg = { .endpoint = endpoint,
				     .region = "us-east-1",
				     .service = "dynamodb",
				     .creds = env->chain };
	env->req = awsreq_new(&cfg);
	CHECK(env->req);
	env->ddb = ddb_new(env->req);
	CHECK(env->ddb);
	return 0;
}

static inline void ddb_local_close(struct ddb_local_env *env)
{
	ddb_free(env->ddb);
	awsreq_free(env->req);
	creds_chain_free(env->chain);
	http_global_cleanup();
}

#endif
