/* SPDX-License-Identifier: MIT */
/* urcu-defer.h - liburcu's top-level spelling of <urcu/defer.h> (scalekit). */
#ifndef SCALEKIT_COMPAT_URCU_TOP_DEFER_H
#define SCALEKIT_COMPAT_URCU_TOP_DEFER_H
#include <urcu/defer.h>
#endif
