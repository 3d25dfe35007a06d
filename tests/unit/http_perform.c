/* http_perform: the libcurl wrapper against a loopback fake server: methods,
 * headers, bodies, statuses, keep-alive, the response cap, refused
 * connections, timeouts and dropped connections. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fakehttp.h"
#include "http.h"

static char big[100000];

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	char v[256];

	(void)arg;
	if (!strcmp(req->target, "/echo")) {
		static __thread char out[4096];

		snprintf(out, sizeof(out), "%s %s %s", req->method,
			 fakehttp_header(req, "X-Test", v, sizeof(v)) ? "-" : v,
			 req->body);
		resp->body = out;
	} else if (!strcmp(req->target, "/status")) {
		resp->status = 503;
		resp->body = "{\"__type\":\"x#ServiceUnavailable\"}";
	} else if (!strcmp(req->target, "/big")) {
		resp->body = big;
	} else if (!strcmp(req->target, "/slow")) {
		resp->delay_ms = 1500;
		resp->body = "late";
	} else if (!strcmp(req->target, "/drop")) {
		resp->drop = 1;
	} else {
		resp->status = 404;
	}
}

int main(void)
{
	struct fakehttp *s = fakehttp_start(handler, NULL);
	struct http_opts opts = { .max_response_bytes = 50000 };
	struct http_client *c;
	struct http_response r;
	struct http_header h[] = { { "X-Test", "yes" } };
	char url[128], host[64], path[64];
	int rc;

	memset(big, 'x', sizeof(big) - 1);
	CHECK(s);
	CHECK_INT(http_global_init(), 0);
	c = http_client_new(&opts);
	CHECK(c);
	http_response_init(&r);

	snprintf(url, sizeof(url), "%s/echo", fakehttp_url(s));
	struct http_request post = { .method = "POST",
				     .url = url,
				     .headers = h,
				     .n_headers = 1,
				     .body = "hello",
				     .body_len = 5 };
	CHECK_INT(http_perform(c, &post, &r), 0);
	CHECK_INT(r.status, 200);
	CHECK_STR(buf_str(&r.body), "POST yes hello");

	/* A second request reuses the same connection (keep-alive). */
	struct http_request put = { .method = "PUT", .url = url };
	CHECK_INT(http_perform(c, &put, &r), 0);
	CHECK_STR(buf_str(&r.body), "PUT - ");
	CHECK_INT(fakehttp_requests(s), 2);

	snprintf(url, sizeof(url), "%s/status", fakehttp_url(s));
	struct http_request get = { .method = "GET", .url = url };
	CHECK_INT(http_perform(c, &get, &r), 0);
	CHECK_INT(r.status, 503);

	snprintf(url, sizeof(url), "%s/big", fakehttp_url(s));
	rc = http_perform(c, &get, &r);
	CHECK_INT(rc, -EMSGSIZE);
	CHECK(r.body.len <= 50000);

	snprintf(url, sizeof(url), "%s/slow", fakehttp_url(s));
	get.timeout_ms = 300;
	CHECK_INT(http_perform(c, &get, &r), -ETIMEDOUT);
	get.timeout_ms = 0;

	snprintf(url, sizeof(url), "%s/drop", fakehttp_url(s));
	CHECK_INT(http_perform(c, &get, &r), -ECONNRESET);

	/* Nothing listens on port 1 of loopback. */
	get.url = "http://127.0.0.1:1/";
	CHECK_INT(http_perform(c, &get, &r), -ECONNREFUSED);
	get.url = "ftp://127.0.0.1/";
	CHECK_INT(http_perform(c, &get, &r), -EINVAL);

	CHECK_INT(http_url_host_path("http://127.0.0.1:8000", host,
				     sizeof(host), path, sizeof(path)),
		  0);
	CHECK_STR(host, "127.0.0.1:8000");
	CHECK_STR(path, "/");
	CHECK_INT(
		http_url_host_path("https://dynamodb.us-east-1.amazonaws.com/x",
				   host, sizeof(host), path, sizeof(path)),
		0);
	CHECK_STR(host, "dynamodb.us-east-1.amazonaws.com");
	CHECK_STR(path, "/x");
	CHECK_INT(http_url_host_path("file:///etc/passwd", host, sizeof(host),
				     path, sizeof(path)),
		  -EINVAL);
	CHECK_INT(http_url_host_path("http://user@host/", host, sizeof(host),
				     path, sizeof(path)),
		  -EINVAL);

	http_response_fini(&r);
	http_client_free(c);
	fakehttp_stop(s);
	http_global_cleanup();
	CHECK_DONE();
}
