/* ddb_batch: the parser of BatchGetItem answers on canned JSON, without a
 * network: items in any order matched to the keys asked for, keys without
 * an item -ENOENT, UnprocessedKeys -EAGAIN for those keys only, and every
 * answer that cannot be trusted (malformed, an item or unprocessed key not
 * asked for, a key answered twice, another table) -EPROTO for all; and the
 * operation's name in the metrics. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "ddb.h"
#include "metrics.h"

#define LEN(s) s, strlen(s)
#define NKEYS  4

static struct ddb_item *keys[NKEYS];
static struct ddb_item *items[NKEYS];
static int rcs[NKEYS];

#define KEY(k) "{\"lock_key\":{\"S\":\"" k "\"},\"sort_key\":{\"S\":\"-\"}}"
#define ITEM(k, owner)                                                         \
	"{\"lock_key\":{\"S\":\"" k "\"},\"owner_name\":{\"S\":\"" owner       \
	"\"},\"sort_key\":{\"S\":\"-\"}}"

static int parse(const char *body)
{
	return ddb_parse_batch_get(LEN(body), "locks",
				   (const struct ddb_item *const *)keys, NKEYS,
				   items, rcs);
}

static void check_owner(int i, const char *want)
{
	const char *s;

	CHECK_INT(rcs[i], 0);
	CHECK(items[i]);
	CHECK_INT(ddb_item_get_s(items[i], "owner_name", &s), 0);
	CHECK_STR(s, want);
	CHECK_INT(ddb_item_get_s(items[i], "lock_key", &s), 0);
	CHECK_INT(s[0], 'a' + i);
}

static void free_items(void)
{
	for (int i = 0; i < NKEYS; i++) {
		ddb_item_free(items[i]);
		items[i] = NULL;
	}
}

/* Every key failed with rc, no item left. */
static void check_all(int rc)
{
	for (int i = 0; i < NKEYS; i++) {
		CHECK_INT(rcs[i], rc);
		CHECK(!items[i]);
	}
}

static void check_answers(void)
{
	/* Out of order, two of four found. */
	CHECK_INT(parse("{\"Responses\":{\"locks\":[" ITEM("c", "oc") "," ITEM(
			  "a", "oa") "]},\"UnprocessedKeys\":{}}"),
		  0);
	check_owner(0, "oa");
	CHECK_INT(rcs[1], -ENOENT);
	CHECK(!items[1]);
	check_owner(2, "oc");
	CHECK_INT(rcs[3], -ENOENT);
	free_items();

	/* One key left unread: -EAGAIN for it alone. */
	CHECK_INT(parse("{\"Responses\":{\"locks\":[" ITEM(
			  "d",
			  "od") "]},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
				"[" KEY("b") "],\"ConsistentRead\":true}}}"),
		  0);
	CHECK_INT(rcs[0], -ENOENT);
	CHECK_INT(rcs[1], -EAGAIN);
	CHECK(!items[1]);
	CHECK_INT(rcs[2], -ENOENT);
	check_owner(3, "od");
	free_items();

	/* Nothing found: an empty list, no list for the table, or a null
	 * UnprocessedKeys. */
	CHECK_INT(
		parse("{\"Responses\":{\"locks\":[]},\"UnprocessedKeys\":{}}"),
		0);
	check_all(-ENOENT);
	CHECK_INT(parse("{\"Responses\":{}}"), 0);
	check_all(-ENOENT);
	CHECK_INT(parse("{\"Responses\":{},\"UnprocessedKeys\":null,"
			"\"ConsumedCapacity\":[]}"),
		  0);
	check_all(-ENOENT);
	/* Every key unread. */
	CHECK_INT(parse("{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{"
			"\"Keys\":[" KEY("d") "," KEY("c") "," KEY("b") "," KEY(
				"a") "]}}}"),
		  0);
	check_all(-EAGAIN);
}

static void check_bad_answers(void)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[]",
		"{}", /* no Responses */
		"{\"Responses\":[]}",
		"{\"Responses\":{\"locks\":{}}}",
		"{\"Responses\":{\"locks\":[[]]}}",
		/* an item for a key not asked for */
		"{\"Responses\":{\"locks\":[" ITEM("a", "x") "," ITEM(
			"e", "x") "]}}",
		/* one key answered twice */
		"{\"Responses\":{\"locks\":[" ITEM("a", "x") "," ITEM(
			"a", "y") "]}}",
		/* an item without its sort key, or with another one */
		"{\"Responses\":{\"locks\":[{\"lock_key\":{\"S\":\"a\"}}]}}",
		"{\"Responses\":{\"locks\":[{\"lock_key\":{\"S\":\"a\"},"
		"\"sort_key\":{\"S\":\"lockfs:fence\"}}]}}",
		/* the key's value of another type */
		"{\"Responses\":{\"locks\":[{\"lock_key\":{\"B\":\"YQ==\"},"
		"\"sort_key\":{\"S\":\"-\"}}]}}",
		/* a bad AttributeValue */
		"{\"Responses\":{\"locks\":[{\"lock_key\":{\"S\":5},"
		"\"sort_key\":{\"S\":\"-\"}}]}}",
		/* another table */
		"{\"Responses\":{\"other\":[]}}",
		"{\"Responses\":{\"locks\":[],\"other\":[]}}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"other\":{\"Keys\":"
		"[" KEY("a") "]}}}",
		/* unprocessed keys: not an object, no Keys, not a list, a key
		 * not asked for, one with more attributes, one twice, one also
		 * answered */
		"{\"Responses\":{},\"UnprocessedKeys\":[]}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{}}}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
		"{}}}}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
		"[" KEY("e") "]}}}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
		"[" ITEM("a", "x") "]}}}",
		"{\"Responses\":{},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
		"[" KEY("a") "," KEY("a") "]}}}",
		"{\"Responses\":{\"locks\":[" ITEM(
			"a", "x") "]},\"UnprocessedKeys\":{\"locks\":{\"Keys\":"
				  "[" KEY("a") "]}}}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i]);

		if (rc != -EPROTO)
			fprintf(stderr, "answer %zu: %s\n", i, bad[i]);
		CHECK_INT(rc, -EPROTO);
		check_all(-EPROTO);
	}
}

/* Keys of other shapes: a number key is matched by its text; a key of a
 * type no key can have is refused before any answer is read. */
static void check_keys(void)
{
	struct ddb_item *nkey = ddb_item_new(), *bad = ddb_item_new(), *it;
	const struct ddb_item *one[1] = { nkey };
	int rc;

	CHECK_INT(ddb_item_set_n(nkey, "id", 42), 0);
	CHECK_INT(ddb_parse_batch_get(
			  LEN("{\"Responses\":{\"t\":[{\"id\":{"
			      "\"N\":\"42\"},\"v\":{\"S\":\"x\"}}]}}"),
			  "t", one, 1, &it, &rc),
		  0);
	CHECK_INT(rc, 0);
	CHECK_INT(ddb_item_type(it, "v"), DDB_T_S);
	ddb_item_free(it);
	CHECK_INT(ddb_parse_batch_get(LEN("{\"Responses\":{\"t\":[{\"id\":{"
					  "\"N\":\"43\"}}]}}"),
				      "t", one, 1, &it, &rc),
		  -EPROTO);
	CHECK(!it);
	CHECK_INT(ddb_item_set_bool(bad, "id", true), 0);
	one[0] = bad;
	CHECK_INT(ddb_parse_batch_get(LEN("{\"Responses\":{}}"), "t", one, 1,
				      &it, &rc),
		  -EINVAL);
	CHECK_INT(rc, -EINVAL);
	CHECK_INT(ddb_batch_get_item(NULL, "t", one, 1, true, &it, &rc, NULL),
		  -EINVAL);
	CHECK_INT(rc, -EINVAL);
	ddb_item_free(bad);
	ddb_item_free(nkey);
}

/* The operation has its name, in the metrics too. */
static void check_name(void)
{
	struct metrics m;
	struct buf b = BUF_INIT;

	CHECK_STR(ddb_op_name(DDB_OP_BATCH_GET_ITEM), "BatchGetItem");
	metrics_init(&m);
	ddb_name_metrics(&m);
	metrics_observe(&m, DDB_OP_BATCH_GET_ITEM, 1000, true);
	CHECK_INT(metrics_render(&m, &b), 0);
	CHECK(strstr(buf_str(&b), "\nlockfs_dynamodb_requests_total{operation="
				  "\"BatchGetItem\"} 1\n"));
	buf_fini(&b);
}

int main(int argc, char **argv)
{
	for (int i = 0; i < NKEYS; i++) {
		char k[2] = { (char)('a' + i), '\0' };

		keys[i] = ddb_item_new();
		CHECK(keys[i]);
		CHECK_INT(ddb_item_set_s(keys[i], "lock_key", k), 0);
		CHECK_INT(ddb_item_set_s(keys[i], "sort_key", "-"), 0);
	}
	check_cases(argc, argv);
	CHECK_CASE(check_answers);
	CHECK_CASE(check_bad_answers);
	CHECK_CASE(check_keys);
	CHECK_CASE(check_name);
	for (int i = 0; i < NKEYS; i++)
		ddb_item_free(keys[i]);
	CHECK_DONE();
}
