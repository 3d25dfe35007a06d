/* sigv4: AWS Signature Version 4 for the Authorization header, as small pure
 * stages: canonical request, string to sign, signing key, signature and the
 * Authorization value, plus sigv4_sign() that runs them all for one request.
 * The only file that includes OpenSSL. No shared state but the SHA-256
 * algorithm, fetched from OpenSSL once for the process (no secret), so any
 * thread may call anything. The secret and every key derived from it live on
 * the stack of the call that uses them (and in the digest context of one
 * HMAC, freed and wiped by OpenSSL) and are wiped before it returns;
 * nothing here logs. */
#include "sigv4.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/evp.h>

#include "text.h"

#define SIGV4_ALGORITHM	   "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR   "aws4_request"
#define SIGV4_AMZ_DATE_LEN 16
#define SIGV4_SCOPE_MAX	   128
/* Bytes a region or service may not contain (beyond spaces and controls). */
#define SIGV4_SCOPE_BAD "/,;="
/* "AWS4" + secret is built on the stack; real secrets are 40 bytes. */
#define SIGV4_SECRET_MAX 512
/* Headers and query parameters sorted through a stack index up to this many. */
#define SIGV4_STACK_ITEMS 32
/* Paths normalised in a stack copy up to this many bytes. */
#define SIGV4_STACK_PATH 256
/* Algorithm, date and scope, each with its newline, then the digest's 64
 * hex digits and the NUL text_hex writes after them. */
#define SIGV4_STS_MAX                                                          \
	(sizeof(SIGV4_ALGORITHM) + SIGV4_AMZ_DATE_LEN + 1 + SIGV4_SCOPE_MAX +  \
	 64 + 1)
/* 9999-12-31T23:59:59Z: the last second a 4-digit year can show. */
#define SIGV4_MAX_REAL_S 253402300799LL

static const char sigv4_hexdigits[] = "0123456789ABCDEF";

/* A canonical-text writer whose first error sticks, so the builders below
 * can append without checking every call. */
struct sink {
	struct buf *b;
	int rc;
};

static void sink_put(struct sink *s, const void *p, size_t n)
{
	if (!s->rc && n)
		s->rc = buf_append(s->b, p, n);
}

static void sink_puts(struct sink *s, const char *str)
{
	sink_put(s, str, strlen(str));
}

static void sink_putc(struct sink *s, char c)
{
	sink_put(s, &c, 1);
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static char to_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A header name is an HTTP token: printable ASCII without spaces or ':'. */
static bool header_name_ok(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c >= 0x7f || c == ':')
			return false;
	}
	return true;
}

/* A header value may not carry control bytes other than tab: a CR or LF
 * would smuggle a line into the canonical request and onto the wire. */
static bool header_value_ok(const char *s)
{
	if (!s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < ' ' && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

/* One line of canonical text (a method, a scope part, an access key id):
 * non-empty, printable ASCII, none of the bytes in extra. */
static bool field_ok(const char *s, const char *extra)
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

static bool amz_date_ok(const char *d)
{
	int i;

	if (!d || strlen(d) != SIGV4_AMZ_DATE_LEN || d[8] != 'T' ||
	    d[15] != 'Z')
		return false;
	for (i = 0; i < 15; i++)
		if (i != 8 && !is_digit(d[i]))
			return false;
	return true;
}

/* ASCII case-insensitive order of header names, i.e. the byte order of
 * their lowercase forms. */
static int name_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char ca = (unsigned char)to_lower(*a);
		unsigned char cb = (unsigned char)to_lower(*b);

		if (ca != cb || !ca)
			return ca - cb;
	}
}

/* Percent-encodes len bytes: RFC 3986 unreserved bytes (and '/' when
 * keep_slash) stay, every other byte becomes %XX in upper-case hex. Runs of
 * bytes that stay are appended in one piece. */
static void put_encoded(struct sink *s, const char *p, size_t len,
			bool keep_slash)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		char esc[3];

		if (is_unreserved(c) || (keep_slash && c == '/'))
			continue;
		sink_put(s, p + run, i - run);
		esc[0] = '%';
		esc[1] = sigv4_hexdigits[c >> 4];
		esc[2] = sigv4_hexdigits[c & 15];
		sink_put(s, esc, 3);
		run = i + 1;
	}
	sink_put(s, p + run, len - run);
}

/* Removes empty and "." segments and resolves ".." (never above the root)
 * in path[0..len), which starts with '/'. A trailing '/' of the input is
 * kept. The result, written to out (len + 1 bytes suffice), is never empty:
 * nothing is left means "/". Returns its length. */
static size_t path_normalize(const char *path, size_t len, char *out)
{
	size_t i = 0, o = 0;

	while (i < len) {
		size_t start, seg;

		while (i < len && path[i] == '/')
			i++;
		start = i;
		while (i < len && path[i] != '/')
			i++;
		seg = i - start;
		if (seg == 0 || (seg == 1 && path[start] == '.'))
			continue;
		if (seg == 2 && path[start] == '.' && path[start + 1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, path + start, seg);
		o += seg;
	}
	if (o == 0 || path[len - 1] == '/')
		out[o++] = '/';
	return o;
}

static int put_canonical_uri(struct sink *s, const char *path, bool normalize)
{
	size_t len = strlen(path);
	char stack[SIGV4_STACK_PATH], *tmp = stack;

	if (!len) {
		sink_putc(s, '/');
		return 0;
	}
	if (path[0] != '/')
		return -EINVAL;
	if (!normalize || len == 1) {
		put_encoded(s, path, len, true);
		return 0;
	}
	if (len + 1 > sizeof(stack)) {
		tmp = malloc(len + 1);
		if (!tmp)
			return -ENOMEM;
	}
	put_encoded(s, tmp, path_normalize(path, len, tmp), true);
	if (tmp != stack)
		free(tmp);
	return 0;
}

/* One query parameter: where its encoded name and value sit in the scratch
 * buffer. */
struct qparam {
	size_t koff, klen, voff, vlen;
};

/* Decodes %XX escapes in p[0..len) (a '%' without two hex digits stays a
 * '%') and encodes the bytes again the canonical way, so "ሴ" and "%E1%88%B4"
 * both come out as %E1%88%B4. '+' is a literal plus, not a space. */
static void put_query_part(struct sink *s, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = p[i];
		int hi, lo;

		if (c == '%' && i + 2 < len &&
		    (hi = hex_value(p[i + 1])) >= 0 &&
		    (lo = hex_value(p[i + 2])) >= 0) {
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		put_encoded(s, &c, 1, false);
	}
}

static int qparam_cmp(const void *a, const void *b, void *arg)
{
	const struct qparam *x = a, *y = b;
	const char *base = arg;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(base + x->koff, base + y->koff, n);

	if (c)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	n = x->vlen < y->vlen ? x->vlen : y->vlen;
	c = memcmp(base + x->voff, base + y->voff, n);
	if (c)
		return c;
	return x->vlen < y->vlen ? -1 : x->vlen > y->vlen;
}

/* The canonical query: parameters split on '&' (empty ones dropped), name
 * and value split on the first '=' (a missing value is empty), both
 * re-encoded, sorted by name and then value, joined as name=value&... */
static int put_canonical_query(struct sink *s, const char *query)
{
	struct qparam stack[SIGV4_STACK_ITEMS], *qp = stack;
	struct buf scratch = BUF_INIT;
	struct sink enc = { &scratch, 0 };
	size_t n = 1, k = 0, i;
	const char *p;

	if (!query || !*query)
		return 0;
	for (p = query; *p; p++)
		if (*p == '&')
			n++;
	if (n > SIGV4_STACK_ITEMS) {
		qp = calloc(n, sizeof(*qp));
		if (!qp)
			return -ENOMEM;
	}
	for (p = query; *p;) {
		size_t plen = strcspn(p, "&");
		const char *eq = memchr(p, '=', plen);
		size_t klen = eq ? (size_t)(eq - p) : plen;

		if (plen) {
			qp[k].koff = scratch.len;
			put_query_part(&enc, p, klen);
			qp[k].klen = scratch.len - qp[k].koff;
			qp[k].voff = scratch.len;
			if (eq)
				put_query_part(&enc, eq + 1, plen - klen - 1);
			qp[k].vlen = scratch.len - qp[k].voff;
			k++;
		}
		p += plen;
		if (*p == '&')
			p++;
	}
	if (!enc.rc && k) {
		/* Only empty names and values ("=&="): nothing was stored. */
		char *base = scratch.data ? scratch.data : (char *)"";

		qsort_r(qp, k, sizeof(*qp), qparam_cmp, base);
		for (i = 0; i < k; i++) {
			if (i)
				sink_putc(s, '&');
			sink_put(s, base + qp[i].koff, qp[i].klen);
			sink_putc(s, '=');
			sink_put(s, base + qp[i].voff, qp[i].vlen);
		}
	}
	buf_fini(&scratch);
	if (qp != stack)
		free(qp);
	return enc.rc;
}

/* Appends a name in lowercase, in chunks. */
static void put_lower(struct sink *s, const char *name)
{
	char chunk[64];
	size_t n = 0;

	for (; *name; name++) {
		chunk[n++] = to_lower(*name);
		if (n == sizeof(chunk)) {
			sink_put(s, chunk, n);
			n = 0;
		}
	}
	sink_put(s, chunk, n);
}

/* Appends a value with leading and trailing blanks dropped and each inner
 * run of blanks (spaces, tabs) as one space. Quotes get no special care. */
static void put_trimmed(struct sink *s, const char *v)
{
	while (is_space(*v))
		v++;
	while (*v) {
		const char *end = v;

		while (*end && !is_space(*end))
			end++;
		sink_put(s, v, (size_t)(end - v));
		while (is_space(*end))
			end++;
		if (*end)
			sink_putc(s, ' ');
		v = end;
	}
}

/* Orders header indexes by lowercase name, then by position, so repeated
 * names keep the order they were given in. */
static int hidx_cmp(const void *a, const void *b, void *arg)
{
	const struct sigv4_header *h = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = name_cmp(h[i].name, h[j].name);

	if (c)
		return c;
	return i < j ? -1 : i > j;
}

/* Canonical headers ("name:value\n" each, then "\n") and the signed-header
 * list, whose place in the output is reported through *sh_off, *sh_len. */
static int put_canonical_headers(struct sink *s,
				 const struct sigv4_header *headers, size_t n,
				 size_t *sh_off, size_t *sh_len)
{
	size_t stack[SIGV4_STACK_ITEMS], *idx = stack;
	size_t i, k;

	for (i = 0; i < n; i++)
		if (!header_name_ok(headers[i].name) ||
		    !header_value_ok(headers[i].value))
			return -EINVAL;
	if (n > SIGV4_STACK_ITEMS) {
		idx = calloc(n, sizeof(*idx));
		if (!idx)
			return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		idx[i] = i;
	if (n > 1)
		qsort_r(idx, n, sizeof(*idx), hidx_cmp, (void *)headers);

	for (k = 0; k < n;) {
		const char *name = headers[idx[k]].name;

		put_lower(s, name);
		sink_putc(s, ':');
		put_trimmed(s, headers[idx[k]].value);
		for (k++; k < n && !name_cmp(headers[idx[k]].name, name); k++) {
			sink_putc(s, ',');
			put_trimmed(s, headers[idx[k]].value);
		}
		sink_putc(s, '\n');
	}
	sink_putc(s, '\n');

	*sh_off = s->b->len;
	for (k = 0; k < n; k++) {
		if (k &&
		    !name_cmp(headers[idx[k - 1]].name, headers[idx[k]].name))
			continue;
		if (k)
			sink_putc(s, ';');
		put_lower(s, headers[idx[k]].name);
	}
	*sh_len = s->b->len - *sh_off;
	if (idx != stack)
		free(idx);
	return s->rc;
}

/* Stage 1 with the signed-header list left in place inside creq. */
static int creq_build(struct buf *creq, const char *method, const char *path,
		      const char *query, const struct sigv4_header *headers,
		      size_t n_headers, const char *payload_hash_hex,
		      bool normalize_path, size_t *sh_off, size_t *sh_len)
{
	struct sink s = { creq, 0 };
	int rc;

	if (!field_ok(method, "") || !path || (!headers && n_headers) ||
	    !field_ok(payload_hash_hex, ""))
		return -EINVAL;
	sink_puts(&s, method);
	sink_putc(&s, '\n');
	rc = put_canonical_uri(&s, path, normalize_path);
	if (rc)
		return rc;
	sink_putc(&s, '\n');
	rc = put_canonical_query(&s, query);
	if (rc)
		return rc;
	sink_putc(&s, '\n');
	rc = put_canonical_headers(&s, headers, n_headers, sh_off, sh_len);
	if (rc)
		return rc;
	sink_putc(&s, '\n');
	sink_puts(&s, payload_hash_hex);
	return s.rc;
}

int sigv4_canonical_request(const char *method, const char *path,
			    const char *query,
			    const struct sigv4_header *headers,
			    size_t n_headers, const char *payload_hash_hex,
			    bool normalize_path, struct buf *creq,
			    struct buf *signed_headers)
{
	size_t sh_off = 0, sh_len = 0;
	int rc;

	if (!creq)
		return -EINVAL;
	rc = creq_build(creq, method, path, query, headers, n_headers,
			payload_hash_hex, normalize_path, &sh_off, &sh_len);
	if (rc || !signed_headers)
		return rc;
	return buf_append(signed_headers, creq->data + sh_off, sh_len);
}

int sigv4_scope(const char *amz_date, const char *region, const char *service,
		char *out, size_t outlen)
{
	size_t rlen, slen, need;

	if (!amz_date_ok(amz_date) || !field_ok(region, SIGV4_SCOPE_BAD) ||
	    !field_ok(service, SIGV4_SCOPE_BAD) || !out || !outlen)
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

/* Stage 2 into a caller's array of SIGV4_STS_MAX bytes; returns the length
 * or -errno. */
static ssize_t sts_build(char *out, const char *amz_date, const char *scope,
			 const char *creq, size_t creq_len)
{
	size_t alen = sizeof(SIGV4_ALGORITHM) - 1, slen, o = 0;
	int rc;

	if (!amz_date_ok(amz_date) || !field_ok(scope, "") ||
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

int sigv4_signing_key(const char *secret, const char *date8, const char *region,
		      const char *service, unsigned char key[32])
{
	char ksecret[4 + SIGV4_SECRET_MAX];
	unsigned char k[32];
	size_t slen;
	int i, rc;

	if (!secret || !date8 || strlen(date8) != 8 ||
	    !field_ok(region, SIGV4_SCOPE_BAD) ||
	    !field_ok(service, SIGV4_SCOPE_BAD) || !key)
		return -EINVAL;
	for (i = 0; i < 8; i++)
		if (!is_digit(date8[i]))
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

static int authz_build(struct buf *out, const char *access_key_id,
		       const char *scope, const char *signed_headers,
		       size_t sh_len, const char *signature)
{
	struct sink s = { out, 0 };

	if (!out || !field_ok(access_key_id, "/,;=") || !field_ok(scope, ",") ||
	    !signed_headers || !sh_len || !signature || strlen(signature) != 64)
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
		if (!name_cmp(name, "host"))
			host = true;
		else if (!name_cmp(name, "x-amz-date"))
			date = !strcmp(value, amz_date);
		else if (!name_cmp(name, "x-amz-security-token") && !tok)
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
	    !creds->secret_access_key || !amz_date_ok(params->amz_date))
		return -EINVAL;
	rc = check_sign_headers(headers, n_headers, params->amz_date,
				creds->session_token);
	if (!rc)
		rc = sigv4_scope(params->amz_date, params->region,
				 params->service, scope, sizeof(scope));
	if (!rc)
		rc = sigv4_sha256_hex(body, body_len, payload_hex);
	if (!rc)
		rc = creq_build(&creq, method, path, query, headers, n_headers,
				payload_hex, params->normalize_path, &sh_off,
				&sh_len);
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
