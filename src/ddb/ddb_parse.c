/* ddb_parse: the parsers of DynamoDB's answers (GetItem, the Attributes
 * of a write, Query/Scan pages, table and TTL descriptions, the Item of a
 * failed condition), exposed for tests and fuzzing. No shared state. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

static const cJSON *member(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

static const char *member_string(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An optional item member: absent or null gives NULL. */
static int optional_item(const cJSON *obj, const char *name,
			 struct ddb_item **out)
{
	const cJSON *v = member(obj, name);
	struct ddb_item *it = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	rc = ddb_json_to_item(v, &it);
	if (rc)
		return rc;
	if (out)
		*out = it;
	else
		ddb_item_free(it);
	return 0;
}

int ddb_parse_get_item(const char *body, size_t len, struct ddb_item **item_out)
{
	struct ddb_item *it = NULL;
	cJSON *root;
	int rc;

	if (item_out)
		*item_out = NULL;
	rc = ddb_json_parse(body, len, &root);
	if (rc)
		return rc;
	rc = optional_item(root, "Item", &it);
	cJSON_Delete(root);
	if (rc)
		return rc;
	if (!it)
		return -ENOENT;
	if (item_out)
		*item_out = it;
	else
		ddb_item_free(it);
	return 0;
}

/* The item under field of a JSON answer, if there is one. */
static int parse_field_item(const char *body, size_t len, const char *field,
			    struct ddb_item **out)
{
	cJSON *root;
	int rc;

	if (out)
		*out = NULL;
	rc = ddb_json_parse(body, len, &root);
	if (rc)
		return rc;
	rc = optional_item(root, field, out);
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_attributes(const char *body, size_t len, struct ddb_item **out)
{
	return parse_field_item(body, len, "Attributes", out);
}

void ddb_page_fini(struct ddb_page *page)
{
	size_t i;

	if (!page)
		return;
	for (i = 0; i < page->n; i++)
		ddb_item_free(page->items[i]);
	free(page->items);
	ddb_item_free(page->last_key);
	memset(page, 0, sizeof(*page));
}

int ddb_parse_page(const char *body, size_t len, struct ddb_page *page)
{
	const cJSON *items, *m, *scanned;
	cJSON *root;
	size_t count;
	int rc;

	memset(page, 0, sizeof(*page));
	rc = ddb_json_parse(body, len, &root);
	if (rc)
		return rc;
	items = member(root, "Items");
	if (items && !cJSON_IsArray(items)) {
		rc = -EPROTO;
		goto out;
	}
	count = (size_t)cJSON_GetArraySize(items);
	if (count) {
		page->items = calloc(count, sizeof(*page->items));
		if (!page->items) {
			rc = -ENOMEM;
			goto out;
		}
	}
	cJSON_ArrayForEach(m, items)
	{
		rc = ddb_json_to_item(m, &page->items[page->n]);
		if (rc)
			goto out;
		page->n++;
	}
	rc = optional_item(root, "LastEvaluatedKey", &page->last_key);
	if (rc)
		goto out;
	scanned = member(root, "ScannedCount");
	if (cJSON_IsNumber(scanned) && scanned->valuedouble >= 0 &&
	    scanned->valuedouble <= (double)LONG_MAX / 2)
		page->scanned = (long)scanned->valuedouble;
	else if (scanned)
		rc = -EPROTO;
	else
		page->scanned = (long)page->n;
out:
	cJSON_Delete(root);
	if (rc)
		ddb_page_fini(page);
	return rc;
}

static int copy_field(char *out, size_t outlen, const char *s)
{
	return s && !text_copy(out, outlen, s) ? 0 : -EPROTO;
}

/* KeySchema and AttributeDefinitions into the key fields of *out. */
static int parse_key_schema(const cJSON *desc, struct ddb_table_info *out)
{
	const cJSON *schema = member(desc, "KeySchema");
	const cJSON *defs = member(desc, "AttributeDefinitions");
	const cJSON *k, *def;

	if (!cJSON_IsArray(schema) || (defs && !cJSON_IsArray(defs)))
		return -EPROTO;
	cJSON_ArrayForEach(k, schema)
	{
		const char *name = member_string(k, "AttributeName");
		const char *kind = member_string(k, "KeyType");
		char *name_out, *type_out;
		size_t type_len;

		if (!name || !kind)
			return -EPROTO;
		if (!strcmp(kind, "HASH")) {
			name_out = out->hash_name;
			type_out = out->hash_type;
			type_len = sizeof(out->hash_type);
		} else if (!strcmp(kind, "RANGE")) {
			name_out = out->range_name;
			type_out = out->range_type;
			type_len = sizeof(out->range_type);
		} else {
			return -EPROTO;
		}
		if (copy_field(name_out, sizeof(out->hash_name), name))
			return -EPROTO;
		cJSON_ArrayForEach(def, defs)
		{
			const char *dn = member_string(def, "AttributeName");
			const char *dt = member_string(def, "AttributeType");

			if (dn && dt && !strcmp(dn, name) &&
			    copy_field(type_out, type_len, dt))
				return -EPROTO;
		}
	}
	return out->hash_name[0] ? 0 : -EPROTO;
}

/* GlobalSecondaryIndexes: name, status and backfilling of the first
 * DDB_GSI_MAX. */
static int parse_gsis(const cJSON *desc, struct ddb_table_info *out)
{
	const cJSON *gsis = member(desc, "GlobalSecondaryIndexes"), *g;

	if (!gsis)
		return 0;
	if (!cJSON_IsArray(gsis))
		return -EPROTO;
	cJSON_ArrayForEach(g, gsis)
	{
		struct ddb_gsi_info *gi;
		const cJSON *bf = member(g, "Backfilling");

		if (out->n_gsi >= DDB_GSI_MAX)
			break;
		gi = &out->gsi[out->n_gsi];
		if (copy_field(gi->name, sizeof(gi->name),
			       member_string(g, "IndexName")) ||
		    copy_field(gi->status, sizeof(gi->status),
			       member_string(g, "IndexStatus")))
			return -EPROTO;
		if (bf && !cJSON_IsBool(bf))
			return -EPROTO;
		gi->backfilling = bf && cJSON_IsTrue(bf);
		out->n_gsi++;
	}
	return 0;
}

int ddb_parse_table(const char *body, size_t len, struct ddb_table_info *out)
{
	struct ddb_table_info info;
	const cJSON *desc, *count;
	cJSON *root;
	int rc;

	memset(&info, 0, sizeof(info));
	rc = ddb_json_parse(body, len, &root);
	if (rc)
		return rc;
	desc = member(root, "Table");
	if (!desc)
		desc = member(root, "TableDescription");
	rc = -EPROTO;
	if (!cJSON_IsObject(desc) ||
	    copy_field(info.status, sizeof(info.status),
		       member_string(desc, "TableStatus")) ||
	    parse_key_schema(desc, &info))
		goto out;
	if (parse_gsis(desc, &info))
		goto out;
	count = member(desc, "ItemCount");
	if (count && (!cJSON_IsNumber(count) || count->valuedouble < 0 ||
		      count->valuedouble > 9e15))
		goto out;
	info.item_count = count ? (long long)count->valuedouble : 0;
	rc = 0;
	if (out)
		*out = info;
out:
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_ttl(const char *body, size_t len, char *status, size_t status_len,
		  char *attr, size_t attr_len)
{
	const cJSON *desc;
	const char *st, *name;
	cJSON *root;
	int rc;

	rc = ddb_json_parse(body, len, &root);
	if (rc)
		return rc;
	desc = member(root, "TimeToLiveDescription");
	st = member_string(desc, "TimeToLiveStatus");
	name = member_string(desc, "AttributeName");
	rc = -EPROTO;
	if (!cJSON_IsObject(desc) || !st)
		goto out;
	if (status && status_len && copy_field(status, status_len, st))
		goto out;
	if (attr && attr_len && copy_field(attr, attr_len, name ? name : ""))
		goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int ddb_parse_condition_failure(const char *body, size_t len,
				struct ddb_item **old_out)
{
	return parse_field_item(body, len, "Item", old_out);
}
