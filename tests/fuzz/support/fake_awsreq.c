/* fake_awsreq: scripted DynamoDB answers for fuzz targets (see
 * fake_awsreq.h). State is per process; the harnesses are single-threaded. */
#include "fake_awsreq.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct fake_ddb_answer *script;
static size_t script_n, script_next;
static struct clk_fake fake_clock;
static int clock_ready;
static char fake_req_storage;

void fake_awsreq_reset(const struct fake_ddb_answer *answers, size_t n)
{
	script = answers;
	script_n = n;
	script_next = 0;
}

size_t fake_awsreq_calls(void)
{
	return script_next;
}

struct awsreq *fake_awsreq(void)
{
	return (struct awsreq *)&fake_req_storage;
}

const struct clk *__wrap_awsreq_clock(const struct awsreq *r)
{
	if (!clock_ready) {
		clk_fake_init(&fake_clock, 1700000000000LL);
		clock_ready = 1;
	}
	return &fake_clock.clk;
}

static bool looks_like_object(const struct buf *b)
{
	size_t i;

	for (i = 0; i < b->len; i++) {
		char c = b->data[i];

		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return c == '{';
	}
	return false;
}

int __wrap_awsreq_json(struct awsreq *r, int kind, const char *target,
		       const char *body, size_t len, int64_t deadline_mono_ms,
		       struct buf *resp, struct aws_error *err, int *attempts,
		       int *unanswered)
{
	const struct fake_ddb_answer *a;
	cJSON *req;
	int rc;

	if (r != fake_awsreq() || !target ||
	    strncmp(target, "DynamoDB_20120810.", 18))
		abort();
	req = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(req))
		abort(); /* src/ddb always sends a JSON object */
	cJSON_Delete(req);
	if (unanswered)
		*unanswered = 0;
	if (attempts)
		*attempts = 1;
	buf_reset(resp);
	awserr_clear(err);
	if (script_next >= script_n) {
		script_next++;
		awserr_set_transport(err, -ECONNREFUSED);
		return awserr_to_errno(err);
	}
	a = &script[script_next++];
	if (buf_append(resp, a->body, a->len)) {
		awserr_set_transport(err, -EMSGSIZE);
		return awserr_to_errno(err);
	}
	if (a->status >= 200 && a->status < 300) {
		err->http_status = a->status;
		if (looks_like_object(resp))
			return 0;
		awserr_set(err, a->status, NULL, "answer is not a JSON object");
		rc = awserr_to_errno(err);
		return rc ? rc : -EPROTO;
	}
	awserr_from_json(err, a->status, resp->data, resp->len);
	rc = awserr_to_errno(err);
	return rc ? rc : -EIO;
}
