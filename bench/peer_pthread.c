/* SPDX-License-Identifier: MIT */
/*
 * Adapter: POSIX locks used as the read side, the baseline users start
 * from.  A reader takes a pthread_rwlock_t for reading, or a plain
 * pthread_mutex_t, around the same dereference.  Neither has a grace
 * period, so they appear in the read scenario only.
 */
#include "bench.h"

#include <pthread.h>

static pthread_rwlock_t sk_bench_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t sk_bench_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The lock orders the load; a relaxed load keeps it a single access. */
#define PTHREAD_DEREF(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

SK_BENCH_SECTION_OPS(sk_bench_pthread_rwlock_ops, rwlock_read_section,
		     "pthread-rwlock",
		     "pthread_rwlock_rdlock/unlock (no grace period)",
		     pthread_rwlock_rdlock(&sk_bench_rwlock),
		     PTHREAD_DEREF(sk_bench_gp),
		     pthread_rwlock_unlock(&sk_bench_rwlock));

SK_BENCH_SECTION_OPS(sk_bench_pthread_mutex_ops, mutex_read_section,
		     "pthread-mutex",
		     "pthread_mutex_lock/unlock (no grace period)",
		     pthread_mutex_lock(&sk_bench_mutex),
		     PTHREAD_DEREF(sk_bench_gp),
		     pthread_mutex_unlock(&sk_bench_mutex));
