/* fuzz_store_rows: the DynamoDB lock store (store_ddb) end to end over
 * scripted DynamoDB answers: every store operation, so that lock rows,
 * directory rows, fence counters and rows of unknown sort keys reach the
 * sort-key dispatch of lookup and list, the conversions and the condition
 * failures, with src/ddb building the requests and parsing the answers.
 * Input: "KEY\nOPS" then answers separated by "\n--\n", each "STATUS\n"
 * and a body (no status: 200). OPS letters: g get, l lookup, L list,
 * p put, P takeover, r renew, d delete, f fence, m mkdir, M chmod dir,
 * D rmdir, c check table, C create table, I list by the index, x the
 * index's state; shared rows: s put shared, j join, R a reader's renewal,
 * J leave, e evict a reader, w mark a writer, W clear the mark, F read the
 * fence; fair handoff: n mark the next waiter, u release (into a
 * reservation if the row is marked). Checked:
 * every record and directory that comes out has its numbers in range
 * (times within years 1970..9999, ids and pids in their types, mode <=
 * 07777, a lease of 1 ms to 10^9 s), renders as valid UTF-8 text, and
 * every error is -errno.
 * fuzz-wrap: awsreq_json awsreq_clock
 * fuzz-src: tests/fuzz/support/fake_awsreq.c tests/fuzz/support/ddb_mutator.c
 * fuzz-link: lockfs_store lockfs_fs
 * fuzz-runs: 5000 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_mutator.h"
#include "fake_awsreq.h"
#include "fuzz_util.h"
#include "render.h"
#include "store_ddb.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ANSWERS 32
#define REAL_MS_MAX 253402300799999LL
#define ID_MAX	    4294967294LL

static void check_errno(int rc)
{
	if (rc > 0 || rc < -4095)
		abort();
}

static void check_record(const struct lock_record *r)
{
	struct buf text = BUF_INIT;

	if (!r->key || !memchr(r->rvn, '\0', sizeof(r->rvn)))
		abort();
	if (r->lease_ms < 1 || r->lease_ms > 1000000000000LL ||
	    r->expiry_real_s < 0 || r->expiry_real_s > REAL_MS_MAX / 1000 ||
	    r->acquired_real_ms < 0 || r->acquired_real_ms > REAL_MS_MAX ||
	    r->heartbeat_real_ms < 0 || r->heartbeat_real_ms > REAL_MS_MAX ||
	    r->pid < 0 || r->pid > INT32_MAX || r->uid < 0 || r->uid > ID_MAX ||
	    r->gid < 0 || r->gid > ID_MAX || r->mode > 07777 ||
	    (r->has_data && !r->data))
		abort();
	if (!r->has_lockfs &&
	    (r->acquired_real_ms || r->heartbeat_real_ms || r->host || r->cmd))
		abort(); /* other clients' rows show only what they have */
	if (render_lock_text(r, RENDER_HELD, &text) ||
	    !text_utf8_valid(buf_str(&text), text.len))
		abort();
	buf_fini(&text);
}

static void check_dir(const struct dir_record *d)
{
	if (!d->key || d->mode > 07777 || d->uid < 0 || d->uid > ID_MAX ||
	    d->gid < 0 || d->gid > ID_MAX || d->created_real_ms < 0 ||
	    d->created_real_ms > REAL_MS_MAX)
		abort();
}

static int on_row(void *arg, const struct store_row *row)
{
	size_t *rows = arg;

	if (row->kind == STORE_ROW_LOCK && row->lock)
		check_record(row->lock);
	else if (row->kind == STORE_ROW_DIR && row->dir)
		check_dir(row->dir);
	else
		abort();
	return ++*rows > 100000; /* stop a runaway listing */
}

/* The lock row our writes put: key, owner, rvn and fixed times. */
static void lock_row(struct lock_record *rec, const char *key, const char *rvn)
{
	record_set_str(&rec->key, key);
	record_set_str(&rec->owner, "fuzz:owner");
	text_copy(rec->rvn, sizeof(rec->rvn), rvn);
	rec->lease_ms = 30000;
	rec->expiry_real_s = 1700003600;
	rec->has_lockfs = true;
	rec->acquired_real_ms = rec->heartbeat_real_ms = 1700000000000LL;
}

static void run_op(struct store *s, struct ddb *d, char op, const char *key)
{
	struct lock_record rec, cur;
	struct store_lookup lk;
	struct dir_record dir;
	struct lock_renewal rn = {
		.new_rvn = "11111111-2222-3333-4444-555555555555",
		.expiry_real_s = 1700003600,
		.heartbeat_real_ms = 1700000000000LL,
		.set_data = true,
		.data = "x\xff",
		.data_len = 2,
		.set_fence = true,
		.fence = 7
	};
	struct record_reader me = {
		.id = "fuzz:reader",
		.v = "44444444-2222-3333-4444-555555555555",
		.host = "h",
		.pid = 1,
		.cmd = "c",
		.acquired_real_ms = 1700000000000LL,
		.heartbeat_real_ms = 1700000000000LL,
	};
	char msg[512];
	bool has_cur = false;
	uint64_t fence = 0;
	size_t rows = 0;
	int rc = 0, ttl = 0;

	record_init(&rec);
	record_init(&cur);
	store_lookup_init(&lk);
	dir_record_init(&dir);
	switch (op) {
	case 'g':
		rc = s->ops->get_lock(s, key, 0, &rec);
		if (!rc)
			check_record(&rec);
		break;
	case 'l':
		rc = s->ops->lookup(s, key, 0, &lk);
		if (!rc && lk.has_lock)
			check_record(&lk.lock);
		if (!rc && lk.has_dir)
			check_dir(&lk.dir);
		break;
	case 'L':
		rc = s->ops->list(s, key, 0, on_row, &rows);
		break;
	case 'I': /* a listing by the index on the parent directory */
		store_ddb_set_listing(s, STORE_DDB_LIST_INDEX, true);
		rc = s->ops->list(s, key, 0, on_row, &rows);
		store_ddb_set_listing(s, STORE_DDB_LIST_AUTO, false);
		break;
	case 'x': {
		bool active;

		rc = store_ddb_index_state(d, "lockfs", 1, &active, msg,
					   sizeof(msg));
		if (rc && !memchr(msg, '\0', sizeof(msg)))
			abort();
		break;
	}
	case 'p':
	case 'P':
		lock_row(&rec, key, rn.new_rvn);
		rc = s->ops->put_lock(s, &rec, op == 'P' ? "old-rvn" : NULL, 0,
				      &cur, &has_cur, NULL);
		break;
	case 'r':
		rc = s->ops->renew_lock(s, key, "old-rvn", &rn, 0, &cur,
					&has_cur);
		break;
	case 'd':
		rc = s->ops->delete_lock(s, key, "old-rvn", 0, &cur, &has_cur);
		break;
	case 'f':
		rc = s->ops->next_fence(s, key, 0, &fence);
		if (!rc && (!fence || fence > INT64_MAX))
			abort();
		break;
	case 'm':
		dir.key = strdup(key);
		dir.mode = 0755;
		rc = dir.key ? s->ops->put_dir(s, &dir, NULL, 0) : -ENOMEM;
		break;
	case 'M':
		rc = s->ops->set_dir_mode(s, key, 0700, 0);
		break;
	case 'D':
		rc = s->ops->delete_dir(s, key, 0);
		break;
	case 'c':
		rc = store_ddb_check_table(d, "lockfs", 1, &ttl, msg,
					   sizeof(msg));
		if (rc && !memchr(msg, '\0', sizeof(msg)))
			abort();
		break;
	case 'C':
		rc = store_ddb_create_table(d, "lockfs", 1, NULL, msg,
					    sizeof(msg));
		break;
	case 's':
	case 'j':
		lock_row(&rec, key, rn.new_rvn);
		rec.shared = true;
		rc = record_reader_add(&rec, &me);
		if (!rc && op == 's')
			rc = s->ops->put_lock(s, &rec, NULL, 0, &cur, &has_cur,
					      NULL);
		else if (!rc)
			rc = s->ops->join_shared(s, &rec, true, 0, &cur,
						 &has_cur);
		break;
	case 'R':
		rn.reader = me.id;
		rn.row_rvn = "22222222-2222-3333-4444-555555555555";
		rn.set_data = false;
		rc = s->ops->renew_lock(s, key, me.v, &rn, 0, &cur, &has_cur);
		if (!rc && has_cur)
			check_record(&cur);
		break;
	case 'J':
		rc = s->ops->leave_shared(
			s, key, me.id, me.v,
			"33333333-2222-3333-4444-555555555555", 0, &cur,
			&has_cur);
		break;
	case 'e':
		rc = s->ops->evict_reader(s, key, "fuzz:dead", "dead-v", 0);
		break;
	case 'w':
		rc = s->ops->mark_writer(s, key, "fuzz:writer", "writer-v",
					 "stale-v", 0, &cur, &has_cur);
		break;
	case 'W':
		rc = s->ops->clear_writer(s, key, "writer-v", 0);
		break;
	case 'n':
		rc = s->ops->mark_next(s, key, "old-rvn", "fuzz:next", "next-v",
				       1500, "stale-v", 0, &cur, &has_cur);
		break;
	case 'u':
		lock_row(&rec, key, rn.new_rvn);
		record_set_str(&rec.owner, RECORD_RESERVED_OWNER);
		rc = s->ops->release_lock(s, key, "old-rvn", &rec, 0, &cur,
					  &has_cur);
		break;
	case 'F':
		rc = s->ops->read_fence(s, key, 0, &fence);
		if (!rc && fence > INT64_MAX)
			abort();
		break;
	default:
		break;
	}
	check_errno(rc);
	if (rc == -ECANCELED && has_cur)
		check_record(&cur);
	record_fini(&rec);
	record_fini(&cur);
	store_lookup_fini(&lk);
	dir_record_fini(&dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_part parts[MAX_ANSWERS + 1];
	struct fake_ddb_answer answers[MAX_ANSWERS];
	size_t np = fz_split(data, size, "\n--\n", parts, MAX_ANSWERS + 1), i;
	char *key, *ops;
	struct store *s;
	struct ddb *d;

	for (i = 1; i < np; i++) {
		struct fz_part a = parts[i];
		long status = fz_number(&a);

		answers[i - 1].status = status ? status : 200;
		answers[i - 1].body = a.p;
		answers[i - 1].len = a.n;
	}
	fake_awsreq_reset(answers, np - 1);
	key = fz_line(&parts[0]);
	ops = fz_str(&parts[0]);
	d = ddb_new(fake_awsreq());
	s = d ? store_ddb_new(d, "lockfs", 30000) : NULL;
	if (key && ops && s)
		for (i = 0; ops[i] && i < 16; i++)
			run_op(s, d, ops[i], key);
	store_free(s);
	ddb_free(d);
	free(key);
	free(ops);
	return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	return ddb_mutate(data, size, max_size, seed);
}
