/* fakehttp: loopback HTTP/1.1 server for tests. The accept thread and one
 * thread per connection; the request counter is atomic; the handler may be
 * called from several connection threads at once. */
#include "fakehttp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define FAKEHTTP_MAX_CONNS 64
#define FAKEHTTP_MAX_BODY  (8 << 20)

struct conn {
	struct fakehttp *srv;
	int fd;
	pthread_t thread;
	int used;
	int done; /* atomic: the connection thread has finished */
};

struct fakehttp {
	int listen_fd;
	int port;
	char url[64];
	fakehttp_handler handler;
	void *arg;
	pthread_t accept_thread;
	pthread_mutex_t mu;
	int stopping;			       /* protected by mu */
	struct conn conns[FAKEHTTP_MAX_CONNS]; /* protected by mu */
	int requests;			       /* atomic */
};

static int read_line_block(int fd, char *buf, size_t cap, size_t *len,
			   size_t *head_end)
{
	while (1) {
		char *end;

		buf[*len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			*head_end = (size_t)(end - buf) + 4;
			return 0;
		}
		if (*len + 1 >= cap)
			return -1;
		ssize_t n = read(fd, buf + *len, cap - 1 - *len);

		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

int fakehttp_header(const struct fakehttp_request *req, const char *name,
		    char *out, size_t outlen)
{
	const char *p = req->headers;
	size_t nl = strlen(name);

	while (*p) {
		const char *eol = strstr(p, "\r\n");

		if (!eol)
			break;
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			size_t n;

			while (*v == ' ' || *v == '\t')
				v++;
			n = (size_t)(eol - v);
			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = eol + 2;
	}
	return -1;
}

static void *conn_main(void *argp)
{
	struct conn *c = argp;
	struct fakehttp *s = c->srv;
	static const size_t cap = 65536;
	char *buf = malloc(cap);
	size_t len = 0;

	while (buf) {
		struct fakehttp_request *req = calloc(1, sizeof(*req));
		struct fakehttp_response resp = { 0 };
		size_t head_end = 0, want = 0, have;
		char cl[32], line[512];
		const char *sp1, *sp2, *hdr;

		if (!req || read_line_block(c->fd, buf, cap, &len, &head_end)) {
			free(req);
			break;
		}
		sp1 = memchr(buf, ' ', head_end);
		sp2 = sp1 ? memchr(sp1 + 1, ' ',
				   head_end - (size_t)(sp1 + 1 - buf))
			  : NULL;
		hdr = strstr(buf, "\r\n");
		if (!sp1 || !sp2 || !hdr ||
		    (size_t)(sp1 - buf) >= sizeof(req->method) ||
		    (size_t)(sp2 - sp1 - 1) >= sizeof(req->target)) {
			free(req);
			break;
		}
		memcpy(req->method, buf, (size_t)(sp1 - buf));
		memcpy(req->target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
		hdr += 2;
		if ((size_t)(buf + head_end - 2 - hdr) < sizeof(req->headers))
			memcpy(req->headers, hdr,
			       (size_t)(buf + head_end - 2 - hdr));
		if (!fakehttp_header(req, "Content-Length", cl, sizeof(cl)))
			want = strtoul(cl, NULL, 10);
		if (want > FAKEHTTP_MAX_BODY) {
			free(req);
			break;
		}
		req->body = malloc(want + 1);
		if (!req->body) {
			free(req);
			break;
		}
		have = len - head_end;
		if (have > want)
			have = want;
		memcpy(req->body, buf + head_end, have);
		while (have < want) {
			ssize_t n = read(c->fd, req->body + have, want - have);

			if (n <= 0)
				break;
			have += (size_t)n;
		}
		req->body[have] = '\0';
		req->body_len = have;
		/* Keep bytes of a pipelined next request. */
		if (len > head_end + have) {
			memmove(buf, buf + head_end + have,
				len - head_end - have);
			len -= head_end + have;
		} else {
			len = 0;
		}
		req->index =
			__atomic_fetch_add(&s->requests, 1, __ATOMIC_SEQ_CST);

		resp.status = 200;
		s->handler(req, &resp, s->arg);
		free(req->body);
		free(req);
		if (resp.delay_ms > 0)
			usleep((useconds_t)resp.delay_ms * 1000);
		if (resp.drop)
			break;
		const char *body = resp.body ? resp.body : "";
		size_t blen = resp.body_len ? resp.body_len : strlen(body);
		int n = snprintf(line, sizeof(line),
				 "HTTP/1.1 %d X\r\nContent-Type: %s\r\n"
				 "Content-Length: %zu\r\n",
				 resp.status,
				 resp.content_type ? resp.content_type
						   : "application/json",
				 blen);
		write_all(c->fd, line, (size_t)n);
		if (resp.extra_headers)
			write_all(c->fd, resp.extra_headers,
				  strlen(resp.extra_headers));
		write_all(c->fd, "\r\n", 2);
		write_all(c->fd, body, blen);
	}
	free(buf);
	shutdown(c->fd, SHUT_RDWR);
	__atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *accept_main(void *argp)
{
	struct fakehttp *s = argp;

	while (1) {
		struct pollfd pfd = { .fd = s->listen_fd, .events = POLLIN };
		int fd, i;

		if (poll(&pfd, 1, 50) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		pthread_mutex_unlock(&s->mu);
		if (!(pfd.revents & POLLIN))
			continue;
		fd = accept(s->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 },
			   sizeof(int));
		pthread_mutex_lock(&s->mu);
		/* Reuse the slots of connections that have ended. */
		for (i = 0; i < FAKEHTTP_MAX_CONNS; i++) {
			if (s->conns[i].used && s->conns[i].done) {
				pthread_join(s->conns[i].thread, NULL);
				close(s->conns[i].fd);
				s->conns[i].used = 0;
			}
		}
		for (i = 0; i < FAKEHTTP_MAX_CONNS && s->conns[i].used; i++)
			;
		if (i == FAKEHTTP_MAX_CONNS) {
			pthread_mutex_unlock(&s->mu);
			close(fd);
			continue;
		}
		s->conns[i].used = 1;
		s->conns[i].done = 0;
		s->conns[i].fd = fd;
		s->conns[i].srv = s;
		if (pthread_create(&s->conns[i].thread, NULL, conn_main,
				   &s->conns[i])) {
			s->conns[i].used = 0;
			close(fd);
		}
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

struct fakehttp *fakehttp_start(fakehttp_handler handler, void *arg)
{
	struct fakehttp *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int one = 1;

	if (!s)
		return NULL;
	s->handler = handler;
	s->arg = arg;
	pthread_mutex_init(&s->mu, NULL);
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		goto fail;
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s->listen_fd, 16) ||
	    getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl))
		goto fail;
	s->port = ntohs(sa.sin_port);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	if (pthread_create(&s->accept_thread, NULL, accept_main, s))
		goto fail;
	return s;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	free(s);
	return NULL;
}

int fakehttp_port(const struct fakehttp *s)
{
	return s->port;
}

const char *fakehttp_url(const struct fakehttp *s)
{
	return s->url;
}

int fakehttp_requests(const struct fakehttp *s)
{
	return __atomic_load_n(&s->requests, __ATOMIC_SEQ_CST);
}

void fakehttp_stop(struct fakehttp *s)
{
	int i;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->accept_thread, NULL);
	for (i = 0; i < FAKEHTTP_MAX_CONNS; i++) {
		if (!s->conns[i].used)
			continue;
		shutdown(s->conns[i].fd, SHUT_RDWR);
		pthread_join(s->conns[i].thread, NULL);
		close(s->conns[i].fd);
	}
	close(s->listen_fd);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
