/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_fork.c - fork() with SRCU callbacks pending.
 *
 * What is proven: forked while a reader thread's section of the domain
 * holds up the grace period that NCB queued callbacks wait for (the
 * worker has taken them as its batch, or they are still queued), the
 * child ends that section for the thread that no longer exists (an SRCU
 * section may end on another thread), then sk_srcu_barrier() returns with
 * every one of the parent's callbacks run once in the child (a count in
 * the child's memory), their heads may be queued again, and the domain is
 * destroyed; in the parent, every callback runs once as well, after its
 * reader leaves.  Before the fix the child dropped them: its count stayed
 * 0.  Under TSan the child does not start the worker (a child of a
 * multithreaded fork cannot start threads there): it is skipped.
 * A child that hangs is killed by alarm() (HANG_S): a hang guard.
 *
 * Also: forked while another thread's sk_srcu_barrier() of an idle domain
 * (no callback, so not on the worker's list) holds the domain's
 * barrier_mutex (a test hook stops it there, after it released
 * gp_mutex), the child's sk_srcu_barrier() of that domain returns, and a
 * callback queued in the child runs.  Before the fix the child slept
 * forever on barrier_mutex: its fork handler re-created the mutex only
 * for the domains on the worker's list (killed by alarm(), BARRIER_HANG_S).
 * Links the testing build (the hook).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/srcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

#define HANG_S 60
#define NCB 1000

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

SK_SRCU_DEFINE_STATIC(dom);

static struct sk_rcu_head heads[NCB];
static int ran; /* callbacks run, in this process */
static int reader_idx, reader_in, reader_go;

static void count_cb(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_fetch_add(&ran, 1, __ATOMIC_RELEASE);
}

/* Holds a section of dom until reader_go. */
static void *reader(void *arg)
{
	(void)arg;
	reader_idx = sk_srcu_read_lock(&dom);
	STORE(reader_in, 1);
	while (!LOAD(reader_go))
		sk_test_sleep_ms(1);
	sk_srcu_read_unlock(&dom, reader_idx);
	return NULL;
}

static void child(void)
{
	/* The reader thread does not exist here: end its section for it. */
	sk_srcu_read_unlock(&dom, reader_idx);
	sk_srcu_barrier(&dom);
	SK_CHECK_EQ(LOAD(ran), NCB);
	/* Their callbacks ran: the heads may be queued again. */
	SK_CHECK_EQ(sk_call_srcu(&dom, &heads[0], count_cb), 0);
	sk_srcu_barrier(&dom);
	SK_CHECK_EQ(LOAD(ran), NCB + 1);
	SK_CHECK_EQ(sk_srcu_destroy(&dom), 0);
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void fork_with_callbacks_waiting_for_a_reader(void)
{
	static struct sk_test_child c;
	pthread_t t;
	int i;

	sk_test_thread_start(&t, reader, NULL);
	while (!LOAD(reader_in))
		sk_test_sleep_ms(1);
	for (i = 0; i < NCB; i++) {
		SK_CHECK_EQ(sk_call_srcu(&dom, &heads[i], count_cb), 0);
		if (i == NCB / 2)
			sk_test_sleep_ms(20); /* the worker takes a batch */
	}
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(LOAD(ran), 0); /* the reader holds them all */
	if (SK_TEST_CHILD_THREADS) {
		sk_test_fork_child(child, HANG_S, 0, &c);
		SK_CHECK_EQ(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1,
			    0);
	} else {
		fprintf(stderr, "  child skipped under TSan\n");
	}
	SK_CHECK_EQ(LOAD(ran), 0); /* the child's runs are its own */
	STORE(reader_go, 1);
	pthread_join(t, NULL);
	sk_srcu_barrier(&dom);
	SK_CHECK_EQ(LOAD(ran), NCB);
}

/* ---- a barrier of an idle domain in progress at fork() ------------------ */

#define BARRIER_HANG_S 20

SK_SRCU_DEFINE_STATIC(idle_dom);

static __thread int hold_here;	      /* this thread's barrier stops */
static int barrier_in, barrier_go;    /* the hook's handshake */
static struct sk_rcu_head child_head;

/* In sk_srcu_barrier(), barrier_mutex held, gp_mutex released. */
static void barrier_hook(struct sk_srcu *d)
{
	if (!hold_here || d != &idle_dom)
		return;
	STORE(barrier_in, 1);
	while (!LOAD(barrier_go))
		sk_test_sleep_ms(1);
}

static void *barrier_holder(void *arg)
{
	(void)arg;
	hold_here = 1;
	sk_srcu_barrier(&idle_dom); /* nothing pending: the hook, return */
	return NULL;
}

static void idle_barrier_child(void)
{
	int before = LOAD(ran);

	sk_srcu_barrier(&idle_dom); /* slept forever before the fix */
	SK_CHECK_EQ(sk_call_srcu(&idle_dom, &child_head, count_cb), 0);
	sk_srcu_barrier(&idle_dom);
	SK_CHECK_EQ(LOAD(ran), before + 1);
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void fork_while_a_barrier_of_an_idle_domain_holds_it(void)
{
	static struct sk_test_child c;
	pthread_t t;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "  child skipped under TSan\n");
		return;
	}
	sk__srcu_test_set_barrier_hook(barrier_hook);
	sk_test_thread_start(&t, barrier_holder, NULL);
	while (!LOAD(barrier_in))
		sk_test_sleep_ms(1);
	sk_test_fork_child(idle_barrier_child, BARRIER_HANG_S, 0, &c);
	SK_CHECK_EQ(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1, 0);
	STORE(barrier_go, 1);
	pthread_join(t, NULL);
	sk__srcu_test_set_barrier_hook(NULL);
	sk_srcu_barrier(&idle_dom);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(fork_with_callbacks_waiting_for_a_reader);
	SK_RUN(fork_while_a_barrier_of_an_idle_domain_holds_it);
	return sk_test_report();
}
