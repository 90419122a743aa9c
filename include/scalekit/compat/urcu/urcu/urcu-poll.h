/* SPDX-License-Identifier: MIT */
/*
 * urcu/urcu-poll.h - liburcu's polled grace periods (its 0.14 API) on
 * scalekit: start_poll_synchronize_rcu() returns a state naming a grace
 * period that it makes sure will start; poll_state_synchronize_rcu(state)
 * says whether it has completed.  The functions are declared by the
 * flavor headers under the flavor's prefixed names.
 */
#ifndef SCALEKIT_COMPAT_URCU_POLL_H
#define SCALEKIT_COMPAT_URCU_POLL_H

#include <stdbool.h>

/* A grace period: scalekit's cookie (sk_start_poll_synchronize_rcu()). */
struct urcu_gp_poll_state {
	unsigned long grace_period_id;
};

#endif /* SCALEKIT_COMPAT_URCU_POLL_H */
