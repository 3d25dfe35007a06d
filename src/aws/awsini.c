/* awsini: parses the AWS shared config and credentials files into sections
 * of key/value pairs. Rules: "[name]" headers (surrounding blanks trimmed,
 * "profile   x" normalised to "profile x", a trailing comment allowed);
 * "key = value" with the key compared case-insensitively; '#' or ';' start a
 * comment line, and end a value when preceded by a blank; an indented line
 * continues the previous value (joined with '\n', as sub-properties are
 * written); repeated sections merge and a repeated key keeps the last value.
 * A parsed file is owned by its creator and immutable, so several threads
 * may read it; values are wiped when freed (the credentials file holds
 * secrets). No shared state. */
#include "awsini.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

#define AWSINI_MAX_BYTES ((size_t)1 << 20)

struct awsini_kv {
	char *key;
	char *value;
	size_t vlen, vcap; /* continuation lines grow value geometrically */
};

struct awsini_section {
	char *name;
	struct awsini_kv *kv;
	size_t n_kv, cap_kv;
};

struct awsini {
	struct awsini_section *sec;
	size_t n_sec, cap_sec;
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims blanks on both ends of [*s, *e). */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_blank(**s))
		(*s)++;
	while (*e > *s && is_blank((*e)[-1]))
		(*e)--;
}

/* Cuts a value at a '#' or ';' that follows a blank. */
static const char *strip_comment(const char *s, const char *e)
{
	const char *p;

	for (p = s; p < e; p++)
		if ((*p == '#' || *p == ';') && p > s && is_blank(p[-1]))
			return p;
	return e;
}

static char *dup_range(const char *s, const char *e)
{
	char *d = malloc((size_t)(e - s) + 1);

	if (!d)
		return NULL;
	memcpy(d, s, (size_t)(e - s));
	d[e - s] = '\0';
	return d;
}

static void free_secret(char *s)
{
	buf_free_secret(s);
}

void awsini_free(struct awsini *ini)
{
	size_t i, j;

	if (!ini)
		return;
	for (i = 0; i < ini->n_sec; i++) {
		struct awsini_section *s = &ini->sec[i];

		for (j = 0; j < s->n_kv; j++) {
			free(s->kv[j].key);
			free_secret(s->kv[j].value);
		}
		free(s->kv);
		free(s->name);
	}
	free(ini->sec);
	free(ini);
}

static struct awsini_section *find_section(const struct awsini *ini,
					   const char *name)
{
	size_t i;

	for (i = 0; i < ini->n_sec; i++)
		if (!strcmp(ini->sec[i].name, name))
			return &ini->sec[i];
	return NULL;
}

static struct awsini_kv *find_kv(const struct awsini_section *s,
				 const char *key)
{
	size_t i;

	for (i = 0; i < s->n_kv; i++)
		if (!strcasecmp(s->kv[i].key, key))
			return &s->kv[i];
	return NULL;
}

/* The index of the section called name, created if new; -ENOMEM. */
static ssize_t open_section(struct awsini *ini, char *name)
{
	struct awsini_section *s = find_section(ini, name);

	if (s) {
		free(name);
		return s - ini->sec;
	}
	if (ini->n_sec == ini->cap_sec) {
		size_t cap = ini->cap_sec ? ini->cap_sec * 2 : 8;
		struct awsini_section *n = realloc(ini->sec, cap * sizeof(*n));

		if (!n) {
			free(name);
			return -ENOMEM;
		}
		ini->sec = n;
		ini->cap_sec = cap;
	}
	s = &ini->sec[ini->n_sec];
	memset(s, 0, sizeof(*s));
	s->name = name;
	return (ssize_t)ini->n_sec++;
}

/* Sets key (taking ownership of key and value); returns the kv index. */
static ssize_t set_kv(struct awsini_section *s, char *key, char *value)
{
	struct awsini_kv *kv = find_kv(s, key);

	if (kv) {
		free(key);
		free_secret(kv->value);
		kv->value = value;
		kv->vlen = kv->vcap = 0;
		return kv - s->kv;
	}
	if (s->n_kv == s->cap_kv) {
		size_t cap = s->cap_kv ? s->cap_kv * 2 : 8;
		struct awsini_kv *n = realloc(s->kv, cap * sizeof(*n));

		if (!n) {
			free(key);
			free_secret(value);
			return -ENOMEM;
		}
		s->kv = n;
		s->cap_kv = cap;
	}
	s->kv[s->n_kv].key = key;
	s->kv[s->n_kv].value = value;
	s->kv[s->n_kv].vlen = s->kv[s->n_kv].vcap = 0;
	return (ssize_t)s->n_kv++;
}

/* Appends "\n" + [s, e) to a value. */
static int append_value(struct awsini_kv *kv, const char *s, const char *e)
{
	size_t add = (size_t)(e - s), need;

	if (!kv->vcap)
		kv->vlen = kv->vcap = strlen(kv->value) + 1;
	need = kv->vlen + add + 1;
	if (need > kv->vcap) {
		size_t cap = kv->vcap * 2 > need ? kv->vcap * 2 : need;
		char *n = malloc(cap);

		if (!n)
			return -ENOMEM;
		memcpy(n, kv->value, kv->vlen);
		free_secret(kv->value);
		kv->value = n;
		kv->vcap = cap;
	}
	kv->value[kv->vlen - 1] = '\n';
	memcpy(kv->value + kv->vlen, s, add);
	kv->vlen += add + 1;
	kv->value[kv->vlen - 1] = '\0';
	return 0;
}

/* The section name of a header's inside, normalised; NULL if invalid. */
static char *header_name(const char *s, const char *e, int *nomem)
{
	char *name;

	trim(&s, &e);
	if (s == e)
		return NULL;
	if (e - s > 7 && !strncmp(s, "profile", 7) && is_blank(s[7])) {
		const char *r = s + 7;

		while (r < e && is_blank(*r))
			r++;
		name = malloc((size_t)(e - r) + 9);
		if (!name) {
			*nomem = 1;
			return NULL;
		}
		memcpy(name, "profile ", 8);
		memcpy(name + 8, r, (size_t)(e - r));
		name[8 + (e - r)] = '\0';
		return name;
	}
	name = dup_range(s, e);
	if (!name)
		*nomem = 1;
	return name;
}

struct parse_state {
	struct awsini *ini;
	ssize_t sec; /* current section or -1 */
	ssize_t kv;  /* property that may continue, or -1 */
};

static int parse_header(struct parse_state *st, const char *s, const char *e)
{
	const char *rb = memchr(s, ']', (size_t)(e - s));
	const char *p;
	int nomem = 0;
	char *name;
	ssize_t idx;

	if (!rb)
		return -EINVAL;
	for (p = rb + 1; p < e && is_blank(*p); p++)
		;
	if (p < e && *p != '#' && *p != ';')
		return -EINVAL;
	name = header_name(s + 1, rb, &nomem);
	if (!name)
		return nomem ? -ENOMEM : -EINVAL;
	idx = open_section(st->ini, name);
	if (idx < 0)
		return (int)idx;
	st->sec = idx;
	st->kv = -1;
	return 0;
}

static int parse_property(struct parse_state *st, const char *s, const char *e)
{
	const char *eq = memchr(s, '=', (size_t)(e - s));
	const char *ks = s, *ke, *vs, *ve;
	char *key, *value;
	ssize_t idx;

	if (st->sec < 0 || !eq)
		return -EINVAL;
	ke = eq;
	trim(&ks, &ke);
	if (ks == ke)
		return -EINVAL;
	vs = eq + 1;
	ve = strip_comment(vs, e);
	trim(&vs, &ve);
	key = dup_range(ks, ke);
	value = dup_range(vs, ve);
	if (!key || !value) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	idx = set_kv(&st->ini->sec[st->sec], key, value);
	if (idx < 0)
		return (int)idx;
	st->kv = idx;
	return 0;
}

static int parse_line(struct parse_state *st, const char *s, const char *e)
{
	const char *ts = s, *te = e;

	trim(&ts, &te);
	if (ts == te || *ts == '#' || *ts == ';')
		return 0;
	if (is_blank(*s) && st->kv >= 0) {
		te = strip_comment(ts, te);
		trim(&ts, &te);
		return append_value(&st->ini->sec[st->sec].kv[st->kv], ts, te);
	}
	if (*ts == '[')
		return parse_header(st, ts, te);
	return parse_property(st, ts, te);
}

int awsini_parse(const char *text, size_t len, struct awsini **out,
		 int *err_line)
{
	struct parse_state st = { .sec = -1, .kv = -1 };
	const char *p = text, *end = text + len;
	int line = 0, rc = 0;

	*out = NULL;
	if (err_line)
		*err_line = 0;
	st.ini = calloc(1, sizeof(*st.ini));
	if (!st.ini)
		return -ENOMEM;
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		line++;
		if (n && p[n - 1] == '\r')
			n--;
		if (memchr(p, '\0', n))
			rc = -EINVAL;
		else
			rc = parse_line(&st, p, p + n);
		p = nl ? nl + 1 : end;
	}
	if (rc) {
		if (rc == -EINVAL && err_line)
			*err_line = line;
		awsini_free(st.ini);
		return rc;
	}
	*out = st.ini;
	return 0;
}

int awsini_load(const char *path, struct awsini **out, int *err_line)
{
	struct buf text;
	struct stat stbuf;
	int fd, rc = 0;

	*out = NULL;
	if (err_line)
		*err_line = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &stbuf)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (S_ISDIR(stbuf.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	if (stbuf.st_size > (off_t)AWSINI_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	buf_init(&text, AWSINI_MAX_BYTES);
	rc = buf_read_fd(&text, fd);
	close(fd);
	if (!rc)
		rc = awsini_parse(buf_str(&text), text.len, out, err_line);
	buf_fini_wipe(&text);
	return rc;
}

const char *awsini_get(const struct awsini *ini, const char *section_name,
		       const char *key)
{
	const struct awsini_section *s;
	const struct awsini_kv *kv;

	if (!ini)
		return NULL;
	s = find_section(ini, section_name);
	if (!s)
		return NULL;
	kv = find_kv(s, key);
	return kv ? kv->value : NULL;
}

int awsini_has_section(const struct awsini *ini, const char *section_name)
{
	return ini && find_section(ini, section_name) != NULL;
}
