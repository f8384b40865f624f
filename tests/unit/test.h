/* A minimal unit-test harness: CHECK records failures and goes on; the
 * closing line "N passed, N failed" is what CI reads, and a test in which
 * no check ran fails. */
#ifndef PW_TEST_H
#define PW_TEST_H

#include <stdio.h>
#include <string.h>

static int pw_test_passed, pw_test_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (cond) {                                                                        \
			pw_test_passed++;                                                          \
		} else {                                                                           \
			pw_test_failed++;                                                          \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long pw_a_ = (long long)(a), pw_b_ = (long long)(b);                          \
		if (pw_a_ == pw_b_) {                                                              \
			pw_test_passed++;                                                          \
		} else {                                                                           \
			pw_test_failed++;                                                          \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,        \
			        __LINE__, #a, #b, pw_a_, pw_b_);                                   \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *pw_a_ = (a), *pw_b_ = (b);                                             \
		if (pw_a_ && pw_b_ && !strcmp(pw_a_, pw_b_)) {                                     \
			pw_test_passed++;                                                          \
		} else {                                                                           \
			pw_test_failed++;                                                          \
			fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__,    \
			        __LINE__, #a, #b, pw_a_ ? pw_a_ : "(null)",                        \
			        pw_b_ ? pw_b_ : "(null)");                                         \
		}                                                                                  \
	} while (0)

/* The exit status: failure when a check failed, and when none ran (a test
 * that checks nothing must not pass). */
static inline int pw_test_done(void)
{
	printf("%d passed, %d failed\n", pw_test_passed, pw_test_failed);
	if (!pw_test_passed && !pw_test_failed) {
		fprintf(stderr, "no check ran: a test that checks nothing fails\n");
		return 1;
	}
	return pw_test_failed ? 1 : 0;
}

#endif
