/* SPDX-License-Identifier: MIT */
/*
 * scalekit/seqlock.h - a sequence lock: readers that never write shared
 * memory and retry when a writer overlapped them.
 *
 * A writer takes the writer lock (a futex mutex) and makes the sequence
 * count odd, writes the data, and makes it even again.  A reader reads
 * the count (waiting while it is odd), reads the data, and reads the
 * count again: if it changed, a writer overlapped the reads and the
 * reader retries:
 *
 *	do {
 *		seq = sk_seqlock_read_begin(&sl);
 *		a = SK_READ_ONCE(data.a);
 *		b = SK_READ_ONCE(data.b);
 *	} while (sk_seqlock_read_retry(&sl, seq));
 *
 * Readers scale perfectly (they only read the count's cache line), but a
 * reader may see a torn, inconsistent snapshot before its retry check:
 * it must not follow pointers or divide by values it read before the
 * check says the snapshot was consistent.  The data are read and written
 * with SK_READ_ONCE()/SK_WRITE_ONCE() (or other atomic accesses), since
 * readers and the writer access them concurrently.  Writers may starve
 * readers: a reader retries for as long as writers keep writing.
 *
 * Barrier pairs (the kernel's seqcount scheme):
 *
 *	writer                               reader
 *	SEQ-W0: seq = seq + 1 (odd)     SEQ-R0: s = seq (wait while odd)
 *	SEQ-W1: smp_wmb  -- pairs with  SEQ-R3: smp_rmb
 *	        data stores             SEQ-R1: smp_rmb  -- pairs with SEQ-W2
 *	SEQ-W2: smp_wmb  -- pairs with  SEQ-R1          data loads
 *	SEQ-W3: seq = seq + 1 (even)    SEQ-R3: smp_rmb; SEQ-R4: seq != s?
 *
 * SEQ-R1 (after reading seq) pairs with SEQ-W2: a reader that read the
 * even count of SEQ-W3 sees the data stores before it.  SEQ-R3 (before
 * re-reading seq) pairs with SEQ-W1: a reader whose data loads saw any
 * store of a write section reads at SEQ-R4 a count at least that
 * section's odd SEQ-W0.  The legend of the SEQ-* labels is in
 * src/internal/seqlock.h; docs/locks.md has the table.
 */
#ifndef SCALEKIT_SEQLOCK_H
#define SCALEKIT_SEQLOCK_H

#include "scalekit/barrier.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A sequence lock, 8 bytes.  ABI: seq is read and written by the inline
 * functions below; lock is private (the writer lock: 0 free, 1 held, 2
 * held with sleepers).  Initialize with SK_SEQLOCK_INITIALIZER or
 * sk_seqlock_init().
 */
struct sk_seqlock {
	unsigned int seq; /* ABI: even: no writer; odd: a writer writes */
	int lock;	  /* private: writer lock word */
};

#define SK_SEQLOCK_INITIALIZER { 0, 0 }

/* Slow paths of the inline functions; not for direct use. */
SK_API SK__NOTHROW unsigned int sk_seqlock__wait(const struct sk_seqlock *sl);
SK_API SK__NOTHROW void sk_seqlock__lock_slow(struct sk_seqlock *sl);
SK_API SK__NOTHROW void sk_seqlock__unlock_slow(struct sk_seqlock *sl, int old);

/*
 * sk_seqlock_init() - initialize sl: count 0, writer lock free.
 * Context: any thread; sl must not be in use.
 */
static inline void sk_seqlock_init(struct sk_seqlock *sl)
{
	sl->seq = 0;
	sl->lock = 0;
}

/*
 * sk_seqlock_destroy() - end the life of sl.
 * Context: any thread; nobody may use sl afterwards.
 * Returns: 0, or -EBUSY (-16) when a writer holds sl.
 */
SK_API int sk_seqlock_destroy(struct sk_seqlock *sl);

/*
 * sk_seqlock_read_begin() - start a read attempt; returns the count to
 * pass to sk_seqlock_read_retry().
 * Context: any thread, any context; never blocks, but waits (spinning,
 * then yielding) while a writer is inside its section.  Must not be
 * called by the thread that holds sl for writing (it would wait
 * forever).
 * Ordering: SEQ-R0 + SEQ-R1: the loads after it are ordered after the
 * count load.
 */
static inline unsigned int sk_seqlock_read_begin(const struct sk_seqlock *sl)
{
	unsigned int s = SK_READ_ONCE(sl->seq); /* SEQ-R0 */

	if (SK_UNLIKELY(s & 1))
		s = sk_seqlock__wait(sl);
	/* SEQ-R1: count before data; pairs with SEQ-W2 in write_unlock. */
	sk_smp_rmb();
	return s;
}

/*
 * sk_seqlock_read_retry() - 1 when a writer overlapped the reads since
 * sk_seqlock_read_begin() returned start (read again), 0 when they saw
 * one consistent snapshot.
 * Context: any thread, any context; never blocks.
 * Ordering: SEQ-R3 + SEQ-R4: the data loads before it are ordered before the
 * count load.
 */
static inline int sk_seqlock_read_retry(const struct sk_seqlock *sl,
					unsigned int start)
{
	/* SEQ-R3: data before count; pairs with SEQ-W1 in write_lock. */
	sk_smp_rmb();
	return SK_UNLIKELY(SK_READ_ONCE(sl->seq) != start); /* SEQ-R4 */
}

/*
 * sk_seqlock_write_lock() - acquire the writer lock and open a write
 * section: the count becomes odd, readers wait and retry.
 * Context: any thread; may block (futex) while another writer holds sl.
 * Not recursive.
 * Ordering: acquire (against the previous writer), then SEQ-W0 + SEQ-W1: the
 * count store is ordered before the data stores that follow.
 */
static inline void sk_seqlock_write_lock(struct sk_seqlock *sl)
{
	int z = 0;

	/* L: acquire; pairs with the release L' in sk_seqlock_write_unlock(). */
	if (!__atomic_compare_exchange_n(&sl->lock, &z, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		sk_seqlock__lock_slow(sl);
	SK_WRITE_ONCE(sl->seq, sl->seq + 1); /* SEQ-W0: odd */
	/* SEQ-W1: count before data; pairs with SEQ-R3 in read_retry. */
	sk_smp_wmb();
}

/*
 * sk_seqlock_write_unlock() - close the write section (the count becomes
 * even) and release the writer lock.
 * Context: the thread that holds sl for writing; never blocks (may wake
 * a waiting writer).  A release of an unheld sl is reported, then aborts.
 * Ordering: SEQ-W2 + SEQ-W3: the data stores before it are ordered before the
 * count store; release (against the next writer).
 */
static inline void sk_seqlock_write_unlock(struct sk_seqlock *sl)
{
	int old;

	/* SEQ-W2: data before count; pairs with SEQ-R1 in read_begin. */
	sk_smp_wmb();
	SK_WRITE_ONCE(sl->seq, sl->seq + 1); /* SEQ-W3: even */
	/* L': release; pairs with L in sk_seqlock_write_lock(). */
	old = __atomic_exchange_n(&sl->lock, 0, __ATOMIC_RELEASE);

	if (SK_UNLIKELY(old != 1))
		sk_seqlock__unlock_slow(sl, old);
}

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_SEQLOCK_H */
