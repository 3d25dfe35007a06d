/* fake_http: scripted HTTP answers for fuzz targets (see fake_http.h).
 * State is per process; the harnesses are single-threaded. */
#include "fake_http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FAKE_DEFAULT_MAX ((size_t)4 << 20) /* as http.c */

struct http_client {
	size_t max_response_bytes;
};

static const struct fake_answer *script;
static size_t script_n, script_next;
static struct buf last_url = BUF_INIT, last_body = BUF_INIT,
		  last_headers = BUF_INIT;

void fake_http_reset(const struct fake_answer *answers, size_t n)
{
	script = answers;
	script_n = n;
	script_next = 0;
	buf_reset(&last_url);
	buf_reset(&last_body);
	buf_reset(&last_headers);
}

size_t fake_http_requests(void)
{
	return script_next;
}

const char *fake_http_last_url(void)
{
	return buf_str(&last_url);
}

const struct buf *fake_http_last_body(void)
{
	return &last_body;
}

const struct buf *fake_http_last_headers(void)
{
	return &last_headers;
}

void fake_http_fini(void)
{
	buf_fini(&last_url);
	buf_fini(&last_body);
	buf_fini(&last_headers);
}

struct http_client *__wrap_http_client_new(const struct http_opts *opts)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (c)
		c->max_response_bytes = opts && opts->max_response_bytes
						? opts->max_response_bytes
						: FAKE_DEFAULT_MAX;
	return c;
}

void __wrap_http_client_free(struct http_client *c)
{
	free(c);
}

/* A header line must stay one line: http.c sends "name: value". */
static void check_header(const struct http_header *h)
{
	if (!h->name || !h->value || !h->name[0] || strpbrk(h->name, "\r\n:") ||
	    strpbrk(h->value, "\r\n"))
		abort();
}

static void record(const struct http_request *req)
{
	size_t i;

	if (!req->method || !req->url ||
	    (strcmp(req->method, "GET") && strcmp(req->method, "POST") &&
	     strcmp(req->method, "PUT")))
		abort();
	if (strncasecmp(req->url, "http://", 7) &&
	    strncasecmp(req->url, "https://", 8))
		abort(); /* every caller checks the scheme first */
	if (req->body_len && !req->body)
		abort();
	buf_reset(&last_url);
	buf_reset(&last_body);
	buf_reset(&last_headers);
	if (buf_puts(&last_url, req->url) ||
	    buf_append(&last_body, req->body, req->body_len))
		abort();
	for (i = 0; i < req->n_headers; i++) {
		check_header(&req->headers[i]);
		if (buf_printf(&last_headers, "%s: %s\n", req->headers[i].name,
			       req->headers[i].value))
			abort();
	}
}

int __wrap_http_perform(struct http_client *c, const struct http_request *req,
			struct http_response *resp)
{
	const struct fake_answer *a;

	record(req);
	buf_reset(&resp->body);
	resp->body.max = c->max_response_bytes;
	resp->status = 0;
	resp->date[0] = '\0';
	if (script_next >= script_n) {
		script_next++;
		return -ECONNREFUSED;
	}
	a = &script[script_next++];
	if (a->rc)
		return a->rc;
	if (a->len > c->max_response_bytes)
		return -EMSGSIZE; /* as http.c: the answer is over the cap */
	if (buf_append(&resp->body, a->body, a->len))
		return -ENOMEM;
	resp->status = a->status;
	return 0;
}
