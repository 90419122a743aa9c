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
 * struct rcu_head is this layer's own, not liburcu's layout: programs are
 * source compatible, not binary compatible (an object file compiled
 * against liburcu's headers must be rebuilt).  Its func member is the
 * callback, as in liburcu.
 */
#ifndef SCALEKIT_COMPAT_URCU_CALL_RCU_H
#define SCALEKIT_COMPAT_URCU_CALL_RCU_H

#include <pthread.h>
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

/* Embed in the object that call_rcu() is to reclaim. */
struct rcu_head {
	struct sk_rcu_head sk_head_;	   /* private: scalekit's queue entry */
	void (*func)(struct rcu_head *head); /* the callback call_rcu() got */
};

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_CALL_RCU_H */
