/* creds_awsini: the shared config/credentials file parser: sections and
 * profile names, comments, continuation lines, merging, errors with line
 * numbers, and the bounded file loader. */
#include <errno.h>
#include <string.h>

#include "awsini.h"
#include "creds_test.h"

static struct awsini *parse_ok(const char *text)
{
	struct awsini *ini = NULL;
	int line = -1;

	CHECK_INT(awsini_parse(text, strlen(text), &ini, &line), 0);
	CHECK(ini != NULL);
	CHECK_INT(line, 0);
	return ini;
}

static int parse_err_line(const char *text)
{
	struct awsini *ini = (struct awsini *)1;
	int line = 0;

	CHECK_INT(awsini_parse(text, strlen(text), &ini, &line), -EINVAL);
	CHECK(ini == NULL);
	return line;
}

static void test_basic(void)
{
	struct awsini *ini =
		parse_ok("# leading comment\n"
			 "; another comment\n"
			 "\n"
			 "[default]\n"
			 "aws_access_key_id = AKIDDEFAULT\n"
			 "aws_secret_access_key=secret/with+chars=\n"
			 "region = eu-west-1 # trailing comment\n"
			 "odd = a#b;c\n"
			 "eq = x=y\n"
			 "empty =\n"
			 "[ profile   dev ]   ; header comment\r\n"
			 "Region = us-west-2\r\n"
			 "[plain]\n"
			 "k = v\n");

	CHECK_STR(awsini_get(ini, "default", "aws_access_key_id"),
		  "AKIDDEFAULT");
	CHECK_STR(awsini_get(ini, "default", "aws_secret_access_key"),
		  "secret/with+chars=");
	CHECK_STR(awsini_get(ini, "default", "region"), "eu-west-1");
	CHECK_STR(awsini_get(ini, "default", "odd"), "a#b;c");
	CHECK_STR(awsini_get(ini, "default", "eq"), "x=y");
	CHECK_STR(awsini_get(ini, "default", "empty"), "");
	/* Keys compare case-insensitively, section names exactly. */
	CHECK_STR(awsini_get(ini, "default", "REGION"), "eu-west-1");
	CHECK(awsini_has_section(ini, "profile dev"));
	CHECK(!awsini_has_section(ini, "profile   dev"));
	CHECK(!awsini_has_section(ini, "dev"));
	CHECK(!awsini_has_section(ini, "Default"));
	CHECK_STR(awsini_get(ini, "profile dev", "region"), "us-west-2");
	CHECK_STR(awsini_get(ini, "plain", "k"), "v");
	CHECK(awsini_get(ini, "plain", "missing") == NULL);
	CHECK(awsini_get(ini, "nosuch", "k") == NULL);
	CHECK(awsini_get(NULL, "plain", "k") == NULL);
	CHECK(!awsini_has_section(NULL, "plain"));
	awsini_free(ini);
	awsini_free(NULL);
}

static void test_merge_and_continuation(void)
{
	struct awsini *ini = parse_ok("[a]\n"
				      "k = one\n"
				      "s3 =\n"
				      "  max_concurrent_requests = 10\n"
				      "\tuse_accelerate = true # c\n"
				      "\n"
				      "  # an indented comment is a comment\n"
				      "x = 1\n"
				      "[b]\n"
				      "k = b\n"
				      "[a]\n"
				      "k = two\n"
				      "y = 2\n");

	CHECK_STR(awsini_get(ini, "a", "k"), "two");
	CHECK_STR(awsini_get(ini, "a", "x"), "1");
	CHECK_STR(awsini_get(ini, "a", "y"), "2");
	CHECK_STR(awsini_get(ini, "a", "s3"),
		  "\nmax_concurrent_requests = 10\nuse_accelerate = true");
	CHECK_STR(awsini_get(ini, "b", "k"), "b");
	awsini_free(ini);

	/* Many continuation lines grow one value (amortised, no quadratic
	 * copying) and keep every line. */
	{
		struct buf b = BUF_INIT;
		int i;

		CHECK_INT(buf_puts(&b, "[big]\nv = start\n"), 0);
		for (i = 0; i < 5000; i++)
			CHECK_INT(buf_printf(&b, "  line%d\n", i), 0);
		ini = parse_ok(buf_str(&b));
		CHECK(strstr(awsini_get(ini, "big", "v"), "\nline4999") !=
		      NULL);
		CHECK(!strncmp(awsini_get(ini, "big", "v"), "start\nline0\n",
			       12));
		awsini_free(ini);
		buf_fini(&b);
	}

	/* The profile prefix needs a blank after it. */
	ini = parse_ok(
		"[profilex]\nk=1\n[profile]\nk=2\n[profile\tp q]\nk=3\n");
	CHECK_STR(awsini_get(ini, "profilex", "k"), "1");
	CHECK_STR(awsini_get(ini, "profile", "k"), "2");
	CHECK_STR(awsini_get(ini, "profile p q", "k"), "3");
	awsini_free(ini);

	/* Empty text is an empty file. */
	ini = parse_ok("");
	CHECK(!awsini_has_section(ini, "default"));
	awsini_free(ini);
}

static void test_errors(void)
{
	static const char nul_text[] = "[a]\nk = v\0x\n";
	struct awsini *ini = NULL;
	int line = 0;

	CHECK_INT(parse_err_line("k = v\n"), 1);
	CHECK_INT(parse_err_line("[a]\nk = v\nno equals here\n"), 3);
	CHECK_INT(parse_err_line("[a]\n = v\n"), 2);
	CHECK_INT(parse_err_line("\n\n[a\n"), 3);
	CHECK_INT(parse_err_line("[a] junk\n"), 1);
	CHECK_INT(parse_err_line("[]\n"), 1);
	CHECK_INT(parse_err_line("[  ]\n"), 1);
	CHECK_INT(parse_err_line("[a]\r\nk=v\r\n  \r\nbad\r\n"), 4);
	/* A continuation with no property before it is not a property. */
	CHECK_INT(parse_err_line("[a]\n  continued\n"), 2);
	CHECK_INT(awsini_parse(nul_text, sizeof(nul_text) - 1, &ini, &line),
		  -EINVAL);
	CHECK_INT(line, 2);
	/* err_line may be NULL. */
	CHECK_INT(awsini_parse("x", 1, &ini, NULL), -EINVAL);
}

static void test_load(void)
{
	struct awsini *ini = NULL;
	int line = -1;
	struct buf big = BUF_INIT;
	FILE *f;

	CHECK_INT(awsini_load(ct_path("absent"), &ini, &line), -ENOENT);
	CHECK(ini == NULL);
	CHECK_INT(awsini_load(ct_dir, &ini, &line), -EISDIR);

	ct_write("ok.ini", "[default]\nregion = ap-south-1\n");
	CHECK_INT(awsini_load(ct_path("ok.ini"), &ini, &line), 0);
	CHECK_STR(awsini_get(ini, "default", "region"), "ap-south-1");
	awsini_free(ini);

	ct_write("bad.ini", "[default]\nregion = x\noops\n");
	CHECK_INT(awsini_load(ct_path("bad.ini"), &ini, &line), -EINVAL);
	CHECK_INT(line, 3);

	/* Just over 1 MiB is refused without being parsed. */
	CHECK_INT(buf_puts(&big, "[default]\n"), 0);
	while (big.len <= (1u << 20))
		CHECK_INT(buf_puts(&big, "# padding padding padding padding\n"),
			  0);
	f = fopen(ct_path("big.ini"), "w");
	CHECK(f != NULL);
	CHECK(fwrite(big.data, 1, big.len, f) == big.len);
	CHECK(fclose(f) == 0);
	CHECK_INT(awsini_load(ct_path("big.ini"), &ini, &line), -EFBIG);
	buf_fini(&big);
}

int main(int argc, char **argv)
{
	ct_init();
	check_cases(argc, argv);
	CHECK_CASE(test_basic);
	CHECK_CASE(test_merge_and_continuation);
	CHECK_CASE(test_errors);
	CHECK_CASE(test_load);
	CHECK_DONE();
}
