/* SPDX-License-Identifier: MIT */
/*
 * Callback queues shared by RCU (src/rcu_cb.c) and SRCU (src/srcu.c): a
 * wait-free multi-producer, single-consumer list of struct sk_rcu_head
 * with a sentinel, and the common rules for queueing and running a head.
 *
 * Barrier pairs:
 *   C1 (producer, xchg)    - publishes the node as the tail; a full barrier
 *                            (the caller's earlier accesses happen before
 *                            the callback; store buffering against a
 *                            consumer that announces it sleeps).
 *   C2 (producer, release) - links the node after its predecessor; pairs
 *                            with the consumer's acquire C2' in
 *                            sk__wfq_next() / sk__wfq_take().
 */
#ifndef SCALEKIT_INTERNAL_CBQ_H
#define SCALEKIT_INTERNAL_CBQ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include "internal/util.h"

/*
 * head->state_ values, for the double-queue check of SK_DEBUG builds.  A
 * release build never reads state_ (a user's head need not be initialised
 * before its first sk_call_rcu()).  The queued mark includes the fork
 * generation: a fork child bumps it, so the parent's pending heads, which
 * the child drops, read as not queued there without being touched.
 */
#define SK__CB_QUEUED 0x5ca1ec0de0c0ffeeUL
#define SK__CB_DONE   0x5ca1ec0de0d0e5edUL
extern unsigned long sk__cb_fork_gen;

static inline unsigned long sk__cb_queued_mark(void)
{
	return SK__CB_QUEUED + sk__cb_fork_gen;
}

/*
 * func_ values 1..SK__CB_FREE_OFFSET_MAX are SK_FREE_RCU offsets plus one,
 * not functions (offset 0 must not encode as NULL).
 */
#define SK__CB_FREE_OFFSET_MAX 4096u

static inline void (*sk__cb_free_fn(size_t offset))(struct sk_rcu_head *)
{
	return (void (*)(struct sk_rcu_head *))(uintptr_t)(offset + 1);
}

static inline int sk__cb_is_free_fn(void (*fn)(struct sk_rcu_head *))
{
	return (uintptr_t)fn - 1 < SK__CB_FREE_OFFSET_MAX;
}

/* struct sk__wfq (the queue) is declared in scalekit/rcu.h. */

static inline void sk__wfq_init(struct sk__wfq *q)
{
	q->head.next_ = NULL;
	q->tail = &q->head;
}

static inline int sk__wfq_empty(struct sk__wfq *q)
{
	return sk_atomic_load_acquire(&q->tail) == &q->head;
}

/* Append h.  Wait-free: one exchange and one store.  Any thread. */
static inline void sk__wfq_push(struct sk__wfq *q, struct sk_rcu_head *h)
{
	struct sk_rcu_head *prev;

	sk_atomic_store_relaxed(&h->next_, (struct sk_rcu_head *)NULL);
	/* C1: publish h as the tail; full barrier. */
	prev = sk_atomic_xchg(&q->tail, h);
	/* C2: link h after prev; pairs with C2'. */
	sk_atomic_store_release(&prev->next_, h);
}

/*
 * Take every node: *first..*last in queue order.  Returns 0 when empty.
 * Consumer only.
 */
static inline int sk__wfq_take(struct sk__wfq *q, struct sk_rcu_head **first,
			       struct sk_rcu_head **last)
{
	struct sk_rcu_head *f;

	if (sk__wfq_empty(q))
		return 0;
	/* C2': a producer that swapped the tail links within two instructions. */
	while (!(f = sk_atomic_load_acquire(&q->head.next_)))
		sk_cpu_relax();
	sk_atomic_store_relaxed(&q->head.next_, (struct sk_rcu_head *)NULL);
	*first = f;
	/* Producers now append after the sentinel again. */
	*last = sk_atomic_xchg(&q->tail, &q->head);
	return 1;
}

/* The node after h in a taken list ending at last (NULL after last). */
static inline struct sk_rcu_head *sk__wfq_next(struct sk_rcu_head *h,
					       struct sk_rcu_head *last)
{
	struct sk_rcu_head *next;

	if (h == last)
		return NULL;
	/* C2': pairs with C2; the producer may still be linking. */
	while (!(next = sk_atomic_load_acquire(&h->next_)))
		sk_cpu_relax();
	return next;
}

/*
 * Check and mark a head about to be queued with fn (fn may encode an
 * SK_FREE_RCU offset).  Returns 0, -EINVAL for NULL arguments, or, in
 * SK_DEBUG builds, -EBUSY (with a message naming api) when the head is
 * queued already.
 */
static inline int sk__cb_prepare(struct sk_rcu_head *head,
				 void (*fn)(struct sk_rcu_head *),
				 const char *api)
{
	if (!head || !fn)
		return -EINVAL;
#if SK_DEBUG
	if (head->state_ == sk__cb_queued_mark()) {
		fprintf(stderr,
			"scalekit: thread %ld: %s on rcu_head %p that is "
			"already queued and has not run yet; the second "
			"request is dropped\n",
			sk__gettid(), api, (void *)head);
		return -EBUSY;
	}
	head->state_ = sk__cb_queued_mark();
#else
	(void)api;
#endif
	head->func_ = fn;
	return 0;
}

/* Run one callback (or free an SK_FREE_RCU object). */
static inline void sk__cb_invoke(struct sk_rcu_head *h)
{
	void (*fn)(struct sk_rcu_head *) = h->func_;

#if SK_DEBUG
	h->state_ = SK__CB_DONE;
#endif
	if (sk__cb_is_free_fn(fn))
		free((char *)h - ((uintptr_t)fn - 1));
	else
		fn(h);
}

#endif /* SCALEKIT_INTERNAL_CBQ_H */
