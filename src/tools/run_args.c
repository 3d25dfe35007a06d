/* run_args: lockfs-run's options and lock-text fields (see run_args.h).
 * Main thread only: getopt keeps global state. */
#include "run_args.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include "text.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Whether sig, sent to the command when the lock is lost, ends it unless
 * the command handles it: its default action terminates (or dumps core).
 * Signals that stop, continue or are ignored by default would leave the
 * command running on a lost lock for all of --grace, and 32 and 33 are
 * glibc's own. */
static bool ends_process(int sig)
{
	switch (sig) {
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
	case SIGCONT:
	case SIGCHLD:
	case SIGURG:
	case SIGWINCH:
		return false;
	default:
		return sig < 32 || sig >= SIGRTMIN;
	}
}

/* The options before LOCKFILE; *have_w tells whether -w was given. */
static int parse_options(int argc, char **argv, struct run_opts *o,
			 bool *have_w, char *err, size_t errlen)
{
	static const struct option longs[] = {
		{ "nonblock", no_argument, NULL, 'n' },
		{ "nb", no_argument, NULL, 'n' },
		{ "shared", no_argument, NULL, 's' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "conflict-exit-code", required_argument, NULL, 'E' },
		{ "signal", required_argument, NULL, 'S' },
		{ "grace", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t n;
	int c;

	/* "+": options end at LOCKFILE; ":": report a missing argument. */
	while ((c = getopt_long(argc, argv, "+:nsw:E:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->nonblock = true;
			break;
		case 's':
			o->shared = true;
			break;
		case 'w':
			if (text_parse_seconds_ms(optarg, &o->wait_ms))
				return fail(err, errlen,
					    "-w: '%s' is not a number of "
					    "seconds (e.g. 30 or 1.5)",
					    optarg);
			*have_w = true;
			break;
		case 'E':
			/* Digits only, as -w: no sign, no blank. */
			if (!run_all_digits(optarg) || strlen(optarg) > 3 ||
			    text_parse_i64(optarg, &n) || n > 255)
				return fail(err, errlen,
					    "-E: '%s' is not an exit code "
					    "(0..255)",
					    optarg);
			o->conflict_code = (int)n;
			break;
		case 'S':
			if (text_parse_signal(optarg, &o->lost_sig))
				return fail(err, errlen,
					    "--signal: unknown signal '%s'",
					    optarg);
			if (!ends_process(o->lost_sig))
				return fail(err, errlen,
					    "--signal: '%s' does not end a "
					    "process (its default action "
					    "stops, continues or ignores, or "
					    "glibc keeps it); "
					    "give one that does, such as "
					    "TERM, INT, HUP, USR1 or KILL",
					    optarg);
			break;
		case 'G':
			if (text_parse_seconds_ms(optarg, &o->grace_ms))
				return fail(err, errlen,
					    "--grace: '%s' is not a number of "
					    "seconds (e.g. 10 or 0.5)",
					    optarg);
			break;
		case 'h':
			return RUN_ARGS_HELP;
		case 'V':
			return RUN_ARGS_VERSION;
		case ':':
			return fail(err, errlen,
				    "option '%s' needs an argument",
				    argv[optind - 1]);
		default:
			if (optopt)
				return fail(err, errlen, "unknown option '-%c'",
					    optopt);
			return fail(err, errlen, "unknown option '%s'",
				    argv[optind - 1]);
		}
	}
	return RUN_ARGS_OK;
}

int run_args_parse(int argc, char **argv, struct run_opts *o, char *err,
		   size_t errlen)
{
	bool have_w = false;
	int rc;

	memset(o, 0, sizeof(*o));
	o->wait_ms = -1;
	o->conflict_code = EX_TEMPFAIL;
	o->lost_sig = SIGTERM;
	o->grace_ms = 10000;
	if (errlen)
		err[0] = '\0';
	opterr = 0;
	optind = 0; /* glibc: start over, as a fresh process would */
	rc = parse_options(argc, argv, o, &have_w, err, errlen);
	if (rc)
		return rc;
	if (o->nonblock && have_w)
		return fail(err, errlen, "-n and -w exclude each other");
	if (optind >= argc)
		return fail(err, errlen, "missing LOCKFILE");
	o->path = argv[optind++];
	if (!*o->path)
		return fail(err, errlen, "LOCKFILE is empty");
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	else if (optind < argc && argv[optind][0] == '-')
		return fail(err, errlen,
			    "'%s' after LOCKFILE: options go before LOCKFILE, "
			    "and -- ends them",
			    argv[optind]);
	if (optind >= argc)
		return fail(err, errlen, "missing COMMAND");
	if (!*argv[optind])
		return fail(err, errlen, "COMMAND is empty");
	o->argv = argv + optind;
	return RUN_ARGS_OK;
}

char *run_text_field(const char *text, const char *name)
{
	size_t nl = strlen(name);
	const char *p = text, *end;

	while (p && *p) {
		if (!strncmp(p, name, nl) && p[nl] == ':' && p[nl + 1] == ' ') {
			p += nl + 2;
			end = strchr(p, '\n');
			return strndup(p, end ? (size_t)(end - p) : strlen(p));
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return strdup("");
}

bool run_all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}
