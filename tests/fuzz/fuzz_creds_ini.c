/* fuzz_creds_ini: the shared config/credentials file parser on arbitrary
 * bytes: parse, then look up the sections and keys a profile lookup uses. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awsini.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sections[] = { "default", "profile default",
						"profile dev", "dev", "a" };
	static const char *const keys[] = { "aws_access_key_id",
					    "aws_secret_access_key",
					    "credential_process", "region",
					    "k" };
	struct awsini *ini = NULL;
	size_t i, j;
	int line = 0, rc;

	rc = awsini_parse((const char *)data, size, &ini, &line);
	if (rc) {
		if (ini || (rc == -EINVAL && line <= 0))
			abort(); /* errors leave nothing and name a line */
		return 0;
	}
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		(void)awsini_has_section(ini, sections[i]);
		for (j = 0; j < sizeof(keys) / sizeof(keys[0]); j++) {
			const char *v = awsini_get(ini, sections[i], keys[j]);

			if (v && strlen(v) > size)
				abort(); /* values come from the input */
		}
	}
	awsini_free(ini);
	return 0;
}
