/* SPDX-License-Identifier: MIT */
/*
 * RCU helpers shared by the test programs of rcu.h: statistics, the
 * grace-period counter, and a reader thread that holds one section until
 * released.  Include after scalekit/rcu.h.
 */
#ifndef SK_TEST_RCU_H
#define SK_TEST_RCU_H

#include <sched.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test_util.h"

/* sk_rcu_get_stats(), checked to succeed. */
static inline struct sk_rcu_stats sk_test_rcu_stats(void)
{
	struct sk_rcu_stats s;

	memset(&s, 0, sizeof(s));
	SK_CHECK_EQ(sk_rcu_get_stats(&s), 0);
	return s;
}

/* The grace-period counter: it moves when a grace period starts. */
static inline unsigned long sk_test_gp_ctr(void)
{
	return sk_atomic_load_acquire(&sk_rcu__gp.ctr);
}

/*
 * Wait until a grace period has started since the counter read c0, or
 * (when or_flag is given) until *or_flag is set: a broken library that
 * returns early starts none, and must fail the test, not hang it.
 */
static inline void sk_test_wait_gp_started(unsigned long c0, int *or_flag)
{
	while (sk_test_gp_ctr() == c0 && !(or_flag && LOAD(*or_flag)))
		sched_yield();
}

/*
 * A reader thread that holds one read section (general, or QSBR online)
 * until released, and runs a hook inside it just before leaving.
 */
struct sk_test_holder {
	pthread_t t;
	int qsbr; /* hold as an online QSBR thread */
	void (*inside)(struct sk_test_holder *); /* run inside, then leave */
	void *arg;	  /* for inside() */
	int in, go, left; /* entered, released, leaving */
};

/* Thread body of struct sk_test_holder. */
static inline void *sk_test_holder_main(void *arg)
{
	struct sk_test_holder *h = arg;

	if (h->qsbr)
		sk_rcu_thread_online();
	else
		sk_rcu_read_lock();
	STORE(h->in, 1);
	while (!LOAD(h->go))
		sched_yield();
	if (h->inside)
		h->inside(h);
	/* Set before leaving: whoever sees left == 0 saw us inside. */
	STORE(h->left, 1);
	if (h->qsbr)
		sk_rcu_thread_offline();
	else
		sk_rcu_read_unlock();
	return NULL;
}

/*
 * Start h, with the hook inside(h) (may be NULL) and its arg; returns once
 * h is inside its section.
 */
static inline void sk_test_holder_start(struct sk_test_holder *h, int qsbr,
					void (*inside)(struct sk_test_holder *),
					void *arg)
{
	memset(h, 0, sizeof(*h));
	h->qsbr = qsbr;
	h->inside = inside;
	h->arg = arg;
	sk_test_thread_start(&h->t, sk_test_holder_main, h);
	while (!LOAD(h->in))
		sched_yield();
}

/* Let h leave its section and join it. */
static inline void sk_test_holder_release(struct sk_test_holder *h)
{
	STORE(h->go, 1);
	sk_test_thread_join(h->t);
}

#endif /* SK_TEST_RCU_H */
