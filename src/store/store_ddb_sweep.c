/* store_ddb_sweep: -o sweep=S, the fleet's tagging sweep: rows that
 * python_dynamodb_lock clients write carry no lockfs_parent, so the index
 * does not list them until they are tagged. Every mount with the option
 * reads the index's state row (lockfs:index) once a period; the sweep's
 * version there (lockfs_sweep_v) changes at every sweep. A mount that has
 * seen the same version for a whole period on its own monotonic clock (the
 * rule by which rows lapse) claims the next sweep by a conditional write
 * of a new version; the one whose write lands reads the table once and
 * tags what it finds (store_ddb_backfill_rows). So the fleet pays one
 * Scan of the table a period, whatever its number of mounts; each mount a
 * consistent GetItem a period, and a conditional UpdateItem when it
 * claims. No wall clock decides anything.
 *
 * Threads: its own thread (started after the daemon forks); start and stop
 * from the main thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clk.h"
#include "log.h"
#include "text.h"

#define A_SWEEP_V  "lockfs_sweep_v"
#define A_SWEEP_BY "lockfs_sweep_by"
#define REQ_MS	   30000

struct store_ddb_sweep {
	struct ddb *ddb;
	char *table, *owner;
	int64_t period_ms;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop; /* under mu */
	/* the thread's own */
	char seen_v[RECORD_RVN_MAX];
	bool seen;
	int64_t seen_mono_ms;
};

/* The sweep's version in the state row: 0 (v empty when none), -ENOENT
 * when there is no state row (the index is not ready), or -errno. */
static int read_v(struct store_ddb_sweep *sw, char *v, size_t len)
{
	struct ddb_item *k = key_item(INDEX_STATE_KEY, INDEX_STATE_KEY);
	struct ddb_item *it = NULL;
	struct ddb_call call;
	const char *s;
	int rc;

	if (!k)
		return -ENOMEM;
	call_init(&call, clk_sys_mono_ms() + REQ_MS);
	rc = ddb_get_item(sw->ddb, sw->table, k, true, &it, &call);
	v[0] = '\0';
	if (!rc && !ddb_item_get_s(it, A_SWEEP_V, &s))
		text_copy(v, len, s);
	ddb_item_free(it);
	ddb_item_free(k);
	return rc;
}

/* Claims the next sweep if the version is still old ("" for none). */
static int claim(struct store_ddb_sweep *sw, const char *old)
{
	struct ddb_item *k = key_item(INDEX_STATE_KEY, INDEX_STATE_KEY);
	struct ddb_item *vals = ddb_item_new();
	char v[RECORD_RVN_MAX];
	struct ddb_expr expr = {
		.update = "SET " A_SWEEP_V " = :v, " A_SWEEP_BY " = :by",
		.condition = old[0] ? A_SWEEP_V " = :old"
				    : "attribute_exists(" A_KEY
				      ") AND attribute_not_exists(" A_SWEEP_V
				      ")",
		.values = vals,
	};
	struct ddb_call call;
	int rc = k && vals ? text_uuid4(v) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(vals, ":v", v);
	if (!rc)
		rc = ddb_item_set_s(vals, ":by", sw->owner);
	if (!rc && old[0])
		rc = ddb_item_set_s(vals, ":old", old);
	if (!rc) {
		call_init(&call, clk_sys_mono_ms() + REQ_MS);
		rc = ddb_update_item(sw->ddb, sw->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &call);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

/* One period's turn: notes the version, claims and sweeps when it stood
 * still for a period. */
static void turn(struct store_ddb_sweep *sw)
{
	char v[RECORD_RVN_MAX];
	int64_t now = clk_sys_mono_ms();
	long read = 0, tagged = 0, hints = 0;
	int rc = read_v(sw, v, sizeof(v));

	if (rc) {
		if (rc != -ENOENT)
			log_debug("sweep", "cannot read the index's state: %d",
				  rc);
		return;
	}
	if (!sw->seen || strcmp(v, sw->seen_v)) {
		text_copy(sw->seen_v, sizeof(sw->seen_v), v);
		sw->seen = true;
		sw->seen_mono_ms = now;
		return;
	}
	if (now - sw->seen_mono_ms < sw->period_ms)
		return;
	rc = claim(sw, v);
	sw->seen = false; /* a new version either way */
	if (rc) {
		if (rc != -ECANCELED)
			log_debug("sweep", "claim failed: %d", rc);
		return;
	}
	rc = store_ddb_backfill_rows(sw->ddb, sw->table, NULL, &read, &tagged,
				     &hints);
	if (rc)
		log_warn("sweep", "the sweep of %s stopped: %d (%ld rows read)",
			 sw->table, rc, read);
	else if (tagged || hints)
		log_info("sweep",
			 "%s: %ld rows read, %ld tagged, %ld directory hints",
			 sw->table, read, tagged, hints);
}

static void *sweep_main(void *arg)
{
	struct store_ddb_sweep *sw = arg;
	struct timespec ts;

	pthread_mutex_lock(&sw->mu);
	while (!sw->stop) {
		/* A period's half, jittered: a version is noted within it. */
		uint64_t r = 0;
		int64_t wait;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint64_t)clk_sys_mono_us();
		wait = sw->period_ms / 2 +
		       (int64_t)(r % (uint64_t)(sw->period_ms / 4 + 1));

		clk_mono_timespec(clk_sys_mono_ms() + wait, &ts);
		pthread_cond_timedwait(&sw->cv, &sw->mu, &ts);
		if (sw->stop)
			break;
		pthread_mutex_unlock(&sw->mu);
		turn(sw);
		pthread_mutex_lock(&sw->mu);
	}
	pthread_mutex_unlock(&sw->mu);
	return NULL;
}

struct store_ddb_sweep *store_ddb_sweep_new(struct ddb *d, const char *table,
					    const char *owner,
					    int64_t period_ms)
{
	struct store_ddb_sweep *sw = calloc(1, sizeof(*sw));

	if (!sw)
		return NULL;
	sw->ddb = d;
	sw->table = strdup(table);
	sw->owner = strdup(owner);
	sw->period_ms = period_ms > 0 ? period_ms : 1;
	if (!sw->table || !sw->owner || pthread_mutex_init(&sw->mu, NULL) ||
	    clk_cond_init_mono(&sw->cv)) {
		free(sw->table);
		free(sw->owner);
		free(sw);
		return NULL;
	}
	return sw;
}

int store_ddb_sweep_start(struct store_ddb_sweep *sw)
{
	if (!sw || sw->started)
		return 0;
	if (pthread_create(&sw->thread, NULL, sweep_main, sw))
		return -EAGAIN;
	sw->started = true;
	return 0;
}

void store_ddb_sweep_free(struct store_ddb_sweep *sw)
{
	if (!sw)
		return;
	if (sw->started) {
		pthread_mutex_lock(&sw->mu);
		sw->stop = true;
		pthread_cond_signal(&sw->cv);
		pthread_mutex_unlock(&sw->mu);
		pthread_join(sw->thread, NULL);
	}
	pthread_cond_destroy(&sw->cv);
	pthread_mutex_destroy(&sw->mu);
	free(sw->table);
	free(sw->owner);
	free(sw);
}
