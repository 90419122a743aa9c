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
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(fork_with_callbacks_waiting_for_a_reader);
	return sk_test_report();
}
