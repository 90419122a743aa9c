/* SPDX-License-Identifier: MIT */
/*
 * urcu/defer.h - liburcu's defer_rcu() on scalekit (docs/urcu-compat.md).
 * defer_rcu(), rcu_defer_register_thread(), rcu_defer_unregister_thread(),
 * rcu_defer_barrier() and rcu_defer_barrier_thread() are declared by the
 * flavor headers under the flavor's prefixed names; this header only
 * exists because liburcu programs include it.
 */
#ifndef SCALEKIT_COMPAT_URCU_DEFER_H
#define SCALEKIT_COMPAT_URCU_DEFER_H
#include <pthread.h>
#include <stdlib.h>
#endif
