/* fuzz_creds_json: the JSON credential answers of credential_process, ECS
 * and IMDS, and the ISO 8601 time parser, on arbitrary bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "creds_provider.h"
#include "creds_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_creds(const struct aws_creds *c)
{
	const char *s[3] = { c->access_key_id, c->secret_access_key,
			     c->session_token };
	int i;

	if (!s[0] || !s[1] || !s[0][0] || !s[1][0])
		abort();
	for (i = 0; i < 3; i++)
		for (const char *p = s[i]; p && *p; p++)
			if ((unsigned char)*p <= 0x20 ||
			    (unsigned char)*p >= 0x7f)
				abort(); /* must be safe in HTTP headers */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum creds_json_kind kinds[] = { CREDS_JSON_PROCESS,
						      CREDS_JSON_ECS,
						      CREDS_JSON_IMDS };
	struct aws_creds c = { 0 };
	struct aws_error e;
	char *s = malloc(size + 1);
	int64_t ms;
	size_t i;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (i = 0; i < 3; i++) {
		awserr_clear(&e);
		if (creds_json_parse("fuzz", "fuzz", kinds[i], s, size, &c,
				     &e) == 0) {
			check_creds(&c);
			/* ECS and IMDS answers always expire, after 1970. */
			if (kinds[i] != CREDS_JSON_PROCESS &&
			    c.expires_real_ms <= 0)
				abort();
		} else if (!e.message[0]) {
			abort(); /* every failure says why */
		}
		aws_creds_clear(&c);
	}
	if (creds_parse_time(s, &ms) == 0 && ms < 0)
		abort();
	free(s);
	return 0;
}
