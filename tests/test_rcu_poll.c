/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_poll.c - polled grace periods (cookies) and expedited grace
 * periods, under real threads.
 *
 * What is proven, one function each:
 *   - a cookie taken while a reader is inside a section that began before
 *     it does not poll as completed while the reader stays inside, not
 *     even when a grace period that was already in flight completes (a
 *     stale cookie naming that grace period MUST be caught);
 *   - sk_start_poll_synchronize_rcu() completes with nobody calling
 *     synchronize (sync_calls unchanged), also started inside a section,
 *     with a reader holding, and from several threads;
 *   - SK_RCU_COOKIE_COMPLETED always polls as 1 and never waits;
 *   - cookies are monotonic over thousands of grace periods, and so is
 *     completion (a later cookie complete implies every earlier one);
 *   - stress: poll() and cond_synchronize() never report completion while
 *     a reader that entered before the cookie is still inside (general and
 *     QSBR readers, normal/expedited/polled grace periods driving); a
 *     cookie one grace period too old MUST be caught by the same checker;
 *   - sk_cond_synchronize_rcu() on a completed cookie starts no grace
 *     period, and otherwise waits for the pre-existing reader;
 *   - sk_synchronize_rcu_expedited() waits for the pre-existing reader,
 *     also joining a normal grace period in flight, and together with
 *     normal, conditional and polled updaters protects readers (use after
 *     free would show; an updater that skips the wait MUST be caught);
 *   - online QSBR threads that call the waiting functions do not deadlock
 *     each other and are online again afterwards.
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

/* Cookie order: a is not older than b. */
static int cookie_ge(unsigned long a, unsigned long b)
{
	return (long)(a - b) >= 0;
}

/* A thread that calls one waiting function and records its return. */
struct waiter {
	pthread_t t;
	void (*wait)(unsigned long cookie);
	unsigned long cookie;
	struct sk_test_holder *reader; /* must have left when wait returns */
	int returned, early;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->wait(w->cookie);
	if (w->reader && !LOAD(w->reader->left))
		STORE(w->early, 1);
	STORE(w->returned, 1);
	return NULL;
}

static void waiter_start(struct waiter *w, void (*fn)(unsigned long),
			 unsigned long cookie, struct sk_test_holder *reader)
{
	memset(w, 0, sizeof(*w));
	w->wait = fn;
	w->cookie = cookie;
	w->reader = reader;
	sk_test_thread_start(&w->t, waiter_main, w);
}

static void do_sync(unsigned long c)
{
	(void)c;
	sk_synchronize_rcu();
}

static void do_sync_expedited(unsigned long c)
{
	(void)c;
	sk_synchronize_rcu_expedited();
}

static void do_cond(unsigned long c)
{
	sk_cond_synchronize_rcu(c);
}

/* Spin until the cookie completes, with no one but the worker driving. */
static void spin_until_done(unsigned long c)
{
	while (!sk_poll_state_synchronize_rcu(c))
		sched_yield();
}

/*
 * Wait for a full grace period of ops (tools/torture_ops.h: the RCU ops,
 * or their busted twin, which waits for nothing) in one of four ways:
 * 0 synchronize, 1 expedited, 2 cond on a fresh cookie, 3 start a poll
 * and spin on it.
 */
static void sync_by(const struct sk_tort_ops *ops, int kind)
{
	unsigned long c;

	switch (kind) {
	case 0:
		ops->sync(NULL);
		break;
	case 1:
		ops->exp_sync(NULL);
		break;
	case 2:
		ops->cond_sync(NULL, ops->get_gp_state(NULL));
		break;
	default:
		/* As spin_until_done(), through ops. */
		c = ops->start_gp_poll(NULL);
		while (!ops->poll_gp_state(NULL, c))
			sched_yield();
	}
}

/* Run n (at most 3) threads of fn with arg and wait for them all. */
static void run_threads(int n, void *(*fn)(void *), void *arg)
{
	pthread_t t[3];
	int i;

	for (i = 0; i < n; i++)
		sk_test_thread_start(&t[i], fn, arg);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* ---- tests ----------------------------------------------------------------- */

/*
 * A cookie taken while reader R is inside a section that began before the
 * cookie: poll is 0 while R holds, also while a synchronize waits for R;
 * once R left and that synchronize returned, poll is 1.  General and QSBR.
 */
static void cookie_not_completed_while_preexisting_reader_holds(void)
{
	int qsbr;

	for (qsbr = 0; qsbr < 2; qsbr++) {
		struct sk_test_holder r;
		struct waiter s;
		unsigned long c, c0;
		int i, early = 0;

		sk_test_holder_start(&r, qsbr, NULL, NULL);
		c = sk_get_state_synchronize_rcu();
		for (i = 0; i < 1000; i++)
			early += sk_poll_state_synchronize_rcu(c);
		c0 = sk_test_gp_ctr();
		waiter_start(&s, do_sync, 0, &r);
		sk_test_wait_gp_started(c0, &s.returned);
		usleep(20000);
		for (i = 0; i < 1000; i++)
			early += sk_poll_state_synchronize_rcu(c);
		SK_CHECK_EQ(early, 0);
		SK_CHECK_EQ(LOAD(s.returned), 0);
		sk_test_holder_release(&r);
		pthread_join(s.t, NULL);
		SK_CHECK_EQ(LOAD(s.early), 0);
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
	}
}

/*
 * The subtle case: grace period G is in flight (waiting for reader B) when
 * reader R enters, and then the cookie is taken.  G does not wait for R,
 * so the cookie must name a later grace period: after G completes, poll
 * is still 0 while R holds.  The stale cookie taken before G started is
 * what a get_state() off by one would return; the same check reports it
 * complete while R is inside, so this test can tell the two apart.
 */
static void cookie_skips_grace_period_in_flight(void)
{
	int qsbr;

	for (qsbr = 0; qsbr < 2; qsbr++) {
		struct sk_test_holder b, r;
		struct waiter s;
		unsigned long stale, c, c0;

		sk_test_holder_start(&b, 0, NULL, NULL);
		stale = sk_get_state_synchronize_rcu();
		c0 = sk_test_gp_ctr();
		waiter_start(&s, do_sync, 0, &b);
		/* G is in flight, blocked on b. */
		sk_test_wait_gp_started(c0, &s.returned);
		sk_test_holder_start(&r, qsbr, NULL, NULL);
		c = sk_get_state_synchronize_rcu();
		SK_CHECK(cookie_ge(c, stale) && c != stale);
		sk_test_holder_release(&b);
		pthread_join(s.t, NULL); /* G has completed */
		SK_CHECK_EQ(LOAD(s.early), 0);
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 0);
		/* Twin: the stale cookie would wrongly say "R is done". */
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(stale), 1);
		SK_CHECK_EQ(LOAD(r.left), 0);
		sk_test_holder_release(&r);
		sk_synchronize_rcu();
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
	}
}

static unsigned long sp_err;

static void *start_poll_thread(void *arg)
{
	unsigned long i, n = (unsigned long)(uintptr_t)arg, prev = 0;

	for (i = 0; i < n; i++) {
		unsigned long c = sk_start_poll_synchronize_rcu();

		if (i && !cookie_ge(c, prev))
			INC(sp_err);
		spin_until_done(c);
		prev = c;
	}
	return NULL;
}

/*
 * sk_start_poll_synchronize_rcu() completes with nobody calling
 * synchronize: alone, started inside a read section, with a reader holding
 * (poll stays 0 until it leaves), and from three threads at once.
 * sync_calls does not move; grace periods do.
 */
static void start_poll_completes_without_synchronize(void)
{
	struct sk_rcu_stats s0, s1;
	struct sk_test_holder r;
	unsigned long c, c0;
	int i, early = 0;

	s0 = sk_test_rcu_stats();
	c = sk_start_poll_synchronize_rcu();
	spin_until_done(c);

	sk_rcu_read_lock();
	c = sk_start_poll_synchronize_rcu();
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 0);
	sk_rcu_read_unlock();
	spin_until_done(c);

	sk_test_holder_start(&r, 0, NULL, NULL);
	c0 = sk_test_gp_ctr();
	c = sk_start_poll_synchronize_rcu();
	/* The worker runs the grace period... */
	sk_test_wait_gp_started(c0, NULL);
	usleep(20000);
	for (i = 0; i < 1000; i++)
		early += sk_poll_state_synchronize_rcu(c); /* ...not past r */
	SK_CHECK_EQ(early, 0);
	sk_test_holder_release(&r);
	spin_until_done(c);

	sp_err = 0;
	run_threads(3, start_poll_thread,
		    (void *)(uintptr_t)(300 / sk_test_slow()));
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(LOAD(sp_err), 0);
	SK_CHECK_EQ(s1.sync_calls, s0.sync_calls);
	SK_CHECK_GT(s1.grace_periods - s0.grace_periods, 2);
}

/*
 * SK_RCU_COOKIE_COMPLETED polls as 1 always: idle, with a reader holding,
 * with a grace period in flight; sk_cond_synchronize_rcu() on it returns
 * without a grace period even while a reader holds (a wait would deadlock:
 * the reader is released only after it returns).
 */
static void completed_cookie_always_polls_done(void)
{
	struct sk_rcu_stats s0, s1;
	struct sk_test_holder r;
	struct waiter s;
	unsigned long c0;

	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED), 1);
	sk_test_holder_start(&r, 0, NULL, NULL);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED), 1);
	s0 = sk_test_rcu_stats();
	sk_cond_synchronize_rcu(SK_RCU_COOKIE_COMPLETED);
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.grace_periods, s0.grace_periods);
	c0 = sk_test_gp_ctr();
	waiter_start(&s, do_sync, 0, &r);
	sk_test_wait_gp_started(c0, &s.returned);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED), 1);
	sk_cond_synchronize_rcu(SK_RCU_COOKIE_COMPLETED);
	sk_test_holder_release(&r);
	pthread_join(s.t, NULL);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED), 1);
}

static struct {
	unsigned long iters;
	unsigned long order_err, done_err, stop;
} mono;

static void *mono_thread(void *arg)
{
	unsigned long i, prev = 0, prev_done = 0;
	int polled = (int)(uintptr_t)arg;

	for (i = 0; i < mono.iters; i++) {
		unsigned long c = polled ? sk_start_poll_synchronize_rcu()
					 : sk_get_state_synchronize_rcu();

		if (i && !cookie_ge(c, prev))
			INC(mono.order_err);
		if (polled)
			spin_until_done(c);
		else if (i % 2)
			sk_synchronize_rcu();
		else
			sk_cond_synchronize_rcu(c);
		/* Completion is monotonic too. */
		if (!sk_poll_state_synchronize_rcu(c) ||
		    (i && !sk_poll_state_synchronize_rcu(prev_done)))
			INC(mono.done_err);
		prev = prev_done = c;
	}
	return NULL;
}

/*
 * Cookies never go backwards over thousands of grace periods; after a
 * grace period a new cookie is strictly newer; completed cookies stay
 * completed; a completed cookie implies every older one.  One thread
 * alone, then three threads at once (synchronize, cond, start_poll).
 */
static void cookies_are_monotonic(void)
{
	unsigned long n = 5000 / sk_test_slow(), i, prev = 0, old[16];
	pthread_t t[3];
	int k;

	for (i = 0; i < n; i++) {
		unsigned long c = sk_get_state_synchronize_rcu();

		if (i) {
			SK_CHECK(cookie_ge(c, prev) && c != prev);
			if (!cookie_ge(c, prev) || c == prev)
				break;
		}
		SK_CHECK_EQ(sk_get_state_synchronize_rcu(), c);
		sk_synchronize_rcu();
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
		old[i % 16] = c;
		prev = c;
	}
	for (k = 0; k < 16; k++)
		SK_CHECK_EQ(sk_poll_state_synchronize_rcu(old[k]), 1);

	memset(&mono, 0, sizeof(mono));
	mono.iters = 2000 / sk_test_slow();
	for (k = 0; k < 3; k++)
		sk_test_thread_start(&t[k], mono_thread,
				     (void *)(uintptr_t)(k == 2));
	for (k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	SK_CHECK_EQ(LOAD(mono.order_err), 0);
	SK_CHECK_EQ(LOAD(mono.done_err), 0);
}

/* ---- stress: never early -------------------------------------------------- */

static struct {
	unsigned long (*cookie)(void);
	unsigned long iters;
	unsigned long go, entered, leaving, out; /* iteration numbers */
	int stop;
	uint64_t seed;
} es;

static void *early_reader(void *arg)
{
	uint64_t rng = es.seed | 1;
	unsigned long i, k, spin;

	(void)arg;
	for (i = 1; i <= es.iters; i++) {
		int qsbr = i & 1;

		while (LOAD(es.go) != i) {
			if (LOAD(es.stop))
				return NULL;
			sched_yield();
		}
		if (qsbr)
			sk_rcu_thread_online();
		else
			sk_rcu_read_lock();
		STORE(es.entered, i);
		spin = sk_test_rand(&rng) % 4000;
		for (k = 0; k < spin; k++)
			sk_cpu_relax();
		if (sk_test_rand(&rng) % 16 == 0)
			sched_yield();
		/* Set before leaving: a 0 here means "still inside". */
		STORE(es.leaving, i);
		if (qsbr)
			sk_rcu_thread_offline();
		else
			sk_rcu_read_unlock();
		STORE(es.out, i);
	}
	return NULL;
}

static void *gp_driver(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!LOAD(es.stop)) {
		int kind = (int)(n++ % 4);

		if (kind < 2) {
			sync_by(&sk_tort_rcu_ops, kind); /* normal, expedited */
		} else if (kind == 2) {
			sk_start_poll_synchronize_rcu();
			usleep(50);
		} else {
			usleep(100); /* idle windows */
		}
	}
	return NULL;
}

/* BROKEN: the cookie of the grace period before the right one. */
static unsigned long cookie_one_too_old(void)
{
	return sk_get_state_synchronize_rcu() - 1;
}

/*
 * Returns how many times poll() or cond_synchronize() reported completion
 * while the reader, inside a section that began before the cookie was
 * taken, had not yet set "leaving".  Sound because the reader sets leaving
 * before it leaves, and poll/cond are sampled before leaving is read.
 * With stop_at_first, stops at the first report (twin runs).
 */
static unsigned long count_early(unsigned long (*cookie)(void),
				 unsigned long iters, int stop_at_first)
{
	pthread_t rd, drv;
	unsigned long i, early = 0, polls = 0;

	memset(&es, 0, sizeof(es));
	es.cookie = cookie;
	es.iters = iters;
	es.seed = sk_t_seed;
	sk_test_thread_start(&rd, early_reader, NULL);
	sk_test_thread_start(&drv, gp_driver, NULL);
	for (i = 1; i <= iters; i++) {
		unsigned long c;
		unsigned spins = 0;

		STORE(es.go, i);
		while (LOAD(es.entered) != i)
			sched_yield();
		c = es.cookie();
		if (i % 3 == 0) {
			/* cond waits while the reader is (maybe) still inside. */
			sk_cond_synchronize_rcu(c);
			if (LOAD(es.leaving) != i)
				early++;
		} else {
			for (;;) {
				int done = sk_poll_state_synchronize_rcu(c);

				polls++;
				if (LOAD(es.leaving) == i)
					break;
				if (done) {
					early++;
					break;
				}
				if (++spins % 64 == 0)
					sched_yield();
			}
		}
		while (LOAD(es.out) != i)
			sched_yield();
		if (early && stop_at_first)
			break;
	}
	STORE(es.stop, 1);
	pthread_join(rd, NULL);
	pthread_join(drv, NULL);
	fprintf(stderr, "%lu iterations, %lu polls, %lu early\n",
		i > iters ? iters : i, polls, early);
	return early;
}

/*
 * poll() and cond_synchronize() never report completion early, over
 * thousands of iterations with general and QSBR readers and grace periods
 * driven by synchronize, expedited and start_poll calls.  The same checker
 * must catch a cookie one grace period too old.
 */
static void poll_and_cond_never_complete_early(void)
{
	SK_CHECK_EQ(count_early(sk_get_state_synchronize_rcu,
				4000 / sk_test_slow(), 0),
		    0);
	SK_CHECK_EQ(count_early(sk_start_poll_synchronize_rcu,
				2000 / sk_test_slow(), 0),
		    0);
	SK_CHECK_GT(count_early(cookie_one_too_old, 4000, 1), 0);
}

/*
 * sk_cond_synchronize_rcu() on a completed cookie returns without a grace
 * period (grace_periods, sync_calls and gp_sleeps unchanged; nothing else
 * runs grace periods here: no callbacks, every poll request completed).
 */
static void cond_synchronize_on_completed_cookie_is_free(void)
{
	struct sk_rcu_stats s0, s1;
	unsigned long c = sk_get_state_synchronize_rcu();
	int i;

	sk_synchronize_rcu();
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
	s0 = sk_test_rcu_stats();
	for (i = 0; i < 1000; i++)
		sk_cond_synchronize_rcu(c);
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.grace_periods, s0.grace_periods);
	SK_CHECK_EQ(s1.sync_calls, s0.sync_calls);
	SK_CHECK_EQ(s1.gp_sleeps, s0.gp_sleeps);
}

/*
 * A waiting function called while reader R holds a section that began
 * before: it does not return while R holds (checked after its grace
 * period started and 20 ms more), and when it returns R has left.
 */
static void check_waits_for_reader(void (*fn)(unsigned long), int qsbr)
{
	struct sk_test_holder r;
	struct waiter w;
	unsigned long c0;

	sk_test_holder_start(&r, qsbr, NULL, NULL);
	c0 = sk_test_gp_ctr();
	waiter_start(&w, fn, sk_get_state_synchronize_rcu(), &r);
	sk_test_wait_gp_started(c0, &w.returned);
	usleep(20000);
	SK_CHECK_EQ(LOAD(w.returned), 0);
	sk_test_holder_release(&r);
	pthread_join(w.t, NULL);
	SK_CHECK_EQ(LOAD(w.early), 0);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(w.cookie), 1);
}

/* sk_cond_synchronize_rcu() on a pending cookie waits for the reader. */
static void cond_synchronize_waits_for_preexisting_reader(void)
{
	check_waits_for_reader(do_cond, 0);
	check_waits_for_reader(do_cond, 1);
}

/*
 * sk_synchronize_rcu_expedited() waits for the pre-existing reader
 * (general and QSBR), also when it joins a normal grace period that is
 * already waiting for that reader; both return only after it left.
 */
static void expedited_waits_for_preexisting_reader(void)
{
	struct sk_test_holder r;
	struct waiter n, e;
	unsigned long c0;

	check_waits_for_reader(do_sync_expedited, 0);
	check_waits_for_reader(do_sync_expedited, 1);

	sk_test_holder_start(&r, 0, NULL, NULL);
	c0 = sk_test_gp_ctr();
	waiter_start(&n, do_sync, 0, &r);
	sk_test_wait_gp_started(c0, &n.returned);
	usleep(10000); /* the normal grace period sleeps on r */
	waiter_start(&e, do_sync_expedited, 0, &r);
	usleep(20000);
	SK_CHECK_EQ(LOAD(n.returned), 0);
	SK_CHECK_EQ(LOAD(e.returned), 0);
	sk_test_holder_release(&r);
	pthread_join(n.t, NULL);
	pthread_join(e.t, NULL);
	SK_CHECK_EQ(LOAD(n.early), 0);
	SK_CHECK_EQ(LOAD(e.early), 0);
}

/* ---- updaters of every kind protect readers ------------------------------- */

#define PV_MAGIC ((unsigned long)0x600d600d600d600dULL)
#define PV_POISON ((unsigned long)0xdeaddeaddeaddeadULL)

struct pobj {
	unsigned long val;
};

static struct {
	struct pobj *ptr;
	int stop;
	unsigned long bad, reads; /* reads: published every 1024 */
	unsigned long iters;	  /* per correct updater */
	unsigned long twin_reads; /* broken updater: stop after these */
	const struct sk_tort_ops *ops; /* sections, grace periods */
} pv;

static void *pv_reader(void *arg)
{
	unsigned long reads = 0, k;

	(void)arg;
	while (!LOAD(pv.stop)) {
		struct pobj *p;
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

static struct pobj *pv_replace(void)
{
	struct pobj *n = malloc(sizeof(*n));

	if (!n)
		abort();
	__atomic_store_n(&n->val, PV_MAGIC, __ATOMIC_RELAXED);
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
static void pv_free_stash(struct pobj **stash, unsigned long n)
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
	struct pobj *stash[1024];
	unsigned long i, n = 0, k;

	/* Start once the readers run, so that updates overlap reads. */
	while (__atomic_load_n(&pv.reads, __ATOMIC_RELAXED) < 2048)
		sched_yield();
	for (i = 0; pv_more(i); i++) {
		struct pobj *old = pv_replace();

		sync_by(pv.ops, kind);
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

	memset(&pv, 0, sizeof(pv));
	pv.iters = iters;
	pv.twin_reads = 2000000 / sk_test_slow();
	sk_tort_make_busted(&sk_tort_rcu_ops, &busted);
	pv.ops = broken ? &busted : &sk_tort_rcu_ops;
	pv.ptr = malloc(sizeof(*pv.ptr));
	if (!pv.ptr)
		abort();
	pv.ptr->val = PV_MAGIC;
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

/* ---- expedited handshake --------------------------------------------------- */

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
		struct pobj *p = sk_rcu_dereference(pv.ptr);
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
	struct pobj *old = pv_replace();

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

	memset(&pv, 0, sizeof(pv));
	pv.ops = &sk_tort_rcu_ops; /* pv_reader()'s sections */
	pv.ptr = malloc(sizeof(*pv.ptr));
	if (!pv.ptr)
		abort();
	pv.ptr->val = PV_MAGIC;
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

/* ---- QSBR-only grace periods ----------------------------------------------- */

/* Hidden in every build of the library (src/barrier.c). */
unsigned long sk__fence_heavy_count(void);

/* Replace pv.ptr, wait with sk_synchronize_rcu(), poison, free. */
static void sync_replace(void)
{
	struct pobj *old = pv_replace();

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

	memset(&pv, 0, sizeof(pv));
	pv.ops = &sk_tort_rcu_ops; /* pv_reader()'s sections */
	pv.ptr = malloc(sizeof(*pv.ptr));
	if (!pv.ptr)
		abort();
	pv.ptr->val = PV_MAGIC;
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

static unsigned long qs_err;

static void *qsbr_waiter(void *arg)
{
	unsigned long i, n = (unsigned long)(uintptr_t)arg;

	sk_rcu_thread_online();
	for (i = 0; i < n; i++) {
		sk_rcu_quiescent_state();
		sk_synchronize_rcu_expedited();
		if (!sk_rcu_read_lock_held())
			INC(qs_err);
		sk_rcu_quiescent_state();
		sk_cond_synchronize_rcu(sk_get_state_synchronize_rcu());
		if (!sk_rcu_read_lock_held())
			INC(qs_err);
		sk_cond_synchronize_rcu(sk_start_poll_synchronize_rcu());
		if (!sk_rcu_read_lock_held())
			INC(qs_err);
		sk_synchronize_rcu();
		if (!sk_rcu_read_lock_held())
			INC(qs_err);
	}
	sk_rcu_thread_offline();
	return NULL;
}

/*
 * Two online QSBR threads call sk_synchronize_rcu_expedited(),
 * sk_cond_synchronize_rcu() and sk_synchronize_rcu(): each grace period
 * would wait for the other online thread forever unless the caller is put
 * offline for the wait.  They finish (a deadlock hits the CTest timeout)
 * and are online again after each call.
 */
static void online_qsbr_threads_can_wait(void)
{
	qs_err = 0;
	run_threads(2, qsbr_waiter, (void *)(uintptr_t)(300 / sk_test_slow()));
	SK_CHECK_EQ(LOAD(qs_err), 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(cookie_not_completed_while_preexisting_reader_holds);
	SK_RUN(cookie_skips_grace_period_in_flight);
	SK_RUN(start_poll_completes_without_synchronize);
	SK_RUN(completed_cookie_always_polls_done);
	SK_RUN(cookies_are_monotonic);
	SK_RUN(cond_synchronize_on_completed_cookie_is_free);
	SK_RUN(poll_and_cond_never_complete_early);
	SK_RUN(cond_synchronize_waits_for_preexisting_reader);
	SK_RUN(expedited_waits_for_preexisting_reader);
	SK_RUN(expedited_and_normal_updaters_protect_readers);
	SK_RUN(expedited_handshake_then_fallback);
	SK_RUN(online_qsbr_threads_can_wait);
	SK_RUN(qsbr_only_grace_periods_skip_membarrier);
	return sk_test_report();
}
