/* creds_chain: the default chain as a whole: the provider order, a
 * configured provider that fails stops the chain (and its message follows
 * every earlier provider's reason, as when none has credentials), the cache
 * (refresh before expiry, short-lived credentials, a failed refresh keeps
 * still-valid credentials and retries later), one refresh in flight with
 * several threads, and no secret in any error message. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "creds_test.h"

#define ECS_PATH "/creds"
#define ECS_OK                                                                 \
	"{\"AccessKeyId\":\"ASIAECS{N}\",\"SecretAccessKey\":\"SECRETECS\","   \
	"\"Token\":\"TOKENECS\",\"Expiration\":\"{EXP}\"}"
#define STS_OK                                                                 \
	"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>" \
	"<Credentials><AccessKeyId>ASIASTS{N}</AccessKeyId>"                   \
	"<SecretAccessKey>SECRETSTS</SecretAccessKey>"                         \
	"<SessionToken>TOKENSTS</SessionToken>"                                \
	"<Expiration>{EXP}</Expiration></Credentials>"                         \
	"</AssumeRoleWithWebIdentityResult></"                                 \
	"AssumeRoleWithWebIdentityResponse>"
#define IMDS_OK                                                                \
	"{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAIMDS{N}\","               \
	"\"SecretAccessKey\":\"SECRETIMDS\",\"Token\":\"TOKENIMDS\","          \
	"\"Expiration\":\"{EXP}\"}"

static struct aws_creds c;
static struct aws_error e;

/* ---- order ---- */

struct all_fakes {
	struct ct_service *sts, *ecs, *imds;
	struct ct_route *sts_r, *ecs_r, *imds_r;
};

static struct all_fakes configure_all(void)
{
	struct all_fakes f;

	ct_env_reset();
	f.sts = ct_service_start();
	f.sts_r = ct_route_add(f.sts, "POST", "/", 200, STS_OK);
	f.ecs = ct_service_start();
	f.ecs_r = ct_route_add(f.ecs, "GET", ECS_PATH, 200, ECS_OK);
	f.imds = ct_service_start();
	ct_route_add(f.imds, "PUT", "/latest/api/token", 200, "T");
	ct_route_add(f.imds, "GET",
		     "/latest/meta-data/iam/security-credentials/", 200,
		     "role");
	f.imds_r = ct_route_add(f.imds, "GET",
				"/latest/meta-data/iam/security-credentials/"
				"role",
				200, IMDS_OK);

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
	ct_write("credentials", "[default]\naws_access_key_id = AKIDFILE\n"
				"aws_secret_access_key = SECRETFILE\n");
	ct_write("webtoken", "WEBTOKENSECRET");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("webtoken"), 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
	setenv("AWS_ENDPOINT_URL_STS", fakehttp_url(f.sts->srv), 1);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ct_url(f.ecs, ECS_PATH),
	       1);
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fakehttp_url(f.imds->srv),
	       1);
	return f;
}

static void test_order(void)
{
	struct all_fakes f = configure_all();

	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.source, "environment");
	CHECK_STR(c.access_key_id, "AKIDENV");

	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.source, "profile");
	CHECK_STR(c.access_key_id, "AKIDFILE");

	/* A profile without credentials (only a region) passes on. */
	ct_write("credentials", "[default]\n");
	ct_write("config", "[default]\nregion = eu-west-1\n");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.source, "web identity");
	CHECK_STR(c.access_key_id, "ASIASTS1");

	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.source, "ECS");
	CHECK_STR(c.access_key_id, "ASIAECS1");
	/* No shared files and the profile "default" named (as awscfg_resolve
	 * names it when nothing chose one): still passes on. */
	unlink(ct_path("credentials"));
	unlink(ct_path("config"));
	{
		struct creds_config cfg = { .profile = "default",
					    .region = "eu-west-1" };

		CHECK_INT(ct_get_cfg(&cfg, &c, &e), 0);
		CHECK_STR(c.source, "ECS");
		CHECK_STR(c.access_key_id, "ASIAECS2");
	}

	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	CHECK_INT(ct_get(&c, &e), 0);
	CHECK_STR(c.source, "EC2 IMDS");
	CHECK_STR(c.access_key_id, "ASIAIMDS1");

	/* Nothing got asked before its turn. */
	CHECK_INT(ct_hits(f.sts_r), 1);
	CHECK_INT(ct_hits(f.ecs_r), 2);
	CHECK_INT(ct_hits(f.imds_r), 1);
}

static void test_failure_stops(void)
{
	struct all_fakes f = configure_all();

	/* Broken environment: stops before the files. */
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "environment:");
	unsetenv("AWS_ACCESS_KEY_ID");

	/* Broken profile: stops before web identity. */
	ct_write("credentials", "[default]\naws_access_key_id = AKIDHALF\n");
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK_CONTAINS(e.message, "profile \"default\"");
	unlink(ct_path("credentials"));

	/* Web identity refused by STS: ECS and IMDS are not asked. */
	CT_SET(f.sts_r->status, 403);
	CT_SET(f.sts_r->body,
	       "<ErrorResponse><Error><Code>AccessDenied</Code>"
	       "<Message>denied</Message></Error></ErrorResponse>");
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_CONTAINS(e.message, "web identity");
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");

	/* ECS failing: IMDS is not asked. */
	CT_SET(f.ecs_r->status, 500);
	CHECK_INT(ct_get(&c, &e), -EIO);
	CHECK_CONTAINS(e.message, "ECS");
	CHECK_INT(ct_hits(f.ecs_r), 1);
	CHECK_INT(ct_hits(f.imds_r), 0);
}

/* A failure after providers that passed says every reason, as the
 * "nothing configured" summary does; the error stays the failing one's. */
static void test_every_reason(void)
{
	struct ct_service *s;

	/* Nothing configured, IMDS disabled: the summary of all five. */
	ct_env_reset();
	CHECK_INT(ct_get(&c, &e), -ENOKEY);
	CHECK_CONTAINS(e.message, "no AWS credentials: AWS_ACCESS_KEY_ID "
				  "unset; ");
	CHECK_CONTAINS(e.message, "EC2 IMDS disabled");

	/* IMDS refusing its token: the earlier reasons, then IMDS's. */
	ct_env_reset();
	s = ct_service_start();
	ct_route_add(s, "PUT", "/latest/api/token", 403, "");
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fakehttp_url(s->srv), 1);
	CHECK_INT(ct_get(&c, &e), -EACCES);
	CHECK_INT(e.http_status, 403);
	CHECK_CONTAINS(e.message, "no AWS credentials: AWS_ACCESS_KEY_ID "
				  "unset; ");
	CHECK_CONTAINS(e.message, "no profile \"default\"");
	CHECK_CONTAINS(e.message, "AWS_WEB_IDENTITY_TOKEN_FILE unset; ");
	CHECK_CONTAINS(e.message, "AWS_CONTAINER_CREDENTIALS");
	CHECK_CONTAINS(e.message, "unset; EC2 IMDS: token request refused "
				  "(HTTP 403)");

	/* ECS failing: the reasons before it, then ECS's. */
	ct_env_reset();
	s = ct_service_start();
	ct_route_add(s, "GET", ECS_PATH, 500, "{}");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ct_url(s, ECS_PATH), 1);
	CHECK_INT(ct_get(&c, &e), -EIO);
	CHECK_CONTAINS(e.message, "no AWS credentials: AWS_ACCESS_KEY_ID "
				  "unset; ");
	CHECK_CONTAINS(e.message, "AWS_WEB_IDENTITY_TOKEN_FILE unset; ECS");
	CHECK_LACKS(e.message, "IMDS");

	/* The first provider failing has no earlier reason to give. */
	ct_env_reset();
	setenv("AWS_ACCESS_KEY_ID", "AKIDHALF", 1);
	CHECK_INT(ct_get(&c, &e), -EINVAL);
	CHECK(!strncmp(e.message, "environment:", strlen("environment:")));
}

/* ---- cache and refresh ---- */

struct fake_ecs {
	struct ct_service *s;
	struct ct_route *r;
	struct clk_fake clock;
	struct creds_chain *ch;
};

static void fake_ecs_start(struct fake_ecs *f, int64_t lifetime_ms)
{
	struct creds_config cfg = { .timeout_ms = 2000 };

	ct_env_reset();
	clk_fake_init(&f->clock, clk_sys_real_ms());
	f->s = ct_service_start();
	ct_service_clock(f->s, &f->clock.clk, lifetime_ms);
	f->r = ct_route_add(f->s, "GET", ECS_PATH, 200, ECS_OK);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ct_url(f->s, ECS_PATH), 1);
	cfg.clock = &f->clock.clk;
	f->ch = creds_chain_new(&cfg);
	CHECK(f->ch != NULL);
}

static int chain_get(struct fake_ecs *f)
{
	aws_creds_clear(&c);
	awserr_clear(&e);
	return creds_chain_get(f->ch, &c, &e);
}

static void test_refresh_before_expiry(void)
{
	struct fake_ecs f;

	/* Ten minutes of life: refreshed five minutes before the end. */
	fake_ecs_start(&f, 10 * 60 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 1);
	clk_fake_advance(&f.clock, 4 * 60 * 1000 + 59 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	CHECK_INT(ct_hits(f.r), 1);
	clk_fake_advance(&f.clock, 2 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS2");
	CHECK_INT(ct_hits(f.r), 2);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 2);
	creds_chain_free(f.ch);

	/* Four seconds of life: refreshed after half of it. */
	fake_ecs_start(&f, 4000);
	CHECK_INT(chain_get(&f), 0);
	clk_fake_advance(&f.clock, 1900);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 1);
	clk_fake_advance(&f.clock, 200);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS2");
	CHECK_INT(ct_hits(f.r), 2);
	creds_chain_free(f.ch);

	/* Credentials already expired on arrival (a wrong clock) are still
	 * handed out, and fetched again only after a while: a helper that
	 * handed out stale ones ran 30 times a second. */
	fake_ecs_start(&f, -60 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 1);
	clk_fake_advance(&f.clock, 9 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 1);
	clk_fake_advance(&f.clock, 2 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 2);
	creds_chain_free(f.ch);
	/* The same with the refresher running, as in the daemon: every call
	 * got ENOKEY, and the refresher fetched them over and over. */
	fake_ecs_start(&f, -60 * 1000);
	CHECK_INT(creds_chain_start(f.ch), 0);
	for (int i = 0; i < 20; i++) {
		CHECK_INT(chain_get(&f), 0);
		CHECK_STR(c.access_key_id, "ASIAECS1");
	}
	usleep(200 * 1000);
	CHECK_INT(ct_hits(f.r), 1);
	creds_chain_free(f.ch);
}

static void test_failed_refresh_keeps_cached(void)
{
	struct fake_ecs f;

	fake_ecs_start(&f, 10 * 60 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	clk_fake_advance(&f.clock, 6 * 60 * 1000);
	CT_SET(f.r->status, 500);
	/* The refresh fails; the cached credentials are still good. */
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	CHECK_INT(ct_hits(f.r), 2);
	/* ... and the next attempt waits a little. */
	CHECK_INT(chain_get(&f), 0);
	CHECK_INT(ct_hits(f.r), 2);
	clk_fake_advance(&f.clock, 11 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS1");
	CHECK_INT(ct_hits(f.r), 3);
	CT_SET(f.r->status, 200);
	clk_fake_advance(&f.clock, 11 * 1000);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS4");
	CHECK_INT(ct_hits(f.r), 4);
	/* Past the expiry, a failure is an error. */
	CT_SET(f.r->status, 500);
	clk_fake_advance(&f.clock, 10 * 60 * 1000);
	CHECK_INT(chain_get(&f), -EIO);
	CHECK(c.access_key_id == NULL);
	CHECK_CONTAINS(e.message, "ECS");
	CHECK_INT(chain_get(&f), -EIO);
	CHECK_INT(ct_hits(f.r), 6);
	CT_SET(f.r->status, 200);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS7");
	creds_chain_free(f.ch);
}

/* ---- one refresh in flight ---- */

#define N_THREADS 8

struct racer {
	struct creds_chain *ch;
	pthread_barrier_t *start;
	int rc;
	char key[64];
	int64_t elapsed_ms;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct aws_creds mine = { 0 };
	struct aws_error err;
	int64_t t0;

	pthread_barrier_wait(r->start);
	t0 = clk_sys_mono_ms();
	r->rc = creds_chain_get(r->ch, &mine, &err);
	r->elapsed_ms = clk_sys_mono_ms() - t0;
	snprintf(r->key, sizeof(r->key), "%s",
		 mine.access_key_id ? mine.access_key_id : "");
	aws_creds_clear(&mine);
	return NULL;
}

static void run_racers(struct creds_chain *ch, struct racer *r)
{
	pthread_t th[N_THREADS];
	pthread_barrier_t start;
	int i;

	CHECK_INT(pthread_barrier_init(&start, NULL, N_THREADS), 0);
	for (i = 0; i < N_THREADS; i++) {
		r[i].ch = ch;
		r[i].start = &start;
		CHECK_INT(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (i = 0; i < N_THREADS; i++)
		CHECK_INT(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
}

static void test_one_refresh_in_flight(void)
{
	struct racer r[N_THREADS];
	struct fake_ecs f;
	int i, quick_old = 0, old_keys = 0, new_keys = 0;

	/* Nothing cached: everybody waits for the one request. */
	memset(r, 0, sizeof(r));
	fake_ecs_start(&f, 10 * 60 * 1000);
	CT_SET(f.r->delay_ms, 300);
	run_racers(f.ch, r);
	for (i = 0; i < N_THREADS; i++) {
		CHECK_INT(r[i].rc, 0);
		CHECK_STR(r[i].key, "ASIAECS1");
	}
	CHECK_INT(ct_hits(f.r), 1);

	/* Cached but due for refresh: one request, and the others keep
	 * using the still-valid credentials without waiting for it. */
	clk_fake_advance(&f.clock, 6 * 60 * 1000);
	CT_SET(f.r->delay_ms, 600);
	memset(r, 0, sizeof(r));
	run_racers(f.ch, r);
	for (i = 0; i < N_THREADS; i++) {
		CHECK_INT(r[i].rc, 0);
		if (!strcmp(r[i].key, "ASIAECS2"))
			new_keys++;
		if (!strcmp(r[i].key, "ASIAECS1")) {
			old_keys++;
			if (r[i].elapsed_ms < 400)
				quick_old++;
		}
	}
	CHECK_INT(ct_hits(f.r), 2);
	CHECK(new_keys >= 1);
	CHECK_INT(new_keys + old_keys, N_THREADS);
	/* Nobody waited for the 600 ms request: no lock held across it. */
	CHECK(quick_old >= 1);
	CT_SET(f.r->delay_ms, 0);
	CHECK_INT(chain_get(&f), 0);
	CHECK_STR(c.access_key_id, "ASIAECS2");
	creds_chain_free(f.ch);

	/* A failing refresh with nothing cached: one request, every waiter
	 * gets its error. */
	memset(r, 0, sizeof(r));
	fake_ecs_start(&f, 10 * 60 * 1000);
	CT_SET(f.r->status, 503);
	CT_SET(f.r->delay_ms, 300);
	run_racers(f.ch, r);
	for (i = 0; i < N_THREADS; i++)
		CHECK_INT(r[i].rc, -EIO);
	CHECK_INT(ct_hits(f.r), 1);
	creds_chain_free(f.ch);
}

/* ---- secrets ---- */

static void check_no_secret(int want_rc)
{
	static const char *const secrets[] = {
		"SECRETENV",	  "SECRETFILE",	   "SECRETPROC",
		"SECRETECS",	  "SECRETIMDS",	   "SECRETSTS",
		"WEBTOKENSECRET", "ECSAUTHSECRET", NULL
	};
	int i;

	CHECK_INT(ct_get(&c, &e), want_rc);
	CHECK(e.message[0] != '\0');
	for (i = 0; secrets[i]; i++) {
		CHECK_LACKS(e.message, secrets[i]);
		CHECK_LACKS(e.type, secrets[i]);
	}
}

static void test_no_secret_in_messages(void)
{
	struct ct_service *s;
	struct ct_route *r;

	ct_env_reset();
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
	check_no_secret(-EINVAL);

	ct_env_reset();
	ct_write("credentials",
		 "[default]\naws_secret_access_key = SECRETFILE\n");
	check_no_secret(-EINVAL);
	ct_write("credentials", "[default]\naws_access_key_id = A\n"
				"aws_secret_access_key = SECRETFILE\x01\n");
	check_no_secret(-EINVAL);

	ct_env_reset();
	ct_write("config", "[default]\ncredential_process = echo "
			   "'{\"Version\":1,\"AccessKeyId\":\"A B\","
			   "\"SecretAccessKey\":\"SECRETPROC\"}'\n");
	check_no_secret(-EPROTO);

	/* ECS answers that echo secrets, and the authorization token. */
	ct_env_reset();
	s = ct_service_start();
	r = ct_route_add(s, "GET", ECS_PATH, 200,
			 "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":"
			 "\"SECRETECS\",\"Token\":\"T\"}");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ct_url(s, ECS_PATH), 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ECSAUTHSECRET", 1);
	check_no_secret(-EPROTO);
	CT_SET(r->status, 403);
	CT_SET(r->body, "{\"code\":\"AccessDenied ECSAUTHSECRET\","
			"\"message\":\"bad token ECSAUTHSECRET\"}");
	check_no_secret(-EACCES);
	CHECK_CONTAINS(e.message, "HTTP 403");

	/* IMDS refusing with secrets in the answer. */
	ct_env_reset();
	s = ct_service_start();
	ct_route_add(s, "PUT", "/latest/api/token", 200, "T");
	ct_route_add(s, "GET", "/latest/meta-data/iam/security-credentials/",
		     200, "role");
	ct_route_add(s, "GET",
		     "/latest/meta-data/iam/security-credentials/role", 200,
		     "{\"Code\":\"Success\",\"AccessKeyId\":\"A\","
		     "\"SecretAccessKey\":\"SECRETIMDS\",\"Token\":\"T\","
		     "\"Expiration\":\"yesterday\"}");
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fakehttp_url(s->srv), 1);
	check_no_secret(-EPROTO);

	/* STS: a malformed success and an error echoing the token. */
	ct_env_reset();
	s = ct_service_start();
	r = ct_route_add(s, "POST", "/", 200,
			 "<R><AccessKeyId>A</AccessKeyId><SecretAccessKey>"
			 "SECRETSTS</SecretAccessKey></R>");
	ct_write("webtoken", "WEBTOKENSECRET");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", ct_path("webtoken"), 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
	setenv("AWS_ENDPOINT_URL_STS", fakehttp_url(s->srv), 1);
	check_no_secret(-EPROTO);
	CT_SET(r->status, 400);
	CT_SET(r->body,
	       "<ErrorResponse><Error><Code>InvalidIdentityToken</Code>"
	       "<Message>token WEBTOKENSECRET is invalid</Message></Error>"
	       "</ErrorResponse>");
	check_no_secret(-EINVAL);
	CHECK_CONTAINS(e.message, "InvalidIdentityToken");
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_order);
	CHECK_CASE(test_failure_stops);
	CHECK_CASE(test_every_reason);
	CHECK_CASE(test_refresh_before_expiry);
	CHECK_CASE(test_failed_refresh_keeps_cached);
	CHECK_CASE(test_one_refresh_in_flight);
	CHECK_CASE(test_no_secret_in_messages);
	aws_creds_clear(&c);
	CHECK_DONE();
}
