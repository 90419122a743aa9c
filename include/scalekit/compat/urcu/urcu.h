/* SPDX-License-Identifier: MIT */
/*
 * urcu.h - liburcu's default API (the memb flavor, unprefixed names) on
 * scalekit.  Build with `pkg-config --cflags --libs scalekit-urcu`;
 * docs/urcu-compat.md says what maps to what and what differs.
 */
#ifndef URCU_API_MAP
#define URCU_API_MAP
#endif
#include <urcu/urcu.h>
