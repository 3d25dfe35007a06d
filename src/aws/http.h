/* http: one HTTP/1.1 exchange over libcurl. A struct http_client wraps one
 * curl easy handle and its keep-alive connections; it is used by one thread
 * at a time (callers keep one per thread). The only file that includes curl.
 * Plain HTTP goes only to loopback hosts unless a client allows more; curl's
 * sockets are close-on-exec; the header lines built for a request (they hold
 * the session token) and every block curl frees are wiped. */
#ifndef LOCKFS_HTTP_H
#define LOCKFS_HTTP_H

#include <stddef.h>

#include "buf.h"

struct http_opts {
	long connect_timeout_ms;   /* 0: 2000 */
	size_t max_response_bytes; /* 0: 4 MiB; larger answers fail -EMSGSIZE */
	const char
		*ca_file; /* NULL: the system store; TLS is always verified */
	int verbose;	  /* curl's own trace to stderr: prints
			   * secrets; never set it from an option */
	int no_proxy;	  /* ignore http(s)_proxy (metadata services) */
	int allow_plain_http; /* http:// to hosts that are not loopback
			       * (else -EPERM); the metadata services, whose
			       * providers vet the host, and the
			       * allow_plain_http option */
};

struct http_header {
	const char *name;
	const char *value;
};
/* The longest "name: value" line a request may carry, NUL included; a
 * longer one fails the request with -EINVAL. */
#define HTTP_HEADER_LINE_MAX 8192

struct http_request {
	const char *method; /* "GET", "POST", "PUT" */
	const char *url;
	const struct http_header *headers;
	size_t n_headers;
	const void *body; /* may be NULL with body_len 0 */
	size_t body_len;
	long timeout_ms; /* whole exchange; 0: 10000 */
};

struct http_response {
	long status;	 /* HTTP status, 0 if none arrived */
	struct buf body; /* capped at max_response_bytes */
	char date[64];	 /* the answer's Date header, trimmed; "" when it had
			  * none (or an over-long one) */
	int sent;	 /* the request went out on a connection (so a
			  * timeout means the peer did not answer, not that
			  * it could not be reached) */
	char error[256]; /* why a TLS failure (-EPROTO) failed, in words:
			  * "TLS: the server's certificate has expired";
			  * "" otherwise */
};

/* curl_global_init, once per process, before threads, with allocation
 * functions that wipe every block curl frees (its request buffers hold the
 * signed headers). 0 or -EIO. */
int http_global_init(void);
void http_global_cleanup(void);

struct http_client *http_client_new(const struct http_opts *opts);
void http_client_free(struct http_client *c);

/* Performs the request. Returns 0 when an HTTP answer arrived (any status;
 * see resp->status), else -errno: -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH
 * (name or route), -ECONNRESET (connection dropped mid-exchange), -EPROTO (TLS
 * or protocol; for TLS, resp->error says which failure: a certificate that
 * is self-signed, of an unknown CA, expired or not yet valid, or for
 * another host; a ca_file that cannot be read or holds no certificate; a
 * server that does not speak TLS), -EMSGSIZE (answer over the cap),
 * -ENOMEM, -EINVAL (bad URL), -EPERM (plain HTTP to a host that is not
 * loopback, not allowed: nothing was sent), -EIO (anything else).
 * resp->body is reset first; call http_response_fini. */
int http_perform(struct http_client *c, const struct http_request *req,
		 struct http_response *resp);
/* The words for a failure rc of http_perform: resp->error when set, else
 * strerror. */
const char *http_error_text(const struct http_response *resp, int rc);
void http_response_init(struct http_response *resp);
void http_response_fini(struct http_response *resp);

/* "libcurl/7.88.1 OpenSSL/3.0.x ..." as libcurl describes itself. */
const char *http_library_version(void);

/* Splits "scheme://host[:port]/path" into the Host header value curl will
 * send (port kept when present), and the path ("/" when empty).
 * Returns 0 or -EINVAL. */
int http_url_host_path(const char *url, char *host, size_t hostlen, char *path,
		       size_t pathlen);

/* Whether host (a URL's host: a name, an IPv4 address or an IPv6 address
 * with or without brackets, no port) is loopback: "localhost",
 * 127.0.0.0/8 or ::1 (IPv4 only in dotted-quad form). */
int http_host_is_loopback(const char *host);
/* The host of an http(s) URL (brackets and port removed) into host, and
 * whether the scheme is https (case-insensitive). 0 or -EINVAL (not
 * http(s), user info, empty or over-long host). */
int http_url_host(const char *url, char *host, size_t hostlen, int *https);
/* 1 if url is plain http:// to a host that is not loopback, 0 for https
 * or plain HTTP to loopback, -EINVAL for anything else. */
int http_url_plain_remote(const char *url);

#endif
