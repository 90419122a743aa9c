/* SPDX-License-Identifier: MIT */
/*
 * urcu-bp.h - liburcu's bp flavor with unprefixed names on
 * scalekit.  Build with `pkg-config --cflags --libs scalekit-urcu`;
 * docs/urcu-compat.md says what maps to what and what differs.
 */
#ifndef URCU_API_MAP
#define URCU_API_MAP
#endif
#include <urcu/urcu-bp.h>
