/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_sync.c - rcu.h: grace-period semantics of sk_synchronize_rcu()
 * with real threads: it waits for every reader that entered before it
 * (general, nested, QSBR), not for later ones, and a caller arriving in
 * the middle of a grace period waits for the next one, also among a crowd
 * of idle registered threads.
 *
 * Every check has a broken twin run through the same checker with the
 * grace period replaced by the torture ops' busted one (a full barrier,
 * no wait); the twin MUST be caught.
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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "torture_ops.h"

/*
 * The grace periods of the tests (through the torture tool's RCU ops) and
 * of their BROKEN twins (the ops' busted twin: a full barrier, no wait).
 */
static const struct sk_tort_ops *const rcu_ops = &sk_tort_rcu_ops;
static struct sk_tort_ops busted_rcu_ops;

/* ------------------------------------------------------------------------
 * Grace-period semantics: a reader that entered before synchronize began
 * holds it back.  The holder enters, signals, sleeps ~50 ms, waits until
 * the grace period sleeps on the futex (so the wake-up path is used),
 * records "leaving" and leaves.  synchronize must return after "leaving".
 * Both sides check: the caller looks at "leaving" when synchronize returns,
 * the holder looks at "returned" before it leaves.
 */

enum hold_kind {
	HOLD_GENERAL,	   /* read_lock ... read_unlock */
	HOLD_NESTED,	   /* the outer section of two holds it */
	HOLD_QSBR_QS,	   /* online, ends with sk_rcu_quiescent_state() */
	HOLD_QSBR_OFFLINE, /* online, ends with sk_rcu_thread_offline() */
	HOLD_KINDS
};

static const char *const hold_name[] = {
	"general",
	"nested",
	"qsbr quiescent_state",
	"qsbr offline",
};

struct hold {
	enum hold_kind kind;
	unsigned long sleeps_base;
	int entered, leaving, returned, returned_inside;
};

static void *holder_fn(void *arg)
{
	struct hold *h = arg;

	switch (h->kind) {
	case HOLD_GENERAL:
		sk_rcu_read_lock();
		break;
	case HOLD_NESTED:
		sk_rcu_read_lock();
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
		break;
	default:
		sk_rcu_thread_online();
		break;
	}
	sk_atomic_store_release(&h->entered, 1);
	sk_test_sleep_ms(50);
	/* A correct grace period cannot return here; a broken one can. */
	while (sk_test_rcu_stats().gp_sleeps == h->sleeps_base &&
	       !sk_atomic_load_acquire(&h->returned))
		sk_test_sleep_ms(1);
	h->returned_inside = sk_atomic_load_acquire(&h->returned);
	sk_atomic_store_release(&h->leaving, 1);
	switch (h->kind) {
	case HOLD_GENERAL:
	case HOLD_NESTED:
		sk_rcu_read_unlock();
		break;
	case HOLD_QSBR_QS:
		sk_rcu_quiescent_state();
		sk_rcu_thread_offline();
		break;
	default:
		sk_rcu_thread_offline();
		break;
	}
	return NULL;
}

/* Returns 1 when ops' sync() returned while the holder was still inside. */
static int hold_run(enum hold_kind kind, const struct sk_tort_ops *ops)
{
	struct hold h = { .kind = kind };
	int early;
	pthread_t t;

	h.sleeps_base = sk_test_rcu_stats().gp_sleeps;
	sk_test_thread_start(&t, holder_fn, &h);
	sk_test_wait_flag(&h.entered);
	ops->sync(NULL);
	early = !sk_atomic_load_acquire(&h.leaving);
	sk_atomic_store_release(&h.returned, 1);
	sk_test_thread_join(t);
	return early || h.returned_inside;
}

static void grace_period_waits_for_preexisting_readers(void)
{
	int kind;

	for (kind = 0; kind < HOLD_KINDS; kind++) {
		unsigned long sleeps = sk_test_rcu_stats().gp_sleeps;

		fprintf(stderr, "  holder: %s\n", hold_name[kind]);
		SK_CHECK_EQ(hold_run((enum hold_kind)kind, rcu_ops), 0);
		/* It slept on the futex and the holder's exit woke it. */
		SK_CHECK_GT(sk_test_rcu_stats().gp_sleeps - sleeps, 0);
	}
}

/* BROKEN twin: without a grace period the same checker must object. */
static void grace_period_broken_twin_is_caught(void)
{
	int kind, attempt, caught;

	for (kind = 0; kind < HOLD_KINDS; kind++) {
		caught = 0;
		for (attempt = 0; attempt < 20 && !caught; attempt++)
			caught = hold_run((enum hold_kind)kind,
					  &busted_rcu_ops);
		if (!caught)
			SK_T_FAIL("broken twin not caught for holder %s",
				  hold_name[kind]);
	}
}

/* Thread body: sk_synchronize_rcu(), then set *(int *)done. */
static void *late_sync(void *done)
{
	sk_synchronize_rcu();
	sk_atomic_store_release((int *)done, 1);
	return NULL;
}

/*
 * A reader that enters after the grace period started does not hold it
 * back: the grace period ends while that reader is still inside (if it
 * waited for it, this test would hang and fail by the CTest timeout).
 */
static void grace_period_ignores_later_readers(void)
{
	int qsbr;

	for (qsbr = 0; qsbr < 2; qsbr++) {
		int sync_done = 0;
		unsigned long sleeps0 = sk_test_rcu_stats().gp_sleeps;
		struct sk_test_holder r1, r2;
		pthread_t s;

		sk_test_holder_start(&r1, 0, NULL, NULL);
		sk_test_thread_start(&s, late_sync, &sync_done);
		/* The grace period has started: it sleeps waiting for r1. */
		while (sk_test_rcu_stats().gp_sleeps == sleeps0 &&
		       !sk_atomic_load_acquire(&sync_done))
			sk_test_sleep_ms(1);
		if (sk_atomic_load_acquire(&sync_done)) {
			SK_T_FAIL("%s", "sk_synchronize_rcu() returned while a "
					"pre-existing reader was inside");
			sk_test_holder_release(&r1);
			sk_test_thread_join(s);
			continue;
		}
		/* r2 enters (general or QSBR online) after the start. */
		sk_test_holder_start(&r2, qsbr, NULL, NULL);
		sk_test_holder_release(&r1);
		sk_test_thread_join(s);
		/* The grace period ended with r2 still inside. */
		SK_CHECK_EQ(LOAD(r2.left), 0);
		sk_test_holder_release(&r2);
	}
}

/*
 * A caller that arrives while a grace period is in progress needs the next
 * one: the one in progress may have scanned the readers already.
 *   r1 holds grace period c (started by s1); r2 enters after c started (c
 *   does not wait for it); s2 calls synchronize during c; r1 leaves, c
 *   completes, s1 returns.  s2 must still wait for r2.
 * The BROKEN twin replaces s2's grace period by the busted one.
 */
struct midgp {
	const struct sk_tort_ops *ops; /* s2's grace period */
	unsigned long cookie; /* polled cookie while s1's grace period runs */
	int s1_done;
	int r2_entered, r2_leaving, r2_saw_return;
	int s2_returned, s2_early;
};

static void *midgp_s1(void *arg)
{
	struct midgp *m = arg;

	sk_synchronize_rcu();
	sk_atomic_store_release(&m->s1_done, 1);
	return NULL;
}

static void *midgp_r2(void *arg)
{
	struct midgp *m = arg;

	sk_rcu_read_lock();
	sk_atomic_store_release(&m->r2_entered, 1);
	sk_test_wait_flag(&m->s1_done);
	/* Give s2 time to return if it wrongly took c as its grace period. */
	sk_test_sleep_ms(50);
	/* Wait until the next grace period (s2's) has started. */
	while (sk_get_state_synchronize_rcu() == m->cookie &&
	       !sk_atomic_load_acquire(&m->s2_returned))
		sk_test_sleep_ms(1);
	m->r2_saw_return = sk_atomic_load_acquire(&m->s2_returned);
	sk_atomic_store_release(&m->r2_leaving, 1);
	sk_rcu_read_unlock();
	return NULL;
}

static void *midgp_s2(void *arg)
{
	struct midgp *m = arg;

	m->ops->sync(NULL);
	m->s2_early = !sk_atomic_load_acquire(&m->r2_leaving);
	sk_atomic_store_release(&m->s2_returned, 1);
	return NULL;
}

/* Returns 1 when s2 returned while r2 was inside; -1 on a setup failure. */
static int midgp_run(const struct sk_tort_ops *ops)
{
	struct midgp m = { .ops = ops };
	struct sk_rcu_stats a = sk_test_rcu_stats();
	struct sk_test_holder r1;
	pthread_t s1, r2, s2;
	int ret = 0;

	sk_test_holder_start(&r1, 0, NULL, NULL);
	sk_test_thread_start(&s1, midgp_s1, &m);
	/* c has started and waits for r1. */
	while (sk_test_rcu_stats().gp_sleeps == a.gp_sleeps &&
	       !sk_atomic_load_acquire(&m.s1_done))
		sk_test_sleep_ms(1);
	if (sk_atomic_load_acquire(&m.s1_done))
		ret = -1; /* s1 did not wait for r1: reported elsewhere */
	m.cookie = sk_get_state_synchronize_rcu();
	sk_test_thread_start(&r2, midgp_r2, &m);
	sk_test_wait_flag(&m.r2_entered);
	sk_test_thread_start(&s2, midgp_s2, &m);
	/* s2 has entered sk_synchronize_rcu() (for the real one). */
	if (!ops->busted)
		while (sk_test_rcu_stats().sync_calls - a.sync_calls < 2)
			sk_test_sleep_ms(1);
	sk_test_sleep_ms(10);
	sk_test_holder_release(&r1);
	sk_test_thread_join(s1);
	sk_test_thread_join(s2);
	sk_test_thread_join(r2);
	if (ret == 0)
		ret = m.s2_early || m.r2_saw_return;
	return ret;
}

static void grace_period_caller_arriving_mid_gp_waits_for_next(void)
{
	int i;

	for (i = 0; i < 3; i++)
		SK_CHECK_EQ(midgp_run(rcu_ops), 0);
}

static void grace_period_mid_gp_broken_twin_is_caught(void)
{
	int attempt, caught = 0;

	for (attempt = 0; attempt < 20 && caught != 1; attempt++)
		caught = midgp_run(&busted_rcu_ops);
	SK_CHECK_EQ(caught, 1);
}


/* ------------------------------------------------------------------------
 * A crowd of idle registered threads (blocked, outside any section) fills
 * several registry chunks of 64 slots: the scan loads a whole chunk's
 * words before it looks at any slot (src/rcu_gp.c, scan_chunk()), so the
 * holder must still hold the grace period back from the slot after the
 * crowd (the highest owned one) and from a hole freed inside a full chunk.
 */

#define CROWD 150 /* three chunks, the last one partly owned */

struct idler {
	pthread_t t;
	int reg, leave;
};

static void *idler_fn(void *arg)
{
	struct idler *d = arg;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	sk_atomic_store_release(&d->reg, 1);
	sk_test_wait_flag(&d->leave);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	return NULL;
}

static void idler_stop(struct idler *d)
{
	sk_atomic_store_release(&d->leave, 1);
	sk_test_thread_join(d->t);
}

static void grace_period_waits_among_idle_threads(void)
{
	static struct idler crowd[CROWD];
	int i, attempt, caught = 0;

	/* One at a time: the crowd takes the lowest free slots, in order. */
	for (i = 0; i < CROWD; i++) {
		sk_test_thread_start(&crowd[i].t, idler_fn, &crowd[i]);
		sk_test_wait_flag(&crowd[i].reg);
	}
	SK_CHECK_GT(sk_test_rcu_readers(), CROWD - 1);
	/* The holder registers above the crowd. */
	SK_CHECK_EQ(hold_run(HOLD_GENERAL, rcu_ops), 0);
	SK_CHECK_EQ(hold_run(HOLD_QSBR_QS, rcu_ops), 0);
	/* A hole in the middle of a full chunk: the holder takes it. */
	idler_stop(&crowd[CROWD / 2]);
	SK_CHECK_EQ(hold_run(HOLD_GENERAL, rcu_ops), 0);
	/* BROKEN twin, same crowd: must be caught. */
	for (attempt = 0; attempt < 20 && !caught; attempt++)
		caught = hold_run(HOLD_GENERAL, &busted_rcu_ops);
	SK_CHECK_EQ(caught, 1);
	for (i = 0; i < CROWD; i++)
		if (i != CROWD / 2)
			idler_stop(&crowd[i]);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	/* See the top of the file: a lost wake-up must hang. */
	SK_CHECK_EQ(sk_rcu_set_stall_ms(86400000ul), 0);
	sk_tort_make_busted(rcu_ops, &busted_rcu_ops);
	fprintf(stderr, "fence mode: %s\n",
		sk_fence_uses_membarrier() ? "membarrier" : "fallback");

	SK_RUN(grace_period_waits_for_preexisting_readers);
	SK_RUN(grace_period_broken_twin_is_caught);
	SK_RUN(grace_period_ignores_later_readers);
	SK_RUN(grace_period_caller_arriving_mid_gp_waits_for_next);
	SK_RUN(grace_period_mid_gp_broken_twin_is_caught);
	SK_RUN(grace_period_waits_among_idle_threads);
	return sk_test_report();
}
