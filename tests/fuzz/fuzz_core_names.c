/* fuzz_core_names: the name and key rules (names_check, names_join,
 * names_check_prefix) on arbitrary bytes. Input: PREFIX \0 DIR \0 NAME.
 * Checked against the rules of doc/semantics.md written out here: a name is
 * 1..255 bytes of valid UTF-8 without '/', not "." or "..", reserved when
 * it starts with ".lockfs"; a key (prefix + dir + '/' + name) is at most
 * 1024 bytes; a prefix is "" or at most 512 bytes of names each followed
 * by '/', and normalizing adds the one missing trailing '/'. A joined key
 * is exactly dir/name. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "names.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int expected_check(const char *name)
{
	size_t n = strlen(name);

	if (n > 255)
		return -ENAMETOOLONG;
	if (!n || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..") || !text_utf8_valid(name, n))
		return -EINVAL;
	if (!strncmp(name, ".lockfs", 7))
		return -EPERM;
	return 0;
}

/* The first failing component of a prefix, as the rules say. */
static int expected_prefix(const char *p)
{
	size_t n = strlen(p), len;
	char comp[256];
	const char *slash;
	int rc;

	if (n > 512)
		return -ENAMETOOLONG;
	if (n && p[n - 1] != '/')
		return -EINVAL;
	for (; *p; p = slash + 1) {
		slash = strchr(p, '/');
		len = (size_t)(slash - p);
		if (len > 255)
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		rc = expected_check(comp);
		if (rc)
			return rc;
	}
	return 0;
}

static void check_normalize(const char *p)
{
	size_t n = strlen(p);
	char *out = NULL;

	if (names_normalize_prefix(p, &out))
		return; /* ENOMEM */
	if (n && p[n - 1] != '/') {
		if (strlen(out) != n + 1 || memcmp(out, p, n) || out[n] != '/')
			abort();
	} else if (strcmp(out, p)) {
		abort();
	}
	free(out);
}

static void check_join(const char *dir, const char *name, size_t prefix_len)
{
	size_t dl = strlen(dir), nl = strlen(name);
	size_t total = dl + (dl ? 1 : 0) + nl;
	char *key = NULL;
	int rc = names_join(dir, name, prefix_len, &key);

	if (prefix_len + total > 1024) {
		if (rc != -ENAMETOOLONG || key)
			abort();
		return;
	}
	if (rc || !key || strlen(key) != total || memcmp(key, dir, dl) ||
	    (dl && key[dl] != '/') || strcmp(key + dl + (dl ? 1 : 0), name))
		abort();
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[3];
	size_t np = fz_split_n(data, size, "", 1, parts, 3), pl;
	char *prefix, *dir, *name;
	int rc;

	prefix = fz_str(&parts[0]);
	dir = np > 1 ? fz_str(&parts[1]) : strdup("");
	name = np > 2 ? fz_str(&parts[2]) : strdup("");
	if (!prefix || !dir || !name)
		goto out;

	pl = strlen(prefix);
	rc = names_check_prefix(prefix);
	if (rc != expected_prefix(prefix))
		abort();
	check_normalize(prefix);
	if (names_check(name) != expected_check(name))
		abort();
	if (names_check(dir) != expected_check(dir))
		abort();
	check_join(dir, name, pl);
	check_join("", name, pl);
	check_join(dir, name, 0);
out:
	free(prefix);
	free(dir);
	free(name);
	return 0;
}
