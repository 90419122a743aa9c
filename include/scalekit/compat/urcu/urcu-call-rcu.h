/* SPDX-License-Identifier: MIT */
/* urcu-call-rcu.h - liburcu's top-level spelling of <urcu/call-rcu.h> (scalekit). */
#ifndef SCALEKIT_COMPAT_URCU_TOP_CALL_RCU_H
#define SCALEKIT_COMPAT_URCU_TOP_CALL_RCU_H
#include <urcu/call-rcu.h>
#endif
