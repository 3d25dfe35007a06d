/* creds_awscfg: profile, region and DynamoDB endpoint resolution from
 * options, the environment and the config file, and its refusals. */
#include <errno.h>
#include <string.h>

#include "awscfg.h"
#include "creds_test.h"

static struct aws_settings s;
static char msg[256];

static int resolve(const char *p, const char *r, const char *e)
{
	memset(msg, 0, sizeof(msg));
	return awscfg_resolve(p, r, e, &s, msg, sizeof(msg));
}

static void test_region_order(void)
{
	ct_env_reset();
	CHECK_INT(resolve(NULL, "eu-central-1", NULL), 0);
	CHECK_STR(s.profile, "default");
	CHECK_STR(s.region, "eu-central-1");
	CHECK_STR(s.endpoint, "https://dynamodb.eu-central-1.amazonaws.com");
	CHECK_INT(s.endpoint_is_default, 1);

	setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "us-west-1");
	setenv("AWS_REGION", "us-west-2", 1);
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "us-west-2");
	CHECK_INT(resolve(NULL, "ap-east-1", NULL), 0);
	CHECK_STR(s.region, "ap-east-1");
	/* An empty option counts as unset. */
	CHECK_INT(resolve("", "", ""), 0);
	CHECK_STR(s.region, "us-west-2");

	/* The config file: [default], [profile x] (not [x]). */
	ct_env_reset();
	ct_write("config", "[default]\nregion = eu-west-3\n"
			   "[profile dev]\nregion = sa-east-1\n"
			   "[dev]\nregion = wrong-1\n"
			   "[profile other]\noutput = json\n");
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "eu-west-3");
	CHECK_INT(resolve("dev", NULL, NULL), 0);
	CHECK_STR(s.profile, "dev");
	CHECK_STR(s.region, "sa-east-1");
	setenv("AWS_PROFILE", "dev", 1);
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.profile, "dev");
	CHECK_STR(s.region, "sa-east-1");
	CHECK_INT(resolve("default", NULL, NULL), 0);
	CHECK_STR(s.region, "eu-west-3");
	/* The environment beats the file. */
	setenv("AWS_REGION", "me-south-1", 1);
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "me-south-1");
	unsetenv("AWS_REGION");
	/* A profile without a region and no endpoint: a clear refusal. */
	CHECK_INT(resolve("other", NULL, NULL), -EINVAL);
	CHECK_CONTAINS(msg, "no AWS region");
	CHECK_CONTAINS(msg, "other");

	/* "[profile default]" is accepted for the default profile. */
	ct_write("config", "[profile default]\nregion = ca-central-1\n");
	unsetenv("AWS_PROFILE");
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "ca-central-1");

	/* ~ in AWS_CONFIG_FILE is HOME. */
	ct_env_reset();
	ct_write("tilde-config", "[default]\nregion = af-south-1\n");
	setenv("AWS_CONFIG_FILE", "~/tilde-config", 1);
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "af-south-1");

	/* A broken config file is reported with its line. */
	ct_env_reset();
	ct_write("config", "[default]\nregion = x\nnonsense\n");
	CHECK_INT(resolve(NULL, NULL, NULL), -EINVAL);
	CHECK_CONTAINS(msg, "line 3");
}

static void test_endpoint(void)
{
	ct_env_reset();
	CHECK_INT(resolve(NULL, "cn-north-1", NULL), 0);
	CHECK_STR(s.endpoint, "https://dynamodb.cn-north-1.amazonaws.com.cn");

	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:8000/", 1);
	CHECK_INT(resolve(NULL, "eu-west-1", NULL), 0);
	CHECK_STR(s.endpoint, "http://127.0.0.1:8000");
	CHECK_INT(s.endpoint_is_default, 0);
	setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8001", 1);
	CHECK_INT(resolve(NULL, "eu-west-1", NULL), 0);
	CHECK_STR(s.endpoint, "http://127.0.0.1:8001");
	CHECK_INT(resolve(NULL, "eu-west-1", "https://ddb.example.test/x//"),
		  0);
	CHECK_STR(s.endpoint, "https://ddb.example.test/x");
	/* An explicit endpoint and no region: us-east-1. */
	CHECK_INT(resolve(NULL, NULL, NULL), 0);
	CHECK_STR(s.region, "us-east-1");
	CHECK_STR(s.endpoint, "http://127.0.0.1:8001");

	/* Refusals. */
	ct_env_reset();
	CHECK_INT(resolve(NULL, NULL, NULL), -EINVAL);
	CHECK_CONTAINS(msg, "no AWS region");
	CHECK_INT(resolve(NULL, "eu-west-1", "ftp://x/"), -EINVAL);
	CHECK_CONTAINS(msg, "bad endpoint");
	CHECK_INT(resolve(NULL, "eu-west-1", "localhost:8000"), -EINVAL);
	CHECK_INT(resolve(NULL, "eu-west-1", "http://user@host/"), -EINVAL);
	CHECK_INT(resolve(NULL, "eu-west-1", "http://h o/"), -EINVAL);
	CHECK_INT(resolve(NULL, "EU-WEST-1", NULL), -EINVAL);
	CHECK_CONTAINS(msg, "bad region");
	CHECK_INT(resolve(NULL, "eu-west-1.evil.com/", NULL), -EINVAL);
	CHECK_INT(resolve(NULL, "eu_west_1", NULL), -EINVAL);
	setenv("AWS_REGION",
	       "a-region-name-that-is-far-too-long-to-fit-in-the-"
	       "settings-buffer-of-64",
	       1);
	CHECK_INT(resolve(NULL, NULL, NULL), -EINVAL);
	unsetenv("AWS_REGION");
	{
		char longp[200];

		memset(longp, 'p', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = '\0';
		CHECK_INT(resolve(longp, "eu-west-1", NULL), -EINVAL);
	}
	/* errmsg may be NULL. */
	CHECK_INT(awscfg_resolve(NULL, NULL, NULL, &s, NULL, 0), -EINVAL);
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_region_order);
	CHECK_CASE(test_endpoint);
	CHECK_DONE();
}
