/* http: libcurl easy handles, one per struct http_client, each used by one
 * thread at a time. Keeps connections alive between requests; verifies TLS;
 * refuses plain HTTP to hosts that are not loopback unless allowed; opens
 * its sockets close-on-exec; caps the response size; wipes the header lines
 * it builds and (through curl's allocation callbacks, set once before any
 * thread) every block curl frees; maps curl failures to -errno and says in
 * words which TLS failure it was (from curl's error buffer and the
 * certificate verification result, per request). */
#include "http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTP_DEFAULT_CONNECT_MS 2000L
#define HTTP_DEFAULT_TIMEOUT_MS 10000L
#define HTTP_DEFAULT_MAX_BYTES	((size_t)4 << 20)
#define HTTP_DATE_MAX		sizeof(((struct http_response *)0)->date)

struct http_client {
	CURL *curl;
	struct http_opts opts;
	char *ca_file;
	int overflow; /* set by the write callback when the cap is hit */
	struct buf *sink;
	char *date; /* the current response's date[], during a request */
	char errbuf[CURL_ERROR_SIZE]; /* curl's words for the last failure */
};

/* curl's allocations: as libc's, but a block is wiped before it is freed
 * (or left behind by a realloc). */
static void *wipe_malloc(size_t n)
{
	return malloc(n);
}

static void wipe_free(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void *wipe_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return malloc(n);
	if (!n) {
		wipe_free(p);
		return NULL;
	}
	old = malloc_usable_size(p);
	q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	wipe_free(p);
	return q;
}

static char *wipe_strdup(const char *s)
{
	return strdup(s);
}

static void *wipe_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

int http_global_init(void)
{
	return curl_global_init_mem(CURL_GLOBAL_DEFAULT, wipe_malloc, wipe_free,
				    wipe_realloc, wipe_strdup,
				    wipe_calloc) == CURLE_OK
		       ? 0
		       : -EIO;
}

/* Every socket close-on-exec, so that no helper we run inherits one. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose,
				 struct curl_sockaddr *a)
{
	(void)clientp;
	(void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

void http_global_cleanup(void)
{
	curl_global_cleanup();
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata);
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata);

/* Options that are the same for every request of this client. */
static void set_fixed_options(struct http_client *c)
{
	CURL *h = c->curl;

	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->opts.ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->opts.ca_file);
	if (c->opts.no_proxy)
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 c->opts.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
			 (curl_off_t)c->opts.max_response_bytes);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	/* curl's own trace would print the Authorization header: debugging
	 * builds only, never from an option. */
	curl_easy_setopt(h, CURLOPT_VERBOSE, c->opts.verbose ? 1L : 0L);
}

struct http_client *http_client_new(const struct http_opts *opts)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (opts)
		c->opts = *opts;
	if (!c->opts.connect_timeout_ms)
		c->opts.connect_timeout_ms = HTTP_DEFAULT_CONNECT_MS;
	if (!c->opts.max_response_bytes)
		c->opts.max_response_bytes = HTTP_DEFAULT_MAX_BYTES;
	if (c->opts.ca_file) {
		c->ca_file = strdup(c->opts.ca_file);
		if (!c->ca_file)
			goto fail;
		c->opts.ca_file = c->ca_file;
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		goto fail;
	set_fixed_options(c);
	return c;
fail:
	free(c->ca_file);
	free(c);
	return NULL;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->ca_file);
	free(c);
}

void http_response_init(struct http_response *resp)
{
	resp->status = 0;
	resp->date[0] = '\0';
	resp->sent = 0;
	resp->error[0] = '\0';
	buf_init(&resp->body, 0);
}

void http_response_fini(struct http_response *resp)
{
	buf_fini(&resp->body);
	resp->status = 0;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct http_client *c = userdata;
	size_t n = size * nmemb;

	if (buf_append(c->sink, ptr, n)) {
		c->overflow = 1;
		return 0; /* makes curl fail with CURLE_WRITE_ERROR */
	}
	return n;
}

/* Keeps the Date header of the last response (a status line starts a new
 * one, so an interim 1xx answer's Date does not linger). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct http_client *c = userdata;
	size_t n = size * nmemb, len = n;
	const char *v = ptr + 5;

	if (!c->date)
		return n;
	if (n >= 5 && !strncmp(ptr, "HTTP/", 5)) {
		c->date[0] = '\0';
		return n;
	}
	if (n < 5 || strncasecmp(ptr, "date:", 5))
		return n;
	while (v < ptr + len && (*v == ' ' || *v == '\t'))
		v++;
	while (len > 5 && (ptr[len - 1] == '\r' || ptr[len - 1] == '\n' ||
			   ptr[len - 1] == ' ' || ptr[len - 1] == '\t'))
		len--;
	if (ptr + len < v || (size_t)(ptr + len - v) >= HTTP_DATE_MAX) {
		c->date[0] = '\0';
		return n;
	}
	memcpy(c->date, v, (size_t)(ptr + len - v));
	c->date[ptr + len - v] = '\0';
	return n;
}

/* Whether this process can open no more files. curl reports a socket it
 * could not make as a connection refused, with no errno (7.88), which
 * would send an operator looking at the network: a descriptor duplicated
 * and closed at once tells. */
static bool out_of_files(void)
{
	int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);

	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EMFILE || errno == ENFILE;
}

static int map_curl_error(CURLcode cc, long os_errno)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		if (os_errno == ENETUNREACH || os_errno == EHOSTUNREACH)
			return -EHOSTUNREACH;
		if (os_errno == ETIMEDOUT)
			return -ETIMEDOUT;
		if (os_errno == 0 && out_of_files())
			return -EMFILE;
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return -ECONNRESET;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_HTTP2:
	case CURLE_BAD_CONTENT_ENCODING:
		return -EPROTO;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* OpenSSL's certificate verification results (X509_V_ERR_*), which curl's
 * OpenSSL backend reports as CURLINFO_SSL_VERIFYRESULT. */
enum {
	X509_ISSUER_UNKNOWN = 2,
	X509_NOT_YET_VALID = 9,
	X509_EXPIRED = 10,
	X509_SELF_SIGNED = 18,
	X509_SELF_SIGNED_IN_CHAIN = 19,
	X509_ISSUER_UNKNOWN_LOCALLY = 20,
	X509_LEAF_UNVERIFIABLE = 21,
};

/* "host" or "host:port" of url, for messages. */
static void url_authority(const char *url, char *out, size_t len)
{
	const char *p = strstr(url, "://");
	size_t n;

	p = p ? p + 3 : url;
	n = strcspn(p, "/?#");
	snprintf(out, len, "%.*s", (int)(n < 200 ? n : 200), p);
}

/* The server's certificate was refused: which check failed. */
static void say_cert_refused(struct http_client *c, const char *url, char *out,
			     size_t len)
{
	char host[256] = "";
	long vr = 0;
	int https;

	curl_easy_getinfo(c->curl, CURLINFO_SSL_VERIFYRESULT, &vr);
	if (strstr(c->errbuf, "subject name") ||
	    strstr(c->errbuf, "does not match")) {
		http_url_host(url, host, sizeof(host), &https);
		snprintf(out, len,
			 "TLS: the server's certificate is not for host %s "
			 "(check the endpoint's host name)",
			 host);
		return;
	}
	switch (vr) {
	case X509_EXPIRED:
		snprintf(out, len,
			 "TLS: the server's certificate has expired (or this "
			 "host's clock is wrong)");
		return;
	case X509_NOT_YET_VALID:
		snprintf(out, len,
			 "TLS: the server's certificate is not valid yet (or "
			 "this host's clock is wrong)");
		return;
	case X509_SELF_SIGNED:
	case X509_SELF_SIGNED_IN_CHAIN:
		snprintf(out, len,
			 "TLS: the server's certificate is self-signed, not "
			 "issued by a trusted CA (give the CA that signed it "
			 "with -o ca_file=PATH)");
		return;
	case X509_ISSUER_UNKNOWN:
	case X509_ISSUER_UNKNOWN_LOCALLY:
	case X509_LEAF_UNVERIFIABLE:
		snprintf(out, len,
			 "TLS: the server's certificate is issued by an "
			 "unknown CA (give that CA with -o ca_file=PATH)");
		return;
	}
	snprintf(out, len, "TLS: the server's certificate was refused: %.200s",
		 c->errbuf[0] ? c->errbuf : "no reason given");
}

/* The CA bundle could not be used: the file, or what is in it. */
static void say_ca_file(struct http_client *c, char *out, size_t len)
{
	const char *path = c->opts.ca_file;

	if (!path) {
		snprintf(out, len,
			 "TLS: cannot use the system's CA store: %.200s",
			 c->errbuf[0] ? c->errbuf : "no reason given");
		return;
	}
	if (access(path, R_OK)) {
		snprintf(out, len, "TLS: cannot read ca_file %.150s: %s", path,
			 strerror(errno));
		return;
	}
	snprintf(out, len,
		 "TLS: ca_file %.150s holds no usable CA certificate (want "
		 "PEM)",
		 path);
}

/* The handshake failed: a server that answered in plain HTTP, or else. */
static void say_handshake(struct http_client *c, const char *url, char *out,
			  size_t len)
{
	static const char *const not_tls[] = { "wrong version number",
					       "packet length too long",
					       "unknown protocol",
					       "http request", NULL };
	char where[208];
	size_t i;

	url_authority(url, where, sizeof(where));
	for (i = 0; not_tls[i]; i++) {
		if (strcasestr(c->errbuf, not_tls[i])) {
			snprintf(out, len,
				 "TLS handshake failed: %.160s does not speak "
				 "TLS "
				 "(an http:// endpoint?)",
				 where);
			return;
		}
	}
	snprintf(out, len, "TLS handshake with %.100s failed: %.120s", where,
		 c->errbuf[0] ? c->errbuf : "no reason given");
}

/* Fills out (the response's error) for a failure mapped to -EPROTO: the
 * TLS ones in words, nothing for the others (a malformed answer). */
static void describe_tls_failure(struct http_client *c, CURLcode cc,
				 const char *url, char *out, size_t len)
{
	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		say_cert_refused(c, url, out, len);
		break;
	case CURLE_SSL_CACERT_BADFILE:
		say_ca_file(c, out, len);
		break;
	case CURLE_SSL_CONNECT_ERROR:
		say_handshake(c, url, out, len);
		break;
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
		snprintf(out, len, "TLS: %.240s",
			 c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
		break;
	default:
		out[0] = '\0';
	}
}

const char *http_error_text(const struct http_response *resp, int rc)
{
	if (resp && resp->error[0])
		return resp->error;
	return strerror(rc < 0 ? -rc : rc);
}

/* Overwrites the header lines (they hold the session token and the
 * signature) and frees them. */
static void free_headers(struct curl_slist *hdrs)
{
	struct curl_slist *l;

	for (l = hdrs; l; l = l->next)
		if (l->data)
			explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(hdrs);
}

/* Appends "name: value" to *hdrs. The line is built on the heap, not the
 * stack: a buffer below curl_easy_perform's frames would make every
 * thread that sends a request (up to 256 lease workers) keep that many
 * more bytes of stack resident. It holds a signature: zeroed before it is
 * freed (curl keeps its own copy, zeroed by free_headers). */
static int append_header(struct curl_slist **hdrs, const struct http_header *hh)
{
	size_t nlen = strlen(hh->name), vlen = strlen(hh->value);
	size_t len = nlen + 2 + vlen;
	struct curl_slist *tmp;
	char *line;

	if (len >= HTTP_HEADER_LINE_MAX)
		return -EINVAL;
	line = malloc(len + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, hh->name, nlen);
	memcpy(line + nlen, ": ", 2);
	memcpy(line + nlen + 2, hh->value, vlen + 1);
	tmp = curl_slist_append(*hdrs, line);
	explicit_bzero(line, len);
	free(line);
	if (!tmp)
		return -ENOMEM;
	*hdrs = tmp;
	return 0;
}

int http_perform(struct http_client *c, const struct http_request *req,
		 struct http_response *resp)
{
	struct curl_slist *hdrs = NULL, *tmp;
	long os_errno = 0, req_size = 0;
	CURLcode cc;
	size_t i;
	int rc = 0;

	buf_reset(&resp->body);
	resp->body.max = c->opts.max_response_bytes;
	resp->status = 0;
	resp->date[0] = '\0';
	resp->sent = 0;
	resp->error[0] = '\0';

	rc = http_url_plain_remote(req->url);
	if (rc < 0)
		return rc;
	if (rc && !c->opts.allow_plain_http)
		return -EPERM;
	rc = 0;

	for (i = 0; i < req->n_headers; i++) {
		rc = append_header(&hdrs, &req->headers[i]);
		if (rc)
			goto out;
	}
	/* Never wait for "100 Continue"; curl adds Expect for large bodies. */
	tmp = curl_slist_append(hdrs, "Expect:");
	if (!tmp) {
		rc = -ENOMEM;
		goto out;
	}
	hdrs = tmp;

	CURL *h = c->curl;

	/* The fixed options were set once in http_client_new; these change
	 * with every request. */
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 req->timeout_ms ? req->timeout_ms
					 : HTTP_DEFAULT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (!strcmp(req->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				 req->body ? (const char *)req->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)req->body_len);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST,
				 strcmp(req->method, "POST") ? req->method
							     : NULL);
	}
	c->overflow = 0;
	c->sink = &resp->body;
	c->date = resp->date;
	c->errbuf[0] = '\0';

	cc = curl_easy_perform(h);
	c->sink = NULL;
	c->date = NULL;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &req_size);
	resp->sent = req_size > 0;
	if (cc == CURLE_OK) {
		/* curl 7.88 reads a status line loosely ("HTTP/2 1100",
		 * "HTTP/200 OK", a header block cut short): an answer has a
		 * three-digit status or is a protocol error. */
		rc = resp->status >= 100 && resp->status <= 999 ? 0 : -EPROTO;
	} else if (c->overflow || cc == CURLE_FILESIZE_EXCEEDED) {
		rc = -EMSGSIZE;
	} else {
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		rc = map_curl_error(cc, os_errno);
		if (rc == -EPROTO)
			describe_tls_failure(c, cc, req->url, resp->error,
					     sizeof(resp->error));
	}
	if (rc)
		resp->status = 0;
out:
	/* Neither the request's header list nor its pointer stays behind. */
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	free_headers(hdrs);
	return rc;
}

int http_url_host_path(const char *url, char *host, size_t hostlen, char *path,
		       size_t pathlen)
{
	const char *p = strstr(url, "://"), *slash;
	size_t n;

	if (!p)
		return -EINVAL;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return -EINVAL;
	p += 3;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (!n || n >= hostlen || memchr(p, '@', n))
		return -EINVAL;
	memcpy(host, p, n);
	host[n] = '\0';
	if (!slash)
		slash = "/";
	if (strlen(slash) >= pathlen)
		return -EINVAL;
	strcpy(path, slash);
	return 0;
}

int http_url_host(const char *url, char *host, size_t hostlen, int *https)
{
	const char *p, *end;
	size_t n;

	if (!strncasecmp(url, "https://", 8)) {
		*https = 1;
		p = url + 8;
	} else if (!strncasecmp(url, "http://", 7)) {
		*https = 0;
		p = url + 7;
	} else {
		return -EINVAL;
	}
	end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(end - p)))
		return -EINVAL;
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb)
			return -EINVAL;
		p++;
		end = rb;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));

		if (colon)
			end = colon;
	}
	n = (size_t)(end - p);
	if (!n || n >= hostlen)
		return -EINVAL;
	memcpy(host, p, n);
	host[n] = '\0';
	return 0;
}

int http_host_is_loopback(const char *host)
{
	unsigned char a6[16];
	char h[64];
	struct in_addr a4;
	size_t n = strlen(host);

	if (!strcasecmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' &&
	    n - 2 < sizeof(h)) {
		memcpy(h, host + 1, n - 2);
		h[n - 2] = '\0';
		host = h;
	}
	if (inet_pton(AF_INET6, host, a6) == 1)
		return !memcmp(a6, &in6addr_loopback, sizeof(a6));
	return 0;
}

int http_url_plain_remote(const char *url)
{
	char host[256];
	int https;

	if (!url || http_url_host(url, host, sizeof(host), &https))
		return -EINVAL;
	return !https && !http_host_is_loopback(host);
}

const char *http_library_version(void)
{
	return curl_version();
}
