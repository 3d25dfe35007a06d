/* sigv4_hmac: the hashing of SigV4 and the only file that includes
 * OpenSSL: SHA-256 (fetched once for the process) and HMAC-SHA256, stage 3
 * (the signing key, the HMAC chain from the secret) and stage 4 (the
 * signature). Any thread: the fetched algorithm is the only shared state
 * (no secret). The secret and every key derived from it live on the stack
 * of the call that uses them (and in the digest context of one HMAC, freed
 * and wiped by OpenSSL) and are wiped before it returns; nothing here logs. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>

#include "sigv4_int.h"
#include "text.h"

/* "AWS4" + secret is built on the stack; real secrets are 40 bytes. */
#define SIGV4_SECRET_MAX 512

/* SHA-256, fetched once: EVP_sha256(), as HMAC() does inside, makes
 * OpenSSL 3 look the algorithm up in its providers on every call (a third
 * of the cost of signing a request). EVP_sha256() if the fetch failed. */
static EVP_MD *sha256_fetched;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256_fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256_md(void)
{
	pthread_once(&sha256_once, sha256_fetch);
	return sha256_fetched ? sha256_fetched : EVP_sha256();
}

/* SHA-256 of the concatenation of a and b into out[32] through ctx (reset
 * first). */
static bool sha256_two(EVP_MD_CTX *ctx, const void *a, size_t alen,
		       const void *b, size_t blen, unsigned char out[32])
{
	unsigned int mdlen = 0;

	return EVP_DigestInit_ex2(ctx, sha256_md(), NULL) &&
	       EVP_DigestUpdate(ctx, a, alen) &&
	       EVP_DigestUpdate(ctx, b, blen) &&
	       EVP_DigestFinal_ex(ctx, out, &mdlen) && mdlen == 32;
}

int sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!data && len) {
		hex[0] = '\0';
		return -EINVAL;
	}
	if (!EVP_Digest(data ? data : "", len, md, &mdlen, sha256_md(), NULL) ||
	    mdlen != 32) {
		hex[0] = '\0';
		return -EIO;
	}
	text_hex(md, 32, hex);
	return 0;
}

/* HMAC-SHA256 (RFC 2104) on the SHA-256 fetched once: H((K ^ opad) ||
 * H((K ^ ipad) || data)), K the key zero-padded to the 64-byte block (or
 * its digest when longer). */
int sigv4_hmac_sha256(const void *key, size_t key_len, const void *data,
		      size_t len, unsigned char out[32])
{
	unsigned char k[64], pad[64], inner[32];
	EVP_MD_CTX *ctx;
	bool ok;
	int i;

	if ((!key && key_len) || (!data && len) || key_len > INT_MAX)
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	memset(k, 0, sizeof(k));
	if (key_len > sizeof(k))
		ok = sha256_two(ctx, key, key_len, "", 0, k);
	else {
		if (key_len)
			memcpy(k, key, key_len);
		ok = true;
	}
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	ok = ok && sha256_two(ctx, pad, sizeof(pad),
			      data ? data : (const void *)"", len, inner);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	ok = ok && sha256_two(ctx, pad, sizeof(pad), inner, sizeof(inner), out);
	EVP_MD_CTX_free(ctx); /* OpenSSL wipes the digest state it frees */
	buf_wipe(k, sizeof(k));
	buf_wipe(pad, sizeof(pad));
	buf_wipe(inner, sizeof(inner));
	return ok ? 0 : -EIO;
}

int sigv4_signing_key(const char *secret, const char *date8, const char *region,
		      const char *service, unsigned char key[32])
{
	char ksecret[4 + SIGV4_SECRET_MAX];
	unsigned char k[32];
	size_t slen;
	int i, rc;

	if (!secret || !date8 || strlen(date8) != 8 ||
	    !sigv4_field_ok(region, SIGV4_SCOPE_BAD) ||
	    !sigv4_field_ok(service, SIGV4_SCOPE_BAD) || !key)
		return -EINVAL;
	for (i = 0; i < 8; i++)
		if (!sigv4_is_digit(date8[i]))
			return -EINVAL;
	slen = strlen(secret);
	if (!slen || slen > SIGV4_SECRET_MAX)
		return -EINVAL;
	memcpy(ksecret, "AWS4", 4);
	memcpy(ksecret + 4, secret, slen);
	rc = sigv4_hmac_sha256(ksecret, 4 + slen, date8, 8, k);
	if (!rc)
		rc = sigv4_hmac_sha256(k, 32, region, strlen(region), k);
	if (!rc)
		rc = sigv4_hmac_sha256(k, 32, service, strlen(service), k);
	if (!rc)
		rc = sigv4_hmac_sha256(k, 32, SIGV4_TERMINATOR,
				       sizeof(SIGV4_TERMINATOR) - 1, key);
	buf_wipe(ksecret, sizeof(ksecret));
	buf_wipe(k, sizeof(k));
	return rc;
}

int sigv4_signature(const unsigned char key[32], const char *sts, size_t len,
		    char hex[65])
{
	unsigned char mac[32];
	int rc;

	if (!key || !hex)
		return -EINVAL;
	rc = sigv4_hmac_sha256(key, 32, sts, len, mac);
	if (rc) {
		hex[0] = '\0';
		return rc;
	}
	text_hex(mac, 32, hex);
	return 0;
}
