/* creds_profile: the environment provider and the shared-files provider:
 * profiles in the credentials and config files ("[x]" vs "[profile x]"),
 * comments, missing keys, unknown profiles, precedence between the files,
 * unsupported settings, and that no secret reaches an error message. */
#include <errno.h>
#include <string.h>

#include "creds_test.h"

static struct aws_creds c;
static struct aws_error e;

static int get_profile(const char *profile)
{
	struct creds_config cfg = { .profile = profile, .timeout_ms = 500 };

	aws_creds_clear(&c);
	awserr_clear(&e);
	return ct_get_cfg(&cfg, &c, &e);
}

static void test_env(void)
{
	ct_env_reset();
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDENV");
	CHECK_STR(c.secret_access_key, "SECRETENV");
	CHECK(c.session_token == NULL);
	CHECK_INT(c.expires_real_ms, 0);
	CHECK_STR(c.source, "environment");
	setenv("AWS_SESSION_TOKEN", "TOKENENV", 1);
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.session_token, "TOKENENV");

	/* One key without the other is an error, not a fall-through. */
	ct_write("credentials", "[default]\naws_access_key_id = AKIDFILE\n"
				"aws_secret_access_key = SECRETFILE\n");
	unsetenv("AWS_ACCESS_KEY_ID");
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_CONTAINS(e.message, "environment");
	CHECK_CONTAINS(e.message, "AWS_ACCESS_KEY_ID");
	CHECK_LACKS(e.message, "SECRETENV");
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_CONTAINS(e.message, "AWS_SECRET_ACCESS_KEY");
	/* Empty counts as unset: the files take over. */
	setenv("AWS_ACCESS_KEY_ID", "", 1);
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDFILE");
	CHECK_STR(c.source, "profile");
	/* Control characters in a key are refused. */
	setenv("AWS_ACCESS_KEY_ID", "AKID\nX", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_LACKS(e.message, "SECRETENV");
}

static void test_files(void)
{
	ct_env_reset();
	ct_write("credentials", "# keys\n"
				"[default]\n"
				"aws_access_key_id = AKIDDEF ; comment\n"
				"aws_secret_access_key = SECRETDEF\n"
				"\n"
				"[dev]\n"
				"aws_access_key_id=AKIDDEV\n"
				"aws_secret_access_key=SECRETDEV\n"
				"aws_session_token=TOKENDEV\n"
				"[profile notthis]\n"
				"aws_access_key_id=WRONG\n"
				"aws_secret_access_key=WRONG\n");
	ct_write("config",
		 "[default]\nregion = eu-west-1\n"
		 "[profile cfgonly]\n"
		 "aws_access_key_id = AKIDCFG\n"
		 "aws_secret_access_key = SECRETCFG\n"
		 "[cfgplain]\n"
		 "aws_access_key_id = WRONG\n"
		 "aws_secret_access_key = WRONG\n"
		 "[profile dev]\n"
		 "aws_access_key_id = AKIDDEVCFG\n"
		 "aws_secret_access_key = SECRETDEVCFG\n"
		 "region = us-east-2\n"
		 "[profile regiononly]\nregion = us-east-2\n"
		 "[profile halfcfg]\naws_access_key_id = AKIDHALF\n"
		 "[profile srcprof]\nrole_arn = arn:aws:iam::1:role/r\n"
		 "source_profile = default\n"
		 "[profile sso]\nsso_session = corp\nsso_account_id = 1\n"
		 "[profile arnonly]\nrole_arn = arn:aws:iam::1:role/r\n");

	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDDEF");
	CHECK_STR(c.secret_access_key, "SECRETDEF");
	CHECK_INT(c.expires_real_ms, 0);
	/* The credentials file wins over the config file. */
	CHECK_INT(get_profile("dev"), 0);
	CHECK_STR(c.access_key_id, "AKIDDEV");
	CHECK_STR(c.session_token, "TOKENDEV");
	setenv("AWS_PROFILE", "dev", 1);
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDDEV");
	/* The configured profile beats AWS_PROFILE. */
	CHECK_INT(get_profile("default"), 0);
	CHECK_STR(c.access_key_id, "AKIDDEF");
	unsetenv("AWS_PROFILE");
	/* "[profile x]" in the config file; "[x]" there is not profile x. */
	CHECK_INT(get_profile("cfgonly"), 0);
	CHECK_STR(c.access_key_id, "AKIDCFG");
	CHECK_INT(get_profile("cfgplain"), -EINVAL);
	CHECK_CONTAINS(e.message, "not found");
	/* "[profile x]" in the credentials file is not profile x either. */
	CHECK_INT(get_profile("notthis"), -EINVAL);
	/* Unknown profile named explicitly: a clear error. */
	CHECK_INT(get_profile("nosuch"), -EINVAL);
	CHECK_CONTAINS(e.message, "profile \"nosuch\" not found");
	setenv("AWS_PROFILE", "nosuch", 1);
	CHECK_INT(get_profile(NULL), -EINVAL);
	unsetenv("AWS_PROFILE");
	/* Missing keys. */
	CHECK_INT(get_profile("halfcfg"), -EINVAL);
	CHECK_CONTAINS(e.message, "aws_access_key_id without "
				  "aws_secret_access_key");
	/* A profile without credentials passes to the next provider. */
	CHECK_INT(get_profile("regiononly"), -ENOKEY);
	CHECK_CONTAINS(e.message, "no AWS credentials");
	CHECK_CONTAINS(e.message, "regiononly");
	/* Unsupported: refused clearly, not ignored. */
	CHECK_INT(get_profile("srcprof"), -EOPNOTSUPP);
	CHECK_CONTAINS(e.message, "not supported by lockfs");
	CHECK_CONTAINS(e.message, "source_profile");
	CHECK_INT(get_profile("sso"), -EOPNOTSUPP);
	CHECK_CONTAINS(e.message, "not supported by lockfs: SSO");
	CHECK_INT(get_profile("arnonly"), -EINVAL);
	CHECK_CONTAINS(e.message, "web_identity_token_file");

	/* A secret without its key id, in the credentials file. */
	ct_write("credentials", "[default]\n"
				"aws_secret_access_key = SECRETONLY\n");
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_CONTAINS(e.message, "without aws_access_key_id");
	CHECK_LACKS(e.message, "SECRETONLY");
	/* Static keys with spaces are refused without echoing them. */
	ct_write("credentials", "[default]\naws_access_key_id = AK ID\n"
				"aws_secret_access_key = SECRET SPACE\n");
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_LACKS(e.message, "SECRET");

	/* Syntax errors name the file and line. */
	ct_write("credentials", "[default]\naws_access_key_id = A\n"
				"garbage line\n");
	CHECK_INT(get_profile(NULL), -EINVAL);
	CHECK_CONTAINS(e.message, "credentials line 3");

	/* No files at all, default profile: nothing configured. */
	ct_env_reset();
	CHECK_INT(get_profile(NULL), -ENOKEY);
	CHECK_CONTAINS(e.message, "no profile \"default\" in the shared files");

	/* Default paths under HOME, and "~/" in the variables. */
	ct_env_reset();
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	CHECK_INT(mkdir(ct_path(".aws"), 0700), 0);
	ct_write(".aws/credentials", "[default]\naws_access_key_id = AKIDHOME\n"
				     "aws_secret_access_key = S\n");
	ct_write(".aws/config", "[profile c]\naws_access_key_id = AKIDHOMEC\n"
				"aws_secret_access_key = S\n");
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDHOME");
	CHECK_INT(get_profile("c"), 0);
	CHECK_STR(c.access_key_id, "AKIDHOMEC");
	ct_write("alt", "[default]\naws_access_key_id = AKIDALT\n"
			"aws_secret_access_key = S\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "~/alt", 1);
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDALT");
	/* "[profile default]" in the config file is the default profile. */
	ct_env_reset();
	ct_write("config", "[profile default]\naws_access_key_id = AKIDPD\n"
			   "aws_secret_access_key = S\n");
	CHECK_INT(get_profile(NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDPD");
}

static void test_resolved_once(void)
{
	struct creds_config cfg = { .timeout_ms = 500 };
	struct creds_chain *ch;

	/* Static keys are read once: later file changes do not matter. */
	ct_env_reset();
	ct_write("credentials", "[default]\naws_access_key_id = AKIDONE\n"
				"aws_secret_access_key = S1\n");
	ch = creds_chain_new(&cfg);
	CHECK(ch != NULL);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_STR(c.access_key_id, "AKIDONE");
	ct_write("credentials", "[default]\naws_access_key_id = AKIDTWO\n"
				"aws_secret_access_key = S2\n");
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, NULL), 0);
	CHECK_STR(c.access_key_id, "AKIDONE");
	creds_chain_free(ch);
	creds_chain_free(NULL);

	/* The environment is read when the chain is created. */
	ct_env_reset();
	setenv("AWS_ACCESS_KEY_ID", "AKIDSNAP", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S", 1);
	ch = creds_chain_new(NULL);
	CHECK(ch != NULL);
	setenv("AWS_ACCESS_KEY_ID", "AKIDLATER", 1);
	aws_creds_clear(&c);
	CHECK_INT(creds_chain_get(ch, &c, &e), 0);
	CHECK_STR(c.access_key_id, "AKIDSNAP");
	creds_chain_free(ch);
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_env);
	CHECK_CASE(test_files);
	CHECK_CASE(test_resolved_once);
	aws_creds_clear(&c);
	CHECK_DONE();
}
