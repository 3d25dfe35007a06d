/* fuzz_ddb_error: error answers on arbitrary bytes: the envelope
 * (awserr_from_json, both message spellings) and the Item of a
 * ConditionalCheckFailedException. Never a memory error.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_mutator.h"
#include "ddb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct aws_error err;
	struct ddb_item *it;
	char line[512];
	int rc;

	awserr_from_json(&err, 400, body, size);
	if (!memchr(err.type, '\0', sizeof(err.type)) ||
	    !memchr(err.message, '\0', sizeof(err.message)))
		abort();
	(void)awserr_format(&err, line, sizeof(line));
	(void)awserr_to_errno(&err);

	rc = ddb_parse_condition_failure(body, size, &it);
	if (rc && it)
		abort();
	ddb_item_free(it);
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
