/* SPDX-License-Identifier: MIT */
/*
 * urcu/urcu-bp.h - liburcu's bulletproof (bp) flavor on scalekit
 * (docs/urcu-compat.md).  Written from liburcu's documented API.
 *
 * scalekit's own readers are "bulletproof": sk_rcu_read_lock() registers
 * a thread on first use and the thread is unregistered when it exits.  So
 * this flavor is the memb flavor without registration:
 *
 *   urcu_bp_read_lock/unlock        sk_rcu_read_lock()/sk_rcu_read_unlock()
 *   urcu_bp_read_ongoing            sk_rcu_read_lock_held()
 *   urcu_bp_register_thread, urcu_bp_unregister_thread, urcu_bp_init
 *                                   do nothing
 *   urcu_bp_synchronize_rcu         sk_synchronize_rcu()
 *   urcu_bp_before_fork, urcu_bp_after_fork_parent,
 *   urcu_bp_after_fork_child        do nothing: scalekit's own fork
 *                                   handlers keep its registry right
 *
 * Unprefixed names: with <urcu-bp.h> (URCU_API_MAP), as in liburcu.
 */
#ifndef SCALEKIT_COMPAT_URCU_BP_H
#define SCALEKIT_COMPAT_URCU_BP_H

#include <urcu/scalekit-flavor.h>

#ifdef __cplusplus
extern "C" {
#endif

SK__URCU_DECLARE(urcu_bp);
void urcu_bp_before_fork(void);
void urcu_bp_after_fork_parent(void);
void urcu_bp_after_fork_child(void);
static inline void urcu_bp_unregister_thread(void) {}
static inline void urcu_bp_init(void) {}
SK__URCU_GENERAL_READER(urcu_bp)

#ifndef SK__URCU_BUILD
#define urcu_bp_read_lock    _urcu_bp_read_lock
#define urcu_bp_read_unlock  _urcu_bp_read_unlock
#define urcu_bp_read_ongoing _urcu_bp_read_ongoing
#endif

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_BP_H */

#if defined(URCU_API_MAP) && !defined(SK__URCU_MAP)
#define SK__URCU_MAP urcu_bp
#define SK__URCU_MAP_ID 3
#include <urcu/scalekit-map.h>
#define rcu_bp_before_fork	  urcu_bp_before_fork
#define rcu_bp_after_fork_parent urcu_bp_after_fork_parent
#define rcu_bp_after_fork_child  urcu_bp_after_fork_child
#elif defined(URCU_API_MAP) && SK__URCU_MAP_ID != 3
#error "<urcu-bp.h> after another flavor's header in one file: one flavor's names per file (use the urcu_bp_ prefixed names with <urcu/urcu-bp.h>)"
#endif
