/* creds_util: the helpers the credential providers and the chain share
 * (creds_util.c). Internal to lockfs_creds; any thread. */
#ifndef LOCKFS_CREDS_UTIL_H
#define LOCKFS_CREDS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "awserr.h"
#include "buf.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"

/* Fills err with a one-line message (and status/type when given) and
 * returns rc. The message must never contain a secret. */
int creds_fail(struct aws_error *err, int rc, long http_status,
	       const char *type, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* The same for a transport failure (rc from http_perform): err->transport
 * is set so awserr_is_retryable and awserr_to_errno see it. */
int creds_fail_transport(struct aws_error *err, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fills out with copies (token may be NULL or empty: none). Every string
 * must be non-empty printable ASCII without spaces (they end up in HTTP
 * headers). 0, -EINVAL (bad characters; out untouched) or -ENOMEM. */
int creds_set(struct aws_creds *out, const char *access_key_id,
	      const char *secret_access_key, const char *session_token,
	      int64_t expires_real_ms, const char *source);

/* Parses an ISO 8601 / RFC 3339 UTC time ("2026-11-22T10:00:00Z",
 * fractions, "+01:00" offsets) into epoch ms. 0 or -EINVAL. */
int creds_parse_time(const char *s, int64_t *real_ms);
/* creds_parse_time for a credential's Expiration: -EINVAL also for a time
 * at or before the epoch (expires_real_ms 0 means "never expires"). */
int creds_parse_expiration(const char *s, int64_t *real_ms);

/* The JSON answers with credentials. */
enum creds_json_kind {
	CREDS_JSON_PROCESS, /* Version 1, SessionToken, Expiration optional */
	CREDS_JSON_ECS,	    /* Token, Expiration */
	CREDS_JSON_IMDS,    /* Code "Success", Token, Expiration */
};

/* Parses an answer into out (source is set to `source`). who prefixes the
 * messages. 0, -EPROTO (malformed, missing fields), -EACCES (IMDS Code other
 * than Success), -ENOMEM. Wipes the secrets it copied while parsing. */
int creds_json_parse(const char *who, const char *source,
		     enum creds_json_kind kind, const char *body, size_t len,
		     struct aws_creds *out, struct aws_error *err);

/* Reads a small file (a token) into out, at most max bytes, and strips
 * trailing whitespace. 0, -EFBIG, or -errno of open/read. */
int creds_read_file(const char *path, size_t max, struct buf *out);

/* An HTTP client for one fetch: metadata services get no_proxy and the
 * metadata timeout as connect timeout. NULL on ENOMEM. */
struct http_client *creds_http_client(const struct creds_ctx *ctx,
				      int metadata);

/* The errno for an HTTP error status of a credentials service:
 * 401/403 -EACCES, 429 -EAGAIN, 5xx -EIO, else -EPROTO. */
int creds_status_errno(long status);

/* True if the value is safe in an HTTP header (printable, no CR/LF). */
int creds_header_safe(const char *s);

#endif
