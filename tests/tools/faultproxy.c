/* lockfs-faultproxy: a fault- and latency-injecting HTTP/1.1 proxy for the
 * tests and benchmarks, put between lockfs and DynamoDB Local on loopback
 * (this kernel has no netem). It understands just enough HTTP to forward one
 * whole request and one whole response at a time, so that it can inject
 * DynamoDB-aware faults (answer a PutItem with a throttle, lose the reply of
 * a DeleteItem that landed, ...) chosen by the X-Amz-Target operation.
 *
 *   lockfs-faultproxy --target 127.0.0.1:PORT [--listen 127.0.0.1:0]
 *                     --control SOCKPATH [--verbose]
 *       serve: prints "PORT\n" on stdout, then runs until SIGTERM/SIGINT
 *   lockfs-faultproxy --control SOCKPATH CMD [ARGS...]
 *       client: sends one control command, prints the one-line reply;
 *       exit 0 on "ok ...", 1 on "error: ...", 2 on usage/connection errors
 *
 * Control commands (one line each, answered by one line):
 *   latency MS          added delay each way (round trip grows by 2*MS)
 *   capacity N [OP]     forward at most N requests (of OP) a second, one
 *                       every 1/N s, in order of arrival: a saturated
 *                       DynamoDB, whose answers take longer the more are
 *                       in flight ("capacity 0" or "clear": off)
 *   stall on|off        hold every request until "stall off" (a request whose
 *                       client hangs up meanwhile is dropped, not forwarded)
 *   drop on|off         reset every client connection, new ones at once
 *   reset               reset every current client connection once
 *   http500 N [OP]      answer the next N requests (of OP) with HTTP 500
 *   odd-time N [OP]     ... with HTTP 400 InvalidSignatureException
 *                       "Signature expired" and a Date two days old (a
 *                       broken proxy: the client must not believe it)
 *   throttle N [OP] [throttling]   ... with HTTP 400
 *                       ProvisionedThroughputExceededException (or
 *                       ThrottlingException; "throttling N [OP]" is the same)
 *   lose-reply N [OP]   forward, read the whole response, discard it and
 *                       reset the client connection
 *   garbage-reply N [OP]  forward, read the whole response, and answer
 *                       200 with an HTML page instead (a proxy's: the
 *                       write landed, its answer cannot be read)
 *   hang-reply N [OP]   forward, read the whole response, then keep the
 *                       client waiting until it hangs up; "clear" delivers
 *   late-request N [OP] hold the request, not forwarded, until "clear",
 *                       even if its client hangs up meanwhile; then forward
 *                       it and discard its answer (a request stuck in the
 *                       network that lands after its sender gave up)
 *   clear               every fault off; stalled, hung and late requests
 *                       go on
 *   stats               "ok conns=A requests=B forwarded=C injected=D OP=n.."
 *                       (all counted since start; conns = connections
 *                       accepted)
 *   bytes               "ok OP=n.." the bytes of the responses forwarded
 *                       for each operation since start
 *   scanned             "ok OP=n.." the sum of the ScannedCount of the
 *                       Query and Scan responses forwarded since start:
 *                       the items DynamoDB read, which its read units
 *                       grow with (a Scan's filter drops items after
 *                       they are read and paid for)
 *
 * Threads: the main thread waits for SIGTERM/SIGINT; one accept thread; one
 * control thread (one control client at a time); one thread per client
 * connection, which alone uses its sockets and buffers. struct proxy's
 * settings, counters and connection table are protected by proxy.mu; a
 * connection's `doomed` flag too. Whoever changes a setting kicks every
 * connection (its eventfd), and connection threads only ever block in
 * poll() on their socket plus that eventfd, so they re-read the settings
 * after every change: nothing busy-loops and nothing misses a change. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS	    4096
#define HDR_CAP		    (64 * 1024)
#define BODY_CAP	    (16 * 1024 * 1024)
#define CTL_LINE_MAX	    256
#define OP_MAX		    64
#define MAX_OPS		    64
#define MAX_FAULTS	    16
#define MAX_N		    1000000L
#define MAX_LATENCY_MS	    600000L
#define CONNECT_TIMEOUT_MS  5000
#define UPSTREAM_TIMEOUT_MS 60000
#define SEND_TIMEOUT_MS	    30000
#define CTL_TIMEOUT_MS	    2000
/* More than CTL_TIMEOUT_MS: a client may have to wait out another. */
#define CLIENT_TIMEOUT_MS 5000
#define THREAD_STACK	  (256 * 1024)

enum fault_kind {
	F_NONE,
	F_HTTP500,
	F_THROTTLE,   /* ProvisionedThroughputExceededException */
	F_THROTTLING, /* ThrottlingException */
	F_LOSE,
	F_HANG,
	F_LATE,
	F_ODDTIME, /* a refusal for the signing time, with an odd Date */
	F_GARBAGE, /* forwarded; the answer replaced by a 200 HTML page */
};

static const char *const fault_names[] = {
	[F_NONE] = "none",
	[F_HTTP500] = "http500",
	[F_THROTTLE] = "throttle",
	[F_THROTTLING] = "throttling",
	[F_LOSE] = "lose-reply",
	[F_HANG] = "hang-reply",
	[F_LATE] = "late-request",
	[F_ODDTIME] = "odd-time",
	[F_GARBAGE] = "garbage-reply",
};

struct fault {
	enum fault_kind kind;
	char op[OP_MAX]; /* "" = any operation */
	long n;
};

struct opcount {
	char name[OP_MAX];
	unsigned long n;
	unsigned long long bytes;   /* of the responses forwarded */
	unsigned long long scanned; /* their ScannedCount (Query, Scan) */
};

struct proxy;

/* A growable byte buffer with a hard cap. */
struct buf {
	char *p;
	size_t len, cap;
};

/* What the parser found in one message's head. */
struct head {
	size_t hdr_len;	 /* through the blank line */
	long long clen;	 /* Content-Length, -1 when absent */
	int chunked;	 /* Transfer-Encoding: chunked */
	int conn_close;	 /* Connection: close */
	int expect100;	 /* Expect: 100-continue (requests) */
	int status;	 /* responses */
	int head_method; /* requests: HEAD */
	char op[OP_MAX]; /* X-Amz-Target operation, or "-" */
};

struct conn {
	struct proxy *p;
	int slot;
	int cfd, ufd, efd;
	int doomed;	/* protected by p->mu: reset requested */
	struct buf in;	/* bytes from the client (one request, maybe more) */
	struct buf out; /* one response (from upstream or made here) */
	struct head req;
	size_t req_len;	   /* bytes of the current request in `in` */
	int resp_to_close; /* the response ends at EOF or says close */
};

struct proxy {
	pthread_mutex_t mu;
	pthread_cond_t gone; /* signalled when a connection leaves the table */
	/* settings, protected by mu */
	long latency_ms;
	long capacity;		  /* requests a second; 0: any */
	char capacity_op[OP_MAX]; /* of this operation ("": any) */
	int64_t capacity_next_us; /* the next request's turn */
	int stall, drop, quit;
	unsigned long clear_gen;
	struct fault faults[MAX_FAULTS];
	/* counters, protected by mu */
	unsigned long n_conns, n_requests, n_forwarded, n_injected;
	struct opcount ops[MAX_OPS];
	int nops;
	/* connection table, protected by mu */
	struct conn *conns[MAX_CONNS];
	int nconns;
	/* fixed after start */
	struct sockaddr_in target;
	int lfd, ctlfd, qfd;
	const char *ctl_path;
	int verbose;
};

/* ---- small helpers ------------------------------------------------------ */

static void logmsg(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "faultproxy: %s\n", line);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
	return now_us() / 1000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int buf_reserve(struct buf *b, size_t more)
{
	size_t want = b->len + more, ncap;
	char *np;

	if (want <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < want)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

static int buf_add(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n))
		return -ENOMEM;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* Drops the first n bytes. */
static void buf_consume(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, colon - s);
	host[colon - s] = 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

/* Closes with a TCP reset (SO_LINGER 0). */
static void close_reset(int fd)
{
	struct linger l = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* ---- settings seen by connections --------------------------------------- */

static void kick_all_locked(struct proxy *p)
{
	int i;

	for (i = 0; i < MAX_CONNS; i++)
		if (p->conns[i])
			eventfd_write(p->conns[i]->efd, 1);
}

/* -ECONNRESET when this connection must be reset now. Called with mu. */
static int conn_state_locked(struct conn *c)
{
	return c->doomed || c->p->drop || c->p->quit ? -ECONNRESET : 0;
}

static int conn_state(struct conn *c)
{
	int rc;

	pthread_mutex_lock(&c->p->mu);
	rc = conn_state_locked(c);
	pthread_mutex_unlock(&c->p->mu);
	return rc;
}

/* Waits for events on fd (fd < 0: none), for a kick, or for deadline_us
 * (monotonic microseconds; < 0: none). Returns revents (> 0), 0 after a kick
 * (the caller re-reads the settings), -ETIMEDOUT. */
static int conn_wait(struct conn *c, int fd, short events, int64_t deadline_us)
{
	struct pollfd pf[2] = { { c->efd, POLLIN, 0 }, { fd, events, 0 } };
	struct timespec ts, *tsp = NULL;
	int n;

	for (;;) {
		if (deadline_us >= 0) {
			int64_t left = deadline_us - now_us();

			if (left <= 0)
				return -ETIMEDOUT;
			ts.tv_sec = left / 1000000;
			ts.tv_nsec = (left % 1000000) * 1000;
			tsp = &ts;
		}
		n = ppoll(pf, fd >= 0 ? 2 : 1, tsp, NULL);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (pf[0].revents) {
			eventfd_t v;

			eventfd_read(c->efd, &v);
			return 0;
		}
		if (pf[1].revents)
			return pf[1].revents;
	}
}

/* Waits until fd is ready for events; -ECONNRESET if the connection is to
 * be reset meanwhile. */
static int conn_ready(struct conn *c, int fd, short events, int64_t deadline_us)
{
	int rc;

	for (;;) {
		rc = conn_state(c);
		if (rc)
			return rc;
		rc = conn_wait(c, fd, events, deadline_us);
		if (rc)
			return rc < 0 ? rc : 0;
	}
}

/* Reads what is there into b (at most cap bytes in all). Returns the bytes
 * read, 0 at EOF, -EMSGSIZE past the cap, or -errno. */
static ssize_t conn_read(struct conn *c, int fd, struct buf *b, size_t cap,
			 int64_t deadline_us)
{
	for (;;) {
		size_t room;
		ssize_t n;
		int rc;

		if (b->len >= cap)
			return -EMSGSIZE;
		room = cap - b->len < 65536 ? cap - b->len : 65536;
		if (buf_reserve(b, room))
			return -ENOMEM;
		n = recv(fd, b->p + b->len, room, 0);
		if (n >= 0) {
			b->len += (size_t)n;
			return n;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		rc = conn_ready(c, fd, POLLIN, deadline_us);
		if (rc)
			return rc;
	}
}

static int conn_send(struct conn *c, int fd, const char *p, size_t len)
{
	int64_t deadline_us = now_us() + SEND_TIMEOUT_MS * 1000LL;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		int rc;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		rc = conn_ready(c, fd, POLLOUT, deadline_us);
		if (rc)
			return rc;
	}
	return 0;
}

/* Waits `latency` (re-read after every change of it); -ECONNRESET when the
 * connection is to be reset meanwhile. */
static int conn_delay(struct conn *c)
{
	struct proxy *p = c->p;
	int64_t start = now_us();

	for (;;) {
		int64_t lat;
		int rc;

		pthread_mutex_lock(&p->mu);
		lat = p->latency_ms * 1000LL;
		rc = conn_state_locked(c);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
		if (now_us() >= start + lat)
			return 0;
		rc = conn_wait(c, -1, 0, start + lat);
		if (rc == -ETIMEDOUT)
			return 0;
		if (rc < 0)
			return rc;
	}
}

/* "capacity": takes the request's turn (one every 1/capacity s) and
 * waits for it; -ECONNRESET when the connection is to be reset
 * meanwhile. */
static int conn_capacity(struct conn *c)
{
	struct proxy *p = c->p;
	int64_t turn = 0, now = now_us();
	int rc;

	pthread_mutex_lock(&p->mu);
	if (p->capacity > 0 &&
	    (!p->capacity_op[0] || !strcmp(p->capacity_op, c->req.op))) {
		turn = p->capacity_next_us > now ? p->capacity_next_us : now;
		p->capacity_next_us = turn + 1000000 / p->capacity;
	}
	pthread_mutex_unlock(&p->mu);
	while (turn && now_us() < turn) {
		long cap;

		pthread_mutex_lock(&p->mu);
		cap = p->capacity;
		rc = conn_state_locked(c);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
		if (!cap)
			return 0; /* turned off meanwhile */
		rc = conn_wait(c, -1, 0, turn);
		if (rc == -ETIMEDOUT)
			return 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Has the client hung up? (revents of a POLLRDHUP wait) */
static int hung_up(int revents)
{
	return revents & (POLLRDHUP | POLLHUP | POLLERR);
}

/* While "stall on": waits. -ECONNRESET on reset/drop, -EPIPE when the
 * client gave up (the request is then dropped, never forwarded). */
static int conn_stall(struct conn *c)
{
	struct proxy *p = c->p;

	for (;;) {
		int stall, rc;

		pthread_mutex_lock(&p->mu);
		stall = p->stall;
		rc = conn_state_locked(c);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
		if (!stall)
			return 0;
		rc = conn_wait(c, c->cfd, POLLRDHUP, -1);
		if (rc < 0)
			return rc;
		if (rc > 0 && hung_up(rc))
			return -EPIPE;
	}
}

/* Waits for "clear" (0); -ECONNRESET if the connection is reset meanwhile.
 * hang-reply (client_counts) also stops when the client hangs up (-EPIPE):
 * its answer is then undeliverable. late-request holds the request
 * whatever its client does. */
static int conn_until_clear(struct conn *c, bool client_counts)
{
	struct proxy *p = c->p;
	unsigned long gen;

	pthread_mutex_lock(&p->mu);
	gen = p->clear_gen;
	pthread_mutex_unlock(&p->mu);
	for (;;) {
		unsigned long now_gen;
		int rc;

		pthread_mutex_lock(&p->mu);
		now_gen = p->clear_gen;
		rc = conn_state_locked(c);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
		if (now_gen != gen)
			return 0;
		/* Without the client's socket: the eventfd alone. */
		rc = client_counts ? conn_wait(c, c->cfd, POLLRDHUP, -1)
				   : conn_wait(c, -1, 0, -1);
		if (rc < 0)
			return rc;
		if (client_counts && rc > 0 && hung_up(rc))
			return -EPIPE;
	}
}

/* ---- HTTP parsing ------------------------------------------------------- */

static const char *find_blank_line(const char *p, size_t len)
{
	return len ? memmem(p, len, "\r\n\r\n", 4) : NULL;
}

static int name_is(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && !strncasecmp(name, want, nlen);
}

/* Does the comma-separated value contain token (case-insensitive)? */
static int has_token(const char *v, size_t vlen, const char *token)
{
	size_t tl = strlen(token), i = 0;

	while (i < vlen) {
		size_t s, e;

		while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < vlen && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && !strncasecmp(v + s, token, tl))
			return 1;
	}
	return 0;
}

/* X-Amz-Target: DynamoDB_20120810.PutItem -> PutItem (letters and digits
 * only; anything else makes it "-"). */
static void parse_target(const char *v, size_t vlen, char *op)
{
	const char *dot = memchr(v, '.', vlen);
	size_t i, n;

	strcpy(op, "-");
	if (!dot)
		return;
	n = vlen - (size_t)(dot + 1 - v);
	if (!n || n >= OP_MAX)
		return;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)dot[1 + i]))
			return;
	memcpy(op, dot + 1, n);
	op[n] = 0;
}

static int parse_clen(const char *v, size_t vlen, long long *out)
{
	long long n = 0;
	size_t i;

	if (!vlen)
		return -EINVAL;
	for (i = 0; i < vlen; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -EINVAL;
		n = n * 10 + (v[i] - '0');
		if (n > BODY_CAP)
			return -EMSGSIZE;
	}
	if (*out >= 0 && *out != n)
		return -EINVAL; /* two different lengths */
	*out = n;
	return 0;
}

/* One header line (without CRLF) into h. */
static int parse_header(const char *line, size_t len, struct head *h)
{
	const char *colon = memchr(line, ':', len);
	const char *v;
	size_t nlen, vlen;

	if (!colon || colon == line)
		return -EINVAL;
	nlen = (size_t)(colon - line);
	v = colon + 1;
	vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (name_is(line, nlen, "content-length"))
		return parse_clen(v, vlen, &h->clen);
	if (name_is(line, nlen, "transfer-encoding"))
		h->chunked |= has_token(v, vlen, "chunked");
	else if (name_is(line, nlen, "connection"))
		h->conn_close |= has_token(v, vlen, "close");
	else if (name_is(line, nlen, "expect"))
		h->expect100 |= has_token(v, vlen, "100-continue");
	else if (name_is(line, nlen, "x-amz-target"))
		parse_target(v, vlen, h->op);
	return 0;
}

/* Parses the head p[0..hdr_len) (first line + headers). is_resp selects
 * the first line's form. */
static int parse_head(const char *p, size_t hdr_len, int is_resp,
		      struct head *h)
{
	const char *end = p + hdr_len - 2, *line = p, *eol;

	memset(h, 0, sizeof(*h));
	h->hdr_len = hdr_len;
	h->clen = -1;
	strcpy(h->op, "-");
	eol = memmem(line, (size_t)(end - line + 2), "\r\n", 2);
	if (!eol)
		return -EINVAL;
	if (is_resp) {
		if (eol - line < 12 || strncmp(line, "HTTP/1.", 7) ||
		    !isdigit((unsigned char)line[9]) ||
		    !isdigit((unsigned char)line[10]) ||
		    !isdigit((unsigned char)line[11]))
			return -EINVAL;
		h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 +
			    (line[11] - '0');
	} else {
		const char *sp = memchr(line, ' ', (size_t)(eol - line));

		if (!sp || !memmem(line, (size_t)(eol - line), " HTTP/1.", 8))
			return -EINVAL;
		h->head_method = sp - line == 4 && !memcmp(line, "HEAD", 4);
	}
	for (line = eol + 2; line < end; line = eol + 2) {
		int rc;

		eol = memmem(line, (size_t)(end - line + 2), "\r\n", 2);
		if (!eol)
			return -EINVAL;
		rc = parse_header(line, (size_t)(eol - line), h);
		if (rc)
			return rc;
	}
	return 0;
}

/* Walks complete chunks of a chunked body from *pos. 1 when the last chunk
 * and trailers are in (*pos = the end of the message), 0 to read more, or
 * -EINVAL. */
static int chunked_walk(const char *p, size_t len, size_t *pos)
{
	for (;;) {
		const char *q = p + *pos, *eol;
		size_t left = len - *pos, i = 0;
		unsigned long long size = 0;

		eol = memmem(q, left, "\r\n", 2);
		if (!eol)
			return left > 4096 ? -EINVAL : 0;
		while (q + i < eol && isxdigit((unsigned char)q[i])) {
			int c = tolower((unsigned char)q[i]);

			size = size * 16 +
			       (unsigned)(isdigit(c) ? c - '0' : c - 'a' + 10);
			if (size > BODY_CAP)
				return -EMSGSIZE;
			i++;
		}
		if (!i || (q + i < eol && q[i] != ';' && q[i] != ' '))
			return -EINVAL;
		if (size == 0) {
			/* trailers, then a blank line */
			const char *t = eol + 2;

			for (;;) {
				const char *te = memmem(
					t, (size_t)(p + len - t), "\r\n", 2);

				if (!te)
					return 0;
				if (te == t) {
					*pos = (size_t)(te + 2 - p);
					return 1;
				}
				t = te + 2;
			}
		}
		if ((size_t)(eol + 2 - q) + size + 2 > left)
			return 0;
		if (memcmp(eol + 2 + size, "\r\n", 2))
			return -EINVAL;
		*pos += (size_t)(eol + 2 - q) + size + 2;
	}
}

/* ---- responses made here ------------------------------------------------ */

static int make_response_dated(struct buf *b, int status, const char *reason,
			       const char *ctype, const char *body, int close,
			       const char *date_line)
{
	char head[512];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "x-amzn-RequestId: faultproxy\r\n"
		     "%s%s"
		     "\r\n",
		     status, reason, ctype, strlen(body), date_line,
		     close ? "Connection: close\r\n" : "");
	b->len = 0;
	if (buf_add(b, head, (size_t)n) || buf_add(b, body, strlen(body)))
		return -ENOMEM;
	return 0;
}

static int make_response(struct buf *b, int status, const char *reason,
			 const char *ctype, const char *body, int close)
{
	return make_response_dated(b, status, reason, ctype, body, close, "");
}

/* DynamoDB's refusal of a request signed too long ago, dated two days
 * before now: a time no accepted answer agrees with. */
static int make_oddtime_response(struct buf *b, int close)
{
	time_t t = time(NULL) - 2 * 86400;
	char date[64], line[96];
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	snprintf(line, sizeof(line), "Date: %s\r\n", date);
	return make_response_dated(
		b, 400, "Bad Request", "application/x-amz-json-1.0",
		"{\"__type\":\"com.amazon.coral.service#InvalidSignatureExcep"
		"tion\",\"message\":\"Signature expired: 20261125T000000Z is "
		"now earlier than 20261127T000000Z (20261126T235500Z - 5 min."
		")\"}",
		close, line);
}

static int make_fault_response(struct buf *b, enum fault_kind kind, int close)
{
	static const char prefix[] = "com.amazonaws.dynamodb.v20120810#";
	const char *type = kind == F_HTTP500	? "InternalServerError"
			   : kind == F_THROTTLE ? "ProvisionedThroughputExce"
						  "ededException"
						: "ThrottlingException";
	char body[256];

	snprintf(body, sizeof(body),
		 "{\"__type\":\"%s%s\",\"message\":\"injected\"}", prefix,
		 type);
	if (kind == F_HTTP500)
		return make_response(b, 500, "Internal Server Error",
				     "application/x-amz-json-1.0", body, close);
	return make_response(b, 400, "Bad Request",
			     "application/x-amz-json-1.0", body, close);
}

static void send_simple(struct conn *c, int status, const char *reason)
{
	char body[128];

	snprintf(body, sizeof(body), "faultproxy: %d %s\n", status, reason);
	if (!make_response(&c->out, status, reason, "text/plain", body, 1))
		conn_send(c, c->cfd, c->out.p, c->out.len);
}

/* ---- one request -------------------------------------------------------- */

/* Reads one whole request into c->in. 0, 1 when the client closed between
 * requests, or -errno (logged when it is the client's fault). */
static int read_request(struct conn *c)
{
	const char *blank;
	size_t need;
	ssize_t n;
	int rc, sent100 = 0;

	while (!(blank = find_blank_line(c->in.p, c->in.len))) {
		if (c->in.len >= HDR_CAP) {
			logmsg("request head over %d bytes: closing", HDR_CAP);
			return -EMSGSIZE;
		}
		n = conn_read(c, c->cfd, &c->in, HDR_CAP, -1);
		if (n == 0)
			return c->in.len ? -EPIPE : 1;
		if (n < 0)
			return (int)n;
	}
	rc = parse_head(c->in.p, (size_t)(blank + 4 - c->in.p), 0, &c->req);
	if (rc == -EMSGSIZE) {
		logmsg("request body over %d bytes: closing", BODY_CAP);
		return rc;
	}
	if (rc) {
		logmsg("malformed request head: closing");
		send_simple(c, 400, "Bad Request");
		return rc;
	}
	if (c->req.chunked) {
		logmsg("chunked request: 501");
		send_simple(c, 501, "Not Implemented");
		return -ENOSYS;
	}
	need = c->req.hdr_len + (c->req.clen > 0 ? (size_t)c->req.clen : 0);
	while (c->in.len < need) {
		if (c->req.expect100 && !sent100) {
			static const char cont[] =
				"HTTP/1.1 100 Continue\r\n\r\n";

			rc = conn_send(c, c->cfd, cont, sizeof(cont) - 1);
			if (rc)
				return rc;
			sent100 = 1;
		}
		n = conn_read(c, c->cfd, &c->in, need, -1);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return (int)n;
	}
	c->req_len = need;
	return 0;
}

/* Counts the request and takes the first pending fault that matches it. */
static enum fault_kind take_fault(struct proxy *p, const char *op)
{
	enum fault_kind kind = F_NONE;
	int i;

	pthread_mutex_lock(&p->mu);
	p->n_requests++;
	for (i = 0; i < p->nops; i++)
		if (!strcmp(p->ops[i].name, op))
			break;
	if (i < p->nops) {
		p->ops[i].n++;
	} else if (p->nops < MAX_OPS) {
		snprintf(p->ops[i].name, OP_MAX, "%s", op);
		p->ops[i].n = 1;
		p->nops++;
	}
	for (i = 0; i < MAX_FAULTS; i++) {
		struct fault *f = &p->faults[i];

		if (f->n > 0 && (!f->op[0] || !strcmp(f->op, op))) {
			kind = f->kind;
			f->n--;
			p->n_injected++;
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return kind;
}

static int upstream_connect(struct conn *c)
{
	int fd, rc, one = 1;
	socklen_t len = sizeof(rc);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&c->p->target,
		    sizeof(c->p->target)) &&
	    errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = conn_ready(c, fd, POLLOUT, now_us() + CONNECT_TIMEOUT_MS * 1000LL);
	if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &len) == 0)
		rc = -rc;
	if (rc) {
		close(fd);
		return rc;
	}
	c->ufd = fd;
	return 0;
}

static void upstream_close(struct conn *c)
{
	if (c->ufd >= 0)
		close(c->ufd);
	c->ufd = -1;
}

/* An idle upstream connection that is readable was closed (or sent
 * something unasked): drop it. */
static void upstream_check(struct conn *c)
{
	struct pollfd pf = { c->ufd, POLLIN | POLLRDHUP, 0 };

	if (c->ufd >= 0 && poll(&pf, 1, 0) > 0)
		upstream_close(c);
}

/* Reads one whole response from upstream into c->out. 0, or -errno;
 * -EAGAIN when the connection closed before a single byte (a stale
 * keep-alive connection: the caller may try again once). */
static int read_response(struct conn *c)
{
	struct buf *b = &c->out;
	int64_t deadline_us = now_us() + UPSTREAM_TIMEOUT_MS * 1000LL;
	struct head h;
	const char *blank;
	size_t pos;
	ssize_t n;
	int rc;

	b->len = 0;
	for (;;) { /* skip interim 1xx answers */
		while (!(blank = find_blank_line(b->p, b->len))) {
			if (b->len >= HDR_CAP) {
				logmsg("response head over %d bytes", HDR_CAP);
				return -EMSGSIZE;
			}
			n = conn_read(c, c->ufd, b, HDR_CAP, deadline_us);
			if (n == 0)
				return b->len ? -EPIPE : -EAGAIN;
			if (n < 0)
				return (int)n;
		}
		rc = parse_head(b->p, (size_t)(blank + 4 - b->p), 1, &h);
		if (rc) {
			logmsg("malformed or oversized response head");
			return rc;
		}
		if (h.status >= 200 || h.status == 101)
			break;
		buf_consume(b, h.hdr_len);
	}
	c->resp_to_close = h.conn_close;
	if (c->req.head_method || h.status == 204 || h.status == 304 ||
	    h.status < 200) {
		b->len = h.hdr_len;
		return 0;
	}
	pos = h.hdr_len;
	for (;;) {
		if (h.chunked) {
			rc = chunked_walk(b->p, b->len, &pos);
			if (rc < 0) {
				logmsg("bad or oversized chunked response");
				return rc;
			}
			if (rc) {
				b->len = pos;
				return 0;
			}
		} else if (h.clen >= 0 && b->len >= h.hdr_len + h.clen) {
			b->len = h.hdr_len + (size_t)h.clen;
			return 0;
		}
		n = conn_read(c, c->ufd, b, HDR_CAP + BODY_CAP, deadline_us);
		if (n == -EMSGSIZE)
			logmsg("response body over %d bytes", BODY_CAP);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			if (h.chunked || h.clen >= 0)
				return -EPIPE;
			c->resp_to_close = 1; /* delimited by the close */
			return 0;
		}
	}
}

/* Adds a response of len bytes to op's counts (counted by take_fault):
 * its bytes, and the ScannedCount its body names, if any. */
static void count_bytes(struct proxy *p, const char *op, const char *resp,
			size_t len)
{
	static const char tag[] = "\"ScannedCount\":";
	unsigned long long scanned = 0;
	const char *at = memmem(resp, len, tag, sizeof(tag) - 1);

	if (at) {
		at += sizeof(tag) - 1;
		while (at < resp + len && (*at == ' ' || *at == '\t'))
			at++;
		while (at < resp + len && *at >= '0' && *at <= '9')
			scanned = scanned * 10 + (unsigned)(*at++ - '0');
	}
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nops; i++) {
		if (!strcmp(p->ops[i].name, op)) {
			p->ops[i].bytes += len;
			p->ops[i].scanned += scanned;
		}
	}
	pthread_mutex_unlock(&p->mu);
}

/* Sends the request upstream and reads its response into c->out; one retry
 * on a fresh connection when a reused one turns out to be closed. 0,
 * -ECONNREFUSED & co. when no connection can be made, or -errno. */
static int forward(struct conn *c)
{
	int attempt, rc = 0;

	for (attempt = 0; attempt < 2; attempt++) {
		int reused;

		upstream_check(c);
		reused = c->ufd >= 0;
		if (!reused) {
			rc = upstream_connect(c);
			if (rc)
				return rc == -ECONNRESET ? rc : -ECONNREFUSED;
		}
		rc = conn_send(c, c->ufd, c->in.p, c->req_len);
		if (!rc)
			rc = read_response(c);
		if (!rc) {
			if (c->resp_to_close)
				upstream_close(c);
			return 0;
		}
		upstream_close(c);
		if (rc == -ECONNRESET && conn_state(c))
			return rc; /* reset from the control socket */
		if (!reused ||
		    (rc != -EAGAIN && rc != -EPIPE && rc != -ECONNRESET))
			break;
	}
	return rc;
}

/* Serves the request in c->in: 0 to go on with the next one on this
 * connection, 1 to close it, -ECONNRESET to reset it. */
static int serve(struct conn *c)
{
	struct proxy *p = c->p;
	enum fault_kind kind = take_fault(p, c->req.op);
	int close_after = c->req.conn_close, rc;

	if (p->verbose)
		logmsg("conn %d: %s fault=%s", c->slot, c->req.op,
		       fault_names[kind]);
	if (kind == F_LATE) {
		logmsg("conn %d: holding %s until clear", c->slot, c->req.op);
		rc = conn_until_clear(c, false);
		if (rc)
			return rc;
		pthread_mutex_lock(&p->mu);
		p->n_forwarded++;
		pthread_mutex_unlock(&p->mu);
		rc = forward(c);
		logmsg("conn %d: %s delivered late (%d)", c->slot, c->req.op,
		       rc);
		return rc == -ECONNRESET ? rc : 1; /* its answer goes nowhere */
	}
	rc = conn_stall(c);
	if (!rc)
		rc = conn_delay(c);
	if (!rc)
		rc = conn_capacity(c);
	if (rc)
		return rc == -EPIPE ? 1 : rc;
	if (kind == F_HTTP500 || kind == F_THROTTLE || kind == F_THROTTLING) {
		if (make_fault_response(&c->out, kind, close_after))
			return 1;
	} else if (kind == F_ODDTIME) {
		if (make_oddtime_response(&c->out, close_after))
			return 1;
	} else {
		pthread_mutex_lock(&p->mu);
		p->n_forwarded++;
		pthread_mutex_unlock(&p->mu);
		rc = forward(c);
		if (rc == -ECONNREFUSED) {
			logmsg("upstream connect failed: 502");
			send_simple(c, 502, "Bad Gateway");
			return 1;
		}
		if (rc)
			return rc == -ECONNRESET ? rc : 1;
		count_bytes(p, c->req.op, c->out.p, c->out.len);
		if (kind == F_LOSE) {
			logmsg("conn %d: lost the reply of %s", c->slot,
			       c->req.op);
			return -ECONNRESET;
		}
		if (kind == F_GARBAGE) {
			logmsg("conn %d: a page for the reply of %s", c->slot,
			       c->req.op);
			if (make_response(&c->out, 200, "OK", "text/html",
					  "<html>a proxy says hello</html>",
					  close_after))
				return 1;
		}
		if (kind == F_HANG) {
			logmsg("conn %d: hanging the reply of %s", c->slot,
			       c->req.op);
			rc = conn_until_clear(c, true);
			if (rc)
				return rc == -EPIPE ? 1 : rc;
		}
		close_after |= c->resp_to_close;
	}
	rc = conn_delay(c);
	if (!rc)
		rc = conn_send(c, c->cfd, c->out.p, c->out.len);
	if (rc)
		return rc == -ECONNRESET ? rc : 1;
	return close_after;
}

/* ---- connections -------------------------------------------------------- */

static void conn_free(struct conn *c)
{
	free(c->in.p);
	free(c->out.p);
	if (c->efd >= 0)
		close(c->efd);
	free(c);
}

static void conn_unregister(struct conn *c)
{
	struct proxy *p = c->p;

	pthread_mutex_lock(&p->mu);
	p->conns[c->slot] = NULL;
	p->nconns--;
	pthread_cond_broadcast(&p->gone);
	pthread_mutex_unlock(&p->mu);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	int rc;

	for (;;) {
		rc = read_request(c);
		if (rc)
			break;
		rc = serve(c);
		if (rc)
			break;
		buf_consume(&c->in, c->req_len);
	}
	conn_unregister(c);
	upstream_close(c);
	if (rc == -ECONNRESET)
		close_reset(c->cfd);
	else
		close(c->cfd);
	conn_free(c);
	return NULL;
}

/* Registers a connection for fd and starts its thread; on failure the
 * connection is reset. Called by the accept thread. */
static void conn_start(struct proxy *p, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	pthread_attr_t attr;
	pthread_t th;
	int i, one = 1, rc;

	if (!c)
		goto fail;
	c->p = p;
	c->cfd = fd;
	c->ufd = -1;
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0)
		goto fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_mutex_lock(&p->mu);
	if (p->drop || p->quit || p->nconns >= MAX_CONNS) {
		if (p->nconns >= MAX_CONNS)
			logmsg("%d connections: refusing more", MAX_CONNS);
		pthread_mutex_unlock(&p->mu);
		goto fail;
	}
	for (i = 0; p->conns[i]; i++)
		;
	c->slot = i;
	p->conns[i] = c;
	p->nconns++;
	p->n_conns++;
	pthread_mutex_unlock(&p->mu);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (!rc)
		return;
	logmsg("pthread_create: %s", strerror(rc));
	conn_unregister(c);
fail:
	close_reset(fd);
	if (c && c->efd >= 0)
		close(c->efd);
	free(c);
}

static void *accept_main(void *arg)
{
	struct proxy *p = arg;
	struct pollfd pf[2] = { { p->lfd, POLLIN, 0 }, { p->qfd, POLLIN, 0 } };

	for (;;) {
		int fd;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!pf[0].revents)
			continue;
		fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_start(p, fd);
		} else if (errno == EMFILE || errno == ENFILE ||
			   errno == ENOBUFS || errno == ENOMEM) {
			logmsg("accept: %s", strerror(errno));
			sleep_ms(100); /* never busy-loop on a full table */
		}
	}
	return NULL;
}

/* ---- control ------------------------------------------------------------ */

static int parse_long(const char *s, long max, long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

static int valid_op(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n >= OP_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]))
			return 0;
	return 1;
}

static int parse_onoff(const char *s, int *out)
{
	if (s && !strcmp(s, "on"))
		*out = 1;
	else if (s && !strcmp(s, "off"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

/* Sets the pending count of (kind, op): a later command for the same pair
 * replaces the earlier count. Called with mu. */
static int set_fault_locked(struct proxy *p, enum fault_kind kind,
			    const char *op, long n)
{
	int i, free_slot = -1;

	for (i = 0; i < MAX_FAULTS; i++) {
		struct fault *f = &p->faults[i];

		if (f->n > 0 && f->kind == kind && !strcmp(f->op, op)) {
			f->n = n;
			return 0;
		}
		if (f->n <= 0 && free_slot < 0)
			free_slot = i;
	}
	if (!n)
		return 0;
	if (free_slot < 0)
		return -ENOSPC;
	p->faults[free_slot].kind = kind;
	snprintf(p->faults[free_slot].op, OP_MAX, "%s", op);
	p->faults[free_slot].n = n;
	return 0;
}

static void cmd_stats_locked(struct proxy *p, char *out, size_t size)
{
	size_t len;
	int i;

	len = (size_t)snprintf(out, size,
			       "ok conns=%lu requests=%lu forwarded=%lu "
			       "injected=%lu",
			       p->n_conns, p->n_requests, p->n_forwarded,
			       p->n_injected);
	for (i = 0; i < p->nops && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, " %s=%lu",
					p->ops[i].name, p->ops[i].n);
}

static void cmd_bytes_locked(struct proxy *p, bool scanned, char *out,
			     size_t size)
{
	size_t len = (size_t)snprintf(out, size, "ok");
	int i;

	for (i = 0; i < p->nops && len < size; i++)
		len += (size_t)snprintf(
			out + len, size - len, " %s=%llu", p->ops[i].name,
			scanned ? p->ops[i].scanned : p->ops[i].bytes);
}

static enum fault_kind fault_kind_of(const char *cmd)
{
	if (!strcmp(cmd, "http500"))
		return F_HTTP500;
	if (!strcmp(cmd, "throttle"))
		return F_THROTTLE;
	if (!strcmp(cmd, "throttling"))
		return F_THROTTLING;
	if (!strcmp(cmd, "lose-reply"))
		return F_LOSE;
	if (!strcmp(cmd, "hang-reply"))
		return F_HANG;
	if (!strcmp(cmd, "late-request"))
		return F_LATE;
	if (!strcmp(cmd, "odd-time"))
		return F_ODDTIME;
	if (!strcmp(cmd, "garbage-reply"))
		return F_GARBAGE;
	return F_NONE;
}

/* "KIND N [OP]" (throttle: [OP] [throttling]). */
static void cmd_fault_locked(struct proxy *p, char **av, int ac, char *out,
			     size_t size)
{
	enum fault_kind kind = fault_kind_of(av[0]);
	const char *op = "";
	long n;
	int i;

	if (ac < 2 || parse_long(av[1], MAX_N, &n)) {
		snprintf(out, size, "error: usage: %s N [OP]", av[0]);
		return;
	}
	for (i = 2; i < ac; i++) {
		if (kind == F_THROTTLE && !strcmp(av[i], "throttling"))
			kind = F_THROTTLING;
		else if (!op[0] && valid_op(av[i]))
			op = av[i];
		else {
			snprintf(out, size, "error: bad argument %.40s", av[i]);
			return;
		}
	}
	if (set_fault_locked(p, kind, op, n)) {
		snprintf(out, size, "error: too many pending faults");
		return;
	}
	snprintf(out, size, "ok %s %ld%s%s", fault_names[kind], n,
		 op[0] ? " " : "", op);
}

static void cmd_clear_locked(struct proxy *p)
{
	p->latency_ms = 0;
	p->capacity = 0;
	p->capacity_op[0] = '\0';
	p->stall = 0;
	p->drop = 0;
	memset(p->faults, 0, sizeof(p->faults));
	p->clear_gen++;
}

/* Runs one command line; the reply (without newline) goes to out. */
static void run_command(struct proxy *p, char *line, char *out, size_t size)
{
	char *av[8], *save = NULL, *tok;
	int ac = 0, v;
	long n;

	for (tok = strtok_r(line, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (ac == 8) {
			snprintf(out, size, "error: too many arguments");
			return;
		}
		av[ac++] = tok;
	}
	if (!ac) {
		snprintf(out, size, "error: empty command");
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (!strcmp(av[0], "latency")) {
		if (ac != 2 || parse_long(av[1], MAX_LATENCY_MS, &n)) {
			snprintf(out, size, "error: usage: latency MS");
		} else {
			p->latency_ms = n;
			snprintf(out, size, "ok latency %ld", n);
		}
	} else if (!strcmp(av[0], "capacity")) {
		if (ac < 2 || ac > 3 || parse_long(av[1], 1000000, &n) ||
		    (ac == 3 && strlen(av[2]) >= OP_MAX)) {
			snprintf(out, size, "error: usage: capacity N [OP]");
		} else {
			p->capacity = n;
			snprintf(p->capacity_op, sizeof(p->capacity_op), "%s",
				 ac == 3 ? av[2] : "");
			p->capacity_next_us = 0;
			snprintf(out, size, "ok capacity %ld%s%s", n,
				 ac == 3 ? " " : "", ac == 3 ? av[2] : "");
		}
	} else if (!strcmp(av[0], "stall") || !strcmp(av[0], "drop")) {
		if (ac != 2 || parse_onoff(av[1], &v)) {
			snprintf(out, size, "error: usage: %s on|off", av[0]);
		} else {
			if (!strcmp(av[0], "stall"))
				p->stall = v;
			else
				p->drop = v;
			snprintf(out, size, "ok %s %s", av[0], av[1]);
		}
	} else if (!strcmp(av[0], "reset") && ac == 1) {
		int i;

		for (i = 0; i < MAX_CONNS; i++)
			if (p->conns[i])
				p->conns[i]->doomed = 1;
		snprintf(out, size, "ok reset %d", p->nconns);
	} else if (fault_kind_of(av[0]) != F_NONE) {
		cmd_fault_locked(p, av, ac, out, size);
	} else if (!strcmp(av[0], "clear") && ac == 1) {
		cmd_clear_locked(p);
		snprintf(out, size, "ok clear");
	} else if (!strcmp(av[0], "stats") && ac == 1) {
		cmd_stats_locked(p, out, size);
	} else if ((!strcmp(av[0], "bytes") || !strcmp(av[0], "scanned")) &&
		   ac == 1) {
		cmd_bytes_locked(p, av[0][0] == 's', out, size);
	} else if (!strcmp(av[0], "reset") || !strcmp(av[0], "clear") ||
		   !strcmp(av[0], "stats") || !strcmp(av[0], "bytes") ||
		   !strcmp(av[0], "scanned")) {
		snprintf(out, size, "error: %s takes no arguments", av[0]);
	} else {
		snprintf(out, size, "error: unknown command %.40s", av[0]);
	}
	kick_all_locked(p);
	pthread_mutex_unlock(&p->mu);
}

/* Reads one line (at most CTL_LINE_MAX bytes) within the deadline. */
static int read_line(int fd, char *line, int64_t deadline)
{
	size_t len = 0;

	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();
		char *nl;
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		n = recv(fd, line + len, CTL_LINE_MAX + 1 - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return len ? (line[len] = 0, 0) : -EPIPE;
		len += (size_t)n;
		nl = memchr(line, '\n', len);
		if (nl) {
			*nl = 0;
			if (nl > line && nl[-1] == '\r')
				nl[-1] = 0;
			return 0;
		}
		if (len > CTL_LINE_MAX)
			return -EMSGSIZE;
	}
}

static void serve_control(struct proxy *p, int fd)
{
	char line[CTL_LINE_MAX + 2], copy[CTL_LINE_MAX + 2], out[4096];
	int rc = read_line(fd, line, now_ms() + CTL_TIMEOUT_MS);
	size_t len;

	strcpy(copy, rc ? "?" : line);
	if (rc == -EMSGSIZE)
		snprintf(out, sizeof(out), "error: line over %d bytes",
			 CTL_LINE_MAX);
	else if (rc)
		snprintf(out, sizeof(out), "error: no command");
	else
		run_command(p, line, out, sizeof(out));
	if (p->verbose || strcmp(copy, "stats"))
		logmsg("control: %s -> %s", copy, out);
	len = strlen(out);
	out[len++] = '\n';
	send(fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void *control_main(void *arg)
{
	struct proxy *p = arg;
	struct pollfd pf[2] = { { p->ctlfd, POLLIN, 0 },
				{ p->qfd, POLLIN, 0 } };

	for (;;) {
		int fd;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!pf[0].revents)
			continue;
		fd = accept4(p->ctlfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			serve_control(p, fd);
			close(fd);
		} else if (errno != EINTR && errno != EAGAIN) {
			logmsg("control accept: %s", strerror(errno));
			sleep_ms(100);
		}
	}
	return NULL;
}

/* ---- setup -------------------------------------------------------------- */

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* Binds the control socket; a stale socket file nobody listens on is
 * replaced, a live one is an error. */
static int control_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, probe;

	if (unix_addr(path, &sa))
		return -ENAMETOOLONG;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
			close(probe);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

static int tcp_listen(const struct sockaddr_in *sa, int *port)
{
	struct sockaddr_in got;
	socklen_t len = sizeof(got);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, 512) || getsockname(fd, (struct sockaddr *)&got, &len)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*port = ntohs(got.sin_port);
	return fd;
}

/* Room for every connection's three descriptors. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* After SIGTERM/SIGINT: stop the threads, reset every connection, wait
 * (bounded) for the connection threads to end. */
static void shutdown_proxy(struct proxy *p, pthread_t acc, pthread_t ctl)
{
	struct timespec ts;

	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	kick_all_locked(p);
	pthread_mutex_unlock(&p->mu);
	eventfd_write(p->qfd, 1);
	pthread_join(acc, NULL);
	pthread_join(ctl, NULL);
	close(p->lfd);
	close(p->ctlfd);
	unlink(p->ctl_path);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3;
	pthread_mutex_lock(&p->mu);
	while (p->nconns > 0)
		if (pthread_cond_timedwait(&p->gone, &p->mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&p->mu);
}

static int serve_main(struct proxy *p, const struct sockaddr_in *listen_sa)
{
	pthread_t acc, ctl;
	sigset_t set;
	int port = 0, sig, rc;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	prctl(PR_SET_TIMERSLACK, 1UL); /* precise latency; threads inherit it */

	p->lfd = tcp_listen(listen_sa, &port);
	if (p->lfd < 0) {
		logmsg("listen: %s", strerror(-p->lfd));
		return 1;
	}
	p->ctlfd = control_listen(p->ctl_path);
	if (p->ctlfd < 0) {
		logmsg("control socket %s: %s", p->ctl_path,
		       strerror(-p->ctlfd));
		return 1;
	}
	p->qfd = eventfd(0, EFD_CLOEXEC);
	if (p->qfd < 0) {
		logmsg("eventfd: %s", strerror(errno));
		return 1;
	}
	rc = pthread_create(&acc, NULL, accept_main, p);
	if (!rc) {
		rc = pthread_create(&ctl, NULL, control_main, p);
		if (rc) {
			eventfd_write(p->qfd, 1);
			pthread_join(acc, NULL);
		}
	}
	if (rc) {
		logmsg("pthread_create: %s", strerror(rc));
		unlink(p->ctl_path);
		return 1;
	}
	printf("%d\n", port);
	fflush(stdout);
	if (p->verbose)
		logmsg("listening on port %d", port);
	while (sigwait(&set, &sig))
		;
	shutdown_proxy(p, acc, ctl);
	return 0;
}

/* ---- client mode -------------------------------------------------------- */

static int client_main(const char *path, int ac, char **av)
{
	char line[CTL_LINE_MAX + 2], reply[4096];
	struct sockaddr_un sa;
	size_t len = 0, got = 0;
	int64_t deadline;
	int fd, i;

	for (i = 0; i < ac; i++) {
		size_t n = strlen(av[i]);

		if (len + n + 1 > CTL_LINE_MAX || strchr(av[i], '\n')) {
			fprintf(stderr, "faultproxy: command too long\n");
			return 2;
		}
		memcpy(line + len, av[i], n);
		len += n;
		line[len++] = i + 1 < ac ? ' ' : '\n';
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || unix_addr(path, &sa) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len) {
		fprintf(stderr, "faultproxy: %s: %s\n", path, strerror(errno));
		return 2;
	}
	deadline = now_ms() + CLIENT_TIMEOUT_MS;
	while (got < sizeof(reply) - 1 && !memchr(reply, '\n', got)) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) < 0)
			break;
		n = recv(fd, reply + got, sizeof(reply) - 1 - got,
			 MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			got += (size_t)n;
	}
	close(fd);
	reply[got] = 0;
	if (!got || !strchr(reply, '\n')) {
		fprintf(stderr, "faultproxy: no reply from %s\n", path);
		return 2;
	}
	fputs(reply, stdout);
	if (!strncmp(reply, "ok", 2) && (reply[2] == ' ' || reply[2] == '\n'))
		return 0;
	return !strncmp(reply, "error: ", 7) ? 1 : 2;
}

/* ---- main --------------------------------------------------------------- */

static int usage(void)
{
	fputs("usage: lockfs-faultproxy --target HOST:PORT [--listen "
	      "HOST:PORT] --control SOCKPATH [--verbose]\n"
	      "       lockfs-faultproxy --control SOCKPATH CMD [ARGS...]\n"
	      "commands: latency MS | stall on|off | drop on|off | reset |\n"
	      "  http500 N [OP] | odd-time N [OP] | throttle N [OP] "
	      "[throttling] |\n"
	      "  lose-reply N [OP] | garbage-reply N [OP] | hang-reply N [OP] "
	      "|\n"
	      "  late-request N [OP] | clear | stats |\n"
	      "  bytes | scanned\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	static struct proxy px; /* large: not on the stack */
	struct sockaddr_in listen_sa;
	const char *target = NULL, *listen_at = "127.0.0.1:0";
	int i;

	px.ctl_path = NULL;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--verbose")) {
			px.verbose = 1;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--target"))
			target = argv[++i];
		else if (!strcmp(argv[i], "--listen"))
			listen_at = argv[++i];
		else if (!strcmp(argv[i], "--control"))
			px.ctl_path = argv[++i];
		else
			return usage();
	}
	if (!px.ctl_path)
		return usage();
	if (i < argc)
		return target ? usage()
			      : client_main(px.ctl_path, argc - i, argv + i);
	if (!target || parse_addr(target, &px.target) ||
	    parse_addr(listen_at, &listen_sa)) {
		fprintf(stderr, "faultproxy: --target and --listen take "
				"IPV4:PORT\n");
		return 2;
	}
	pthread_mutex_init(&px.mu, NULL);
	pthread_cond_init(&px.gone, NULL);
	return serve_main(&px, &listen_sa);
}
