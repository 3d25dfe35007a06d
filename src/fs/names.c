/* names: name and key validation and composition. No shared state. */
#include "names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

int names_check(const char *name)
{
	size_t n = strlen(name);

	if (n > NAMES_NAME_MAX)
		return -ENAMETOOLONG;
	if (!n || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return -EINVAL;
	if (!text_utf8_valid(name, n))
		return -EINVAL;
	if (!strncmp(name, NAMES_RESERVED, strlen(NAMES_RESERVED)))
		return -EPERM;
	return 0;
}

int names_join(const char *dir, const char *name, size_t prefix_len, char **out)
{
	size_t dl = strlen(dir), nl = strlen(name);
	size_t total = dl + (dl ? 1 : 0) + nl;
	char *k;

	if (prefix_len + total > NAMES_KEY_MAX)
		return -ENAMETOOLONG;
	k = malloc(total + 1);
	if (!k)
		return -ENOMEM;
	memcpy(k, dir, dl);
	if (dl)
		k[dl] = '/';
	memcpy(k + dl + (dl ? 1 : 0), name, nl + 1);
	*out = k;
	return 0;
}

int names_check_prefix(const char *prefix)
{
	size_t n = strlen(prefix);
	char name[NAMES_NAME_MAX + 1];
	const char *p = prefix, *slash;
	int rc;

	if (n > NAMES_PREFIX_MAX)
		return -ENAMETOOLONG;
	if (n && prefix[n - 1] != '/')
		return -EINVAL;
	for (; *p; p = slash + 1) {
		slash = strchr(p, '/');
		if ((size_t)(slash - p) > NAMES_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, (size_t)(slash - p));
		name[slash - p] = '\0';
		rc = names_check(name);
		if (rc)
			return rc;
	}
	return 0;
}

int names_normalize_prefix(const char *prefix, char **out)
{
	size_t n = strlen(prefix);
	bool add = n && prefix[n - 1] != '/';
	char *p = malloc(n + (add ? 2 : 1));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	memcpy(p, prefix, n);
	if (add)
		p[n++] = '/';
	p[n] = '\0';
	*out = p;
	return 0;
}
