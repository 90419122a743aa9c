/* SPDX-License-Identifier: MIT */
/*
 * An expedited request reaches a grace period that is about to sleep on
 * its readers (issue 11, hardening item f).
 *
 * A normal grace period that has polled a blocking reader long enough
 * sleeps on the futex unless an expedited caller waits; it read that
 * count before publishing futex = -1, and an expedited caller wakes a
 * leader only where it finds futex == -1.  A request between the two
 * found 0, woke nobody, and the leader slept through it (until the reader
 * left or the next stall report).  Linked against scalekit_testing, whose
 * hooks put the request exactly there: the leader, about to sleep, lets
 * an expedited caller make its request and waits until it has.  The
 * leader must then poll, not sleep: the grace-period sleep count must not
 * move while the reader holds it up.  Before the fix it moved at once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

/*
 * How long the reader holds the grace period up once the request is in:
 * the leader had long gone to sleep by then before the fix.  Not a bound
 * on anything: a leader slower than this only makes the test pass.
 */
#define HOLD_MS 300

/* A hang (the leader never reaching its sleep point) ends the test here. */
#define HANG_S 60

static int go_expedite, asked, fired;

static void hook(int where)
{
	if (where == SK__RCU_HOOK_EXPEDITE_ASKED) {
		STORE(asked, 1);
		return;
	}
	/* The leader, about to sleep: once, let the request in first. */
	if (LOAD(fired))
		return;
	STORE(fired, 1);
	STORE(go_expedite, 1);
	while (!LOAD(asked))
		sched_yield();
}

static void *normal_gp(void *arg)
{
	(void)arg;
	sk_synchronize_rcu();
	return NULL;
}

static void *expedited_gp(void *arg)
{
	(void)arg;
	while (!LOAD(go_expedite))
		sched_yield();
	sk_synchronize_rcu_expedited();
	return NULL;
}

static void request_before_sleep_keeps_leader_polling(void)
{
	struct sk_test_holder rd;
	pthread_t n, e;
	unsigned long sleeps0;
	int ms;

	alarm(HANG_S);
	sk__rcu_test_set_hook(hook);
	sk_test_holder_start(&rd, 0, NULL, NULL);
	sleeps0 = sk_test_rcu_stats().gp_sleeps;
	sk_test_thread_start(&e, expedited_gp, NULL);
	sk_test_thread_start(&n, normal_gp, NULL);
	while (!LOAD(asked))
		sched_yield();
	for (ms = 0; ms < HOLD_MS; ms++) {
		if (sk_test_rcu_stats().gp_sleeps != sleeps0)
			break;
		sk_test_sleep_ms(1);
	}
	/* The leader polled for the expedited caller, never slept. */
	SK_CHECK_EQ(sk_test_rcu_stats().gp_sleeps, sleeps0);
	sk_test_holder_release(&rd);
	sk_test_thread_join(n);
	sk_test_thread_join(e);
	sk__rcu_test_set_hook(NULL);
	alarm(0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(request_before_sleep_keeps_leader_polling);
	return sk_test_report();
}
