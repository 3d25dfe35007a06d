/* fuzz_base_buf: the capped buffer every byte off the network goes into
 * (struct buf: the HTTP body cap, token files, answers) under any sequence
 * of appends, puts, putc, printf, resets and reads from a pipe. Input: a
 * 2-byte cap, then operations (one byte each, plus its data). Checked
 * against a plain model: the length never passes the cap (0: 64 MiB), an
 * append that would pass it fails with -EFBIG and changes nothing, the
 * bytes are the model's and always followed by a NUL. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODEL_MAX 8192

struct model {
	char bytes[MODEL_MAX];
	size_t len;
};

static void check(const struct buf *b, const struct model *m, size_t max)
{
	if (b->len != m->len || b->len > max ||
	    (b->len && memcmp(b->data, m->bytes, b->len)) ||
	    (b->data && b->data[b->len] != '\0') || buf_str(b)[b->len] != '\0')
		abort();
}

/* What an append of n bytes should do to the model. */
static int model_append(struct model *m, const void *p, size_t n, size_t max)
{
	if (n > max || m->len > max - n)
		return -EFBIG;
	if (m->len + n > MODEL_MAX)
		abort(); /* the cap keeps the model small */
	memcpy(m->bytes + m->len, p, n);
	m->len += n;
	return 0;
}

static int pipe_read(struct buf *b, const uint8_t *p, size_t n)
{
	int fds[2], rc;

	if (pipe(fds))
		return -EIO;
	if (n && write(fds[1], p, n) != (ssize_t)n)
		abort(); /* n < pipe capacity */
	close(fds[1]);
	rc = buf_read_fd(b, fds[0]);
	close(fds[0]);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* One model for every input (targets run one input at a time): a
	 * fresh 8 KiB calloc per input cost more than the buffer under test. */
	static struct model model;
	struct model *m = &model;
	struct buf b;
	size_t max, i = 2;

	if (size < 2)
		return 0;
	m->len = 0;
	max = ((size_t)data[0] << 8 | data[1]) % (MODEL_MAX - 1) + 1;
	buf_init(&b, max);
	while (i < size) {
		unsigned op = data[i++];
		size_t n = size - i < (op >> 3) ? size - i : (op >> 3);
		const uint8_t *p = data + i;
		char tmp[40];
		int rc, want;

		i += n;
		switch (op & 7) {
		case 0:
			want = model_append(m, p, n, max);
			if (buf_append(&b, p, n) != want)
				abort();
			break;
		case 1:
			snprintf(tmp, sizeof(tmp), "%.*s", (int)n,
				 (const char *)p);
			want = model_append(m, tmp, strlen(tmp), max);
			if (buf_puts(&b, tmp) != want)
				abort();
			break;
		case 2:
			want = model_append(m, p, n ? 1 : 0, max);
			if (n && buf_putc(&b, (char)p[0]) != want)
				abort();
			break;
		case 3:
			snprintf(tmp, sizeof(tmp), "<%zu:%.*s>", n, (int)n,
				 (const char *)p);
			want = model_append(m, tmp, strlen(tmp), max);
			rc = buf_printf(&b, "<%zu:%.*s>", n, (int)n,
					(const char *)p);
			if (rc != want)
				abort();
			break;
		case 4:
			buf_reset(&b);
			m->len = 0;
			break;
		case 5: {
			/* A read past the cap fails; what fitted may stay. */
			size_t before = b.len;

			rc = pipe_read(&b, p, n);
			if (!rc) {
				if (model_append(m, p, n, max))
					abort();
			} else if (rc == -EFBIG) {
				if (b.len < before || b.len > max ||
				    (b.len > before &&
				     memcmp(b.data + before, p,
					    b.len - before)))
					abort();
				if (b.len > before)
					memcpy(m->bytes + before, p,
					       b.len - before);
				m->len = b.len;
			} else {
				abort();
			}
			break;
		}
		default:
			break;
		}
		check(&b, m, max);
	}
	buf_fini(&b);
	return 0;
}
