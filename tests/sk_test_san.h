/* SPDX-License-Identifier: MIT */
/*
 * sk_test_san.h - a test program's default sanitizer options, e.g.
 * SK_TEST_TSAN_OPTIONS("die_after_fork=0") for a program that forks, or
 * SK_TEST_ASAN_OPTIONS("allow_user_segv_handler=1") for one that catches
 * SIGSEGV: at file scope, once per program; nothing without the sanitizer.
 */
#ifndef SK_TEST_SAN_H
#define SK_TEST_SAN_H

#define SK_TEST__SAN_OPTIONS(fn, opts) \
	const char *fn(void);          \
	const char *fn(void)           \
	{                              \
		return opts;           \
	}
#ifdef __SANITIZE_THREAD__
#define SK_TEST_TSAN_OPTIONS(opts) \
	SK_TEST__SAN_OPTIONS(__tsan_default_options, opts)
#else
#define SK_TEST_TSAN_OPTIONS(opts)
#endif
#ifdef __SANITIZE_ADDRESS__
#define SK_TEST_ASAN_OPTIONS(opts) \
	SK_TEST__SAN_OPTIONS(__asan_default_options, opts)
#else
#define SK_TEST_ASAN_OPTIONS(opts)
#endif

#endif /* SK_TEST_SAN_H */
