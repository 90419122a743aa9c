/* SPDX-License-Identifier: MIT */
/*
 * Internals of the elided locks: the transaction primitives of each
 * backend and the state machine that src/elide.c runs for every lock
 * kind (src/elide_locks.c).  Never installed.
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

/* RTM abort status (EAX after an abort), as the SDM defines it. */
#define SK__TX_STARTED	 (~0u)
#define SK__TX_EXPLICIT	 (1u << 0)
#define SK__TX_RETRY	 (1u << 1)
#define SK__TX_CONFLICT	 (1u << 2)
#define SK__TX_CAPACITY	 (1u << 3)
#define SK__TX_DEBUG	 (1u << 4)
#define SK__TX_NESTED	 (1u << 5)
#define SK__TX_CODE(s)	 ((s) >> 24)
/* Our XABORT codes: the lock was busy; trylock inside a transaction. */
#define SK__XABORT_BUSY	   0xff
#define SK__XABORT_TRYLOCK 0xfe
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
 * the real lock.  sk__elide_exit(): 1 when the lock was elided and the
 * section has ended (committed), 0 when it was not elided.
 */
int sk__elide_enter(int kind, void *lock, unsigned int *policy,
		    struct sk_elide_stats *stats);
int sk__elide_exit(int kind, void *lock, unsigned int *policy,
		   struct sk_elide_stats *stats);
/* Before a real trylock: abort the transaction if the thread is in one. */
void sk__elide_trylock_check(void);
/* 1 when the lock word lets an elided section of this kind run. */
int sk__elide_lock_free(int kind, void *lock);

/* Real (non-elided) fallback locks, shared by the three lock kinds. */
void sk__mutex_lock_real(int *word);
int sk__mutex_trylock_real(int *word);
void sk__mutex_unlock_real(int *word, unsigned int held);
void sk__spin_lock_real(unsigned int *word);
int sk__rw_read_trylock_real(unsigned int *word);
void sk__rw_read_unlock_real(unsigned int *word);

#ifdef SK_ELIDE_SIM
/* The simulated backend (src/elide_sim.c); test-only hooks. */
unsigned int sk__sim_begin(void);
int sk__sim_depth(void);
int sk__sim_claim(int kind, void *lock);
int sk__sim_release(int kind, void *lock);
void sk__sim_doom(unsigned int status);
void sk__rw_unclaim_sim(unsigned int *word);
unsigned int sk__sim_take_doom(void);
void sk__elide_sim_inject(unsigned int status);
void sk__elide_sim_random(unsigned int permille, unsigned long seed);
void sk__elide_sim_busted(int on);
#endif

/* Relaxed increment of one counter of an attached struct sk_elide_stats. */
#define SK__STAT_INC(stats, field)                                       \
	do {                                                             \
		if (stats)                                               \
			__atomic_fetch_add(&(stats)->field, 1,           \
					   __ATOMIC_RELAXED);            \
	} while (0)

#endif /* SCALEKIT_INTERNAL_ELIDE_H */
