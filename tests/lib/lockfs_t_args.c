/* lockfs_t_args: the arguments of lockfs-t: escapes in paths, names and
 * data, open flags, modes and numbers; a malformed one exits 2. One
 * thread. */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockfs_t.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Reads one (possibly escaped) character at *s into *out. */
static void one_char(const char **s, char *out)
{
	const char *p = *s;

	if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 &&
	    hexval(p[3]) >= 0) {
		*out = (char)(hexval(p[2]) * 16 + hexval(p[3]));
		*s = p + 4;
	} else if (p[0] == '\\' && p[1] == '\\') {
		*out = '\\';
		*s = p + 2;
	} else {
		*out = *p;
		*s = p + 1;
	}
}

struct bytes unescape(const char *s)
{
	struct bytes b;
	size_t cap = strlen(s) + 1;

	b.p = malloc(cap);
	b.len = 0;
	if (!b.p) {
		perror("malloc");
		exit(2);
	}
	while (*s) {
		size_t n = 1, i;
		char c;

		if (s[0] == '\\' && s[1] == '{') {
			char *end;

			n = strtoul(s + 2, &end, 10);
			if (*end != '}' || !end[1]) {
				fprintf(stderr,
					"lockfs-t: bad \\{N}C escape\n");
				exit(2);
			}
			s = end + 1;
		}
		one_char(&s, &c);
		if (b.len + n + 1 > cap) {
			cap = (b.len + n + 1) * 2;
			b.p = realloc(b.p, cap);
			if (!b.p) {
				perror("realloc");
				exit(2);
			}
		}
		for (i = 0; i < n; i++)
			b.p[b.len++] = c;
	}
	b.p[b.len] = '\0';
	return b;
}

char *path_arg(const char *s)
{
	return unescape(s).p;
}

int parse_flags(const char *s)
{
	static const struct {
		const char *name;
		int flag;
	} names[] = {
		{ "O_RDONLY", O_RDONLY },
		{ "O_WRONLY", O_WRONLY },
		{ "O_RDWR", O_RDWR },
		{ "O_CREAT", O_CREAT },
		{ "O_EXCL", O_EXCL },
		{ "O_TRUNC", O_TRUNC },
		{ "O_APPEND", O_APPEND },
		{ "O_NONBLOCK", O_NONBLOCK },
		{ "O_DIRECTORY", O_DIRECTORY },
		{ "O_NOFOLLOW", O_NOFOLLOW },
		{ "0", 0 },
	};
	char *copy = strdup(s), *tok, *save = NULL;
	int flags = 0;
	size_t i;

	for (tok = strtok_r(copy, ",|", &save); tok;
	     tok = strtok_r(NULL, ",|", &save)) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			fprintf(stderr, "lockfs-t: unknown flag %s\n", tok);
			exit(2);
		}
		flags |= names[i].flag;
	}
	free(copy);
	return flags;
}

mode_t parse_mode(const char *s)
{
	char *end;
	unsigned long m = strtoul(s, &end, 8);

	if (*end || m > 07777) {
		fprintf(stderr, "lockfs-t: bad mode %s\n", s);
		exit(2);
	}
	return (mode_t)m;
}

long long parse_num(const char *s)
{
	char *end;
	long long n = strtoll(s, &end, 10);

	if (*end || !*s) {
		fprintf(stderr, "lockfs-t: bad number %s\n", s);
		exit(2);
	}
	return n;
}
