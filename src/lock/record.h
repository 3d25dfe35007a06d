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
/* A mount's session item (doc/session-leases.md): its own sort key, so
 * that no listing of locks or directories ever shows it. */
#define RECORD_SORT_SESSION "lockfs:session"

/* Session items live under this key prefix: names starting with .lockfs
 * are reserved (fs/names.h), so no lock key can be one, and a key prefix
 * of a mount never reaches it. */
#define RECORD_SESSION_PREFIX ".lockfs-session/"
/* The longest session key read or written: the prefix, an owner of up to
 * 256 bytes and a generation. */
#define RECORD_SESSION_KEY_MAX 400
/* The lease_duration written in a lock row that names a session, and the
 * expiry_time past its acquire: a python_dynamodb_lock client, which
 * judges a row by its own RVN, never takes it over, and the table's TTL
 * never removes it while held (its RVN changes only on acquire). */
#define RECORD_SESSION_ROW_LEASE_MS (365LL * 86400 * 1000)

/* TTL refresh on every write, as python_dynamodb_lock (expiry_period). */
#define RECORD_EXPIRY_PERIOD_S 3600

#define RECORD_RVN_MAX 128
/* A fair-handoff or writer mark's version, NUL included: lockfs writes
 * UUIDs there (text_uuid4), and a longer one is cut (compared, and written
 * back in conditions, cut: such a mark is never ours, and is judged stale
 * by its cut version standing still). Not RECORD_RVN_MAX: every held lock
 * carries two. */
#define RECORD_MARK_V_MAX 37

/* A shared lock row holds one entry per reading mount; more than this many
 * are read as a row that cannot be joined (see record_reader_add). */
#define RECORD_READERS_MAX 1024

/* The value of lockfs_share on a row held shared. */
#define RECORD_SHARED "shared"

/* One reading mount's entry in a shared lock row (lockfs_readers.<id>). */
struct record_reader {
	char *id;		/* the mount's owner id: the map's key */
	char v[RECORD_RVN_MAX]; /* its version: a fresh UUID on each of its
				 * writes (the reader's "RVN") */
	char *host; /* the first local holder: host, pid, uid, cmd */
	int64_t pid;
	int64_t uid;
	char *cmd;
	int64_t acquired_real_ms;
	int64_t heartbeat_real_ms;
	uint64_t fence; /* the fence it was handed; 0: none yet */
};

struct lock_record {
	char *key;		  /* lock_key: the full key, prefix included */
	char *owner;		  /* owner_name */
	char rvn[RECORD_RVN_MAX]; /* record_version_number */
	int64_t lease_ms;	  /* lease_duration */
	bool lease_assumed; /* the row has no valid lease_duration: lease_ms is
			     * the mount's, to judge it by, never shown */
	int64_t expiry_real_s; /* expiry_time (TTL); 0 when absent */

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

	/* Held shared (lockfs_share): one entry per reading mount, and the
	 * mark of a writer waiting on another mount (lockfs_writer), which
	 * new readers respect. A shared row with no reader is free. */
	bool shared;
	struct record_reader *readers;
	size_t n_readers;
	char *writer_id; /* NULL: no mark */
	char writer_v[RECORD_MARK_V_MAX];

	/* Fair handoff of a row held exclusively (doc/fair-handoff.md):
	 * the mark of the mount waiting next (lockfs_next: its owner id and
	 * a version it refreshes while it waits), and on a row a release
	 * turned into a reservation, the owner id it is reserved for
	 * (lockfs_reserved_for). */
	char *next_id; /* NULL: no mark */
	char next_v[RECORD_MARK_V_MAX];
	int64_t next_waited_ms; /* how long it had waited at that write */
	char *reserved_for;	/* NULL: not a reservation */

	/* lockfs_session: the key of the session item whose heartbeats keep
	 * this exclusive row (session mode); NULL: the row is judged by its
	 * own RVN. Read only when record_session_key_ok. */
	char *session;
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
/* Appends a deep copy of rd (replacing an entry of the same id). -E2BIG
 * past RECORD_READERS_MAX. */
int record_reader_add(struct lock_record *r, const struct record_reader *rd);
/* The entry of id, or NULL. */
const struct record_reader *record_reader_find(const struct lock_record *r,
					       const char *id);
void record_reader_fini(struct record_reader *rd);
/* The version a holder compares: the row's RVN for an exclusive holder
 * (reader_id NULL), its own entry's v for a reader ("" when it has none). */
const char *record_holder_version(const struct lock_record *r,
				  const char *reader_id);
/* Sets the writer mark (id NULL: none). */
int record_set_writer(struct lock_record *r, const char *id, const char *v);
/* Sets the mark of the mount waiting next on an exclusive row (id NULL:
 * none). */
int record_set_next(struct lock_record *r, const char *id, const char *v);

/* Whether key is a well-formed session key (its prefix, its length). */
bool record_session_key_ok(const char *key);

/* The owner_name of a row a release reserved for the marked waiter. */
#define RECORD_RESERVED_OWNER "lockfs:reserved"

void dir_record_init(struct dir_record *d);
void dir_record_fini(struct dir_record *d);
int dir_record_copy(struct dir_record *dst, const struct dir_record *src);

#endif
