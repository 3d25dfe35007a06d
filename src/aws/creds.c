/* creds: the default credential chain and its cache (the providers are in
 * creds/, their shared helpers in creds/creds_util.c). Any thread may call
 * creds_chain_get; the cache fields are protected by chain->mu. The thread that
 * finds the cache stale runs the one refresh in flight with mu released; others
 * wait on chain->cv (bounded) or keep using cached credentials that are still
 * valid. */
#include "creds.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clk.h"
#include "creds_provider.h"
#include "creds_trust.h"
#include "creds_util.h"
#include "log.h"
#include "text.h"

#define CREDS_TAG "creds"

#define CREDS_METADATA_TIMEOUT_MS 1000L
#define CREDS_STS_TIMEOUT_MS	  5000L
#define CREDS_PROCESS_TIMEOUT_MS  60000L

/* The refresher looks at the clock at least this often (the refresh time
 * is a wall-clock time, which may jump). */
#define CREDS_RECHECK_MS (30 * 1000LL)
/* With nothing usable cached, a failed refresh is not run again for
 * callers arriving within this time: they get its error at once. */
#define CREDS_FAIL_HOLD_MS 2000LL

/* Refresh this long before expiry, or after half the lifetime for
 * credentials that live less than twice as long. */
#define CREDS_REFRESH_MARGIN_MS (5 * 60 * 1000LL)
/* Cached credentials are handed out while a refresh runs (or after one
 * failed) until this long before they expire (at most half the margin). */
#define CREDS_USABLE_SLACK_MS (10 * 1000LL)
/* After a failed refresh of still-usable credentials, wait this long before
 * the next attempt (at most half of the remaining usable time). */
#define CREDS_RETRY_MS	   (10 * 1000LL)
#define CREDS_RETRY_MIN_MS 500LL

static const struct creds_provider *const chain_order[] = {
	&creds_env_provider, &creds_profile_provider, &creds_webid_provider,
	&creds_ecs_provider, &creds_imds_provider,
};

#define CHAIN_LEN (sizeof(chain_order) / sizeof(chain_order[0]))
/* "no AWS credentials:" and every provider's reason. */
#define CREDS_SUMMARY_MAX 600

struct creds_chain {
	/* Immutable after creds_chain_new. */
	struct creds_env env;
	struct creds_ctx ctx;
	char *profile;
	char *region;
	char *ca_file;
	char session_name[64];
	const struct clk *clock;
	int64_t wait_max_ms; /* bound on waiting for another refresh */

	pthread_mutex_t mu;
	pthread_cond_t cv;	      /* signalled when a refresh finishes */
	pthread_cond_t kick;	      /* wakes the refresher */
	pthread_t thread;	      /* the refresher, when started */
	int started;		      /* protected by mu */
	int stopping;		      /* protected by mu */
	int kicked;		      /* protected by mu: a refresh is wanted */
	int cancel;		      /* atomic: ctx.cancel points here */
	struct aws_creds cached;      /* protected by mu */
	int have_cached;	      /* protected by mu */
	int64_t refresh_at_real_ms;   /* protected by mu */
	int64_t usable_until_real_ms; /* protected by mu */
	int64_t retry_after_mono_ms;  /* protected by mu */
	int64_t expired_warned_ms;    /* protected by mu (log_gap_due) */
	int refreshing;		      /* protected by mu */
	uint64_t refresh_gen;	      /* protected by mu: finished refreshes */
	int last_rc;		      /* protected by mu: last refresh result */
	struct aws_error last_err;    /* protected by mu */
};

struct creds_chain *creds_chain_new(const struct creds_config *cfg)
{
	struct creds_chain *ch = calloc(1, sizeof(*ch));
	struct creds_config none = { 0 };
	const char *profile;
	char uuid[37];

	if (!ch)
		return NULL;
	if (!cfg)
		cfg = &none;
	if (creds_env_snapshot(&ch->env)) {
		free(ch);
		return NULL;
	}
	profile = cfg->profile && cfg->profile[0]
			  ? cfg->profile
			  : creds_env_get(&ch->env, CREDS_PROFILE);
	/* A missing "default" profile is never an error, even when named
	 * (awscfg_resolve fills in "default" when nothing chose a profile). */
	ch->ctx.profile_explicit = profile && strcmp(profile, "default");
	ch->profile = strdup(profile ? profile : "default");
	ch->region = cfg->region && cfg->region[0] ? strdup(cfg->region) : NULL;
	ch->ca_file = cfg->http.ca_file ? strdup(cfg->http.ca_file) : NULL;
	if (!ch->profile || (cfg->region && cfg->region[0] && !ch->region) ||
	    (cfg->http.ca_file && !ch->ca_file))
		goto fail;
	if (text_uuid4(uuid))
		snprintf(uuid, sizeof(uuid), "%d-%lld", (int)getpid(),
			 (long long)clk_sys_real_ms());
	snprintf(ch->session_name, sizeof(ch->session_name), "lockfs-%s", uuid);

	ch->clock = cfg->clock ? cfg->clock : &clk_system;
	ch->ctx.env = &ch->env;
	ch->ctx.profile = ch->profile;
	ch->ctx.region = ch->region;
	ch->ctx.session_name = ch->session_name;
	ch->ctx.metadata_timeout_ms = cfg->timeout_ms > 0
					      ? cfg->timeout_ms
					      : CREDS_METADATA_TIMEOUT_MS;
	ch->ctx.sts_timeout_ms =
		cfg->timeout_ms > 0 ? cfg->timeout_ms : CREDS_STS_TIMEOUT_MS;
	ch->ctx.process_timeout_ms = cfg->process_timeout_ms > 0
					     ? cfg->process_timeout_ms
					     : CREDS_PROCESS_TIMEOUT_MS;
	ch->ctx.http = cfg->http;
	ch->ctx.http.ca_file = ch->ca_file;
	ch->ctx.check_files = creds_trust_enabled(cfg->check_files);
	ch->ctx.trusted_uid = getuid();
	ch->ctx.cancel = &ch->cancel;
	/* A refresh is a few bounded exchanges or one process run. */
	ch->wait_max_ms = ch->ctx.process_timeout_ms + ch->ctx.sts_timeout_ms +
			  4 * ch->ctx.metadata_timeout_ms + 10000;

	pthread_mutex_init(&ch->mu, NULL);
	clk_cond_init_mono(&ch->cv);
	clk_cond_init_mono(&ch->kick);
	return ch;
fail:
	free(ch->profile);
	free(ch->region);
	free(ch->ca_file);
	creds_env_fini(&ch->env);
	free(ch);
	return NULL;
}

void creds_chain_free(struct creds_chain *ch)
{
	int started;

	if (!ch)
		return;
	pthread_mutex_lock(&ch->mu);
	started = ch->started;
	ch->stopping = 1;
	__atomic_store_n(&ch->cancel, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ch->kick);
	pthread_mutex_unlock(&ch->mu);
	if (started)
		pthread_join(ch->thread, NULL);
	aws_creds_clear(&ch->cached);
	pthread_cond_destroy(&ch->kick);
	pthread_cond_destroy(&ch->cv);
	pthread_mutex_destroy(&ch->mu);
	creds_env_fini(&ch->env);
	free(ch->profile);
	free(ch->region);
	free(ch->ca_file);
	free(ch);
}

/* A provider failed after others passed: its message follows theirs
 * ("no AWS credentials: AWS_ACCESS_KEY_ID unset; ...; EC2 IMDS: token
 * request refused (HTTP 403)"), as when all of them pass; the error's
 * status, type and errno stay the failing provider's. */
static void prepend_reasons(struct aws_error *err, const char *summary)
{
	char msg[CREDS_SUMMARY_MAX + sizeof(err->message) + 2];

	snprintf(msg, sizeof(msg), "%s; %s", summary, err->message);
	text_copy(err->message, sizeof(err->message), msg); /* may cut */
}

/* Walks the providers in order; fills out or err. Runs without mu. */
static int chain_resolve(struct creds_chain *ch, struct aws_creds *out,
			 struct aws_error *err)
{
	char summary[CREDS_SUMMARY_MAX];
	size_t used;
	size_t i;
	int rc;

	used = (size_t)snprintf(summary, sizeof(summary),
				"no AWS credentials:");
	for (i = 0; i < CHAIN_LEN; i++) {
		const struct creds_provider *p = chain_order[i];

		awserr_clear(err);
		rc = p->fetch(&ch->ctx, out, err);
		if (rc == 0) {
			log_debug(CREDS_TAG, "credentials from provider=%s",
				  p->name);
			return 0;
		}
		if (rc != -ENOKEY) {
			log_debug(CREDS_TAG, "provider=%s failed: %s", p->name,
				  err->message);
			if (i)
				prepend_reasons(err, summary);
			return rc;
		}
		if (used < sizeof(summary))
			used += (size_t)snprintf(
				summary + used, sizeof(summary) - used, "%s %s",
				i ? ";" : "",
				err->message[0] ? err->message : p->name);
	}
	return creds_fail(err, -ENOKEY, 0, NULL, "%s", summary);
}

/* Records a fresh credential in the cache; mu held. Credentials already
 * expired by our clock (a wrong clock, or a helper that hands out stale
 * ones) are handed out all the same, since the service judges them by its
 * own clock, and fetched again only after CREDS_RETRY_MS: not once per
 * request. */
static void cache_store(struct creds_chain *ch, struct aws_creds *fresh,
			int64_t now_real_ms, int64_t now_mono_ms)
{
	int64_t life_ms, margin_ms, slack_ms;

	aws_creds_clear(&ch->cached);
	ch->cached = *fresh;
	memset(fresh, 0, sizeof(*fresh));
	ch->have_cached = 1;
	ch->retry_after_mono_ms = 0;
	if (!ch->cached.expires_real_ms)
		return;
	life_ms = ch->cached.expires_real_ms - now_real_ms;
	if (life_ms <= 0) {
		if (log_gap_due(&ch->expired_warned_ms, now_mono_ms, 60000))
			log_warn(CREDS_TAG,
				 "credentials from %s are already expired "
				 "(check the system clock); used all the "
				 "same, and fetched again every %lld ms",
				 ch->cached.source, (long long)CREDS_RETRY_MS);
		ch->retry_after_mono_ms = now_mono_ms + CREDS_RETRY_MS;
		ch->refresh_at_real_ms = now_real_ms;
		ch->usable_until_real_ms = now_real_ms + CREDS_RETRY_MS;
		return;
	}
	margin_ms = life_ms / 2 < CREDS_REFRESH_MARGIN_MS
			    ? life_ms / 2
			    : CREDS_REFRESH_MARGIN_MS;
	slack_ms = margin_ms / 2 < CREDS_USABLE_SLACK_MS
			   ? margin_ms / 2
			   : CREDS_USABLE_SLACK_MS;
	ch->refresh_at_real_ms = ch->cached.expires_real_ms - margin_ms;
	ch->usable_until_real_ms = ch->cached.expires_real_ms - slack_ms;
}

static int copy_cached(struct creds_chain *ch, struct aws_creds *out,
		       struct aws_error *err)
{
	int rc = aws_creds_dup(out, &ch->cached);

	if (rc)
		return creds_fail(err, rc, 0, NULL,
				  "credentials: out of memory");
	awserr_clear(err);
	return 0;
}

/* The outcome of the refresh that just ran, for a caller; mu held: the
 * credentials if it succeeded or the cached ones are still usable, else
 * its error. */
static int outcome_locked(struct creds_chain *ch, struct aws_creds *out,
			  struct aws_error *err)
{
	if (ch->last_rc == 0 ||
	    (ch->have_cached &&
	     clk_real_ms(ch->clock) < ch->usable_until_real_ms))
		return copy_cached(ch, out, err);
	*err = ch->last_err;
	return ch->last_rc;
}

/* Whether the cached credentials may be handed out now; mu held. */
static int cache_usable(const struct creds_chain *ch, int64_t now_real_ms)
{
	return ch->have_cached && (!ch->cached.expires_real_ms ||
				   now_real_ms < ch->usable_until_real_ms);
}

/* Whether a refresh is due now; mu held. */
static int refresh_due(const struct creds_chain *ch, int64_t now_real_ms,
		       int64_t now_mono_ms)
{
	if (ch->refreshing || now_mono_ms < ch->retry_after_mono_ms)
		return 0;
	if (!ch->have_cached)
		return 1;
	return ch->cached.expires_real_ms &&
	       now_real_ms >= ch->refresh_at_real_ms;
}

/* One refresh; called with mu held and refreshing set by the caller,
 * returns with mu held. Wakes everyone waiting for it. */
static void refresh_locked(struct creds_chain *ch)
{
	struct aws_creds fresh = { 0 };
	struct aws_error ferr;
	int64_t now_real_ms, now_mono_ms;
	int rc;

	pthread_mutex_unlock(&ch->mu);
	awserr_clear(&ferr);
	rc = chain_resolve(ch, &fresh, &ferr);
	pthread_mutex_lock(&ch->mu);
	now_real_ms = clk_real_ms(ch->clock);
	now_mono_ms = clk_mono_ms(ch->clock);
	ch->refreshing = 0;
	ch->refresh_gen++;
	ch->last_rc = rc;
	ch->last_err = ferr;
	if (rc == 0) {
		cache_store(ch, &fresh, now_real_ms, now_mono_ms);
	} else if (rc == -ECANCELED) {
		/* The chain is being freed. */
	} else if (ch->have_cached && now_real_ms < ch->usable_until_real_ms) {
		int64_t left_ms = ch->usable_until_real_ms - now_real_ms;
		int64_t retry_ms = left_ms / 2 < CREDS_RETRY_MS
					   ? left_ms / 2
					   : CREDS_RETRY_MS;

		if (retry_ms < CREDS_RETRY_MIN_MS)
			retry_ms = CREDS_RETRY_MIN_MS;
		ch->retry_after_mono_ms = now_mono_ms + retry_ms;
		log_warn(CREDS_TAG,
			 "refreshing credentials failed, keeping the cached "
			 "ones (valid %lld s more): %s",
			 (long long)(left_ms / 1000), ferr.message);
	} else if (ch->started) {
		/* Nothing usable: callers arriving just after get this error
		 * at once instead of each waiting for another refresh. */
		ch->retry_after_mono_ms = now_mono_ms + CREDS_FAIL_HOLD_MS;
		log_warn(CREDS_TAG, "refreshing credentials failed: %s",
			 ferr.message);
	}
	pthread_cond_broadcast(&ch->cv);
	aws_creds_clear(&fresh);
}

/* The refresher: refreshes when the cache is due (early, before expiry)
 * or when a caller found nothing usable, and otherwise sleeps until the
 * next refresh time (re-checking the wall clock now and then). */
static void *refresher_main(void *arg)
{
	struct creds_chain *ch = arg;

	pthread_mutex_lock(&ch->mu);
	while (!ch->stopping) {
		int64_t now_real_ms = clk_real_ms(ch->clock);
		int64_t now_mono_ms = clk_mono_ms(ch->clock);
		int64_t sleep_ms = CREDS_RECHECK_MS, wake_mono_ms;
		struct timespec ts;

		if (refresh_due(ch, now_real_ms, now_mono_ms) &&
		    (ch->kicked || ch->have_cached)) {
			ch->kicked = 0;
			ch->refreshing = 1;
			refresh_locked(ch);
			continue;
		}
		if (ch->have_cached && ch->cached.expires_real_ms) {
			int64_t t = ch->refresh_at_real_ms - now_real_ms;

			if (ch->retry_after_mono_ms - now_mono_ms > t)
				t = ch->retry_after_mono_ms - now_mono_ms;
			if (t < sleep_ms)
				sleep_ms = t < 1 ? 1 : t;
		} else if (ch->kicked) {
			int64_t t = ch->retry_after_mono_ms - now_mono_ms;

			sleep_ms = t < 1 ? 1 : t < sleep_ms ? t : sleep_ms;
		}
		wake_mono_ms = clk_sys_mono_ms() + sleep_ms;
		clk_mono_timespec(wake_mono_ms, &ts);
		pthread_cond_timedwait(&ch->kick, &ch->mu, &ts);
	}
	pthread_mutex_unlock(&ch->mu);
	return NULL;
}

int creds_chain_start(struct creds_chain *ch)
{
	int rc;

	pthread_mutex_lock(&ch->mu);
	if (ch->started) {
		pthread_mutex_unlock(&ch->mu);
		return 0;
	}
	rc = pthread_create(&ch->thread, NULL, refresher_main, ch);
	if (!rc)
		ch->started = 1;
	pthread_mutex_unlock(&ch->mu);
	return -rc;
}

/* With the refresher running: the cache, or a bounded wait for it. */
static int get_from_refresher(struct creds_chain *ch, struct aws_creds *out,
			      struct aws_error *err, int64_t wait_ms)
{
	int64_t until_mono_ms = clk_sys_mono_ms() + wait_ms;
	uint64_t gen;
	int rc;

	for (;;) {
		int64_t now_real_ms = clk_real_ms(ch->clock);
		int64_t now_mono_ms = clk_mono_ms(ch->clock);
		struct timespec ts;

		if (cache_usable(ch, now_real_ms)) {
			if (refresh_due(ch, now_real_ms, now_mono_ms))
				pthread_cond_signal(&ch->kick);
			return copy_cached(ch, out, err);
		}
		if (!ch->refreshing && now_mono_ms < ch->retry_after_mono_ms &&
		    ch->last_rc) {
			*err = ch->last_err;
			return ch->last_rc;
		}
		ch->kicked = 1;
		pthread_cond_signal(&ch->kick);
		gen = ch->refresh_gen;
		while (ch->refresh_gen == gen) {
			if (clk_sys_mono_ms() >= until_mono_ms)
				return creds_fail(err, -ETIMEDOUT, 0, NULL,
						  "credentials: none usable "
						  "and the refresh did not "
						  "finish within %lld ms",
						  (long long)wait_ms);
			clk_mono_timespec(until_mono_ms, &ts);
			pthread_cond_timedwait(&ch->cv, &ch->mu, &ts);
		}
		if (cache_usable(ch, clk_real_ms(ch->clock)))
			return copy_cached(ch, out, err);
		rc = ch->last_rc ? ch->last_rc : -ENOKEY;
		*err = ch->last_err;
		return rc;
	}
}

int creds_chain_get_wait(struct creds_chain *ch, struct aws_creds *out,
			 struct aws_error *err, long max_wait_ms)
{
	struct aws_error local;
	int64_t now_real_ms, now_mono_ms;
	int rc;

	if (!err)
		err = &local;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ch->mu);
	if (ch->started) {
		rc = get_from_refresher(
			ch, out, err,
			max_wait_ms > 0 && max_wait_ms < ch->wait_max_ms
				? max_wait_ms
				: ch->wait_max_ms);
		pthread_mutex_unlock(&ch->mu);
		return rc;
	}
	for (;;) {
		int64_t wait_until_mono_ms;
		uint64_t gen;

		now_real_ms = clk_real_ms(ch->clock);
		now_mono_ms = clk_mono_ms(ch->clock);
		if (ch->have_cached) {
			int usable = now_real_ms < ch->usable_until_real_ms;

			if (!ch->cached.expires_real_ms ||
			    now_real_ms < ch->refresh_at_real_ms ||
			    (usable &&
			     (ch->refreshing ||
			      now_mono_ms < ch->retry_after_mono_ms))) {
				rc = copy_cached(ch, out, err);
				pthread_mutex_unlock(&ch->mu);
				return rc;
			}
		}
		if (!ch->refreshing)
			break;
		/* Another thread is refreshing and we have nothing usable. */
		gen = ch->refresh_gen;
		wait_until_mono_ms = clk_sys_mono_ms() + ch->wait_max_ms;
		while (ch->refresh_gen == gen) {
			struct timespec ts;

			if (clk_sys_mono_ms() >= wait_until_mono_ms) {
				pthread_mutex_unlock(&ch->mu);
				return creds_fail(err, -ETIMEDOUT, 0, NULL,
						  "credentials: timed out "
						  "waiting for the refresh in "
						  "another thread");
			}
			clk_mono_timespec(wait_until_mono_ms, &ts);
			pthread_cond_timedwait(&ch->cv, &ch->mu, &ts);
		}
		/* Share the outcome of the refresh we waited for. */
		rc = outcome_locked(ch, out, err);
		pthread_mutex_unlock(&ch->mu);
		return rc;
	}
	/* Not started (start-up): this caller runs the refresh. */
	ch->refreshing = 1;
	refresh_locked(ch);
	rc = outcome_locked(ch, out, err);
	pthread_mutex_unlock(&ch->mu);
	return rc;
}

int creds_chain_get(struct creds_chain *ch, struct aws_creds *out,
		    struct aws_error *err)
{
	return creds_chain_get_wait(ch, out, err, 0);
}
