/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_poll.c - polled grace periods (cookies) and the waits for
 * pre-existing readers of the conditional and expedited grace periods,
 * under real threads.  Updaters of every kind together, the expedited
 * handshake and the QSBR-only grace periods are in test_rcu_gp_kinds.c.
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
 *     also joining a normal grace period in flight;
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


/* ---- tests --------------------------------------------------------------- */

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

/* ---- stress: never early ------------------------------------------------- */

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
			sk_test_sync_by(&sk_tort_rcu_ops, kind); /* normal, expedited */
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
	SK_RUN(online_qsbr_threads_can_wait);
	return sk_test_report();
}
