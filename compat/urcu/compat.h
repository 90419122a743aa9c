/* SPDX-License-Identifier: MIT */
/*
 * compat/urcu/compat.h - what the sources of libscalekit-urcu share.
 *
 * The library implements liburcu's flavor functions on scalekit's RCU
 * domain (docs/urcu-compat.md).  Most of them are the same for the three
 * flavors: SK__URCU_ALIAS3() gives one definition the three prefixed
 * names (urcu_memb_x, urcu_qsbr_x, urcu_bp_x), as aliases.
 */
#ifndef SCALEKIT_COMPAT_URCU_COMPAT_H
#define SCALEKIT_COMPAT_URCU_COMPAT_H

/* The real (out of line) prefixed functions, not the inline redirects. */
#define SK__URCU_BUILD 1

#include <urcu/urcu-bp.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>

/* name of each flavor is an alias of the static function target. */
#define SK__URCU_ALIAS3(name, target)                                    \
	__typeof__(urcu_memb_##name) urcu_memb_##name                    \
		__attribute__((alias(#target)));                         \
	__typeof__(urcu_qsbr_##name) urcu_qsbr_##name                    \
		__attribute__((alias(#target)));                         \
	__typeof__(urcu_bp_##name) urcu_bp_##name                        \
		__attribute__((alias(#target)))

/* Print "scalekit-urcu: <message>" and abort (misuse, or no memory). */
__attribute__((noreturn, format(printf, 1, 2), visibility("hidden")))
void sk__urcu_die(const char *fmt, ...);

/*
 * Put an online QSBR caller offline around a wait that a grace period
 * must be able to finish; returns whether it was online.  A caller inside
 * a read section is reported (message, abort): it would wait for itself.
 */
__attribute__((visibility("hidden"))) int sk__urcu_wait_enter(void);
__attribute__((visibility("hidden"))) void sk__urcu_wait_exit(int was_online);

/*
 * Nonzero once the program used the QSBR flavor (a QSBR registration,
 * rcu_thread_online() or call_rcu()): call_rcu() batches then run on an
 * online thread (carrier_cb() in call_rcu.c).  Set once, never cleared.
 */
__attribute__((visibility("hidden"))) extern int sk__urcu_qsbr_used;

static inline void sk__urcu_note_qsbr(void)
{
	/*
	 * Relaxed: a flag, read by carrier_cb(); what orders it before a
	 * batch that needs it is said there.  Loaded first so that the
	 * common case (set already) writes no shared line.
	 */
	if (!sk_atomic_load_relaxed(&sk__urcu_qsbr_used))
		sk_atomic_store_relaxed(&sk__urcu_qsbr_used, 1);
}

#endif /* SCALEKIT_COMPAT_URCU_COMPAT_H */
