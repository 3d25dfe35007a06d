/* record: the rows lockfs keeps in the lock table, as plain C structs (no
 * DynamoDB types): a lock (python_dynamodb_lock schema plus lockfs's own
 * attributes) and a directory marker. Owner: whoever holds the struct. */
#ifndef LOCKFS_RECORD_H
#define LOCKFS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sort key values. "-" is python_dynamodb_lock's default for a lock. */
#define RECORD_SORT_LOCK  "-"
#define RECORD_SORT_DIR	  "lockfs:dir"
#define RECORD_SORT_FENCE "lockfs:fence"

/* TTL refresh on every write, as python_dynamodb_lock (expiry_period). */
#define RECORD_EXPIRY_PERIOD_S 3600

#define RECORD_RVN_MAX 128

struct lock_record {
	char *key;		  /* lock_key: the full key, prefix included */
	char *owner;		  /* owner_name */
	char rvn[RECORD_RVN_MAX]; /* record_version_number */
	int64_t lease_ms;	  /* lease_duration */
	int64_t expiry_real_s;	  /* expiry_time (TTL); 0 when absent */

	/* lockfs's own attributes; has_lockfs is false for rows written by
	 * other clients, which then show only what they have. */
	bool has_lockfs;
	char *host; /* holder host, pid, uid, gid, command */
	int64_t pid;
	int64_t uid;
	int64_t gid;
	uint32_t mode; /* permission bits given at create */
	char *cmd;
	int64_t acquired_real_ms;
	int64_t heartbeat_real_ms;

	uint64_t fence; /* 0: none allocated yet */
	bool has_data;
	char *data; /* data_len bytes, NUL after them */
	size_t data_len;
};

struct dir_record {
	char *key; /* the directory's full key, no trailing '/' */
	uint32_t mode;
	int64_t uid;
	int64_t gid;
	int64_t created_real_ms;
};

void record_init(struct lock_record *r);
void record_fini(struct lock_record *r);
/* Deep copy into an initialised or zeroed dst (dst is finalised first). */
int record_copy(struct lock_record *dst, const struct lock_record *src);
int record_set_str(char **field, const char *value);
int record_set_data(struct lock_record *r, const void *data, size_t len);

void dir_record_init(struct dir_record *d);
void dir_record_fini(struct dir_record *d);
int dir_record_copy(struct dir_record *dst, const struct dir_record *src);

#endif
