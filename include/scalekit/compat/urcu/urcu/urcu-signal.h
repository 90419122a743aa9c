/* SPDX-License-Identifier: MIT */
/* urcu/urcu-signal.h - not provided by scalekit (docs/urcu-compat.md). */
#error "scalekit's liburcu compatibility has no signal flavor: use <urcu.h> (memb), <urcu-qsbr.h> or <urcu-bp.h>"
