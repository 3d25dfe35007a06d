/* fuzz_ddb_table: DescribeTable/CreateTable and DescribeTimeToLive answers
 * on arbitrary bytes: never a memory error, and every string filled in is
 * terminated inside its field. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *field, size_t len)
{
	if (!memchr(field, '\0', len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct ddb_table_info info;
	char status[16], attr[32];

	memset(&info, 0x55, sizeof(info));
	if (ddb_parse_table(body, size, &info) == 0) {
		terminated(info.status, sizeof(info.status));
		terminated(info.hash_name, sizeof(info.hash_name));
		terminated(info.hash_type, sizeof(info.hash_type));
		terminated(info.range_name, sizeof(info.range_name));
		terminated(info.range_type, sizeof(info.range_type));
		if (!info.hash_name[0] || info.item_count < 0)
			abort();
	}
	memset(status, 0x55, sizeof(status));
	memset(attr, 0x55, sizeof(attr));
	if (ddb_parse_ttl(body, size, status, sizeof(status), attr,
			  sizeof(attr)) == 0) {
		terminated(status, sizeof(status));
		terminated(attr, sizeof(attr));
	}
	return 0;
}
