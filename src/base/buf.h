/* buf: a growable byte buffer with a hard size cap, always NUL-terminated so
 * text can be used as a C string. Every block a buffer gives back (when it
 * grows or is freed) is overwritten first, so that request bodies, signed
 * headers and tokens that passed through one do not linger in freed heap.
 * Also: pages for secrets (excluded from core dumps). Owner: whoever holds
 * the struct. */
#ifndef LOCKFS_BUF_H
#define LOCKFS_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data; /* NULL until the first append; NUL-terminated after */
	size_t len;
	size_t cap;
	size_t max; /* appends past this many bytes fail with -EFBIG; 0: 64 MiB
		     */
};

#define BUF_INIT                                                               \
	{                                                                      \
		NULL, 0, 0, 0                                                  \
	}

void buf_init(struct buf *b, size_t max);
/* Overwrites and frees the storage; the buffer can be reused. */
void buf_fini(struct buf *b);
/* The same as buf_fini (kept for the callers that hold secrets). */
void buf_fini_wipe(struct buf *b);
void buf_reset(struct buf *b);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Appends everything read from fd until end of file. -EFBIG past the cap
 * (b->max), -errno on a read error. Wipes its own staging memory, so it
 * may read secrets. */
int buf_read_fd(struct buf *b, int fd);

/* A C string view; "" for an empty buffer. */
const char *buf_str(const struct buf *b);

/* Overwrites n bytes with zeros in a way the compiler keeps. */
void buf_wipe(void *p, size_t n);
/* Wipes and frees a NUL-terminated secret; accepts NULL. */
void buf_free_secret(char *s);

/* Memory for long-lived secrets: pages of their own, excluded from core
 * dumps (MADV_DONTDUMP) and locked in RAM when the limits allow (mlock,
 * best effort), zero-filled. NULL on ENOMEM. Never from malloc: free it only
 * with buf_secret_free, which wipes and unmaps it (accepts NULL). Each
 * allocation costs at least one page: meant for a few credentials, not for
 * per-request data. */
void *buf_secret_alloc(size_t n);
void buf_secret_free(void *p);
/* A copy of s in secret pages (NULL on ENOMEM); free with
 * buf_secret_free. */
char *buf_secret_strdup(const char *s);

#endif
