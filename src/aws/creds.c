/* creds: the default credential chain and its cache, plus the helpers the
 * providers share (messages, JSON credential answers, ISO 8601 times, token
 * files). Any thread may call creds_chain_get; the cache fields are
 * protected by chain->mu. The thread that finds the cache stale runs the
 * one refresh in flight with mu released; others wait on chain->cv
 * (bounded) or keep using cached credentials that are still valid. */
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
#include "log.h"
#include "text.h"

#define CREDS_TAG "creds"

#define CREDS_METADATA_TIMEOUT_MS 1000L
#define CREDS_STS_TIMEOUT_MS	  5000L
#define CREDS_PROCESS_TIMEOUT_MS  60000L
#define CREDS_MAX_ANSWER_BYTES	  ((size_t)64 << 10)

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
	int refreshing;		      /* protected by mu */
	uint64_t refresh_gen;	      /* protected by mu: finished refreshes */
	int last_rc;		      /* protected by mu: last refresh result */
	struct aws_error last_err;    /* protected by mu */
};

/* ---- helpers shared by the providers ---- */

int creds_fail(struct aws_error *err, int rc, long http_status,
	       const char *type, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	awserr_set(err, http_status, type, msg);
	return rc;
}

int creds_fail_transport(struct aws_error *err, int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	awserr_set(err, 0, NULL, msg);
	err->transport = rc;
	return rc;
}

static int token_chars_ok(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

int creds_header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return 0;
	return 1;
}

/* The strings of one credential in secret pages, shared by its copies. */
struct creds_secret {
	int refs; /* atomic */
	char data[];
};

/* Packs the strings (token may be NULL) into new secret pages. */
static int creds_pack(struct aws_creds *c, const char *id, const char *secret,
		      const char *token)
{
	size_t ni = id ? strlen(id) + 1 : 0,
	       ns = secret ? strlen(secret) + 1 : 0;
	size_t nt = token ? strlen(token) + 1 : 0;
	struct creds_secret *b;

	b = buf_secret_alloc(sizeof(*b) + ni + ns + nt);
	if (!b)
		return -ENOMEM;
	b->refs = 1;
	c->shared = b;
	c->access_key_id = id ? memcpy(b->data, id, ni) : NULL;
	c->secret_access_key = secret ? memcpy(b->data + ni, secret, ns) : NULL;
	c->session_token = token ? memcpy(b->data + ni + ns, token, nt) : NULL;
	return 0;
}

int creds_set(struct aws_creds *out, const char *access_key_id,
	      const char *secret_access_key, const char *session_token,
	      int64_t expires_real_ms, const char *source)
{
	struct aws_creds c = { 0 };

	if (session_token && !session_token[0])
		session_token = NULL;
	if (!token_chars_ok(access_key_id) ||
	    !token_chars_ok(secret_access_key) ||
	    (session_token && !token_chars_ok(session_token)))
		return -EINVAL;
	if (creds_pack(&c, access_key_id, secret_access_key, session_token))
		return -ENOMEM;
	c.expires_real_ms = expires_real_ms;
	c.source = source;
	aws_creds_clear(out);
	*out = c;
	return 0;
}

void aws_creds_clear(struct aws_creds *c)
{
	if (!c)
		return;
	if (c->shared) {
		if (__atomic_sub_fetch(&c->shared->refs, 1, __ATOMIC_ACQ_REL) ==
		    0)
			buf_secret_free(c->shared);
	} else {
		buf_free_secret(c->access_key_id);
		buf_free_secret(c->secret_access_key);
		buf_free_secret(c->session_token);
	}
	c->shared = NULL;
	c->access_key_id = NULL;
	c->secret_access_key = NULL;
	c->session_token = NULL;
	c->expires_real_ms = 0;
	c->source = NULL;
}

int aws_creds_dup(struct aws_creds *dst, const struct aws_creds *src)
{
	struct aws_creds c = *src;

	if (src->shared) {
		__atomic_add_fetch(&src->shared->refs, 1, __ATOMIC_RELAXED);
	} else if (src->access_key_id || src->secret_access_key ||
		   src->session_token) {
		if (creds_pack(&c, src->access_key_id, src->secret_access_key,
			       src->session_token))
			return -ENOMEM;
	}
	*dst = c;
	return 0;
}

static int parse_digits(const char **s, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*out = v;
	return 0;
}

static int expect_char(const char **s, const char *any)
{
	if (!**s || !strchr(any, **s))
		return -EINVAL;
	(*s)++;
	return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian, y >= 1970). */
static int64_t days_since_epoch(int y, int m, int d)
{
	static const int before_month[12] = { 0,   31,	59,  90,  120, 151,
					      181, 212, 243, 273, 304, 334 };
	/* Leap days up to the end of the year before (Jan, Feb) or of y. */
	int64_t ly = m <= 2 ? y - 1 : y;
	int64_t leaps = ly / 4 - ly / 100 + ly / 400;
	int64_t leaps1969 = 1969 / 4 - 1969 / 100 + 1969 / 400;

	return (int64_t)(y - 1970) * 365 + (leaps - leaps1969) +
	       before_month[m - 1] + d - 1;
}

int creds_parse_time(const char *s, int64_t *real_ms)
{
	static const int mdays[12] = { 31, 29, 31, 30, 31, 30,
				       31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, ms = 0, digits = 0, oh = 0, om = 0, sign = 0;
	int64_t t;

	if (!s || parse_digits(&s, 4, &y) || expect_char(&s, "-") ||
	    parse_digits(&s, 2, &mo) || expect_char(&s, "-") ||
	    parse_digits(&s, 2, &d) || expect_char(&s, "Tt ") ||
	    parse_digits(&s, 2, &h) || expect_char(&s, ":") ||
	    parse_digits(&s, 2, &mi) || expect_char(&s, ":") ||
	    parse_digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.' || *s == ',') {
		s++;
		for (; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		if (!digits)
			return -EINVAL;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s == '-' ? -1 : 1;
		s++;
		if (parse_digits(&s, 2, &oh))
			return -EINVAL;
		if (*s == ':')
			s++;
		if (parse_digits(&s, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s)
		return -EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 || y % 400 == 0)))
		return -EINVAL;
	t = days_since_epoch(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	t -= (int64_t)sign * (oh * 3600 + om * 60);
	*real_ms = t * 1000 + ms;
	return 0;
}

int creds_parse_expiration(const char *s, int64_t *real_ms)
{
	int rc = creds_parse_time(s, real_ms);

	/* 0 means "never expires": an Expiration at or before the epoch
	 * would make credentials that are never refreshed. */
	return rc ? rc : *real_ms > 0 ? 0 : -EINVAL;
}

/* Overwrites every string of a parsed tree before it is freed. */
static void json_wipe(cJSON *item)
{
	for (; item; item = item->next) {
		if (item->valuestring)
			buf_wipe(item->valuestring, strlen(item->valuestring));
		json_wipe(item->child);
	}
}

static const char *json_str(const cJSON *root, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int json_fields(const char *who, const char *source,
		       enum creds_json_kind kind, const cJSON *root,
		       struct aws_creds *out, struct aws_error *err)
{
	const char *id, *secret, *token, *exp, *code;
	int64_t expires_real_ms = 0;
	int rc;

	if (!cJSON_IsObject(root))
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: the answer is not a JSON object", who);
	if (kind == CREDS_JSON_IMDS) {
		code = json_str(root, "Code");
		if (code && strcmp(code, "Success")) {
			const char *msg = json_str(root, "Message");

			return creds_fail(err, -EACCES, 0, code,
					  "%s: credentials not available: "
					  "Code %.64s%s%.120s",
					  who, code, msg ? ": " : "",
					  msg ? msg : "");
		}
	}
	if (kind == CREDS_JSON_PROCESS) {
		const cJSON *v =
			cJSON_GetObjectItemCaseSensitive(root, "Version");

		if (!cJSON_IsNumber(v) || v->valuedouble != 1.0)
			return creds_fail(err, -EPROTO, 0, NULL,
					  "%s: output lacks \"Version\": 1",
					  who);
	}
	id = json_str(root, "AccessKeyId");
	secret = json_str(root, "SecretAccessKey");
	token = json_str(root,
			 kind == CREDS_JSON_PROCESS ? "SessionToken" : "Token");
	exp = json_str(root, "Expiration");
	if (!id || !id[0] || !secret || !secret[0])
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: the answer lacks AccessKeyId or "
				  "SecretAccessKey",
				  who);
	if (!exp && kind != CREDS_JSON_PROCESS)
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: the answer lacks Expiration", who);
	if (exp && creds_parse_expiration(exp, &expires_real_ms))
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: Expiration is not an ISO 8601 time "
				  "after 1970",
				  who);
	rc = creds_set(out, id, secret, token, expires_real_ms, source);
	if (rc == -EINVAL)
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: the credentials hold spaces or control "
				  "characters",
				  who);
	if (rc)
		return creds_fail(err, rc, 0, NULL, "%s: out of memory", who);
	return 0;
}

int creds_json_parse(const char *who, const char *source,
		     enum creds_json_kind kind, const char *body, size_t len,
		     struct aws_creds *out, struct aws_error *err)
{
	cJSON *root;
	int rc;

	root = body && len ? cJSON_ParseWithLength(body, len) : NULL;
	if (!root)
		return creds_fail(err, -EPROTO, 0, NULL,
				  "%s: the answer is not valid JSON", who);
	rc = json_fields(who, source, kind, root, out, err);
	json_wipe(root);
	cJSON_Delete(root);
	return rc;
}

int creds_read_file(const char *path, size_t max, struct buf *out)
{
	int fd, rc;

	buf_reset(out);
	out->max = max;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	rc = buf_read_fd(out, fd);
	close(fd);
	if (rc)
		return rc;
	while (out->len && strchr(" \t\r\n", out->data[out->len - 1]))
		out->data[--out->len] = '\0';
	if (out->len && memchr(out->data, '\0', out->len))
		return -EINVAL;
	return 0;
}

struct http_client *creds_http_client(const struct creds_ctx *ctx, int metadata)
{
	struct http_opts o = ctx->http;

	if (!o.max_response_bytes ||
	    o.max_response_bytes > CREDS_MAX_ANSWER_BYTES)
		o.max_response_bytes = CREDS_MAX_ANSWER_BYTES;
	if (metadata) {
		o.no_proxy = 1;
		o.connect_timeout_ms = ctx->metadata_timeout_ms;
		/* Link-local services over plain HTTP by design; their
		 * providers check the host. */
		o.allow_plain_http = 1;
	}
	return http_client_new(&o);
}

int creds_status_errno(long status)
{
	if (status == 401 || status == 403)
		return -EACCES;
	if (status == 429)
		return -EAGAIN;
	if (status >= 500)
		return -EIO;
	return -EPROTO;
}

/* ---- the chain ---- */

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

/* Records a fresh credential in the cache; mu held. */
static void cache_store(struct creds_chain *ch, struct aws_creds *fresh,
			int64_t now_real_ms)
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
		log_warn(CREDS_TAG,
			 "credentials from %s are already expired "
			 "(check the system clock)",
			 ch->cached.source);
		life_ms = 0;
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
		cache_store(ch, &fresh, now_real_ms);
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
		if (ch->last_rc == 0 ||
		    (ch->have_cached &&
		     clk_real_ms(ch->clock) < ch->usable_until_real_ms)) {
			rc = copy_cached(ch, out, err);
		} else {
			*err = ch->last_err;
			rc = ch->last_rc;
		}
		pthread_mutex_unlock(&ch->mu);
		return rc;
	}
	/* Not started (start-up): this caller runs the refresh. */
	ch->refreshing = 1;
	refresh_locked(ch);
	if (ch->last_rc == 0 ||
	    (ch->have_cached &&
	     clk_real_ms(ch->clock) < ch->usable_until_real_ms)) {
		rc = copy_cached(ch, out, err);
	} else {
		*err = ch->last_err;
		rc = ch->last_rc;
	}
	pthread_mutex_unlock(&ch->mu);
	return rc;
}

int creds_chain_get(struct creds_chain *ch, struct aws_creds *out,
		    struct aws_error *err)
{
	return creds_chain_get_wait(ch, out, err, 0);
}
