/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_stress.c - rcu.h under load: the stress with poison checks
 * (rcu_stress.h) with general, QSBR and mixed readers, concurrent
 * synchronize callers sharing grace periods, registry churn, and a
 * thousand registered threads.
 *
 * Every stress has a broken twin run with the grace period replaced by a
 * no-op; the twin MUST be caught.
 *
 * CTest runs this program twice: as is, and with SCALEKIT_NO_MEMBARRIER=1.
 *
 * Lost wake-ups: the library's stall watchdog re-scans the readers every
 * stall threshold (default 21 s), which would turn a lost futex wake-up
 * into a slow pass.  main() sets the threshold to a day with
 * sk_rcu_set_stall_ms(), so a lost wake-up hangs and fails by the CTest
 * timeout instead.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

static uint64_t seed;

/* ------------------------------------------------------------------------
 * Stress with poison checks.
 */

static struct sk_stress_config stress_cfg(const char *name, unsigned g,
					  unsigned q, unsigned u)
{
	unsigned slow = sk_test_slow();
	struct sk_stress_config c = {
		.name = name,
		.general_readers = g,
		.qsbr_readers = q,
		.updaters = u,
		.updates = 3000 / slow / (u ? u : 1),
		.qs_every = 8,
		.spin_in = 200,
		.spin_out = 50,
		.quarantine = 16,
		.seed = seed,
	};

	return c;
}

static void stress_expect_clean(struct sk_stress_config c)
{
	struct sk_stress_result r;
	unsigned long base = sk_test_rcu_readers();

	SK_CHECK_EQ(sk_stress_run(&c, &r), 0);
	sk_stress_print(&c, &r);
	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_EQ(r.updates, c.updates * c.updaters);
	if (c.general_readers + c.qsbr_readers + c.churn_threads)
		SK_CHECK_GT(r.reads, 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
}

/*
 * Run c with the busted twin of its ops (grace periods that do not wait;
 * up to 10 seeds): it MUST be caught.
 */
static void stress_until_caught(struct sk_stress_config c)
{
	struct sk_stress_result r;
	struct sk_tort_ops busted;
	int attempt;

	sk_tort_make_busted(c.ops ? c.ops : &sk_tort_mixed_ops, &busted);
	c.ops = &busted;
	c.broken = 1;
	for (attempt = 0; attempt < 10; attempt++) {
		c.seed = seed + (uint64_t)attempt;
		SK_CHECK_EQ(sk_stress_run(&c, &r), 0);
		sk_stress_print(&c, &r);
		if (r.violations)
			break;
	}
	SK_CHECK_GT(r.violations, 0);
}

/* BROKEN twin: the same stress with a no-op grace period must be caught. */
static void stress_expect_caught(struct sk_stress_config c)
{
	c.updates = c.updates / 2 + 1;
	stress_until_caught(c);
}

static void stress_general_readers(void)
{
	stress_expect_clean(stress_cfg("general", 3, 0, 1));
}

static void stress_general_readers_broken_twin_is_caught(void)
{
	stress_expect_caught(stress_cfg("general BROKEN", 3, 0, 1));
}

static void stress_qsbr_readers(void)
{
	stress_expect_clean(stress_cfg("qsbr", 0, 3, 1));
}

static void stress_qsbr_readers_broken_twin_is_caught(void)
{
	stress_expect_caught(stress_cfg("qsbr BROKEN", 0, 3, 1));
}

/*
 * Two updaters and two more threads calling sk_synchronize_rcu(): grace
 * periods overlap with callers arriving in the middle of one, the case
 * where a wrong batching decision skips a needed grace period.
 */
static void stress_mixed_readers_two_updaters(void)
{
	struct sk_stress_config c = stress_cfg("mixed", 2, 2, 2);

	c.sync_threads = 2;
	c.sync_calls = 1000 / sk_test_slow();
	stress_expect_clean(c);
}

static void stress_mixed_readers_broken_twin_is_caught(void)
{
	stress_expect_caught(stress_cfg("mixed BROKEN", 2, 2, 2));
}

/* ------------------------------------------------------------------------
 * Batching: concurrent callers share grace periods.
 */

struct batch {
	int returned; /* callers that returned */
};

static void *batch_caller(void *arg)
{
	struct batch *b = arg;

	sk_synchronize_rcu();
	sk_atomic_fetch_add_seq_cst(&b->returned, 1);
	return NULL;
}

/*
 * N callers arrive while a reader holds the grace period: they need at
 * most two grace periods between them (the one in progress and the next).
 */
static void synchronize_callers_share_grace_periods(void)
{
	enum { N = 8 };
	struct batch b = { 0 };
	struct sk_rcu_stats a, z;
	struct sk_test_holder h;
	pthread_t t[N];
	int i;

	sk_test_holder_start(&h, 0, NULL, NULL);
	a = sk_test_rcu_stats();
	for (i = 0; i < N; i++)
		sk_test_thread_start(&t[i], batch_caller, &b);
	/* All of them inside sk_synchronize_rcu(), the leader asleep. */
	while ((sk_test_rcu_stats().sync_calls - a.sync_calls < N ||
		sk_test_rcu_stats().gp_sleeps == a.gp_sleeps) &&
	       !sk_atomic_load_acquire(&b.returned))
		sk_test_sleep_ms(1);
	sk_test_sleep_ms(20);
	/* None may return while the reader holds its section. */
	SK_CHECK_EQ(sk_atomic_load_acquire(&b.returned), 0);
	sk_test_holder_release(&h);
	for (i = 0; i < N; i++)
		sk_test_thread_join(t[i]);
	z = sk_test_rcu_stats();
	fprintf(stderr, "  %d concurrent callers: %lu grace periods\n", N,
		z.grace_periods - a.grace_periods);
	SK_CHECK_EQ(z.sync_calls - a.sync_calls, N);
	SK_CHECK_GT(z.grace_periods - a.grace_periods, 0);
	SK_CHECK(z.grace_periods - a.grace_periods < N);
}

/*
 * N threads x M calls in a loop, while the poison stress runs (its updater
 * calls sk_synchronize_rcu() too) and a pacer reader makes every grace
 * period last about a millisecond, so that callers do overlap: fewer grace
 * periods than calls, and no reader ever sees poison.
 */
struct pacer {
	int stop;
	int registered;
	unsigned long sections;
};

static void *pacer_fn(void *arg)
{
	struct pacer *p = arg;

	sk_rcu_register_thread();
	sk_atomic_store_release(&p->registered, 1);
	while (!sk_atomic_load_acquire(&p->stop)) {
		sk_rcu_read_lock();
		sk_test_sleep_ms(1);
		sk_rcu_read_unlock();
		p->sections++;
	}
	return NULL;
}

static void synchronize_batching_under_stress(void)
{
	struct sk_stress_config c = stress_cfg("batching", 2, 1, 1);
	unsigned long n = 4, m = 200 / sk_test_slow(), calls, gps;
	struct pacer pc = { 0 };
	struct sk_rcu_stats a, z;
	pthread_t pt;

	c.updates = 1000 / sk_test_slow();
	c.sync_threads = (unsigned)n;
	c.sync_calls = m;
	sk_test_thread_start(&pt, pacer_fn, &pc);
	sk_test_wait_flag(&pc.registered);
	a = sk_test_rcu_stats();
	stress_expect_clean(c);
	sk_atomic_store_release(&pc.stop, 1);
	sk_test_thread_join(pt);
	z = sk_test_rcu_stats();
	calls = z.sync_calls - a.sync_calls;
	gps = z.grace_periods - a.grace_periods;
	fprintf(stderr,
		"  %lu sync calls (%lu x %lu by sync threads, %lu by the "
		"updater), %lu grace periods (%.1f%% of the calls), %lu "
		"futex sleeps, %lu pacer sections\n",
		calls, n, m, c.updates, gps, calls ? 100.0 * gps / calls : 0.0,
		z.gp_sleeps - a.gp_sleeps, pc.sections);
	SK_CHECK_EQ(calls, n * m + c.updates);
	SK_CHECK_GT(gps, 0);
	SK_CHECK(gps < calls);
}

/* ------------------------------------------------------------------------
 * Registry churn: threads register (four ways), read and exit without end
 * while grace periods run.
 */
static void registry_churn(void)
{
	struct sk_stress_config c = stress_cfg("churn", 1, 1, 1);
	struct sk_stress_result r;
	unsigned long base = sk_test_rcu_readers();

	c.churn_threads = 2;
	c.sync_threads = 1;
	c.sync_calls = 500 / sk_test_slow();
	SK_CHECK_EQ(sk_stress_run(&c, &r), 0);
	sk_stress_print(&c, &r);
	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_GT(r.churned, 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
	sk_synchronize_rcu();
}

/* BROKEN twin of the churn: short-lived readers must catch it too. */
static void registry_churn_broken_twin_is_caught(void)
{
	struct sk_stress_config c = stress_cfg("churn BROKEN", 0, 0, 1);

	c.churn_threads = 2;
	c.updates = 20000 / sk_test_slow(); /* long enough for many threads */
	c.spin_in = 2000; /* short-lived readers: widen their windows */
	/* and updates go on while 200 of them run, however fast they are */
	c.min_churned = 200 / sk_test_slow();
	stress_until_caught(c);
}

/* ------------------------------------------------------------------------
 * Many registered threads: 1000 (125 under sanitizers) with 64 KiB stacks.
 * Phase IDLE: they sit registered (four ways) while grace periods run and
 * the object is replaced; one in ten reads (general or QSBR) all along.
 * Phase HOLD: every one of them enters a section (or goes online as QSBR)
 * before a grace period starts; the threads are then let go a slice at a
 * time, and the grace period must not end before the last one has left
 * (with 1000 blockers this is more than the grace period tracks at once).
 * Phase EXIT: they exit, half unregistering explicitly.
 */

enum { MANY_IDLE, MANY_HOLD, MANY_EXIT };

struct many {
	struct sk_stress s;	     /* the object readers check */
	struct sk_stress_config cfg; /* s.cfg */
	struct sk_stress_result res; /* s.res */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int phase;		    /* guarded by lock */
	unsigned long release_upto; /* HOLD: idx below it leave; lock */
	unsigned long ready;	    /* atomic: registered threads */
	unsigned long entered;	    /* atomic: HOLD sections entered */
	unsigned long left;	    /* atomic: HOLD sections about to end */
	unsigned long violations;   /* atomic */
	unsigned long reads;	    /* atomic */
};

struct many_arg {
	struct many *m;
	unsigned long idx;
};

static int many_phase(struct many *m)
{
	int ph;

	pthread_mutex_lock(&m->lock);
	ph = m->phase;
	pthread_mutex_unlock(&m->lock);
	return ph;
}

/*
 * Block until the phase is at least ph and, when idx is not ~0UL and the
 * phase is HOLD, until thread idx is let go.
 */
static void many_wait(struct many *m, int ph, unsigned long idx)
{
	pthread_mutex_lock(&m->lock);
	while (m->phase < ph ||
	       (m->phase == MANY_HOLD && idx != ~0UL && idx >= m->release_upto))
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

static void many_set(struct many *m, int ph, unsigned long upto)
{
	pthread_mutex_lock(&m->lock);
	m->phase = ph;
	m->release_upto = upto;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void *many_fn(void *arg)
{
	struct many *m = ((struct many_arg *)arg)->m;
	unsigned long idx = ((struct many_arg *)arg)->idx;
	struct sk_stress_thread t;
	int qsbr = idx % 20 == 0;

	memset(&t, 0, sizeof(t));
	t.s = &m->s;
	t.rng = idx + 1;
	switch (idx % 4) {
	case 0:
		sk_rcu_register_thread();
		break;
	case 1:
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
		break;
	case 2:
		sk_rcu_thread_online();
		sk_rcu_thread_offline();
		break;
	default:
		sk_rcu_register_thread();
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
		break;
	}
	sk_atomic_fetch_add_seq_cst(&m->ready, 1UL);

	/* IDLE: one in ten reads until the phase changes. */
	if (idx % 10 == 0) {
		while (many_phase(m) == MANY_IDLE) {
			if (qsbr) {
				sk_rcu_thread_online();
				sk_stress_check(&t, sk_rcu_dereference(m->s.gp),
						1);
				t.reads++;
				sk_rcu_quiescent_state();
				sk_rcu_thread_offline();
			} else {
				sk_stress_general_read(&t);
			}
			sk_test_sleep_ms(1);
		}
	}
	many_wait(m, MANY_HOLD, ~0UL);

	/* HOLD: inside a section until let go (blocking on purpose). */
	if (idx % 2)
		sk_rcu_thread_online();
	else
		sk_rcu_read_lock();
	sk_atomic_fetch_add_seq_cst(&m->entered, 1UL);
	many_wait(m, MANY_HOLD, idx);
	sk_atomic_fetch_add_seq_cst(&m->left, 1UL);
	if (idx % 2)
		sk_rcu_thread_offline();
	else
		sk_rcu_read_unlock();

	many_wait(m, MANY_EXIT, 0);
	sk_atomic_fetch_add_seq_cst(&m->violations, t.violations);
	sk_atomic_fetch_add_seq_cst(&m->reads, t.reads);
	/* Half unregister explicitly, the rest at exit. */
	if (idx % 2)
		SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	return NULL;
}

struct many_sync {
	struct many *m;
	unsigned long left_at_return;
	int returned;
};

static void *many_sync_fn(void *arg)
{
	struct many_sync *ms = arg;

	sk_synchronize_rcu();
	ms->left_at_return = sk_atomic_load_acquire(&ms->m->left);
	sk_atomic_store_release(&ms->returned, 1);
	return NULL;
}

/* The shared state of many_registered_threads(), its object published. */
static struct many *many_new(void)
{
	struct many *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	m->cfg.name = "many";
	m->s.cfg = &m->cfg;
	m->s.res = &m->res;
	pthread_mutex_init(&m->s.res_lock, NULL);
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	m->s.gp = malloc(sizeof(*m->s.gp));
	if (!m->s.gp)
		abort();
	sk_stress_obj_init(m->s.gp, 1);
	return m;
}

static void many_free(struct many *m)
{
	free(m->s.gp);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->s.res_lock);
	free(m);
}

/* Start n threads of many_fn() on small stacks; wait until all are in. */
static void many_start(struct many *m, struct many_arg *args, pthread_t *t,
		       unsigned long n)
{
	pthread_attr_t attr;
	unsigned long i;

	pthread_attr_init(&attr);
	/* 64 KiB, or the platform's minimum (128 KiB on aarch64). */
	SK_CHECK_EQ(pthread_attr_setstacksize(&attr, 64 * 1024 < PTHREAD_STACK_MIN
							     ? PTHREAD_STACK_MIN
							     : 64 * 1024),
		    0);
	for (i = 0; i < n; i++) {
		args[i].m = m;
		args[i].idx = i;
		sk_test_thread_start_attr(&t[i], &attr, many_fn, &args[i]);
	}
	pthread_attr_destroy(&attr);
	while (sk_atomic_load_acquire(&m->ready) < n)
		sk_test_sleep_ms(1);
}

/* IDLE: 5 grace periods with the n threads registered and idle. */
static void many_idle_grace_periods(struct many *m, unsigned long expect)
{
	struct sk_rcu_stats a = sk_test_rcu_stats(), z;
	unsigned long k;

	for (k = 0; k < 5; k++) {
		struct sk_stress_obj *old = m->s.gp, *nw = malloc(sizeof(*nw));

		if (!nw)
			abort();
		sk_stress_obj_init(nw, (unsigned long)k + 2);
		sk_rcu_assign_pointer(m->s.gp, nw);
		sk_synchronize_rcu();
		sk_stress_obj_poison(old, 0);
		free(old);
		sk_test_sleep_ms(5);
	}
	z = sk_test_rcu_stats();
	SK_CHECK_EQ(z.grace_periods - a.grace_periods, 5);
	SK_CHECK_EQ(z.readers, expect);
}

/* HOLD: all n inside, then let go a slice at a time; a synchronize call
 * returns only after the last. */
static void many_hold(struct many *m, unsigned long n)
{
	struct many_sync ms = { .m = m };
	unsigned long k, step = n / 10 ? n / 10 : 1;
	pthread_t st;

	many_set(m, MANY_HOLD, 0);
	while (sk_atomic_load_acquire(&m->entered) < n)
		sk_test_sleep_ms(1);
	sk_test_thread_start(&st, many_sync_fn, &ms);
	for (k = 0; k < n; k += step) {
		sk_test_sleep_ms(2);
		SK_CHECK_EQ(sk_atomic_load_acquire(&ms.returned), 0);
		many_set(m, MANY_HOLD, k + step);
	}
	sk_test_thread_join(st);
	SK_CHECK_EQ(ms.left_at_return, n);
}

static void many_registered_threads(void)
{
	unsigned long n = 1000 / sk_test_slow(), i;
	unsigned long base = sk_test_rcu_readers();
	struct many *m = many_new();
	struct many_arg *args = calloc(n, sizeof(*args));
	pthread_t *t = calloc(n, sizeof(*t));

	if (!args || !t)
		abort();
	many_start(m, args, t, n);
	SK_CHECK_EQ(sk_test_rcu_readers(), base + n);
	many_idle_grace_periods(m, base + n);
	many_hold(m, n);

	/* EXIT. */
	many_set(m, MANY_EXIT, 0);
	for (i = 0; i < n; i++)
		sk_test_thread_join(t[i]);
	fprintf(stderr, "  %lu threads, %lu reads by the active ones\n", n,
		m->reads);
	SK_CHECK_EQ(m->violations, 0);
	SK_CHECK_GT(m->reads, 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
	sk_synchronize_rcu();
	many_free(m);
	free(args);
	free(t);
}


int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	/* See the top of the file: a lost wake-up must hang. */
	SK_CHECK_EQ(sk_rcu_set_stall_ms(86400000ul), 0);
	seed = sk_test_seed_init();
	fprintf(stderr, "fence mode: %s\n",
		sk_fence_uses_membarrier() ? "membarrier" : "fallback");

	SK_RUN(stress_general_readers);
	SK_RUN(stress_general_readers_broken_twin_is_caught);
	SK_RUN(stress_qsbr_readers);
	SK_RUN(stress_qsbr_readers_broken_twin_is_caught);
	SK_RUN(stress_mixed_readers_two_updaters);
	SK_RUN(stress_mixed_readers_broken_twin_is_caught);
	SK_RUN(synchronize_callers_share_grace_periods);
	SK_RUN(synchronize_batching_under_stress);
	SK_RUN(registry_churn);
	SK_RUN(registry_churn_broken_twin_is_caught);
	SK_RUN(many_registered_threads);
	return sk_test_report();
}
