/* store_ddb_backfill: lockfs --create-index: adds the index on the parent
 * directory to an existing table, tags the rows written before it (or by
 * python_dynamodb_lock clients since) and writes the hint rows of
 * directories known only through keys below them; and the row that says it
 * finished. The main thread of the command, or of a mount at start-up. */
#include "store_ddb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clk.h"
#include "map.h"

#define REQ_TIMEOUT_MS 60000

struct backfill {
	struct ddb *ddb;
	const char *table;
	FILE *out;
	struct smap ancestors; /* directories with keys below them */
	struct smap marked;    /* directories with a marker */
	struct smap hinted;    /* directories with a hint row */
	long read, tagged, hints, skipped;
	int rc;
	struct aws_error err;
};

static int64_t req_deadline(void)
{
	return clk_sys_mono_ms() + REQ_TIMEOUT_MS;
}

int store_ddb_index_done(struct ddb *d, const char *table, int64_t deadline,
			 bool set)
{
	struct ddb_item *k = key_item(INDEX_STATE_KEY, INDEX_STATE_KEY);
	struct ddb_call call;
	int rc;

	if (!k)
		return -ENOMEM;
	call_init(&call, deadline);
	if (set) {
		rc = ddb_item_set_n(k, A_CREATED, clk_sys_real_ms());
		if (!rc)
			rc = ddb_put_item(d, table, k, NULL, NULL, &call);
	} else {
		rc = ddb_get_item(d, table, k, true, NULL, &call);
	}
	ddb_item_free(k);
	return rc;
}

/* Sets lockfs_parent on the row (key, sort) if it exists and has none:
 * nothing else changes (no version, no expiry), so its holder, lockfs or
 * python, is not disturbed. */
static int tag_row(struct backfill *b, const char *key, const char *sort)
{
	struct ddb_item *k = key_item(key, sort), *vals = ddb_item_new();
	char *p = store_ddb_parent_of(key);
	struct ddb_expr expr = {
		.update = "SET " A_PARENT " = :p",
		.condition = "attribute_exists(" A_KEY
			     ") AND attribute_not_exists(" A_PARENT ")",
		.values = vals,
	};
	struct ddb_call call;
	int rc = k && vals && p ? ddb_item_set_s(vals, ":p", p) : -ENOMEM;

	if (!rc) {
		call_init(&call, req_deadline());
		rc = ddb_update_item(b->ddb, b->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &call);
		if (rc && rc != -ECANCELED)
			b->err = call.err;
	}
	if (!rc)
		b->tagged++;
	if (rc == -ECANCELED)
		rc = 0; /* gone, or tagged meanwhile */
	if (rc == -EINVAL) {
		/* A key the index cannot hold (an index's range key is at
		 * most 1024 bytes; a python client's key may be longer):
		 * left untagged, listed only by a Scan. */
		b->skipped++;
		rc = 0;
	}
	free(p);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

static int note(struct smap *m, const char *key)
{
	return smap_get(m, key) ? 0 : smap_put(m, key, (void *)1);
}

/* Every directory above key ("a" and "a/b" for "a/b/c"). */
static int note_ancestors(struct backfill *b, const char *key)
{
	char *dir = strdup(key);
	int rc = dir ? 0 : -ENOMEM;

	for (size_t i = 1; !rc && key[0] && key[i]; i++) {
		if (key[i] != '/' || key[i - 1] == '/')
			continue;
		dir[i] = '\0';
		rc = note(&b->ancestors, dir);
		dir[i] = '/';
	}
	free(dir);
	return rc;
}

static int scanned_item(struct backfill *b, const struct ddb_item *it)
{
	const char *key, *sort;
	int rc = 0;

	if (ddb_item_get_s(it, A_KEY, &key) ||
	    ddb_item_get_s(it, A_SORT, &sort))
		return 0;
	if (!strcmp(sort, SORT_HINT))
		return note(&b->hinted, key);
	if (strcmp(sort, RECORD_SORT_LOCK) && strcmp(sort, RECORD_SORT_DIR))
		return 0; /* fence counters, the state row: never listed */
	b->read++;
	if (ddb_item_type(it, A_PARENT) != DDB_T_S)
		rc = tag_row(b, key, sort);
	if (!rc && is_dir_item(it))
		rc = note(&b->marked, key);
	if (!rc)
		rc = note_ancestors(b, key);
	return rc;
}

static void write_hint(void *arg, const char *dir, void *value)
{
	struct backfill *b = arg;
	struct ddb_item *it;
	struct ddb_expr cond = { .condition =
					 "attribute_not_exists(" A_KEY ")" };
	struct ddb_call call;
	int rc;

	(void)value;
	if (b->rc || smap_get(&b->marked, dir) || smap_get(&b->hinted, dir))
		return;
	it = key_item(dir, SORT_HINT);
	rc = it ? store_ddb_index_tag(it, dir) : -ENOMEM;
	if (!rc) {
		call_init(&call, req_deadline());
		rc = ddb_put_item(b->ddb, b->table, it, &cond, NULL, &call);
		if (rc && rc != -ECANCELED)
			b->err = call.err;
	}
	if (!rc)
		b->hints++;
	ddb_item_free(it);
	if (rc == -EINVAL)
		b->skipped++; /* too long for the index (see tag_row) */
	b->rc = rc == -ECANCELED || rc == -EINVAL ? 0 : rc;
}

static int backfill(struct backfill *b)
{
	static const char *const names[] = { "#k",   A_KEY,  "#s",
					     A_SORT, "#p",   A_PARENT,
					     "#t",   A_KIND, NULL };
	struct ddb_read rd = {
		.projection = "#k, #s, #p, #t",
		.names = names,
		.consistent = true,
	};
	struct ddb_item *start = NULL;
	struct ddb_call call;
	long pages = 0;
	int rc;

	do {
		struct ddb_page page = { 0 };

		call_init(&call, req_deadline());
		rc = ddb_scan(b->ddb, b->table, &rd, start, &page, &call);
		if (rc)
			b->err = call.err;
		ddb_item_free(start);
		start = NULL;
		for (size_t i = 0; !rc && i < page.n; i++)
			rc = scanned_item(b, page.items[i]);
		if (!rc && page.last_key) {
			start = page.last_key;
			page.last_key = NULL;
		}
		ddb_page_fini(&page);
		if (!rc && b->out && (++pages % 10 == 0 || !start)) {
			fprintf(b->out,
				"lockfs: %s: %ld rows read, %ld tagged\n",
				b->table, b->read, b->tagged);
			fflush(b->out);
		}
	} while (!rc && start);
	ddb_item_free(start);
	if (!rc) {
		smap_each(&b->ancestors, write_hint, b);
		rc = b->rc;
	}
	return rc;
}

/* The backfill with its maps. */
static int run_backfill(struct backfill *b)
{
	int rc;

	smap_init(&b->ancestors);
	smap_init(&b->marked);
	smap_init(&b->hinted);
	rc = backfill(b);
	smap_fini(&b->ancestors);
	smap_fini(&b->marked);
	smap_fini(&b->hinted);
	return rc;
}

int store_ddb_backfill_rows(struct ddb *d, const char *table, FILE *out,
			    long *read, long *tagged, long *hints)
{
	struct backfill b = { .ddb = d, .table = table, .out = out };
	int rc = run_backfill(&b);

	*read = b.read;
	*tagged = b.tagged;
	*hints = b.hints;
	return rc;
}

static void say(char *msg, size_t msglen, const char *what,
		const struct aws_error *err)
{
	char detail[400];

	awserr_format(err, detail, sizeof(detail));
	snprintf(msg, msglen, "%s: %s", what, detail);
}

int store_ddb_create_index(struct ddb *d, const char *table,
			   int64_t deadline_mono_ms, FILE *out, char *msg,
			   size_t msglen)
{
	struct ddb_gsi gsi = { STORE_DDB_INDEX, A_PARENT, A_KEY };
	struct backfill b = { .ddb = d, .table = table, .out = out };
	struct ddb_table_info ti;
	struct ddb_call call;
	int rc;

	call_init(&call, req_deadline());
	rc = ddb_describe_table(d, table, &ti, &call);
	if (rc) {
		say(msg, msglen, "cannot describe the table", &call.err);
		return rc;
	}
	if (!ddb_gsi_status(&ti, STORE_DDB_INDEX)[0]) {
		call_init(&call, req_deadline());
		rc = ddb_add_gsi(d, table, &gsi, &call);
		if (rc && rc != -EEXIST) {
			say(msg, msglen, "cannot add the index", &call.err);
			return rc;
		}
		if (out)
			fprintf(out, "lockfs: %s: index %s added\n", table,
				STORE_DDB_INDEX);
	}
	if (out) {
		fprintf(out, "lockfs: %s: waiting for index %s to be ACTIVE\n",
			table, STORE_DDB_INDEX);
		fflush(out);
	}
	call_init(&call, deadline_mono_ms);
	rc = ddb_wait_gsi_active(d, table, STORE_DDB_INDEX, deadline_mono_ms,
				 &call);
	if (rc) {
		say(msg, msglen,
		    "the index is not ACTIVE yet (run the command again later)",
		    &call.err);
		return rc;
	}
	rc = run_backfill(&b);
	if (rc) {
		say(msg, msglen, "tagging stopped (run the command again)",
		    &b.err);
		return rc;
	}
	rc = store_ddb_index_done(d, table, req_deadline(), true);
	if (rc) {
		snprintf(msg, msglen, "cannot write the index's state row");
		return rc;
	}
	if (out)
		fprintf(out,
			"lockfs: %s: index %s ready: %ld rows read, %ld "
			"tagged, %ld directory hints written; %ld keys too "
			"long for the index (listed only by a Scan)\n",
			table, STORE_DDB_INDEX, b.read, b.tagged, b.hints,
			b.skipped);
	return 0;
}
