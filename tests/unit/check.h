/* check: the assertions and test cases of the C unit tests. A failed check
 * prints where and why and exits 1. A test program names its cases in main
 * with CHECK_CASE(fn, args...); run with no argument it runs them all, with
 * one (a function's name) only that case (main's other statements still
 * run, in order). tests/unit/CMakeLists.txt makes one CTest entry per
 * CHECK_CASE line, so a failing case hides no other. */
#ifndef LOCKFS_CHECK_H
#define LOCKFS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_count;
static const char *check_only; /* the one case to run, or NULL: all */
static int check_cases_run;

/* In main, before its first CHECK_CASE: which case was asked for. */
static inline void check_cases(int argc, char **argv)
{
	check_only = argc > 1 ? argv[1] : NULL;
}

static inline int check_case_wanted(const char *name)
{
	if (check_only && strcmp(check_only, name))
		return 0;
	check_cases_run++;
	return 1;
}

/* Runs fn(args...) when it is the case asked for (or all were). */
#define CHECK_CASE(fn, ...)                                                    \
	do {                                                                   \
		if (check_case_wanted(#fn))                                    \
			fn(__VA_ARGS__);                                       \
	} while (0)

#define CHECK(cond)                                                            \
	do {                                                                   \
		check_count++;                                                 \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_INT(a, b)                                                        \
	do {                                                                   \
		long long check_a_ = (long long)(a);                           \
		long long check_b_ = (long long)(b);                           \
		check_count++;                                                 \
		if (check_a_ != check_b_) {                                    \
			fprintf(stderr,                                        \
				"%s:%d: %s == %lld, want %s == %lld\n",        \
				__FILE__, __LINE__, #a, check_a_, #b,          \
				check_b_);                                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *check_a_ = (a);                                    \
		const char *check_b_ = (b);                                    \
		check_count++;                                                 \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_)) {    \
			fprintf(stderr, "%s:%d: %s == \"%s\", want \"%s\"\n",  \
				__FILE__, __LINE__, #a,                        \
				check_a_ ? check_a_ : "(null)",                \
				check_b_ ? check_b_ : "(null)");               \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_DONE()                                                           \
	do {                                                                   \
		if (check_only && !check_cases_run) {                          \
			fprintf(stderr, "no test case named %s\n",             \
				check_only);                                   \
			return 2;                                              \
		}                                                              \
		printf("ok: %d checks\n", check_count);                        \
		return 0;                                                      \
	} while (0)

#endif
