/* sigv4_int: what the parts of the SigV4 signer share, private to
 * lockfs_sigv4: the constants of the canonical text, the text sink whose
 * first error sticks, the field checks every stage applies (sigv4.c), the
 * header-name order (sigv4_creq.c) and stage 1 with the signed-header list
 * left in place (sigv4_creq.c). No state; any thread. */
#ifndef LOCKFS_SIGV4_INT_H
#define LOCKFS_SIGV4_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "sigv4.h"

#define SIGV4_ALGORITHM	   "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR   "aws4_request"
#define SIGV4_AMZ_DATE_LEN 16
#define SIGV4_SCOPE_MAX	   128
/* Bytes a region or service may not contain (beyond spaces and controls). */
#define SIGV4_SCOPE_BAD "/,;="

/* A canonical-text writer whose first error sticks, so the builders can
 * append without checking every call. */
struct sink {
	struct buf *b;
	int rc;
};

static inline void sink_put(struct sink *s, const void *p, size_t n)
{
	if (!s->rc && n)
		s->rc = buf_append(s->b, p, n);
}

static inline void sink_puts(struct sink *s, const char *str)
{
	sink_put(s, str, strlen(str));
}

static inline void sink_putc(struct sink *s, char c)
{
	sink_put(s, &c, 1);
}

static inline bool sigv4_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* One line of canonical text (a method, a scope part, an access key id):
 * non-empty, printable ASCII, none of the bytes in extra. */
bool sigv4_field_ok(const char *s, const char *extra);

/* A "YYYYMMDDTHHMMSSZ" date: 16 bytes, digits but for the 'T' and 'Z'. */
bool sigv4_amz_date_ok(const char *d);

/* ASCII case-insensitive order of header names, i.e. the byte order of
 * their lowercase forms. */
int sigv4_name_cmp(const char *a, const char *b);

/* Stage 1 with the signed-header list left in place inside creq, at
 * *sh_off for *sh_len bytes. 0 or -ENOMEM/-EFBIG/-EINVAL. */
int sigv4_creq_build(struct buf *creq, const char *method, const char *path,
		     const char *query, const struct sigv4_header *headers,
		     size_t n_headers, const char *payload_hash_hex,
		     bool normalize_path, size_t *sh_off, size_t *sh_len);

#endif
