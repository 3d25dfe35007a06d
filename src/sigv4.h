/* sigv4: AWS Signature Version 4 (header signing), as small pure stages:
 * canonical request -> string to sign -> signing key -> signature ->
 * Authorization value. The only file that includes OpenSSL. No shared state;
 * secrets and derived keys are wiped before the memory is released. */
#ifndef LOCKFS_SIGV4_H
#define LOCKFS_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct sigv4_header {
	const char *name;   /* any case; canonicalised by the signer */
	const char *value;  /* trimmed, inner runs of spaces collapsed */
};

struct sigv4_creds {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token;  /* NULL or "" when none */
};

struct sigv4_params {
	const char *region;
	const char *service;
	const char *amz_date;       /* "YYYYMMDDTHHMMSSZ" */
	bool normalize_path;        /* remove . and .. segments, collapse // */
};

/* Stage 1. path is the raw request path (not yet URI-encoded: it is encoded
 * here, once, as AWS does for non-S3 services), query the raw query string
 * without '?' (NULL or "" when none). headers must contain every header to
 * sign (Host and X-Amz-Date included). Repeated names are joined with ','
 * in the order given. payload_hash_hex is the hex SHA-256 of the body.
 * Appends the canonical request to creq and the signed-header list
 * ("content-type;host;...") to signed_headers. 0 or -ENOMEM/-EINVAL. */
int sigv4_canonical_request(const char *method, const char *path,
			    const char *query, const struct sigv4_header *headers,
			    size_t n_headers, const char *payload_hash_hex,
			    bool normalize_path, struct buf *creq,
			    struct buf *signed_headers);

/* "YYYYMMDD/region/service/aws4_request" into out (>= 128 bytes). */
int sigv4_scope(const char *amz_date, const char *region, const char *service,
		char *out, size_t outlen);

/* Stage 2: "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(creq)>". */
int sigv4_string_to_sign(const char *amz_date, const char *scope,
			 const char *creq, size_t creq_len, struct buf *sts);

/* Stage 3: kSigning from the secret, "YYYYMMDD", region and service. */
int sigv4_signing_key(const char *secret, const char *date8, const char *region,
		      const char *service, unsigned char key[32]);

/* Stage 4: lowercase hex HMAC-SHA256(key, sts). */
int sigv4_signature(const unsigned char key[32], const char *sts, size_t len,
		    char hex[65]);

/* Stage 5: "AWS4-HMAC-SHA256 Credential=<akid>/<scope>, SignedHeaders=<list>,
 * Signature=<hex>" appended to out. */
int sigv4_authorization_value(const char *access_key_id, const char *scope,
			      const char *signed_headers, const char *signature,
			      struct buf *out);

void sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

/* All stages together for one request. The caller has already put Host,
 * X-Amz-Date (== params->amz_date) and, when a session token is used,
 * X-Amz-Security-Token into headers, so they are signed. Appends the
 * Authorization header value to authz. 0 or -errno. */
int sigv4_sign(const char *method, const char *path, const char *query,
	       const struct sigv4_header *headers, size_t n_headers,
	       const void *body, size_t body_len, const struct sigv4_creds *creds,
	       const struct sigv4_params *params, struct buf *authz);

/* "YYYYMMDDTHHMMSSZ" for epoch milliseconds; out >= 17 bytes. */
void sigv4_amz_date(long long real_ms, char out[17]);

#endif
