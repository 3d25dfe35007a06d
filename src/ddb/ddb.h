/* ddb: the DynamoDB JSON 1.0 operations lockfs uses, and AttributeValue
 * helpers so that no caller touches cJSON. Items are opaque maps from an
 * attribute name to a typed value (S, N, B, BOOL, NULL; other types are kept
 * and reported as DDB_T_OTHER). struct ddb is thread-safe (its state is in
 * the awsreq); an item or page is used by one thread at a time. */
#ifndef LOCKFS_DDB_H
#define LOCKFS_DDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "awserr.h"
#include "awsreq.h"
#include "metrics.h"

/* ---- items ---------------------------------------------------------- */

struct ddb_item;

enum ddb_type {
	DDB_T_ABSENT = 0,
	DDB_T_S,
	DDB_T_N,
	DDB_T_B,
	DDB_T_BOOL,
	DDB_T_NULL,
	DDB_T_OTHER,
};

struct ddb_item *ddb_item_new(void);
void ddb_item_free(struct ddb_item *it); /* accepts NULL */
struct ddb_item *ddb_item_dup(const struct ddb_item *it);
size_t ddb_item_count(const struct ddb_item *it);
enum ddb_type ddb_item_type(const struct ddb_item *it, const char *name);

/* Setters replace an existing attribute of the same name. 0 or -ENOMEM,
 * -EINVAL (name empty or not UTF-8, S not valid UTF-8, N not a DynamoDB
 * number: [+-]digits[.digits][e[+-]digits], at most 38 significant digits,
 * magnitude 1E-130 to 9.99...E+125). */
int ddb_item_set_s(struct ddb_item *it, const char *name, const char *value);
int ddb_item_set_s_len(struct ddb_item *it, const char *name, const char *value,
		       size_t len);
int ddb_item_set_n(struct ddb_item *it, const char *name, int64_t value);
int ddb_item_set_n_text(struct ddb_item *it, const char *name,
			const char *decimal);
int ddb_item_set_b(struct ddb_item *it, const char *name, const void *data,
		   size_t len);
int ddb_item_set_bool(struct ddb_item *it, const char *name, bool value);
void ddb_item_remove(struct ddb_item *it, const char *name);
/* Maps (M) are kept as DDB_T_OTHER; these turn one into an item of its own
 * and back. set_m stores a copy of map (its attributes in name order);
 * get_m gives a new item (the caller's): -ENOENT absent, -EINVAL not a map
 * or not a well-formed one. */
int ddb_item_set_m(struct ddb_item *it, const char *name,
		   const struct ddb_item *map);
int ddb_item_get_m(const struct ddb_item *it, const char *name,
		   struct ddb_item **out);
/* The name of the i-th attribute in name order, or NULL past the end. */
const char *ddb_item_name_at(const struct ddb_item *it, size_t i);

/* Getters: 0, -ENOENT (absent) or -EINVAL (another type, or for get_n a
 * value that is not an integer in int64 range; "10.0" and "1E3" are
 * integers). Strings returned by
 * get_s/get_n_text are borrowed: valid until the item changes or is freed. */
int ddb_item_get_s(const struct ddb_item *it, const char *name,
		   const char **out);
int ddb_item_get_n(const struct ddb_item *it, const char *name, int64_t *out);
int ddb_item_get_n_text(const struct ddb_item *it, const char *name,
			const char **out);
/* *data is a malloc'd copy (plus a NUL after len bytes). */
int ddb_item_get_b(const struct ddb_item *it, const char *name, void **data,
		   size_t *len);
int ddb_item_get_bool(const struct ddb_item *it, const char *name, bool *out);

/* The item as DynamoDB JSON ({"a":{"S":"x"},...}), malloc'd; for tests and
 * debug logs. And the reverse, for tests and fuzzing: 0, -EPROTO, -ENOMEM. */
char *ddb_item_to_json(const struct ddb_item *it);
int ddb_item_from_json(const char *json, size_t len, struct ddb_item **out);

/* ---- calls ---------------------------------------------------------- */

struct ddb;

/* The operations, also the request kinds of the metrics (one histogram
 * each, in this order). */
enum ddb_op {
	DDB_OP_GET_ITEM,
	DDB_OP_PUT_ITEM,
	DDB_OP_UPDATE_ITEM,
	DDB_OP_DELETE_ITEM,
	DDB_OP_QUERY,
	DDB_OP_SCAN,
	DDB_OP_CREATE_TABLE,
	DDB_OP_DESCRIBE_TABLE,
	DDB_OP_UPDATE_TTL,
	DDB_OP_DESCRIBE_TTL,
	DDB_OP_UPDATE_TABLE,
	DDB_OP_BATCH_GET_ITEM,
	DDB_OP__COUNT
};

/* The operation's name in DynamoDB's API ("GetItem"). */
const char *ddb_op_name(enum ddb_op op);
/* Names m's request kinds after the operations (metrics_name_kinds), so
 * that awsreq's observations of enum ddb_op are rendered by name. */
void ddb_name_metrics(struct metrics *m);

struct ddb *ddb_new(struct awsreq *req); /* does not own req */
void ddb_free(struct ddb *d);
/* From now on, item calls (not table ones) that fail for good are said in
 * the log with DynamoDB's detail (a few a window, log_burst): a running
 * mount's callers only log an errno. Off at first: a command or a mount
 * being set up says its own failures. */
void ddb_log_failures(struct ddb *d);

/* Per-call in/out. */
struct ddb_call {
	int64_t deadline_mono_ms; /* in: 0 = the awsreq default */
	struct aws_error err;	  /* out: detail of the failure */
	int attempts;		  /* out: HTTP exchanges made */
	int unanswered;		  /* out: of which without an HTTP answer
				   * (they may reach DynamoDB later) */
};

/* An expression with its placeholders. names is a NULL-terminated list of
 * pairs {"#k", "lock_key", "#d", "data", NULL}; values maps ":v" names. */
struct ddb_expr {
	const char *condition; /* ConditionExpression, or NULL */
	const char *update;    /* UpdateExpression (UpdateItem only) */
	const char *const *names;
	const struct ddb_item *values;
};

enum ddb_return {
	DDB_RETURN_NONE,
	DDB_RETURN_ALL_OLD,
	DDB_RETURN_ALL_NEW,
	DDB_RETURN_UPDATED_NEW,
	DDB_RETURN_UPDATED_OLD,
};

/* All operations return 0 or -errno (see awserr.h). A failed condition is
 * -ECANCELED; the conditional writes always send
 * ReturnValuesOnConditionCheckFailure=ALL_OLD, and then set *old_out to the
 * item as it is now (NULL when there is none). Because awsreq retries
 * timeouts and 5xx, a write that reports -ECANCELED with call->attempts > 1
 * may have been applied by an earlier attempt: compare *old_out with what
 * was written. curl, too, sends a request again on a fresh connection when
 * a reused one closed without an answer, uncounted in attempts: a write
 * told by its content (an RVN) needs no count. An answer that cannot be read
 * (malformed JSON, a bad AttributeValue, a condition failure whose Item is
 * unreadable) is -EPROTO, never a guess. Output pointers may be NULL when the
 * caller does not want them; they are set to NULL first; outputs the caller
 * gets are its own. call may be NULL. */

/* GetItem. -ENOENT when there is no item. */
int ddb_get_item(struct ddb *d, const char *table, const struct ddb_item *key,
		 bool consistent, struct ddb_item **item_out,
		 struct ddb_call *call);
/* The most keys one BatchGetItem reads (DynamoDB's limit). */
#define DDB_BATCH_GET_MAX 100

/* BatchGetItem of keys[0..n) (1 <= n <= DDB_BATCH_GET_MAX, distinct keys
 * of table, attributes of type S, N or B) in one request, consistent reads
 * when asked. 0 when an answer was read: then for each key rcs[i] is 0
 * with items[i] its item (the caller's), -ENOENT when there is none, or
 * -EAGAIN when DynamoDB left it unread (UnprocessedKeys); items[i] is NULL
 * but for rc 0. Otherwise -errno for the whole request (a throttled batch
 * too, once the request layer's retries are spent), every rcs[i] that
 * -errno and every items[i] NULL. An answer with an item or an unprocessed
 * key that is not one of keys, or one key twice, is -EPROTO. */
int ddb_batch_get_item(struct ddb *d, const char *table,
		       const struct ddb_item *const *keys, size_t n,
		       bool consistent, struct ddb_item **items, int *rcs,
		       struct ddb_call *call);
/* PutItem, conditional when cond != NULL. */
int ddb_put_item(struct ddb *d, const char *table, const struct ddb_item *item,
		 const struct ddb_expr *cond, struct ddb_item **old_out,
		 struct ddb_call *call);
/* UpdateItem. On success *out gets the Attributes asked for with rv (NULL
 * for DDB_RETURN_NONE); on -ECANCELED, the current item. */
int ddb_update_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *expr,
		    enum ddb_return rv, struct ddb_item **out,
		    struct ddb_call *call);
/* DeleteItem, conditional when cond != NULL. With rv DDB_RETURN_ALL_OLD, a
 * successful delete sets *old_out to the deleted item (NULL if none was). */
int ddb_delete_item(struct ddb *d, const char *table,
		    const struct ddb_item *key, const struct ddb_expr *cond,
		    enum ddb_return rv, struct ddb_item **old_out,
		    struct ddb_call *call);

/* Query and Scan: one page per call. page is overwritten (call
 * ddb_page_fini on a previous page first); start_key is the previous page's
 * last_key, or NULL for the first page. */
struct ddb_read {
	const char *key_condition; /* KeyConditionExpression (Query only) */
	const char *index;	   /* IndexName, or NULL: the table */
	const char *filter;	   /* FilterExpression, or NULL */
	const char *projection;	   /* ProjectionExpression, or NULL */
	const char *const *names;
	const struct ddb_item *values;
	bool consistent;
	int limit; /* 0: no Limit */
};

struct ddb_page {
	struct ddb_item **items;
	size_t n;
	struct ddb_item *last_key; /* NULL on the last page, else the start of
				    * the next one */
	long scanned;		   /* ScannedCount */
};

int ddb_query(struct ddb *d, const char *table, const struct ddb_read *rd,
	      const struct ddb_item *start_key, struct ddb_page *page,
	      struct ddb_call *call);
int ddb_scan(struct ddb *d, const char *table, const struct ddb_read *rd,
	     const struct ddb_item *start_key, struct ddb_page *page,
	     struct ddb_call *call);
void ddb_page_fini(struct ddb_page *page);

/* ---- tables --------------------------------------------------------- */

#define DDB_GSI_MAX 8

struct ddb_table_info {
	char status[32]; /* CREATING, ACTIVE, ... */
	char hash_name[256];
	char hash_type[4];    /* "S", "N", "B" */
	char range_name[256]; /* "" when the table has no sort key */
	char range_type[4];
	long long item_count;
	/* Its global secondary indexes (the first DDB_GSI_MAX). */
	int n_gsi;
	struct ddb_gsi_info {
		char name[256];
		char status[32]; /* CREATING, ACTIVE, ... */
		bool backfilling;
	} gsi[DDB_GSI_MAX];
};

/* A global secondary index to create: HASH hash (S), RANGE range (S),
 * projection ALL. */
struct ddb_gsi {
	const char *name;
	const char *hash;
	const char *range;
};

/* CreateTable with PAY_PER_REQUEST, HASH hash_name (S), RANGE range_name (S).
 * -EEXIST when the table exists. Does not wait. */
int ddb_create_table(struct ddb *d, const char *table, const char *hash_name,
		     const char *range_name, struct ddb_call *call);
/* The same with one global secondary index (gsi may be NULL). */
int ddb_create_table_gsi(struct ddb *d, const char *table,
			 const char *hash_name, const char *range_name,
			 const struct ddb_gsi *gsi, struct ddb_call *call);
/* UpdateTable adding the global secondary index gsi (on-demand). -EEXIST
 * when the table already has an index of that name. Does not wait. */
int ddb_add_gsi(struct ddb *d, const char *table, const struct ddb_gsi *gsi,
		struct ddb_call *call);
/* The status of index name in info: "" when the table has none. */
const char *ddb_gsi_status(const struct ddb_table_info *info, const char *name);
/* Polls DescribeTable as ddb_wait_table_active does until index name is
 * ACTIVE (and done backfilling), or the deadline: -ETIMEDOUT, -ENOENT when
 * the table has no such index. */
int ddb_wait_gsi_active(struct ddb *d, const char *table, const char *name,
			int64_t deadline_mono_ms, struct ddb_call *call);
/* DescribeTable. -ENXIO when the table does not exist. */
int ddb_describe_table(struct ddb *d, const char *table,
		       struct ddb_table_info *out, struct ddb_call *call);
/* Polls DescribeTable (sleeps from 50 ms growing to 1 s, at most 1000
 * polls) until ACTIVE, or the deadline (0: 60 s from now; call's deadline
 * too when set): -ETIMEDOUT, or -ENXIO if the table never appeared. */
int ddb_wait_table_active(struct ddb *d, const char *table,
			  int64_t deadline_mono_ms, struct ddb_call *call);
/* UpdateTimeToLive. An already-enabled TTL on the same attribute (and an
 * already-disabled TTL when disabling) is 0: DynamoDB refuses those with a
 * ValidationException, which is checked with DescribeTimeToLive. */
int ddb_update_ttl(struct ddb *d, const char *table, const char *attr,
		   bool enabled, struct ddb_call *call);
/* DescribeTimeToLive: status ("ENABLED", "DISABLED", ...) and attribute
 * ("" when none). Either buffer may be NULL. */
int ddb_describe_ttl(struct ddb *d, const char *table, char *status,
		     size_t status_len, char *attr, size_t attr_len,
		     struct ddb_call *call);

/* ---- answers -------------------------------------------------------- */

/* The parsers of DynamoDB's answers, exposed for tests and fuzzing. Each
 * reads exactly len bytes (no NUL needed) and returns 0, -EPROTO (not the
 * expected shape) or -ENOMEM; output pointers may be NULL. */

/* GetItem: -ENOENT when the answer has no Item. */
int ddb_parse_get_item(const char *body, size_t len,
		       struct ddb_item **item_out);
/* BatchGetItem of keys[0..n) from table (ddb_batch_get_item's answer):
 * Responses.<table> (required, may be empty) matched to the keys, each
 * item carrying every attribute of its key with the same value, and
 * UnprocessedKeys.<table>.Keys (optional), each exactly one of keys. 0
 * with items[i] and rcs[i] as ddb_batch_get_item gives them; on failure
 * (-EPROTO: also an item or unprocessed key not among keys, a key answered
 * twice, another table named; -ENOMEM, -EINVAL) every items[i] NULL and
 * rcs[i] the error. */
int ddb_parse_batch_get(const char *body, size_t len, const char *table,
			const struct ddb_item *const *keys, size_t n,
			struct ddb_item **items, int *rcs);
/* PutItem/UpdateItem/DeleteItem: the "Attributes" (NULL when absent). */
int ddb_parse_attributes(const char *body, size_t len, struct ddb_item **out);
/* Query/Scan: Items, LastEvaluatedKey, ScannedCount. page is overwritten;
 * on failure it is left empty. */
int ddb_parse_page(const char *body, size_t len, struct ddb_page *page);
/* DescribeTable ("Table") or CreateTable ("TableDescription"). */
int ddb_parse_table(const char *body, size_t len, struct ddb_table_info *out);
/* DescribeTimeToLive. */
int ddb_parse_ttl(const char *body, size_t len, char *status, size_t status_len,
		  char *attr, size_t attr_len);
/* A ConditionalCheckFailedException answer: its "Item" (NULL when absent). */
int ddb_parse_condition_failure(const char *body, size_t len,
				struct ddb_item **old_out);
#endif
