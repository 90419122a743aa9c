/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_fallback.c - the read lock and unlock where membarrier(2) is
 * missing (fallback fences: light fences must be full fences).  The
 * inline fast paths do not test the mode; the words they compare send
 * them to their slow paths, which issue the full fences (include/
 * scalekit/rcu.h, struct sk_rcu__gp_state; src/rcu_reader.c).
 *
 * What is proven (ctest runs it twice: as is, and as
 * test_rcu_fallback_no_membarrier with SCALEKIT_NO_MEMBARRIER=1):
 *   - the words match the mode, before and after grace periods: with
 *     membarrier(2) heavy is 0 and lock_word equals ctr; without it heavy
 *     is 1 and lock_word is ctr ^ SK__RCU_HEAVY, which equals no reader
 *     word at depth 1;
 *   - every outermost section issues the full fences its mode needs,
 *     counted by the slow paths (sk__rcu_test_fallback_fences()): one in
 *     the read lock (RCU-L2) and, on x86-64, one in the unlock (RCU-U2;
 *     elsewhere the inline unlock issues it); none with membarrier(2);
 *     nested entries and exits add none;
 *   - sections on another thread while grace periods run back to back
 *     (at least 50 of them, and 20,000 sections) count the same (the
 *     lock's slow path may also take a new phase);
 *   - the broken twin SK__RCU_BUSTED_FALLBACK (grace periods store the
 *     membarrier(2) forms whatever the mode) is caught without
 *     membarrier(2): its sections issue no fallback fence.  With
 *     membarrier(2) the twin changes nothing, and the test checks that.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

#ifdef SK__RCU_UNLOCK_FLAGS_WIDE
#define UNLOCK_SLOW 1 /* the unlock's fallback fence is in its slow path */
#else
#define UNLOCK_SLOW 0
#endif

/* The fences one outermost section needs from the slow paths. */
static unsigned long fences_per_section(void)
{
	return sk_fence_uses_membarrier() ? 0 : 1 + UNLOCK_SLOW;
}

/*
 * n outermost sections, each with a nested one; the fallback fences.
 * After one section first, not counted: a thread parked by its own grace
 * period wait (sk_synchronize_rcu()) enters through sk_rcu__lock_slow().
 */
static unsigned long sections(int n)
{
	unsigned long before;
	volatile int sink = 0;
	int i;

	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	before = sk__rcu_test_fallback_fences();
	for (i = 0; i < n; i++) {
		sk_rcu_read_lock();
		sk_rcu_read_lock();
		sink = sink + 1;
		sk_rcu_read_unlock();
		sk_rcu_read_unlock();
	}
	SK_CHECK_EQ(sink, n);
	return sk__rcu_test_fallback_fences() - before;
}

/* Do the words match the mode?  (No grace period may run meanwhile.) */
static int words_match_mode(void)
{
	unsigned long ctr = LOAD(sk_rcu__gp.ctr);
	unsigned long lw = LOAD(sk_rcu__gp.lock_word);
	int heavy = LOAD(sk_rcu__gp.heavy);

	if (sk_fence_uses_membarrier())
		return heavy == 0 && lw == ctr;
	/* A reader word at depth 1 is phase | REG | 1: bit 1 clear. */
	return heavy == 1 && lw == (ctr ^ SK__RCU_HEAVY) &&
	       (lw & SK__RCU_NEST_MASK) != 1;
}

static void words_match_the_mode(void)
{
	const char *env = getenv("SCALEKIT_NO_MEMBARRIER");
	int i;

	if (env && *env && strcmp(env, "0") != 0)
		SK_CHECK_EQ(sk_fence_uses_membarrier(), 0);
	printf("  membarrier(2): %s\n",
	       sk_fence_uses_membarrier() ? "used" : "not used (fallback)");
	SK_CHECK(words_match_mode());
	for (i = 0; i < 3; i++) {
		sk_synchronize_rcu();
		SK_CHECK(words_match_mode());
	}
}

static void sections_issue_the_fences_of_the_mode(void)
{
	enum { N = 1000 };

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	sk_synchronize_rcu();
	SK_CHECK_EQ(sections(N), N * fences_per_section());
	sk_rcu_unregister_thread();
}

/* ---- beside grace periods ---------------------------------------------- */

static int gp_stop;
static unsigned long gp_done;

static void *gp_loop(void *arg)
{
	(void)arg;
	while (!LOAD(gp_stop)) {
		sk_synchronize_rcu();
		__atomic_fetch_add(&gp_done, 1UL, __ATOMIC_RELEASE);
	}
	return NULL;
}

struct reader_run {
	unsigned long sections, fences;
};

/* Sections in blocks of 100 until 50 grace periods ran beside them. */
static void *reader(void *arg)
{
	struct reader_run *r = arg;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	while (LOAD(gp_done) < 50 || r->sections < 20000) {
		r->fences += sections(100);
		r->sections += 100;
	}
	sk_rcu_unregister_thread();
	return NULL;
}

static void sections_beside_grace_periods_count_the_same(void)
{
	pthread_t g, r;
	struct reader_run run = { 0, 0 };

	STORE(gp_stop, 0);
	STORE(gp_done, 0UL);
	sk_test_thread_start(&g, gp_loop, NULL);
	sk_test_thread_start(&r, reader, &run);
	sk_test_thread_join(r);
	STORE(gp_stop, 1);
	sk_test_thread_join(g);
	printf("  %lu grace periods beside %lu sections\n", LOAD(gp_done),
	       run.sections);
	SK_CHECK_GT(LOAD(gp_done), 49);
	SK_CHECK_EQ(run.fences, run.sections * fences_per_section());
}

/* ---- the broken twin ---------------------------------------------------- */

static void busted_fallback_is_caught(void)
{
	enum { N = 1000 };
	unsigned long got;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	sk__rcu_set_busted(SK__RCU_BUSTED_FALLBACK);
	sk_synchronize_rcu(); /* stores the twin's forms */
	got = sections(N);
	sk__rcu_set_busted(0);
	sk_synchronize_rcu(); /* the real forms again */
	printf("  twin: %lu fallback fences in %d sections (needed: %lu)\n",
	       got, N, N * fences_per_section());
	if (sk_fence_uses_membarrier()) {
		SK_CHECK_EQ(got, 0);
	} else {
		/*
		 * Caught: its sections skip the full fences.  A few may still
		 * take the lock's slow path, which fences in this mode: the
		 * first after the wait (a new phase), and any that a grace
		 * period started meanwhile (none runs here).
		 */
		SK_CHECK_LE(got, N / 100);
		SK_CHECK_NE(got, N * fences_per_section());
	}
	SK_CHECK(words_match_mode());
	SK_CHECK_EQ(sections(N), N * fences_per_section());
	sk_rcu_unregister_thread();
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_fallback", 120);
	SK_RUN(words_match_the_mode);
	SK_RUN(sections_issue_the_fences_of_the_mode);
	SK_RUN(sections_beside_grace_periods_count_the_same);
	SK_RUN(busted_fallback_is_caught);
	/* The twin leaves nothing behind: the real thing again, last. */
	SK_RUN(sections_issue_the_fences_of_the_mode);
	return sk_test_report();
}
