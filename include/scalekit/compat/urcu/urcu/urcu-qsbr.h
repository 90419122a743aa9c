/* SPDX-License-Identifier: MIT */
/*
 * urcu/urcu-qsbr.h - liburcu's QSBR flavor on scalekit
 * (docs/urcu-compat.md).  Written from liburcu's documented API.
 *
 *   urcu_qsbr_register_thread       registers the thread and puts it
 *                                   online (sk_rcu_thread_online()), as
 *                                   liburcu-qsbr's registration does;
 *                                   out of memory: message, abort
 *   urcu_qsbr_unregister_thread     offline, then sk_rcu_unregister_thread()
 *   urcu_qsbr_read_lock/unlock      sk_rcu_qsbr_read_lock()/_unlock():
 *                                   nothing, unless SK_DEBUG >= 1 where
 *                                   they count nesting (misuse checks)
 *   urcu_qsbr_read_ongoing          sk_rcu_read_lock_held(): nonzero while
 *                                   the thread is online (as liburcu's,
 *                                   which tests the online state), and in
 *                                   a read section of an offline thread
 *   urcu_qsbr_quiescent_state       sk_rcu_quiescent_state(), inline
 *   urcu_qsbr_thread_offline        sk_rcu_thread_offline(); nothing when
 *                                   the thread is offline already
 *   urcu_qsbr_thread_online         sk_rcu_thread_online()
 *   urcu_qsbr_synchronize_rcu       sk_synchronize_rcu(): an online caller
 *                                   goes offline for the wait
 *
 * Unprefixed names: with <urcu-qsbr.h> (URCU_API_MAP), as in liburcu.
 */
#ifndef SCALEKIT_COMPAT_URCU_QSBR_H
#define SCALEKIT_COMPAT_URCU_QSBR_H

#include <urcu/scalekit-flavor.h>

#ifdef __cplusplus
extern "C" {
#endif

SK__URCU_DECLARE(urcu_qsbr);
void urcu_qsbr_unregister_thread(void);
void urcu_qsbr_quiescent_state(void);
void urcu_qsbr_thread_offline(void);
void urcu_qsbr_thread_online(void);

static inline void _urcu_qsbr_read_lock(void) { sk_rcu_qsbr_read_lock(); }
static inline void _urcu_qsbr_read_unlock(void) { sk_rcu_qsbr_read_unlock(); }
static inline int _urcu_qsbr_read_ongoing(void)
{
	return sk_rcu_read_lock_held();
}
static inline void _urcu_qsbr_quiescent_state(void)
{
	sk_rcu_quiescent_state();
}

#ifndef SK__URCU_BUILD
#define urcu_qsbr_read_lock	  _urcu_qsbr_read_lock
#define urcu_qsbr_read_unlock	  _urcu_qsbr_read_unlock
#define urcu_qsbr_read_ongoing	  _urcu_qsbr_read_ongoing
#define urcu_qsbr_quiescent_state _urcu_qsbr_quiescent_state
#endif

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_QSBR_H */

#if defined(URCU_API_MAP) && !defined(SK__URCU_MAP)
#define SK__URCU_MAP urcu_qsbr
#define SK__URCU_MAP_ID 2
#include <urcu/scalekit-map.h>
#elif defined(URCU_API_MAP) && SK__URCU_MAP_ID != 2
#error "<urcu-qsbr.h> after another flavor's header in one file: one flavor's names per file (use the urcu_qsbr_ prefixed names with <urcu/urcu-qsbr.h>)"
#endif
