/* ddb_int: what the pieces of the DynamoDB client share, private to src/ddb
 * (callers use ddb.h): the item's layout, number parsing, items as cJSON,
 * and the request envelope of ddb_call.c. Same threading as ddb.h. */
#ifndef LOCKFS_DDB_INT_H
#define LOCKFS_DDB_INT_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ddb.h"
#include "log.h"

/* DynamoDB's numbers: at most 38 significant digits, magnitude 1E-130 to
 * 9.99...E+125. */
#define DDB_NUM_MAX_DIGITS 38
#define DDB_NUM_MIN_EXP	   (-130)
#define DDB_NUM_MAX_EXP	   125

/* ---- the item model (ddb_item.c) ------------------------------------ */

struct ddb_attr {
	char *name;
	enum ddb_type type;
	char *text;   /* S, N: the text; B: the bytes plus a NUL */
	size_t len;   /* S, N, B: byte length of text */
	bool flag;    /* BOOL */
	cJSON *other; /* DDB_T_OTHER: the whole AttributeValue object */
	size_t seq;   /* parse order, only while an item is being parsed */
};

/* Attributes sorted by name (strcmp), names unique. */
struct ddb_item {
	struct ddb_attr *attrs;
	size_t n;
	size_t cap;
};

/* A DynamoDB number, split up: sign, significant digits, and the decimal
 * exponent of the first significant digit (value = d.ddd * 10^exp10). */
struct ddb_num {
	bool negative;
	char digits[DDB_NUM_MAX_DIGITS + 1];
	int n_digits; /* 0 for zero */
	long exp10;
};

/* Frees what a holds and zeroes it. */
void ddb_attr_fini(struct ddb_attr *a);
/* The attribute called name, or NULL. */
const struct ddb_attr *ddb_item_find(const struct ddb_item *it,
				     const char *name);
/* Room for want attributes: 0 or -ENOMEM. */
int ddb_item_reserve(struct ddb_item *it, size_t want);
/* Moves *a (whose name is set) into the item, replacing an attribute of the
 * same name. On failure *a is left for the caller to release. */
int ddb_item_put(struct ddb_item *it, struct ddb_attr *a);
/* True for a non-empty UTF-8 attribute name. */
bool ddb_name_ok(const char *name);
/* Parses [+-]digits[.digits][(e|E)[+-]digits] with at most 38 significant
 * digits and a magnitude DynamoDB accepts (1E-130 .. 9.99..E+125). */
int ddb_num_parse(const char *s, size_t len, struct ddb_num *out);

/* ---- items as JSON (ddb_json.c) ------------------------------------- */

/* A JSON object {"name": AttributeValue, ...}, or NULL on ENOMEM. */
cJSON *ddb_json_from_item(const struct ddb_item *it);
/* An item from a JSON object of AttributeValues. A repeated name keeps its
 * last value (as JSON parsers usually do). */
int ddb_json_to_item(const cJSON *obj, struct ddb_item **out);
/* Parses len bytes as one JSON object. -EPROTO or -ENOMEM. */
int ddb_json_parse(const char *json, size_t len, cJSON **root);

/* ---- the request envelope (ddb_call.c) ------------------------------ */

struct ddb {
	struct awsreq *req;	   /* not owned */
	struct log_burst failures; /* the failed calls said (any thread) */
	_Atomic bool log_failures; /* ddb_log_failures */
};

/* Starts a call: a caller without a struct ddb_call gets a scratch one. */
struct ddb_call *ddb_call_begin(struct ddb_call *call,
				struct ddb_call *scratch);
/* ddb_table.c: polls DescribeTable of table (every 50 ms, doubling up to
 * max_poll_ms) until done(rc of the describe, *info, arg) says 0 (done) or
 * -errno (failed), rather than 1 (again), or the deadline (0: default_ms
 * from now; the call's own deadline too): then the last describe's error,
 * or -ETIMEDOUT, with *info the table as last seen. */
typedef int (*ddb_poll_fn)(int rc, const struct ddb_table_info *info,
			   void *arg);
int ddb_poll_table(struct ddb *d, const char *table, int64_t deadline_mono_ms,
		   int64_t default_ms, int64_t max_poll_ms, ddb_poll_fn done,
		   void *arg, struct ddb_table_info *info,
		   struct ddb_call *call);

/* ddb_index.c: whether gsi's names are usable, and gsi as a
 * GlobalSecondaryIndexes entry of a CreateTable request (update false) or
 * a GlobalSecondaryIndexUpdates Create of an UpdateTable (update true),
 * its attributes added to defs when they are not there yet. */
bool ddb_gsi_ok(const struct ddb_gsi *gsi);
int ddb_gsi_add_json(cJSON *req, cJSON *defs, const struct ddb_gsi *gsi,
		     bool update);

/* A failure found before or without an answer: err with why. */
int ddb_call_fail(struct ddb_call *call, int err, const char *why);
/* An answer arrived but could not be used: keeps the status and type of
 * the answer and says what was wrong. */
int ddb_call_unreadable(struct ddb_call *call, int rc, const char *what);
/* A new request object with TableName, or NULL. */
cJSON *ddb_call_request(const char *table);
int ddb_call_add_string(cJSON *obj, const char *name, const char *value);
int ddb_call_add_item(cJSON *obj, const char *name, const struct ddb_item *it);
/* ExpressionAttributeNames from {"#a", "name", ..., NULL} and
 * ExpressionAttributeValues, each only when non-empty (DynamoDB refuses
 * empty maps). */
int ddb_call_add_placeholders(cJSON *obj, const char *const *names,
			      const struct ddb_item *values);
/* Condition, update and placeholders of e; a condition always asks for
 * the current item when it fails. */
int ddb_call_add_expr(cJSON *obj, const struct ddb_expr *e);
/* Sends req as operation op; the answer's body is left in resp. */
int ddb_call_send(struct ddb *d, enum ddb_op op, cJSON *req, struct buf *resp,
		  struct ddb_call *call);
/* After a write failed its condition: the current item into *old_out. */
int ddb_call_condition_failed(const struct buf *resp, struct ddb_call *call,
			      const char *op, struct ddb_item **old_out);
/* Reads an answer's body into arg: 0 or -errno (-ENOENT, no item, is an
 * answer too). */
typedef int (*ddb_answer_fn)(const char *body, size_t len, void *arg);
/* How many times a read answered by an unreadable success is sent again
 * (ddb_call_run). */
#define DDB_UNREADABLE_RESENDS 2
/* The rest of every operation once req is built (rc: the result of
 * building it, a failure reported with why, NULL for "cannot build <op>"):
 * sends req as op, then answer(arg) reads the answer (NULL: none wanted),
 * one it cannot read made ddb_call_unreadable (a read's is sent again, up
 * to DDB_UNREADABLE_RESENDS times); a failed condition puts the current
 * item in *old_out. Frees req. */
int ddb_call_run(struct ddb *d, enum ddb_op op, cJSON *req, int rc,
		 const char *why, ddb_answer_fn answer, void *arg,
		 struct ddb_item **old_out, struct ddb_call *call);

#endif
