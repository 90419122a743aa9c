/* SPDX-License-Identifier: MIT */
/*
 * RCU: the polled grace-period API (sk_get_state_synchronize_rcu(),
 * sk_poll_state_synchronize_rcu(), sk_cond_synchronize_rcu()), above the
 * grace-period engine (rcu_gp.c, whose handshake and stall report are in
 * rcu_handshake.c).  The algorithm and the module's overview:
 * src/internal/rcu.h.
 *
 * Barrier pairs placed here [partner's file]:
 *   The polled API's full barrier after an observed completion orders
 *   the caller's frees after RCU-G2 [rcu_gp.c].
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include "internal/rcu.h"
#include "internal/rcu_state.h"

unsigned long sk_get_state_synchronize_rcu(void)
{
	return sk__rcu_snap();
}

int sk_poll_state_synchronize_rcu(unsigned long cookie)
{
	if (!sk__rcu_done(cookie))
		return 0;
	/* Later frees after the observed completion (pairs with RCU-G2). */
	sk_smp_mb();
	return 1;
}

void sk_cond_synchronize_rcu(unsigned long cookie)
{
	int was_online;

	if (sk_poll_state_synchronize_rcu(cookie))
		return;
	was_online = sk__rcu_enter_wait("sk_cond_synchronize_rcu()");
	sk__rcu_wait(cookie, 0);
	if (was_online)
		sk_rcu_thread_online();
}

