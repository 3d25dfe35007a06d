/* fuzz_ddb_get: GetItem answers ("Item") and write answers ("Attributes")
 * on arbitrary bytes: never a memory error, and an item returned is one
 * that prints as JSON.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "ddb_mutator.h"
#include "ddb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

static void check_item(struct ddb_item *it)
{
	char *json = ddb_item_to_json(it);

	if (!json)
		abort();
	free(json);
	ddb_item_free(it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct ddb_item *it;
	int rc;

	rc = ddb_parse_get_item(body, size, &it);
	if (rc == 0)
		check_item(it);
	else if (it || (rc != -ENOENT && rc != -EPROTO && rc != -ENOMEM))
		abort();
	rc = ddb_parse_attributes(body, size, &it);
	if (rc == 0 && it)
		check_item(it);
	else if (rc && (it || (rc != -EPROTO && rc != -ENOMEM)))
		abort();
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
