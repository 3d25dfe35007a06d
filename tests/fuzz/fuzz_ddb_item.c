/* fuzz_ddb_item: DynamoDB item JSON on arbitrary bytes. Whatever parses
 * must print back to JSON that parses to the same item (a fixed point),
 * survive a deep copy, and answer every getter without a memory error.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_mutator.h"
#include "ddb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

static void touch(const struct ddb_item *it, const char *name)
{
	const char *s;
	int64_t n;
	bool b;
	void *bytes;
	size_t len;

	switch (ddb_item_type(it, name)) {
	case DDB_T_S:
		if (ddb_item_get_s(it, name, &s) || !s)
			abort();
		break;
	case DDB_T_N:
		if (ddb_item_get_n_text(it, name, &s) || !s)
			abort();
		(void)ddb_item_get_n(it, name, &n);
		break;
	case DDB_T_B:
		if (ddb_item_get_b(it, name, &bytes, &len))
			abort();
		free(bytes);
		break;
	case DDB_T_BOOL:
		if (ddb_item_get_bool(it, name, &b))
			abort();
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddb_item *it, *back, *copy;
	char *json, *again, *copied;

	if (ddb_item_from_json((const char *)data, size, &it))
		return 0;
	json = ddb_item_to_json(it);
	if (!json)
		abort();
	if (ddb_item_from_json(json, strlen(json), &back))
		abort(); /* what we print we must read */
	again = ddb_item_to_json(back);
	if (!again || strcmp(json, again))
		abort();
	copy = ddb_item_dup(it);
	copied = ddb_item_to_json(copy);
	if (!copied || strcmp(json, copied))
		abort();
	if (ddb_item_count(back) != ddb_item_count(it))
		abort();
	/* Getters on a few names likely to be present. */
	touch(it, "a");
	touch(it, "lock_key");
	touch(it, "n");
	touch(it, "b");
	free(copied);
	ddb_item_free(copy);
	free(again);
	ddb_item_free(back);
	free(json);
	ddb_item_free(it);
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
