/* buf: growable, capped byte buffers, wiped before their memory goes back
 * to the allocator; and secret pages (mmap, MADV_DONTDUMP, mlock). No
 * shared state. */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUF_DEFAULT_MAX ((size_t)64 << 20)

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_wipe(void *p, size_t n)
{
	if (p && n)
		explicit_bzero(p, n);
}

void buf_fini(struct buf *b)
{
	if (b->data)
		buf_wipe(b->data, b->cap);
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_free_secret(char *s)
{
	if (!s)
		return;
	buf_wipe(s, strlen(s));
	free(s);
}

void buf_fini_wipe(struct buf *b)
{
	buf_fini(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int buf_reserve(struct buf *b, size_t extra)
{
	size_t max = b->max ? b->max : BUF_DEFAULT_MAX;
	size_t need, cap;
	char *p;

	if (extra > max || b->len > max - extra)
		return -EFBIG;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	/* Not realloc: it may free the old block as it is. */
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	if (b->data) {
		memcpy(p, b->data, b->len + 1);
		buf_wipe(b->data, b->cap);
		free(b->data);
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
	int rc = buf_reserve(b, len);

	if (rc)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	rc = buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int buf_read_fd(struct buf *b, int fd)
{
	char chunk[4096];
	int rc = 0;

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		rc = buf_append(b, chunk, (size_t)n);
		if (rc)
			break;
	}
	buf_wipe(chunk, sizeof(chunk));
	return rc;
}

const char *buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}

/* A secret allocation: a header (the mapping's size) then the caller's
 * bytes, on pages of its own. */
#define SECRET_HDR ((size_t)16)

void *buf_secret_alloc(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t page = pg > 0 ? (size_t)pg : 4096, len;
	unsigned char *base;

	if (n > SIZE_MAX - SECRET_HDR - page)
		return NULL;
	len = (n + SECRET_HDR + page - 1) / page * page;
	base = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	/* Best effort: a kernel without them still gets wiped secrets. */
	(void)madvise(base, len, MADV_DONTDUMP);
	(void)mlock(base, len);
	memcpy(base, &len, sizeof(len));
	return base + SECRET_HDR;
}

void buf_secret_free(void *p)
{
	unsigned char *base;
	size_t len;

	if (!p)
		return;
	base = (unsigned char *)p - SECRET_HDR;
	memcpy(&len, base, sizeof(len));
	buf_wipe(base, len);
	(void)munlock(base, len);
	munmap(base, len);
}

char *buf_secret_strdup(const char *s)
{
	size_t n = strlen(s);
	char *p = buf_secret_alloc(n + 1);

	if (p)
		memcpy(p, s, n + 1);
	return p;
}
