/* sigv4: AWS Signature Version 4 (header signing), as small pure stages:
 * canonical request -> string to sign -> signing key -> signature ->
 * Authorization value (sigv4.c, stage 1 in sigv4_creq.c, stages 3 and 4 in
 * sigv4_hmac.c, the only file that includes OpenSSL). No shared state;
 * secrets and derived keys are wiped before the memory is released. */
#ifndef LOCKFS_SIGV4_H
#define LOCKFS_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct sigv4_header {
	const char *name;  /* any case; canonicalised by the signer */
	const char *value; /* trimmed and blank runs collapsed by the signer */
};

struct sigv4_creds {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token; /* NULL or "" when none */
};

struct sigv4_params {
	const char *region;
	const char *service;
	const char *amz_date; /* "YYYYMMDDTHHMMSSZ" */
	bool normalize_path;  /* remove . and .. segments, collapse // */
};

/* Stage 1. method as sent ("POST"). path is the path as it appears in the
 * request line, starting with '/' ("" means "/"). With normalize_path, empty
 * and "." segments are dropped and ".." segments resolved (a trailing '/'
 * stays); then every byte other than '/' and the RFC 3986 unreserved set
 * (A-Z a-z 0-9 - . _ ~) becomes %XX in upper-case hex. That is one round of
 * encoding over what the caller passes: a path already encoded for the wire
 * ("/a%20b") is encoded again ("/a%2520b"), which is what AWS expects from
 * every service except S3. query is the query string without '?' (NULL or ""
 * when none), raw or percent-encoded: each name and value is decoded and
 * encoded again (unreserved bytes only; '+' is a plus), empty parameters are
 * dropped, a parameter without '=' gets an empty value, and the parameters
 * are sorted by name, then value. headers must contain every header to sign
 * (Host and X-Amz-Date included); names are lowercased and sorted, values
 * trimmed with inner runs of spaces and tabs collapsed to one space, and
 * repeated names joined with ',' in the order given. A name that is not an
 * HTTP token or a value with a control byte other than tab (CR, LF) is
 * -EINVAL. payload_hash_hex is the hex SHA-256 of the body. Appends the
 * canonical request (no trailing newline) to creq and, when signed_headers
 * is not NULL, the signed-header list ("content-type;host;...") to it.
 * 0 or -ENOMEM/-EFBIG/-EINVAL; on error the buffers hold partial text. */
int sigv4_canonical_request(const char *method, const char *path,
			    const char *query,
			    const struct sigv4_header *headers,
			    size_t n_headers, const char *payload_hash_hex,
			    bool normalize_path, struct buf *creq,
			    struct buf *signed_headers);

/* "YYYYMMDD/region/service/aws4_request" into out (128 bytes is plenty for
 * real regions and services). -EINVAL for a malformed amz_date or an empty
 * region or service or one with '/', ',', ';', '=', spaces or control bytes;
 * -ENAMETOOLONG if it does not fit. */
int sigv4_scope(const char *amz_date, const char *region, const char *service,
		char *out, size_t outlen);

/* Stage 2: "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(creq)>",
 * no trailing newline, appended to sts. scope must be shorter than 128. */
int sigv4_string_to_sign(const char *amz_date, const char *scope,
			 const char *creq, size_t creq_len, struct buf *sts);

/* Stage 3: kSigning from the secret, "YYYYMMDD", region and service (the
 * HMAC chain kDate, kRegion, kService, kSigning). Every intermediate key is
 * wiped; the caller wipes key when done. Secrets up to 512 bytes. */
int sigv4_signing_key(const char *secret, const char *date8, const char *region,
		      const char *service, unsigned char key[32]);

/* Stage 4: lowercase hex HMAC-SHA256(key, sts). */
int sigv4_signature(const unsigned char key[32], const char *sts, size_t len,
		    char hex[65]);

/* Stage 5: "AWS4-HMAC-SHA256 Credential=<akid>/<scope>, SignedHeaders=<list>,
 * Signature=<hex>" appended to out. signature is 64 hex characters. */
int sigv4_authorization_value(const char *access_key_id, const char *scope,
			      const char *signed_headers, const char *signature,
			      struct buf *out);

/* Lowercase hex SHA-256 of len bytes (data may be NULL when len is 0).
 * 0, or -EIO if OpenSSL fails (hex is then ""). */
int sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

/* HMAC-SHA256 of data under key into out. 0 or -EINVAL/-EIO. The building
 * block of stages 3 and 4, exported so tests can walk the key chain. */
int sigv4_hmac_sha256(const void *key, size_t key_len, const void *data,
		      size_t len, unsigned char out[32]);

/* All stages together for one request. The caller has already put Host,
 * X-Amz-Date (== params->amz_date) and, when creds->session_token is set,
 * X-Amz-Security-Token (== the token) into headers, so they are signed; any
 * of these missing or different is -EINVAL. (To send a token unsigned, add
 * it after signing and pass creds without it.) The payload hash is computed
 * from body; method, path and query are as for stage 1. Appends the
 * Authorization header value to authz (partial text on error). The signing
 * key is derived per call and wiped. 0 or -errno. */
int sigv4_sign(const char *method, const char *path, const char *query,
	       const struct sigv4_header *headers, size_t n_headers,
	       const void *body, size_t body_len,
	       const struct sigv4_creds *creds,
	       const struct sigv4_params *params, struct buf *authz);

/* "YYYYMMDDTHHMMSSZ" (UTC) for epoch milliseconds; out >= 17 bytes. Times
 * before 1970 or after 9999 are clamped to those years. */
void sigv4_amz_date(long long real_ms, char out[17]);

#endif
