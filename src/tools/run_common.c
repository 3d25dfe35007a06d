/* run_common: lockfs-run's messages and the list of forwarded signals (see
 * run_common.h). No state; main thread. */
#include "run_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "text.h"

const int run_fwd_sigs[RUN_N_FWD] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
};

void run_say(const char *fmt, ...)
{
	char raw[1024], line[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(raw))
		n = sizeof(raw) - 1;
	/* Paths, keys and owners may come from other users: one line, no
	 * terminal controls (text_escape_line's rules). */
	n = snprintf(line, sizeof(line), "%s: ", PROG);
	n += (int)text_escape_to(line + n, sizeof(line) - (size_t)n - 1, raw,
				 (size_t)strlen(raw));
	line[n++] = '\n';
	/* One write, so that lines of concurrent runs do not mix. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
