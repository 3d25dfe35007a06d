/* http_tls: what a TLS failure says. Certificates made here with the openssl
 * command (a CA, a server certificate it signed for 127.0.0.1, one for
 * another host, one already expired, a self-signed one), served by
 * `openssl s_server` on 127.0.0.1; each failure must be -EPROTO (the
 * engine's errno) and its resp.error must say which: self-signed, unknown
 * CA, host name mismatch, expired, ca_file missing or not a CA bundle,
 * https to a server that speaks plain HTTP. The right CA gets an answer.
 * Skipped (77) without the openssl command. All traffic on 127.0.0.1;
 * every wait bounded. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "http.h"

#define CHECK_HAS(s, sub)                                                      \
	do {                                                                   \
		if (!strstr((s), (sub)))                                       \
			fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n",        \
				__FILE__, __LINE__, (s), (sub));               \
		CHECK(strstr((s), (sub)) != NULL);                             \
	} while (0)

static char dir[64];

static const char *path_of(const char *name)
{
	static char p[8][160];
	static int i;

	i = (i + 1) % 8;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* The certificates, made by the openssl command in dir. */
static int make_certs(void)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && exec >openssl.log 2>&1 && "
		 "printf 'subjectAltName=IP:127.0.0.1\\n' >ok.ext && "
		 "printf 'subjectAltName=DNS:other.example\\n' >other.ext && "
		 "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key "
		 "-out ca.pem -days 2 -subj '/CN=lockfs test CA' && "
		 "openssl req -newkey rsa:2048 -nodes -keyout srv.key "
		 "-out srv.csr -subj '/CN=127.0.0.1' && "
		 "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
		 "-CAcreateserial -days 2 -extfile ok.ext -out srv.pem && "
		 "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
		 "-CAcreateserial -days 2 -extfile other.ext -out other.pem && "
		 "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
		 "-CAcreateserial -days -1 -extfile ok.ext -out expired.pem && "
		 "openssl req -x509 -newkey rsa:2048 -nodes -keyout self.key "
		 "-out self.pem -days 2 -subj '/CN=127.0.0.1' "
		 "-addext subjectAltName=IP:127.0.0.1 && "
		 "echo 'not a certificate' >junk.pem",
		 dir);
	return system(cmd);
}

struct tls_server {
	pid_t pid;
	int port;
};

/* Reads s_server's stdout until "ACCEPT 127.0.0.1:PORT" (10 s at most). */
static int read_port(int fd)
{
	char buf[512];
	size_t used = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char *a;

	while (used < sizeof(buf) - 1 && poll(&p, 1, 10000) == 1) {
		ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);

		if (n <= 0)
			return -1;
		used += (size_t)n;
		buf[used] = '\0';
		a = strstr(buf, "ACCEPT 127.0.0.1:");
		if (a && strchr(a, '\n'))
			return atoi(a + strlen("ACCEPT 127.0.0.1:"));
	}
	return -1;
}

/* openssl s_server on 127.0.0.1 (a port of its choice) with cert and key,
 * answering GET with a status page (-www). */
static struct tls_server server_start(const char *cert, const char *key)
{
	struct tls_server s = { -1, -1 };
	int out[2];

	CHECK(pipe(out) == 0);
	s.pid = fork();
	CHECK(s.pid >= 0);
	if (!s.pid) {
		/* Never outlives the test, even one that failed a check. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		execlp("openssl", "openssl", "s_server", "-accept",
		       "127.0.0.1:0", "-cert", path_of(cert), "-key",
		       path_of(key), "-www", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	s.port = read_port(out[0]);
	close(out[0]);
	CHECK(s.port > 0);
	return s;
}

static void server_stop(struct tls_server *s)
{
	int st;

	kill(s->pid, SIGTERM);
	waitpid(s->pid, &st, 0);
}

/* A plain TCP server that answers anything with an HTTP 400, once. */
struct plain_server {
	int fd, port;
	pthread_t thread;
};

static void *plain_main(void *arg)
{
	static const char answer[] = "HTTP/1.1 400 Bad Request\r\n"
				     "Content-Length: 0\r\n"
				     "Connection: close\r\n\r\n";
	struct plain_server *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	char buf[4096];
	int c;

	if (poll(&p, 1, 10000) != 1)
		return NULL;
	c = accept(s->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	p.fd = c;
	if (poll(&p, 1, 5000) == 1 && read(c, buf, sizeof(buf)) > 0 &&
	    write(c, answer, sizeof(answer) - 1) < 0)
		perror("write");
	close(c);
	return NULL;
}

static void plain_start(struct plain_server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s->fd >= 0);
	CHECK(bind(s->fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(s->fd, 4) == 0);
	CHECK(getsockname(s->fd, (struct sockaddr *)&a, &len) == 0);
	s->port = ntohs(a.sin_port);
	CHECK(pthread_create(&s->thread, NULL, plain_main, s) == 0);
}

static void plain_stop(struct plain_server *s)
{
	pthread_join(s->thread, NULL);
	close(s->fd);
}

/* GET https://host:port/ trusting ca (NULL: the system store); the result,
 * with the response's words in why. */
static int get(const char *host, int port, const char *ca, char *why,
	       size_t whylen)
{
	struct http_opts o = { .ca_file = ca ? path_of(ca) : NULL };
	struct http_client *c = http_client_new(&o);
	struct http_response r;
	char url[128];
	int rc;

	CHECK(c != NULL);
	snprintf(url, sizeof(url), "https://%s:%d/", host, port);
	struct http_request req = { .method = "GET",
				    .url = url,
				    .timeout_ms = 5000 };

	http_response_init(&r);
	rc = http_perform(c, &req, &r);
	snprintf(why, whylen, "%s", rc ? http_error_text(&r, rc) : "");
	if (rc)
		CHECK_INT(r.status, 0);
	else
		CHECK_INT(r.status, 200);
	http_response_fini(&r);
	http_client_free(c);
	return rc;
}

static void test_server_certificates(void)
{
	struct tls_server s;
	char why[256];

	s = server_start("srv.pem", "srv.key");
	/* The right CA: an answer, no words. */
	CHECK_INT(get("127.0.0.1", s.port, "ca.pem", why, sizeof(why)), 0);
	CHECK_STR(why, "");
	/* The system store does not know the test CA. */
	CHECK_INT(get("127.0.0.1", s.port, NULL, why, sizeof(why)), -EPROTO);
	CHECK_HAS(why, "issued by an unknown CA");
	CHECK_HAS(why, "ca_file");
	/* Another CA in ca_file: the same. */
	CHECK_INT(get("127.0.0.1", s.port, "self.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "unknown CA");
	/* ca_file missing, or holding no certificate. */
	CHECK_INT(get("127.0.0.1", s.port, "missing.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "cannot read ca_file");
	CHECK_HAS(why, "missing.pem: No such file or directory");
	CHECK_INT(get("127.0.0.1", s.port, "junk.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "junk.pem holds no usable CA certificate");
	/* The certificate names 127.0.0.1, not localhost. */
	CHECK_INT(get("localhost", s.port, "ca.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "not for host localhost");
	server_stop(&s);

	s = server_start("self.pem", "self.key");
	CHECK_INT(get("127.0.0.1", s.port, "ca.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "self-signed");
	server_stop(&s);

	s = server_start("other.pem", "srv.key");
	CHECK_INT(get("127.0.0.1", s.port, "ca.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "not for host 127.0.0.1");
	server_stop(&s);

	s = server_start("expired.pem", "srv.key");
	CHECK_INT(get("127.0.0.1", s.port, "ca.pem", why, sizeof(why)),
		  -EPROTO);
	CHECK_HAS(why, "has expired");
	server_stop(&s);
}

/* https:// to a server that speaks plain HTTP. */
static void test_not_tls(void)
{
	struct plain_server p;
	char why[256];

	plain_start(&p);
	CHECK_INT(get("127.0.0.1", p.port, NULL, why, sizeof(why)), -EPROTO);
	CHECK_HAS(why, "does not speak TLS");
	CHECK_HAS(why, "http://");
	plain_stop(&p);
}

int main(int argc, char **argv)
{
	char cmd[128];

	if (system("openssl version >/dev/null 2>&1")) {
		printf("skip: no openssl command\n");
		return 77;
	}
	snprintf(dir, sizeof(dir), "/tmp/lockfs-http-tls.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	if (make_certs()) {
		snprintf(cmd, sizeof(cmd), "cat %s/openssl.log >&2", dir);
		CHECK(system(cmd) >= 0);
		CHECK(!"openssl could not make the certificates");
	}
	CHECK_INT(http_global_init(), 0);
	check_cases(argc, argv);
	CHECK_CASE(test_server_certificates);
	CHECK_CASE(test_not_tls);
	http_global_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	CHECK_DONE();
}
