/* text: UTF-8, escapes, decimal seconds, signals, hex, UUIDs. No shared
 * state. */
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

/* Length of the UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool text_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = utf8_seq_len(p + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/* Code points that are valid UTF-8 yet move the cursor, switch the
 * terminal's state or reorder what follows: C1 controls (U+0080..U+009F,
 * CSI and OSC among them), the bidirectional formatting characters (the
 * U+202E "right-to-left override" and its kin) and the line and paragraph
 * separators. They are shown as \uXXXX. */
static bool cp_needs_escape(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

static uint32_t utf8_decode(const unsigned char *s, size_t n)
{
	uint32_t cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
	size_t i;

	for (i = 1; i < n; i++)
		cp = (cp << 6) | (s[i] & 0x3f);
	return cp;
}

/* The escape of the unit at p (at most 10 bytes with NUL) in esc, or ""
 * when the n bytes there stand for themselves; *n is the unit's length. */
static void escape_unit(const unsigned char *p, size_t avail, size_t *n,
			char esc[12])
{
	unsigned char c = p[0];

	esc[0] = '\\';
	*n = 1;
	if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
		esc[1] = c == '\\'   ? '\\'
			 : c == '\n' ? 'n'
			 : c == '\t' ? 't'
				     : 'r';
		esc[2] = '\0';
		return;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(esc, 12, "\\x%02x", c);
		return;
	}
	*n = utf8_seq_len(p, avail);
	if (!*n) {
		*n = 1;
		snprintf(esc, 12, "\\x%02x", c);
		return;
	}
	if (*n > 1 && cp_needs_escape(utf8_decode(p, *n))) {
		snprintf(esc, 12, "\\u%04x", (unsigned)utf8_decode(p, *n));
		return;
	}
	esc[0] = '\0';
}

int text_escape_line(struct buf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i = 0, n;
	char esc[12];
	int rc = 0;

	while (i < len && !rc) {
		escape_unit(p + i, len - i, &n, esc);
		rc = esc[0] ? buf_puts(out, esc) : buf_append(out, p + i, n);
		i += n;
	}
	return rc;
}

size_t text_escape_to(char *out, size_t outlen, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i = 0, o = 0, n, w;
	char esc[12];

	if (!outlen)
		return 0;
	while (i < len) {
		escape_unit(p + i, len - i, &n, esc);
		w = esc[0] ? strlen(esc) : n;
		if (o + w >= outlen)
			break; /* never half an escape or a character */
		memcpy(out + o, esc[0] ? esc : (const char *)p + i, w);
		o += w;
		i += n;
	}
	out[o] = '\0';
	return o;
}

int text_parse_seconds_ms(const char *s, int64_t *ms_out)
{
	int64_t whole = 0, frac = 0;
	int digits = 0, fdigits = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (whole > (INT64_MAX / 1000 - 9) / 10)
			return -EINVAL;
		whole = whole * 10 + (*s - '0');
	}
	if (*s == '.') {
		s++;
		for (; *s >= '0' && *s <= '9'; s++, fdigits++) {
			if (fdigits == 3)
				return -EINVAL;
			frac = frac * 10 + (*s - '0');
		}
		if (!fdigits)
			return -EINVAL;
	}
	if (*s || (!digits && !fdigits))
		return -EINVAL;
	while (fdigits < 3) {
		frac *= 10;
		fdigits++;
	}
	*ms_out = whole * 1000 + frac;
	return 0;
}

void text_format_seconds(int64_t ms, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%" PRId64 ".%03" PRId64, ms < 0 ? "-" : "",
		 (ms < 0 ? -ms : ms) / 1000, (ms < 0 ? -ms : ms) % 1000);
}

void text_format_seconds_short(int64_t ms, char *out, size_t outlen)
{
	size_t n;

	text_format_seconds(ms, out, outlen);
	n = strlen(out);
	while (n && out[n - 1] == '0')
		out[--n] = '\0';
	if (n && out[n - 1] == '.')
		out[--n] = '\0';
}

int text_parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end || end == s)
		return -EINVAL;
	*out = v;
	return 0;
}

int text_parse_signal(const char *s, int *out)
{
	int64_t n;
	int i;

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!text_parse_i64(s, &n)) {
		if (n < 1 || n >= NSIG)
			return -EINVAL;
		*out = (int)n;
		return 0;
	}
	for (i = 1; i < NSIG; i++) {
		const char *a = sigabbrev_np(i);

		if (a && !strcasecmp(a, s)) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int text_copy(char *out, size_t outlen, const char *s)
{
	size_t n = strlen(s);

	if (!outlen)
		return -ENAMETOOLONG;
	if (n >= outlen) {
		memcpy(out, s, outlen - 1);
		out[outlen - 1] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(out, s, n + 1);
	return 0;
}

void text_hex(const unsigned char *data, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[data[i] >> 4];
		out[2 * i + 1] = digits[data[i] & 15];
	}
	out[2 * len] = '\0';
}

int text_uuid4(char out[37])
{
	unsigned char b[16];
	char hex[33];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	text_hex(b, sizeof(b), hex);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
		 hex + 16, hex + 20);
	return 0;
}
