/* store_ddb_index: the global secondary index on the parent directory
 * (lockfs_parent): the attribute every listable row lockfs writes carries,
 * the mount's choice between a Query of the index and a Scan of the table,
 * and the listing by Query. The index's state is set before the store is
 * shared; untagged_seen is atomic. Any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

char *store_ddb_parent_of(const char *key)
{
	const char *slash = strrchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) + 1 : 0;
	char *p = malloc(n + 2);

	if (!p)
		return NULL;
	p[0] = '/';
	memcpy(p + 1, key, n);
	p[n + 1] = '\0';
	return p;
}

int store_ddb_index_tag(struct ddb_item *it, const char *key)
{
	char *p = store_ddb_parent_of(key);
	int rc = p ? ddb_item_set_s(it, A_PARENT, p) : -ENOMEM;

	free(p);
	return rc;
}

void store_ddb_set_listing(struct store *s, enum store_ddb_list mode,
			   bool index_active)
{
	struct store_ddb *sd = to_sd(s);

	sd->list_mode = mode;
	sd->index_active = index_active;
}

void store_ddb_set_swept(struct store *s, bool swept)
{
	to_sd(s)->swept = swept;
}

void store_ddb_index_saw(struct store_ddb *sd, const struct ddb_item *it)
{
	const char *sort, *key = "?";

	if (!it || ddb_item_get_s(it, A_SORT, &sort) ||
	    strcmp(sort, RECORD_SORT_LOCK) || ddb_item_type(it, A_PARENT) ||
	    atomic_load(&sd->untagged_seen))
		return;
	if (atomic_exchange(&sd->untagged_seen, true))
		return;
	ddb_item_get_s(it, A_KEY, &key);
	if (sd->list_mode == STORE_DDB_LIST_AUTO && sd->index_active &&
	    !sd->swept)
		log_warn("store",
			 "lock row '%s' has no " A_PARENT
			 " (a python_dynamodb_lock client, or an older lockfs, "
			 "writes the table): listings Scan the table from now "
			 "on; mount with -o sweep=S to have such rows tagged "
			 "(or run lockfs --create-index, and mount with "
			 "-o list=index) to keep the index",
			 key);
}

bool store_ddb_index_lists(struct store_ddb *sd, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!sd->index_active || sd->list_mode == STORE_DDB_LIST_SCAN)
		return false;
	if (n && prefix[n - 1] != '/')
		return false; /* not a directory's listing */
	return sd->list_mode == STORE_DDB_LIST_INDEX || sd->swept ||
	       !atomic_load(&sd->untagged_seen);
}

/* The read of the index under parent p (eventually consistent); vals
 * holds :p and is the caller's to free. */
static int index_read(const char *p, int limit, struct ddb_read *rd,
		      struct ddb_item **vals)
{
	*vals = ddb_item_new();
	*rd = (struct ddb_read){
		.key_condition = A_PARENT " = :p",
		.index = STORE_DDB_INDEX,
		.values = *vals,
		.limit = limit,
	};
	return *vals ? ddb_item_set_s(*vals, ":p", p) : -ENOMEM;
}

/* A hint row's directory, as a listing shows a directory known only
 * through keys below it (a row of kind DIR whose key ends in "/", as
 * store.h allows), when anything is below it still: one Query of one
 * item. */
static int hint_row(struct row_walk *w, const struct ddb_item *it)
{
	struct ddb_page page = { 0 };
	struct ddb_item *vals = NULL;
	struct ddb_read rd;
	struct ddb_call call;
	struct dir_record d;
	struct store_row row = { .kind = STORE_ROW_DIR, .dir = &d };
	const char *key;
	char *p = NULL;
	int rc;

	if (ddb_item_get_s(it, A_KEY, &key) || !*key)
		return 0;
	if (asprintf(&p, "/%s/", key) < 0)
		return -ENOMEM;
	rc = index_read(p, 1, &rd, &vals);
	if (!rc) {
		call_init(&call, w->deadline);
		rc = ddb_query(w->sd->ddb, w->sd->table, &rd, NULL, &page,
			       &call);
	}
	free(p);
	ddb_item_free(vals);
	if (rc || !page.n) {
		ddb_page_fini(&page);
		return rc;
	}
	ddb_page_fini(&page);
	dir_record_init(&d);
	d.mode = 0755;
	if (asprintf(&d.key, "%s/", key) < 0) {
		d.key = NULL;
		return -ENOMEM;
	}
	rc = w->fn(w->arg, &row);
	dir_record_fini(&d);
	return rc;
}

/* One listed item to w->fn; rec and dir are reused from item to item. */
static int walk_item(struct row_walk *w, const struct ddb_item *it,
		     struct lock_record *rec, struct dir_record *dir)
{
	struct store_row row = { 0 };
	const char *sort;
	int rc;

	if (ddb_item_get_s(it, A_SORT, &sort))
		return 0;
	if (w->by_index && !strcmp(sort, SORT_HINT))
		return hint_row(w, it);
	if (!w->by_index)
		store_ddb_index_saw(w->sd, it);
	if (is_dir_item(it)) {
		rc = store_ddb_item_to_dir(it, dir);
		row.kind = STORE_ROW_DIR;
		row.dir = dir;
	} else if (!strcmp(sort, RECORD_SORT_LOCK)) {
		rc = store_ddb_item_to_record(it, w->sd->default_lease_ms, rec);
		row.kind = STORE_ROW_LOCK;
		row.lock = rec;
	} else {
		return 0;
	}
	if (rc == -EPROTO)
		return 0; /* a row without a key string */
	return rc ? rc : w->fn(w->arg, &row);
}

int store_ddb_walk_pages(struct row_walk *w, bool query,
			 const struct ddb_read *rd)
{
	struct store_ddb *sd = w->sd;
	struct ddb_item *start = NULL;
	struct lock_record rec;
	struct dir_record dir;
	struct ddb_call call;
	int pages = 0, rc;

	record_init(&rec);
	dir_record_init(&dir);
	do {
		struct ddb_page page = { 0 };

		call_init(&call, w->deadline);
		rc = query ? ddb_query(sd->ddb, sd->table, rd, start, &page,
				       &call)
			   : ddb_scan(sd->ddb, sd->table, rd, start, &page,
				      &call);
		ddb_item_free(start);
		start = NULL;
		for (size_t i = 0; !rc && i < page.n; i++)
			rc = walk_item(w, page.items[i], &rec, &dir);
		if (!rc && page.last_key) {
			start = page.last_key;
			page.last_key = NULL;
		}
		ddb_page_fini(&page);
	} while (!rc && start && ++pages < 100000);
	ddb_item_free(start);
	record_fini(&rec);
	dir_record_fini(&dir);
	return rc > 0 ? 0 : rc;
}

int store_ddb_index_list(struct store_ddb *sd, const char *prefix,
			 int64_t deadline, store_row_fn fn, void *arg)
{
	struct row_walk w = { sd, deadline, fn, arg, true };
	struct ddb_item *vals = NULL;
	struct ddb_read rd;
	char *p = NULL;
	int rc;

	if (asprintf(&p, "/%s", prefix) < 0)
		return -ENOMEM;
	rc = index_read(p, 0, &rd, &vals);
	if (!rc)
		rc = store_ddb_walk_pages(&w, true, &rd);
	ddb_item_free(vals);
	free(p);
	return rc;
}

int store_ddb_index_state(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, bool *active, char *msg,
			  size_t msglen)
{
	struct ddb_table_info ti;
	struct ddb_call call;
	int rc;

	*active = false;
	call_init(&call, deadline_mono_ms);
	rc = ddb_describe_table(d, table, &ti, &call);
	if (rc) {
		char detail[400];

		awserr_format(&call.err, detail, sizeof(detail));
		snprintf(msg, msglen, "cannot describe the table: %s", detail);
		return rc;
	}
	if (strcmp(ddb_gsi_status(&ti, STORE_DDB_INDEX), "ACTIVE"))
		return 0;
	for (int i = 0; i < ti.n_gsi && i < DDB_GSI_MAX; i++)
		if (!strcmp(ti.gsi[i].name, STORE_DDB_INDEX) &&
		    ti.gsi[i].backfilling)
			return 0;
	/* ACTIVE, and lockfs --create-index finished tagging the rows. */
	rc = store_ddb_index_done(d, table, deadline_mono_ms, false);
	if (rc == -ENOENT)
		return 0;
	if (rc) {
		snprintf(msg, msglen, "cannot read the index's state row");
		return rc;
	}
	*active = true;
	return 0;
}
