/* SPDX-License-Identifier: MIT */
/*
 * Internals of the elided locks: the transaction primitives of each
 * backend and the state machine that src/elide.c runs for every lock
 * kind (src/elide_locks.c).  Never installed.
 *
 * Barrier pairs, the legend of the EL-* labels (the file placing each
 * one in brackets; a transaction needs no fence of its own: a committed
 * one is atomic and ordered as a locked instruction):
 *   EL-L0  mutex lock of the only thread: relaxed store of the word [elide.h];
 *          no other thread to order against (a thread created later
 *          starts after pthread_create(), which orders).
 *   EL-L1  mutex lock, inline fast path: acquire CAS [elide.h]; pairs with
 *          EL-U1 or EL-M2 of the previous holder.
 *   EL-U0  mutex unlock of the only thread: release store [elide.h], as
 *          EL-L0 (release for the compiler).
 *   EL-U1  mutex unlock, inline fast path: release CAS [elide.h]; pairs
 *          with EL-L1 or EL-M1 of the next holder.
 *   EL-M1  mutex (and the rwlock's writers' mutex: its first CAS and its
 *          slow path), slow path: acquire CAS [elide_locks.c]; pairs with
 *          EL-M2, EL-U1 or EL-SU1.
 *   EL-M2  mutex unlock, slow path: release CAS that clears the held bit
 *          [elide_locks.c]; pairs with EL-M1 or EL-L1 of the next holder.
 *   EL-SL1 spinlock lock: acquire fetch_add taking a ticket [elide.h,
 *          elide_locks.c]; pairs with EL-SU1 of the previous holder.
 *   EL-SL2 spinlock waiter: acquire load of the owner field until it is
 *          its ticket [elide_locks.c]; pairs with EL-SU1 or EL-S2.
 *   EL-SU1 spinlock unlock: release fetch_add of the owner field
 *          [elide.h, elide_locks.c]; pairs with EL-SL1/EL-SL2.
 *   EL-R1  rwlock reader: acquire CAS (or fetch_add, undone when a writer
 *          is there) of the reader count [elide_locks.c]; pairs with
 *          EL-W2 of the last writer.
 *   EL-R2  rwlock reader unlock: release sub [elide_locks.c]; pairs with
 *          EL-W1 of a waiting writer.
 *   EL-W1  rwlock writer: acquire load until the readers are gone
 *          [elide_locks.c]; pairs with EL-R2 of every reader that leaves.
 *   EL-W2  rwlock writer unlock: release fetch_and of WRITER
 *          [elide_locks.c]; pairs with EL-R1 of the next readers.
 *   EL-S1  simulated backend (test build), claim of a lock for a
 *          simulated transaction: acquire CAS [elide_sim.c]; pairs with
 *          the release of the last holder (EL-U1, EL-M2, EL-SU1, EL-W2).
 *   EL-S2  simulated backend, release of a spinlock's SIM bit
 *          [elide_sim.c]; pairs with EL-SL2 of the next ticket holder.
 * Litmus tests (litmus/, see docs/litmus.md): every pair above is a lock
 * hand-off, message passing from one holder to the next:
 * MP+rel+acq.litmus; the critical sections themselves:
 * spinlock-counter.litmus.
 */
#ifndef SCALEKIT_INTERNAL_ELIDE_H
#define SCALEKIT_INTERNAL_ELIDE_H

#include "scalekit/elide.h"

/* The lock kinds the state machine knows how to test and claim. */
enum sk__elide_kind {
	SK__ELIDE_MUTEX,
	SK__ELIDE_SPIN,
	SK__ELIDE_RW_READ,
	SK__ELIDE_RW_WRITE
};

/*
 * The mutex word (the unsigned view of struct sk_elided_mutex.word, and of
 * the rwlock's writers' mutex): bit 0 LOCKED, bit 1 WAITERS (someone may
 * sleep in FUTEX_WAIT), bit 2 SIM (held by a simulated transaction; test
 * build only), bits 3..16 serving and bits 18..31 next: the handoff
 * tickets (bit 17 is always 0).  serving != next means handoff mode: the
 * lock goes only to the waiter whose ticket is serving.  Idle tickets are
 * 0 (the last ticket holder resets them), so a free mutex is the word 0.
 *
 * A waiter takes a ticket with one fetch_add of SK__M_NEXT_ONE.  next is
 * the topmost field so that the carry out of it, when it wraps from
 * SK__M_TMASK to 0, leaves the 32-bit word and is lost: no bit outside
 * the field can ever be set by it.  (Issue 24: with next at bits 17..30
 * the carry went into bit 31, which nothing clears, after 16384 tickets.)
 * Tests preset the fields with SK__M_TICKETS_AT() to start near the wrap.
 */
#define SK__M_SERVE_SHIFT 3
#define SK__M_NEXT_SHIFT  18
#define SK__M_TMASK	  0x3fffu
#define SK__M_NEXT_ONE	  (1u << SK__M_NEXT_SHIFT)
#define SK__M_TICKETS_AT(serving, next)                      \
	((((serving) & SK__M_TMASK) << SK__M_SERVE_SHIFT) | \
	 (((next) & SK__M_TMASK) << SK__M_NEXT_SHIFT))
#define SK__M_TICKETS SK__M_TICKETS_AT(SK__M_TMASK, SK__M_TMASK)

static inline unsigned int sk__m_serving(unsigned int v)
{
	return (v >> SK__M_SERVE_SHIFT) & SK__M_TMASK;
}

static inline unsigned int sk__m_next(unsigned int v)
{
	return (v >> SK__M_NEXT_SHIFT) & SK__M_TMASK;
}

/* RTM abort status (EAX after an abort), as the SDM defines it. */
#define SK__TX_STARTED	 (~0u)
#define SK__TX_EXPLICIT	 (1u << 0)
#define SK__TX_RETRY	 (1u << 1)
#define SK__TX_CONFLICT	 (1u << 2)
#define SK__TX_CAPACITY	 (1u << 3)
#define SK__TX_DEBUG	 (1u << 4)
#define SK__TX_NESTED	 (1u << 5)
#define SK__TX_CODE(s)	 ((s) >> 24)
/*
 * Our XABORT codes: the lock was busy; trylock inside a transaction; more
 * than SK__ELIDE_MAX_NEST elided locks at once in one thread.
 */
#define SK__XABORT_BUSY	   0xff
#define SK__XABORT_TRYLOCK 0xfe
#define SK__XABORT_NESTED  0xfd
#define SK__ELIDE_MAX_NEST 8
#define SK__TX_ABORTED(code) (SK__TX_EXPLICIT | ((unsigned)(code) << 24))

#if (defined(__x86_64__) || defined(__i386__)) && !defined(SK_ELIDE_SIM)
#define SK__ELIDE_RTM 1
/*
 * RTM instructions as bytes, so that no -mrtm is needed and the compiler
 * never emits them by itself.  They are executed only when sk__elide_rtm
 * says the CPU has RTM (else they would raise #UD).
 */
static inline unsigned int sk__xbegin(void)
{
	unsigned int status = SK__TX_STARTED;

	/* XBEGIN rel32=0: on abort, resume right here with EAX = status. */
	__asm__ __volatile__(".byte 0xc7, 0xf8; .long 0"
			     : "+a"(status)
			     :
			     : "memory");
	return status;
}

static inline void sk__xend(void)
{
	__asm__ __volatile__(".byte 0x0f, 0x01, 0xd5" ::: "memory");
}

#define sk__xabort(code) \
	__asm__ __volatile__(".byte 0xc6, 0xf8, %P0" ::"i"(code) : "memory")

static inline int sk__xtest(void)
{
	unsigned char in;

	__asm__ __volatile__(".byte 0x0f, 0x01, 0xd6; setnz %0"
			     : "=qm"(in)
			     :
			     : "memory");
	return in;
}
#endif

/* 1 when the CPU implements the RTM instructions (CPUID bit). */
extern int sk__elide_rtm;

/* Knobs, read with relaxed loads on the elision paths. */
extern struct sk_elide_tuning sk__elide_tuning;

/*
 * The state machine.  sk__elide_enter(): 1 when the section now runs
 * elided (the caller returns to the user), 0 when the caller must take
 * the real lock.  sk__elide_exit(): 1 when this thread had elided the
 * lock (the transaction is committed when it was the last of the thread's
 * elided locks), 0 when it had not: the caller unlocks it for real.  It
 * takes the address of the lock's statistics pointer and loads it only
 * for a lock the thread elided: a real unlock then touches the lock's
 * cache line only in its own atomic operation (under contention, a load
 * before it would cost one more transfer of the line).
 */
int sk__elide_enter(int kind, void *lock, unsigned int *policy,
		    struct sk_elide_stats *stats);
int sk__elide_exit(int kind, void *lock, unsigned int *policy,
		   struct sk_elide_stats *const *statsp);
/* Before a real trylock: abort the transaction if the thread is in one. */
void sk__elide_trylock_check(void);
/* Real (non-elided) fallback locks, shared by the three lock kinds. */
void sk__mutex_lock_real(int *word);
int sk__mutex_trylock_real(int *word);
void sk__mutex_unlock_real(int *word, unsigned int held);
void sk__spin_lock_real(unsigned int *word);
int sk__rw_read_trylock_real(unsigned int *word);
void sk__rw_read_unlock_real(unsigned int *word);

#ifdef SK_ELIDE_SIM
/*
 * The simulated backend (src/elide_sim.c), in place of the instructions:
 * XBEGIN, XEND (0: committed, or the abort status decided after the
 * transaction began, which the hardware would have rolled back to the
 * outermost XBEGIN), XABORT (records the abort, returns), XTEST; undoing
 * an XBEGIN after which nothing ran; putting a lock word in the read set
 * (0: the lock is busy) and taking it out when its lock is unlocked.
 */
unsigned int sk__sim_xbegin(void);
unsigned int sk__sim_xend(void);
void sk__sim_xabort(unsigned int status);
int sk__sim_xtest(void);
unsigned int sk__sim_unwind(unsigned int status);
int sk__sim_read_lock(int kind, void *lock);
void sk__sim_read_unlock(int kind, void *lock);
void sk__rw_unclaim_sim(unsigned int *word);
/* Is the nesting twin on (sk__elide_sim_busted_nesting(), testing.h)? */
int sk__sim_busted_nesting(void);
#endif

/*
 * The simulated backend's marks in the lock words (the testing build
 * only): a simulated transaction that holds a mutex or a spinlock.  The
 * spinlock's is the public header's SLOW bit, which sends the inline
 * lock and unlock to the slow paths.
 */
#define SK__ELIDED_MUTEX_SIM 4u
#define SK__ELIDED_SPIN_SIM SK__ELIDED_SPIN_SLOW
#include "testing.h" /* the simulated backend's hooks and its backend value */

/*
 * The rwlock word: bit 0 WRITER, bit 1 SIM, bit 2 WSLEEP (the writer that
 * set WRITER sleeps until the readers inside are gone: the last one out
 * wakes it), readers counted from bit 3.
 */
#define SK__RW_WRITER 1u
#define SK__RW_SIM    2u
#define SK__RW_WSLEEP 4u
#define SK__RW_ONE    8u

/* A spinlock word that no ticket holds (and no simulated transaction). */
#define SK__SPIN_FREE(w)                                         \
	(((w) & SK__ELIDED_SPIN_OWNER_MASK) ==                   \
		 (((w) >> 16) & SK__ELIDED_SPIN_OWNER_MASK) &&    \
	 !((w) & SK__ELIDED_SPIN_SIM))

/*
 * 1 when the lock word lets an elided section of this kind run.  Called
 * inside the transaction: its load puts the word in the read set, so a
 * later real acquisition aborts the section.  Here, next to the layouts it
 * reads, for src/elide.c (the state machine) and src/elide_sim.c, which
 * are listed below and above the locks (src/layers.txt).
 */
static inline int sk__elide_lock_free(int kind, void *lock)
{
	switch (kind) {
	case SK__ELIDE_MUTEX:
		return __atomic_load_n((int *)lock, __ATOMIC_RELAXED) == 0;
	case SK__ELIDE_SPIN:
		return SK__SPIN_FREE(__atomic_load_n((unsigned int *)lock,
						     __ATOMIC_RELAXED));
	case SK__ELIDE_RW_READ:
		return !(__atomic_load_n(
				 &((struct sk_elided_rwlock *)lock)->word,
				 __ATOMIC_RELAXED) &
			 (SK__RW_WRITER | SK__RW_SIM));
	default:
		return __atomic_load_n(&((struct sk_elided_rwlock *)lock)->word,
				       __ATOMIC_RELAXED) == 0;
	}
}

/* Relaxed increment of one counter of an attached struct sk_elide_stats. */
#define SK__STAT_INC(stats, field)                                       \
	do {                                                             \
		if (stats)                                               \
			__atomic_fetch_add(&(stats)->field, 1,           \
					   __ATOMIC_RELAXED);            \
	} while (0)

#endif /* SCALEKIT_INTERNAL_ELIDE_H */
