/* sigv4_creq: stage 1 of SigV4, the canonical request: the method, the
 * canonical URI (normalised and percent-encoded), the canonical query
 * (re-encoded and sorted), the canonical headers and signed-header list
 * (lowercased, trimmed, sorted, repeats joined) and the payload hash. Pure
 * text, no OpenSSL, no shared state: any thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4_int.h"

/* Headers and query parameters sorted through a stack index up to this many. */
#define SIGV4_STACK_ITEMS 32
/* Paths normalised in a stack copy up to this many bytes. */
#define SIGV4_STACK_PATH 256

static const char sigv4_hexdigits[] = "0123456789ABCDEF";

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
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

int sigv4_name_cmp(const char *a, const char *b)
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
	int c = sigv4_name_cmp(h[i].name, h[j].name);

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
		for (k++; k < n && !sigv4_name_cmp(headers[idx[k]].name, name);
		     k++) {
			sink_putc(s, ',');
			put_trimmed(s, headers[idx[k]].value);
		}
		sink_putc(s, '\n');
	}
	sink_putc(s, '\n');

	*sh_off = s->b->len;
	for (k = 0; k < n; k++) {
		if (k && !sigv4_name_cmp(headers[idx[k - 1]].name,
					 headers[idx[k]].name))
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

int sigv4_creq_build(struct buf *creq, const char *method, const char *path,
		     const char *query, const struct sigv4_header *headers,
		     size_t n_headers, const char *payload_hash_hex,
		     bool normalize_path, size_t *sh_off, size_t *sh_len)
{
	struct sink s = { creq, 0 };
	int rc;

	if (!sigv4_field_ok(method, "") || !path || (!headers && n_headers) ||
	    !sigv4_field_ok(payload_hash_hex, ""))
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
	rc = sigv4_creq_build(creq, method, path, query, headers, n_headers,
			      payload_hash_hex, normalize_path, &sh_off,
			      &sh_len);
	if (rc || !signed_headers)
		return rc;
	return buf_append(signed_headers, creq->data + sh_off, sh_len);
}
