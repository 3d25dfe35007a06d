/* http_security: what the HTTP layer does for secrets and transport: plain
 * HTTP only to loopback hosts unless allowed (-EPERM before anything is
 * sent), the loopback judgement of URLs, curl's sockets close-on-exec (no
 * helper inherits a connection), and whether a timed-out request went out
 * (resp.sent: IMDS tells "no answer" from "not reachable"). All traffic
 * stays on 127.0.0.1 ([::ffff:127.0.0.1] reaches it too, but is not judged
 * loopback: the "remote host" of these tests). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "clk.h"
#include "fakehttp.h"
#include "http.h"

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	(void)arg;
	if (!strcmp(req->target, "/slow"))
		resp->delay_ms = 1500;
	resp->body = "{}";
}

static void test_judgement(void)
{
	static const struct {
		const char *url;
		int want; /* http_url_plain_remote */
	} cases[] = {
		{ "http://127.0.0.1:8000", 0 },
		{ "http://127.0.0.1", 0 },
		{ "http://127.9.8.7:1/x", 0 },
		{ "http://localhost:8000/", 0 },
		{ "http://LocalHost", 0 },
		{ "http://[::1]:8000", 0 },
		{ "HTTP://127.0.0.1:1", 0 },
		{ "https://dynamodb.eu-west-1.amazonaws.com", 0 },
		{ "https://192.0.2.1:443", 0 },
		{ "HTTPS://example.com", 0 },
		{ "http://192.0.2.1:8000", 1 },
		{ "http://10.0.0.1", 1 },
		{ "HTTP://10.0.0.1", 1 },
		{ "http://dynamodb.local:8000", 1 },
		{ "http://localhost.example.com", 1 },
		{ "http://127.0.0.1.example.com", 1 },
		{ "http://128.0.0.1", 1 },
		{ "http://127.1", 1 },	    /* shorthand: not judged */
		{ "http://0x7f000001", 1 }, /* hex: not judged */
		{ "http://[::ffff:127.0.0.1]:80", 1 },
		{ "http://[::2]", 1 },
		{ "ftp://127.0.0.1", -EINVAL },
		{ "127.0.0.1:8000", -EINVAL },
		{ "http://user@127.0.0.1", -EINVAL },
		{ "http://", -EINVAL },
		{ "http://[::1", -EINVAL },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = http_url_plain_remote(cases[i].url);

		if (got != cases[i].want)
			fprintf(stderr, "%s: got %d\n", cases[i].url, got);
		CHECK_INT(got, cases[i].want);
	}
	CHECK(http_host_is_loopback("127.0.0.1"));
	CHECK(http_host_is_loopback("[::1]"));
	CHECK(http_host_is_loopback("::1"));
	CHECK(!http_host_is_loopback("169.254.169.254"));
	CHECK(!http_host_is_loopback(""));
}

/* The fd of our client's connection to port (its peer), or -1. */
static int client_socket_to(int port)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	CHECK(d != NULL);
	while ((e = readdir(d))) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		struct stat st;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fstat(fd, &st) ||
		    !S_ISSOCK(st.st_mode) ||
		    getpeername(fd, (struct sockaddr *)&ss, &len))
			continue;
		if ((ss.ss_family == AF_INET &&
		     ntohs(((struct sockaddr_in *)&ss)->sin_port) == port) ||
		    (ss.ss_family == AF_INET6 &&
		     ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == port))
			found = fd;
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	struct fakehttp *s = fakehttp_start(handler, NULL);
	struct http_opts opts = { 0 }, allow = { .allow_plain_http = 1 };
	struct http_client *c, *ca;
	struct http_response r;
	char url[128];
	int64_t t0;
	int fd;

	CHECK(s);
	CHECK_INT(http_global_init(), 0);
	check_cases(argc, argv);
	CHECK_CASE(test_judgement);
	c = http_client_new(&opts);
	ca = http_client_new(&allow);
	CHECK(c && ca);
	http_response_init(&r);

	/* Loopback over plain HTTP: fine, and the connection (kept alive)
	 * is close-on-exec. */
	snprintf(url, sizeof(url), "%s/x", fakehttp_url(s));
	struct http_request get = { .method = "GET", .url = url };
	CHECK_INT(http_perform(c, &get, &r), 0);
	CHECK_INT(r.status, 200);
	CHECK_INT(r.sent, 1);
	fd = client_socket_to(fakehttp_port(s));
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);

	/* A host that is not loopback: refused before anything is sent. */
	snprintf(url, sizeof(url), "http://[::ffff:127.0.0.1]:%d/x",
		 fakehttp_port(s));
	CHECK_INT(fakehttp_requests(s), 1);
	CHECK_INT(http_perform(c, &get, &r), -EPERM);
	CHECK_INT(r.status, 0);
	CHECK_INT(r.sent, 0);
	CHECK_INT(fakehttp_requests(s), 1);
	/* Allowed: it goes. */
	CHECK_INT(http_perform(ca, &get, &r), 0);
	CHECK_INT(r.status, 200);
	CHECK_INT(fakehttp_requests(s), 2);
	fd = client_socket_to(fakehttp_port(s));
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* A scheme-less URL (curl would guess http) is refused too. */
	snprintf(url, sizeof(url), "127.0.0.1:%d/x", fakehttp_port(s));
	CHECK_INT(http_perform(ca, &get, &r), -EINVAL);

	/* A timeout after the request went out, and a refusal before. */
	snprintf(url, sizeof(url), "%s/slow", fakehttp_url(s));
	get.timeout_ms = 300;
	t0 = clk_sys_mono_ms();
	CHECK_INT(http_perform(c, &get, &r), -ETIMEDOUT);
	CHECK(clk_sys_mono_ms() - t0 < 1200);
	CHECK_INT(r.sent, 1);
	get.url = "http://127.0.0.1:1/";
	CHECK_INT(http_perform(c, &get, &r), -ECONNREFUSED);
	CHECK_INT(r.sent, 0);

	http_response_fini(&r);
	http_client_free(c);
	http_client_free(ca);
	fakehttp_stop(s);
	http_global_cleanup();
	CHECK_DONE();
}
