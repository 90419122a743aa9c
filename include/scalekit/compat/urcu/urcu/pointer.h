/* SPDX-License-Identifier: MIT */
/*
 * urcu/pointer.h - liburcu's RCU pointer operations on scalekit
 * (docs/urcu-compat.md).  Written from liburcu's documented API.
 *
 *   rcu_dereference(p)             sk_rcu_dereference(p): p is the
 *                                  pointer itself (an lvalue), as in
 *                                  liburcu's examples
 *   rcu_assign_pointer(p, v)       sk_rcu_assign_pointer(p, v)
 *   rcu_set_pointer(&p, v)         the same, given the pointer's address
 *   rcu_xchg_pointer(&p, v)        sk_rcu_xchg_pointer(): the old value
 *   rcu_cmpxchg_pointer(&p, o, n)  sk_rcu_cmpxchg_pointer(): the value read
 *
 * When liburcu's own headers are installed, its header-only helpers
 * (urcu/compiler.h, urcu/arch.h, urcu/uatomic.h) are included here, as
 * liburcu's pointer header does, so that programs that use caa_container_of
 * or cmm_smp_mb() after including only <urcu.h> still build.  Nothing in
 * this compatibility layer needs them.
 */
#ifndef SCALEKIT_COMPAT_URCU_POINTER_H
#define SCALEKIT_COMPAT_URCU_POINTER_H

#include "scalekit/rcu.h"

#if defined(__has_include) && !defined(SK_URCU_NO_LIBURCU_HELPERS)
#if __has_include(<urcu/compiler.h>) && __has_include(<urcu/arch.h>) && \
	__has_include(<urcu/uatomic.h>)
#include <urcu/compiler.h>
#include <urcu/arch.h>
#include <urcu/uatomic.h>
#endif
#endif

#define rcu_dereference(p)	     sk_rcu_dereference(p)
#define _rcu_dereference(p)	     sk_rcu_dereference(p)
#define rcu_assign_pointer(p, v)     sk_rcu_assign_pointer(p, v)
#define _rcu_assign_pointer(p, v)    sk_rcu_assign_pointer(p, v)
#define rcu_set_pointer(pp, v)	     sk_rcu_assign_pointer(*(pp), v)
#define _rcu_set_pointer(pp, v)	     sk_rcu_assign_pointer(*(pp), v)
#define rcu_xchg_pointer(pp, v)	     sk_rcu_xchg_pointer(pp, v)
#define _rcu_xchg_pointer(pp, v)     sk_rcu_xchg_pointer(pp, v)
#define rcu_cmpxchg_pointer(pp, o, n) sk_rcu_cmpxchg_pointer(pp, o, n)
#define _rcu_cmpxchg_pointer(pp, o, n) sk_rcu_cmpxchg_pointer(pp, o, n)

/* liburcu-bp's prefixed spellings of the same operations. */
#define urcu_bp_dereference(p)		 sk_rcu_dereference(p)
#define urcu_bp_set_pointer(pp, v)	 sk_rcu_assign_pointer(*(pp), v)
#define urcu_bp_xchg_pointer(pp, v)	 sk_rcu_xchg_pointer(pp, v)
#define urcu_bp_cmpxchg_pointer(pp, o, n) sk_rcu_cmpxchg_pointer(pp, o, n)

#endif /* SCALEKIT_COMPAT_URCU_POINTER_H */
