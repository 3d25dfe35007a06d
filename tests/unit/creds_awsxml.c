/* creds_awsxml: the minimal XML text extractor on STS answers and on
 * malformed or hostile documents. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "awsxml.h"
#include "check.h"

static const char sts_ok[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<AssumeRoleWithWebIdentityResponse "
	"xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
	"  <AssumeRoleWithWebIdentityResult>\n"
	"    "
	"<SubjectFromWebIdentityToken>system:sa</SubjectFromWebIdentityToken>\n"
	"    <!-- a comment with <AccessKeyId>FAKE</AccessKeyId> -->\n"
	"    <Credentials>\n"
	"      <SessionToken>tok/en+==</SessionToken>\n"
	"      "
	"<SecretAccessKey>se&amp;cret&lt;&gt;&quot;&apos;</SecretAccessKey>\n"
	"      <Expiration>2026-11-22T10:00:00Z</Expiration>\n"
	"      <AccessKeyId>ASIAEXAMPLE</AccessKeyId>\n"
	"    </Credentials>\n"
	"  </AssumeRoleWithWebIdentityResult>\n"
	"</AssumeRoleWithWebIdentityResponse>\n";

static const char sts_err[] =
	"<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
	"  <Error>\n"
	"    <Type>Sender</Type>\n"
	"    <Code>AccessDenied</Code>\n"
	"    <Message>Not authorized to perform sts:AssumeRoleWithWebIdentity"
	"</Message>\n"
	"  </Error>\n"
	"  <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>\n"
	"</ErrorResponse>\n";

static char *text_of(const char *xml, const char *name)
{
	char *out = NULL;

	CHECK_INT(awsxml_text(xml, strlen(xml), name, &out), 0);
	CHECK(out != NULL);
	return out;
}

static int rc_of(const char *xml, const char *name)
{
	char *out = (char *)1;
	int rc = awsxml_text(xml, strlen(xml), name, &out);

	if (rc)
		CHECK(out == NULL);
	else
		free(out);
	return rc;
}

static void check_text(const char *xml, const char *name, const char *want)
{
	char *got = text_of(xml, name);

	CHECK_STR(got, want);
	free(got);
}

int main(void)
{
	/* STS answers. */
	check_text(sts_ok, "AccessKeyId", "ASIAEXAMPLE");
	check_text(sts_ok, "SecretAccessKey", "se&cret<>\"'");
	check_text(sts_ok, "SessionToken", "tok/en+==");
	check_text(sts_ok, "Expiration", "2026-11-22T10:00:00Z");
	check_text(sts_err, "Code", "AccessDenied");
	check_text(sts_err, "Message",
		   "Not authorized to perform sts:AssumeRoleWithWebIdentity");
	CHECK_INT(rc_of(sts_err, "AccessKeyId"), -ENOENT);
	CHECK_INT(rc_of(sts_ok, "Access"), -ENOENT); /* exact names */
	CHECK_INT(rc_of(sts_ok, "KeyId"), -ENOENT);
	/* An element with children has no text of its own here. */
	CHECK_INT(rc_of(sts_ok, "Credentials"), -EPROTO);

	/* Namespace prefixes, attributes with '>' and '/', first match. */
	check_text("<a:R xmlns:a=\"u\"><a:K x=\"1>2\" y='/'>v1</a:K>"
		   "<K>v2</K></a:R>",
		   "K", "v1");
	check_text("<R><K/><K>v</K></R>", "K", "");
	check_text("<R><K a=\"b\" /></R>", "K", "");
	check_text("<K>  spaced  </K >", "K", "  spaced  ");
	check_text("<K><![CDATA[a<b>&c]]>d&#65;&#x263A;&#x1F600;</K>", "K",
		   "a<b>&cdA\xe2\x98\xba\xf0\x9f\x98\x80");
	check_text("<K>a<!-- c --><?pi x?>b</K>", "K", "ab");
	check_text("<K></K>", "K", "");
	/* Malformed documents. */
	CHECK_INT(rc_of("<K>unterminated", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>x</L>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>x</K", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>a<b>c</b></K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&bogus;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&amp</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&#0;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&#xD800;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&#x110000;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&#;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K>&#12a;</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K><![CDATA[open</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<!DOCTYPE x [<!ENTITY e \"boom\">]><K>&e;</K>", "K"),
		  -EPROTO);
	CHECK_INT(rc_of("<!-- open comment <K>v</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<?xml open <K>v</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<K a=\"unterminated>v</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<", "K"), -EPROTO);
	CHECK_INT(rc_of("< K>v</K>", "K"), -EPROTO);
	CHECK_INT(rc_of("<R", "K"), -EPROTO);
	CHECK_INT(rc_of("plain text, no markup", "K"), -ENOENT);
	CHECK_INT(rc_of("", "K"), -ENOENT);
	{
		static const char nul[] = "<K>a\0b</K>";
		char *out = NULL;

		CHECK_INT(awsxml_text(nul, sizeof(nul) - 1, "K", &out),
			  -EPROTO);
		CHECK(out == NULL);
		/* The length bounds the scan: the element is cut off. */
		CHECK_INT(awsxml_text("<K>abc</K>", 8, "K", &out), -EPROTO);
		CHECK_INT(awsxml_text(NULL, 0, "K", &out), -ENOENT);
	}
	CHECK_DONE();
}
