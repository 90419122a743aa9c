/* SPDX-License-Identifier: MIT */
/*
 * urcu/urcu-memb.h - liburcu's memb flavor (its default) on scalekit
 * (docs/urcu-compat.md).  Written from liburcu's documented API.
 *
 * The urcu_memb_* names are declared here; the unprefixed liburcu names
 * (rcu_read_lock, synchronize_rcu ...) map to them when the program
 * includes <urcu.h> (which defines URCU_API_MAP), not when it includes
 * this file directly: as in liburcu.
 *
 *   urcu_memb_read_lock/unlock      sk_rcu_read_lock()/sk_rcu_read_unlock(),
 *                                   inline (out of line too, for pointers)
 *   urcu_memb_read_ongoing          sk_rcu_read_lock_held()
 *   urcu_memb_register_thread       sk_rcu_register_thread(); optional in
 *                                   scalekit (the first read lock does
 *                                   it); out of memory: message, abort
 *   urcu_memb_unregister_thread     sk_rcu_unregister_thread()
 *   urcu_memb_synchronize_rcu       sk_synchronize_rcu()
 *   urcu_memb_quiescent_state, _thread_offline, _thread_online
 *                                   do nothing (as in liburcu)
 *   urcu_memb_init                  does nothing: scalekit initialises
 *                                   itself when it loads
 * call_rcu, defer_rcu, the call_rcu_data API, polling, fork hooks and
 * the flavor table: see urcu/scalekit-flavor.h and docs/urcu-compat.md.
 */
#ifndef SCALEKIT_COMPAT_URCU_MEMB_H
#define SCALEKIT_COMPAT_URCU_MEMB_H

#include <urcu/scalekit-flavor.h>

#ifdef __cplusplus
extern "C" {
#endif

SK__URCU_DECLARE(urcu_memb);
void urcu_memb_unregister_thread(void);
void urcu_memb_init(void);
SK__URCU_GENERAL_READER(urcu_memb)

#ifndef SK__URCU_BUILD
#define urcu_memb_read_lock    _urcu_memb_read_lock
#define urcu_memb_read_unlock  _urcu_memb_read_unlock
#define urcu_memb_read_ongoing _urcu_memb_read_ongoing
#endif

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_MEMB_H */

/* Outside the include guard: <urcu.h> may come after <urcu/urcu-memb.h>. */
#if defined(URCU_API_MAP) && !defined(SK__URCU_MAP)
#define SK__URCU_MAP urcu_memb
#define SK__URCU_MAP_ID 1
#include <urcu/scalekit-map.h>
#elif defined(URCU_API_MAP) && SK__URCU_MAP_ID != 1
#error "<urcu.h> (memb) after another flavor's header in one file: one flavor's names per file (use the urcu_memb_ prefixed names with <urcu/urcu-memb.h>)"
#endif
