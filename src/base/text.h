/* text: small text helpers shared by every layer: UTF-8 validation, escaping
 * for one-line display, decimal seconds <-> milliseconds, bounded copies. */
#ifndef LOCKFS_TEXT_H
#define LOCKFS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* True if the len bytes are valid UTF-8 (no overlongs, no surrogates, no
 * NUL bytes). */
bool text_utf8_valid(const char *s, size_t len);

/* Appends the bytes so that the result is one printable line that cannot
 * steer a terminal: backslash, control bytes and invalid UTF-8 become C
 * escapes (\\, \n, \t, \r, \xNN); C1 controls (U+0080..U+009F), the
 * bidirectional formatting characters (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) and U+2028/U+2029 become \uXXXX. Every
 * untrusted string shown to a person (names, other clients' fields, data,
 * log lines) goes through this. */
int text_escape_line(struct buf *out, const void *data, size_t len);

/* The same escape into out (outlen bytes, NUL-terminated); stops before an
 * escape or character that would not fit. Returns the length written. */
size_t text_escape_to(char *out, size_t outlen, const void *data, size_t len);

/* Parses "30", "0.5", "2.250" (seconds, at most 3 decimals, >= 0) into ms.
 * Returns 0 or -EINVAL (junk, negative, more than 3 decimals, overflow). */
int text_parse_seconds_ms(const char *s, int64_t *ms_out);

/* Formats ms as seconds with exactly 3 decimals ("30.000"); out >= 32 bytes. */
void text_format_seconds(int64_t ms, char *out, size_t outlen);
/* Formats ms as the shortest decimal seconds ("30", "0.25"); out >= 32. */
void text_format_seconds_short(int64_t ms, char *out, size_t outlen);

/* Parses a base-10 signed 64-bit integer, whole string; 0 or -EINVAL/-ERANGE.
 */
int text_parse_i64(const char *s, int64_t *out);

/* A signal by name or number: "TERM", "SIGTERM", "term", "SigTerm", "15"
 * or "SIG15" (any name sigabbrev_np(3) knows, numbers 1 to NSIG-1). 0 and
 * *out, or -EINVAL. */
int text_parse_signal(const char *s, int *out);

/* Copies at most outlen-1 bytes and terminates; returns -ENAMETOOLONG if
 * truncated (the truncated copy is still written). */
int text_copy(char *out, size_t outlen, const char *s);

/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void text_hex(const unsigned char *data, size_t len, char *out);

/* A random version-4 UUID string (37 bytes with NUL) from getrandom(2). */
int text_uuid4(char out[37]);

#endif
