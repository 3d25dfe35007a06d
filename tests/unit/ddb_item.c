/* ddb_item: the AttributeValue item model (setters, getters, numbers,
 * base64, JSON both ways) and the parsers of every DynamoDB answer shape,
 * without a network. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddb.h"

#define LEN(s) s, strlen(s)

static void check_types(void)
{
	struct ddb_item *it = ddb_item_new();
	const char *s;
	int64_t n;
	bool b;
	void *data;
	size_t len;

	CHECK(it);
	CHECK_INT(ddb_item_count(it), 0);
	CHECK_INT(ddb_item_set_s(it, "owner_name", "host:1"), 0);
	CHECK_INT(ddb_item_set_n(it, "lease_duration", 30), 0);
	CHECK_INT(ddb_item_set_bool(it, "flag", true), 0);
	CHECK_INT(ddb_item_set_b(it, "blob", "a\0b", 3), 0);
	CHECK_INT(ddb_item_count(it), 4);
	CHECK_INT(ddb_item_type(it, "owner_name"), DDB_T_S);
	CHECK_INT(ddb_item_type(it, "lease_duration"), DDB_T_N);
	CHECK_INT(ddb_item_type(it, "blob"), DDB_T_B);
	CHECK_INT(ddb_item_type(it, "flag"), DDB_T_BOOL);
	CHECK_INT(ddb_item_type(it, "nope"), DDB_T_ABSENT);

	CHECK_INT(ddb_item_get_s(it, "owner_name", &s), 0);
	CHECK_STR(s, "host:1");
	CHECK_INT(ddb_item_get_n(it, "lease_duration", &n), 0);
	CHECK_INT(n, 30);
	CHECK_INT(ddb_item_get_n_text(it, "lease_duration", &s), 0);
	CHECK_STR(s, "30");
	CHECK_INT(ddb_item_get_bool(it, "flag", &b), 0);
	CHECK(b);
	CHECK_INT(ddb_item_get_b(it, "blob", &data, &len), 0);
	CHECK_INT(len, 3);
	CHECK(!memcmp(data, "a\0b", 4)); /* NUL after the bytes too */
	free(data);

	/* Wrong type, absent. */
	CHECK_INT(ddb_item_get_s(it, "lease_duration", &s), -EINVAL);
	CHECK_INT(ddb_item_get_n(it, "owner_name", &n), -EINVAL);
	CHECK_INT(ddb_item_get_b(it, "flag", &data, &len), -EINVAL);
	CHECK_INT(ddb_item_get_bool(it, "blob", &b), -EINVAL);
	CHECK_INT(ddb_item_get_s(it, "nope", &s), -ENOENT);
	CHECK_INT(ddb_item_get_n(it, "nope", &n), -ENOENT);

	/* Replace keeps one attribute; a new type replaces the old one. */
	CHECK_INT(ddb_item_set_s(it, "owner_name", "other"), 0);
	CHECK_INT(ddb_item_count(it), 4);
	CHECK_INT(ddb_item_get_s(it, "owner_name", &s), 0);
	CHECK_STR(s, "other");
	CHECK_INT(ddb_item_set_n(it, "owner_name", -5), 0);
	CHECK_INT(ddb_item_type(it, "owner_name"), DDB_T_N);
	CHECK_INT(ddb_item_count(it), 4);
	ddb_item_remove(it, "owner_name");
	ddb_item_remove(it, "owner_name");
	CHECK_INT(ddb_item_count(it), 3);
	CHECK_INT(ddb_item_type(it, "owner_name"), DDB_T_ABSENT);

	/* Bad input. */
	CHECK_INT(ddb_item_set_s(it, "x", "\xff"), -EINVAL);
	CHECK_INT(ddb_item_set_s_len(it, "x", "a\0b", 3), -EINVAL);
	CHECK_INT(ddb_item_set_s_len(it, "x", "abc", 2), 0);
	CHECK_INT(ddb_item_get_s(it, "x", &s), 0);
	CHECK_STR(s, "ab");
	CHECK_INT(ddb_item_set_s(it, "", "v"), -EINVAL);
	CHECK_INT(ddb_item_set_s(it, NULL, "v"), -EINVAL);
	CHECK_INT(ddb_item_set_s(it, "y", NULL), -EINVAL);
	CHECK_INT(ddb_item_set_s(it, "\xc0\x80", "v"), -EINVAL);
	CHECK_INT(ddb_item_set_s(it, "empty", ""), 0);
	CHECK_INT(ddb_item_set_b(it, "nob", NULL, 0), 0);
	CHECK_INT(ddb_item_get_b(it, "nob", &data, &len), 0);
	CHECK_INT(len, 0);
	free(data);
	CHECK_INT(ddb_item_set_b(it, "bad", NULL, 1), -EINVAL);

	/* dup is deep. */
	struct ddb_item *copy = ddb_item_dup(it);

	CHECK(copy);
	ddb_item_set_s(it, "x", "changed");
	CHECK_INT(ddb_item_get_s(copy, "x", &s), 0);
	CHECK_STR(s, "ab");
	CHECK_INT(ddb_item_count(copy), ddb_item_count(it));
	ddb_item_free(copy);
	ddb_item_free(it);
	ddb_item_free(NULL);
	CHECK(!ddb_item_dup(NULL));
	CHECK_INT(ddb_item_count(NULL), 0);
}

static void check_numbers(void)
{
	static const char *const good[] = {
		"0",
		"-0",
		"12",
		"-12",
		"+7",
		"3.14",
		"-0.5",
		".5",
		"5.",
		"1e3",
		"1E-130",
		"-1E-130",
		"9.9999999999999999999999999999999999999E+125",
		"12345678901234567890123456789012345678",      /* 38 digits */
		"1234567890123456789012345678901234567800000", /* zeros trail */
		"0.000000000000000000000000000000000000001",
		"000123",
		"1e-0",
		"0e999",
		"100E-132",
	};
	static const char *const bad[] = {
		"",
		"-",
		"+",
		".",
		"abc",
		"1e",
		"1e+",
		"--1",
		"1..2",
		"0x10",
		" 1",
		"1 ",
		"1,5",
		"NaN",
		"Infinity",
		"1E126",
		"1E-131",
		"123456789012345678901234567890123456789", /* 39 digits */
		"1.00000000000000000000000000000000000001",
		"1e9999999",
		"10E125",
	};
	struct {
		const char *text;
		int rc;
		int64_t value;
	} ints[] = {
		{ "0", 0, 0 },
		{ "-0", 0, 0 },
		{ "1E3", 0, 1000 },
		{ "10.0", 0, 10 },
		{ "1.5E1", 0, 15 },
		{ "-42", 0, -42 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "-9223372036854775808", 0, INT64_MIN },
		{ "9223372036854775808", -EINVAL, 0 },
		{ "-9223372036854775809", -EINVAL, 0 },
		{ "1e19", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "0.1", -EINVAL, 0 },
		{ "1E-130", -EINVAL, 0 },
	};
	struct ddb_item *it = ddb_item_new();
	int64_t v;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (ddb_item_set_n_text(it, "n", good[i]))
			fprintf(stderr, "rejected %s\n", good[i]);
		CHECK_INT(ddb_item_set_n_text(it, "n", good[i]), 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!ddb_item_set_n_text(it, "n", bad[i]))
			fprintf(stderr, "accepted %s\n", bad[i]);
		CHECK_INT(ddb_item_set_n_text(it, "n", bad[i]), -EINVAL);
	}
	CHECK_INT(ddb_item_set_n_text(it, "n", NULL), -EINVAL);
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		CHECK_INT(ddb_item_set_n_text(it, "n", ints[i].text), 0);
		v = 12345;
		CHECK_INT(ddb_item_get_n(it, "n", &v), ints[i].rc);
		if (!ints[i].rc)
			CHECK_INT(v, ints[i].value);
	}
	CHECK_INT(ddb_item_set_n(it, "n", INT64_MIN), 0);
	CHECK_INT(ddb_item_get_n(it, "n", &v), 0);
	CHECK_INT(v, INT64_MIN);
	ddb_item_free(it);
}

static void check_json(void)
{
	static const struct {
		const char *raw;
		const char *b64;
	} vec[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	struct ddb_item *it = ddb_item_new(), *back;
	char *json, want[128];
	unsigned char bytes[320];
	void *data;
	size_t i, len;
	const char *s;

	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		ddb_item_free(it);
		it = ddb_item_new();
		CHECK_INT(
			ddb_item_set_b(it, "b", vec[i].raw, strlen(vec[i].raw)),
			0);
		json = ddb_item_to_json(it);
		snprintf(want, sizeof(want), "{\"b\":{\"B\":\"%s\"}}",
			 vec[i].b64);
		CHECK_STR(json, want);
		CHECK_INT(ddb_item_from_json(json, strlen(json), &back), 0);
		CHECK_INT(ddb_item_get_b(back, "b", &data, &len), 0);
		CHECK_INT(len, strlen(vec[i].raw));
		CHECK(!memcmp(data, vec[i].raw, len));
		free(data);
		ddb_item_free(back);
		free(json);
	}
	/* Every byte value and every length mod 3 round-trip. */
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 7 + 3);
	for (len = 0; len < 40; len++) {
		size_t got;

		ddb_item_free(it);
		it = ddb_item_new();
		CHECK_INT(ddb_item_set_b(it, "b", bytes + len, len * 7), 0);
		json = ddb_item_to_json(it);
		CHECK_INT(ddb_item_from_json(json, strlen(json), &back), 0);
		CHECK_INT(ddb_item_get_b(back, "b", &data, &got), 0);
		CHECK_INT(got, len * 7);
		CHECK(!memcmp(data, bytes + len, got));
		free(data);
		ddb_item_free(back);
		free(json);
	}
	ddb_item_free(it);

	/* Every type, names sorted on output, other types kept verbatim. */
	const char *in = "{\"z\":{\"S\":\"h\\u00e9\"},\"n\":{\"N\":\"1.50\"},"
			 "\"l\":{\"L\":[{\"S\":\"x\"},{\"N\":\"1\"}]},"
			 "\"nul\":{\"NULL\":true},\"b\":{\"BOOL\":false},"
			 "\"ss\":{\"SS\":[\"a\",\"b\"]},\"m\":{\"M\":{}}}";
	CHECK_INT(ddb_item_from_json(LEN(in), &it), 0);
	CHECK_INT(ddb_item_count(it), 7);
	CHECK_INT(ddb_item_type(it, "l"), DDB_T_OTHER);
	CHECK_INT(ddb_item_type(it, "ss"), DDB_T_OTHER);
	CHECK_INT(ddb_item_type(it, "m"), DDB_T_OTHER);
	CHECK_INT(ddb_item_type(it, "nul"), DDB_T_NULL);
	CHECK_INT(ddb_item_type(it, "b"), DDB_T_BOOL);
	CHECK_INT(ddb_item_get_s(it, "z", &s), 0);
	CHECK_STR(s, "h\xc3\xa9");
	CHECK_INT(ddb_item_get_n_text(it, "n", &s), 0);
	CHECK_STR(s, "1.50");
	json = ddb_item_to_json(it);
	CHECK_STR(json, "{\"b\":{\"BOOL\":false},"
			"\"l\":{\"L\":[{\"S\":\"x\"},{\"N\":\"1\"}]},"
			"\"m\":{\"M\":{}},\"n\":{\"N\":\"1.50\"},"
			"\"nul\":{\"NULL\":true},\"ss\":{\"SS\":[\"a\",\"b\"]},"
			"\"z\":{\"S\":\"h\xc3\xa9\"}}");
	CHECK_INT(ddb_item_from_json(json, strlen(json), &back), 0);
	{
		char *again = ddb_item_to_json(back);

		CHECK_STR(again, json);
		free(again);
	}
	/* dup keeps other types too. */
	{
		struct ddb_item *copy = ddb_item_dup(back);
		char *again = ddb_item_to_json(copy);

		CHECK_STR(again, json);
		free(again);
		ddb_item_free(copy);
	}
	ddb_item_free(back);
	free(json);
	ddb_item_free(it);

	/* A repeated name keeps its last value. */
	in = "{\"a\":{\"S\":\"1\"},\"b\":{\"S\":\"x\"},\"a\":{\"S\":\"2\"}}";
	CHECK_INT(ddb_item_from_json(LEN(in), &it), 0);
	CHECK_INT(ddb_item_count(it), 2);
	CHECK_INT(ddb_item_get_s(it, "a", &s), 0);
	CHECK_STR(s, "2");
	ddb_item_free(it);

	/* Only len bytes are read. */
	in = "{\"a\":{\"S\":\"1\"}}GARBAGE";
	CHECK_INT(ddb_item_from_json(in, strlen(in) - 7, &it), 0);
	ddb_item_free(it);
	CHECK_INT(ddb_item_from_json("{}", 2, &it), 0);
	CHECK_INT(ddb_item_count(it), 0);
	ddb_item_free(it);

	static const char *const malformed[] = {
		"",
		"[]",
		"\"a\"",
		"{",
		"{\"a\":1}",
		"{\"a\":{}}",
		"{\"a\":{\"S\":\"x\",\"N\":\"1\"}}",
		"{\"a\":{\"S\":1}}",
		"{\"a\":{\"N\":\"x\"}}",
		"{\"a\":{\"N\":\"1E200\"}}",
		"{\"a\":{\"B\":\"Zg=\"}}",
		"{\"a\":{\"B\":\"Z===\"}}",
		"{\"a\":{\"B\":\"Zh==\"}}",
		"{\"a\":{\"B\":\"Zm9v!A==\"}}",
		"{\"a\":{\"B\":\"Zg==Zg==\"}}",
		"{\"a\":{\"B\":\"=Zg=\"}}",
		"{\"a\":{\"BOOL\":\"true\"}}",
		"{\"a\":{\"NULL\":false}}",
		"{\"\":{\"S\":\"x\"}}",
		"{\"a\":{\"S\":\"\\udc00\"}}",
		"{\"a\":{\"S\":\"x\"}",
		"{\"a\":[{\"S\":\"x\"}]}",
	};
	for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		it = (struct ddb_item *)1;
		if (ddb_item_from_json(LEN(malformed[i]), &it) != -EPROTO)
			fprintf(stderr, "accepted %s\n", malformed[i]);
		CHECK_INT(ddb_item_from_json(LEN(malformed[i]), &it), -EPROTO);
		CHECK(!it);
	}
	CHECK_INT(ddb_item_from_json(NULL, 0, &it), -EPROTO);
}

static void check_parsers(void)
{
	struct ddb_item *it;
	struct ddb_page page;
	struct ddb_table_info info;
	char status[32], attr[64];
	const char *s;

	const char *get = "{\"Item\":{\"lock_key\":{\"S\":\"k\"}}}";
	CHECK_INT(ddb_parse_get_item(LEN(get), &it), 0);
	CHECK_INT(ddb_item_get_s(it, "lock_key", &s), 0);
	CHECK_STR(s, "k");
	ddb_item_free(it);
	CHECK_INT(ddb_parse_get_item(LEN(get), NULL), 0);
	CHECK_INT(ddb_parse_get_item(LEN("{}"), &it), -ENOENT);
	CHECK(!it);
	CHECK_INT(ddb_parse_get_item(LEN("{\"Item\":[]}"), &it), -EPROTO);
	CHECK_INT(ddb_parse_get_item(LEN("{\"Item\":{\"a\":{\"S\":3}}}"), &it),
		  -EPROTO);
	CHECK_INT(ddb_parse_get_item(LEN("nope"), &it), -EPROTO);

	CHECK_INT(ddb_parse_attributes(LEN("{}"), &it), 0);
	CHECK(!it);
	CHECK_INT(ddb_parse_attributes(
			  LEN("{\"Attributes\":{\"v\":{\"N\":\"2\"}}}"), &it),
		  0);
	CHECK_INT(ddb_item_count(it), 1);
	ddb_item_free(it);
	CHECK_INT(ddb_parse_attributes(LEN("{\"Attributes\":\"x\"}"), &it),
		  -EPROTO);

	const char *pg =
		"{\"Items\":[{\"k\":{\"S\":\"1\"}},{\"k\":{\"S\":\"2\"}}],"
		"\"Count\":2,\"ScannedCount\":5,"
		"\"LastEvaluatedKey\":{\"k\":{\"S\":\"2\"}}}";
	CHECK_INT(ddb_parse_page(LEN(pg), &page), 0);
	CHECK_INT(page.n, 2);
	CHECK_INT(page.scanned, 5);
	CHECK(page.last_key);
	CHECK_INT(ddb_item_get_s(page.items[1], "k", &s), 0);
	CHECK_STR(s, "2");
	ddb_page_fini(&page);
	CHECK(!page.items && !page.n && !page.last_key);
	CHECK_INT(ddb_parse_page(LEN("{\"Items\":[],\"Count\":0}"), &page), 0);
	CHECK_INT(page.n, 0);
	CHECK(!page.last_key);
	ddb_page_fini(&page);
	CHECK_INT(ddb_parse_page(LEN("{\"Items\":[{\"k\":{\"S\":\"1\"}},7]}"),
				 &page),
		  -EPROTO);
	CHECK(!page.items && !page.n);
	CHECK_INT(ddb_parse_page(LEN("{\"Items\":{}}"), &page), -EPROTO);
	CHECK_INT(ddb_parse_page(LEN("{\"Items\":[],\"ScannedCount\":\"1\"}"),
				 &page),
		  -EPROTO);
	CHECK_INT(ddb_parse_page(LEN("{\"Items\":[],\"LastEvaluatedKey\":1}"),
				 &page),
		  -EPROTO);

	const char *tab =
		"{\"Table\":{\"TableName\":\"t\",\"TableStatus\":\"ACTIVE\","
		"\"KeySchema\":[{\"AttributeName\":\"lock_key\",\"KeyType\":"
		"\"HASH\"},"
		"{\"AttributeName\":\"sort_key\",\"KeyType\":\"RANGE\"}],"
		"\"AttributeDefinitions\":[{\"AttributeName\":\"sort_key\","
		"\"AttributeType\":\"S\"},{\"AttributeName\":\"lock_key\","
		"\"AttributeType\":\"S\"}],\"ItemCount\":42}}";
	CHECK_INT(ddb_parse_table(LEN(tab), &info), 0);
	CHECK_STR(info.status, "ACTIVE");
	CHECK_STR(info.hash_name, "lock_key");
	CHECK_STR(info.hash_type, "S");
	CHECK_STR(info.range_name, "sort_key");
	CHECK_STR(info.range_type, "S");
	CHECK_INT(info.item_count, 42);
	const char *created =
		"{\"TableDescription\":{\"TableStatus\":\"CREATING\","
		"\"KeySchema\":[{\"AttributeName\":\"h\",\"KeyType\":\"HASH\"}]"
		","
		"\"AttributeDefinitions\":[{\"AttributeName\":\"h\","
		"\"AttributeType\":\"N\"}]}}";
	CHECK_INT(ddb_parse_table(LEN(created), &info), 0);
	CHECK_STR(info.status, "CREATING");
	CHECK_STR(info.hash_type, "N");
	CHECK_STR(info.range_name, "");
	CHECK_INT(info.item_count, 0);
	CHECK_INT(
		ddb_parse_table(LEN("{\"Table\":{\"TableStatus\":\"ACTIVE\"}}"),
				&info),
		-EPROTO);
	CHECK_INT(ddb_parse_table(LEN("{\"Table\":{\"KeySchema\":[]}}"), &info),
		  -EPROTO);

	const char *ttl = "{\"TimeToLiveDescription\":{\"AttributeName\":"
			  "\"expiry_time\",\"TimeToLiveStatus\":\"ENABLED\"}}";
	CHECK_INT(ddb_parse_ttl(LEN(ttl), status, sizeof(status), attr,
				sizeof(attr)),
		  0);
	CHECK_STR(status, "ENABLED");
	CHECK_STR(attr, "expiry_time");
	CHECK_INT(ddb_parse_ttl(LEN("{\"TimeToLiveDescription\":"
				    "{\"TimeToLiveStatus\":\"DISABLED\"}}"),
				status, sizeof(status), attr, sizeof(attr)),
		  0);
	CHECK_STR(status, "DISABLED");
	CHECK_STR(attr, "");
	CHECK_INT(ddb_parse_ttl(LEN("{}"), status, sizeof(status), NULL, 0),
		  -EPROTO);

	/* Condition failures, both spellings of the message. */
	const char *ccf = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
			  "ConditionalCheckFailedException\",\"Message\":"
			  "\"The conditional request failed\",\"Item\":"
			  "{\"record_version_number\":{\"S\":\"rvn-1\"}}}";
	CHECK_INT(ddb_parse_condition_failure(LEN(ccf), &it), 0);
	CHECK_INT(ddb_item_get_s(it, "record_version_number", &s), 0);
	CHECK_STR(s, "rvn-1");
	ddb_item_free(it);
	CHECK_INT(
		ddb_parse_condition_failure(
			LEN("{\"__type\":\"x#ConditionalCheckFailedException\","
			    "\"message\":\"The conditional request failed\"}"),
			&it),
		0);
	CHECK(!it);
	CHECK_INT(
		ddb_parse_condition_failure(LEN("{\"Item\":{\"a\":{}}}"), &it),
		-EPROTO);
}

/* Maps: an item of its own, in and out, nested; names in order. */
static void check_maps(void)
{
	struct ddb_item *it = ddb_item_new(), *in = ddb_item_new();
	struct ddb_item *outer = ddb_item_new(), *got = NULL, *inner = NULL;
	const char *s;
	char *json;

	CHECK(it && in && outer);
	CHECK_INT(ddb_item_set_s(in, "v", "a1"), 0);
	CHECK_INT(ddb_item_set_n(in, "pid", 7), 0);
	CHECK_INT(ddb_item_set_m(outer, "host:1 x", in), 0);
	CHECK_INT(ddb_item_set_m(outer, "b", in), 0);
	CHECK_INT(ddb_item_set_m(it, "r", outer), 0);
	CHECK_INT(ddb_item_set_s(it, "s", "x"), 0);
	CHECK_INT(ddb_item_type(it, "r"), DDB_T_OTHER);
	json = ddb_item_to_json(it);
	CHECK_STR(
		json,
		"{\"r\":{\"M\":{\"b\":{\"M\":{\"pid\":{\"N\":\"7\"},"
		"\"v\":{\"S\":\"a1\"}}},\"host:1 x\":{\"M\":{\"pid\":"
		"{\"N\":\"7\"},\"v\":{\"S\":\"a1\"}}}}},\"s\":{\"S\":\"x\"}}");
	free(json);
	CHECK_INT(ddb_item_get_m(it, "r", &got), 0);
	CHECK_STR(ddb_item_name_at(got, 0), "b");
	CHECK_STR(ddb_item_name_at(got, 1), "host:1 x");
	CHECK(ddb_item_name_at(got, 2) == NULL);
	CHECK_INT(ddb_item_get_m(got, "host:1 x", &inner), 0);
	CHECK_INT(ddb_item_get_s(inner, "v", &s), 0);
	CHECK_STR(s, "a1");
	ddb_item_free(inner);
	CHECK_INT(ddb_item_get_m(it, "s", &inner), -EINVAL);
	CHECK_INT(ddb_item_get_m(it, "none", &inner), -ENOENT);
	CHECK(inner == NULL);
	CHECK_INT(ddb_item_set_m(it, "", in), -EINVAL);
	ddb_item_free(got);
	/* A map that is not one inside (a bad value) is no map. */
	ddb_item_free(it);
	CHECK_INT(ddb_item_from_json(LEN("{\"m\":{\"M\":{\"k\":{\"S\":1}}}}"),
				     &it),
		  0);
	CHECK_INT(ddb_item_get_m(it, "m", &got), -EINVAL);
	ddb_item_free(it);
	ddb_item_free(in);
	ddb_item_free(outer);
}

/* DescribeTable's GlobalSecondaryIndexes: name, status, backfilling. */
static void check_gsis(void)
{
	struct ddb_table_info info;
	const char *head =
		"{\"Table\":{\"TableStatus\":\"ACTIVE\",\"KeySchema\":"
		"[{\"AttributeName\":\"lock_key\",\"KeyType\":\"HASH\"}],";
	char body[1024];

	snprintf(body, sizeof(body),
		 "%s\"GlobalSecondaryIndexes\":[{\"IndexName\":\"a\","
		 "\"IndexStatus\":\"CREATING\",\"Backfilling\":true},"
		 "{\"IndexName\":\"lockfs_parent\",\"IndexStatus\":"
		 "\"ACTIVE\"}]}}",
		 head);
	CHECK_INT(ddb_parse_table(body, strlen(body), &info), 0);
	CHECK_INT(info.n_gsi, 2);
	CHECK_STR(info.gsi[0].name, "a");
	CHECK_INT(info.gsi[0].backfilling, 1);
	CHECK_STR(ddb_gsi_status(&info, "a"), "CREATING");
	CHECK_STR(ddb_gsi_status(&info, "lockfs_parent"), "ACTIVE");
	CHECK_INT(info.gsi[1].backfilling, 0);
	CHECK_STR(ddb_gsi_status(&info, "none"), "");
	snprintf(body, sizeof(body), "%s\"ItemCount\":1}}", head);
	CHECK_INT(ddb_parse_table(body, strlen(body), &info), 0);
	CHECK_INT(info.n_gsi, 0);
	/* Malformed: not an array, no name, no status, a bad Backfilling. */
	const char *bad[] = {
		"\"GlobalSecondaryIndexes\":{}",
		"\"GlobalSecondaryIndexes\":[{\"IndexStatus\":\"ACTIVE\"}]",
		"\"GlobalSecondaryIndexes\":[{\"IndexName\":\"a\"}]",
		"\"GlobalSecondaryIndexes\":[{\"IndexName\":\"a\","
		"\"IndexStatus\":\"ACTIVE\",\"Backfilling\":1}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "%s%s}}", head, bad[i]);
		CHECK_INT(ddb_parse_table(body, strlen(body), &info), -EPROTO);
	}
	/* More than DDB_GSI_MAX: the first ones, no overflow. */
	size_t n = (size_t)snprintf(body, sizeof(body),
				    "%s\"GlobalSecondaryIndexes\":[", head);
	for (int i = 0; i < DDB_GSI_MAX + 3; i++)
		n += (size_t)snprintf(
			body + n, sizeof(body) - n,
			"%s{\"IndexName\":\"g%d\",\"IndexStatus\":"
			"\"ACTIVE\"}",
			i ? "," : "", i);
	snprintf(body + n, sizeof(body) - n, "]}}");
	CHECK_INT(ddb_parse_table(body, strlen(body), &info), 0);
	CHECK_INT(info.n_gsi, DDB_GSI_MAX);
	CHECK_STR(info.gsi[DDB_GSI_MAX - 1].name, "g7");
}

int main(int argc, char **argv)
{
	check_cases(argc, argv);
	CHECK_CASE(check_maps);
	CHECK_CASE(check_types);
	CHECK_CASE(check_numbers);
	CHECK_CASE(check_json);
	CHECK_CASE(check_parsers);
	CHECK_CASE(check_gsis);
	CHECK_DONE();
}
