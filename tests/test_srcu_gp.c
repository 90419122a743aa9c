/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_gp.c - srcu.h: the grace-period guarantee under pressure.
 *
 * - Readers that sleep inside their sections and sections ended by
 *   another thread, for every way of waiting (synchronize, expedited,
 *   poll, call_srcu, get_state), and grace periods that end under
 *   continuous readers.
 * - Domains are independent (a blocked domain delays no other) and cost
 *   nothing idle, also by the hundred.
 * - Concurrent synchronize callers keep the guarantee and share grace
 *   periods, checked by the generation checker of sk_test_srcu.h; its
 *   broken twin, a synchronize that does not wait (the busted twin of
 *   the torture tool's SRCU ops), MUST be caught.
 *
 * No assertion bounds wall-clock time; a sleep only gives a broken library
 * the chance to misbehave before a "not yet" check.  The CPU-time bounds
 * (idle or blocked domains cost no CPU while the process sleeps) are cost
 * bounds read from getrusage().  "test_srcu_gp <name>" runs only the tests
 * whose name contains <name>.
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

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* ---- the guarantee with sleeping readers --------------------------------- */

enum wait_kind { W_SYNC, W_EXPEDITED, W_POLL, W_CALL, W_COND, W_KINDS };

static const char *const wait_names[W_KINDS] = {
	"sk_synchronize_srcu", "sk_synchronize_srcu_expedited",
	"start_poll + poll", "sk_call_srcu", "get_state + poll/synchronize"
};

/* Mailbox for a section handed from one thread to another. */
struct mailbox {
	pthread_mutex_t m;
	pthread_cond_t c;
	int full;
	int idx;
};

struct sleeper {
	struct sk_srcu *d;
	struct mailbox box;
	unsigned int ms;
	int entered;
	int leaving;
	pthread_t a, b;
};

static void *sleeping_reader(void *arg)
{
	struct sleeper *s = arg;
	int idx = sk_srcu_read_lock(s->d);

	flag_set(&s->entered);
	sk_test_sleep_ms(s->ms);
	flag_set(&s->leaving);
	sk_srcu_read_unlock(s->d, idx);
	return NULL;
}

/* Thread A: enters, hands the section to B, exits. */
static void *handoff_locker(void *arg)
{
	struct sleeper *s = arg;
	int idx = sk_srcu_read_lock(s->d);

	pthread_mutex_lock(&s->box.m);
	s->box.idx = idx;
	s->box.full = 1;
	pthread_cond_signal(&s->box.c);
	pthread_mutex_unlock(&s->box.m);
	flag_set(&s->entered);
	return NULL;
}

/* Thread B: takes the section, sleeps, ends it. */
static void *handoff_unlocker(void *arg)
{
	struct sleeper *s = arg;
	int idx;

	pthread_mutex_lock(&s->box.m);
	while (!s->box.full)
		pthread_cond_wait(&s->box.c, &s->box.m);
	idx = s->box.idx;
	pthread_mutex_unlock(&s->box.m);
	sk_test_sleep_ms(s->ms);
	flag_set(&s->leaving);
	sk_srcu_read_unlock(s->d, idx);
	return NULL;
}

/*
 * Wait for a grace period of d by kind; returns what the end of the
 * grace period saw of *leaving (for W_CALL: what the callback saw).
 */
static int wait_gp_and_sample(struct sk_srcu *d, enum wait_kind k, int *leaving,
			      unsigned long *lost)
{
	struct counted c = { .runs = 0, .sample = -1, .watch = leaving };
	unsigned long cookie;

	switch (k) {
	case W_SYNC:
		sk_synchronize_srcu(d);
		break;
	case W_EXPEDITED:
		sk_synchronize_srcu_expedited(d);
		break;
	case W_POLL:
		cookie = sk_start_poll_synchronize_srcu(d);
		poll_wait(d, cookie, lost);
		break;
	case W_CALL:
		SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
		barrier_settle(d, &c);
		return c.sample;
	case W_COND:
		cookie = sk_get_state_synchronize_srcu(d);
		if (!sk_poll_state_synchronize_srcu(d, cookie))
			sk_synchronize_srcu(d);
		break;
	default:
		break;
	}
	return flag_get(leaving);
}

static void grace_period_waits_for_sleeping_reader(void)
{
	unsigned long lost = 0;
	int k, handoff;

	for (handoff = 0; handoff < 2; handoff++) {
		for (k = 0; k < W_KINDS; k++) {
			struct sleeper s;
			int seen;

			memset(&s, 0, sizeof(s));
			s.d = domain_new();
			s.ms = 100;
			pthread_mutex_init(&s.box.m, NULL);
			pthread_cond_init(&s.box.c, NULL);
			if (handoff) {
				sk_test_thread_start(&s.b, handoff_unlocker, &s);
				sk_test_thread_start(&s.a, handoff_locker, &s);
				/* A exits with the section open; B ends it. */
				sk_test_thread_join(s.a);
			} else {
				sk_test_thread_start(&s.a, sleeping_reader, &s);
			}
			flag_wait(&s.entered);
			seen = wait_gp_and_sample(s.d, (enum wait_kind)k,
						  &s.leaving, &lost);
			if (seen != 1)
				fprintf(stderr,
					"  %s returned before the %s "
					"reader left\n",
					wait_names[k],
					handoff ? "hand-off" : "sleeping");
			SK_CHECK_EQ(seen, 1);
			sk_test_thread_join(handoff ? s.b : s.a);
			domain_free(s.d);
		}
	}
	SK_CHECK_EQ(lost, 0);
}

/*
 * Readers that overlap so that some section is always open: every grace
 * period still ends (the flip sends new readers to the other index).
 */
struct overlap {
	struct sk_srcu *d;
	int stop;
	unsigned long sections;
};

static void *overlapping_reader(void *arg)
{
	struct overlap *o = arg;
	uint64_t rng = sk_tsrcu_seed ^ (uintptr_t)&rng;

	while (!flag_get(&o->stop)) {
		int idx = sk_srcu_read_lock(o->d);

		if ((sk_test_rand(&rng) & 15) == 0)
			sk_test_sleep_us(50);
		else
			sk_stress_spin(&rng, 500);
		sk_srcu_read_unlock(o->d, idx);
		__atomic_fetch_add(&o->sections, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void grace_periods_end_under_continuous_readers(void)
{
	struct overlap o = { .d = domain_new() };
	unsigned long i, n = 400 / sk_tsrcu_slow, before;
	pthread_t t[3];
	int k;

	for (k = 0; k < 3; k++)
		sk_test_thread_start(&t[k], overlapping_reader, &o);
	while (__atomic_load_n(&o.sections, __ATOMIC_RELAXED) < 100)
		sk_test_sleep_us(100); /* the readers are running */
	before = __atomic_load_n(&o.sections, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		if (i & 1)
			sk_synchronize_srcu_expedited(o.d);
		else
			sk_synchronize_srcu(o.d);
	}
	flag_set(&o.stop);
	for (k = 0; k < 3; k++)
		sk_test_thread_join(t[k]);
	fprintf(stderr, "  %lu grace periods during %lu sections\n", n,
		__atomic_load_n(&o.sections, __ATOMIC_RELAXED) - before);
	domain_free(o.d);
}

/* ---- domain independence and many domains -------------------------------- */

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

/* ---- concurrent synchronize callers: generation checker ------------------ */

struct gen_run {
	struct gen_dom g; /* g.ops: the SRCU ops, or its busted twin */
	int stop;
	unsigned long calls;
	struct gate go;
};

struct gen_thread {
	struct gen_run *run;
	int r;
	pthread_t tid;
};

static void *gen_reader(void *arg)
{
	struct gen_thread *me = arg;
	uint64_t rng = sk_tsrcu_seed * 31 + (uint64_t)me->r + 1;

	while (!flag_get(&me->run->stop))
		gen_section(&me->run->g, me->r, &rng, 200);
	return NULL;
}

static void *gen_syncer(void *arg)
{
	struct gen_thread *me = arg;
	struct gen_run *run = me->run;
	unsigned long i, n = 300 / sk_tsrcu_slow;

	gate_wait(&run->go);
	for (i = 0; i < n; i++) {
		unsigned long g0 = gen_begin(&run->g);

		/* The grace period gen_check() relies on (none: busted). */
		if ((i + (unsigned long)me->r) % 3 == 0)
			run->g.ops->exp_sync(run->g.ctx);
		else
			run->g.ops->sync(run->g.ctx);
		gen_check(&run->g, g0);
		__atomic_fetch_add(&run->calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static unsigned long gen_run_syncers(int broken, unsigned int nsync)
{
	struct gen_run run;
	struct gen_thread rd[GEN_READERS], sy[8];
	struct sk_tort_ops busted;
	unsigned long v;
	unsigned int i;

	memset(&run, 0, sizeof(run));
	sk_tort_make_busted(&sk_tort_srcu_ops, &busted);
	gen_dom_init(&run.g, broken ? &busted : NULL);
	gate_init(&run.go);
	for (i = 0; i < GEN_READERS; i++) {
		rd[i] = (struct gen_thread){ &run, (int)i, 0 };
		sk_test_thread_start(&rd[i].tid, gen_reader, &rd[i]);
	}
	for (i = 0; i < nsync; i++) {
		sy[i] = (struct gen_thread){ &run, (int)i, 0 };
		sk_test_thread_start(&sy[i].tid, gen_syncer, &sy[i]);
	}
	gen_wait_readers(&run.g, 4 * GEN_READERS);
	gate_open(&run.go);
	for (i = 0; i < nsync; i++)
		sk_test_thread_join(sy[i].tid);
	flag_set(&run.stop);
	for (i = 0; i < GEN_READERS; i++)
		sk_test_thread_join(rd[i].tid);
	v = run.g.violations;
	fprintf(stderr,
		"  %s: %u callers, %lu calls, %lu checks, %lu "
		"violations\n",
		broken ? "BROKEN (no wait)" : "synchronize", nsync, run.calls,
		run.g.checks, v);
	SK_CHECK_EQ(run.calls, nsync * (300 / sk_tsrcu_slow));
	gen_dom_fini(&run.g);
	return v;
}

static void concurrent_synchronize_callers_keep_the_guarantee(void)
{
	SK_CHECK_EQ(gen_run_syncers(0, 6), 0);
	/* BUSTED twin: the same checker must see open pre-existing sections. */
	SK_CHECK_GT(gen_run_syncers(1, 2), 0);
}

/*
 * Concurrent callers share grace periods.  There is no grace-period count
 * in the SRCU API; the cookie of sk_get_state_synchronize_srcu() is
 * "grace periods started + 1" in this implementation, so the difference
 * of two cookies counts the grace periods started in between (an
 * implementation detail the test states here).  N callers all blocked
 * behind one reader need at most two grace periods; without sharing they
 * would need N.
 */
static void concurrent_synchronize_callers_share_grace_periods(void)
{
	enum { N = 8 };
	struct sk_srcu *d = domain_new();
	struct syncer s[N];
	unsigned long before, after;
	struct holder h;
	int i;

	sk_synchronize_srcu(d);
	before = sk_get_state_synchronize_srcu(d);
	holder_start(&h, d, NULL);
	for (i = 0; i < N; i++)
		syncer_start(&s[i], d, i & 1);
	sk_test_sleep_ms(50); /* let them all take their cookie and block */
	for (i = 0; i < N; i++)
		SK_CHECK_EQ(flag_get(&s[i].done), 0);
	holder_finish(&h);
	for (i = 0; i < N; i++)
		sk_test_thread_join(s[i].tid);
	after = sk_get_state_synchronize_srcu(d);
	fprintf(stderr, "  %d concurrent callers: %lu grace periods\n", N,
		after - before);
	SK_CHECK_GT(after - before, 0);
	SK_CHECK_LE(after - before, N / 2);
	domain_free(d);
}

int main(int argc, char **argv)
{
	sk_test_srcu_start(argc, argv);

	/* sleeping and handed-off readers */
	SK_RUN(grace_period_waits_for_sleeping_reader);
	SK_RUN(grace_periods_end_under_continuous_readers);
	/* independence, many domains */
	SK_RUN(blocked_domain_delays_no_other_domain);
	SK_RUN(blocked_domain_with_pending_work_costs_no_cpu);
	SK_RUN(many_domains_work_and_cost_nothing_idle);
	/* concurrent synchronize callers */
	SK_RUN(concurrent_synchronize_callers_keep_the_guarantee);
	SK_RUN(concurrent_synchronize_callers_share_grace_periods);
	return sk_test_report();
}
