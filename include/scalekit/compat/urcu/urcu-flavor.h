/* SPDX-License-Identifier: MIT */
/* urcu-flavor.h - liburcu's top-level spelling of <urcu/flavor.h> (scalekit). */
#ifndef SCALEKIT_COMPAT_URCU_TOP_FLAVOR_H
#define SCALEKIT_COMPAT_URCU_TOP_FLAVOR_H
#include <urcu/flavor.h>
#endif
