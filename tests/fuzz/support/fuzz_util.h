/* fuzz_util: helpers shared by the fuzz harnesses (header only, static
 * inline): cutting one input into parts at a separator, NUL-terminated
 * copies of them, and reading small numbers off the front of a part. Each
 * harness runs single-threaded; nothing here keeps state. */
#ifndef LOCKFS_FUZZ_UTIL_H
#define LOCKFS_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct fz_part {
	const char *p;
	size_t n;
};

/* Cuts data at every occurrence of the seplen bytes of sep into at most
 * max parts (the last one keeps the rest). Returns the number of parts (at
 * least 1). */
static inline size_t fz_split_n(const uint8_t *data, size_t size,
				const char *sep, size_t seplen,
				struct fz_part *parts, size_t max)
{
	const char *p = (const char *)data, *end = p + size;
	size_t n = 0;

	while (n + 1 < max) {
		const char *hit =
			seplen && (size_t)(end - p) >= seplen
				? memmem(p, (size_t)(end - p), sep, seplen)
				: NULL;

		if (!hit)
			break;
		parts[n].p = p;
		parts[n++].n = (size_t)(hit - p);
		p = hit + seplen;
	}
	parts[n].p = p;
	parts[n++].n = (size_t)(end - p);
	return n;
}

/* The same with a C string separator ("\n--\n"). */
static inline size_t fz_split(const uint8_t *data, size_t size, const char *sep,
			      struct fz_part *parts, size_t max)
{
	return fz_split_n(data, size, sep, strlen(sep), parts, max);
}

/* A malloc'd NUL-terminated copy (an embedded NUL ends the C string
 * early, as it would for a real caller); NULL only on ENOMEM. */
static inline char *fz_str(const struct fz_part *part)
{
	char *s = malloc(part->n + 1);

	if (s) {
		if (part->n)
			memcpy(s, part->p, part->n);
		s[part->n] = '\0';
	}
	return s;
}

/* Takes one byte off the front of a part (0 when it is empty). */
static inline unsigned fz_byte(struct fz_part *part)
{
	unsigned b = 0;

	if (part->n) {
		b = (unsigned char)part->p[0];
		part->p++;
		part->n--;
	}
	return b;
}

/* Takes a line ("...\n") off the front of a part into a malloc'd string. */
static inline char *fz_line(struct fz_part *part)
{
	const char *nl = memchr(part->p, '\n', part->n);
	struct fz_part line = { part->p,
				nl ? (size_t)(nl - part->p) : part->n };

	part->p += line.n + (nl ? 1 : 0);
	part->n -= line.n + (nl ? 1 : 0);
	return fz_str(&line);
}

/* A decimal number at the front of a part ("404 ..."), 0 if none; the
 * digits and one following space or newline are taken. */
static inline long fz_number(struct fz_part *part)
{
	long v = 0;
	int digits = 0;

	while (part->n && part->p[0] >= '0' && part->p[0] <= '9' &&
	       digits < 9) {
		v = v * 10 + (part->p[0] - '0');
		part->p++;
		part->n--;
		digits++;
	}
	if (digits && part->n && (part->p[0] == ' ' || part->p[0] == '\n')) {
		part->p++;
		part->n--;
	}
	return v;
}

#endif
