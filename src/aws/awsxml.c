/* awsxml: finds the first element with a given local name in an XML answer
 * and returns its unescaped text. Skips the XML declaration, processing
 * instructions and comments; refuses DTDs; understands CDATA, the five
 * predefined entities and numeric character references. Works in place on
 * the caller's bytes (two passes: measure, then copy), so the only
 * allocation is the returned string. No shared state. */
#include "awsxml.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *find(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);

	while ((size_t)(end - p) >= n) {
		const char *q = memchr(p, what[0], (size_t)(end - p) - n + 1);

		if (!q)
			return NULL;
		if (!memcmp(q, what, n))
			return q;
		p = q + 1;
	}
	return NULL;
}

static int starts(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);

	return (size_t)(end - p) >= n && !memcmp(p, what, n);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Skips "<?...?>", "<!--...-->" at p (which points at '<'). Returns the
 * position after it, or NULL if it is not one of those or unterminated
 * (*bad set when unterminated or a DTD). */
static const char *skip_markup(const char *p, const char *end, int *bad)
{
	const char *q;

	*bad = 0;
	if (starts(p, end, "<?")) {
		q = find(p + 2, end, "?>");
		if (!q) {
			*bad = 1;
			return NULL;
		}
		return q + 2;
	}
	if (starts(p, end, "<!--")) {
		q = find(p + 4, end, "-->");
		if (!q) {
			*bad = 1;
			return NULL;
		}
		return q + 3;
	}
	if (starts(p, end, "<!") && !starts(p, end, "<![CDATA[")) {
		*bad = 1; /* DOCTYPE and other declarations */
		return NULL;
	}
	return NULL;
}

static size_t put_utf8(uint32_t cp, char *dst)
{
	if (cp < 0x80) {
		if (dst)
			dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		if (dst) {
			dst[0] = (char)(0xc0 | (cp >> 6));
			dst[1] = (char)(0x80 | (cp & 0x3f));
		}
		return 2;
	}
	if (cp < 0x10000) {
		if (dst) {
			dst[0] = (char)(0xe0 | (cp >> 12));
			dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			dst[2] = (char)(0x80 | (cp & 0x3f));
		}
		return 3;
	}
	if (dst) {
		dst[0] = (char)(0xf0 | (cp >> 18));
		dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[3] = (char)(0x80 | (cp & 0x3f));
	}
	return 4;
}

/* Decodes the entity at p ('&'). Returns its length in the input, or 0 if
 * malformed; *cp gets the character. */
static size_t entity(const char *p, const char *end, uint32_t *cp)
{
	static const struct {
		const char *name;
		char c;
	} named[] = { { "&lt;", '<' },
		      { "&gt;", '>' },
		      { "&amp;", '&' },
		      { "&quot;", '"' },
		      { "&apos;", '\'' } };
	size_t i, n;
	uint32_t v = 0;
	int hex, digits = 0;

	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (starts(p, end, named[i].name)) {
			*cp = (unsigned char)named[i].c;
			return strlen(named[i].name);
		}
	}
	if (!starts(p, end, "&#"))
		return 0;
	n = 2;
	hex = p + n < end && p[n] == 'x';
	if (hex)
		n++;
	for (; p + n < end && p[n] != ';'; n++, digits++) {
		char c = p[n];
		uint32_t d;

		if (c >= '0' && c <= '9')
			d = (uint32_t)(c - '0');
		else if (hex && c >= 'a' && c <= 'f')
			d = (uint32_t)(c - 'a' + 10);
		else if (hex && c >= 'A' && c <= 'F')
			d = (uint32_t)(c - 'A' + 10);
		else
			return 0;
		v = v * (hex ? 16 : 10) + d;
		if (v > 0x10ffff)
			return 0;
	}
	if (p + n >= end || !digits || !v || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n + 1;
}

/* Walks the content of an element whose start tag ended at p, up to its end
 * tag "</qname>". Writes the text to dst (NULL: only measures). Returns 0
 * and the text length, or -EPROTO (malformed, child elements). */
static int content(const char *p, const char *end, const char *qname,
		   size_t qlen, char *dst, size_t *outlen)
{
	size_t n = 0;

	while (p < end) {
		const char *q;
		int bad;

		if (*p == '&') {
			uint32_t cp;
			size_t used = entity(p, end, &cp);

			if (!used)
				return -EPROTO;
			n += put_utf8(cp, dst ? dst + n : NULL);
			p += used;
			continue;
		}
		if (*p == '\0')
			return -EPROTO;
		if (*p != '<') {
			if (dst)
				dst[n] = *p;
			n++;
			p++;
			continue;
		}
		if (starts(p, end, "</")) {
			q = p + 2;
			if ((size_t)(end - q) < qlen || memcmp(q, qname, qlen))
				return -EPROTO;
			q += qlen;
			while (q < end && is_space(*q))
				q++;
			if (q >= end || *q != '>')
				return -EPROTO;
			*outlen = n;
			return 0;
		}
		if (starts(p, end, "<![CDATA[")) {
			q = find(p + 9, end, "]]>");
			if (!q)
				return -EPROTO;
			if (memchr(p + 9, '\0', (size_t)(q - (p + 9))))
				return -EPROTO;
			if (dst)
				memcpy(dst + n, p + 9, (size_t)(q - (p + 9)));
			n += (size_t)(q - (p + 9));
			p = q + 3;
			continue;
		}
		q = skip_markup(p, end, &bad);
		if (!q)
			return -EPROTO; /* a child element, DTD or garbage */
		p = q;
	}
	return -EPROTO;
}

int awsxml_text(const char *xml, size_t len, const char *name, char **out)
{
	const char *p = xml, *end = xml + len;
	size_t nlen = strlen(name);

	*out = NULL;
	if (!xml)
		return -ENOENT;
	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		const char *qn, *local, *q;
		size_t qlen, tlen;
		int bad, self_close;

		if (!lt)
			return -ENOENT;
		q = skip_markup(lt, end, &bad);
		if (bad)
			return -EPROTO;
		if (q) {
			p = q;
			continue;
		}
		if (starts(lt, end, "<![CDATA[")) {
			q = find(lt + 9, end, "]]>");
			if (!q)
				return -EPROTO;
			p = q + 3;
			continue;
		}
		if (starts(lt, end, "</")) {
			q = memchr(lt, '>', (size_t)(end - lt));
			if (!q)
				return -EPROTO;
			p = q + 1;
			continue;
		}
		/* A start tag: its qualified name, then attributes. */
		qn = lt + 1;
		for (q = qn; q < end && !is_space(*q) && *q != '/' && *q != '>';
		     q++)
			;
		qlen = (size_t)(q - qn);
		if (!qlen || q >= end)
			return -EPROTO;
		while (q < end && *q != '>') {
			if (*q == '"' || *q == '\'') {
				const char *close = memchr(
					q + 1, *q, (size_t)(end - q - 1));

				if (!close)
					return -EPROTO;
				q = close;
			} else if (*q == '<') {
				return -EPROTO;
			}
			q++;
		}
		if (q >= end)
			return -EPROTO;
		self_close = q[-1] == '/';
		p = q + 1;
		local = memchr(qn, ':', qlen);
		local = local ? local + 1 : qn;
		if ((size_t)(qn + qlen - local) != nlen ||
		    memcmp(local, name, nlen))
			continue;
		if (self_close) {
			*out = strdup("");
			return *out ? 0 : -ENOMEM;
		}
		if (content(p, end, qn, qlen, NULL, &tlen))
			return -EPROTO;
		*out = malloc(tlen + 1);
		if (!*out)
			return -ENOMEM;
		content(p, end, qn, qlen, *out, &tlen);
		(*out)[tlen] = '\0';
		return 0;
	}
	return -ENOENT;
}
