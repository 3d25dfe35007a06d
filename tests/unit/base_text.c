/* base_text: the one-line escape every untrusted string goes through
 * before a person sees it (lock text, xattrs, status, logs, lockfs-run's
 * messages): no raw newline, ESC, C1 control or bidirectional override
 * survives, ordinary UTF-8 does, and the bounded form never cuts an escape
 * or a character in half. */
#include <string.h>

#include "check.h"
#include "text.h"

static void esc_is(const char *in, size_t len, const char *want)
{
	struct buf b = BUF_INIT;
	char small[256];

	CHECK_INT(text_escape_line(&b, in, len), 0);
	CHECK_STR(buf_str(&b), want);
	CHECK(text_utf8_valid(buf_str(&b), b.len));
	text_escape_to(small, sizeof(small), in, len);
	CHECK_STR(small, want);
	buf_fini(&b);
}

#define ESC_IS(lit, want) esc_is(lit, sizeof(lit) - 1, want)

static void test_controls(void)
{
	ESC_IS("plain name", "plain name");
	ESC_IS("a\nall locks released", "a\\nall locks released");
	ESC_IS("\r\t\\", "\\r\\t\\\\");
	ESC_IS("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07");
	ESC_IS("nul\0byte", "nul\\x00byte");
	ESC_IS("del\x7f", "del\\x7f");
	/* C1 controls as UTF-8: CSI (U+009B), NEL (U+0085), OSC (U+009D). */
	ESC_IS("\xc2\x9b"
	       "2J",
	       "\\u009b2J");
	ESC_IS("\xc2\x85", "\\u0085");
	ESC_IS("\xc2\x9d"
	       "0;x",
	       "\\u009d0;x");
	/* U+00A0 and above are text. */
	ESC_IS("\xc2\xa0", "\xc2\xa0");
}

static void test_bidi(void)
{
	/* The right-to-left override and its kin, and line separators. */
	ESC_IS("job\xe2\x80\xaegpj.exe", "job\\u202egpj.exe");
	ESC_IS("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad",
	       "\\u202a\\u202b\\u202c\\u202d");
	ESC_IS("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9",
	       "\\u2066\\u2067\\u2068\\u2069");
	ESC_IS("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c");
	ESC_IS("a\xe2\x80\xa8"
	       "b\xe2\x80\xa9",
	       "a\\u2028b\\u2029");
	/* Neighbours stay. */
	ESC_IS("\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5",
	       "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5");
}

static void test_utf8(void)
{
	ESC_IS("payload-123 \xc3\xa4\xc3\xb6\xc3\xbc",
	       "payload-123 \xc3\xa4\xc3\xb6\xc3\xbc");
	ESC_IS("\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\x92",
	       "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\x92");
	ESC_IS("bad\xff", "bad\\xff");
	ESC_IS("\xc0\x80", "\\xc0\\x80");	   /* overlong NUL */
	ESC_IS("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
	ESC_IS("\xe2\x80", "\\xe2\\x80");	   /* cut short */
}

static void test_bounded(void)
{
	char out[8];

	/* Room for 7 bytes: "ab" + "\x1b" (4) fits, the next escape not. */
	CHECK_INT(text_escape_to(out, sizeof(out), "ab\x1b\x1b", 4), 6);
	CHECK_STR(out, "ab\\x1b");
	/* A 3-byte character is never cut. */
	CHECK_INT(text_escape_to(out, 6, "abc\xe6\x97\xa5", 6), 3);
	CHECK_STR(out, "abc");
	CHECK_INT(text_escape_to(out, 1, "abc", 3), 0);
	CHECK_STR(out, "");
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(test_controls);
	CHECK_CASE(test_bidi);
	CHECK_CASE(test_utf8);
	CHECK_CASE(test_bounded);
	CHECK_DONE();
}
