/* SPDX-License-Identifier: MIT */
/*
 * urcu/scalekit-flavor.h - what the three flavor headers of scalekit's
 * liburcu compatibility layer share (docs/urcu-compat.md).  Not for
 * direct use: include <urcu.h>, <urcu-qsbr.h> or <urcu-bp.h>.
 *
 * Every flavor maps onto scalekit's one RCU domain (scalekit/rcu.h): a
 * grace period of any flavor (synchronize_rcu(), call_rcu(), defer_rcu(),
 * the polling API) waits for the readers of all three flavors.
 *
 * SK__URCU_DECLARE(f) declares the functions that every flavor f (urcu_memb,
 * urcu_qsbr, urcu_bp) has, out of line in libscalekit-urcu; liburcu's
 * unprefixed names are macros to them (urcu/scalekit-map.h).
 */
#ifndef SCALEKIT_COMPAT_URCU_SCALEKIT_FLAVOR_H
#define SCALEKIT_COMPAT_URCU_SCALEKIT_FLAVOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include <urcu/pointer.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/urcu-poll.h>

#define SK__URCU_DECLARE(f)                                                   \
	void f##_read_lock(void);                                             \
	void f##_read_unlock(void);                                           \
	int f##_read_ongoing(void);                                           \
	void f##_register_thread(void);                                       \
	void f##_synchronize_rcu(void);                                       \
	void f##_call_rcu(struct rcu_head *head,                              \
			  void (*func)(struct rcu_head *head));               \
	void f##_barrier(void);                                               \
	struct call_rcu_data *f##_create_call_rcu_data(unsigned long flags,   \
						       int cpu_affinity);     \
	void f##_call_rcu_data_free(struct call_rcu_data *crdp);              \
	struct call_rcu_data *f##_get_default_call_rcu_data(void);            \
	struct call_rcu_data *f##_get_cpu_call_rcu_data(int cpu);             \
	struct call_rcu_data *f##_get_thread_call_rcu_data(void);             \
	struct call_rcu_data *f##_get_call_rcu_data(void);                    \
	pthread_t f##_get_call_rcu_thread(struct call_rcu_data *crdp);        \
	void f##_set_thread_call_rcu_data(struct call_rcu_data *crdp);        \
	int f##_set_cpu_call_rcu_data(int cpu, struct call_rcu_data *crdp);   \
	int f##_create_all_cpu_call_rcu_data(unsigned long flags);            \
	void f##_free_all_cpu_call_rcu_data(void);                            \
	void f##_call_rcu_before_fork(void);                                  \
	void f##_call_rcu_after_fork_parent(void);                            \
	void f##_call_rcu_after_fork_child(void);                             \
	void f##_defer_rcu(void (*fct)(void *p), void *p);                    \
	int f##_defer_register_thread(void);                                  \
	void f##_defer_unregister_thread(void);                               \
	void f##_defer_barrier(void);                                         \
	void f##_defer_barrier_thread(void);                                  \
	struct urcu_gp_poll_state f##_start_poll_synchronize_rcu(void);       \
	bool f##_poll_state_synchronize_rcu(struct urcu_gp_poll_state state); \
	void f##_register_rculfhash_atfork(struct urcu_atfork *atfork);       \
	void f##_unregister_rculfhash_atfork(struct urcu_atfork *atfork);     \
	extern const struct rcu_flavor_struct f##_flavor

/*
 * The inline read side of a flavor whose readers are scalekit's general
 * readers (memb, bp): lock and unlock are sk_rcu_read_lock() and
 * sk_rcu_read_unlock(); quiescent states and offline/online mean nothing
 * to such readers and do nothing, as in liburcu.
 */
#define SK__URCU_GENERAL_READER(f)                                            \
	static inline void _##f##_read_lock(void) { sk_rcu_read_lock(); }     \
	static inline void _##f##_read_unlock(void) { sk_rcu_read_unlock(); } \
	static inline int _##f##_read_ongoing(void)                           \
	{                                                                     \
		return sk_rcu_read_lock_held();                               \
	}                                                                     \
	static inline void _##f##_quiescent_state(void) {}                    \
	static inline void f##_quiescent_state(void) {}                       \
	static inline void f##_thread_offline(void) {}                        \
	static inline void f##_thread_online(void) {}

#endif /* SCALEKIT_COMPAT_URCU_SCALEKIT_FLAVOR_H */
