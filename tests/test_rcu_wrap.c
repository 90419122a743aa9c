/* SPDX-License-Identifier: MIT */
/*
 * RCU counters at their wrap-around points (issue 11, item 1).
 *
 * The reader word keeps SK__RCU_SEQ_BITS bits of the scan phase: 16 on a
 * 32-bit target, 48 on a 64-bit one; grace-period cookies are full
 * unsigned long.  Linked against scalekit_testing (the library built with
 * SK_TESTING), so a test can start the counters just below a wrap:
 *  - cookies_across_wrap: cookies, polls and completion across the phase
 *    wrap and the unsigned long wrap, one grace period at a time;
 *  - readers_protected_across_wrap: readers that check for freed
 *    (poisoned) objects while an updater runs grace periods across both
 *    wrap points, and then across 2^16 + 2^14 grace periods from wherever
 *    the counters are (the natural way to reach the 16-bit wrap: the code
 *    before the fix stopped waiting for readers there on 32-bit targets);
 *  - stale_phase_reader_waited: a reader word stored from a stale load
 *    that equals the phase of the coming scan (what a reader preempted for
 *    2^16 scans between its load and its store does on 32-bit) must still
 *    be waited for; with one scan per grace period (the broken twin, forced
 *    through the hook) it is not, and the test must see that;
 *  - gp_count_counts_grace_periods: the torture tool's grace-period count
 *    advances once per grace period with one or two scans (the phase it
 *    used before advances once per scan: twice as fast on 32-bit);
 *  - start_poll_after_half_wrap: a sk_start_poll_synchronize_rcu() made
 *    half the counter's range (2^(bits-1) grace periods, 36 minutes at
 *    1 us on 32-bit) after the previous one, or the first one made there,
 *    still gets its grace period run by the worker (the code before the
 *    fix compared the new cookie with the last request by signed
 *    difference, found it "older" and dropped it: the cookie never
 *    completed);
 *  - callbacks_wait_after_half_wrap: in the same position, a callback of
 *    the default worker still waits for a reader that was inside before
 *    it was queued (the code before the fix took the stale poll request
 *    for a newer cookie than its batch's, waited for that one, which
 *    reads as completed, and ran the batch with no grace period at all).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

unsigned long sk__rcu_gp_count(void);

#define PHASE_MASK (ULONG_MAX >> SK__RCU_SEQ_SHIFT)

/* Start both counters n grace periods below their wrap points. */
static void start_below_wrap(unsigned long n)
{
	/* Two phases per grace period at most: 2n phases below the wrap. */
	SK_CHECK_EQ(sk__rcu_test_set_seq(ULONG_MAX - 1 - n, PHASE_MASK - 2 * n),
		    0);
}

static void cookies_across_wrap(void)
{
	unsigned long old[64], c;
	int i, j, n = 0;

	start_below_wrap(40);
	SK_CHECK_EQ(sk__rcu_test_set_seq(ULONG_MAX, 0), -EINVAL);
	SK_CHECK(sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED));
	for (i = 0; i < 120; i++) {
		c = sk_get_state_synchronize_rcu();
		SK_CHECK_NE(c, SK_RCU_COOKIE_COMPLETED);
		/* Single-threaded, no callbacks: nothing ran it yet. */
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 0);
		if (i % 2)
			sk_synchronize_rcu();
		else
			sk_cond_synchronize_rcu(c);
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
		old[n++ % 64] = c;
		for (j = 0; j < 64 && j < n; j++)
			SK_CHECK_EQ(sk_poll_state_synchronize_rcu(old[j]), 1);
	}
	SK_CHECK_EQ(sk_test_rcu_stats().grace_periods, 120);
}

/*
 * Readers check that the object they reach is not poisoned; the updater
 * replaces it, waits for a grace period, poisons and frees the old one.
 */
#define MAGIC 0x5ca1ab1eUL
#define POISON 0xdeadUL

#define QUARANTINE 1024
static struct sk_test_robj *shared, *quarantine[QUARANTINE];
static int stop, errors, started;
static unsigned long reads;

static void *reader(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	sk_rcu_register_thread();
	while (!LOAD(stop)) {
		struct sk_test_robj *o;

		sk_rcu_read_lock();
		o = sk_rcu_dereference(shared);
		/* Reread a few times: a freed object gets poisoned meanwhile. */
		for (int k = 0; k < 32; k++)
			if (__atomic_load_n(&o->val, __ATOMIC_RELAXED) != MAGIC)
				INC(errors);
		sk_rcu_read_unlock();
		if (n++ == 0)
			INC(started);
	}
	__atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
	sk_rcu_unregister_thread();
	return NULL;
}

/* Replace the shared object gps times; return the errors readers saw. */
static int run_updates(unsigned long gps, int nreaders)
{
	pthread_t t[4];
	int i;

	STORE(stop, 0);
	STORE(errors, 0);
	STORE(started, 0);
	for (i = 0; i < nreaders; i++)
		sk_test_thread_start(&t[i], reader, NULL);
	/*
	 * Under a sanitizer on 2 CPUs the grace periods can all end before a
	 * reader thread first runs: wait until every reader has read once.
	 */
	while (LOAD(started) < nreaders)
		sched_yield();
	for (unsigned long g = 0; g < gps && !LOAD(errors); g++) {
		struct sk_test_robj *old = shared;

		sk_rcu_assign_pointer(shared, sk_test_robj_new(MAGIC));
		if (g % 3 == 2)
			sk_synchronize_rcu_expedited();
		else
			sk_synchronize_rcu();
		__atomic_store_n(&old->val, POISON, __ATOMIC_RELAXED);
		/* Quarantine: a poisoned object stays poisoned a while. */
		free(quarantine[g % QUARANTINE]);
		quarantine[g % QUARANTINE] = old;
	}
	for (i = 0; i < QUARANTINE; i++) {
		free(quarantine[i]);
		quarantine[i] = NULL;
	}
	STORE(stop, 1);
	for (i = 0; i < nreaders; i++)
		sk_test_thread_join(t[i]);
	return LOAD(errors);
}

static int held_run(int scans, int stale);

static void readers_protected_across_wrap(void)
{
	unsigned long natural = (1UL << 16) + (1UL << 14);

	shared = sk_test_robj_new(MAGIC);
	start_below_wrap(2000);
	SK_CHECK_EQ(run_updates(4000, 2), 0);
	/* No hook from here on: 2^16 + 2^14 grace periods from where we are. */
	SK_CHECK_EQ(run_updates(natural / sk_test_slow(), 1), 0);
	SK_CHECK_GT(LOAD(reads), 0);
	/* And a grace period still waits for a reader that holds on. */
	SK_CHECK_EQ(held_run(0, 0), 0);
	free(shared);
}

struct stale {
	int stale; /* store a stale word instead of sk_rcu_read_lock() */
	int held, release;
};

/*
 * Store a reader word whose phase is the one the next scan will use, with
 * nesting 1, as a reader that loaded the counter 2^SEQ_BITS phases ago
 * would, then hold it until released.
 */
static void *stale_reader(void *arg)
{
	struct stale *s = arg;
	unsigned long next;

	sk_rcu_register_thread();
	if (s->stale) {
		next = sk_test_gp_ctr() + (1UL << SK__RCU_SEQ_SHIFT);
		sk_atomic_store_relaxed(&sk_rcu__ctr, next);
		sk_smp_mb(); /* the store before the flag (test's own pairing) */
	} else {
		sk_rcu_read_lock();
	}
	STORE(s->held, 1);
	while (!LOAD(s->release))
		sched_yield();
	sk_rcu_read_unlock(); /* nesting 1: leaves the section */
	sk_rcu_unregister_thread();
	return NULL;
}

/*
 * Run one synchronize against a reader that holds a section (with a stale
 * word when stale); return 1 when it returned while the reader held it.
 */
static int held_run(int scans, int stale)
{
	struct stale s = { .stale = stale };
	struct sk_test_syncer u;
	pthread_t r;
	int early;

	sk__rcu_test_set_scans(scans);
	sk_test_thread_start(&r, stale_reader, &s);
	while (!LOAD(s.held))
		sched_yield();
	sk_test_syncer_start(&u);
	/* Give a broken grace period every chance to return early. */
	early = sk_test_syncer_returned_within(&u, 200);
	STORE(s.release, 1);
	sk_test_thread_join(r);
	sk_test_syncer_join(&u);
	sk__rcu_test_set_scans(0);
	return early;
}

static void stale_phase_reader_waited(void)
{
	/* Two scans per grace period: the stale word is waited for. */
	SK_CHECK_EQ(held_run(2, 1), 0);
	/* Broken twin, one scan: it must return while the reader holds. */
	SK_CHECK_EQ(held_run(1, 1), 1);
	if (SK__RCU_SEQ_BITS < 40)
		SK_CHECK_EQ(held_run(0, 1), 0); /* the build's own choice */
}

static int idle_in, idle_release;

/* A registered reader outside any section: makes grace periods scan. */
static void *idle_reader(void *arg)
{
	(void)arg;
	sk_rcu_register_thread();
	STORE(idle_in, 1);
	while (!LOAD(idle_release))
		sched_yield();
	sk_rcu_unregister_thread();
	return NULL;
}

/*
 * sk__rcu_gp_count() (the torture tool's Reader Batch counter) advances by
 * one per grace period however many scans each runs; the reader word's
 * phase, which that counter was before (the twin), advances per scan.
 */
static void gp_count_counts_grace_periods(void)
{
	unsigned long n0, p0, gps = 10, i;
	pthread_t t;
	int scans;

	sk_test_thread_start(&t, idle_reader, NULL);
	while (!LOAD(idle_in))
		sched_yield();
	for (scans = 1; scans <= 2; scans++) {
		sk__rcu_test_set_scans(scans);
		n0 = sk__rcu_gp_count();
		p0 = sk_test_gp_ctr() >> SK__RCU_SEQ_SHIFT;
		for (i = 0; i < gps; i++)
			sk_synchronize_rcu();
		SK_CHECK_EQ(sk__rcu_gp_count() - n0, gps);
		/* The twin: right with one scan only. */
		SK_CHECK_EQ(((sk_test_gp_ctr() >> SK__RCU_SEQ_SHIFT) - p0) &
				    PHASE_MASK,
			    gps * (unsigned long)scans);
	}
	sk__rcu_test_set_scans(0);
	STORE(idle_release, 1);
	sk_test_thread_join(t);
}

/*
 * Half the cookie range ahead of grace period g (2^(bits-1) + 100
 * grace periods later), never ULONG_MAX.
 */
static unsigned long half_range_after(unsigned long g)
{
	unsigned long h = g + ULONG_MAX / 2 + 100;

	return h == ULONG_MAX ? h + 1 : h;
}

/* Poll cookie c for up to ms milliseconds; 1 once it completed. */
static int poll_within(unsigned long c, unsigned long ms)
{
	unsigned long i;

	for (i = 0; i < ms; i++) {
		if (sk_poll_state_synchronize_rcu(c))
			return 1;
		sk_test_sleep_ms(1);
	}
	return sk_poll_state_synchronize_rcu(c);
}

/*
 * A request that the worker ran, then the counters half the range later:
 * the state of a 32-bit process that polled once and went on with
 * synchronize calls only for 2^31 grace periods.
 */
static void stale_poll_request(unsigned long g)
{
	unsigned long c;

	SK_CHECK_EQ(sk__rcu_test_set_seq(g, 5), 0);
	c = sk_start_poll_synchronize_rcu();
	SK_CHECK_EQ(poll_within(c, 5000), 1);
	SK_CHECK_EQ(sk__rcu_test_set_seq(half_range_after(g), 7), 0);
}

static void start_poll_after_half_wrap(void)
{
	unsigned long c;

	stale_poll_request(1000);
	/* Single-threaded: only the worker can run this grace period. */
	c = sk_start_poll_synchronize_rcu();
	SK_CHECK_EQ(poll_within(c, 5000), 1);
	/* Again across the unsigned long wrap. */
	stale_poll_request(ULONG_MAX - 50);
	c = sk_start_poll_synchronize_rcu();
	SK_CHECK_EQ(poll_within(c, 5000), 1);
}

static int wrap_cb_ran;

static void wrap_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(wrap_cb_ran, 1);
}

static void callbacks_wait_after_half_wrap(void)
{
	static struct sk_rcu_head h;
	struct sk_test_holder r;

	stale_poll_request(3000);
	sk_test_holder_start(&r, 0, NULL, NULL);
	SK_CHECK_EQ(sk_call_rcu(&h, wrap_cb), 0);
	sk_test_sleep_ms(200);
	/* The reader was inside before the call: no grace period yet. */
	SK_CHECK_EQ(LOAD(wrap_cb_ran), 0);
	sk_test_holder_release(&r);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(wrap_cb_ran), 1);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	fprintf(stderr, "phase bits %d\n", SK__RCU_SEQ_BITS);
	SK_RUN(cookies_across_wrap);
	SK_RUN(readers_protected_across_wrap);
	SK_RUN(stale_phase_reader_waited);
	SK_RUN(gp_count_counts_grace_periods);
	SK_RUN(start_poll_after_half_wrap);
	SK_RUN(callbacks_wait_after_half_wrap);
	return sk_test_report();
}
