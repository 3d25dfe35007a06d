/* http_date: http_perform hands back the answer's Date header (trimmed,
 * any case of the name), "" when the answer has none or an over-long one,
 * and never the Date of an earlier answer on the same connection. One
 * client thread against a loopback fake server. */
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "fakehttp.h"
#include "http.h"

static const char *const headers[] = {
	"Date: Mon, 23 Nov 2026 18:30:24 GMT\r\n",
	"dAtE:   Tue, 24 Nov 2026 01:02:03 GMT  \r\n",
	NULL, /* no Date at all */
	"X-Date: nope\r\nDated: nope\r\n",
	"Date: "
	"0123456789012345678901234567890123456789012345678901234567890123456789"
	"\r\n",
	"Date:\r\n",
	"X-Before: 1\r\nDate: Wed, 25 Nov 2026 00:00:00 GMT\r\nX-After: 2\r\n",
};
static const char *const want[] = {
	"Mon, 23 Nov 2026 18:30:24 GMT",
	"Tue, 24 Nov 2026 01:02:03 GMT",
	"",
	"",
	"",
	"",
	"Wed, 25 Nov 2026 00:00:00 GMT",
};
#define N_CASES (sizeof(want) / sizeof(want[0]))

static atomic_int which;

static void handler(const struct fakehttp_request *req,
		    struct fakehttp_response *resp, void *arg)
{
	(void)req;
	(void)arg;
	resp->extra_headers = headers[atomic_load(&which)];
	resp->body = "{}";
}

int main(void)
{
	struct http_response resp;
	struct http_client *c;
	struct fakehttp *s;
	size_t i;
	int round;

	CHECK_INT(http_global_init(), 0);
	s = fakehttp_start(handler, NULL);
	CHECK(s);
	c = http_client_new(NULL);
	CHECK(c);
	http_response_init(&resp);
	CHECK_STR(resp.date, "");
	struct http_request req = { .method = "GET", .url = fakehttp_url(s) };

	/* Twice round, so that each answer follows one with another Date
	 * (or none) on the same keep-alive connection. */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < N_CASES; i++) {
			atomic_store(&which, (int)i);
			CHECK_INT(http_perform(c, &req, &resp), 0);
			CHECK_INT(resp.status, 200);
			CHECK_STR(resp.date, want[i]);
		}
	}
	/* No answer: no Date. */
	atomic_store(&which, 0);
	CHECK_INT(http_perform(c, &req, &resp), 0);
	CHECK_STR(resp.date, want[0]);
	fakehttp_stop(s);
	req.url = "http://127.0.0.1:1/";
	CHECK(http_perform(c, &req, &resp) < 0);
	CHECK_STR(resp.date, "");
	http_response_fini(&resp);
	http_client_free(c);
	http_global_cleanup();
	CHECK_DONE();
}
