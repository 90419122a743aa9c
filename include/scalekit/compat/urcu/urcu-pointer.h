/* SPDX-License-Identifier: MIT */
/* urcu-pointer.h - liburcu's top-level spelling of <urcu/pointer.h> (scalekit). */
#ifndef SCALEKIT_COMPAT_URCU_TOP_POINTER_H
#define SCALEKIT_COMPAT_URCU_TOP_POINTER_H
#include <urcu/pointer.h>
#endif
