/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_marks.c - the registry chunks' marks (src/rcu_gp.c,
 * chunk_is_quiet()): a grace period skips a chunk of 64 registry slots
 * whose threads entered no section in the phase before its own, so idle
 * registered threads cost it (almost) nothing.
 *
 * What is proven (real threads):
 *   - a grace period skips the chunks of registered threads that stay
 *     idle: with 4 chunks of idle threads, each of 20 grace periods
 *     skips at least 3 and reads at most 1 (the kinds counts);
 *   - a thread that was idle for several grace periods (its chunk is
 *     skipped) and then enters a section is waited for: its entry raises
 *     the mark (RCU-K1).  Broken twin SK__RCU_BUSTED_MARK (entries never
 *     raise it) returns while the section is open;
 *   - a nested entry inside an outermost entry that stored its word but
 *     has not yet checked the counter (what a signal handler sees when it
 *     interrupts sk_rcu_read_lock() there) is waited for: it raises the
 *     mark itself.  Broken twin SK__RCU_BUSTED_NEST returns while the
 *     section is open.
 * The waits use sk_synchronize_rcu() on an unregistered thread and check
 * that it has not returned after 100 ms; the twins check that it returns
 * within 2 s while the section is still open.
 * Where the phase has fewer than 40 bits (32-bit targets) a grace period
 * scans twice and reads every chunk (SK__RCU_SCANS): there the test
 * checks that no chunk is skipped and that the twins, which only affect
 * the marks, still wait.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

/* Grace periods skip quiet chunks (one scan each: src/internal/rcu_state.h). */
#define MARKS (SK__RCU_SEQ_BITS >= 40)

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* ---- idle chunks are skipped ------------------------------------------ */

static int idle_release;

static void *idle_thread(void *arg)
{
	int *ready = arg;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	__atomic_fetch_add(ready, 1, __ATOMIC_RELEASE);
	while (!LOAD(idle_release))
		sk_test_sleep_ms(1);
	sk_rcu_unregister_thread();
	return NULL;
}

static void idle_chunks_are_skipped(void)
{
	enum { N = 4 * 64, GPS = 20 };
	pthread_t t[N];
	struct sk__rcu_gp_kinds a, z;
	int i, ready = 0;

	STORE(idle_release, 0);
	for (i = 0; i < N; i++)
		sk_test_thread_start(&t[i], idle_thread, &ready);
	while (LOAD(ready) < N)
		sk_test_sleep_ms(1);
	/* Two grace periods first: the chunks' marks fall behind. */
	sk_synchronize_rcu();
	sk_synchronize_rcu();
	sk__rcu_get_gp_kinds(&a);
	for (i = 0; i < GPS; i++)
		sk_synchronize_rcu();
	sk__rcu_get_gp_kinds(&z);
	fprintf(stderr, "  %d grace periods: %lu chunks read, %lu skipped\n",
		GPS, z.chunks_scanned - a.chunks_scanned,
		z.chunks_skipped - a.chunks_skipped);
	if (!MARKS) {
		/* Two scans a grace period, each reads the 4 chunks. */
		SK_CHECK_EQ(z.chunks_skipped - a.chunks_skipped, 0);
		SK_CHECK_LE(4UL * GPS, z.chunks_scanned - a.chunks_scanned);
		goto out;
	}
	/* A quiet round (no scan) counts neither; every other scan both. */
	SK_CHECK_LE(z.chunks_scanned - a.chunks_scanned,
		    (unsigned long)GPS);
	SK_CHECK_LE(3 * (z.heavy - a.heavy + z.handshake - a.handshake -
			 (z.quiet - a.quiet)),
		    z.chunks_skipped - a.chunks_skipped);
	SK_CHECK_GT(z.chunks_skipped - a.chunks_skipped, 0);
out:
	STORE(idle_release, 1);
	for (i = 0; i < N; i++)
		sk_test_thread_join(t[i]);
}

/* ---- a section after an idle spell, and a nested one ------------------ */

struct holder {
	int nested;  /* enter as a handler nested in an unchecked entry */
	int idle;    /* registered, waiting for the grace periods */
	int go, in, release;
};

static int shared_val = 1;
static int *volatile shared = &shared_val;

static void *holder_fn(void *arg)
{
	struct holder *h = arg;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	/* One section: the word has a phase, the chunk a mark. */
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	STORE(h->idle, 1);
	while (!LOAD(h->go))
		sched_yield();
	if (h->nested) {
		/*
		 * What sk_rcu_read_lock() stores before it checks the
		 * counter: the phase of the last section, at depth 1.  A
		 * signal handler that interrupts it there nests in it.
		 */
		sk_atomic_store_relaxed(&sk_rcu__ctr,
					sk_atomic_load_relaxed(&sk_rcu__ctr) +
						1);
	}
	sk_rcu_read_lock();
	SK_CHECK_EQ(*sk_rcu_dereference(shared), 1);
	STORE(h->in, 1);
	while (!LOAD(h->release))
		sched_yield();
	sk_rcu_read_unlock();
	if (h->nested)
		sk_rcu_read_unlock(); /* the outer entry's word, at depth 0 */
	sk_rcu_unregister_thread();
	return NULL;
}

/*
 * A registered thread enters a section after 3 grace periods in which it
 * was idle; return 1 when an unregistered thread's synchronize returned
 * while the section was open.
 */
static int held_after_idle(int nested, int busted)
{
	struct holder h = { .nested = nested };
	struct sk_test_syncer s;
	pthread_t r;
	int early, i;

	sk_test_thread_start(&r, holder_fn, &h);
	while (!LOAD(h.idle))
		sched_yield();
	for (i = 0; i < 3; i++)
		sk_synchronize_rcu();
	sk__rcu_set_busted(busted);
	STORE(h.go, 1);
	while (!LOAD(h.in))
		sched_yield();
	sk_test_syncer_start(&s);
	/* 100 ms for the real thing; a broken twin gets 2 s to return. */
	early = sk_test_syncer_returned_within(&s, busted ? 2000 : 100);
	STORE(h.release, 1);
	sk_test_thread_join(r);
	sk_test_syncer_join(&s);
	sk__rcu_set_busted(0);
	return early;
}

static void section_after_idle_spell_is_waited_for(void)
{
	SK_CHECK_EQ(held_after_idle(0, 0), 0);
}

static void busted_mark_is_caught(void)
{
	SK_CHECK_EQ(held_after_idle(0, SK__RCU_BUSTED_MARK), MARKS);
}

static void nested_in_unchecked_entry_is_waited_for(void)
{
	SK_CHECK_EQ(held_after_idle(1, 0), 0);
}

static void busted_nest_is_caught(void)
{
	SK_CHECK_EQ(held_after_idle(1, SK__RCU_BUSTED_NEST), MARKS);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_marks: a synchronize call", 120);
	SK_RUN(idle_chunks_are_skipped);
	SK_RUN(section_after_idle_spell_is_waited_for);
	SK_RUN(busted_mark_is_caught);
	SK_RUN(nested_in_unchecked_entry_is_waited_for);
	SK_RUN(busted_nest_is_caught);
	/* Twins leave nothing behind: the real thing again, last. */
	SK_RUN(section_after_idle_spell_is_waited_for);
	return sk_test_report();
}
