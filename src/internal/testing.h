/* SPDX-License-Identifier: MIT */
/*
 * The test machinery of the library, in one place: broken modes (the
 * twins that tests and `scalekit torture --busted*` must catch), hooks,
 * and test-only statistics.
 *
 * Everything declared here is defined only in the testing build of the
 * library, scalekit_testing (compiled with SK_TESTING=1;
 * cmake/sk_lib_variant.cmake, tests/testing.cmake), which the tests that
 * need it and the torture tool (scalekit-torture) link.  The release
 * libscalekit.so and libscalekit.a define none of it, and the installed
 * headers mention none of it: the `release_clean` test checks both (nm of
 * the installed libraries, grep of the installed headers).  A program that
 * calls one of these functions and links the release library fails to
 * link.
 *
 * Library code tests a broken mode through the inline helpers at the end
 * (sk__rcu_busted_is() and friends), which are constant 0 in the release
 * build, so a release build carries neither the knob nor its test.
 */
#ifndef SCALEKIT_INTERNAL_TESTING_H
#define SCALEKIT_INTERNAL_TESTING_H

#include <stdint.h>

struct sk_srcu;

/* ---- RCU grace periods (src/rcu.c, rcu_reader.c, rcu_handshake.c, ...) -- */

/*
 * Broken twins of the grace-period paths, for the torture tool's
 * --busted-qsbr / --busted-handshake / --busted-quiet, test_rcu_batch,
 * test_rcu_quiet, test_rcu_park and test_rcu_registry (never set otherwise):
 * SK__RCU_BUSTED_QSBR_ONLY: a grace period that found no general reader
 * does not wait for the QSBR readers at all;
 * SK__RCU_BUSTED_HANDSHAKE: a handshake that timed out takes the readers
 * that did not answer for quiescent and skips membarrier(2) and the scan;
 * SK__RCU_BUSTED_NO_BATCH: every caller runs a grace period of its own
 * (concurrent callers share none);
 * SK__RCU_BUSTED_EARLY_WAKE: a leader releases the callers of its batch
 * before its grace period instead of after it;
 * SK__RCU_BUSTED_QUIET: the quiet round takes every reader for passed at
 * its first look, whatever its word shows (and skips the scan);
 * SK__RCU_BUSTED_PARK_SELF: a leader parked in its own wait takes itself
 * out of the counts a second time (so it misses another reader);
 * SK__RCU_BUSTED_PARK_SLOW: sk_rcu_read_lock() of a parked thread (a
 * signal handler) resumes without counting the thread again;
 * SK__RCU_BUSTED_SCAN_SKIP: the scan of every registry chunk leaves out
 * the highest slot that blocks it (its reader is never waited for by a
 * first scan);
 * SK__RCU_BUSTED_MARK: readers never raise their registry chunk's mark
 * (RCU-K1), so scans skip chunks whose readers entered a new phase;
 * SK__RCU_BUSTED_NEST: a nested sk_rcu_read_lock() that finds the phase
 * moved on (a signal handler inside an outer entry that has not checked
 * its phase yet) does not raise the mark;
 * SK__RCU_BUSTED_FALLBACK: without membarrier(2), grace periods store the
 * counter in the form that lets the read lock and unlock skip their full
 * fences (lock_word equal to ctr, heavy clear);
 * SK__RCU_BUSTED_MODE_SWITCH: a thread that leaves QSBR mode keeps its
 * count even when a signal handler's section switched it and counted it
 * in between (so it stays counted twice: every later grace period is a
 * general one);
 * SK__RCU_BUSTED_MISS_FORGET: grace periods forget the readers that missed
 * a failed handshake round (each one after the backoff tries the rounds
 * again, and times out again while an idle registered thread stays idle);
 * SK__RCU_BUSTED_MISS_STICKY: they never drop a remembered reader, even
 * once its word changed (so the rounds are never tried again; grace
 * periods stay correct, with a heavy fence each).
 * 0 restores the real thing (from the next grace period on).  Any thread.
 */
enum {
	SK__RCU_BUSTED_QSBR_ONLY = 1,
	SK__RCU_BUSTED_HANDSHAKE = 2,
	SK__RCU_BUSTED_NO_BATCH = 3,
	SK__RCU_BUSTED_EARLY_WAKE = 4,
	SK__RCU_BUSTED_QUIET = 5,
	SK__RCU_BUSTED_PARK_SELF = 6,
	SK__RCU_BUSTED_PARK_SLOW = 7,
	SK__RCU_BUSTED_SCAN_SKIP = 8,
	SK__RCU_BUSTED_MARK = 9,
	SK__RCU_BUSTED_NEST = 10,
	SK__RCU_BUSTED_FALLBACK = 11,
	SK__RCU_BUSTED_MODE_SWITCH = 12,
	SK__RCU_BUSTED_MISS_FORGET = 13,
	SK__RCU_BUSTED_MISS_STICKY = 14,
};
void sk__rcu_set_busted(int mode);

/*
 * The full fences that the calling thread's sk_rcu_read_lock() and
 * sk_rcu_read_unlock() issued in their slow paths because membarrier(2)
 * is not used (RCU-L2 and RCU-U2 in fallback form).
 */
unsigned long sk__rcu_test_fallback_fences(void);

/*
 * How grace periods took their first barrier (RCU-G1), counted by the
 * leader in every build (sk__rcu.kinds); read by tests and the torture
 * report through sk__rcu_get_gp_kinds().
 */
struct sk__rcu_gp_kinds {
	unsigned long handshake; /* RCU-G1 by handshake, normal and expedited */
	unsigned long heavy;	 /* RCU-G1 by sk_fence_heavy() */
	unsigned long qsbr_only; /* RCU-G1 by a full fence, no general reader */
	unsigned long quiet;	 /* of handshake: by the quiet round, unasked */
	/* Handshake requests that timed out (of heavy: the fence followed). */
	unsigned long timeouts;
	/* Registry chunks that first scans read, and skipped (quiet marks). */
	unsigned long chunks_scanned, chunks_skipped;
};
void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k);

/*
 * Start the grace-period numbers at gp and the phase at phase, so a test
 * crosses the wrap-around points within a few grace periods (-EINVAL for
 * gp ULONG_MAX); force the scans per grace period (0: the build's
 * SK__RCU_SCANS).  Call with no grace period, callback or polled request
 * in flight.
 */
int sk__rcu_test_set_seq(unsigned long gp, unsigned long phase);
void sk__rcu_test_set_scans(int n);

/*
 * Call fn(where) at the points named SK__RCU_HOOK_* (NULL: none), in the
 * thread that reaches them: a leader about to sleep on readers (holding
 * gp_lock), an expedited caller that has just asked for haste.
 */
enum { SK__RCU_HOOK_BEFORE_SLEEP = 1, SK__RCU_HOOK_EXPEDITE_ASKED = 2 };
void sk__rcu_test_set_hook(void (*fn)(int where));

/* ---- RCU callbacks (src/rcu_cb.c) ----------------------------------------- */

/*
 * Deliberately broken callback machinery: SK__CB_BUSTED_BARRIER makes
 * sk_rcu_barrier() skip the per-CPU queues, SK__CB_BUSTED_NO_GP makes the
 * per-CPU workers run callbacks without waiting for a grace period.
 * 0 restores the real thing.  Any thread.
 */
enum { SK__CB_BUSTED_BARRIER = 1, SK__CB_BUSTED_NO_GP = 2 };
void sk__rcu_cb_set_busted(int what);

/* ---- RCU deferred calls (src/rcu_defer.c) ------------------------------- */

/* The next n slab allocations of sk_defer_rcu() fail (as if malloc did). */
void sk__rcu_defer_test_fail_allocs(int n);

/* ---- SRCU (src/srcu_gp.c, src/srcu_read.c) -------------------------------- */

/*
 * Number d's grace periods from seq on (d idle: no grace period, callback
 * or poll pending).  So that a test runs across the 2^16 and 2^32
 * boundaries.
 */
void sk__srcu_test_set_seq(struct sk_srcu *d, uint64_t seq);

/*
 * Call fn(d) in sk_srcu_barrier(d) after it has looked for pending
 * callbacks and released gp_mutex, while it still holds barrier_mutex
 * (NULL: none).  So that a test can fork() while a barrier of an idle
 * domain holds it (src/srcu_cb.c).
 */
void sk__srcu_test_set_barrier_hook(void (*fn)(struct sk_srcu *d));

/*
 * Call fn(d) in sk_srcu_destroy(d) right after it took d's gp_mutex,
 * before it decides (NULL: none).  So that a test can make the worker
 * find the mutex taken and skip d (src/srcu_domain.c).
 */
void sk__srcu_test_set_destroy_hook(void (*fn)(struct sk_srcu *d));

/* ---- the callback worker (src/worker.c) ----------------------------------- */

/*
 * The next n worker starts fail with -err, as if pthread_create() had
 * returned err.  n = 0 ends it.
 */
void sk__worker_test_fail_starts(int n, int err);

/* ---- read-biased rwlock (src/rwlock_rb.c) --------------------------------- */

/* Nonzero: writers do not wait for announced readers (broken twin). */
void sk__rwlock_rb_test_busted(int on);

/* ---- the elided rwlock's fallback (src/elide_locks.c) --------------------- */

/*
 * Nonzero: the broken twin of the writers' fairness.  A writer never sets
 * WRITER while readers are inside, so new readers never wait for it: it
 * takes the lock only at a moment when no reader holds it, and readers
 * whose sections overlap starve it (tests/test_elide_rw.c).
 */
void sk__elide_rw_test_busted(int on);

/*
 * Nonzero: the broken twin of the mutex's fork handling.  A fork child
 * keeps the handoff tickets of the parent's waiters, which it does not
 * have, so its next lock of such a mutex waits forever
 * (tests/test_elide.c).
 */
void sk__elide_mutex_test_fork_busted(int on);

/* ---- the Triplett checker (tests/rcu_checker.h) --------------------------- */

/*
 * In the testing build, every publication and every grace-period wait of
 * scalekit/list.h (and of src/rhash*.c) calls sk__rcu_checker_hook, which
 * a test points at a function that runs complete readers against the
 * intermediate state (NULL: nothing).  This header defines list.h's
 * SK__LIST_TRACE() for that, so it comes before scalekit/list.h.
 */
enum { SK__RCU_CHECK_PUBLISH = 1, SK__RCU_CHECK_GP = 2 };
extern void (*sk__rcu_checker_hook)(int event);

#ifdef SK_TESTING
#ifdef SCALEKIT_LIST_H
#error "include internal/testing.h before scalekit/list.h"
#endif
#define SK__LIST_TRACE(ev)                                        \
	do {                                                      \
		void (*sk__fn_)(int) = sk__rcu_checker_hook;      \
		if (sk__fn_)                                      \
			sk__fn_(SK__RCU_CHECK_##ev);              \
	} while (0)
#endif

/* ---- the resizable hash table (src/rhash*.c) ------------------------------ */

/*
 * Values of sk__rhash_test_broken, the broken twins of the hash table.
 * SK__RHASH_BROKEN_NO_GP frees the replaced bucket array without waiting
 * for a grace period; SK__RHASH_BROKEN_CUT_FIRST cuts a run off its old
 * chain before the future array links it;
 * SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE migrates without the grace period
 * after the future array's publication (an insert that read the table
 * before the resize began pushes its node onto a migrated old bucket,
 * and it is lost when the resize drops the old array);
 * SK__RHASH_BROKEN_HEAD_STORE moves runs onto bucket heads with plain
 * stores instead of compare-and-swaps (a lock-free insert racing the move
 * is lost); SK__RHASH_BROKEN_NO_DRAIN changes the lock array without
 * waiting for the updaters that hold a bit of the old one (such an
 * updater and the migrator then change the same chain at once);
 * SK__RHASH_BROKEN_STALE_HEAD removes (or replaces) a node without moving
 * on the head of its migrated old bucket that still points at it (a
 * reader reaches the node through the old array after its free);
 * SK__RHASH_BROKEN_STALE_HEAD_OTHER moves that head on to the node's
 * successor even when the successor belongs to another old bucket (a
 * shrink's chains hold several): the remove of that successor then
 * leaves the head on it, and a reader reaches it after its free;
 * SK__RHASH_BROKEN_LATE_LOOKUP_TBL moves the inline walks' start
 * (lookup_tbl) to the new array only after tbl at the end of a resize:
 * a walk that begins between the two stores starts in the old array,
 * whose stale heads updaters no longer move on, and finds a node removed
 * after the first store.
 * 0: the correct table.
 */
#define SK__RHASH_BROKEN_NO_GP	    1
#define SK__RHASH_BROKEN_CUT_FIRST  2
#define SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE 3
#define SK__RHASH_BROKEN_HEAD_STORE 4
#define SK__RHASH_BROKEN_NO_DRAIN   5
#define SK__RHASH_BROKEN_STALE_HEAD 6
#define SK__RHASH_BROKEN_STALE_HEAD_OTHER 7
#define SK__RHASH_BROKEN_LATE_LOOKUP_TBL 8
extern int sk__rhash_test_broken;

/*
 * Nonzero makes the next insert behave as one that read ht->tbl before a
 * resize published its future array (its first try ignores t->future);
 * the insert clears it.
 */
extern int sk__rhash_test_stale_insert;

struct sk_rhash;
/*
 * Hooks (NULL: none).  locked: called by lock_bucket() with the bucket's
 * bit held and the mapping checked, so that a test can hold an updater
 * there.  step: called by a resize between two migration steps of one
 * old bucket (partly moved, no bucket lock held, resize_lock held), so
 * that a test can update the table there.  race: called inside a
 * migration step (bucket lock held) right before the CAS of RH-M2 (where
 * 0), with the hash of the run's first node, so that a lock-free insert
 * can race that CAS.  migrated: called by a resize after old bucket i is
 * migrated (no bucket lock held, resize_lock held), so that a test can
 * update the table between two buckets of a shrink, whose steps move a
 * whole old chain at once.
 */
extern void (*sk__rhash_test_locked_hook)(unsigned long hash);
extern void (*sk__rhash_test_step_hook)(struct sk_rhash *ht);
extern void (*sk__rhash_test_race_hook)(int where, unsigned long hash);
extern void (*sk__rhash_test_migrated_hook)(struct sk_rhash *ht,
					    unsigned long i);

/* ---- lock elision (src/elide_sim.c; scalekit_elide_sim only) ------------ */

/*
 * The simulated backend, built in place of the hardware one only in
 * scalekit_elide_sim (SK_TESTING and SK_ELIDE_SIM; tests/elide_sim.cmake):
 * sk_elide_backend() returns SK__ELIDE_BACKEND_SIM ("sim") there.  Hooks:
 * inject one abort status into the next transaction; random aborts per
 * 1000 transactions (seeded); the broken twins: claims that do not look
 * at the lock word, every elided unlock ending the transaction
 * (nesting), and spinlock claims that judge a second load (below).
 */
#define SK__ELIDE_BACKEND_SIM ((enum sk_elide_backend)2)
void sk__elide_sim_inject(unsigned int status);
void sk__elide_sim_random(unsigned int permille, unsigned long seed);
void sk__elide_sim_busted(int on);
void sk__elide_sim_busted_nesting(int on);
/*
 * A spinlock claim calls fn (NULL: nothing) in the claiming thread after
 * it loaded the word (SK__SIM_SPIN_LOADED) and, when it found the lock
 * free, before its CAS (SK__SIM_SPIN_CAS); the twin judges "free" on a
 * second load of the word, between the two calls.
 */
#define SK__SIM_SPIN_LOADED 0
#define SK__SIM_SPIN_CAS    1
void sk__elide_sim_busted_spin(int on);
void sk__elide_sim_set_spin_hook(void (*fn)(int where));

/* ---- what library code tests --------------------------------------------- */

#ifdef SK_TESTING
extern int sk__rcu_busted; /* SK__RCU_BUSTED_* */

/* Is the broken twin mode (SK__RCU_BUSTED_*) on?  Relaxed: a test knob. */
static inline int sk__rcu_busted_is(int mode)
{
	return __atomic_load_n(&sk__rcu_busted, __ATOMIC_RELAXED) == mode;
}
#else
/* A macro, not a function: a release build has no such name, even at -O0. */
#define sk__rcu_busted_is(mode) 0
#endif

#endif /* SCALEKIT_INTERNAL_TESTING_H */
