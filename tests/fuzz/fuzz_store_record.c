/* fuzz_store_record: lock rows as other clients may have written them
 * (DynamoDB JSON) through the conversion to a lock record, the text of the
 * lock file, and back to an item. Whatever the row, the text must be valid
 * UTF-8 with one "name: value" per line, and a record must survive the
 * round trip through an item unchanged.
 * fuzz-src: tests/fuzz/support/ddb_mutator.c
 * fuzz-link: lockfs_fs */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_mutator.h"
#include "render.h"
#include "store_ddb.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

static void check_text(const struct lock_record *r)
{
	struct buf text = BUF_INIT;
	const char *line;

	if (render_lock_text(r, RENDER_HELD, &text))
		abort();
	if (!text_utf8_valid(buf_str(&text), text.len))
		abort();
	for (line = buf_str(&text); *line;) {
		const char *end = strchr(line, '\n');

		if (!end || !memchr(line, ':', (size_t)(end - line)))
			abort(); /* every field on a line of its own */
		line = end + 1;
	}
	buf_fini(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lock_record r, back;
	struct ddb_item *it = NULL, *again = NULL;

	if (ddb_item_from_json((const char *)data, size, &it))
		return 0;
	record_init(&r);
	record_init(&back);
	/* A session item read back: its version fits, its lease in range. */
	{
		struct session_record sr;

		if (!store_ddb_session_of_item(it, 30000, &sr) &&
		    (strlen(sr.rvn) >= sizeof(sr.rvn) || sr.lease_ms < 1 ||
		     sr.lease_ms > 1000000000000LL))
			abort();
	}
	if (!store_ddb_item_to_record(it, 30000, &r)) {
		check_text(&r);
		if (r.session && !record_session_key_ok(r.session))
			abort();
		if (text_utf8_valid(r.owner ? r.owner : "",
				    r.owner ? strlen(r.owner) : 0) &&
		    !store_ddb_record_to_item(&r, &again)) {
			if (store_ddb_item_to_record(again, 30000, &back))
				abort();
			if (strcmp(r.key, back.key) ||
			    strcmp(r.rvn, back.rvn) ||
			    r.lease_ms != back.lease_ms ||
			    r.has_lockfs != back.has_lockfs ||
			    r.fence != back.fence ||
			    /* shared rows: readers and the writer's mark */
			    r.shared != back.shared ||
			    r.n_readers != back.n_readers ||
			    !r.writer_id != !back.writer_id ||
			    /* the session that keeps the row */
			    !r.session != !back.session ||
			    (r.session && strcmp(r.session, back.session)) ||
			    /* empty data is not written: same as none */
			    (r.has_data && r.data_len) !=
				    (back.has_data && back.data_len) ||
			    r.data_len != back.data_len ||
			    (r.data_len &&
			     memcmp(r.data, back.data, r.data_len)))
				abort();
		}
	}
	record_fini(&r);
	record_fini(&back);
	ddb_item_free(it);
	ddb_item_free(again);
	return 0;
}

/* Structure-aware: DynamoDB JSON edited as a tree (ddb_mutator.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
