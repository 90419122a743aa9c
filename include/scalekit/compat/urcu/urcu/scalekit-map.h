/* SPDX-License-Identifier: MIT */
/*
 * urcu/scalekit-map.h - liburcu's unprefixed names (rcu_read_lock,
 * synchronize_rcu, call_rcu ...) as macros to the prefixed names of the
 * flavor SK__URCU_MAP names (urcu_memb, urcu_qsbr or urcu_bp), as
 * liburcu's top-level headers <urcu.h>, <urcu-qsbr.h> and <urcu-bp.h> map
 * them (they define URCU_API_MAP).  One flavor per file: mapping a second
 * one is an error.  Not for direct use.
 *
 * Not mapped, because this layer has no such function (a program that
 * uses one gets a compile error naming it; docs/urcu-compat.md lists
 * them): rcu_reader, rcu_gp, rcu_exit, rcu_defer_exit, rcu_yield_active,
 * rcu_rand_yield, and liburcu's undocumented flavor-suffixed spellings
 * (rcu_read_lock_memb ...).
 */
#ifndef SCALEKIT_COMPAT_URCU_SCALEKIT_MAP_H
#define SCALEKIT_COMPAT_URCU_SCALEKIT_MAP_H

#define SK__URCU_CAT2(a, b) a##_##b
#define SK__URCU_CAT(a, b)  SK__URCU_CAT2(a, b)
#define SK__URCU_M(n)	    SK__URCU_CAT(SK__URCU_MAP, n)
#define SK__URCU_I2(a, b)   _##a##_##b
#define SK__URCU_I1(a, b)   SK__URCU_I2(a, b)
/* The inline fast path of a function: _urcu_memb_read_lock ... */
#define SK__URCU_I(n)	    SK__URCU_I1(SK__URCU_MAP, n)

#define rcu_read_lock		      SK__URCU_M(read_lock)
#define rcu_read_unlock		      SK__URCU_M(read_unlock)
#define rcu_read_ongoing	      SK__URCU_M(read_ongoing)
#define _rcu_read_lock		      SK__URCU_I(read_lock)
#define _rcu_read_unlock	      SK__URCU_I(read_unlock)
#define _rcu_read_ongoing	      SK__URCU_I(read_ongoing)
#define rcu_quiescent_state	      SK__URCU_M(quiescent_state)
#define _rcu_quiescent_state	      SK__URCU_I(quiescent_state)
#define rcu_thread_offline	      SK__URCU_M(thread_offline)
#define rcu_thread_online	      SK__URCU_M(thread_online)
#define rcu_register_thread	      SK__URCU_M(register_thread)
#define rcu_unregister_thread	      SK__URCU_M(unregister_thread)
#define rcu_init		      SK__URCU_M(init)
#define synchronize_rcu		      SK__URCU_M(synchronize_rcu)
#define call_rcu		      SK__URCU_M(call_rcu)
#define rcu_barrier		      SK__URCU_M(barrier)
#define create_call_rcu_data	      SK__URCU_M(create_call_rcu_data)
#define call_rcu_data_free	      SK__URCU_M(call_rcu_data_free)
#define get_default_call_rcu_data     SK__URCU_M(get_default_call_rcu_data)
#define get_cpu_call_rcu_data	      SK__URCU_M(get_cpu_call_rcu_data)
#define get_thread_call_rcu_data      SK__URCU_M(get_thread_call_rcu_data)
#define get_call_rcu_data	      SK__URCU_M(get_call_rcu_data)
#define get_call_rcu_thread	      SK__URCU_M(get_call_rcu_thread)
#define set_thread_call_rcu_data      SK__URCU_M(set_thread_call_rcu_data)
#define set_cpu_call_rcu_data	      SK__URCU_M(set_cpu_call_rcu_data)
#define create_all_cpu_call_rcu_data  SK__URCU_M(create_all_cpu_call_rcu_data)
#define free_all_cpu_call_rcu_data    SK__URCU_M(free_all_cpu_call_rcu_data)
#define call_rcu_before_fork	      SK__URCU_M(call_rcu_before_fork)
#define call_rcu_after_fork_parent    SK__URCU_M(call_rcu_after_fork_parent)
#define call_rcu_after_fork_child     SK__URCU_M(call_rcu_after_fork_child)
#define defer_rcu		      SK__URCU_M(defer_rcu)
#define rcu_defer_register_thread     SK__URCU_M(defer_register_thread)
#define rcu_defer_unregister_thread   SK__URCU_M(defer_unregister_thread)
#define rcu_defer_barrier	      SK__URCU_M(defer_barrier)
#define rcu_defer_barrier_thread      SK__URCU_M(defer_barrier_thread)
#define start_poll_synchronize_rcu    SK__URCU_M(start_poll_synchronize_rcu)
#define poll_state_synchronize_rcu    SK__URCU_M(poll_state_synchronize_rcu)
#define rcu_flavor		      SK__URCU_M(flavor)
#define urcu_register_rculfhash_atfork SK__URCU_M(register_rculfhash_atfork)
#define urcu_unregister_rculfhash_atfork \
	SK__URCU_M(unregister_rculfhash_atfork)

#endif /* SCALEKIT_COMPAT_URCU_SCALEKIT_MAP_H */
