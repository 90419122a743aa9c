/* SPDX-License-Identifier: MIT */
/*
 * urcu/urcu.h - liburcu's default flavor, memb, on scalekit
 * (docs/urcu-compat.md).  liburcu's signal and mb flavors (RCU_SIGNAL,
 * RCU_MB) are not provided: scalekit's readers need neither signals nor
 * a barrier per read section.
 */
#ifndef SCALEKIT_COMPAT_URCU_URCU_H
#define SCALEKIT_COMPAT_URCU_URCU_H
#if defined(RCU_SIGNAL) || defined(RCU_MB)
#error "scalekit's liburcu compatibility has no signal or mb flavor: build without -DRCU_SIGNAL/-DRCU_MB (the memb flavor is used)"
#endif
#endif
#include <urcu/urcu-memb.h>
