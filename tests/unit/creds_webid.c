/* creds_webid: AssumeRoleWithWebIdentity against a fake STS on loopback:
 * the request (unsigned form POST), success, ErrorResponse AccessDenied and
 * InvalidIdentityToken, malformed XML, a missing token file, the endpoint
 * and region rules, a rotating token file, a profile with role_arn +
 * web_identity_token_file, and the token never over plain HTTP to a host
 * that is not loopback ([::ffff:127.0.0.1] plays that host: it reaches the
 * fake STS but is not judged loopback). */
#include <errno.h>
#include <string.h>

#include "creds_test.h"

#define STS_OK                                                                 \
	"<AssumeRoleWithWebIdentityResponse "                                  \
	"xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"               \
	"<AssumeRoleWithWebIdentityResult>\n"                                  \
	"<SubjectFromWebIdentityToken>sub</SubjectFromWebIdentityToken>\n"     \
	"<Credentials>\n"                                                      \
	"<SessionToken>TOKENSTS{N}</SessionToken>\n"                           \
	"<SecretAccessKey>SECRETSTS</SecretAccessKey>\n"                       \
	"<Expiration>{EXP}</Expiration>\n"                                     \
	"<AccessKeyId>ASIASTS{N}</AccessKeyId>\n"                              \
	"</Credentials>\n"                                                     \
	"</AssumeRoleWithWebIdentityResult>\n"                                 \
	"<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>\n"      \
	"</AssumeRoleWithWebIdentityResponse>\n"

#define STS_ERR(code, msg)                                                     \
	"<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"  \
	"<Error><Type>Sender</Type><Code>" code "</Code><Message>" msg         \
	"</Message></Error><RequestId>r</RequestId></ErrorResponse>"

#define ROLE "arn:aws:iam::123456789012:role/lock role"
#define JWT  "eyJhbGciOi.JSUzI1NiJ9+/=.SIGNATURE-WEBTOKEN"

static struct aws_creds c;
static struct aws_error e;

static struct ct_service *sts_setup(int status, const char *body)
{
	struct ct_service *s = ct_service_start();

	ct_route_add(s, "POST", "/", status, body);
	ct_env_reset();
	ct_write("token", JWT "\n");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("token"), 1);
	setenv("AWS_ROLE_ARN", ROLE, 1);
	setenv("AWS_ENDPOINT_URL_STS", fakehttp_url(s->srv), 1);
	return s;
}

static void test_success(void)
{
	struct ct_service *s = sts_setup(200, STS_OK);
	char v[256];

	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIASTS1");
	CHECK_STR(c.secret_access_key, "SECRETSTS");
	CHECK_STR(c.session_token, "TOKENSTS1");
	CHECK_STR(c.source, "web identity");
	/* {EXP} is one hour ahead (second precision). */
	CHECK(c.expires_real_ms > clk_sys_real_ms() + 3500 * 1000);
	CHECK(c.expires_real_ms < clk_sys_real_ms() + 3700 * 1000);

	/* The request: an unsigned form POST with every field escaped. */
	CHECK_STR(ct_last(s, s->last_method), "POST");
	CHECK_STR(ct_last(s, s->last_target), "/");
	CHECK_CONTAINS(ct_last_header(s, "Content-Type", v, sizeof(v)),
		       "application/x-www-form-urlencoded");
	CHECK_STR(ct_last_header(s, "Authorization", v, sizeof(v)), "");
	CHECK(!strncmp(ct_last(s, s->last_body),
		       "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&",
		       51));
	CHECK_CONTAINS(ct_last(s, s->last_body),
		       "&RoleArn=arn%3Aaws%3Aiam%3A%3A"
		       "123456789012%3Arole%2Flock%20role&");
	CHECK_CONTAINS(ct_last(s, s->last_body), "&RoleSessionName=lockfs-");
	CHECK_CONTAINS(ct_last(s, s->last_body),
		       "&WebIdentityToken=eyJhbGciOi."
		       "JSUzI1NiJ9%2B%2F%3D.SIGNATURE-WEBTOKEN");
	CHECK_LACKS(ct_last(s, s->last_body),
		    "%0A"); /* the newline was trimmed */

	/* AWS_ROLE_SESSION_NAME is used when set. */
	setenv("AWS_ROLE_SESSION_NAME", "my-session", 1);
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_CONTAINS(ct_last(s, s->last_body),
		       "&RoleSessionName=my-session&");

	/* AWS_ENDPOINT_URL when there is no STS-specific endpoint. */
	unsetenv("AWS_ENDPOINT_URL_STS");
	setenv("AWS_ENDPOINT_URL", ct_url(s, "/"), 1);
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIASTS3");
	CHECK_INT(ct_hits(&s->routes[0]), 3);
}

static void test_errors(void)
{
	struct ct_service *s;

	s = sts_setup(403,
		      STS_ERR("AccessDenied", "Not authorized to perform "
					      "sts:AssumeRoleWithWebIdentity"));
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_STR(e.type, "AccessDenied");
	CHECK_INT(e.http_status, 403);
	CHECK_INT(awserr_to_errno(&e), -EACCES);
	CHECK_CONTAINS(e.message, "web identity");
	CHECK_CONTAINS(e.message, "Not authorized");
	CHECK_LACKS(e.message, "SIGNATURE-WEBTOKEN");

	s = sts_setup(400, STS_ERR("InvalidIdentityToken",
				   "Couldn't retrieve verification key"));
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_STR(e.type, "InvalidIdentityToken");
	CHECK_INT(awserr_to_errno(&e), -EINVAL);
	CHECK_CONTAINS(e.message, "InvalidIdentityToken");

	s = sts_setup(400, STS_ERR("ExpiredTokenException", "Token expired"));
	CHECK_INT(ct_get(&c, &e), -EACCES);

	s = sts_setup(503, "<html>busy</html>");
	CHECK_INT(ct_get(&c, &e), -EIO);
	CHECK_CONTAINS(e.message, "HTTP 503");

	/* Malformed success answers. */
	s = sts_setup(200, "<AssumeRoleWithWebIdentityResponse><Credentials>"
			   "<AccessKeyId>ASIA</AccessKeyId><SecretAccessKey>"
			   "SECRETTRUNC");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "malformed SecretAccessKey");
	CHECK_LACKS(e.message, "SECRETTRUNC");
	s = sts_setup(200, "{\"json\": \"instead\"}");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "lacks AccessKeyId");
	s = sts_setup(200, "<R><AccessKeyId>A</AccessKeyId><SecretAccessKey>S"
			   "</SecretAccessKey><SessionToken>T</SessionToken>"
			   "<Expiration>never</Expiration></R>");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "Expiration");
	s = sts_setup(200, "<R><AccessKeyId>A B</AccessKeyId><SecretAccessKey>S"
			   "</SecretAccessKey><SessionToken>T</SessionToken>"
			   "<Expiration>{EXP}</Expiration></R>");
	CHECK_INT(ct_get(&c, &e), -EPROTO);

	/* Token file problems: reported, and STS is not called. */
	s = sts_setup(200, STS_OK);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("no-token"), 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "token file");
	CHECK_CONTAINS(e.message, "No such file");
	ct_write("empty-token", "\n");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("empty-token"), 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "empty");
	CHECK_INT(ct_hits(&s->routes[0]), 0);

	/* The token file without a role is an error; a role alone is not
	 * web identity at all. */
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("token"), 1);
	unsetenv("AWS_ROLE_ARN");
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "AWS_ROLE_ARN");
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	setenv("AWS_ROLE_ARN", ROLE, 1);
	CHECK_INT(ct_get(&c, &e), -ENOKEY);

	/* No endpoint and no region: a clear error before any request. */
	sts_setup(200, STS_OK);
	unsetenv("AWS_ENDPOINT_URL_STS");
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "no region");
	{
		struct creds_config cfg = { .region = "Bad/Region" };

		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EINVAL);
		CHECK_CONTAINS(e.message, "bad region");
	}
	setenv("AWS_ENDPOINT_URL_STS", "ftp://127.0.0.1/", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "not an http(s) URL");

	/* STS unreachable: the transport error, marked as such. */
	setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
	CHECK_INT(ct_get(&c, &e), -ECONNREFUSED);
	CHECK_INT(e.transport, -ECONNREFUSED);
	CHECK_CONTAINS(e.message, "web identity: STS");
	/* STS too slow: the request timeout applies. */
	s = sts_setup(200, STS_OK);
	CT_SET(s->routes[0].delay_ms, 1500);
	{
		struct creds_config cfg = { .timeout_ms = 300 };
		int64_t t0 = clk_sys_mono_ms();

		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -ETIMEDOUT);
		CHECK(clk_sys_mono_ms() - t0 < 1400);
	}
}

static void test_plain_http(void)
{
	struct ct_service *s = sts_setup(200, STS_OK);
	char remote[128];

	snprintf(remote, sizeof(remote), "http://[::ffff:127.0.0.1]:%d",
		 fakehttp_port(s->srv));
	/* The generic AWS_ENDPOINT_URL (DynamoDB's, say) over plain HTTP to
	 * another host: the token is not sent there, even when plain HTTP
	 * is allowed. */
	unsetenv("AWS_ENDPOINT_URL_STS");
	setenv("AWS_ENDPOINT_URL", remote, 1);
	CHECK_INT(ct_get(&c, &e), -EPERM);
	CHECK_CONTAINS(e.message, "AWS_ENDPOINT_URL ");
	CHECK_CONTAINS(e.message, "plain HTTP");
	CHECK_CONTAINS(e.message, "not sent there");
	CHECK_LACKS(e.message, JWT);
	{
		struct creds_config cfg = { .timeout_ms = 1000,
					    .http = { .allow_plain_http = 1 } };

		CHECK_INT(ct_get_cfg(&cfg, &c, &e), -EPERM);
	}
	CHECK_INT(ct_hits(&s->routes[0]), 0);
	/* The generic one to loopback, or https, is still used. */
	setenv("AWS_ENDPOINT_URL", fakehttp_url(s->srv), 1);
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_INT(ct_hits(&s->routes[0]), 1);
	unsetenv("AWS_ENDPOINT_URL");

	/* AWS_ENDPOINT_URL_STS to such a host: refused unless allowed. */
	setenv("AWS_ENDPOINT_URL_STS", remote, 1);
	CHECK_INT(ct_get(&c, &e), -EPERM);
	CHECK_CONTAINS(e.message, "AWS_ENDPOINT_URL_STS");
	CHECK_CONTAINS(e.message, "allow_plain_http");
	CHECK_INT(ct_hits(&s->routes[0]), 1);
	{
		struct creds_config cfg = { .timeout_ms = 1000,
					    .http = { .allow_plain_http = 1 } };

		CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
		CHECK_STR(c.access_key_id, "ASIASTS2");
	}
	CHECK_INT(ct_hits(&s->routes[0]), 2);
}

static void test_rotation_and_profile(void)
{
	struct clk_fake fake;
	struct creds_config cfg = { .timeout_ms = 1000 };
	struct ct_service *s = sts_setup(200, STS_OK);
	struct creds_chain *ch;

	/* The token file is read again on every refresh. */
	clk_fake_init(&fake, clk_sys_real_ms());
	ct_service_clock(s, &fake.clk, 15 * 60 * 1000);
	cfg.clock = &fake.clk;
	ch = creds_chain_new(&cfg);
	CHECK(ch != NULL);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_CONTAINS(ct_last(s, s->last_body), "WebIdentityToken=eyJ");
	ct_write("token", "ROTATED-TOKEN\n");
	clk_fake_advance(&fake, 11 * 60 * 1000);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIASTS2");
	CHECK_CONTAINS(ct_last(s, s->last_body),
		       "&WebIdentityToken=ROTATED-TOKEN");
	creds_chain_free(ch);

	/* A profile with role_arn + web_identity_token_file. */
	ct_env_reset();
	ct_write("ptoken", "PROFILE-TOKEN");
	{
		char conf[1024];

		snprintf(conf, sizeof(conf),
			 "[profile wi]\n"
			 "role_arn = arn:aws:iam::1:role/from-profile\n"
			 "web_identity_token_file = %s\n"
			 "role_session_name = prof-session\n"
			 "[profile wirel]\n"
			 "role_arn = arn:aws:iam::1:role/r\n"
			 "web_identity_token_file = ~/ptoken\n",
			 ct_path("ptoken"));
		ct_write("config", conf);
	}
	setenv("AWS_ENDPOINT_URL_STS", fakehttp_url(s->srv), 1);
	{
		struct creds_config pcfg = { .profile = "wi" };

		CHECK_INT(ct_get_cfg(&pcfg, &c, &e), 0);
		CHECK_STR(c.source, "web identity");
		CHECK_CONTAINS(ct_last(s, s->last_body),
			       "RoleArn=arn%3Aaws%3Aiam%3A%3A1%3A"
			       "role%2Ffrom-profile&");
		CHECK_CONTAINS(ct_last(s, s->last_body),
			       "&RoleSessionName=prof-session&");
		CHECK_CONTAINS(ct_last(s, s->last_body),
			       "&WebIdentityToken=PROFILE-TOKEN");
		pcfg.profile = "wirel";
		CHECK_INT(ct_get_cfg(&pcfg, &c, &e), 0);
		CHECK_CONTAINS(ct_last(s, s->last_body),
			       "&WebIdentityToken=PROFILE-TOKEN");
		/* Errors name the profile. */
		CT_SET(s->routes[0].status, 403);
		CT_SET(s->routes[0].body, STS_ERR("AccessDenied", "nope"));
		pcfg.profile = "wi";
		CHECK_INT(ct_get_cfg(&pcfg, &c, &e), -EACCES);
		CHECK_CONTAINS(e.message, "profile \"wi\"");
	}
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_success);
	CHECK_CASE(test_errors);
	CHECK_CASE(test_plain_http);
	CHECK_CASE(test_rotation_and_profile);
	aws_creds_clear(&c);
	CHECK_DONE();
}
