/* creds_helpers: the pieces the providers share: ISO 8601 times, the JSON
 * credential answers of credential_process, ECS and IMDS, credential
 * validation, and struct aws_creds copies. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "creds_provider.h"
#include "creds_util.h"
#include "creds_test.h"

static int64_t tm_ms(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900,
			 .tm_mon = mo - 1,
			 .tm_mday = d,
			 .tm_hour = h,
			 .tm_min = mi,
			 .tm_sec = s };

	return (int64_t)timegm(&tm) * 1000;
}

static void test_time(void)
{
	int64_t ms = 0;
	int y, mo;

	CHECK_INT(creds_parse_time("1970-01-01T00:00:00Z", &ms), 0);
	CHECK_INT(ms, 0);
	/* An Expiration at the epoch would mean "never expires". */
	CHECK_INT(creds_parse_expiration("1970-01-01T00:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_expiration("2026-11-22T10:00:00Z", &ms), 0);
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00Z", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0));
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00.123Z", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0) + 123);
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00.5z", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0) + 500);
	CHECK_INT(creds_parse_time("2026-11-22t10:00:00.123456789Z", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0) + 123);
	CHECK_INT(creds_parse_time("2026-11-22 12:30:00+02:30", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0));
	CHECK_INT(creds_parse_time("2026-11-22T08:00:00-0200", &ms), 0);
	CHECK_INT(ms, tm_ms(2026, 11, 22, 10, 0, 0));
	CHECK_INT(creds_parse_time("2024-02-29T23:59:59Z", &ms), 0);
	CHECK_INT(ms, tm_ms(2024, 2, 29, 23, 59, 59));
	CHECK_INT(creds_parse_time("2000-02-29T00:00:00Z", &ms), 0);
	CHECK_INT(ms, tm_ms(2000, 2, 29, 0, 0, 0));
	/* Every month start across leap and century years. */
	for (y = 1970; y <= 2404; y += 17)
		for (mo = 1; mo <= 12; mo++) {
			char s[32];

			snprintf(s, sizeof(s), "%04d-%02d-01T13:14:15Z", y, mo);
			CHECK_INT(creds_parse_time(s, &ms), 0);
			CHECK_INT(ms, tm_ms(y, mo, 1, 13, 14, 15));
		}

	CHECK_INT(creds_parse_time("2026-11-22T10:00:00", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-13-01T00:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-02-29T00:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("1900-02-29T00:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-04-31T00:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22T24:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22T10:60:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00.Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00Zjunk", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("2026-11-22T10:00:00+2", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("1969-12-31T23:59:59Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("+2026-11-22T10:00:00Z", &ms), -EINVAL);
	CHECK_INT(creds_parse_time("", &ms), -EINVAL);
	CHECK_INT(creds_parse_time(NULL, &ms), -EINVAL);
}

static int parse(enum creds_json_kind kind, const char *json,
		 struct aws_creds *c, struct aws_error *e)
{
	awserr_clear(e);
	return creds_json_parse("test", "src", kind, json, strlen(json), c, e);
}

static void test_json(void)
{
	struct aws_creds c = { 0 };
	struct aws_error e;

	CHECK_INT(parse(CREDS_JSON_PROCESS,
			"{\"Version\": 1, \"AccessKeyId\": \"AKID\", "
			"\"SecretAccessKey\": \"SECRET1\", "
			"\"SessionToken\": \"TOKEN1\", "
			"\"Expiration\": \"2026-11-22T10:00:00Z\"}",
			&c, &e),
		  0);
	CHECK_STR(c.access_key_id, "AKID");
	CHECK_STR(c.secret_access_key, "SECRET1");
	CHECK_STR(c.session_token, "TOKEN1");
	CHECK_INT(c.expires_real_ms, tm_ms(2026, 11, 22, 10, 0, 0));
	CHECK_STR(c.source, "src");

	/* credential_process: no token, no expiration: static. */
	CHECK_INT(parse(CREDS_JSON_PROCESS,
			"{\"Version\":1,\"AccessKeyId\":\"A2\","
			"\"SecretAccessKey\":\"S2\"}",
			&c, &e),
		  0);
	CHECK_STR(c.access_key_id, "A2");
	CHECK(c.session_token == NULL);
	CHECK_INT(c.expires_real_ms, 0);
	CHECK_INT(parse(CREDS_JSON_PROCESS,
			"{\"Version\":2,\"AccessKeyId\":\"A\","
			"\"SecretAccessKey\":\"S\"}",
			&c, &e),
		  -EPROTO);
	CHECK_CONTAINS(e.message, "Version");
	CHECK_INT(parse(CREDS_JSON_PROCESS,
			"{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}", &c,
			&e),
		  -EPROTO);
	/* A failed parse leaves the previous value alone. */
	CHECK_STR(c.access_key_id, "A2");

	/* ECS: Token and Expiration (required). */
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":\"A3\",\"SecretAccessKey\":\"S3\","
			"\"Token\":\"T3\","
			"\"Expiration\":\"2026-11-22T10:00:00.250Z\"}",
			&c, &e),
		  0);
	CHECK_STR(c.session_token, "T3");
	CHECK_INT(c.expires_real_ms, tm_ms(2026, 11, 22, 10, 0, 0) + 250);
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
			"\"Token\":\"T\"}",
			&c, &e),
		  -EPROTO);
	CHECK_CONTAINS(e.message, "Expiration");
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"tomorrow\"}",
			&c, &e),
		  -EPROTO);
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":\"\",\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2026-11-22T10:00:00Z\"}",
			&c, &e),
		  -EPROTO);
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":7,\"SecretAccessKey\":\"S\","
			"\"Expiration\":\"2026-11-22T10:00:00Z\"}",
			&c, &e),
		  -EPROTO);
	CHECK_INT(parse(CREDS_JSON_ECS, "[1,2]", &c, &e), -EPROTO);
	CHECK_INT(parse(CREDS_JSON_ECS, "{\"AccessKeyId\":", &c, &e), -EPROTO);
	CHECK_CONTAINS(e.message, "test:");
	CHECK_INT(parse(CREDS_JSON_ECS, "", &c, &e), -EPROTO);
	/* Credentials end up in HTTP headers: no spaces or control bytes. */
	CHECK_INT(parse(CREDS_JSON_ECS,
			"{\"AccessKeyId\":\"A\\r\\nX-Evil: 1\","
			"\"SecretAccessKey\":\"SECRETX\","
			"\"Expiration\":\"2026-11-22T10:00:00Z\"}",
			&c, &e),
		  -EPROTO);
	CHECK(strstr(e.message, "SECRETX") == NULL);

	/* IMDS: Code must be Success. */
	CHECK_INT(parse(CREDS_JSON_IMDS,
			"{\"Code\":\"Success\",\"LastUpdated\":"
			"\"2026-11-22T04:00:00Z\",\"Type\":\"AWS-HMAC\","
			"\"AccessKeyId\":\"A4\",\"SecretAccessKey\":\"S4\","
			"\"Token\":\"T4\","
			"\"Expiration\":\"2026-11-22T10:00:00Z\"}",
			&c, &e),
		  0);
	CHECK_STR(c.access_key_id, "A4");
	CHECK_INT(parse(CREDS_JSON_IMDS,
			"{\"Code\":\"AssumeRoleUnauthorizedAccess\","
			"\"Message\":\"no trust\",\"AccessKeyId\":\"A\","
			"\"SecretAccessKey\":\"SECRETY\"}",
			&c, &e),
		  -EACCES);
	CHECK_STR(e.type, "AssumeRoleUnauthorizedAccess");
	CHECK_CONTAINS(e.message, "no trust");
	CHECK(strstr(e.message, "SECRETY") == NULL);
	aws_creds_clear(&c);
	aws_creds_clear(&c);
	aws_creds_clear(NULL);
}

static void test_set_dup(void)
{
	struct aws_creds a = { 0 }, b = { 0 };

	CHECK_INT(creds_set(&a, "AK", "SK", "", 5, "x"), 0);
	CHECK(a.session_token == NULL);
	CHECK_INT(creds_set(&a, "AK", "SK", "TK", 5, "x"), 0);
	CHECK_INT(creds_set(&a, "A K", "SK", NULL, 0, "x"), -EINVAL);
	CHECK_INT(creds_set(&a, "AK", "", NULL, 0, "x"), -EINVAL);
	CHECK_INT(creds_set(&a, "AK", "S\x7f", NULL, 0, "x"), -EINVAL);
	CHECK_INT(creds_set(&a, "AK", "SK", "T\n", 0, "x"), -EINVAL);
	CHECK_STR(a.session_token, "TK"); /* untouched by the refusals */
	CHECK_INT(aws_creds_dup(&b, &a), 0);
	CHECK_STR(b.access_key_id, "AK");
	CHECK_STR(b.secret_access_key, "SK");
	CHECK_STR(b.session_token, "TK");
	CHECK_INT(b.expires_real_ms, 5);
	CHECK_STR(b.source, "x");
	/* Copies share the secret pages; each clear drops one share. */
	CHECK(b.secret_access_key == a.secret_access_key);
	aws_creds_clear(&a);
	CHECK(a.access_key_id == NULL && a.secret_access_key == NULL &&
	      a.session_token == NULL && a.expires_real_ms == 0);
	CHECK_STR(b.secret_access_key, "SK"); /* still mapped */
	CHECK_STR(b.session_token, "TK");
	aws_creds_clear(&b);
	/* Strings malloc'd one by one (not from creds_set): the copy gets
	 * pages of its own, and each is freed its own way. */
	a.access_key_id = strdup("AKM");
	a.secret_access_key = strdup("SKM");
	a.source = "hand";
	CHECK_INT(aws_creds_dup(&b, &a), 0);
	CHECK_STR(b.secret_access_key, "SKM");
	CHECK(b.secret_access_key != a.secret_access_key);
	CHECK(b.session_token == NULL);
	aws_creds_clear(&a);
	CHECK_STR(b.access_key_id, "AKM");
	aws_creds_clear(&b);
	CHECK(creds_header_safe("Bearer abc/+="));
	CHECK(!creds_header_safe("a\r\nb"));
	CHECK_INT(creds_status_errno(403), -EACCES);
	CHECK_INT(creds_status_errno(401), -EACCES);
	CHECK_INT(creds_status_errno(429), -EAGAIN);
	CHECK_INT(creds_status_errno(503), -EIO);
	CHECK_INT(creds_status_errno(404), -EPROTO);
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_time);
	CHECK_CASE(test_json);
	CHECK_CASE(test_set_dup);
	CHECK_DONE();
}
