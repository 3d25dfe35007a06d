/* fake_http: the HTTP layer under the credential providers replaced for
 * fuzzing. A harness routes http_client_new, http_client_free and
 * http_perform here (" * fuzz-wrap: ..." in its top comment) and scripts
 * the answers; each http_perform takes the next one. Every request is
 * checked on the way out (method, URL scheme, no CR/LF or NUL able to
 * split a header) and the last one is kept for the harness to check.
 * Single-threaded, like the harnesses. */
#ifndef LOCKFS_FAKE_HTTP_H
#define LOCKFS_FAKE_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "http.h"

struct fake_answer {
	int rc;	     /* != 0: http_perform fails with it (-ECONNREFUSED...) */
	long status; /* else the HTTP status */
	const char *body;
	size_t len;
};

/* Answers for the next requests (borrowed until the next reset); a request
 * past the last one fails with -ECONNREFUSED. */
void fake_http_reset(const struct fake_answer *answers, size_t n);
/* How many requests were made since the reset. */
size_t fake_http_requests(void);
/* The last request: URL, body (as sent) and every header "name: value\n". */
const char *fake_http_last_url(void);
const struct buf *fake_http_last_body(void);
const struct buf *fake_http_last_headers(void);
/* Frees what the fake keeps (for leak checkers at exit). */
void fake_http_fini(void);

struct http_client *__wrap_http_client_new(const struct http_opts *opts);
void __wrap_http_client_free(struct http_client *c);
int __wrap_http_perform(struct http_client *c, const struct http_request *req,
			struct http_response *resp);

#endif
