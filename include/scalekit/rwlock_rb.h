/* SPDX-License-Identifier: MIT */
/*
 * scalekit/rwlock_rb.h - a read-biased reader-writer lock.
 *
 * What it promises: what pthread_rwlock_t does (a writer excludes every
 * reader and every other writer; readers share the lock and see a
 * consistent state), with readers that scale.  While the lock is biased
 * towards readers (SK_RWLOCK_RB_INITIALIZER starts biased), a read lock
 * and unlock write only the calling thread's own memory and use no
 * atomic read-modify-write, so read throughput grows with the number of
 * CPUs.  Writers pay instead: a writer that finds the bias on revokes it
 * (sk_fence_heavy(), i.e. membarrier(2), then a scan of every reading
 * thread's row), and the bias then stays off for a while, so that
 * frequent writers do not pay that each time.  Writer-preferring: a
 * stream of readers cannot starve a writer.  Not recursive.  Works on
 * every CPU.
 *
 * When to use it: data read far more often than written, whose readers
 * must see a consistent state without retrying (sk_seqlock's readers
 * may retry) and must not see an old version (what RCU readers may see).
 * docs/locks.md compares it with sk_seqlock and pthread_rwlock_t.
 *
 * How it works.  The idea is BRAVO's (Dice and Kogan, USENIX ATC 2019):
 * an ordinary reader-writer lock makes every reader write the lock's
 * reader count, so two readers on two CPUs bounce one cache line between
 * them and read throughput stops scaling.  While the lock is "biased",
 * a reader instead announces itself in a process-wide table of visible
 * readers: it stores the lock's address into a slot of its own thread's
 * row, chosen by hashing the lock, and touches no line that another
 * reader writes (BRAVO hashes thread and lock into one shared table and
 * claims a slot with a CAS; rows owned by one thread need neither the
 * CAS nor its full fence).  A writer first takes the underlying lock, then revokes the
 * bias and waits until no slot announces this lock; readers that find
 * the bias off, or their slot taken, use the underlying lock.  The bias
 * comes back, set by a reader of the underlying lock, once a delay
 * proportional to the last revocation's cost has passed, so that a
 * lock with frequent writers stays unbiased and writers do not pay a
 * table scan each time.
 *
 * The underlying lock is scalekit's own: a futex word with a reader count
 * and a writer bit, writer-preferring (a waiting writer keeps new readers
 * of the underlying lock out, so readers cannot starve writers; a
 * continuous stream of writers can delay readers).
 *
 * Memory ordering: the reader side and the writer side are the two
 * halves of a store-buffering pattern; between its store and its load
 * each has one side of the asymmetric fence pair (scalekit/barrier.h),
 * the cheap side for readers, membarrier(2) for the rare writer that
 * revokes the bias:
 *
 *	reader (read_lock)                writer (write_lock, after the
 *	                                  underlying write lock)
 *	RB-R1: own slot = lock            RB-W1: bias = 0
 *	RB-R2: sk_fence_light()  -pairs-  RB-W2: sk_fence_heavy()
 *	RB-R3: if bias == 0: undo, slow   RB-W3: wait while a slot == lock
 *
 * Either the reader sees the bias off, or the writer sees the slot.
 * RB-R4 (read_unlock: slot = NULL, release) pairs with RB-W3's acquire
 * loads, so the reader's section happens before the writer's.  See
 * docs/locks.md (the table of the RB-* labels; their legend is in
 * src/internal/rwlock_rb.h).
 */
#ifndef SCALEKIT_RWLOCK_RB_H
#define SCALEKIT_RWLOCK_RB_H

#include <stdint.h>

#include "scalekit/barrier.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slots in each thread's row of the visible-readers table. */
#define SK__RWLOCK_RB_ROW_SLOTS 64

/*
 * Revocation cost multiplier: after a writer revoked the bias in T ns,
 * the bias stays off for SK_RWLOCK_RB_INHIBIT * T ns.
 */
#define SK_RWLOCK_RB_INHIBIT 9

/*
 * A read-biased reader-writer lock: 24 bytes, no pointers, no hidden
 * state.  Every field is private to the library (the lock functions are
 * out of line); initialize with SK_RWLOCK_RB_INITIALIZER or
 * sk_rwlock_rb_init().
 */
struct sk_rwlock_rb {
	int bias;	/* 1: readers may announce in the table */
	int rw;		/* underlying lock: readers << 2 | WWAIT | WRITER */
	int waiters;	/* threads sleeping on rw (futex) */
	int pad;	/* unused, 0 */
	uint64_t inhibit_until; /* CLOCK_MONOTONIC ns before which the bias
				   is not re-enabled; written by writers,
				   read by readers, under the underlying
				   lock */
};

#define SK_RWLOCK_RB_INITIALIZER { 1, 0, 0, 0, 0 }

/*
 * sk_rwlock_rb_init() - initialize l unlocked and biased.
 * Context: any thread; l must not be in use.
 */
SK_API void sk_rwlock_rb_init(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_destroy() - end the life of l.
 * Context: any thread; nobody may use l afterwards.
 * Returns: 0, or -EBUSY when l is held by a reader or a writer (l is left
 * unchanged).
 */
SK_API int sk_rwlock_rb_destroy(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_read_lock() - acquire l for reading.
 * Context: any thread; may block (futex) while a writer holds or waits
 * for l.  Not recursive: a thread that holds l must not take it again
 * (a writer waiting between the two acquisitions deadlocks them).
 * Ordering: acquire; the section is ordered after the previous writer's
 * sk_rwlock_rb_write_unlock().
 */
SK_API void sk_rwlock_rb_read_lock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_read_trylock() - acquire l for reading if that needs no
 * waiting.
 * Context: any thread; never blocks.
 * Ordering: acquire when it succeeds.
 * Returns: 0 (l is held for reading), or -EBUSY (a writer holds or waits
 * for l).
 */
SK_API int sk_rwlock_rb_read_trylock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_read_unlock() - release a read acquisition of l.
 * Context: the thread that took it; never blocks (wakes a writer).
 * Ordering: release; the section is ordered before the next writer's.
 * A release of a lock that no reader holds is reported, then aborts.
 */
SK_API void sk_rwlock_rb_read_unlock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_write_lock() - acquire l for writing.
 * Context: any thread; may block (futex) while others hold l, and waits
 * (spinning, then yielding) for readers announced in the table.  Not
 * recursive.
 * Ordering: acquire; the section is ordered after every earlier reader's
 * and writer's section.
 */
SK_API void sk_rwlock_rb_write_lock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_write_trylock() - acquire l for writing if no other thread
 * holds it.
 * Context: any thread; never waits for another thread (it scans the
 * readers' table once when l is biased, and gives up when a reader is
 * announced there).
 * Ordering: acquire when it succeeds.
 * Returns: 0 (l is held for writing), or -EBUSY.
 */
SK_API int sk_rwlock_rb_write_trylock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_write_unlock() - release a write acquisition of l.
 * Context: the thread that holds l for writing; never blocks (wakes
 * waiters).
 * Ordering: release.  A release of a lock that no writer holds is
 * reported, then aborts.
 */
SK_API void sk_rwlock_rb_write_unlock(struct sk_rwlock_rb *l);

/*
 * sk_rwlock_rb_is_biased() - 1 when l's readers currently announce in the
 * table, 0 when they take the underlying lock (for tests and statistics;
 * the answer may be stale by the time it is used).
 */
SK_API int sk_rwlock_rb_is_biased(const struct sk_rwlock_rb *l);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_RWLOCK_RB_H */
