/* SPDX-License-Identifier: MIT */
/*
 * The read-biased reader-writer lock (scalekit/rwlock_rb.h,
 * src/rwlock_rb.c): the legend of its pairing labels.  Never installed.
 * The module is one .c file and its inline fast paths share nothing
 * private, so this header holds only the legend; it has no declarations.
 *
 * Barrier pairs, the legend of the RB-* labels (used in src/rwlock_rb.c
 * and in the diagram of scalekit/rwlock_rb.h):
 *   RB-R1  reader: store the lock into its own slot (relaxed)
 *   RB-R2  reader: sk_fence_light() between RB-R1 and RB-R3; pairs with
 *          RB-W2
 *   RB-R3  reader: acquire load of bias; pairs with RB-B1 (a re-bias)
 *   RB-R4  reader: release store of NULL into the slot; pairs with RB-W3
 *   RB-W1  writer: bias = 0 (relaxed store)
 *   RB-W2  writer: sk_fence_heavy() between RB-W1 and RB-W3; pairs with
 *          RB-R2 (the asymmetric pair acts as a full fence on both sides)
 *   RB-W3  writer: acquire loads of the slots, waiting while one is the
 *          lock; pairs with RB-R4
 *   RB-B1  reader of the underlying lock: release store of bias = 1;
 *          pairs with RB-R3
 *   RB-U1  underlying lock: acquire CAS on rw (read lock, write lock);
 *          pairs with RB-U2
 *   RB-U2  underlying lock: release RMW on rw (read unlock, write
 *          unlock); pairs with RB-U1
 *   RB-F1  waiter: waiters++ then a full fence before futex_wait re-reads
 *          rw; pairs with RB-F2
 *   RB-F2  waker: the rw RMW (RB-U2) then a full fence before reading
 *          waiters; pairs with RB-F1
 * Litmus tests (litmus/, see docs/litmus.md; smp_mb() stands for the
 * light and heavy fences, which the format cannot write):
 * RB-R1/RB-R2/RB-R3 against RB-W1/RB-W2/RB-W3 and RB-F1/RB-F2 -
 * SB+mbs.litmus; RB-R4/RB-W3, RB-B1/RB-R3, RB-U2/RB-U1 - MP+rel+acq.litmus.
 */
#ifndef SCALEKIT_INTERNAL_RWLOCK_RB_H
#define SCALEKIT_INTERNAL_RWLOCK_RB_H
#endif
