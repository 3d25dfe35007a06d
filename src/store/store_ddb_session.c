/* store_ddb_session: a mount's session item (doc/session-leases.md):
 * lock_key ".lockfs-session/<owner>", sort_key "lockfs:session", its
 * version (record_version_number, a fresh UUID on every heartbeat), its
 * state (lockfs_state: live, or dead once fenced), its holder's lease
 * (lease_duration) and expiry_time for the TTL. Create, heartbeat, read,
 * fence and end, each one request; stateless; any thread. */
#include "store_ddb_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

#define A_STATE	       "lockfs_state"
#define STATE_LIVE     "live"
#define STATE_DEAD     "dead"
#define KIND_SESS      "session"
#define IS_LIVE_RVN    A_RVN " = :rvn AND " A_STATE " = :live"
#define HB_REAL_MS_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z */

int store_ddb_session_of_item(const struct ddb_item *it,
			      int64_t default_lease_ms,
			      struct session_record *out)
{
	const char *s, *txt;
	int64_t hb;
	char *end;
	double v;

	memset(out, 0, sizeof(*out));
	if (ddb_item_get_s(it, A_RVN, &s) || strlen(s) >= sizeof(out->rvn))
		return -EPROTO;
	text_copy(out->rvn, sizeof(out->rvn), s);
	/* Only "dead" is dead: anything else keeps it alive (never taken
	 * over on a guess). */
	out->dead = !ddb_item_get_s(it, A_STATE, &s) && !strcmp(s, STATE_DEAD);
	out->lease_ms = default_lease_ms;
	if (!ddb_item_get_n(it, A_HB, &hb) && hb > 0 && hb <= HB_REAL_MS_MAX)
		out->heartbeat_real_ms = hb;
	if (!ddb_item_get_n_text(it, A_LEASE, &txt)) {
		v = strtod(txt, &end);
		if (!*end && isfinite(v) && v >= 0.0005 && v <= 1e9)
			out->lease_ms = (int64_t)llround(v * 1000.0);
	}
	return 0;
}

static struct ddb_item *session_key(const char *key)
{
	return record_session_key_ok(key) ? key_item(key, RECORD_SORT_SESSION)
					  : NULL;
}

int store_ddb_session_create(struct store *s, const char *key,
			     const char *owner, const char *rvn,
			     int64_t lease_ms, int64_t expiry_real_s,
			     int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *it = session_key(key);
	struct ddb_expr cond = {
		.condition = "attribute_not_exists(" A_KEY ")",
	};
	struct ddb_call call;
	char lease[32];
	int rc = it ? 0 : record_session_key_ok(key) ? -ENOMEM : -EINVAL;

	text_format_seconds_short(lease_ms, lease, sizeof(lease));
	if (!rc)
		rc = ddb_item_set_s(it, A_KIND, KIND_SESS);
	if (!rc)
		rc = ddb_item_set_s(it, A_OWNER, owner ? owner : "");
	if (!rc)
		rc = ddb_item_set_s(it, A_RVN, rvn);
	if (!rc)
		rc = ddb_item_set_s(it, A_STATE, STATE_LIVE);
	if (!rc)
		rc = ddb_item_set_n_text(it, A_LEASE, lease);
	if (!rc)
		rc = ddb_item_set_n(it, A_EXPIRY, expiry_real_s);
	if (!rc) {
		call_init(&call, deadline);
		rc = ddb_put_item(sd->ddb, sd->table, it, &cond, NULL, &call);
		if (rc == -ECANCELED)
			rc = -EEXIST;
	}
	ddb_item_free(it);
	return rc;
}

int store_ddb_session_beat(struct store *s, const char *key,
			   const char *expect_rvn, const char *new_rvn,
			   int64_t expiry_real_s, int64_t heartbeat_real_ms,
			   int64_t deadline, struct session_record *cur,
			   bool *has_cur)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = session_key(key), *vals = ddb_item_new();
	struct ddb_item *old = NULL;
	struct ddb_expr expr = {
		.update = "SET " A_RVN " = :new, " A_EXPIRY " = :exp, " A_HB
			  " = :hb",
		.condition = IS_LIVE_RVN,
	};
	struct ddb_call call;
	int rc = k && vals ? 0 : -ENOMEM;

	if (has_cur)
		*has_cur = false;
	if (!rc)
		rc = ddb_item_set_s(vals, ":rvn", expect_rvn);
	if (!rc)
		rc = ddb_item_set_s(vals, ":live", STATE_LIVE);
	if (!rc)
		rc = ddb_item_set_s(vals, ":new", new_rvn);
	if (!rc)
		rc = ddb_item_set_n(vals, ":exp", expiry_real_s);
	if (!rc)
		rc = ddb_item_set_n(vals, ":hb", heartbeat_real_ms);
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, &old, &call);
	}
	if (rc == -ECANCELED && old) {
		struct session_record tmp;
		int prc = store_ddb_session_of_item(old, sd->default_lease_ms,
						    &tmp);

		if (prc)
			rc = prc;
		else if (cur)
			*cur = tmp;
		if (!prc && has_cur)
			*has_cur = true;
	}
	ddb_item_free(old);
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

int store_ddb_session_get(struct store *s, const char *key, int64_t deadline,
			  struct session_record *out)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = session_key(key), *it = NULL;
	struct ddb_call call;
	int rc;

	if (!k)
		return record_session_key_ok(key) ? -ENOMEM : -EINVAL;
	call_init(&call, deadline);
	rc = ddb_get_item(sd->ddb, sd->table, k, true, &it, &call);
	if (!rc)
		rc = store_ddb_session_of_item(it, sd->default_lease_ms, out);
	ddb_item_free(it);
	ddb_item_free(k);
	return rc;
}

/* No item of key was seen for a lease: a dead one in its place, so that
 * a session of that key can never be created (and beat) again. */
static int fence_absent(struct store_ddb *sd, const char *key,
			int64_t expiry_real_s, int64_t deadline)
{
	struct ddb_item *it = session_key(key);
	struct ddb_expr cond = {
		.condition = "attribute_not_exists(" A_KEY ")",
	};
	struct ddb_call call;
	int rc = it ? ddb_item_set_s(it, A_KIND, KIND_SESS) : -ENOMEM;

	if (!rc)
		rc = ddb_item_set_s(it, A_OWNER, "");
	if (!rc)
		rc = ddb_item_set_s(it, A_RVN, "-");
	if (!rc)
		rc = ddb_item_set_s(it, A_STATE, STATE_DEAD);
	if (!rc)
		rc = ddb_item_set_n(it, A_EXPIRY, expiry_real_s);
	if (!rc) {
		call_init(&call, deadline);
		rc = ddb_put_item(sd->ddb, sd->table, it, &cond, NULL, &call);
	}
	ddb_item_free(it);
	return rc;
}

int store_ddb_session_fence(struct store *s, const char *key,
			    const char *observed_rvn, int64_t expiry_real_s,
			    int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k, *vals;
	struct ddb_expr expr = {
		.update = "SET " A_STATE " = :dead, " A_EXPIRY " = :exp",
		.condition = A_RVN " = :rvn",
	};
	struct ddb_call call;
	int rc;

	if (!record_session_key_ok(key))
		return -EINVAL;
	if (!observed_rvn)
		return fence_absent(sd, key, expiry_real_s, deadline);
	k = session_key(key);
	vals = ddb_item_new();
	rc = k && vals ? ddb_item_set_s(vals, ":rvn", observed_rvn) : -ENOMEM;
	if (!rc)
		rc = ddb_item_set_s(vals, ":dead", STATE_DEAD);
	if (!rc)
		rc = ddb_item_set_n(vals, ":exp", expiry_real_s);
	if (!rc) {
		expr.values = vals;
		call_init(&call, deadline);
		rc = ddb_update_item(sd->ddb, sd->table, k, &expr,
				     DDB_RETURN_NONE, NULL, &call);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}

int store_ddb_session_end(struct store *s, const char *key,
			  const char *expect_rvn, int64_t deadline)
{
	struct store_ddb *sd = to_sd(s);
	struct ddb_item *k = session_key(key), *vals = ddb_item_new();
	struct ddb_expr cond = { .condition = A_RVN " = :rvn" };
	struct ddb_call call;
	int rc = k && vals ? ddb_item_set_s(vals, ":rvn", expect_rvn) : -ENOMEM;

	if (!rc) {
		cond.values = vals;
		call_init(&call, deadline);
		rc = ddb_delete_item(sd->ddb, sd->table, k, &cond,
				     DDB_RETURN_NONE, NULL, &call);
	}
	ddb_item_free(vals);
	ddb_item_free(k);
	return rc;
}
