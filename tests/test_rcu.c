/* SPDX-License-Identifier: MIT */
/*
 * test_rcu.c - rcu.h: the reader API, registration, QSBR, grace-period
 * semantics, and stress with poison checks (rcu_stress.h).
 *
 * Every concurrency check has a broken twin run through the same checker
 * with the grace period replaced by a no-op; the twin MUST be caught.
 * Misuse that aborts is covered by test_rcu_death.c.
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
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

static uint64_t seed;

static unsigned long readers_now(void)
{
	return sk_test_rcu_stats().readers;
}

/* Wait (yielding) until *flag becomes nonzero. */
static void wait_flag(int *flag)
{
	while (!sk_atomic_load_acquire(flag))
		sk_test_sleep_ms(1);
}

/*
 * The grace periods of the tests (through the torture tool's RCU ops) and
 * of their BROKEN twins (the ops' busted twin: a full barrier, no wait).
 */
static const struct sk_tort_ops *const rcu_ops = &sk_tort_rcu_ops;
static struct sk_tort_ops busted_rcu_ops;

/* ------------------------------------------------------------------------
 * Unit tests.
 */

/* First test to run: nothing is registered yet in this process. */
static void synchronize_with_zero_registered_readers(void)
{
	struct sk_rcu_stats a = sk_test_rcu_stats(), b;

	SK_CHECK_EQ(a.readers, 0);
	sk_synchronize_rcu();
	sk_synchronize_rcu();
	sk_synchronize_rcu();
	b = sk_test_rcu_stats();
	/* Serial callers share nothing: one grace period each. */
	SK_CHECK_EQ(b.grace_periods - a.grace_periods, 3);
	SK_CHECK_EQ(b.sync_calls - a.sync_calls, 3);
	SK_CHECK_EQ(b.gp_sleeps, a.gp_sleeps);
	/* Still nobody registered: synchronize does not register the caller. */
	SK_CHECK_EQ(b.readers, 0);
}

static void *sync_and_exit(void *arg)
{
	int i;

	for (i = 0; i < 25; i++)
		sk_synchronize_rcu();
	return arg;
}

/*
 * sync_calls counts per thread: the calls of threads that have exited
 * still count, exactly.
 */
static void sync_calls_of_exited_threads_count(void)
{
	struct sk_rcu_stats a = sk_test_rcu_stats(), b;
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		sk_test_thread_start(&t[i], sync_and_exit, NULL);
	for (i = 0; i < 4; i++)
		sk_test_thread_join(t[i]);
	sk_synchronize_rcu();
	b = sk_test_rcu_stats();
	SK_CHECK_EQ(b.sync_calls - a.sync_calls, 4 * 25 + 1);
}

static void get_stats_null_is_einval(void)
{
	struct sk_rcu_stats st;

	SK_CHECK_EQ(sk_rcu_get_stats(NULL), -EINVAL);
	memset(&st, 0xff, sizeof(st));
	SK_CHECK_EQ(sk_rcu_get_stats(&st), 0);
	SK_CHECK(st.readers < 1000000);
	SK_CHECK_LE(st.grace_periods, st.sync_calls);
}

static void *nesting_thread(void *arg)
{
	int depth;

	(void)arg;
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	/* The inner unlock does not end the outer section. */
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* Deep nesting (recursive code). */
	for (depth = 0; depth < 1000; depth++)
		sk_rcu_read_lock();
	for (depth = 0; depth < 999; depth++) {
		sk_rcu_read_unlock();
		if (!sk_rcu_read_lock_held())
			break;
	}
	SK_CHECK_EQ(depth, 999);
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* Sections may follow one another; synchronize works in between. */
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	return NULL;
}

static void read_lock_nesting_and_ongoing(void)
{
	pthread_t t;

	sk_test_thread_start(&t, nesting_thread, NULL);
	sk_test_thread_join(t);
}

struct pub {
	unsigned long a, b;
	char name[16];
};

static struct pub *pub_ptr;

static void *pub_writer(void *arg)
{
	unsigned long i, n = (unsigned long)(uintptr_t)arg;

	for (i = 1; i <= n; i++) {
		struct pub *p = malloc(sizeof(*p)), *old;

		if (!p)
			abort();
		p->a = i;
		p->b = ~i;
		snprintf(p->name, sizeof(p->name), "v%lu", i % 10);
		old = pub_ptr;
		sk_rcu_assign_pointer(pub_ptr, p);
		sk_synchronize_rcu();
		free(old);
	}
	return NULL;
}

static void *pub_reader(void *arg)
{
	unsigned long bad = 0, last = 0;

	(void)arg;
	for (;;) {
		struct pub *p;

		sk_rcu_read_lock();
		p = sk_rcu_dereference(pub_ptr);
		/* The initialization is visible through the pointer. */
		if (p && (p->b != ~p->a || p->name[0] != 'v' ||
			  p->name[1] - '0' != (int)(p->a % 10) || p->a < last))
			bad++;
		if (p)
			last = p->a;
		sk_rcu_read_unlock();
		if (last == (unsigned long)(uintptr_t)arg)
			break;
	}
	return (void *)(uintptr_t)bad;
}

static void dereference_and_assign_pointer(void)
{
	int x = 1, y = 2, *ip = NULL, *got;
	struct pub *null_pub = NULL;
	unsigned long n = 3000 / sk_test_slow();
	pthread_t w, r;

	/* Types and values survive the round trip. */
	sk_rcu_assign_pointer(ip, &x);
	got = sk_rcu_dereference(ip);
	SK_CHECK(got == &x);
	SK_CHECK(_Generic(sk_rcu_dereference(ip), int * : 1, default : 0));
	sk_rcu_assign_pointer(ip, &y);
	SK_CHECK_EQ(*sk_rcu_dereference(ip), 2);
	sk_rcu_assign_pointer(ip, NULL);
	SK_CHECK(sk_rcu_dereference(ip) == NULL);
	SK_CHECK(sk_rcu_dereference(null_pub) == NULL);

	/* Publication: a reader never sees an uninitialized object. */
	pub_ptr = NULL;
	sk_test_thread_start(&r, pub_reader, (void *)(uintptr_t)n);
	sk_test_thread_start(&w, pub_writer, (void *)(uintptr_t)n);
	sk_test_thread_join(w);
	SK_CHECK_EQ((uintptr_t)sk_test_thread_join(r), 0);
	free(pub_ptr);
	pub_ptr = NULL;
}

static void *register_thread_fn(void *arg)
{
	unsigned long base = readers_now();

	(void)arg;
	/* Unregistering a thread that never registered. */
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	SK_CHECK_EQ(readers_now(), base);

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(readers_now(), base + 1);
	/* Idempotent. */
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(readers_now(), base + 1);
	/* A read section does not register again. */
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	SK_CHECK_EQ(readers_now(), base + 1);

	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	SK_CHECK_EQ(readers_now(), base);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	SK_CHECK_EQ(readers_now(), base);

	/* Register again after unregistering; then exit registered. */
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(readers_now(), base + 1);
	return NULL;
}

/*
 * Run fn in a thread of its own; once it exited, the registry is as before
 * (the exit handler unregistered it) and nothing is left behind that a
 * grace period would wait for.
 */
static void run_thread_leaving_no_reader(void *(*fn)(void *))
{
	unsigned long base = readers_now();
	pthread_t t;

	sk_test_thread_start(&t, fn, NULL);
	sk_test_thread_join(t);
	SK_CHECK_EQ(readers_now(), base);
	sk_synchronize_rcu();
}

static void register_and_unregister(void)
{
	run_thread_leaving_no_reader(register_thread_fn);
}

struct auto_reg {
	int kind; /* 0: read_lock, 1: QSBR online at exit, 2: QSBR offline */
	unsigned long before, seen; /* registry size before and after */
	int go;
};

static void *auto_reg_fn(void *arg)
{
	struct auto_reg *a = arg;

	a->before = readers_now();
	if (a->kind == 0) {
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
	} else {
		sk_rcu_thread_online();
		sk_rcu_quiescent_state();
		if (a->kind == 2)
			sk_rcu_thread_offline();
	}
	sk_atomic_store_release(&a->seen, readers_now());
	/* Stay alive until the main thread has looked at the registry. */
	wait_flag(&a->go);
	return NULL;
}

/*
 * The first read_lock (or going online) registers the thread, and its
 * exit unregisters it, also when it exits online as a QSBR reader (a later
 * grace period must not wait for it).
 */
static void auto_registration_and_exit(void)
{
	int kind;

	for (kind = 0; kind < 3; kind++) {
		struct auto_reg a = { .kind = kind };
		unsigned long base = readers_now();
		pthread_t t;

		sk_test_thread_start(&t, auto_reg_fn, &a);
		while (!sk_atomic_load_acquire(&a.seen))
			sk_test_sleep_ms(1);
		SK_CHECK_EQ(readers_now(), base + 1);
		sk_atomic_store_release(&a.go, 1);
		sk_test_thread_join(t);
		SK_CHECK_EQ(a.before, base);
		SK_CHECK_EQ(a.seen, base + 1);
		SK_CHECK_EQ(readers_now(), base);
		sk_synchronize_rcu();
	}
}

static void *qsbr_unit_fn(void *arg)
{
	unsigned long base = readers_now();

	(void)arg;
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	sk_rcu_thread_online();
	SK_CHECK_EQ(readers_now(), base + 1);
	SK_CHECK(sk_rcu_read_lock_held());
	/* Online is idempotent. */
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	SK_CHECK(sk_rcu_read_lock_held());
	SK_CHECK_EQ(readers_now(), base + 1);
	sk_rcu_quiescent_state();
	sk_rcu_quiescent_state();
	SK_CHECK(sk_rcu_read_lock_held());
	/* read_lock nests inside online. */
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	/* Still online: quiescent_state is allowed (it aborts otherwise). */
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_quiescent_state();
	/* The QSBR flavor's markers nest and balance (SK_DEBUG: counted). */
	sk_rcu_qsbr_read_lock();
	sk_rcu_qsbr_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_qsbr_read_unlock();
	sk_rcu_qsbr_read_unlock();
	sk_rcu_quiescent_state();
	/* Offline: no longer a reader, but may use read_lock. */
	sk_rcu_thread_offline();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	SK_CHECK_EQ(readers_now(), base + 1);
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* A grace period does not wait for an offline thread. */
	sk_synchronize_rcu();
	sk_rcu_thread_online();
	SK_CHECK(sk_rcu_read_lock_held());
	/* Unregistering an online thread puts it offline first. */
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	SK_CHECK_EQ(readers_now(), base);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	return NULL;
}

static void qsbr_online_offline_quiescent_state(void)
{
	run_thread_leaving_no_reader(qsbr_unit_fn);
}

struct qs_peer {
	int stop;
	unsigned long qs;
};

/* Another online QSBR thread, announcing quiescent states until stopped. */
static void *qs_peer_fn(void *arg)
{
	struct qs_peer *p = arg;

	sk_rcu_thread_online();
	while (!sk_atomic_load_acquire(&p->stop)) {
		sk_rcu_quiescent_state();
		p->qs++;
		sched_yield();
	}
	sk_rcu_thread_offline();
	return NULL;
}

static void *sync_from_online_fn(void *arg)
{
	struct sk_rcu_stats a, b;
	int i;

	(void)arg;
	sk_rcu_thread_online();
	a = sk_test_rcu_stats();
	for (i = 0; i < 20; i++) {
		/* Would wait for itself forever unless it goes offline. */
		sk_synchronize_rcu();
		/* ... and back online after (else quiescent_state aborts). */
		SK_CHECK(sk_rcu_read_lock_held());
		sk_rcu_quiescent_state();
	}
	b = sk_test_rcu_stats();
	SK_CHECK_GT(b.grace_periods - a.grace_periods, 0);
	sk_rcu_thread_offline();
	return NULL;
}

static void synchronize_from_online_qsbr_thread(void)
{
	struct qs_peer peer = { 0 };
	pthread_t t, p;

	/* Alone first, then with another online QSBR reader. */
	sk_test_thread_start(&t, sync_from_online_fn, NULL);
	sk_test_thread_join(t);
	sk_test_thread_start(&p, qs_peer_fn, &peer);
	sk_test_thread_start(&t, sync_from_online_fn, NULL);
	sk_test_thread_join(t);
	sk_atomic_store_release(&peer.stop, 1);
	sk_test_thread_join(p);
}

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
	wait_flag(&h.entered);
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

/*
 * A reader that enters after the grace period started does not hold it
 * back: the grace period ends while that reader is still inside (if it
 * waited for it, this test would hang and fail by the CTest timeout).
 */
struct late {
	int r2_entered, sync_done, r2_inside_at_return;
	int qsbr;
};

static void *late_r2(void *arg)
{
	struct late *l = arg;

	if (l->qsbr)
		sk_rcu_thread_online();
	else
		sk_rcu_read_lock();
	sk_atomic_store_release(&l->r2_entered, 1);
	wait_flag(&l->sync_done);
	if (l->qsbr)
		sk_rcu_thread_offline();
	else
		sk_rcu_read_unlock();
	return NULL;
}

static void *late_sync(void *arg)
{
	struct late *l = arg;

	sk_synchronize_rcu();
	l->r2_inside_at_return = !!sk_atomic_load_acquire(&l->r2_entered);
	sk_atomic_store_release(&l->sync_done, 1);
	return NULL;
}

static void grace_period_ignores_later_readers(void)
{
	int qsbr;

	for (qsbr = 0; qsbr < 2; qsbr++) {
		struct late l = { .qsbr = qsbr };
		unsigned long sleeps0 = sk_test_rcu_stats().gp_sleeps;
		struct sk_test_holder r1;
		pthread_t r2, s;

		sk_test_holder_start(&r1, 0, NULL, NULL);
		sk_test_thread_start(&s, late_sync, &l);
		/* The grace period has started: it sleeps waiting for r1. */
		while (sk_test_rcu_stats().gp_sleeps == sleeps0 &&
		       !sk_atomic_load_acquire(&l.sync_done))
			sk_test_sleep_ms(1);
		if (sk_atomic_load_acquire(&l.sync_done)) {
			SK_T_FAIL("%s", "sk_synchronize_rcu() returned while a "
					"pre-existing reader was inside");
			sk_test_holder_release(&r1);
			sk_test_thread_join(s);
			continue;
		}
		sk_test_thread_start(&r2, late_r2, &l);
		wait_flag(&l.r2_entered);
		sk_test_holder_release(&r1);
		sk_test_thread_join(s);
		sk_test_thread_join(r2);
		SK_CHECK_EQ(l.r2_inside_at_return, 1);
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
	wait_flag(&m->s1_done);
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
	wait_flag(&m.r2_entered);
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
	unsigned long base = readers_now();

	SK_CHECK_EQ(sk_stress_run(&c, &r), 0);
	sk_stress_print(&c, &r);
	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_EQ(r.updates, c.updates * c.updaters);
	if (c.general_readers + c.qsbr_readers + c.churn_threads)
		SK_CHECK_GT(r.reads, 0);
	SK_CHECK_EQ(readers_now(), base);
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
	wait_flag(&pc.registered);
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
	unsigned long base = readers_now();

	c.churn_threads = 2;
	c.sync_threads = 1;
	c.sync_calls = 500 / sk_test_slow();
	SK_CHECK_EQ(sk_stress_run(&c, &r), 0);
	sk_stress_print(&c, &r);
	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_GT(r.churned, 0);
	SK_CHECK_EQ(readers_now(), base);
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
	unsigned long base = readers_now();
	struct many *m = many_new();
	struct many_arg *args = calloc(n, sizeof(*args));
	pthread_t *t = calloc(n, sizeof(*t));

	if (!args || !t)
		abort();
	many_start(m, args, t, n);
	SK_CHECK_EQ(readers_now(), base + n);
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
	SK_CHECK_EQ(readers_now(), base);
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
	sk_tort_make_busted(rcu_ops, &busted_rcu_ops);
	fprintf(stderr, "fence mode: %s\n",
		sk_fence_uses_membarrier() ? "membarrier" : "fallback");

	SK_RUN(synchronize_with_zero_registered_readers);
	SK_RUN(sync_calls_of_exited_threads_count);
	SK_RUN(get_stats_null_is_einval);
	SK_RUN(read_lock_nesting_and_ongoing);
	SK_RUN(dereference_and_assign_pointer);
	SK_RUN(register_and_unregister);
	SK_RUN(auto_registration_and_exit);
	SK_RUN(qsbr_online_offline_quiescent_state);
	SK_RUN(synchronize_from_online_qsbr_thread);
	SK_RUN(grace_period_waits_for_preexisting_readers);
	SK_RUN(grace_period_broken_twin_is_caught);
	SK_RUN(grace_period_ignores_later_readers);
	SK_RUN(grace_period_caller_arriving_mid_gp_waits_for_next);
	SK_RUN(grace_period_mid_gp_broken_twin_is_caught);
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
