/* fuzz_creds_xml: the STS answer text extractor on arbitrary bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awsxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "AccessKeyId",
					     "SecretAccessKey",
					     "SessionToken",
					     "Expiration",
					     "Code",
					     "Message",
					     "K" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *out = NULL;
		int rc = awsxml_text((const char *)data, size, names[i], &out);

		if (rc == 0) {
			/* Unescaping never lengthens the text. */
			if (!out || strlen(out) > size)
				abort();
			free(out);
		} else if (out ||
			   (rc != -ENOENT && rc != -EPROTO && rc != -ENOMEM)) {
			abort();
		}
	}
	return 0;
}
