/* creds_imds: the IMDSv2 provider against a fake metadata service on
 * loopback: the token PUT and its headers, success, a refused token (401,
 * 403), no role (404), malformed JSON, Code other than Success, timeouts,
 * an unreachable endpoint, and AWS_EC2_METADATA_DISABLED. */
#include <errno.h>
#include <string.h>

#include "creds_test.h"

#define TOKEN_PATH "/latest/api/token"
#define LIST_PATH  "/latest/meta-data/iam/security-credentials/"
#define ROLE_PATH  LIST_PATH "lockfs-role"

#define IMDS_OK                                                                \
	"{\n  \"Code\" : \"Success\",\n"                                       \
	"  \"LastUpdated\" : \"2026-11-22T03:00:00Z\",\n"                      \
	"  \"Type\" : \"AWS-HMAC\",\n"                                         \
	"  \"AccessKeyId\" : \"ASIAIMDS{N}\",\n"                               \
	"  \"SecretAccessKey\" : \"SECRETIMDS\",\n"                            \
	"  \"Token\" : \"TOKENIMDS\",\n"                                       \
	"  \"Expiration\" : \"{EXP}\"\n}"

static struct aws_creds c;
static struct aws_error e;

struct imds_fake {
	struct ct_service *s;
	struct ct_route *token, *list, *role;
};

static struct imds_fake imds_setup(void)
{
	struct imds_fake f;

	f.s = ct_service_start();
	f.token =
		ct_route_add(f.s, "PUT", TOKEN_PATH, 200, "IMDS-SESSION-TOKEN");
	f.list = ct_route_add(f.s, "GET", LIST_PATH, 200, "lockfs-role\n");
	f.role = ct_route_add(f.s, "GET", ROLE_PATH, 200, IMDS_OK);
	ct_env_reset();
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fakehttp_url(f.s->srv), 1);
	return f;
}

static void test_success(void)
{
	struct imds_fake f = imds_setup();
	char v[256];

	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIAIMDS1");
	CHECK_STR(c.secret_access_key, "SECRETIMDS");
	CHECK_STR(c.session_token, "TOKENIMDS");
	CHECK_STR(c.source, "EC2 IMDS");
	CHECK(c.expires_real_ms > clk_sys_real_ms());
	CHECK_INT(ct_hits(f.token), 1);
	CHECK_INT(ct_hits(f.list), 1);
	CHECK_INT(ct_hits(f.role), 1);
	CHECK_INT(CT_GET(f.s->unmatched), 0);
	/* The last request carried the session token. */
	CHECK_STR(ct_last_header(f.s, "X-aws-ec2-metadata-token", v, sizeof(v)),
		  "IMDS-SESSION-TOKEN");

	/* A failing role list after a good token: the list GET had it too. */
	CT_SET(f.list->status, 500);
	CHECK_INT(ct_get(&c, &e), -EIO);
	CHECK_INT(ct_hits(f.token), 2);
	CHECK_STR(ct_last_header(f.s, "X-aws-ec2-metadata-token", v, sizeof(v)),
		  "IMDS-SESSION-TOKEN");
	CT_SET(f.list->status, 200);

	/* A trailing slash on the endpoint and several roles (first wins). */
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", ct_url(f.s, "/"), 1);
	CT_SET(f.list->body, "lockfs-role\nother-role\n");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIAIMDS2");
	CHECK_INT(CT_GET(f.s->unmatched), 0);

	/* "true" in any case disables it: no request at all. */
	setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CHECK_CONTAINS(e.message, "; EC2 IMDS disabled");
	CHECK_INT(ct_hits(f.token), 3);
}

static void test_token_put_headers(void)
{
	struct imds_fake f = imds_setup();
	char v[256];

	/* Stop after the PUT to look at it. */
	CT_SET(f.token->status, 403);
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_STR(ct_last(f.s, f.s->last_method), "PUT");
	CHECK_STR(ct_last(f.s, f.s->last_target), TOKEN_PATH);
	CHECK_STR(ct_last_header(f.s, "X-aws-ec2-metadata-token-ttl-seconds", v,
				 sizeof(v)),
		  "21600");
	CHECK_CONTAINS(e.message, "EC2 IMDS: token request refused (HTTP 403)");
	CHECK_INT(ct_hits(f.list), 0);
	CT_SET(f.token->status, 401);
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_INT(e.http_status, 401);
	CT_SET(f.token->status, 405);
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CT_SET(f.token->status, 200);
	CT_SET(f.token->body, "");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "malformed token");
}

static void test_failures(void)
{
	struct imds_fake f = imds_setup();
	int64_t t0;

	/* No role attached: nothing configured, with the reason. */
	CT_SET(f.list->status, 404);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CHECK_CONTAINS(e.message, "no AWS credentials");
	CHECK_CONTAINS(e.message, "EC2 IMDS: no IAM role (HTTP 404");
	CT_SET(f.list->status, 200);
	CT_SET(f.role->status, 404);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CT_SET(f.role->status, 200);
	CT_SET(f.list->body, "../../etc\n");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "malformed role name");
	CT_SET(f.list->body, "\n");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CT_SET(f.list->body, "lockfs-role");
	CT_SET(f.list->status, 401);
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CT_SET(f.list->status, 200);

	CT_SET(f.role->body, "{\"Code\":\"Success\",\"AccessKeyId\":\"A\","
			     "\"SecretAccessKey\":\"SECRETMAL");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "EC2 IMDS: the answer is not valid JSON");
	CHECK_LACKS(e.message, "SECRETMAL");
	CT_SET(f.role->body, "{\"Code\":\"AssumeRoleUnauthorizedAccess\","
			     "\"Message\":\"EC2 cannot assume the role\","
			     "\"LastUpdated\":\"2026-11-22T03:00:00Z\"}");
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_STR(e.type, "AssumeRoleUnauthorizedAccess");
	CHECK_CONTAINS(e.message, "AssumeRoleUnauthorizedAccess");
	CHECK_CONTAINS(e.message, "EC2 cannot assume the role");
	CT_SET(f.role->body, "{\"Code\":\"Success\",\"AccessKeyId\":\"A\","
			     "\"SecretAccessKey\":\"S\",\"Token\":\"T\"}");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CT_SET(f.role->body, IMDS_OK);

	/* A slow answer to the credentials request: a timeout error. */
	CT_SET(f.role->delay_ms, 1500);
	t0 = clk_sys_mono_ms();
	CHECK_INT(ct_get(&c, &e), -ETIMEDOUT); /* timeout_ms 500 */
	CHECK(clk_sys_mono_ms() - t0 < 1400);
	CHECK_CONTAINS(e.message, "EC2 IMDS: the role credentials");
	CT_SET(f.role->delay_ms, 0);

	/* A token request that went out and got no answer in time (the PUT
	 * response hop limit of 1 does not reach a container): said so, not
	 * taken for "not on EC2". */
	CT_SET(f.token->delay_ms, 1500);
	t0 = clk_sys_mono_ms();
	CHECK_INT(ct_get(&c, &e), -ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - t0 < 1400);
	CHECK_CONTAINS(e.message, "EC2 IMDS did not answer the token request");
	CHECK_CONTAINS(e.message, "hop limit 1 in a container?");
	/* (after the other providers' reasons, as every chain failure) */
	CHECK_CONTAINS(e.message, "unset; EC2 IMDS did not answer");
	CT_SET(f.token->delay_ms, 0);
	/* Dropped without an answer: the same. */
	CT_SET(f.token->drop, 1);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CT_SET(f.token->drop, 0);

	/* Nothing listening: -ENOKEY listing everything that was tried. */
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CHECK_STR(e.type, "");
	CHECK_STR(
		e.message,
		"no AWS credentials: AWS_ACCESS_KEY_ID unset; no profile "
		"\"default\" in the shared files; AWS_WEB_IDENTITY_TOKEN_FILE "
		"unset; AWS_CONTAINER_CREDENTIALS_* unset; EC2 IMDS not "
		"reachable (Connection refused)");
	/* The longest summary still fits whole in err->message. */
	setenv("AWS_PROFILE", "a-profile-name-of-24-chr", 1);
	ct_write("config", "[profile a-profile-name-of-24-chr]\nregion = x\n");
	CT_SET(f.list->status, 404);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fakehttp_url(f.s->srv), 1);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CHECK_CONTAINS(e.message, "profile \"a-profile-name-of-24-chr\" has no "
				  "credentials");
	CHECK_CONTAINS(e.message, "; EC2 IMDS: no IAM role (HTTP 404 on the "
				  "role list)");
	CHECK(strlen(e.message) < sizeof(e.message) - 1);
	unsetenv("AWS_PROFILE");

	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "169.254.169.254", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "AWS_EC2_METADATA_SERVICE_ENDPOINT");

	/* Plain HTTP only to the service's own addresses or loopback: the
	 * token and the credentials would travel in clear (refused before
	 * any request). */
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://192.0.2.7:80", 1);
	CHECK_INT(ct_get(&c, &e), -EPERM);
	CHECK_CONTAINS(e.message, "plain HTTP");
	{
		struct creds_config cfg = { .timeout_ms = 500,
					    .http = { .allow_plain_http = 1 } };

		/* Allowed: it is tried (and, here, not reachable). */
		setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT",
		       "http://localhost:1", 1);
		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -ENOKEY);
	}
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_success);
	CHECK_CASE(test_token_put_headers);
	CHECK_CASE(test_failures);
	aws_creds_clear(&c);
	CHECK_DONE();
}
