/* fuzz_ddb_page: Query/Scan answers (Items, LastEvaluatedKey,
 * ScannedCount) on arbitrary bytes: never a memory error; a page that
 * parses has n readable items, and a failed parse leaves the page empty.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c */
#include <stdint.h>
#include <stdlib.h>

#include "ddb_mutator.h"
#include "ddb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddb_page page;
	size_t i;

	if (ddb_parse_page((const char *)data, size, &page)) {
		if (page.items || page.n || page.last_key)
			abort();
		return 0;
	}
	if (page.scanned < 0)
		abort();
	for (i = 0; i < page.n; i++) {
		char *json = ddb_item_to_json(page.items[i]);

		if (!json)
			abort();
		free(json);
	}
	if (page.last_key) {
		char *json = ddb_item_to_json(page.last_key);

		if (!json)
			abort();
		free(json);
	}
	ddb_page_fini(&page);
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
