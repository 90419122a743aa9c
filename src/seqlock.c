/* SPDX-License-Identifier: MIT */
/*
 * Slow paths of the sequence lock (scalekit/seqlock.h): readers waiting
 * for a writer to finish, and the writer lock's futex waits and wakes.
 * The writer lock is the classic three-state futex mutex: 0 free, 1 held,
 * 2 held and somebody may sleep on it.
 */
#define _GNU_SOURCE
#include "scalekit/seqlock.h"

#include <errno.h>
#include <sched.h>

#include "internal/util.h"

/* Spins before a waiting reader yields or a waiting writer sleeps. */
#define SEQ_SPINS 128

unsigned int sk_seqlock__wait(const struct sk_seqlock *sl)
{
	unsigned int spins = 0, s;

	/* SEQ-R0 again: the caller's SEQ-R1 orders the data loads after it. */
	while ((s = SK_READ_ONCE(sl->seq)) & 1) {
		if (++spins < SEQ_SPINS)
			sk_cpu_relax();
		else
			sched_yield(); /* the writer may be preempted */
	}
	return s;
}

void sk_seqlock__lock_slow(struct sk_seqlock *sl)
{
	unsigned int spins;
	int z;

	for (spins = 0; spins < SEQ_SPINS; spins++) {
		z = 0;
		/* L: acquire; pairs with L' of the previous writer. */
		if (SK_READ_ONCE(sl->lock) == 0 &&
		    __atomic_compare_exchange_n(&sl->lock, &z, 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		sk_cpu_relax();
	}
	/*
	 * L: acquire.  Mark the lock contended (2) before sleeping: the
	 * holder's L' exchange then returns 2 and wakes us.  Whoever gets
	 * the lock here keeps the 2, so it wakes the next sleeper too.
	 */
	while (__atomic_exchange_n(&sl->lock, 2, __ATOMIC_ACQUIRE) != 0)
		sk__futex_wait(&sl->lock, 2);
}

void sk_seqlock__unlock_slow(struct sk_seqlock *sl, int old)
{
	if (old == 0)
		sk__die("sk_seqlock_write_unlock(%p): not held for writing",
			(void *)sl);
	/* old == 2: a writer may sleep; the exchange (L') came first. */
	sk__futex_wake(&sl->lock, 1);
}

int sk_seqlock_destroy(struct sk_seqlock *sl)
{
	if (SK_READ_ONCE(sl->lock) != 0 || (SK_READ_ONCE(sl->seq) & 1))
		return -EBUSY;
	return 0;
}
