/* fuzz_http_body: one real HTTP exchange (http_perform over libcurl) with
 * a loopback server in this process that answers with the input's bytes as
 * they are (status line, headers, body, framing) and closes: the body cap,
 * the Date header kept from the answer, and the errno of every way an
 * answer can be broken. Input: 2 bytes of cap (16..4111 bytes), then the
 * raw answer. Checked: a success has a status and at most cap bytes of
 * body; a failure is one of http.h's errnos with no status; the Date kept
 * is terminated, shorter than its field, without LF.
 * fuzz-link: lockfs_http
 * fuzz-runs: 300 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int listen_fd = -1;
static char url[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *answer;
static size_t answer_len;

/* Reads the request head (curl sends a GET without a body). */
static void read_request(int fd)
{
	char buf[4096];
	size_t got = 0;

	while (got < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			return;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			return;
	}
}

static void *serve(void *arg)
{
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		const uint8_t *a;
		size_t n, off = 0;

		if (fd < 0)
			continue;
		read_request(fd);
		pthread_mutex_lock(&mu);
		a = answer;
		n = answer_len;
		while (off < n) {
			ssize_t w = send(fd, a + off, n - off, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		pthread_mutex_unlock(&mu);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

static void setup(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	pthread_t t;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, len) ||
	    listen(listen_fd, 16) ||
	    getsockname(listen_fd, (struct sockaddr *)&sa, &len) ||
	    http_global_init() || pthread_create(&t, NULL, serve, NULL))
		abort();
	pthread_detach(t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", ntohs(sa.sin_port));
}

static int documented(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ECONNRESET || rc == -EPROTO || rc == -EMSGSIZE ||
	       rc == -ENOMEM || rc == -EINVAL || rc == -EPERM || rc == -EIO;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_opts opts = { .connect_timeout_ms = 2000, .no_proxy = 1 };
	struct http_request req = { .method = "GET", .timeout_ms = 3000 };
	struct http_response resp;
	struct http_client *c;
	size_t cap;
	int rc;

	if (listen_fd < 0)
		setup();
	if (size < 2)
		return 0;
	cap = 16 + (((size_t)data[0] << 8 | data[1]) % 4096);
	opts.max_response_bytes = cap;
	pthread_mutex_lock(&mu);
	answer = data + 2;
	answer_len = size - 2;
	pthread_mutex_unlock(&mu);
	req.url = url;
	c = http_client_new(&opts);
	if (!c)
		abort();
	http_response_init(&resp);
	rc = http_perform(c, &req, &resp);
	if (!rc) {
		/* An answer has a three-digit status (a status line curl
		 * reads loosely, "HTTP/2 1100" or "HTTP/200 OK", or a header
		 * block cut short, is -EPROTO) and fits the cap. */
		if (resp.status < 100 || resp.status > 999 ||
		    resp.body.len > cap)
			abort();
	} else if (!documented(rc) || resp.status) {
		abort();
	}
	/* (curl splits header lines at LF only: a bare CR inside a Date
	 * value is kept, which srvclk's parser then refuses.) */
	if (!memchr(resp.date, '\0', sizeof(resp.date)) ||
	    strchr(resp.date, '\n'))
		abort();
	http_response_fini(&resp);
	http_client_free(c);
	/* The answer is the server's until it has written it. */
	pthread_mutex_lock(&mu);
	answer = NULL;
	answer_len = 0;
	pthread_mutex_unlock(&mu);
	return 0;
}
