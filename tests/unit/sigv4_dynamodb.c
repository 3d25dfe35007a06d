/* sigv4_dynamodb: the worked DynamoDB PutItem example of
 * tests/data/sigv4/dynamodb-example.md, variants A (long-term credentials)
 * and B (session token), with every value hard-coded from that document:
 * payload hash, canonical request and its hash, string to sign, each step of
 * the signing-key chain, signature and Authorization value. The request is
 * signed the way awsreq does it: POST / with the headers in its order. */
#include <errno.h>

#include "check.h"
#include "sigv4.h"

#define AKID   "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define DATE   "20150830T123600Z"
#define SCOPE  "20150830/us-east-1/dynamodb/aws4_request"
#define HOST   "dynamodb.us-east-1.amazonaws.com"
#define TARGET "DynamoDB_20120810.PutItem"
#define CTYPE  "application/x-amz-json-1.0"
#define BODY                                                                   \
	"{\"TableName\":\"Music\",\"Item\":{\"Artist\":{\"S\":\"No One You "   \
	"Know\"},\"SongTitle\":{\"S\":\"Call Me Today\"},\"AlbumTitle\":{"     \
	"\"S\":\"Somewhat Famous\"}}}"
#define TOKEN                                                                  \
	"AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQ"   \
	"WLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMc"   \
	"GdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp7"   \
	"5YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZb"   \
	"qBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/o"   \
	"LxBA=="

#define PAYLOAD_HASH                                                           \
	"0d2f6d69f75138840e55c6cdb9bdd872de91e03743996edfcbfd7845c8b0697c"
#define K_DATE                                                                 \
	"0138c7a6cbd60aa727b2f653a522567439dfb9f3e72b21f9b25941a42f04a7cd"
#define K_REGION                                                               \
	"f33d5808504bf34812e5fade63308b424b244c59189be2a591dd2282c7cb563f"
#define K_SERVICE                                                              \
	"209e73af0bc12e97fcefb7c59680b47530d2bdb974e5ed89f4f8bf2dec21f71f"
#define K_SIGNING                                                              \
	"44a00bf61392567a12c8a1af3f6227f121fdd3ffabe98527663649f33cbff4aa"

#define A_SIGNED "content-type;host;x-amz-date;x-amz-target"
#define A_CREQ                                                                 \
	"POST\n/\n\n"                                                          \
	"content-type:" CTYPE "\n"                                             \
	"host:" HOST "\n"                                                      \
	"x-amz-date:" DATE "\n"                                                \
	"x-amz-target:" TARGET "\n\n" A_SIGNED "\n" PAYLOAD_HASH
#define A_CREQ_HASH                                                            \
	"563409c7e5c6a0e458c0bffa8852c8f7ecd7cbf933bb4a0c6b3665b42b535fef"
#define A_SIGNATURE                                                            \
	"234c656643a770798b6539a71a2c37dcde00f2046602f3a88b7095af1be6b64c"

#define B_SIGNED                                                               \
	"content-type;host;x-amz-date;x-amz-security-token;x-amz-target"
#define B_CREQ                                                                 \
	"POST\n/\n\n"                                                          \
	"content-type:" CTYPE "\n"                                             \
	"host:" HOST "\n"                                                      \
	"x-amz-date:" DATE "\n"                                                \
	"x-amz-security-token:" TOKEN "\n"                                     \
	"x-amz-target:" TARGET "\n\n" B_SIGNED "\n" PAYLOAD_HASH
#define B_CREQ_HASH                                                            \
	"2cfeed833131546413194513f159a8f4df54e07823ab3bcd05a39b787656d4b1"
#define B_SIGNATURE                                                            \
	"52019c541f365a8adc5fb5887f4de2075e2396925b77357962d431f3870693c3"

#define STS(creq_hash) "AWS4-HMAC-SHA256\n" DATE "\n" SCOPE "\n" creq_hash

#define AUTHZ(signed, sig)                                                     \
	"AWS4-HMAC-SHA256 Credential=" AKID "/" SCOPE                          \
	", SignedHeaders=" signed ", Signature=" sig

static void check_hex(const unsigned char key[32], const char *want)
{
	static const char digits[] = "0123456789abcdef";
	char hex[65];
	int i;

	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 15];
	}
	hex[64] = '\0';
	CHECK_STR(hex, want);
}

/* kDate, kRegion, kService, kSigning one HMAC at a time, then through
 * sigv4_signing_key(). */
static void check_key_chain(void)
{
	const char ksecret[] = "AWS4" SECRET;
	unsigned char k[32], k2[32];

	CHECK_INT(sigv4_hmac_sha256(ksecret, strlen(ksecret), "20150830", 8, k),
		  0);
	check_hex(k, K_DATE);
	CHECK_INT(sigv4_hmac_sha256(k, 32, "us-east-1", 9, k2), 0);
	check_hex(k2, K_REGION);
	CHECK_INT(sigv4_hmac_sha256(k2, 32, "dynamodb", 8, k), 0);
	check_hex(k, K_SERVICE);
	CHECK_INT(sigv4_hmac_sha256(k, 32, "aws4_request", 12, k2), 0);
	check_hex(k2, K_SIGNING);

	memset(k, 0, sizeof(k));
	CHECK_INT(sigv4_signing_key(SECRET, "20150830", "us-east-1", "dynamodb",
				    k),
		  0);
	check_hex(k, K_SIGNING);
}

static void check_variant(bool with_token, const char *want_signed,
			  const char *want_creq, const char *want_creq_hash,
			  const char *want_sts, const char *want_sig,
			  const char *want_authz)
{
	/* The headers in the order awsreq builds them. */
	struct sigv4_header h[] = {
		{ "Content-Type", CTYPE },
		{ "Host", HOST },
		{ "X-Amz-Date", DATE },
		{ "X-Amz-Target", TARGET },
		{ "X-Amz-Security-Token", TOKEN },
	};
	size_t n = with_token ? 5 : 4;
	struct sigv4_creds creds = { AKID, SECRET, with_token ? TOKEN : NULL };
	struct sigv4_params params = { "us-east-1", "dynamodb", DATE, true };
	struct buf creq = BUF_INIT, sh = BUF_INIT, sts = BUF_INIT;
	struct buf authz = BUF_INIT, authz2 = BUF_INIT;
	char payload[65], creq_hash[65], scope[128], sig[65];
	unsigned char key[32];

	CHECK_INT(strlen(BODY), 134);
	CHECK_INT(sigv4_sha256_hex(BODY, strlen(BODY), payload), 0);
	CHECK_STR(payload, PAYLOAD_HASH);

	CHECK_INT(sigv4_canonical_request("POST", "/", "", h, n, payload, true,
					  &creq, &sh),
		  0);
	CHECK_STR(buf_str(&creq), want_creq);
	CHECK(creq.data[creq.len - 1] != '\n');
	CHECK_STR(buf_str(&sh), want_signed);
	CHECK_INT(sigv4_sha256_hex(creq.data, creq.len, creq_hash), 0);
	CHECK_STR(creq_hash, want_creq_hash);

	CHECK_INT(sigv4_scope(DATE, "us-east-1", "dynamodb", scope,
			      sizeof(scope)),
		  0);
	CHECK_STR(scope, SCOPE);
	CHECK_INT(sigv4_string_to_sign(DATE, scope, creq.data, creq.len, &sts),
		  0);
	CHECK_STR(buf_str(&sts), want_sts);

	CHECK_INT(sigv4_signing_key(SECRET, "20150830", "us-east-1", "dynamodb",
				    key),
		  0);
	check_hex(key, K_SIGNING);
	CHECK_INT(sigv4_signature(key, sts.data, sts.len, sig), 0);
	CHECK_STR(sig, want_sig);

	CHECK_INT(sigv4_authorization_value(AKID, scope, buf_str(&sh), sig,
					    &authz),
		  0);
	CHECK_STR(buf_str(&authz), want_authz);

	/* The one call awsreq makes. */
	CHECK_INT(sigv4_sign("POST", "/", "", h, n, BODY, strlen(BODY), &creds,
			     &params, &authz2),
		  0);
	CHECK_STR(buf_str(&authz2), buf_str(&authz));

	buf_fini(&creq);
	buf_fini(&sh);
	buf_fini(&sts);
	buf_fini(&authz);
	buf_fini(&authz2);
}

int main(int argc, char **argv)
{
	struct sigv4_header h[] = {
		{ "Content-Type", CTYPE },
		{ "Host", HOST },
		{ "X-Amz-Date", DATE },
		{ "X-Amz-Target", TARGET },
		{ "X-Amz-Security-Token", TOKEN },
	};
	struct sigv4_creds creds_a = { AKID, SECRET, NULL };
	struct sigv4_creds creds_b = { AKID, SECRET, TOKEN };
	struct sigv4_params params = { "us-east-1", "dynamodb", DATE, true };
	struct buf out = BUF_INIT;

	check_cases(argc, argv);
	CHECK_CASE(check_key_chain);
	check_variant(false, A_SIGNED, A_CREQ, A_CREQ_HASH, STS(A_CREQ_HASH),
		      A_SIGNATURE, AUTHZ(A_SIGNED, A_SIGNATURE));
	check_variant(true, B_SIGNED, B_CREQ, B_CREQ_HASH, STS(B_CREQ_HASH),
		      B_SIGNATURE, AUTHZ(B_SIGNED, B_SIGNATURE));
	/* The full Authorization values of the document, from sigv4_sign. */
	CHECK_INT(sigv4_sign("POST", "/", "", h, 4, BODY, strlen(BODY),
			     &creds_a, &params, &out),
		  0);
	CHECK_STR(buf_str(&out), AUTHZ(A_SIGNED, A_SIGNATURE));
	buf_reset(&out);
	CHECK_INT(sigv4_sign("POST", "/", "", h, 5, BODY, strlen(BODY),
			     &creds_b, &params, &out),
		  0);
	CHECK_STR(buf_str(&out), AUTHZ(B_SIGNED, B_SIGNATURE));

	/* A NULL query, an empty token and the token listed first: same. */
	buf_reset(&out);
	creds_a.session_token = "";
	CHECK_INT(sigv4_sign("POST", "/", NULL, h, 4, BODY, strlen(BODY),
			     &creds_a, &params, &out),
		  0);
	CHECK_STR(buf_str(&out), AUTHZ(A_SIGNED, A_SIGNATURE));
	{
		struct sigv4_header rev[] = { h[4], h[3], h[2], h[1], h[0] };

		buf_reset(&out);
		CHECK_INT(sigv4_sign("POST", "/", NULL, rev, 5, BODY,
				     strlen(BODY), &creds_b, &params, &out),
			  0);
		CHECK_STR(buf_str(&out), AUTHZ(B_SIGNED, B_SIGNATURE));
	}

	/* A pretty-printed body (one trailing newline) changes the signature.
	 */
	buf_reset(&out);
	CHECK_INT(sigv4_sign("POST", "/", "", h, 4, BODY "\n", strlen(BODY) + 1,
			     &creds_a, &params, &out),
		  0);
	CHECK(strcmp(buf_str(&out), AUTHZ(A_SIGNED, A_SIGNATURE)) != 0);

	/* Variant B's headers with variant A's credentials: the token is
	 * still signed because it is in the list; with B's credentials but
	 * without the header, the signer refuses (it would go unsigned). */
	buf_reset(&out);
	CHECK_INT(sigv4_sign("POST", "/", "", h, 5, BODY, strlen(BODY),
			     &creds_a, &params, &out),
		  0);
	CHECK_STR(buf_str(&out), AUTHZ(B_SIGNED, B_SIGNATURE));
	buf_reset(&out);
	CHECK_INT(sigv4_sign("POST", "/", "", h, 4, BODY, strlen(BODY),
			     &creds_b, &params, &out),
		  -EINVAL);

	buf_fini(&out);
	CHECK_DONE();
}
