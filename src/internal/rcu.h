/* SPDX-License-Identifier: MIT */
/* Grace-period internals shared by src/rcu.c and src/rcu_cb.c. */
#ifndef SCALEKIT_INTERNAL_RCU_H
#define SCALEKIT_INTERNAL_RCU_H

/*
 * Cookie of the first grace period that starts after this call: once it
 * has completed, every read section that began before the call has ended.
 * Full barrier first (S1), so the caller's unlinks are ordered before it.
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
 * Grace periods completed so far, in full unsigned long width (wraps
 * modulo): differences count grace periods on every target.  A relaxed
 * load, orders nothing; never blocks; any thread.  For the torture tool,
 * which declares it itself (the shared library does not export it).
 */
unsigned long sk__rcu_gp_count(void);

/*
 * How grace periods took their first barrier (G1), counted since start:
 * by handshake with the readers, by membarrier(2) (sk_fence_heavy()), or
 * with a full fence because only QSBR-mode threads were registered
 * besides the caller.  Grace periods that found no other reader count in
 * none.  Relaxed loads, orders nothing; never blocks; any thread.  Hidden
 * (tests and the torture tool link the library statically).
 */
struct sk__rcu_gp_kinds {
	unsigned long handshake; /* G1 by handshake, normal and expedited */
	unsigned long heavy;	 /* G1 by sk_fence_heavy() */
	unsigned long qsbr_only; /* G1 by a full fence, no general reader */
};
void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k);

/*
 * Broken twins of the grace-period paths, for the torture tool's
 * --busted-qsbr / --busted-handshake and test_rcu_batch (never set
 * otherwise):
 * SK__RCU_BUSTED_QSBR_ONLY: a grace period that found no general reader
 * does not wait for the QSBR readers at all;
 * SK__RCU_BUSTED_HANDSHAKE: a handshake that timed out takes the readers
 * that did not answer for quiescent and skips membarrier(2) and the scan;
 * SK__RCU_BUSTED_NO_BATCH: every caller runs a grace period of its own
 * (concurrent callers share none);
 * SK__RCU_BUSTED_EARLY_WAKE: a leader releases the callers of its batch
 * before its grace period instead of after it.
 */
enum {
	SK__RCU_BUSTED_QSBR_ONLY = 1,
	SK__RCU_BUSTED_HANDSHAKE = 2,
	SK__RCU_BUSTED_NO_BATCH = 3,
	SK__RCU_BUSTED_EARLY_WAKE = 4,
};
void sk__rcu_set_busted(int mode);

/* Fill the callback counters of *st (src/rcu_cb.c). */
struct sk_rcu_stats;
int sk__rcu_cb_stats(struct sk_rcu_stats *st);

/*
 * Deliberately broken callback machinery, for the broken twins of the
 * tests and of the torture tool (which declare this themselves; the
 * shared library does not export it): SK__CB_BUSTED_BARRIER makes
 * sk_rcu_barrier() skip the per-CPU queues, SK__CB_BUSTED_NO_GP makes the
 * per-CPU workers run callbacks without waiting for a grace period.
 * 0 restores the real thing.  Any thread.
 */
enum { SK__CB_BUSTED_BARRIER = 1, SK__CB_BUSTED_NO_GP = 2 };
void sk__rcu_cb_set_busted(int what);

/* Fork handling of the callback machinery (src/rcu_cb.c). */
void sk__rcu_cb_atfork_prepare(void);
void sk__rcu_cb_atfork_parent(void);
void sk__rcu_cb_atfork_child(void);

#ifdef SK_TEST_HOOKS
/* Test hooks of the scalekit_hooks library (src/rcu.c). */
int sk__rcu_test_set_seq(unsigned long gp, unsigned long phase);
void sk__rcu_test_set_scans(int n);
enum { SK__RCU_HOOK_BEFORE_SLEEP = 1, SK__RCU_HOOK_EXPEDITE_ASKED = 2 };
void sk__rcu_test_set_hook(void (*fn)(int where));
#endif

#endif
