/* ddb_index: global secondary indexes: their part of CreateTable, adding
 * one to an existing table (UpdateTable), reading their status from
 * DescribeTable and waiting until one is ACTIVE. Any thread (start-up,
 * the --create-index command, tests); no state of its own. */
#include "ddb_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define GSI_POLL_MAX_MS	    2000
#define GSI_WAIT_DEFAULT_MS 600000

bool ddb_gsi_ok(const struct ddb_gsi *gsi)
{
	return gsi && gsi->name && gsi->name[0] && strlen(gsi->name) <= 255 &&
	       ddb_name_ok(gsi->hash) &&
	       (!gsi->range || ddb_name_ok(gsi->range));
}

static bool has_def(const cJSON *defs, const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, defs)
	{
		const cJSON *n =
			cJSON_GetObjectItemCaseSensitive(d, "AttributeName");

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return true;
	}
	return false;
}

/* name as an S attribute in defs (once) and as a key of kind in schema. */
static int add_key(cJSON *defs, cJSON *schema, const char *name,
		   const char *kind)
{
	cJSON *key = cJSON_CreateObject();

	if (!key || ddb_call_add_string(key, "AttributeName", name) ||
	    ddb_call_add_string(key, "KeyType", kind)) {
		cJSON_Delete(key);
		return -ENOMEM;
	}
	cJSON_AddItemToArray(schema, key);
	if (!has_def(defs, name)) {
		cJSON *def = cJSON_CreateObject();

		if (!def || ddb_call_add_string(def, "AttributeName", name) ||
		    ddb_call_add_string(def, "AttributeType", "S")) {
			cJSON_Delete(def);
			return -ENOMEM;
		}
		cJSON_AddItemToArray(defs, def);
	}
	return 0;
}

int ddb_gsi_add_json(cJSON *req, cJSON *defs, const struct ddb_gsi *gsi,
		     bool update)
{
	cJSON *list, *g = cJSON_CreateObject(), *schema, *proj;
	int rc;

	if (!g)
		return -ENOMEM;
	list = cJSON_AddArrayToObject(req,
				      update ? "GlobalSecondaryIndexUpdates"
					     : "GlobalSecondaryIndexes");
	schema = cJSON_AddArrayToObject(g, "KeySchema");
	proj = cJSON_AddObjectToObject(g, "Projection");
	rc = list && schema && proj ? 0 : -ENOMEM;
	if (!rc)
		rc = ddb_call_add_string(g, "IndexName", gsi->name);
	if (!rc)
		rc = add_key(defs, schema, gsi->hash, "HASH");
	if (!rc && gsi->range)
		rc = add_key(defs, schema, gsi->range, "RANGE");
	if (!rc)
		rc = ddb_call_add_string(proj, "ProjectionType", "ALL");
	if (rc || !list) {
		cJSON_Delete(g);
		return rc ? rc : -ENOMEM;
	}
	if (update) {
		cJSON *u = cJSON_CreateObject();

		if (!u) {
			cJSON_Delete(g);
			return -ENOMEM;
		}
		cJSON_AddItemToObject(u, "Create", g);
		g = u;
	}
	cJSON_AddItemToArray(list, g);
	return 0;
}

int ddb_add_gsi(struct ddb *d, const char *table, const struct ddb_gsi *gsi,
		struct ddb_call *call)
{
	struct ddb_call scratch;
	cJSON *req, *defs = NULL;
	int rc;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table || !ddb_gsi_ok(gsi))
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	req = ddb_call_request(table);
	if (req)
		defs = cJSON_AddArrayToObject(req, "AttributeDefinitions");
	rc = defs ? ddb_gsi_add_json(req, defs, gsi, true) : -ENOMEM;
	rc = ddb_call_run(d, DDB_OP_UPDATE_TABLE, req, rc, "out of memory",
			  NULL, NULL, NULL, call);
	/* "Attempting to create an index which already exists" */
	if (rc == -EINVAL && strstr(call->err.message, "already exists"))
		rc = -EEXIST;
	return rc;
}

const char *ddb_gsi_status(const struct ddb_table_info *info, const char *name)
{
	for (int i = 0; i < info->n_gsi && i < DDB_GSI_MAX; i++)
		if (!strcmp(info->gsi[i].name, name))
			return info->gsi[i].status;
	return "";
}

/* ACTIVE and built; describe errors end the wait. */
static int gsi_done(int rc, const struct ddb_table_info *info, void *arg)
{
	const char *name = arg;

	if (rc)
		return rc;
	for (int i = 0; i < info->n_gsi && i < DDB_GSI_MAX; i++)
		if (!strcmp(info->gsi[i].name, name))
			return !strcmp(info->gsi[i].status, "ACTIVE") &&
					       !info->gsi[i].backfilling
				       ? 0
				       : 1;
	return -ENOENT;
}

int ddb_wait_gsi_active(struct ddb *d, const char *table, const char *name,
			int64_t deadline_mono_ms, struct ddb_call *call)
{
	struct ddb_call scratch;
	struct ddb_table_info info;
	int rc;

	call = ddb_call_begin(call, &scratch);
	if (!d || !table || !name)
		return ddb_call_fail(call, -EINVAL, "invalid argument");
	rc = ddb_poll_table(d, table, deadline_mono_ms, GSI_WAIT_DEFAULT_MS,
			    GSI_POLL_MAX_MS, gsi_done, (void *)name, &info,
			    call);
	if (rc == -ENOENT)
		ddb_call_fail(call, -ENOENT, "no such index");
	else if (rc == -ETIMEDOUT)
		snprintf(call->err.message, sizeof(call->err.message),
			 "index %.64s of %.64s is still %.31s", name, table,
			 ddb_gsi_status(&info, name));
	return rc;
}
