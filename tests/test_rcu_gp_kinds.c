/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_gp_kinds.c - the kinds of grace period (normal, expedited,
 * conditional, polled) and the ways they reach the readers (the expedited
 * handshake, its membarrier(2) or fence fallback, QSBR-only grace periods),
 * under real threads.
 *
 * What is proven, one function each:
 *   - normal, expedited, conditional and polled updaters together protect
 *     readers (use after free would show; an updater that skips the wait
 *     MUST be caught);
 *   - an expedited grace period takes the handshake with a general reader
 *     that answers, and falls back once an idle registered thread does
 *     not;
 *   - with only QSBR threads registered, grace periods issue no
 *     membarrier(2) and count as QSBR-only; a QSBR thread in a read
 *     section while offline makes them take a first barrier again;
 *   - an idle registered thread costs the handshake rounds of normal
 *     grace periods one timeout, not one per backoff, and they resume
 *     once it enters sections.
 * The gp-kind counters are the testing build's (tests/testing.cmake).
 * No assertion bounds time; counts shrink by sk_test_slow().
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "torture_ops.h"

/* ---- updaters of every kind protect readers ------------------------------ */

#define PV_MAGIC ((unsigned long)0x600d600d600d600dULL)
#define PV_POISON ((unsigned long)0xdeaddeaddeaddeadULL)

static struct {
	struct sk_test_robj *ptr;
	int stop;
	unsigned long bad, reads; /* reads: published every 1024 */
	unsigned long iters;	  /* per correct updater */
	unsigned long twin_reads; /* broken updater: stop after these */
	const struct sk_tort_ops *ops; /* sections, grace periods */
} pv;

/* Reset pv and publish a live object; ops for the sections and the waits. */
static void pv_start(const struct sk_tort_ops *ops)
{
	memset(&pv, 0, sizeof(pv));
	pv.ops = ops;
	pv.ptr = sk_test_robj_new(PV_MAGIC);
}

static void *pv_reader(void *arg)
{
	unsigned long reads = 0, k;

	(void)arg;
	while (!LOAD(pv.stop)) {
		struct sk_test_robj *p;
		unsigned long v1, v2;
		int idx;

		idx = pv.ops->readlock(NULL);
		p = pv.ops->deref((void *const *)&pv.ptr);
		v1 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		for (k = 0; k < 50; k++)
			sk_cpu_relax();
		v2 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		pv.ops->readunlock(NULL, idx);
		if (v1 != PV_MAGIC || v2 != PV_MAGIC)
			INC(pv.bad);
		if (++reads % 1024 == 0) {
			__atomic_fetch_add(&pv.reads, 1024, __ATOMIC_RELAXED);
			/* Leave the updaters some CPU on a small machine. */
			if (reads % 4096 == 0)
				sched_yield();
		}
	}
	return NULL;
}

static struct sk_test_robj *pv_replace(void)
{
	struct sk_test_robj *n = sk_test_robj_new(PV_MAGIC);

	return __atomic_exchange_n(&pv.ptr, n, __ATOMIC_ACQ_REL);
}

/*
 * Does the updater go on after i updates?  With the busted ops (the
 * BROKEN twin): until a reader notices or the readers have done
 * twin_reads reads.
 */
static int pv_more(unsigned long i)
{
	if (!pv.ops->busted)
		return i < pv.iters;
	return !LOAD(pv.bad) &&
	       __atomic_load_n(&pv.reads, __ATOMIC_RELAXED) < pv.twin_reads;
}

/* Free the n stashed objects after a real grace period. */
static void pv_free_stash(struct sk_test_robj **stash, unsigned long n)
{
	sk_synchronize_rcu();
	while (n)
		free(stash[--n]);
}

/*
 * Replace, wait with ops in way kind, poison, free.  With the busted ops
 * the old object is poisoned without a grace period and freed only after
 * a real one (stashed), to stay memory-safe.
 */
static void *pv_updater(void *arg)
{
	int kind = (int)(uintptr_t)arg;
	struct sk_test_robj *stash[1024];
	unsigned long i, n = 0, k;

	/* Start once the readers run, so that updates overlap reads. */
	while (__atomic_load_n(&pv.reads, __ATOMIC_RELAXED) < 2048)
		sched_yield();
	for (i = 0; pv_more(i); i++) {
		struct sk_test_robj *old = pv_replace();

		sk_test_sync_by(pv.ops, kind);
		__atomic_store_n(&old->val, PV_POISON, __ATOMIC_RELAXED);
		if (!pv.ops->busted) {
			free(old);
			continue;
		}
		stash[n++] = old;
		if (n == 1024) {
			pv_free_stash(stash, n);
			n = 0;
		}
		for (k = 0; k < 200; k++)
			sk_cpu_relax();
	}
	if (n)
		pv_free_stash(stash, n);
	return NULL;
}

static unsigned long run_pv(int broken, int nupdaters, unsigned long iters)
{
	static struct sk_tort_ops busted;
	pthread_t rd[2], up[4];
	int i;

	sk_tort_make_busted(&sk_tort_rcu_ops, &busted);
	pv_start(broken ? &busted : &sk_tort_rcu_ops);
	pv.iters = iters;
	pv.twin_reads = 2000000 / sk_test_slow();
	for (i = 0; i < 2; i++)
		sk_test_thread_start(&rd[i], pv_reader, NULL);
	for (i = 0; i < nupdaters; i++)
		sk_test_thread_start(&up[i], pv_updater, (void *)(uintptr_t)i);
	for (i = 0; i < nupdaters; i++)
		pthread_join(up[i], NULL);
	STORE(pv.stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);
	sk_synchronize_rcu();
	free(pv.ptr);
	fprintf(stderr, "%s: %lu reads, %lu bad\n",
		broken ? "updater without grace period (BROKEN)"
		       : "normal+expedited+cond+poll updaters",
		LOAD(pv.reads), LOAD(pv.bad));
	return LOAD(pv.bad);
}

/*
 * Two readers check that the object they reached is never poisoned (and,
 * under ASan/TSan, never freed) inside their section, while four updaters
 * replace it concurrently: with sk_synchronize_rcu(), with the expedited
 * one, with cond_synchronize() and with start_poll + poll.  An updater
 * that skips the wait must be caught.
 */
static void expedited_and_normal_updaters_protect_readers(void)
{
	unsigned long bad = 0;
	int tries;

	SK_CHECK_EQ(run_pv(0, 4, 2500 / sk_test_slow()), 0);
	/* The broken twin: a loaded machine may hide it once; retry. */
	for (tries = 0; tries < 20 && !bad; tries++)
		bad = run_pv(1, 1, 0);
	SK_CHECK_GT(bad, 0);
}

/* ---- expedited handshake ------------------------------------------------- */

static int idle_in, idle_go;

/* Registered, then idle outside any section until told to go. */
static void *idle_registered(void *arg)
{
	(void)arg;
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	STORE(idle_in, 1);
	while (!LOAD(idle_go))
		usleep(1000);
	return NULL;
}

/* As pv_reader(), as an online QSBR thread (answers at its QS). */
static void *pv_qsbr_reader(void *arg)
{
	unsigned long reads = 0, k;

	(void)arg;
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	while (!LOAD(pv.stop)) {
		struct sk_test_robj *p = sk_rcu_dereference(pv.ptr);
		unsigned long v1, v2;

		v1 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		for (k = 0; k < 50; k++)
			sk_cpu_relax();
		v2 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		if (v1 != PV_MAGIC || v2 != PV_MAGIC)
			INC(pv.bad);
		sk_rcu_quiescent_state();
		if (++reads % 1024 == 0)
			__atomic_fetch_add(&pv.reads, 1024, __ATOMIC_RELAXED);
	}
	sk_rcu_thread_offline();
	return NULL;
}

/* Replace pv.ptr, wait with the expedited grace period, poison, free. */
static void exp_replace(void)
{
	struct sk_test_robj *old = pv_replace();

	sk_synchronize_rcu_expedited();
	__atomic_store_n(&old->val, PV_POISON, __ATOMIC_RELAXED);
	free(old);
}

/*
 * With one busy reader besides the caller, expedited grace periods take
 * their first barrier by handshake (the reader answers at its next
 * unlock); with an idle registered thread, which never answers, every one
 * of them falls back to membarrier(2).  The reader never sees a poisoned
 * object either way.  The handshake needs the reader on a CPU during the
 * few microseconds it waits, so the first phase retries (up to 30 s; CTest
 * runs this program alone) until one succeeded.  Run with a general and
 * with a QSBR reader: with the QSBR reader alone, grace periods need no
 * first barrier from it (neither handshake nor fallback counts); the idle
 * registered thread, a general one, then makes every one fall back.  The
 * QSBR reader's answer at its quiescent states is exercised by the
 * torture's mixed mode (tests/torture.cmake).
 */
static void handshake_then_fallback(void *(*reader)(void *), const char *kind)
{
	struct sk_rcu_stats s0, s1, s2;
	double deadline = sk_test_now() + 30.0;
	int i, qsbr = reader != pv_reader;
	pthread_t rd, idle;

	pv_start(&sk_tort_rcu_ops);
	sk_test_thread_start(&rd, reader, NULL);
	while (LOAD(pv.reads) < 2048)
		sched_yield();

	SK_CHECK_EQ(sk_rcu_get_stats(&s0), 0);
	do {
		for (i = 0; i < 100; i++)
			exp_replace();
		SK_CHECK_EQ(sk_rcu_get_stats(&s1), 0);
	} while (qsbr == 0 && s1.exp_handshakes == s0.exp_handshakes &&
		 sk_test_now() < deadline);
	if (qsbr) {
		/* QSBR-only grace periods: no first barrier from the reader. */
		SK_CHECK_EQ(s1.exp_handshakes - s0.exp_handshakes, 0);
		SK_CHECK_EQ(s1.exp_fallbacks - s0.exp_fallbacks, 0);
	} else {
		SK_CHECK_GT(s1.exp_handshakes - s0.exp_handshakes, 0);
	}

	STORE(idle_in, 0);
	STORE(idle_go, 0);
	sk_test_thread_start(&idle, idle_registered, NULL);
	while (!LOAD(idle_in))
		sched_yield();
	for (i = 0; i < 50; i++)
		exp_replace();
	SK_CHECK_EQ(sk_rcu_get_stats(&s2), 0);
	SK_CHECK_EQ(s2.exp_handshakes - s1.exp_handshakes, 0);
	SK_CHECK_EQ(s2.exp_fallbacks - s1.exp_fallbacks, 50);

	STORE(idle_go, 1);
	pthread_join(idle, NULL);
	STORE(pv.stop, 1);
	pthread_join(rd, NULL);
	sk_synchronize_rcu();
	free(pv.ptr);
	fprintf(stderr, "%s reader: handshakes %lu, fallbacks %lu (then %lu "
			"with an idle reader), %lu reads, %lu bad\n",
		kind, s1.exp_handshakes - s0.exp_handshakes,
		s1.exp_fallbacks - s0.exp_fallbacks,
		s2.exp_fallbacks - s1.exp_fallbacks, LOAD(pv.reads),
		LOAD(pv.bad));
	SK_CHECK_EQ(LOAD(pv.bad), 0);
}

static void expedited_handshake_then_fallback(void)
{
	handshake_then_fallback(pv_reader, "general");
	handshake_then_fallback(pv_qsbr_reader, "QSBR");
}

/* ---- QSBR-only grace periods --------------------------------------------- */

/* Hidden in every build of the library (src/barrier.c). */
unsigned long sk__fence_heavy_count(void);

/* Replace pv.ptr, wait with sk_synchronize_rcu(), poison, free. */
static void sync_replace(void)
{
	struct sk_test_robj *old = pv_replace();

	sk_synchronize_rcu();
	__atomic_store_n(&old->val, PV_POISON, __ATOMIC_RELAXED);
	free(old);
}

/* n normal and n expedited replacements; the first barriers they took. */
static void replace_and_count(int n, struct sk__rcu_gp_kinds *d,
			      unsigned long *heavy)
{
	struct sk__rcu_gp_kinds k0, k1;
	unsigned long h0 = sk__fence_heavy_count();
	int i;

	sk__rcu_get_gp_kinds(&k0);
	for (i = 0; i < n; i++) {
		sync_replace();
		exp_replace();
	}
	sk__rcu_get_gp_kinds(&k1);
	*heavy = sk__fence_heavy_count() - h0;
	d->handshake = k1.handshake - k0.handshake;
	d->heavy = k1.heavy - k0.heavy;
	d->qsbr_only = k1.qsbr_only - k0.qsbr_only;
}

static int sw_state; /* 0 online, 1 go offline + read once, 2 online, 3 stop */
static int sw_ack;   /* the switcher reached sw_state */

/* Online QSBR thread that leaves QSBR mode (a read section while offline)
 * and comes back when told. */
static void *mode_switcher(void *arg)
{
	int st = 0;

	(void)arg;
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	STORE(sw_ack, 0);
	while ((st = LOAD(sw_state)) != 3) {
		if (st == 1 && LOAD(sw_ack) == 0) {
			sk_rcu_thread_offline();
			sk_rcu_read_lock();
			sk_rcu_read_unlock();
			STORE(sw_ack, 1);
		} else if (st == 2 && LOAD(sw_ack) == 1) {
			SK_CHECK_EQ(sk_rcu_thread_online(), 0);
			STORE(sw_ack, 2);
		} else if (st != 1) {
			sk_rcu_quiescent_state();
		}
		usleep(100);
	}
	if (sk_rcu_read_lock_held())
		sk_rcu_thread_offline();
	return NULL;
}

/*
 * With only QSBR threads registered besides the caller, grace periods
 * (normal and expedited) issue no membarrier(2): the library's count of
 * them does not move, and every grace period counts as QSBR-only.  The
 * twin that must be seen: a QSBR thread that enters a read section while
 * offline counts as a general reader, and the grace periods then take the
 * handshake or membarrier(2) (a membarrier(2) where it is available,
 * since that thread idles and never answers); once online again, they
 * are QSBR-only again.  Readers never see a poisoned object.
 */
static void qsbr_only_grace_periods_skip_membarrier(void)
{
	int n = 50 / sk_test_slow() + 1, i;
	struct sk__rcu_gp_kinds d;
	unsigned long heavy;
	pthread_t rd[2], sw;

	pv_start(&sk_tort_rcu_ops);
	STORE(sw_state, 0);
	STORE(sw_ack, -1);
	for (i = 0; i < 2; i++)
		sk_test_thread_start(&rd[i], pv_qsbr_reader, NULL);
	sk_test_thread_start(&sw, mode_switcher, NULL);
	while (LOAD(pv.reads) < 2048 || LOAD(sw_ack) != 0)
		sched_yield();

	replace_and_count(n, &d, &heavy);
	SK_CHECK_EQ(heavy, 0);
	SK_CHECK_EQ(d.qsbr_only, 2UL * n);
	SK_CHECK_EQ(d.handshake + d.heavy, 0);

	STORE(sw_state, 1);
	while (LOAD(sw_ack) != 1)
		sched_yield();
	replace_and_count(n, &d, &heavy);
	SK_CHECK_EQ(d.qsbr_only, 0);
	SK_CHECK_EQ(d.handshake + d.heavy, 2UL * n);
	if (sk_fence_uses_membarrier())
		SK_CHECK_GT(heavy, 0);

	STORE(sw_state, 2);
	while (LOAD(sw_ack) != 2)
		sched_yield();
	replace_and_count(n, &d, &heavy);
	SK_CHECK_EQ(heavy, 0);
	SK_CHECK_EQ(d.qsbr_only, 2UL * n);

	STORE(sw_state, 3);
	pthread_join(sw, NULL);
	STORE(pv.stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);
	sk_synchronize_rcu();
	free(pv.ptr);
	SK_CHECK_EQ(LOAD(pv.bad), 0);
}


/*
 * Threads that register by going online (sk_rcu_thread_online() on an
 * unregistered thread) never count as general readers on the way, so
 * grace periods that run while they start stay QSBR-only: no handshake,
 * no membarrier(2).  Each arriving thread reads the object once.  The
 * twin that must be seen: a thread that registers as general first (as
 * the library did before f739cfa) makes some of the grace periods that
 * meet it take a first barrier; it is the same loop with the arrivals
 * calling sk_rcu_register_thread() (and 100 us) before going online.
 */
static int arrivals_stop, arrivals_general_first;
static unsigned long arrivals;

static void *pv_qsbr_reader_once(void *arg)
{
	struct sk_test_robj *p;

	(void)arg;
	if (LOAD(arrivals_general_first)) {
		SK_CHECK_EQ(sk_rcu_register_thread(), 0);
		/* General for a while, as if registering took that long. */
		sk_test_sleep_us(100);
	}
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	p = sk_rcu_dereference(pv.ptr);
	if (__atomic_load_n(&p->val, __ATOMIC_RELAXED) != PV_MAGIC)
		INC(pv.bad);
	sk_rcu_quiescent_state();
	INC(arrivals);
	return NULL; /* exit: offline and unregistered */
}

/* Short-lived QSBR threads, one after another, until told to stop. */
static void *qsbr_arrivals(void *arg)
{
	(void)arg;
	while (!LOAD(arrivals_stop)) {
		pthread_t t;

		sk_test_thread_start(&t, pv_qsbr_reader_once, NULL);
		pthread_join(t, NULL);
	}
	return NULL;
}

/* Grace periods while QSBR threads arrive; the ones not QSBR-only. */
static unsigned long arrivals_run(int general_first, unsigned long *gps)
{
	struct sk__rcu_gp_kinds k0, k1;
	unsigned long want = 400 / sk_test_slow() + 20, i = 0;
	pthread_t arr[2], rd;
	int j;

	pv_start(&sk_tort_rcu_ops);
	STORE(arrivals_stop, 0);
	STORE(arrivals_general_first, general_first);
	/* One long-lived QSBR reader: every grace period has one to wait for. */
	sk_test_thread_start(&rd, pv_qsbr_reader, NULL);
	while (LOAD(pv.reads) < 1024)
		sched_yield();
	STORE(arrivals, 0);
	for (j = 0; j < 2; j++)
		sk_test_thread_start(&arr[j], qsbr_arrivals, NULL);
	sk__rcu_get_gp_kinds(&k0);
	while (i < want || LOAD(arrivals) < want) {
		sync_replace();
		i++;
	}
	sk__rcu_get_gp_kinds(&k1);
	STORE(arrivals_stop, 1);
	for (j = 0; j < 2; j++)
		pthread_join(arr[j], NULL);
	STORE(pv.stop, 1);
	pthread_join(rd, NULL);
	sk_synchronize_rcu();
	free(pv.ptr);
	SK_CHECK_EQ(LOAD(pv.bad), 0);
	*gps = i;
	return (k1.handshake - k0.handshake) + (k1.heavy - k0.heavy);
}

static void qsbr_threads_coming_online_stay_qsbr_only(void)
{
	unsigned long gps, not_qsbr, twin = 0;
	int tries;

	not_qsbr = arrivals_run(0, &gps);
	fprintf(stderr, "arrivals online: %lu grace periods, %lu not QSBR-only\n",
		gps, not_qsbr);
	SK_CHECK_EQ(not_qsbr, 0);
	/* The twin (BROKEN): registered general first; retry on a quiet run. */
	for (tries = 0; tries < 5 && !twin; tries++) {
		twin = arrivals_run(1, &gps);
		fprintf(stderr, "arrivals general first (BROKEN): %lu grace "
			"periods, %lu not QSBR-only\n", gps, twin);
	}
	SK_CHECK_GT(twin, 0);
}


/* ---- an idle registered thread costs one timeout --------------------- */

static int ib_busy, ib_stop;
static unsigned long ib_sections;

/*
 * Registered, idle outside any section until ib_busy, then entering
 * sections until ib_stop.
 */
static void *idle_then_busy(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	STORE(idle_in, 1);
	while (!LOAD(ib_busy))
		usleep(1000);
	while (!LOAD(ib_stop)) {
		sk_rcu_read_lock();
		sk_cpu_relax();
		sk_rcu_read_unlock();
		if (++n % 256 == 0)
			STORE(ib_sections, n);
	}
	return NULL;
}

/* n normal grace periods; *d the kind counters' changes. */
static void sync_n(int n, struct sk__rcu_gp_kinds *d)
{
	struct sk__rcu_gp_kinds k0, k1;
	int i;

	sk__rcu_get_gp_kinds(&k0);
	for (i = 0; i < n; i++)
		sk_synchronize_rcu();
	sk__rcu_get_gp_kinds(&k1);
	d->handshake = k1.handshake - k0.handshake;
	d->heavy = k1.heavy - k0.heavy;
	d->timeouts = k1.timeouts - k0.timeouts;
}

/*
 * With a registered thread that stays idle outside any section, the
 * handshake rounds of normal grace periods time out at most once: later
 * grace periods see that it still shows the word it showed then and take
 * membarrier(2) at once.  The twin that must be seen: grace periods that
 * forget it (SK__RCU_BUSTED_MISS_FORGET) time out again each time their
 * backoff lets them try (at least every SK__RCU_HANDSHAKE_BACKOFF_MAX + 1,
 * so 3 times or more in 200).  Once the thread enters sections, its word
 * changes and the rounds resume: a grace period passes by handshake
 * again (retried up to 30 s: the reader must be on a CPU in the few
 * microseconds a round waits).  Its twin (SK__RCU_BUSTED_MISS_STICKY,
 * the thread never dropped) never does in 200 grace periods.
 */
static void idle_thread_times_out_once(void)
{
	const int n = 200;
	struct sk__rcu_gp_kinds d;
	double deadline;
	pthread_t th;

	STORE(idle_in, 0);
	STORE(ib_busy, 0);
	STORE(ib_stop, 0);
	sk_test_thread_start(&th, idle_then_busy, NULL);
	while (!LOAD(idle_in))
		sched_yield();

	sk__rcu_set_busted(SK__RCU_BUSTED_MISS_FORGET);
	sync_n(n, &d);
	sk__rcu_set_busted(0);
	fprintf(stderr, "  idle, twin (forget): %lu timeouts in %d\n",
		d.timeouts, n);
	if (sk_fence_uses_membarrier())
		SK_CHECK_GT(d.timeouts, 1);

	sync_n(n, &d);
	fprintf(stderr, "  idle: %lu timeouts, %lu heavy, %lu handshakes in "
			"%d\n", d.timeouts, d.heavy, d.handshake, n);
	SK_CHECK_LE(d.timeouts, 1);
	SK_CHECK_EQ(d.handshake, 0);
	SK_CHECK_EQ(d.heavy, (unsigned long)n);

	STORE(ib_busy, 1);
	while (LOAD(ib_sections) < 1024)
		sched_yield();
	sk__rcu_set_busted(SK__RCU_BUSTED_MISS_STICKY);
	sync_n(n, &d);
	sk__rcu_set_busted(0);
	fprintf(stderr, "  busy, twin (sticky): %lu handshakes in %d\n",
		d.handshake, n);
	SK_CHECK_EQ(d.handshake, 0);

	deadline = sk_test_now() + 30.0;
	do
		sync_n(n, &d);
	while (d.handshake == 0 && sk_test_now() < deadline);
	fprintf(stderr, "  busy: %lu handshakes in the last %d\n",
		d.handshake, n);
	if (sk_fence_uses_membarrier())
		SK_CHECK_GT(d.handshake, 0);

	STORE(ib_stop, 1);
	pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(expedited_and_normal_updaters_protect_readers);
	SK_RUN(expedited_handshake_then_fallback);
	SK_RUN(qsbr_only_grace_periods_skip_membarrier);
	SK_RUN(qsbr_threads_coming_online_stay_qsbr_only);
	SK_RUN(idle_thread_times_out_once);
	return sk_test_report();
}
