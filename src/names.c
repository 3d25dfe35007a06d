/* names: name and key validation and composition. No shared state. */
#include "names.h"

#include <errno.h>
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

	if (n > 512 || !text_utf8_valid(prefix, n))
		return -EINVAL;
	return 0;
}
