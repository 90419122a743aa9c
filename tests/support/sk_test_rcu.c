/* SPDX-License-Identifier: MIT */
/*
 * sk_test_rcu.h: RCU statistics, the grace-period counter, a holder
 * thread, a busy reader.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "sk_test_rcu.h"
#include "torture_ops.h"

struct sk_rcu_stats sk_test_rcu_stats(void)
{
	struct sk_rcu_stats s;

	memset(&s, 0, sizeof(s));
	SK_CHECK_EQ(sk_rcu_get_stats(&s), 0);
	return s;
}

unsigned long sk_test_rcu_readers(void)
{
	return sk_test_rcu_stats().readers;
}

unsigned long sk_test_gp_ctr(void)
{
	return sk_atomic_load_acquire(&sk_rcu__gp.ctr);
}

void sk_test_wait_gp_started(unsigned long c0, int *or_flag)
{
	while (sk_test_gp_ctr() == c0 && !(or_flag && LOAD(*or_flag)))
		sched_yield();
}

void *sk_test_holder_main(void *arg)
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

void sk_test_holder_start(struct sk_test_holder *h, int qsbr,
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

void sk_test_holder_release(struct sk_test_holder *h)
{
	STORE(h->go, 1);
	sk_test_thread_join(h->t);
}

struct sk_test_robj *sk_test_robj_new(unsigned long magic)
{
	struct sk_test_robj *p = malloc(sizeof(*p));

	if (!p)
		abort();
	p->val = magic;
	p->next = NULL;
	return p;
}

void *sk_test_busy_reader(void *arg)
{
	struct sk_test_busy *b = arg;
	unsigned long reads = 0, k, v1, v2;
	struct sk_test_robj *p;

	while (!LOAD(b->stop)) {
		sk_rcu_read_lock();
		p = sk_rcu_dereference(b->ptr);
		v1 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		for (k = 0; k < 50; k++)
			sk_cpu_relax();
		v2 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		sk_rcu_read_unlock();
		if (v1 != b->magic || v2 != b->magic)
			INC(b->bad);
		if (++reads % 1024 == 0)
			__atomic_fetch_add(&b->reads, 1024, __ATOMIC_RELAXED);
	}
	return NULL;
}

void sk_test_sync_by(const struct sk_tort_ops *ops, int kind)
{
	unsigned long c;

	switch (kind) {
	case 0:
		ops->sync(NULL);
		break;
	case 1:
		ops->exp_sync(NULL);
		break;
	case 2:
		ops->cond_sync(NULL, ops->get_gp_state(NULL));
		break;
	default:
		c = ops->start_gp_poll(NULL);
		while (!ops->poll_gp_state(NULL, c))
			sched_yield();
	}
}

static void *syncer_main(void *arg)
{
	struct sk_test_syncer *s = arg;

	sk_synchronize_rcu();
	sk_atomic_store_release(&s->done, 1);
	return NULL;
}

void sk_test_syncer_start(struct sk_test_syncer *s)
{
	s->done = 0;
	sk_test_thread_start(&s->t, syncer_main, s);
}

int sk_test_syncer_returned_within(struct sk_test_syncer *s, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (sk_atomic_load_acquire(&s->done))
			return 1;
		sk_test_sleep_ms(1);
	}
	return sk_atomic_load_acquire(&s->done);
}

void sk_test_syncer_join(struct sk_test_syncer *s)
{
	sk_test_thread_join(s->t);
}
