/* ddb_mutator: structure-aware mutations of DynamoDB JSON (see
 * ddb_mutator.h). Called by libFuzzer's single mutation thread. */
#include "ddb_mutator.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 1024

static const char *const tags[] = { "S", "N", "B",  "BOOL", "NULL",
				    "M", "L", "SS", "NS",   "BS" };

static const char *const numbers[] = {
	"0",
	"-1",
	"1",
	"9223372036854775807",
	"9223372036854775808",
	"-9223372036854775808",
	"-9223372036854775809",
	"253402300799999",
	"253402300800000",
	"253402300799",
	"253402300800",
	"4294967294",
	"4294967295",
	"2147483647",
	"2147483648",
	"4095",
	"4096",
	"1E3",
	"10.0",
	"1e19",
	"1e125",
	"9.9999999999999999999999999999999999999E+125",
	"1E-130",
	"1E-131",
	"0.0005",
	"0.0004",
	"1000000000",
	"1000000001",
	"0.5",
	"-0",
	"00",
	"1.",
	".5",
	"+1",
	"12345678901234567890123456789012345678",
	"123456789012345678901234567890123456789",
	"1e",
	"NaN",
	"Infinity",
	"0x10",
};

static const char *const strings[] = {
	"-",
	"lockfs:dir",
	"lockfs:fence",
	"",
	"a",
	"a/b",
	"b/c",
	"d",
	"\xe2\x80\xae"
	"evil",
	"\x1b[2J",
	"line\nbreak",
	"AAAA",
	"AA==",
	"====",
	"ConditionalCheckFailed",
	"TransactionConflict",
	"None",
	"ACTIVE",
	"ENABLED",
	"expiry_time",
	"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
	"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
	"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
	"Transaction cancelled, please refer cancellation reasons for "
	"specific reasons [ConditionalCheckFailed, None]",
};

static const char *const names[] = {
	"lock_key",
	"sort_key",
	"owner_name",
	"lease_duration",
	"record_version_number",
	"expiry_time",
	"lockfs_host",
	"lockfs_pid",
	"lockfs_uid",
	"lockfs_gid",
	"lockfs_mode",
	"lockfs_cmd",
	"lockfs_acquired",
	"lockfs_heartbeat",
	"lockfs_fence",
	"lockfs_data",
	"lockfs_created",
	"lockfs_counter",
	"Item",
	"Items",
	"Attributes",
	"LastEvaluatedKey",
	"Count",
	"ScannedCount",
	"__type",
	"message",
	"Message",
	"CancellationReasons",
	"Code",
	"Table",
	"TableDescription",
	"TableStatus",
	"KeySchema",
	"AttributeDefinitions",
	"ItemCount",
	"TimeToLiveDescription",
	"TimeToLiveStatus",
	"AttributeName",
	"Responses",
	"UnprocessedKeys",
	"Keys",
	"locks",
};

#define PICK(rng, arr) (arr[next(rng) % (sizeof(arr) / sizeof(arr[0]))])

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct walk {
	cJSON *node[MAX_NODES];
	cJSON *parent[MAX_NODES];
	size_t n;
};

static void collect(struct walk *w, cJSON *node, cJSON *parent)
{
	cJSON *c;

	if (w->n >= MAX_NODES)
		return;
	w->node[w->n] = node;
	w->parent[w->n++] = parent;
	for (c = node->child; c; c = c->next)
		collect(w, c, node);
}

static bool is_tag(const char *s)
{
	size_t i;

	for (i = 0; s && i < sizeof(tags) / sizeof(tags[0]); i++)
		if (!strcmp(s, tags[i]))
			return true;
	return false;
}

static cJSON *typed_value(uint64_t *rng)
{
	cJSON *v = cJSON_CreateObject();

	if (!v)
		return NULL;
	switch (next(rng) % 4) {
	case 0:
	case 1:
		cJSON_AddStringToObject(v, "N", PICK(rng, numbers));
		break;
	case 2:
		cJSON_AddStringToObject(v, "S", PICK(rng, strings));
		break;
	default:
		cJSON_AddStringToObject(v, PICK(rng, tags), PICK(rng, strings));
		break;
	}
	return v;
}

static void set_string(cJSON *node, const char *s)
{
	cJSON_SetValuestring(node, s);
}

static void rename_item(cJSON *node, const char *name)
{
	char *copy = strdup(name);

	if (!copy)
		return;
	if (!(node->type & cJSON_StringIsConst))
		cJSON_free(node->string);
	node->type &= ~cJSON_StringIsConst;
	node->string = copy;
}

/* One edit somewhere in the tree. */
static void edit(cJSON *root, uint64_t *rng)
{
	struct walk w = { .n = 0 };
	cJSON *node, *parent, *dup;
	size_t i;

	collect(&w, root, NULL);
	i = next(rng) % w.n;
	node = w.node[i];
	parent = w.parent[i];
	switch (next(rng) % 9) {
	case 0: /* retag an AttributeValue */
		if (node->string && is_tag(node->string))
			rename_item(node, PICK(rng, tags));
		else if (cJSON_IsObject(node) && node->child &&
			 is_tag(node->child->string))
			rename_item(node->child, PICK(rng, tags));
		break;
	case 1: /* a boundary number */
		if (cJSON_IsString(node))
			set_string(node, PICK(rng, numbers));
		else if (cJSON_IsNumber(node))
			cJSON_SetNumberValue(node, (double)(int64_t)next(rng) /
							   (1 + next(rng) % 7));
		break;
	case 2: /* an interesting string */
		if (cJSON_IsString(node))
			set_string(node, PICK(rng, strings));
		break;
	case 3: /* an attribute lockfs reads, with a typed value */
		if (cJSON_IsObject(node)) {
			cJSON *v = typed_value(rng);

			if (v)
				cJSON_AddItemToObject(node, PICK(rng, names),
						      v);
		}
		break;
	case 4: /* rename a member */
		if (node->string)
			rename_item(node, PICK(rng, names));
		break;
	case 5: /* duplicate a member or an element (same name twice) */
		if (parent && (dup = cJSON_Duplicate(node, 1))) {
			if (cJSON_IsObject(parent) && node->string)
				cJSON_AddItemToObject(parent, node->string,
						      dup);
			else if (cJSON_IsArray(parent))
				cJSON_AddItemToArray(parent, dup);
			else
				cJSON_Delete(dup);
		}
		break;
	case 6: /* drop it */
		if (parent)
			cJSON_Delete(cJSON_DetachItemViaPointer(parent, node));
		break;
	case 7: /* a whole item from another place, wrapped in a list */
		if (parent && cJSON_IsObject(node) &&
		    (dup = cJSON_Duplicate(node, 1))) {
			cJSON *arr = cJSON_CreateArray();

			if (arr) {
				cJSON_AddItemToArray(arr, dup);
				cJSON_AddItemToObject(root, "Items", arr);
			} else {
				cJSON_Delete(dup);
			}
		}
		break;
	default: /* change the kind of a scalar */
		if (parent && node->string && !cJSON_IsObject(node) &&
		    !cJSON_IsArray(node)) {
			cJSON *v = next(rng) & 1 ? cJSON_CreateTrue()
						 : cJSON_CreateNumber(1e300);

			if (v && !(v->string = strdup(node->string)))
				cJSON_Delete(v);
			else if (v)
				cJSON_ReplaceItemViaPointer(parent, node, v);
		}
		break;
	}
}

/* The JSON document of part [start, end) of data, from its first '{'. */
static size_t mutate_part(uint8_t *data, size_t size, size_t max_size,
			  size_t start, size_t end, uint64_t *rng)
{
	const uint8_t *brace = memchr(data + start, '{', end - start);
	size_t js = brace ? (size_t)(brace - data) : end, n_out, rounds, r;
	cJSON *root;
	char *out;

	if (js >= end)
		return 0;
	root = cJSON_ParseWithLength((const char *)data + js, end - js);
	if (!root)
		return 0;
	rounds = 1 + next(rng) % 3;
	for (r = 0; r < rounds; r++)
		edit(root, rng);
	out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!out)
		return 0;
	n_out = strlen(out);
	if (js + n_out + (size - end) > max_size) {
		cJSON_free(out);
		return 0;
	}
	memmove(data + js + n_out, data + end, size - end);
	memcpy(data + js, out, n_out);
	cJSON_free(out);
	return js + n_out + (size - end);
}

size_t ddb_mutate(uint8_t *data, size_t size, size_t max_size,
		  unsigned int seed)
{
	static const char sep[] = "\n--\n";
	size_t starts[64], ends[64], n = 0, p = 0, out = 0, k;
	uint64_t rng = ((uint64_t)seed << 1) | 1;

	/* One time in four, plain byte mutations (they find syntax bugs). */
	if (!(next(&rng) & 3) || !size)
		return LLVMFuzzerMutate(data, size, max_size);
	while (n < 64) {
		const uint8_t *hit = memmem(data + p, size - p, sep, 4);

		starts[n] = p;
		ends[n++] = hit ? (size_t)(hit - data) : size;
		if (!hit)
			break;
		p = (size_t)(hit - data) + 4;
	}
	k = next(&rng) % n;
	out = mutate_part(data, size, max_size, starts[k], ends[k], &rng);
	return out ? out : LLVMFuzzerMutate(data, size, max_size);
}
