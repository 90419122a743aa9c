/* SPDX-License-Identifier: MIT */
/*
 * Minimal test harness for scalekit's CTest programs: typed assertions
 * that print both values, a runner that counts (and one that also logs the
 * time each test took), a seeded RNG whose seed is printed on failure, and
 * a scale factor that shrinks work under sanitizers and valgrind.
 */
#ifndef SK_TEST_H
#define SK_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int sk_t_failed_checks;
static int sk_t_passed, sk_t_failed;
static uint64_t sk_t_seed;

#define SK_T_FAIL(fmt, ...)                                                  \
	do {                                                                 \
		fprintf(stderr, "%s:%d: check failed: " fmt "\n", __FILE__, \
			__LINE__, __VA_ARGS__);                              \
		sk_t_failed_checks++;                                        \
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
static inline void sk_test_check_ints(const int *got, int ngot,
				      const int *want, int nwant)
{
	int i;

	SK_CHECK_EQ(ngot, nwant);
	for (i = 0; i < nwant && i < ngot; i++)
		SK_CHECK_EQ(got[i], want[i]);
}

/* Run one test function and count it. */
#define SK_RUN(fn)                                                  \
	do {                                                        \
		int sk_before_ = sk_t_failed_checks;                \
		fprintf(stderr, "--- %s\n", #fn);                   \
		fn();                                               \
		if (sk_t_failed_checks == sk_before_) {             \
			sk_t_passed++;                              \
		} else {                                            \
			sk_t_failed++;                              \
			fprintf(stderr, "FAILED %s (seed %" PRIu64  \
				")\n", #fn, sk_t_seed);             \
		}                                                   \
	} while (0)

/* Monotonic clock in seconds (for logs only: no test bounds time). */
static inline double sk_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* SK_RUN, plus the wall time the test took (for the log only). */
#define SK_RUN_TIMED(fn)                                                 \
	do {                                                             \
		double sk_t0_ = sk_test_now();                           \
		SK_RUN(fn);                                              \
		fprintf(stderr, "    (%.2f s)\n", sk_test_now() - sk_t0_); \
	} while (0)

/* Only the tests whose name contains this (argv[1]; NULL: all of them). */
static const char *sk_t_only __attribute__((unused));

/* SK_RUN_TIMED, for the tests selected by sk_t_only. */
#define SK_RUN_SELECTED(fn)                                     \
	do {                                                    \
		if (!sk_t_only || strstr(#fn, sk_t_only))       \
			SK_RUN_TIMED(fn);                       \
	} while (0)

/* Print the closing line CTest logs show and return the exit status. */
static inline int sk_test_report(void)
{
	printf("%d passed, %d failed\n", sk_t_passed, sk_t_failed);
	return sk_t_failed ? 1 : 0;
}

/*
 * Divisor for thread and iteration counts: 1 normally, larger under
 * sanitizers or valgrind (SK_TEST_SLOW=1 is set by the test driver there).
 */
static inline unsigned sk_test_slow(void)
{
	const char *v = getenv("SK_TEST_SLOW");

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 8;
#endif
	return (v && *v && strcmp(v, "0")) ? 8 : 1;
}

/* Seed from SK_TEST_SEED or the clock; printed so a failure can be replayed. */
static inline uint64_t sk_test_seed_init(void)
{
	const char *v = getenv("SK_TEST_SEED");

	sk_t_seed = v ? strtoull(v, NULL, 0) : (uint64_t)time(NULL);
	fprintf(stderr, "seed %" PRIu64 " (replay with SK_TEST_SEED=%" PRIu64
			")\n",
		sk_t_seed, sk_t_seed);
	return sk_t_seed;
}

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
