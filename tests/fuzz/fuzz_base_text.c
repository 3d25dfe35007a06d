/* fuzz_base_text: UTF-8 validation, one-line escaping and decimal-seconds
 * parsing on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf b = BUF_INIT;
	char *s = malloc(size + 1);
	int64_t ms;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)text_utf8_valid(s, size);
	if (text_escape_line(&b, data, size) == 0 &&
	    !text_utf8_valid(buf_str(&b), b.len))
		abort(); /* escaped text must always be valid UTF-8 */
	if (text_parse_seconds_ms(s, &ms) == 0 && ms < 0)
		abort();
	buf_fini(&b);
	free(s);
	return 0;
}
