/* creds_util: what the credential providers and the chain share: one-line
 * errors, credentials in secret pages (creds_set, aws_creds_clear and
 * aws_creds_dup), ISO 8601 times, the JSON answers with credentials, token
 * files, the HTTP client of a fetch. No shared state: any thread (a
 * provider runs in the thread doing a refresh); a credential's secret pages
 * are shared by its copies through an atomic count. */
#include "creds_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

#define CREDS_MAX_ANSWER_BYTES ((size_t)64 << 10)

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
