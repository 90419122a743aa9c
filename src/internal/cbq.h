/* SPDX-License-Identifier: MIT */
/*
 * Callback queues shared by RCU (src/rcu_cb.c) and SRCU (src/srcu_cb.c): a
 * wait-free multi-producer, single-consumer list of struct sk_rcu_head
 * with a sentinel, and the common rules for queueing and running a head.
 *
 * Labels placed here, the legend of the queue's CB-* labels (users name
 * them; the other CB-* labels are in internal/rcu_cb.h):
 *   CB-C1 (producer, xchg)    - publishes the node as the tail; a full
 *                               barrier (the caller's earlier accesses
 *                               happen before the callback; the request
 *                               of a worker kick, WK-K2 in src/worker.c).
 *   CB-C2 (producer, release) - links the node after its predecessor;
 *                               pairs with the consumer's acquire CB-C2'
 *                               in sk__wfq_next() / sk__wfq_take().
 *   CB-C2' (consumer, acquire) - see CB-C2.
 * Litmus tests (litmus/, see docs/litmus.md): CB-C1 - SB+xchg+mb.litmus;
 * CB-C2/CB-C2' - MP+rel+acq.litmus.
 */
#ifndef SCALEKIT_INTERNAL_CBQ_H
#define SCALEKIT_INTERNAL_CBQ_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include "internal/util.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SK__CB_VALGRIND 1
#endif
#endif

/* Nonzero when the process runs under valgrind (src/rcu_cb.c, at load). */
extern int sk__cb_on_valgrind;

/*
 * The double-queue check reads head->state_ before anything initialised
 * it (heads need no initialisation).  Under valgrind the word is marked
 * defined first, so that memcheck does not report the user's head as
 * uninitialised.  Outside valgrind this is a load and a branch (the
 * client request itself would cost about 1 ns per call).  Without
 * valgrind's header at build time: nothing.
 */
static inline void sk__cb_state_defined(struct sk_rcu_head *head)
{
#ifdef SK__CB_VALGRIND
	if (SK_UNLIKELY(sk__cb_on_valgrind))
		(void)VALGRIND_MAKE_MEM_DEFINED(&head->state_,
						sizeof(head->state_));
#else
	(void)head;
#endif
}

/*
 * head->state_, for the double-queue check (every build): the queued mark
 * from sk__cb_prepare() until just before the callback runs, SK__CB_DONE
 * (or anything else) otherwise.  The mark mixes in the head's address, so
 * that a head that was never queued (uninitialised memory) or a copy of a
 * queued head made elsewhere (a struct assignment) does not read as
 * queued.  A fork child keeps the parent's pending heads queued (and runs
 * them), so the mark stays valid there.
 */
#define SK__CB_QUEUED ((unsigned long)0x5ca1ec0de0c0ffeeULL)
#define SK__CB_DONE   ((unsigned long)0x5ca1ec0de0d0e5edULL)

static inline unsigned long sk__cb_queued_mark(const struct sk_rcu_head *head)
{
	return SK__CB_QUEUED ^ (unsigned long)(uintptr_t)head;
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

/* The queue: the tail, then the sentinel head. */
struct sk__wfq {
	struct sk_rcu_head *tail; /* last node, or &head when empty */
	struct sk_rcu_head head;  /* sentinel: head.next_ is the first */
};

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
	/* CB-C1: publish h as the tail; full barrier. */
	prev = sk_atomic_xchg_seq_cst(&q->tail, h);
	/* CB-C2: link h after prev; pairs with CB-C2'. */
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
	/* CB-C2': a producer that swapped the tail links within two
	 * instructions. */
	while (!(f = sk_atomic_load_acquire(&q->head.next_)))
		sk_cpu_relax();
	sk_atomic_store_relaxed(&q->head.next_, (struct sk_rcu_head *)NULL);
	*first = f;
	/* Producers now append after the sentinel again. */
	*last = sk_atomic_xchg_seq_cst(&q->tail, &q->head);
	return 1;
}

/* The node after h in a taken list ending at last (NULL after last). */
static inline struct sk_rcu_head *sk__wfq_next(struct sk_rcu_head *h,
					       struct sk_rcu_head *last)
{
	struct sk_rcu_head *next;

	if (h == last)
		return NULL;
	/* CB-C2': pairs with CB-C2; the producer may still be linking. */
	while (!(next = sk_atomic_load_acquire(&h->next_)))
		sk_cpu_relax();
	return next;
}

/*
 * fork() child only (one thread, nothing runs concurrently): make q hold
 * the detached run first..last (first NULL: none), then q's own nodes, in
 * that order, leaving out skip (a barrier marker of a waiter that does
 * not exist in the child).  A push that another thread had begun and not
 * finished at the fork (CB-C1 made, CB-C2 not) breaks its chain there:
 * the nodes from that point on are lost to the child (the parent runs
 * them).  Returns the number of nodes kept.
 */
static inline unsigned long sk__wfq_fork_rebuild(struct sk__wfq *q,
						 struct sk_rcu_head *first,
						 struct sk_rcu_head *last,
						 const struct sk_rcu_head *skip)
{
	struct sk_rcu_head *qlast = sk_atomic_load_relaxed(&q->tail);
	struct sk_rcu_head *from[2] = { first, NULL }, *to[2] = { last, qlast };
	struct sk_rcu_head *tail = &q->head, *h, *next;
	unsigned long kept = 0;
	int run;

	if (qlast != &q->head)
		from[1] = sk_atomic_load_relaxed(&q->head.next_);
	for (run = 0; run < 2; run++) {
		for (h = from[run]; h; h = next) {
			/* Read before tail's link below may change h's. */
			next = h == to[run] ? NULL
					    : sk_atomic_load_relaxed(&h->next_);
			if (h != skip) {
				sk_atomic_store_relaxed(&tail->next_, h);
				tail = h;
				kept++;
			}
		}
	}
	sk_atomic_store_relaxed(&tail->next_, (struct sk_rcu_head *)NULL);
	sk_atomic_store_relaxed(&q->tail, tail);
	return kept;
}

/*
 * Check and mark a head about to be queued with fn (fn may encode an
 * SK_FREE_RCU offset).  Returns 0, -EINVAL for NULL arguments, or -EBUSY
 * when the head is queued already (every build): nothing in the head
 * changes then, so the queue it sits in stays intact, and the second
 * request is dropped.  A detected double queue corrupts nothing, so by
 * the error rule (docs/CONTRIBUTING.md) it is returned, never printed.
 */
static inline int sk__cb_prepare(struct sk_rcu_head *head,
				 void (*fn)(struct sk_rcu_head *))
{
	unsigned long mark;

	if (!head || !fn)
		return -EINVAL;
	mark = sk__cb_queued_mark(head);
	sk__cb_state_defined(head);
	/*
	 * Relaxed: a caller that queues the head again after its callback
	 * ran learnt that from the callback (or sk_rcu_barrier()), which
	 * orders the DONE store of sk__cb_invoke() before this load.
	 */
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&head->state_) == mark))
		return -EBUSY;
	sk_atomic_store_relaxed(&head->state_, mark);
	head->func_ = fn;
	return 0;
}

/* Run one callback (or free an SK_FREE_RCU object). */
static inline void sk__cb_invoke(struct sk_rcu_head *h)
{
	void (*fn)(struct sk_rcu_head *) = h->func_;

	/* Not queued from here on: fn may queue h again. */
	sk_atomic_store_relaxed(&h->state_, SK__CB_DONE);
	if (sk__cb_is_free_fn(fn))
		free((char *)h - ((uintptr_t)fn - 1));
	else
		fn(h);
}

#endif /* SCALEKIT_INTERNAL_CBQ_H */
