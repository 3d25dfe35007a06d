/* fuzz_sigv4_canon: SigV4 canonicalization (URI, query, headers), the scope,
 * the date and the whole signing on arbitrary text. Input: NUL-separated
 * METHOD, PATH, QUERY, HEADERS ("name:value" lines), REGION, SERVICE,
 * AMZ_DATE, then 8 bytes read as epoch milliseconds. Checked on every
 * canonical request made: its seven parts; a URI of '/', unreserved bytes
 * and %XX (upper-case hex) only, which decodes back to the path (or, when
 * normalized, to one without empty, "." or ".." segments); a query of
 * name=value pairs in that alphabet, sorted, one per non-empty parameter,
 * that canonicalizes to itself; headers lowercased, sorted, distinct, with
 * trimmed values and no control bytes, listed again as the signed headers;
 * a scope and an Authorization value of the documented shape; an amz date
 * of 16 characters for any time. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 40
#define EMPTY_SHA256                                                           \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1; /* lower-case hex is not canonical */
}

/* Decodes canonical percent-encoding of s[0..n) into out; aborts on any
 * byte that should have been encoded. Returns the decoded length. */
static size_t decode_canonical(const char *s, size_t n, bool slash_ok,
			       char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				abort(); /* a '%' is always followed by 2 */
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				abort();
			c = (unsigned char)(hi << 4 | lo);
			if (unreserved(c) || (slash_ok && c == '/'))
				abort(); /* encoded a byte that stays */
			i += 2;
		} else if (!unreserved(c) && !(slash_ok && c == '/')) {
			abort();
		}
		out[o++] = (char)c;
	}
	return o;
}

static void check_uri(const char *uri, size_t n, const char *path, bool norm)
{
	char *dec = malloc(n + 1);
	size_t d, i;

	if (!dec)
		return;
	if (!n || uri[0] != '/')
		abort();
	d = decode_canonical(uri, n, true, dec);
	dec[d] = '\0';
	if (!norm || strlen(path) <= 1) {
		if (strcmp(dec, path[0] ? path : "/"))
			abort();
	} else {
		/* No empty, "." or ".." segment survives (but a trailing '/'
		 * may end it). */
		for (i = 0; i < d; i++) {
			size_t j = i + 1;

			if (dec[i] != '/')
				continue;
			while (j < d && dec[j] != '/')
				j++;
			if ((j == i + 1 && j < d) ||
			    (j == i + 2 && dec[i + 1] == '.') ||
			    (j == i + 3 && dec[i + 1] == '.' &&
			     dec[i + 2] == '.'))
				abort();
		}
	}
	free(dec);
}

static size_t count_params(const char *q)
{
	size_t n = 0;

	while (q && *q) {
		size_t len = strcspn(q, "&");

		n += len > 0;
		q += len + (q[len] == '&');
	}
	return n;
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

static void check_query(const char *cq, size_t n, const char *query)
{
	char *dec = malloc(n + 1), *again_q = strndup(cq, n);
	const char *prev_k = NULL, *prev_v = NULL;
	size_t prev_kn = 0, prev_vn = 0, pairs = 0, i = 0;
	struct buf again = BUF_INIT;

	if (!dec || !again_q)
		goto out;
	while (i < n) {
		size_t end = i, eq;

		while (end < n && cq[end] != '&')
			end++;
		eq = i;
		while (eq < end && cq[eq] != '=')
			eq++;
		if (eq == end)
			abort(); /* every pair has '=' */
		decode_canonical(cq + i, eq - i, false, dec);
		decode_canonical(cq + eq + 1, end - eq - 1, false, dec);
		if (prev_k) {
			int c = cmp_bytes(prev_k, prev_kn, cq + i, eq - i);

			if (c > 0 ||
			    (!c && cmp_bytes(prev_v, prev_vn, cq + eq + 1,
					     end - eq - 1) > 0))
				abort(); /* sorted by name, then value */
		}
		prev_k = cq + i;
		prev_kn = eq - i;
		prev_v = cq + eq + 1;
		prev_vn = end - eq - 1;
		pairs++;
		i = end + 1;
	}
	if (pairs != count_params(query))
		abort();
	/* The canonical query is a fixed point. */
	if (sigv4_canonical_request("GET", "/", again_q, NULL, 0, EMPTY_SHA256,
				    false, &again, NULL))
		abort();
	if (strncmp(buf_str(&again) + 6, again_q, n) ||
	    buf_str(&again)[6 + n] != '\n')
		abort();
out:
	buf_fini(&again);
	free(again_q);
	free(dec);
}

/* Canonical headers from line to the blank line; returns the line after. */
static const char *check_headers(const char *line, const char *signed_list,
				 size_t n_given)
{
	struct buf names = BUF_INIT;
	const char *prev = NULL;
	size_t prev_n = 0, k = 0;

	while (*line != '\n') {
		const char *end = strchr(line, '\n');
		const char *colon = memchr(line, ':', (size_t)(end - line));
		const char *v, *p;

		if (!end || !colon || colon == line)
			abort();
		for (p = line; p < colon; p++)
			if (*p >= 'A' && *p <= 'Z')
				abort();
		if (prev &&
		    cmp_bytes(prev, prev_n, line, (size_t)(colon - line)) >= 0)
			abort(); /* sorted and distinct */
		v = colon + 1;
		if (v < end && (v[0] == ' ' || end[-1] == ' '))
			abort();
		for (p = v; p < end; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f ||
			    (p[0] == ' ' && p + 1 < end && p[1] == ' '))
				abort();
		if (k && buf_putc(&names, ';'))
			abort();
		if (buf_append(&names, line, (size_t)(colon - line)))
			abort();
		prev = line;
		prev_n = (size_t)(colon - line);
		k++;
		line = end + 1;
	}
	if (k > n_given || (n_given && !k) ||
	    strcmp(buf_str(&names), signed_list))
		abort();
	buf_fini(&names);
	return line + 1;
}

static void check_creq(const struct buf *creq, const char *method,
		       const char *path, const char *query, size_t n_headers,
		       const struct buf *sh, bool norm)
{
	const char *c = buf_str(creq), *uri, *q, *h, *rest;
	size_t ml = strlen(method);

	if (strncmp(c, method, ml) || c[ml] != '\n')
		abort();
	uri = c + ml + 1;
	q = strchr(uri, '\n');
	if (!q)
		abort();
	check_uri(uri, (size_t)(q - uri), path, norm);
	q++;
	h = strchr(q, '\n');
	if (!h)
		abort();
	check_query(q, (size_t)(h - q), query);
	rest = check_headers(h + 1, buf_str(sh), n_headers);
	if (strncmp(rest, buf_str(sh), sh->len) || rest[sh->len] != '\n' ||
	    strcmp(rest + sh->len + 1, EMPTY_SHA256))
		abort();
}

static void check_amz_date(int64_t ms)
{
	char d[17];
	int i;

	sigv4_amz_date((long long)ms, d);
	if (strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
		abort();
	for (i = 0; i < 15; i++)
		if (i != 8 && (d[i] < '0' || d[i] > '9'))
			abort();
	if (ms < 0 && strncmp(d, "1970", 4))
		abort(); /* clamped */
}

static void check_sign(const char *method, const char *path, const char *query,
		       struct sigv4_header *h, size_t n, const char *region,
		       const char *service, const char *date)
{
	struct sigv4_creds creds = { "AKIDEXAMPLE",
				     "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				     NULL };
	struct sigv4_params p = { region, service, date, true };
	struct buf authz = BUF_INIT;
	char scope[128];
	int rc;

	h[n].name = "Host";
	h[n].value = "dynamodb.example.com";
	h[n + 1].name = "X-Amz-Date";
	h[n + 1].value = date;
	rc = sigv4_sign(method, path, query, h, n + 2, "{}", 2, &creds, &p,
			&authz);
	if (!rc) {
		const char *a = buf_str(&authz);
		const char *sig = strstr(a, ", Signature=");

		if (sigv4_scope(date, region, service, scope, sizeof(scope)))
			abort(); /* signed, so the scope was good */
		if (strncmp(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/",
			    40) ||
		    strncmp(a + 40, scope, strlen(scope)) ||
		    strncmp(a + 40 + strlen(scope), ", SignedHeaders=", 16) ||
		    !sig || strlen(sig + 12) != 64 ||
		    strspn(sig + 12, "0123456789abcdef") != 64)
			abort();
	}
	buf_fini(&authz);
}

static void check_scope(const char *date, const char *region,
			const char *service)
{
	char scope[128];
	int rc = sigv4_scope(date, region, service, scope, sizeof(scope));

	if (rc == 0) {
		size_t rl = strlen(region), sl = strlen(service);

		if (strlen(scope) != 8 + 1 + rl + 1 + sl + 1 + 12 ||
		    strncmp(scope, date, 8) || scope[8] != '/' ||
		    strncmp(scope + 9, region, rl) || scope[9 + rl] != '/' ||
		    strncmp(scope + 10 + rl, service, sl) ||
		    strcmp(scope + 10 + rl + sl, "/aws4_request"))
			abort();
		if (strpbrk(region, "/ ,;=") || strpbrk(service, "/ ,;="))
			abort();
	} else if (rc != -EINVAL && rc != -ENAMETOOLONG) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[8];
	struct sigv4_header h[MAX_HEADERS + 2];
	struct buf creq = BUF_INIT, sh = BUF_INIT;
	char *s[7] = { NULL }, *line;
	size_t np = fz_split_n(data, size, "", 1, parts, 8), n = 0, i;
	int64_t ms = 0;
	int rc, norm;

	for (i = 0; i < 7; i++) {
		s[i] = i < np ? fz_str(&parts[i]) : strdup("");
		if (!s[i])
			goto out;
	}
	if (np == 8)
		for (i = 0; i < 8; i++)
			ms = (int64_t)((uint64_t)ms << 8 |
				       (i < parts[7].n
						? (unsigned char)parts[7].p[i]
						: 0));
	/* Headers: "name:value" lines, cut in place. */
	for (line = s[3]; *line && n < MAX_HEADERS;) {
		char *end = strchr(line, '\n'), *colon;

		if (end)
			*end = '\0';
		colon = strchr(line, ':');
		if (colon)
			*colon = '\0';
		h[n].name = line;
		h[n++].value = colon ? colon + 1 : "";
		if (!end)
			break;
		line = end + 1;
	}
	for (norm = 0; norm < 2; norm++) {
		buf_reset(&creq);
		buf_reset(&sh);
		rc = sigv4_canonical_request(s[0], s[1], s[2], h, n,
					     EMPTY_SHA256, norm, &creq, &sh);
		if (!rc)
			check_creq(&creq, s[0], s[1], s[2], n, &sh, norm);
		else if (rc != -EINVAL && rc != -ENOMEM && rc != -EFBIG)
			abort();
	}
	check_scope(s[6], s[4], s[5]);
	check_amz_date(ms);
	check_sign(s[0], s[1], s[2], h, n, s[4], s[5], s[6]);
out:
	buf_fini(&creq);
	buf_fini(&sh);
	for (i = 0; i < 7; i++)
		free(s[i]);
	return 0;
}
