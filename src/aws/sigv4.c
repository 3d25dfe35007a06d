/* sigv4: AWS Signature Version 4 for the Authorization header: the field
 * checks every stage applies, the scope, stage 2 (the string to sign),
 * stage 5 (the Authorization value), the X-Amz-Date text, and sigv4_sign()
 * that runs all the stages for one request. Stage 1 is in sigv4_creq.c,
 * stages 3 and 4 and all hashing (OpenSSL) in sigv4_hmac.c. No shared state:
 * any thread may call anything. The signing key sigv4_sign derives lives on
 * its stack and is wiped before it returns; nothing here logs. */
#include "sigv4.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "sigv4_int.h"

/* Algorithm, date and scope, each with its newline, then the digest's 64
 * hex digits and the NUL text_hex writes after them. */
#define SIGV4_STS_MAX                                                          \
	(sizeof(SIGV4_ALGORITHM) + SIGV4_AMZ_DATE_LEN + 1 + SIGV4_SCOPE_MAX +  \
	 64 + 1)
/* 9999-12-31T23:59:59Z: the last second a 4-digit year can show. */
#define SIGV4_MAX_REAL_S 253402300799LL

bool sigv4_field_ok(const char *s, const char *extra)
{
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c >= 0x7f || strchr(extra, c))
			return false;
	}
	return true;
}

bool sigv4_amz_date_ok(const char *d)
{
	int i;

	if (!d || strlen(d) != SIGV4_AMZ_DATE_LEN || d[8] != 'T' ||
	    d[15] != 'Z')
		return false;
	for (i = 0; i < 15; i++)
		if (i != 8 && !sigv4_is_digit(d[i]))
			return false;
	return true;
}

int sigv4_scope(const char *amz_date, const char *region, const char *service,
		char *out, size_t outlen)
{
	size_t rlen, slen, need;

	if (!sigv4_amz_date_ok(amz_date) ||
	    !sigv4_field_ok(region, SIGV4_SCOPE_BAD) ||
	    !sigv4_field_ok(service, SIGV4_SCOPE_BAD) || !out || !outlen)
		return -EINVAL;
	rlen = strlen(region);
	slen = strlen(service);
	need = 8 + 1 + rlen + 1 + slen + 1 + sizeof(SIGV4_TERMINATOR);
	if (need > outlen) {
		out[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(out, amz_date, 8);
	out[8] = '/';
	memcpy(out + 9, region, rlen);
	out[9 + rlen] = '/';
	memcpy(out + 10 + rlen, service, slen);
	out[10 + rlen + slen] = '/';
	memcpy(out + 11 + rlen + slen, SIGV4_TERMINATOR,
	       sizeof(SIGV4_TERMINATOR));
	return 0;
}

/* Stage 2 into a caller's array of SIGV4_STS_MAX bytes; returns the length
 * or -errno. */
static ssize_t sts_build(char *out, const char *amz_date, const char *scope,
			 const char *creq, size_t creq_len)
{
	size_t alen = sizeof(SIGV4_ALGORITHM) - 1, slen, o = 0;
	int rc;

	if (!sigv4_amz_date_ok(amz_date) || !sigv4_field_ok(scope, "") ||
	    (!creq && creq_len))
		return -EINVAL;
	slen = strlen(scope);
	if (slen >= SIGV4_SCOPE_MAX)
		return -ENAMETOOLONG;
	memcpy(out, SIGV4_ALGORITHM "\n", alen + 1);
	o = alen + 1;
	memcpy(out + o, amz_date, SIGV4_AMZ_DATE_LEN);
	o += SIGV4_AMZ_DATE_LEN;
	out[o++] = '\n';
	memcpy(out + o, scope, slen);
	o += slen;
	out[o++] = '\n';
	rc = sigv4_sha256_hex(creq, creq_len, out + o);
	if (rc)
		return rc;
	return (ssize_t)(o + 64);
}

int sigv4_string_to_sign(const char *amz_date, const char *scope,
			 const char *creq, size_t creq_len, struct buf *sts)
{
	char tmp[SIGV4_STS_MAX];
	ssize_t n;

	if (!sts)
		return -EINVAL;
	n = sts_build(tmp, amz_date, scope, creq, creq_len);
	if (n < 0)
		return (int)n;
	return buf_append(sts, tmp, (size_t)n);
}

static int authz_build(struct buf *out, const char *access_key_id,
		       const char *scope, const char *signed_headers,
		       size_t sh_len, const char *signature)
{
	struct sink s = { out, 0 };

	if (!out || !sigv4_field_ok(access_key_id, "/,;=") ||
	    !sigv4_field_ok(scope, ",") || !signed_headers || !sh_len ||
	    !signature || strlen(signature) != 64)
		return -EINVAL;
	sink_puts(&s, SIGV4_ALGORITHM " Credential=");
	sink_puts(&s, access_key_id);
	sink_putc(&s, '/');
	sink_puts(&s, scope);
	sink_puts(&s, ", SignedHeaders=");
	sink_put(&s, signed_headers, sh_len);
	sink_puts(&s, ", Signature=");
	sink_put(&s, signature, 64);
	return s.rc;
}

int sigv4_authorization_value(const char *access_key_id, const char *scope,
			      const char *signed_headers, const char *signature,
			      struct buf *out)
{
	return authz_build(out, access_key_id, scope, signed_headers,
			   signed_headers ? strlen(signed_headers) : 0,
			   signature);
}

/* sigv4_sign's preconditions on the header list: Host present, X-Amz-Date
 * present and equal to the date being signed, and when a session token is
 * in use, X-Amz-Security-Token present with that token. */
static int check_sign_headers(const struct sigv4_header *headers, size_t n,
			      const char *amz_date, const char *token)
{
	bool host = false, date = false, tok = !token || !*token;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *name = headers[i].name, *value = headers[i].value;

		if (!name || !value)
			return -EINVAL;
		if (!sigv4_name_cmp(name, "host"))
			host = true;
		else if (!sigv4_name_cmp(name, "x-amz-date"))
			date = !strcmp(value, amz_date);
		else if (!sigv4_name_cmp(name, "x-amz-security-token") && !tok)
			tok = !strcmp(value, token);
	}
	return host && date && tok ? 0 : -EINVAL;
}

int sigv4_sign(const char *method, const char *path, const char *query,
	       const struct sigv4_header *headers, size_t n_headers,
	       const void *body, size_t body_len,
	       const struct sigv4_creds *creds,
	       const struct sigv4_params *params, struct buf *authz)
{
	struct buf creq = BUF_INIT;
	char payload_hex[65], scope[SIGV4_SCOPE_MAX], sts[SIGV4_STS_MAX];
	char date8[9], signature[65];
	unsigned char key[32];
	size_t sh_off = 0, sh_len = 0;
	ssize_t sts_len;
	int rc;

	if (!creds || !params || !authz || (!headers && n_headers) ||
	    !creds->secret_access_key || !sigv4_amz_date_ok(params->amz_date))
		return -EINVAL;
	rc = check_sign_headers(headers, n_headers, params->amz_date,
				creds->session_token);
	if (!rc)
		rc = sigv4_scope(params->amz_date, params->region,
				 params->service, scope, sizeof(scope));
	if (!rc)
		rc = sigv4_sha256_hex(body, body_len, payload_hex);
	if (!rc)
		rc = sigv4_creq_build(&creq, method, path, query, headers,
				      n_headers, payload_hex,
				      params->normalize_path, &sh_off, &sh_len);
	if (rc)
		goto out;
	sts_len = sts_build(sts, params->amz_date, scope, creq.data, creq.len);
	if (sts_len < 0) {
		rc = (int)sts_len;
		goto out;
	}
	memcpy(date8, params->amz_date, 8);
	date8[8] = '\0';
	rc = sigv4_signing_key(creds->secret_access_key, date8, params->region,
			       params->service, key);
	if (!rc)
		rc = sigv4_signature(key, sts, (size_t)sts_len, signature);
	buf_wipe(key, sizeof(key));
	if (!rc)
		rc = authz_build(authz, creds->access_key_id, scope,
				 creq.data + sh_off, sh_len, signature);
out:
	buf_fini(&creq);
	return rc;
}

void sigv4_amz_date(long long real_ms, char out[17])
{
	long long real_s = real_ms < 0 ? 0 : real_ms / 1000;
	struct tm tm;
	time_t t;

	if (real_s > SIGV4_MAX_REAL_S)
		real_s = SIGV4_MAX_REAL_S;
	t = (time_t)real_s;
	if ((long long)t != real_s || !gmtime_r(&t, &tm) ||
	    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != SIGV4_AMZ_DATE_LEN)
		memcpy(out, "19700101T000000Z", 17);
}
