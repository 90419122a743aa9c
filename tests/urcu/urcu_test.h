/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_test.h - the little the liburcu-API test programs share.
 * These programs are written against liburcu's API only: they include
 * <urcu.h>, <urcu-qsbr.h> or <urcu-bp.h> (chosen by URCU_TEST_QSBR /
 * URCU_TEST_BP) and nothing of scalekit's, and build with the flags of
 * `pkg-config --cflags --libs scalekit-urcu`.
 */
#ifndef URCU_TEST_H
#define URCU_TEST_H

#if defined(URCU_TEST_QSBR)
#include <urcu-qsbr.h>
#define URCU_TEST_FLAVOR "qsbr"
#elif defined(URCU_TEST_BP)
#include <urcu-bp.h>
#define URCU_TEST_FLAVOR "bp"
#else
#include <urcu.h>
#define URCU_TEST_FLAVOR "memb"
#endif
#include <urcu-call-rcu.h>
#include <urcu-defer.h>
#include <urcu-pointer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define URCU_CHECK(cond)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,   \
				__LINE__, #cond);                          \
			exit(1);                                           \
		}                                                          \
	} while (0)

/*
 * Seconds a stress test runs: 1, or 1.5 with SK_TEST_SLOW=1 set (sanitizer
 * and qemu jobs).  Every broken twin (URCU_TEST_BROKEN, which runs up to
 * 10 times as long and stops at its first error) was caught within 1.5 s
 * in each of those jobs (CI of 5ab450b: at most 1.44 s, under TSan; a
 * fresh-clone CI run of 6cdf879: at most 1.12 s, process start included),
 * so 1.5 s still leaves each run as long as its twin needed.
 */
static inline double urcu_test_seconds(void)
{
	const char *s = getenv("SK_TEST_SLOW");

	return s && *s && strcmp(s, "0") ? 1.5 : 1.0;
}

static inline double urcu_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* URCU_TEST_H */
