/* SPDX-License-Identifier: MIT */
/*
 * The sequence lock (scalekit/seqlock.h, src/seqlock.c): the legend of
 * its pairing labels.  Never installed.  The read and write sides are
 * inline in the public header and share nothing private, so this header
 * holds only the legend; it has no declarations.
 *
 * Barrier pairs, the legend of the SEQ-* labels (the kernel's seqcount
 * scheme; the diagram in scalekit/seqlock.h shows them side by side):
 *   SEQ-W0  writer: seq = seq + 1, odd (after the writers' lock).
 *   SEQ-W1  writer: smp_wmb after SEQ-W0, before the data stores; pairs
 *           with SEQ-R3: a reader whose data loads saw any store of a
 *           write section reads at SEQ-R4 a count at least that
 *           section's odd SEQ-W0.
 *   SEQ-W2  writer: smp_wmb after the data stores, before SEQ-W3; pairs
 *           with SEQ-R1: a reader that read the even count of SEQ-W3
 *           sees the data stores before it.
 *   SEQ-W3  writer: seq = seq + 1, even.
 *   SEQ-R0  reader: s = seq, waiting while it is odd [seqlock.h, and the
 *           slow wait in seqlock.c].
 *   SEQ-R1  reader: smp_rmb after SEQ-R0, before the data loads; pairs
 *           with SEQ-W2.
 *   SEQ-R3  reader: smp_rmb after the data loads, before SEQ-R4; pairs
 *           with SEQ-W1.
 *   SEQ-R4  reader: seq != s? then retry.
 * Litmus tests (litmus/, see docs/litmus.md): SEQ-W2/SEQ-R1 and
 * SEQ-W1/SEQ-R3 - MP+wmb+rmb.litmus (message passing both ways).
 */
#ifndef SCALEKIT_INTERNAL_SEQLOCK_H
#define SCALEKIT_INTERNAL_SEQLOCK_H
#endif
