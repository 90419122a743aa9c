/* SPDX-License-Identifier: MIT */
/*
 * urcu/call-rcu.h - liburcu's callback types on scalekit
 * (docs/urcu-compat.md).  Written from liburcu's documented API.
 *
 * The functions (call_rcu(), rcu_barrier(), the call_rcu_data API and the
 * fork hooks) are declared by the flavor headers (<urcu.h>,
 * <urcu-qsbr.h>, <urcu-bp.h>), under the flavor's prefixed names, which
 * the unprefixed names map to.
 *
 * struct rcu_head has liburcu's size and layout: two pointer-sized words,
 * the queue link first, then func, the callback (checked below).  So code
 * compiled against liburcu's headers that embeds an rcu_head (liburcu-cds,
 * whose RCU queue allocates its dummy nodes with one) hands this layer
 * heads of the right size; the link's name differs (liburcu's is a
 * struct cds_wfcq_node next), and a program must not touch it.
 */
#ifndef SCALEKIT_COMPAT_URCU_CALL_RCU_H
#define SCALEKIT_COMPAT_URCU_CALL_RCU_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "scalekit/rcu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque: a callback worker (docs/urcu-compat.md, "call_rcu_data"). */
struct call_rcu_data;

/*
 * Flags of create_call_rcu_data() and create_all_cpu_call_rcu_data().
 * URCU_CALL_RCU_RT (a worker that polls instead of sleeping) is accepted
 * and ignored: scalekit's workers always sleep on a futex.  The other
 * values name states of liburcu's workers; they are defined for programs
 * that test them, and this layer never reports them.
 */
#define URCU_CALL_RCU_RT      (1U << 0)
#define URCU_CALL_RCU_RUNNING (1U << 1)
#define URCU_CALL_RCU_STOP    (1U << 2)
#define URCU_CALL_RCU_STOPPED (1U << 3)
#define URCU_CALL_RCU_PAUSE   (1U << 4)
#define URCU_CALL_RCU_PAUSED  (1U << 5)

/*
 * Embed in the object that call_rcu() is to reclaim.  While the head is
 * queued, both words belong to the layer (compat/urcu/call_rcu.c).
 */
struct rcu_head {
	struct rcu_head *next_;		     /* private: queue link */
	void (*func)(struct rcu_head *head); /* the callback call_rcu() got */
};

/* liburcu's layout: { struct cds_wfcq_node next; void (*func)(...); }. */
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(struct rcu_head) == 2 * sizeof(void *),
	      "struct rcu_head: two words, as liburcu's");
static_assert(offsetof(struct rcu_head, func) == sizeof(void *),
	      "struct rcu_head: func second, as liburcu's");
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && \
	__STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct rcu_head) == 2 * sizeof(void *),
	       "struct rcu_head: two words, as liburcu's");
_Static_assert(offsetof(struct rcu_head, func) == sizeof(void *),
	       "struct rcu_head: func second, as liburcu's");
#endif

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_CALL_RCU_H */
