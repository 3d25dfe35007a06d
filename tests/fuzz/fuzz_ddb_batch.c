/* fuzz_ddb_batch: BatchGetItem answers (Responses, UnprocessedKeys) for
 * three keys of table "locks" on arbitrary bytes: never a memory error;
 * an answer read gives each key 0 with its own item (one that prints as
 * JSON and carries the key), -ENOENT or -EAGAIN, and an answer refused
 * gives every key the error and no item.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_mutator.h"
#include "ddb.h"

#define NKEYS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

static struct ddb_item *keys[NKEYS];

static void make_keys(void)
{
	static const char *const names[NKEYS] = { "a", "b/c", "d" };

	for (int i = 0; i < NKEYS; i++) {
		keys[i] = ddb_item_new();
		if (!keys[i] || ddb_item_set_s(keys[i], "lock_key", names[i]) ||
		    ddb_item_set_s(keys[i], "sort_key", "-"))
			abort();
	}
}

/* An item read for key k: prints, and carries k's lock_key. */
static void check_item(const struct ddb_item *it, int k)
{
	const char *want, *got;
	char *json = ddb_item_to_json(it);

	if (!json)
		abort();
	free(json);
	if (ddb_item_get_s(keys[k], "lock_key", &want) ||
	    ddb_item_get_s(it, "lock_key", &got) || strcmp(want, got))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddb_item *items[NKEYS];
	int rcs[NKEYS], rc, i;

	if (!keys[0])
		make_keys();
	rc = ddb_parse_batch_get((const char *)data, size, "locks",
				 (const struct ddb_item *const *)keys, NKEYS,
				 items, rcs);
	if (rc && rc != -EPROTO && rc != -ENOMEM)
		abort();
	for (i = 0; i < NKEYS; i++) {
		if (rc) {
			if (rcs[i] != rc || items[i])
				abort();
		} else if (rcs[i] == 0) {
			if (!items[i])
				abort();
			check_item(items[i], i);
			ddb_item_free(items[i]);
		} else if ((rcs[i] != -ENOENT && rcs[i] != -EAGAIN) ||
			   items[i]) {
			abort();
		}
	}
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
