/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_registry.c - grace periods scan the registry of reader threads
 * (chunks of 64 slots, src/internal/rcu_state.h) while threads register,
 * unregister and exit.
 *
 * What is proven (real threads): grace periods wait for every reader
 * while threads register, unregister and exit all along (slots freed and
 * taken again, a second chunk in use, a thread's exit destructor
 * unregistering it): readers that check an object inside their sections
 * never see it poisoned by an updater after a grace period.  Broken twin
 * SK__RCU_BUSTED_SCAN_SKIP (the scan of every chunk leaves out the
 * highest slot that blocks it) lets them see it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* ---- grace periods while threads come and go ------------------------- */

#define LIVE 0x11bef00dUL
#define DEAD 0xdeadUL
#define NOBJ 4096 /* objects in the ring: reused NOBJ grace periods later */
#define NIDLE 70  /* idle threads: the first chunk full, a second one used */
#define NREAD 3	  /* reader threads, each registering and leaving again */

struct obj {
	unsigned long magic;
};

static struct {
	struct obj ring[NOBJ];
	struct obj *cur;
	int stop, idle_go, idle_up;
	unsigned long seen_dead, sections;
} g;

static void *idle_thread(void *arg)
{
	(void)arg;
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	INC(g.idle_up);
	while (!LOAD(g.idle_go))
		sk_test_sleep_ms(1);
	return NULL; /* exits registered: the exit destructor unregisters */
}

/* One read section that checks the object a while. */
static void read_once(uint64_t *rng)
{
	struct obj *p;
	unsigned long spins = sk_test_rand(rng) % 2000, i;

	sk_rcu_read_lock();
	p = sk_rcu_dereference(g.cur);
	for (i = 0; i <= spins; i++) {
		if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != LIVE) {
			INC(g.seen_dead);
			break;
		}
	}
	if (!(sk_test_rand(rng) % 64))
		sched_yield(); /* now and then, preempted inside */
	if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != LIVE)
		INC(g.seen_dead);
	sk_rcu_read_unlock();
	INC(g.sections);
}

/*
 * Registers, reads a few sections, unregisters (or exits registered, every
 * third round: the destructor unregisters), again and again.
 */
static void *churn_reader(void *arg)
{
	uint64_t rng = sk_t_seed * 31 + (uintptr_t)arg * 0x9e3779b9UL;
	int round, k, n;

	rng += (uint64_t)sk_test_gettid() << 20; /* a new stream per thread */
	for (round = 0; !LOAD(g.stop); round++) {
		SK_CHECK_EQ(sk_rcu_register_thread(), 0);
		n = 1 + (int)(sk_test_rand(&rng) % 50);
		for (k = 0; k < n; k++)
			read_once(&rng);
		if (round % 3 == 2)
			return NULL; /* exit while registered */
		SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	}
	return NULL;
}

/* Keeps NREAD churning readers running, a new thread for each that exits. */
static void *reader_pool(void *arg)
{
	pthread_t t[NREAD];
	int i;

	(void)arg;
	for (i = 0; i < NREAD; i++)
		sk_test_thread_start(&t[i], churn_reader,
				     (void *)(uintptr_t)(i + 1));
	while (!LOAD(g.stop)) {
		for (i = 0; i < NREAD && !LOAD(g.stop); i++) {
			sk_test_thread_join(t[i]);
			sk_test_thread_start(&t[i], churn_reader,
					     (void *)(uintptr_t)(i + 1));
		}
	}
	for (i = 0; i < NREAD; i++)
		sk_test_thread_join(t[i]);
	return NULL;
}

/* Returns how many times a reader saw a poisoned object. */
static unsigned long churn_round(int busted, unsigned long gps)
{
	pthread_t idle[NIDLE], pool;
	unsigned long i, dead;
	int k;

	g.stop = g.idle_go = g.idle_up = 0;
	g.seen_dead = g.sections = 0;
	for (i = 0; i < NOBJ; i++)
		g.ring[i].magic = LIVE;
	sk_rcu_assign_pointer(g.cur, &g.ring[0]);
	for (k = 0; k < NIDLE; k++)
		sk_test_thread_start(&idle[k], idle_thread, NULL);
	while (LOAD(g.idle_up) < NIDLE)
		sk_test_sleep_ms(1);
	sk__rcu_set_busted(busted);
	sk_test_thread_start(&pool, reader_pool, NULL);
	for (i = 1; i <= gps; i++) {
		struct obj *next = &g.ring[i % NOBJ], *old;

		__atomic_store_n(&next->magic, LIVE, __ATOMIC_RELAXED);
		old = sk_rcu_xchg_pointer(&g.cur, next);
		sk_synchronize_rcu();
		/* After the grace period: no reader may still hold it. */
		__atomic_store_n(&old->magic, DEAD, __ATOMIC_RELAXED);
		if (busted && LOAD(g.seen_dead))
			break;
		if (!(i % 64))
			sched_yield(); /* let the readers run */
	}
	STORE(g.stop, 1);
	sk_test_thread_join(pool);
	sk__rcu_set_busted(0);
	STORE(g.idle_go, 1);
	for (k = 0; k < NIDLE; k++)
		sk_test_thread_join(idle[k]);
	dead = LOAD(g.seen_dead);
	fprintf(stderr, "    %lu grace periods, %lu sections, %lu saw a "
		"poisoned object\n", i < gps ? i : gps, LOAD(g.sections), dead);
	return dead;
}

static void gp_waits_while_threads_come_and_go(void)
{
	SK_CHECK_EQ(churn_round(0, 100000 / sk_test_slow()), 0);
}

static void busted_scan_skip_is_caught(void)
{
	SK_CHECK_GT(churn_round(SK__RCU_BUSTED_SCAN_SKIP,
				200000 / sk_test_slow()),
		    0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	sk_test_deadline("test_rcu_registry", 240);
	SK_RUN(gp_waits_while_threads_come_and_go);
	SK_RUN(busted_scan_skip_is_caught);
	return sk_test_report();
}
