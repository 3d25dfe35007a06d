/* check: the assertions of the C unit tests. A failed check prints where and
 * why and exits 1, so one test program is one pass/fail verdict for CTest. */
#ifndef LOCKFS_CHECK_H
#define LOCKFS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_count;

#define CHECK(cond)                                                         \
	do {                                                                \
		check_count++;                                              \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",        \
				__FILE__, __LINE__, #cond);                 \
			exit(1);                                            \
		}                                                           \
	} while (0)

#define CHECK_INT(a, b)                                                     \
	do {                                                                \
		long long check_a_ = (long long)(a);                        \
		long long check_b_ = (long long)(b);                        \
		check_count++;                                              \
		if (check_a_ != check_b_) {                                 \
			fprintf(stderr, "%s:%d: %s == %lld, want %s == %lld\n", \
				__FILE__, __LINE__, #a, check_a_, #b,       \
				check_b_);                                  \
			exit(1);                                            \
		}                                                           \
	} while (0)

#define CHECK_STR(a, b)                                                     \
	do {                                                                \
		const char *check_a_ = (a);                                 \
		const char *check_b_ = (b);                                 \
		check_count++;                                              \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_)) { \
			fprintf(stderr, "%s:%d: %s == \"%s\", want \"%s\"\n", \
				__FILE__, __LINE__, #a,                     \
				check_a_ ? check_a_ : "(null)",             \
				check_b_ ? check_b_ : "(null)");            \
			exit(1);                                            \
		}                                                           \
	} while (0)

#define CHECK_DONE()                                                        \
	do {                                                                \
		printf("ok: %d checks\n", check_count);                     \
		return 0;                                                   \
	} while (0)

#endif
