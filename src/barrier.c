/* SPDX-License-Identifier: MIT */
/*
 * Asymmetric fences on top of membarrier(2).
 *
 * The mode is decided once, in a constructor that runs when the library is
 * loaded (before main() for a linked program, inside dlopen() otherwise),
 * so no reader can run a light fence under one mode while an updater runs
 * the heavy fence under the other.
 *
 * Litmus test of the pair H/light: litmus/SB+mbs.litmus, the store
 * buffering pattern the pair forbids, with sk_smp_mb() on both sides (the
 * fallback mode).  Not covered: membarrier(2) itself, which the litmus
 * format cannot write; tests/test_barrier.c runs the same pattern with
 * sk_fence_light() against sk_fence_heavy().
 */
#define _GNU_SOURCE
#include "scalekit/barrier.h"

#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal/util.h"

/* 1 when membarrier PRIVATE_EXPEDITED is registered for this process. */
int sk_barrier__fence_sys;

/*
 * The variable TSan builds of the fences operate on (see barrier.h).  It
 * exists in every build so that the library's export list does not
 * depend on how an application is compiled.
 */
SK_API unsigned long sk_barrier__tsan_fence;

static long sys_membarrier(int cmd, unsigned int flags)
{
	return syscall(__NR_membarrier, cmd, flags, 0);
}

/*
 * Decide the mode: at load time (the constructor below), and first from
 * the constructors of modules whose state depends on it (sk__barrier_init()
 * in util.h), as the order of constructors is not set.  Runs once.
 */
void sk__barrier_init(void)
{
	static int done;
	long mask;

	/* Constructors run on one thread: relaxed suffices. */
	if (__atomic_load_n(&done, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&done, 1, __ATOMIC_RELAXED);
	if (sk__env_flag("SCALEKIT_NO_MEMBARRIER"))
		return;
	mask = sys_membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (mask < 0 || !(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0)
		return;
	/* Single-threaded here (constructor); relaxed suffices. */
	__atomic_store_n(&sk_barrier__fence_sys, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void sk_barrier_init(void)
{
	sk__barrier_init();
}

/* membarrier(2) calls issued by sk_fence_heavy() (see sk__fence_heavy_count). */
static unsigned long heavy_calls;

/*
 * sk__fence_heavy_count() - how many times sk_fence_heavy() entered the
 * kernel so far.  A relaxed load, orders nothing; never blocks; any
 * thread.  Hidden: for the tests, which link the library statically.
 */
unsigned long sk__fence_heavy_count(void)
{
	return __atomic_load_n(&heavy_calls, __ATOMIC_RELAXED);
}

void sk_fence_heavy(void)
{
	if (__atomic_load_n(&sk_barrier__fence_sys, __ATOMIC_RELAXED)) {
		/* A statistic: relaxed, orders nothing. */
		__atomic_fetch_add(&heavy_calls, 1UL, __ATOMIC_RELAXED);
		/*
		 * H: every running thread of the process executes a full
		 * barrier before this returns; pairs with sk_fence_light().
		 * It cannot fail once registered; if it ever did, a local
		 * fence would not be enough, so stop loudly.
		 */
		if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0) {
			perror("scalekit: membarrier(PRIVATE_EXPEDITED)");
			abort();
		}
	} else {
		/* Fallback: light fences are full fences, so a full fence pairs. */
		sk_smp_mb();
	}
}

int sk_fence_uses_membarrier(void)
{
	return __atomic_load_n(&sk_barrier__fence_sys, __ATOMIC_RELAXED);
}
