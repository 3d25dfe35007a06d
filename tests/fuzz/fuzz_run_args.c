/* fuzz_run_args: lockfs-run's command line (run_args_parse: getopt_long
 * with its short and long options, seconds, exit codes, signal names, the
 * LOCKFILE -- COMMAND shape) and its reading of the lock text
 * (run_text_field, run_all_digits) on arbitrary input. Input: the
 * arguments after "lockfs-run", NUL-separated, then two NULs and the text
 * of a lock file. Checked: a parse that succeeds gives a non-empty
 * LOCKFILE and COMMAND inside argv, an exit code of 0..255, a signal of
 * 1..NSIG-1, a wait of -1 or more (not with -n), a grace of 0 or more; a
 * failure says why; signal names map back to their numbers; a field read
 * from the text is one line that the text has after "name: ".
 * fuzz-link: lockfs_run */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "run_args.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 24

static void check_parse(int argc, char **argv)
{
	struct run_opts o;
	char err[512];
	int rc = run_args_parse(argc, argv, &o, err, sizeof(err));

	if (rc == RUN_ARGS_HELP || rc == RUN_ARGS_VERSION)
		return;
	if (rc) {
		if (rc != -EINVAL || !err[0])
			abort();
		return;
	}
	if (!o.path || !o.path[0] || !o.argv || !o.argv[0] || !o.argv[0][0] ||
	    o.argv <= argv || o.argv >= argv + argc)
		abort();
	if (o.conflict_code < 0 || o.conflict_code > 255 || o.lost_sig < 1 ||
	    o.lost_sig >= NSIG || o.wait_ms < -1 || o.grace_ms < 0 ||
	    (o.nonblock && o.wait_ms != -1))
		abort();
}

static void check_signal(const char *s)
{
	int sig = -1, again = -1;

	if (!text_parse_signal(s, &sig) && (sig < 1 || sig >= NSIG))
		abort();
	if (sig > 0 && sigabbrev_np(sig) &&
	    (text_parse_signal(sigabbrev_np(sig), &again) || again != sig))
		abort();
}

static void check_field(const char *text, const char *name)
{
	char *v = run_text_field(text, name), *want;
	size_t nl = strlen(name);

	if (!v)
		return;
	if (strchr(v, '\n'))
		abort();
	if (v[0]) {
		want = malloc(nl + 2 + strlen(v) + 1);
		if (!want)
			abort();
		memcpy(want, name, nl);
		memcpy(want + nl, ": ", 2);
		strcpy(want + nl + 2, v);
		if (!strstr(text, want))
			abort();
		free(want);
	}
	if (run_all_digits(v) != (v[0] && strspn(v, "0123456789") == strlen(v)))
		abort();
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *split = memmem(data, size, "\0\0", 2);
	size_t alen = split ? (size_t)(split - data) : size;
	struct fz_part parts[MAX_ARGS], tp;
	char *argv[MAX_ARGS + 2] = { NULL }, *text = NULL;
	size_t np = alen ? fz_split_n(data, alen, "", 1, parts, MAX_ARGS) : 0;
	int argc = 1;
	size_t i;

	argv[0] = strdup("lockfs-run");
	for (i = 0; i < np; i++)
		if (!(argv[argc++] = fz_str(&parts[i])))
			goto out;
	check_parse(argc, argv);
	for (i = 1; i < (size_t)argc; i++)
		check_signal(argv[i]);
	tp.p = split ? (const char *)split + 2 : "";
	tp.n = split ? size - alen - 2 : 0;
	text = fz_str(&tp);
	if (text) {
		check_field(text, "fence");
		check_field(text, "owner");
		check_field(text, "state");
		check_field(text, argc > 1 ? argv[1] : "key");
	}
out:
	for (i = 0; i < (size_t)argc; i++)
		free(argv[i]);
	free(text);
	return 0;
}
