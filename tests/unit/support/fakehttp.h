/* fakehttp: a scripted HTTP/1.1 server on 127.0.0.1 for unit tests. Runs in
 * background threads (one per connection, keep-alive honoured); a handler
 * chosen by the test decides each answer. Stopped by fakehttp_stop, which
 * closes every connection and joins every thread. */
#ifndef LOCKFS_FAKEHTTP_H
#define LOCKFS_FAKEHTTP_H

#include <stddef.h>

struct fakehttp_request {
	char method[16];
	char target[2048];   /* path and query as sent */
	char headers[16384]; /* raw header lines, "Name: value\r\n" each */
	char *body;	     /* NUL-terminated; body_len bytes */
	size_t body_len;
	int index; /* 0 for the first request the server saw */
};

struct fakehttp_response {
	int status;		   /* default 200 */
	const char *content_type;  /* default application/json */
	const char *body;	   /* default "" */
	size_t body_len;	   /* 0: strlen(body) */
	const char *extra_headers; /* "Name: value\r\n..." or NULL */
	int delay_ms;		   /* sleep before answering */
	int drop;		   /* close the connection without an answer */
};

typedef void (*fakehttp_handler)(const struct fakehttp_request *req,
				 struct fakehttp_response *resp, void *arg);

struct fakehttp;

/* Listens on 127.0.0.1 on a free port. NULL on failure. */
struct fakehttp *fakehttp_start(fakehttp_handler handler, void *arg);
int fakehttp_port(const struct fakehttp *s);
/* "http://127.0.0.1:<port>" */
const char *fakehttp_url(const struct fakehttp *s);
int fakehttp_requests(const struct fakehttp *s);
void fakehttp_stop(struct fakehttp *s);

/* Value of a request header (case-insensitive name) into out; 0 or -1. */
int fakehttp_header(const struct fakehttp_request *req, const char *name,
		    char *out, size_t outlen);

#endif
