/* SPDX-License-Identifier: MIT */
/*
 * RCU module internals: the interface of the grace-period machinery to the
 * callback machinery (src/rcu_cb.c), and the module's overview.
 *
 * Files, lowest layer first (src/layers.txt).  src/rcu.c: the module's
 * state, the stall setting and the counts of synchronize calls;
 * src/rcu_reader.c: the registry of reader threads and the reader slow
 * paths; src/rcu_handshake.c: the reader handshake and the stall report;
 * src/rcu_gp.c: scanning, waiting for readers, the leader and the
 * batching of concurrent callers; src/rcu_exp.c: the polled API;
 * src/rcu_cb.c and src/rcu_cb_pcpu.c: callbacks (internal/rcu_cb.h);
 * src/rcu_fork.c: the constructor, the fork handlers and the statistics;
 * src/internal/rcu_state.h: what these files share.  The inline read side
 * is in scalekit/rcu.h.
 *
 * Algorithm.  A global phase counter, in the upper bits of sk_rcu__gp.ctr,
 * numbers the scans of the registry.  A reader word keeps the phase of the
 * thread's latest outermost section.  Entering one, the reader stores its
 * word at depth 1, then checks the counter (RCU-L3): a new phase takes the
 * slow path (enter() [rcu_reader.c]), which raises the registry chunk's
 * mark to the counter word (RCU-K1), stores that word, and checks again.
 * Leaving, it stores depth 0 with the same phase.  A QSBR thread keeps a
 * copy while online and refreshes it at each quiescent state.  A scan
 * advances the phase to p and waits until every registered reader either
 * is outside a section or carries phase p (it entered, or announced a
 * quiescent state, after the advance); it skips the chunks whose mark is
 * older than the phase before p (chunk_is_quiet() [rcu_gp.c]).  Phases
 * are compared for equality only, so they may wrap; they skip 0, the
 * phase of a word that has not entered a section yet.
 *
 * Narrow words.  A reader may load sk_rcu__gp.ctr, be preempted, and store
 * the value much later.  If the phase advanced a multiple of 2^SEQ_BITS
 * times meanwhile, the stale copy equals the current phase and one scan
 * would skip a reader that needs waiting for.  With 48 phase bits (64-bit
 * unsigned long) that takes 2^48 scans during one preemption between two
 * adjacent instructions, and one scan per grace period suffices.  With 16
 * bits (32-bit targets) a grace period scans twice, advancing the phase
 * before each: a reader word seen by the first scan and unchanged at the
 * second cannot equal both phases, so it is waited for by one of them; a
 * word stored after the first scan read the old value was stored after
 * RCU-G1 took effect on its thread, so that section sees every earlier
 * unlink.
 *
 * Cookies.  Grace periods are numbered apart from the phase, by gp_seq
 * (started) and completed, in full unsigned long width; comparisons are
 * modular (see sk__rcu_done()).
 *
 * Batching.  Callers with a cookie snapshot gp_seq (RCU-S1), then queue a
 * wait node; sk_synchronize_rcu() queues a "fresh" node without one.  The
 * caller that finds the queue empty leads: under gp_lock it takes every
 * queued node and runs one grace period, which started after all their
 * snapshots and pushes and so covers them all (src/rcu_gp.c).
 *
 * All barrier pairs of the module, the legend of the RCU-* labels (the
 * file placing each fence in brackets):
 *   RCU-S1  caller of a cookie, sk_smp_mb() [rcu_gp.c]: its unlinks before
 *           its snapshot of gp_seq; pairs with RCU-G1.  A fresh node's
 *           caller (sk_synchronize_rcu()) has no snapshot: its unlinks
 *           reach the leader by RCU-W1/RCU-W2, before RCU-R1 and RCU-G1.
 *   RCU-R0  leader, release store of gp_seq [rcu_gp.c]; pairs with the
 *           acquire of the snapshot.
 *   RCU-R1  leader, release store of the counter advance [rcu_gp.c]; pairs
 *           with RCU-L1.
 *   RCU-R2  leader, release store of lock_word after the counter
 *           [rcu_state.h]; pairs with the read lock's RCU-L1 (a lock that
 *           reads it reads the new counter in its slow path).
 *   RCU-L1  reader, acquire load of the counter (of lock_word in the read
 *           lock's fast path) [rcu.h read lock, rcu_reader.c entry,
 *           online and quiescent state]; pairs with RCU-R1 (RCU-R2).
 *   RCU-L2  reader, light fence after its word store, before its load of
 *           the counter (RCU-L3) [rcu.h, rcu_reader.c]; pairs with RCU-G1.
 *           In the read lock's fast path a compiler barrier; without
 *           membarrier(2) lock_word equals no reader word, and the slow
 *           path sk_rcu__lock_recheck() issues it as a full fence.
 *   RCU-L3  reader, the check of the counter after RCU-L2 [rcu.h,
 *           rcu_reader.c]: a section whose check did not see the advance
 *           has its word (and the mark raised before it) visible to the
 *           scan (store buffering with RCU-G1).
 *   RCU-K1  reader, the chunk mark raised before the word shows the new
 *           phase [rcu_state.h, rcu_reader.c]; carried by RCU-L2/RCU-Q2
 *           (or the handshake's answer) to the scan, which reads the mark
 *           before the words [rcu_gp.c].
 *   RCU-K2  reader, light fence between raising the mark and loading the
 *           counter in a nested entry's slow path [rcu_reader.c]; pairs
 *           with RCU-G1.
 *   RCU-U1  reader, light fence before the depth-0 store [rcu.h]; pairs
 *           with RCU-G2.  On x86-64 a compiler barrier in both modes
 *           (TSO keeps loads before a later store).
 *   RCU-U2  reader, light fence between that store and the futex load
 *           [rcu.h]; pairs with RCU-G3 (store buffering).  On x86-64 a
 *           compiler barrier: without membarrier(2) the fast path's load
 *           of futex with heavy is nonzero, and the slow path
 *           (sk_rcu__wake_gp_from() [rcu_reader.c]) issues it as a full
 *           fence.
 *   RCU-U3  reader, acquire load of the futex word in the unlock's slow
 *           path [rcu_reader.c], before its load of the counter; pairs
 *           with RCU-G4: a reader that reads a sleeping leader's -1 sees
 *           the counter word of the scan it sleeps on, and wakes it only
 *           if the section it left is of an older phase.
 *   RCU-Q1  QSBR thread, full fence before its new word (quiescent state,
 *           offline) [rcu_reader.c]; pairs with RCU-G2.
 *   RCU-Q2  QSBR thread, full fence after it (quiescent state, offline,
 *           online) [rcu_reader.c]; pairs with RCU-G1 and RCU-G3.
 *   RCU-G1  leader, after the advance, before reading any reader word
 *           [rcu_gp.c]: the handshake (the quiet round, else RCU-H0 to
 *           RCU-H2), else the heavy fence; a full fence for QSBR-only
 *           grace periods (RCU-M).  Pairs with RCU-L2/RCU-Q2: a reader
 *           either has made its word visible (and is waited for), or its
 *           section's loads come after RCU-G1 and see every unlink
 *           made before it.  The quiet round needs no reader fence: a
 *           word of the new phase was stored after RCU-L1 read the
 *           advance (RCU-R1).
 *   RCU-G2  leader, after the scan, before completion [rcu_gp.c]: heavy (a
 *           local sk_smp_mb() on x86, TSO, and for QSBR-only grace
 *           periods).  Pairs with RCU-U1/RCU-Q1: the sections' loads are
 *           done before the caller frees anything.
 *   RCU-G3  leader, full or heavy fence after futex = -1, before re-reading
 *           the reader words and the expedite count [rcu_gp.c]; pairs with
 *           RCU-U2/RCU-Q2 (a reader that leaves after the re-check sees -1
 *           and wakes the leader) and RCU-E1.
 *   RCU-G4  leader, release store of futex = -1 before it sleeps on
 *           readers [rcu_gp.c]; pairs with RCU-U3.
 *   RCU-E1  expedited caller, full fence after raising the expedite count,
 *           before reading futex [rcu_gp.c]; pairs with RCU-G3: the leader
 *           sees the count and polls, or the caller sees -1 and wakes it.
 *   RCU-H0  leader, release store of the handshake number after RCU-R1
 *           [rcu_handshake.c]; pairs with the reader's acquire of it.
 *   RCU-H1  reader, full barrier between reading that number and answering
 *           it (release) [rcu_reader.c]; the reader's half of what
 *           membarrier(2)'s interrupt would do.
 *   RCU-H2  leader, acquire of every answer [rcu_handshake.c]; pairs with the
 *           answer's release.  All answers stand for RCU-G1.
 *   RCU-M   count_add()'s full fences around a change of the general-thread
 *           count [rcu_reader.c], and the leader's full barrier between
 *           RCU-R1 and its loads of the counts [rcu_gp.c] (store
 *           buffering): the leader sees the new count, or the thread's
 *           later RCU-L1 sees the advance.  With no general thread besides
 *           the caller, RCU-G1/RCU-G2/RCU-G3 are sk_smp_mb().
 *   RCU-P1  parking thread, full fence before its word becomes
 *           SK__RCU_PARKED [rcu_reader.c]: its earlier sections first;
 *           pairs with RCU-G2 of a leader that takes the parked word for
 *           an answer [rcu_handshake.c].
 *   RCU-P2  unparking thread, full fence after its word leaves
 *           SK__RCU_PARKED [rcu_reader.c]: the word before the next
 *           section's RCU-L1; pairs with the leader's full barrier
 *           between RCU-R1 and its load of the word (store buffering).
 *   RCU-W1  caller, release push of its wait node [rcu_gp.c]; pairs with
 *           RCU-W2.
 *   RCU-W2  leader, acquire exchange that takes the queued nodes
 *           [rcu_gp.c].
 *   RCU-W3  leader, exchange that marks a node done after the grace period
 *           [rcu_gp.c]; pairs with the owner's acquire load of it.
 * In the fallback without membarrier(2), light fences are full fences and
 * the heavy fence is sk_smp_mb(), which pair the same way.
 *
 * Litmus tests of these pairs (litmus/, run by `make check`, see
 * docs/litmus.md; the format has no membarrier(2), so a heavy or light
 * fence is written as smp_mb(), which checks the pairing, not the
 * asymmetric fence itself):
 *   RCU-S1, RCU-G1         rcu-gp-advance-mb.litmus (broken twin
 *                          rcu-gp-advance-no-mb.litmus).
 *   RCU-M                  rcu-qsbr-only-count-mb.litmus (broken twin
 *                          rcu-qsbr-only-count-no-mb.litmus).
 *   RCU-R1/RCU-L1, RCU-H0  MP+rel+acq.litmus.
 *   RCU-G1/RCU-L2, RCU-G3/RCU-U2, RCU-G3/RCU-E1
 *                          SB+mbs.litmus.
 *   RCU-G4/RCU-U3          MP+rel+acq.litmus.
 *   RCU-K1, RCU-L3/RCU-G1  rcu-chunk-mark.litmus (broken twin
 *                          rcu-chunk-mark-late.litmus).
 *   RCU-G2/RCU-U1          LB+rel+mb.litmus.
 *   RCU-W1/RCU-W2, RCU-W3  MP+rel+acq.litmus (message passing).
 *   RCU-P1/RCU-G2          LB+rel+mb.litmus (as RCU-U1/RCU-G2).
 *   RCU-P2                 SB+mbs.litmus (against the leader's barrier).
 *   RCU-R0                 MP+rel+acq.litmus.
 *   all of them, end to end through sk_synchronize_rcu():
 *                          rcu-gp-before.litmus, rcu-gp-after.litmus,
 *                          rcu-deferred-free.litmus (fail with --busted),
 *                          rcu-gp-before-exp.litmus (expedited).  Not
 *                          covered: whether the handshake or membarrier(2)
 *                          served a given iteration, and the handshake's
 *                          timeout path.
 */
#ifndef SCALEKIT_INTERNAL_RCU_H
#define SCALEKIT_INTERNAL_RCU_H

/*
 * Cookie of the first grace period that starts after this call: once it
 * has completed, every read section that began before the call has ended.
 * Full barrier first (RCU-S1), so the caller's unlinks are ordered before it.
 */
unsigned long sk__rcu_snap(void);

/* Nonzero once grace period target has completed (acquire). */
int sk__rcu_done(unsigned long target);

/*
 * Make sure grace period target has completed, running it (or a later one)
 * if needed.  expedited: spin instead of sleeping.  Blocks.  The caller
 * must not be inside a read section.
 */
void sk__rcu_wait(unsigned long target, int expedited);

/*
 * Leave the read side before blocking on a grace period in the name of fn:
 * dies when the thread is inside a read section, puts an online QSBR
 * thread offline and returns 1 (then call sk_rcu_thread_online() after).
 */
int sk__rcu_enter_wait(const char *fn);

/*
 * The same for a call that reports the misuse by its return code: -1
 * (nothing changed) inside a read section, else as sk__rcu_enter_wait().
 */
int sk__rcu_try_enter_wait(void);

/*
 * Parking (src/rcu_reader.c, docs/rcu.md "Parking"): a registered general
 * thread outside any section that waits for a grace period takes itself
 * out of the counts that grace periods read (sk__rcu_park()), and stays
 * out until its next sk_rcu_read_lock() (whose slow path counts it
 * again), sk_rcu_thread_online(), unregistering or exit
 * (sk__rcu_unpark()).  While every other registered thread is parked,
 * grace periods need no heavy fence.
 */
void sk__rcu_park_slow(void);
void sk__rcu_unpark(void);
/* sk__rcu_park(): the inline check in src/internal/rcu_state.h. */

/*
 * Grace periods completed so far, in full unsigned long width (wraps
 * modulo): differences count grace periods on every target.  A relaxed
 * load, orders nothing; never blocks; any thread.  For the torture tool,
 * which declares it itself (the shared library does not export it).
 */
unsigned long sk__rcu_gp_count(void);

/*
 * Broken modes, hooks and the test-only statistic of the grace-period
 * kinds (struct sk__rcu_gp_kinds, counted in sk__rcu.kinds in every
 * build): internal/testing.h, defined only in the testing build.
 */
#include "testing.h"

/*
 * The parts of the module above the grace periods, which src/rcu.c (the
 * lowest file) cannot call: the callbacks (src/rcu_cb.c) and the per-CPU
 * callback workers (src/rcu_cb_pcpu.c).  Each registers, from its
 * constructor, what rcu.c's fork handlers and sk_rcu_get_stats() must
 * call in it; a part that a program does not link (a static link takes
 * only the objects it uses) registers nothing and needs nothing.  The
 * fork handlers call the parts' prepare handlers from the highest part
 * down (the per-CPU workers' run_locks, then the default worker's and
 * the queues' locks), their parent and child handlers from the lowest
 * part up.  Each pointer may be NULL.
 */
struct sk_rcu_stats;
struct sk__rcu_part {
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
	void (*stats)(struct sk_rcu_stats *st); /* fills its counters */
};
enum { SK__RCU_PART_CB, SK__RCU_PART_CB_PCPU, SK__RCU_NPARTS };
/* Register part p as part `which` (a constructor, at load time). */
void sk__rcu_register_part(int which, const struct sk__rcu_part *p);

#endif
