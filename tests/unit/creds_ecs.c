/* creds_ecs: the container provider against a fake endpoint on loopback:
 * with and without an authorization token (variable or file, re-read),
 * error statuses, malformed JSON, timeouts, and the FULL_URI host rules. */
#include <errno.h>
#include <string.h>

#include "creds_test.h"

#define ECS_OK                                                                 \
	"{\"AccessKeyId\":\"ASIAECS{N}\",\"SecretAccessKey\":\"SECRETECS\","   \
	"\"Token\":\"TOKENECS\",\"Expiration\":\"{EXP}\","                     \
	"\"RoleArn\":\"arn:aws:iam::1:role/task\"}"

static struct aws_creds c;
static struct aws_error e;

static struct ct_service *ecs_setup(int status, const char *body)
{
	struct ct_service *s = ct_service_start();

	ct_route_add(s, "GET", "/v2/credentials/abc", status, body);
	ct_env_reset();
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
	       ct_url(s, "/v2/credentials/abc"), 1);
	return s;
}

static void test_success(void)
{
	struct ct_service *s = ecs_setup(200, ECS_OK);
	char v[256];

	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	CHECK_STR(c.secret_access_key, "SECRETECS");
	CHECK_STR(c.session_token, "TOKENECS");
	CHECK_STR(c.source, "ECS");
	CHECK(c.expires_real_ms > clk_sys_real_ms());
	CHECK_STR(ct_last(s, s->last_method), "GET");
	CHECK_STR(ct_last_header(s, "Authorization", v, sizeof(v)), "");

	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Basic ZXhhbXBsZQ==", 1);
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(ct_last_header(s, "Authorization", v, sizeof(v)),
		  "Basic ZXhhbXBsZQ==");

	/* The token file wins over the variable and is read every time. */
	ct_write("ecs-token", "FILE-TOKEN-1\n");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", ct_path("ecs-token"),
	       1);
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(ct_last_header(s, "Authorization", v, sizeof(v)),
		  "FILE-TOKEN-1");
	ct_write("ecs-token", "FILE-TOKEN-2");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(ct_last_header(s, "Authorization", v, sizeof(v)),
		  "FILE-TOKEN-2");
	CHECK_STR(c.access_key_id, "ASIAECS4");

	/* localhost is loopback; https is allowed to any host (here a closed
	 * loopback port, so only the transport fails). */
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	{
		char url[256];

		snprintf(url, sizeof(url),
			 "http://localhost:%d/v2/credentials/abc",
			 fakehttp_port(s->srv));
		setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
		CHECK_INT(ct_get(&c, &e), 0);
	}
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
	       "https://127.0.0.1:1/creds", 1);
	CHECK_INT(ct_get(&c, &e), -ECONNREFUSED);
	CHECK_INT(e.transport, -ECONNREFUSED);
	CHECK_CONTAINS(e.message, "ECS");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://[::1]:1/creds", 1);
	CHECK(ct_get(&c, &e) != -EINVAL);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.9.8.7:1/c", 1);
	CHECK(ct_get(&c, &e) != -EINVAL);
}

static void test_failures(void)
{
	struct ct_service *s;
	int64_t t0;

	s = ecs_setup(500, "{\"code\":\"InternalError\","
			   "\"message\":\"agent not ready\"}");
	CHECK_INT(ct_get(&c, &e), -EIO);
	CHECK_INT(e.http_status, 500);
	CHECK_STR(e.type, "InternalError");
	CHECK_CONTAINS(e.message, "ECS");
	CHECK_CONTAINS(e.message, "HTTP 500");
	CHECK_CONTAINS(e.message, "agent not ready");
	s = ecs_setup(403, "");
	CHECK_INT(ct_get(&c, &e), -EACCES);
	s = ecs_setup(401, "Unauthorized");
	CHECK_INT(ct_get(&c, &e), -EACCES);
	s = ecs_setup(404, "SECRETBODY nothing");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_LACKS(e.message, "SECRETBODY");
	s = ecs_setup(429, "");
	CHECK_INT(ct_get(&c, &e), -EAGAIN);

	s = ecs_setup(200, "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":"
			   "\"SECRETMAL\",");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "ECS: the answer is not valid JSON");
	CHECK_LACKS(e.message, "SECRETMAL");
	s = ecs_setup(200, "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}");
	CHECK_INT(ct_get(&c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "Expiration");
	s = ecs_setup(200, "");
	CHECK_INT(ct_get(&c, &e), -EPROTO);

	/* Dropped connection and timeout. */
	s = ecs_setup(200, ECS_OK);
	CT_SET(s->routes[0].drop, 1);
	CHECK_INT(ct_get(&c, &e), -ECONNRESET);
	CT_SET(s->routes[0].drop, 0);
	CT_SET(s->routes[0].delay_ms, 1500);
	t0 = clk_sys_mono_ms();
	CHECK_INT(ct_get(&c, &e), -ETIMEDOUT); /* timeout_ms 500 */
	CHECK(clk_sys_mono_ms() - t0 < 1400);
	CHECK_INT(e.transport, -ETIMEDOUT);

	/* Token problems: reported before any request. */
	s = ecs_setup(200, ECS_OK);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", ct_path("absent"), 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "SECRETTOK\r\nX-Evil: 1",
	       1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_LACKS(e.message, "SECRETTOK");
	CHECK_INT(ct_hits(&s->routes[0]), 0);

	/* FULL_URI hosts that are neither loopback nor https: refused
	 * without contacting them. */
	ct_env_reset();
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds",
	       1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "host example.com is not allowed");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.0.0.1:80/c", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
	       "http://127.0.0.1@evil.example/c", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://[fe80::1]/c", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "file:///etc/passwd", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "not an http(s) URL");
	/* A relative URI with control characters is refused outright. */
	ct_env_reset();
	setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2\r\nX: 1", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "RELATIVE_URI");
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_success);
	CHECK_CASE(test_failures);
	aws_creds_clear(&c);
	CHECK_DONE();
}
