/* ddb_mutator: a structure-aware mutator for inputs that carry DynamoDB
 * JSON (items, answers), for LLVMFuzzerCustomMutator. It picks one JSON
 * document in the input (a part between "\n--\n" separators, from its first
 * '{'), and edits the tree: retags AttributeValues (S, N, B, BOOL, NULL,
 * M, L, SS, ...), puts boundary numbers in N values (int64 and DynamoDB
 * limits, times past year 9999, ids past uid_t), renames and adds the
 * attributes lockfs reads, duplicates and drops members and elements.
 * Anything it cannot parse goes to libFuzzer's own mutations. No state. */
#ifndef LOCKFS_DDB_MUTATOR_H
#define LOCKFS_DDB_MUTATOR_H

#include <stddef.h>
#include <stdint.h>

size_t ddb_mutate(uint8_t *data, size_t size, size_t max_size,
		  unsigned int seed);

/* libFuzzer's byte-level mutations (the regression driver has its own). */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#endif
