/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_domains.c - srcu.h: domains are independent (a blocked domain
 * delays no other) and cost nothing idle, also by the hundred.
 *
 * No assertion bounds wall-clock time; a sleep only gives a broken library
 * the chance to misbehave before a "not yet" check.  The CPU-time bounds
 * (idle or blocked domains cost no CPU while the process sleeps) are cost
 * bounds read from getrusage().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* ---- 4. domain independence and many domains ----------------------------- */

static void blocked_domain_delays_no_other_domain(void)
{
	struct sk_srcu *a = domain_new(), *b = domain_new();
	struct counted ca = { .runs = 0 }, cb[100], crcu = { .runs = 0 };
	unsigned long cookie_a, cookie_b, lost = 0;
	struct holder h;
	struct syncer sa;
	int i, idx;

	/* A: a reader blocked on a condition variable; an updater, a callback
	 * and a polled grace period wait for it. */
	holder_start(&h, a, NULL);
	syncer_start(&sa, a, 0);
	SK_CHECK_EQ(sk_call_srcu(a, &ca.rh, counted_cb), 0);
	cookie_a = sk_start_poll_synchronize_srcu(a);

	/* B and plain RCU make progress meanwhile. */
	for (i = 0; i < 10; i++) {
		idx = sk_srcu_read_lock(b);
		sk_srcu_read_unlock(b, idx);
		sk_synchronize_srcu(b);
		sk_synchronize_srcu_expedited(b);
	}
	sk_synchronize_rcu();
	sk_synchronize_rcu_expedited();
	SK_CHECK_EQ(sk_call_rcu(&crcu.rh, counted_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&crcu.runs, __ATOMIC_ACQUIRE), 1);
	memset(cb, 0, sizeof(cb));
	for (i = 0; i < 100; i++)
		SK_CHECK_EQ(sk_call_srcu(b, &cb[i].rh, counted_cb), 0);
	for (i = 0; i < 100; i++)
		barrier_settle(b, &cb[i]);
	cookie_b = sk_start_poll_synchronize_srcu(b);
	poll_wait(b, cookie_b, &lost);

	/* A is still where it was. */
	SK_CHECK_EQ(flag_get(&sa.done), 0);
	SK_CHECK_EQ(__atomic_load_n(&ca.runs, __ATOMIC_ACQUIRE), 0);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(a, cookie_a), 0);

	holder_finish(&h);
	sk_test_thread_join(sa.tid);
	SK_CHECK_EQ(flag_get(&sa.done), 1);
	barrier_settle(a, &ca);
	SK_CHECK_EQ(__atomic_load_n(&ca.runs, __ATOMIC_ACQUIRE), 1);
	poll_wait(a, cookie_a, &lost);
	SK_CHECK_EQ(lost, 0);
	domain_free(a);
	domain_free(b);
}

/* CPU time used by the process while it sleeps ms (all threads). */
static long idle_cpu_us(unsigned int ms)
{
	long c0 = cpu_us();

	sk_test_sleep_ms(ms);
	return cpu_us() - c0;
}

/*
 * A domain whose reader is blocked, with work pending, costs no CPU while
 * the process waits: the worker and the updater sleep.  (Library bug seen
 * here: with a synchronize caller asleep on the reader and a callback
 * queued, the worker spins on the domain whose gp_mutex it cannot take.)
 */
static void blocked_domain_with_pending_work_costs_no_cpu(void)
{
	struct sk_srcu *a = domain_new();
	struct counted c1 = { .runs = 0 }, c2 = { .runs = 0 };
	unsigned long cookie, lost = 0;
	struct holder h;
	struct syncer s;
	long used;

	/* The worker waits for the reader (callback and poll pending). */
	holder_start(&h, a, NULL);
	SK_CHECK_EQ(sk_call_srcu(a, &c1.rh, counted_cb), 0);
	cookie = sk_start_poll_synchronize_srcu(a);
	sk_test_sleep_ms(20); /* let the worker reach its sleep */
	used = idle_cpu_us(200);
	fprintf(stderr,
		"  reader blocked, callback + poll pending: %ld us "
		"CPU in 200 ms\n",
		used);
	SK_CHECK_LE(used, 50000);

	/* A synchronize caller asleep on the reader, then a new callback. */
	syncer_start(&s, a, 0);
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(sk_call_srcu(a, &c2.rh, counted_cb), 0);
	sk_test_sleep_ms(20);
	used = idle_cpu_us(200);
	fprintf(stderr,
		"  ... + synchronize caller asleep + callback queued "
		"after it: %ld us CPU in 200 ms\n",
		used);
	SK_CHECK_LE(used, 50000);

	holder_finish(&h);
	sk_test_thread_join(s.tid);
	barrier_settle(a, &c1);
	barrier_settle(a, &c2);
	poll_wait(a, cookie, &lost);
	domain_free(a);
}

static void many_domains_work_and_cost_nothing_idle(void)
{
	enum { N = 2000 };
	struct sk_srcu **d = calloc(N, sizeof(*d));
	struct counted *c = calloc(N, sizeof(*c));
	unsigned long cookie, lost = 0;
	long used;
	int i, idx, idx2;

	for (i = 0; i < N; i++) {
		d[i] = domain_new();
		idx = sk_srcu_read_lock(d[i]);
		if (i > 0) { /* nested across domains */
			idx2 = sk_srcu_read_lock(d[i - 1]);
			sk_srcu_read_unlock(d[i - 1], idx2);
		}
		sk_srcu_read_unlock(d[i], idx);
		if (i % 100 == 0)
			sk_synchronize_srcu(d[i]);
		if (i % 20 == 0)
			SK_CHECK_EQ(sk_call_srcu(d[i], &c[i].rh, counted_cb),
				    0);
	}
	cookie = sk_start_poll_synchronize_srcu(d[N / 2]);
	poll_wait(d[N / 2], cookie, &lost);
	for (i = 0; i < N; i += 20)
		barrier_settle(d[i], &c[i]);
	sk_test_sleep_ms(20);
	used = idle_cpu_us(200);
	fprintf(stderr, "  %d idle domains: %ld us CPU in 200 ms\n", N, used);
	SK_CHECK_LE(used, 50000);
	for (i = 0; i < N; i++) {
		SK_CHECK_EQ(__atomic_load_n(&c[i].runs, __ATOMIC_ACQUIRE),
			    i % 20 == 0);
		domain_free(d[i]);
	}
	SK_CHECK_EQ(lost, 0);
	free(c);
	free(d);
}

#define RUN(fn) SK_RUN_SELECTED(fn)

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);

	RUN(blocked_domain_delays_no_other_domain);
	RUN(blocked_domain_with_pending_work_costs_no_cpu);
	RUN(many_domains_work_and_cost_nothing_idle);
	return sk_test_report();
}
