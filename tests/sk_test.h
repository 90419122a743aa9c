/* SPDX-License-Identifier: MIT */
/*
 * Minimal test harness for scalekit's CTest programs: typed assertions
 * that print both values, a runner that counts and logs the time each
 * test took, a seeded RNG whose seed is printed on failure, and
 * a scale factor that shrinks work under sanitizers and valgrind.
 *
 * Every test program links the test support library (tests/support/,
 * built once by tests/CMakeLists.txt); this header declares its part
 * (tests/support/sk_test.c).  Only the macros and sk_test_rand(), which
 * the stress loops call in every read section, are inline.
 *
 * A program's main() calls sk_test_args(argc, argv) first (after handling
 * its own --child= modes): "test_x name" then runs only the SK_RUN tests
 * whose function name contains "name".
 */
#ifndef SK_TEST_H
#define SK_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern int sk_t_failed_checks;	 /* failed checks so far */
extern int sk_t_passed, sk_t_failed; /* tests run by SK_RUN */
extern uint64_t sk_t_seed;		 /* sk_test_seed_init() */
extern const char *sk_t_only;	 /* the name filter, or NULL */

#define SK_T_FAIL(fmt, ...)                                                   \
	do {                                                                  \
		fprintf(stderr, "%s:%d: check failed: " fmt "\n", __FILE__,  \
			__LINE__, __VA_ARGS__);                               \
		/* Atomic: worker threads check too. */                       \
		__atomic_fetch_add(&sk_t_failed_checks, 1, __ATOMIC_RELAXED); \
	} while (0)

#define SK_CHECK(c)                                     \
	do {                                            \
		if (!(c))                               \
			SK_T_FAIL("%s", #c);            \
	} while (0)

/* Check (long long)a op (long long)b; on failure print both values. */
#define SK_T_CHECK_OP(a, op, b)                                           \
	do {                                                              \
		long long sk_a_ = (long long)(a), sk_b_ = (long long)(b); \
		if (!(sk_a_ op sk_b_))                                    \
			SK_T_FAIL("%s " #op " %s (%lld vs %lld)", #a, #b, \
				  sk_a_, sk_b_);                          \
	} while (0)

/* Typed checks that print both values: a == b, a != b, a <= b, a > b. */
#define SK_CHECK_EQ(a, b) SK_T_CHECK_OP(a, ==, b)
#define SK_CHECK_NE(a, b) SK_T_CHECK_OP(a, !=, b)
#define SK_CHECK_LE(a, b) SK_T_CHECK_OP(a, <=, b)
#define SK_CHECK_GT(a, b) SK_T_CHECK_OP(a, >, b)

#define SK_CHECK_STR_CONTAINS(hay, needle)                                  \
	do {                                                                \
		const char *sk_h_ = (hay), *sk_n_ = (needle);               \
		if (!sk_h_ || !strstr(sk_h_, sk_n_))                        \
			SK_T_FAIL("\"%s\" contains \"%s\"",                 \
				  sk_h_ ? sk_h_ : "(null)", sk_n_);         \
	} while (0)

/* Check that got[0..ngot) equals want[0..nwant): the counts, then each int. */
void sk_test_check_ints(const int *got, int ngot, const int *want, int nwant);

/* Monotonic clock in seconds (for logs only: no test bounds time). */
double sk_test_now(void);

/*
 * Run one test function and count it, unless the name filter skips it;
 * log its name and the wall time it took (for the log only).  This is the
 * one runner every test program uses.
 */
#define SK_RUN(fn)                                                         \
	do {                                                               \
		int sk_before_ = sk_t_failed_checks;                       \
		double sk_t0_;                                             \
		if (!sk_test_selected(#fn))                                \
			break;                                             \
		fprintf(stderr, "--- %s\n", #fn);                          \
		sk_t0_ = sk_test_now();                                    \
		fn();                                                      \
		if (sk_t_failed_checks == sk_before_) {                    \
			sk_t_passed++;                                     \
		} else {                                                   \
			sk_t_failed++;                                     \
			fprintf(stderr, "FAILED %s (seed %" PRIu64         \
				")\n", #fn, sk_t_seed);                    \
		}                                                          \
		fprintf(stderr, "    (%.2f s)\n", sk_test_now() - sk_t0_); \
	} while (0)

/*
 * Read the command line: no argument runs every test; one argument not
 * starting with '-' is the name filter (sk_t_only).  Anything else prints
 * the usage on stderr and exits with status 2.
 */
void sk_test_args(int argc, char **argv);

/* Nonzero when the test function called name passes the name filter. */
int sk_test_selected(const char *name);

/*
 * Print the closing line CTest logs show and return the exit status: 0,
 * 1 when a test failed, 2 when a name filter was given and no test
 * matched it (with a message).
 */
int sk_test_report(void);

/*
 * Divisor for thread and iteration counts: 1 normally, larger under
 * sanitizers or valgrind (SK_TEST_SLOW=1 is set by the test driver there).
 * The support library is built with the programs' flags, so it sees the
 * same sanitizer.
 */
unsigned sk_test_slow(void);

/* Seed from SK_TEST_SEED or the clock; printed so a failure can be replayed. */
uint64_t sk_test_seed_init(void);

/* xorshift64*: per-thread RNG state in *s (never 0). */
static inline uint64_t sk_test_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

#endif /* SK_TEST_H */
