/* SPDX-License-Identifier: MIT */
/*
 * The simulated transactional backend, compiled only into the test-only
 * SK_ELIDE_SIM build of the library (tests/elide_sim.cmake).  It stands in
 * for the RTM instructions, so that the state machine of src/elide.c runs
 * its RTM code on any CPU:
 *
 *  - one flat transaction per thread with a nesting count, kept the way
 *    the hardware keeps it.  sk__sim_xbegin() (XBEGIN) outside a
 *    transaction starts one, or returns an abort status that a test
 *    injected (sk__elide_sim_inject(), in order, per thread) or a random
 *    one (sk__elide_sim_random()); inside a transaction it only increments
 *    the count.  sk__sim_xend() (XEND) at a count above 1 only decrements
 *    it; at 1 it commits.  sk__sim_xtest() (XTEST) is 1 while the count
 *    is above 0;
 *  - the read set: where the hardware reads a lock word into the read set,
 *    the section claims its lock instead (sk__sim_read_lock()): it marks
 *    the word (mutex/spinlock SIM bit, rwlock SIM bit for a writer, a real
 *    reader count for a reader) only if the lock is free, so real holders
 *    and simulated sections exclude each other as a hardware abort would
 *    make them.  A lock elided again inside the same transaction (a
 *    reader that nests) is counted, not marked twice.  The claims that
 *    are left when the transaction ends are released by its commit;
 *  - one departure: src/elide.c releases a claim when the lock it covers
 *    is unlocked inside the transaction (sk__sim_read_unlock()).  The
 *    hardware keeps that word in the read set until the commit, but a
 *    real locker's write to it only aborts the transaction; a claim kept
 *    that long would make the locker wait instead, a deadlock the
 *    hardware does not have (X{ Y{} Z{} } in one thread against Z{ Y{} }
 *    in another);
 *  - it cannot roll back, so an abort requested after the transaction
 *    began (sk__sim_xabort(): trylock inside it, a busy nested lock) dooms
 *    it: the code runs on (still exclusive: a busy nested lock is then
 *    taken for real) and the commit returns the abort status in place of
 *    0, as the outermost XBEGIN would have.  Only an abort right after the
 *    outermost XBEGIN, before anything ran (the lock was busy at the
 *    start), is undone for real (sk__sim_unwind());
 *  - the broken twins: sk__elide_sim_busted(1) makes sections mark the
 *    lock without looking whether it is free (readers mark nothing), the
 *    twin of "the lock word is read inside the transaction";
 *    sk__elide_sim_busted_nesting(1) makes src/elide.c end the transaction
 *    at every elided unlock, the twin of "XEND only at the outermost
 *    elided unlock" (issue 24); sk__elide_sim_busted_spin(1) makes a
 *    spinlock claim judge the lock free on a second load of the word
 *    rather than on the value its CAS expects (the ABA fixed in
 *    a97ea0a), which sk__elide_sim_set_spin_hook() lets a test drive.
 */
#ifdef SK_ELIDE_SIM
#define _GNU_SOURCE
#include <stdint.h>

#include "internal/elide.h"
#include "internal/util.h"

#define SIM_MAX_READS  32 /* claims per transaction; more: capacity abort */
#define SIM_MAX_INJECT 32

/* One lock in the read set of the simulated transaction. */
struct sim_read {
	void *lock;	    /* the claimed lock */
	int kind;	    /* enum sk__elide_kind it was claimed as */
	int marked;	    /* its word carries our mark (not a busted reader's) */
	unsigned int count; /* elided acquisitions not yet unlocked */
};

/* Guarded by: the thread itself (thread-local). */
static __thread struct {
	unsigned int nest;		     /* XBEGIN nesting count, 0: none */
	unsigned int doom;		     /* pending late abort status, or 0 */
	struct sim_read reads[SIM_MAX_READS]; /* the read set, oldest first */
	unsigned int nreads;		     /* entries of reads[] in use */
	unsigned int inject[SIM_MAX_INJECT]; /* injected statuses (FIFO) */
	unsigned int ninject, next;	     /* queue length, next to use */
	uint64_t rng;			     /* random-abort state */
} sim;

static unsigned int sim_permille; /* random aborts per 1000 begins */
static unsigned long sim_seed;
static int sim_busted;		  /* twin: claims do not look at the word */
static int sim_busted_nesting;	  /* twin: every elided unlock ends the tx */
static int sim_busted_spin;	  /* twin: a spin claim judges a 2nd load */
static void (*sim_spin_hook)(int where); /* sk__elide_sim_set_spin_hook() */

void sk__elide_sim_inject(unsigned int status)
{
	if (sim.next == sim.ninject)
		sim.next = sim.ninject = 0;
	if (sim.ninject < SIM_MAX_INJECT)
		sim.inject[sim.ninject++] = status;
}

void sk__elide_sim_random(unsigned int permille, unsigned long seed)
{
	/* Relaxed: a test knob, set before the threads start. */
	__atomic_store_n(&sim_seed, seed, __ATOMIC_RELAXED);
	__atomic_store_n(&sim_permille, permille, __ATOMIC_RELAXED);
}

void sk__elide_sim_busted(int on)
{
	__atomic_store_n(&sim_busted, on, __ATOMIC_RELAXED); /* as above */
}

void sk__elide_sim_busted_nesting(int on)
{
	/* Relaxed: a test knob, set while no section runs. */
	__atomic_store_n(&sim_busted_nesting, on, __ATOMIC_RELAXED);
}

void sk__elide_sim_busted_spin(int on)
{
	/* Relaxed: a test knob, set while no section runs. */
	__atomic_store_n(&sim_busted_spin, on, __ATOMIC_RELAXED);
}

void sk__elide_sim_set_spin_hook(void (*fn)(int where))
{
	/* Release: fn sees what the test wrote before (acquire in the claim). */
	__atomic_store_n(&sim_spin_hook, fn, __ATOMIC_RELEASE);
}

/* Call the test's hook, if any, at point where of a spinlock claim. */
static void sim_spin_step(int where)
{
	void (*fn)(int) = __atomic_load_n(&sim_spin_hook, __ATOMIC_ACQUIRE);

	if (fn)
		fn(where);
}

int sk__sim_busted_nesting(void)
{
	return __atomic_load_n(&sim_busted_nesting, __ATOMIC_RELAXED); /* knob */
}

static unsigned int sim_rand(void)
{
	uint64_t x = sim.rng;

	if (!x)
		x = (__atomic_load_n(&sim_seed, __ATOMIC_RELAXED) ^
		     (uint64_t)sk__gettid() * 0x9e3779b97f4a7c15ull) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	sim.rng = x;
	return (unsigned int)(x >> 32);
}

/* ---- the instructions ------------------------------------------------------ */

unsigned int sk__sim_xbegin(void)
{
	static const unsigned int causes[] = {
		SK__TX_CONFLICT | SK__TX_RETRY, SK__TX_CAPACITY,
		SK__TX_ABORTED(1), 0
	};
	unsigned int pm = __atomic_load_n(&sim_permille, __ATOMIC_RELAXED);

	if (sim.nest) { /* nested: one flat transaction, count only */
		sim.nest++;
		return SK__TX_STARTED;
	}
	if (sim.next < sim.ninject)
		return sim.inject[sim.next++];
	if (pm && sim_rand() % 1000 < pm)
		return causes[sim_rand() % 4];
	sim.nest = 1;
	return SK__TX_STARTED;
}

int sk__sim_xtest(void)
{
	return sim.nest > 0;
}

void sk__sim_xabort(unsigned int status)
{
	/* Outside a transaction XABORT does nothing; the first abort wins. */
	if (sim.nest && !sim.doom)
		sim.doom = status;
}

static void sim_unmark(int kind, void *lock)
{
	switch (kind) {
	case SK__ELIDE_MUTEX:
		sk__mutex_unlock_real(lock, SK__ELIDED_MUTEX_SIM);
		break;
	case SK__ELIDE_SPIN:
		/* EL-S2: release; pairs with EL-SL2 of the next holder. */
		__atomic_fetch_and((unsigned int *)lock, ~SK__ELIDED_SPIN_SIM,
				   __ATOMIC_RELEASE);
		break;
	case SK__ELIDE_RW_WRITE:
		sk__rw_unclaim_sim(&((struct sk_elided_rwlock *)lock)->word);
		break;
	default:
		sk__rw_read_unlock_real(
			&((struct sk_elided_rwlock *)lock)->word);
	}
}

/* The transaction is over: release its read set, newest claim first. */
static void sim_finish(void)
{
	struct sim_read *r;

	while (sim.nreads) {
		r = &sim.reads[--sim.nreads];
		if (r->marked)
			sim_unmark(r->kind, r->lock);
	}
	sim.nest = 0;
}

unsigned int sk__sim_xend(void)
{
	unsigned int doom = sim.doom;

	if (!sim.nest) /* the hardware raises #GP */
		sk__die("XEND outside a simulated transaction");
	if (--sim.nest)
		return 0; /* inner XEND: the transaction goes on */
	sim.doom = 0;
	sim_finish();
	return doom;
}

unsigned int sk__sim_unwind(unsigned int status)
{
	if (sim.nest > 1) {
		/* Inside a transaction begun before: that one cannot unwind. */
		sim.nest--;
		sk__sim_xabort(status);
		return status;
	}
	sim.doom = 0;
	sim_finish();
	return status;
}

/* ---- the read set ------------------------------------------------------------ */

/* The busted twin: mark without looking whether the lock is free. */
static int sim_mark_blind(int kind, void *lock)
{
	if (kind == SK__ELIDE_RW_READ)
		return 0;
	if (kind == SK__ELIDE_RW_WRITE)
		lock = &((struct sk_elided_rwlock *)lock)->word;
	/* Relaxed: the twin is meant to break the ordering. */
	__atomic_fetch_or((unsigned int *)lock,
			  kind == SK__ELIDE_SPIN	   ? SK__ELIDED_SPIN_SIM
			  : kind == SK__ELIDE_MUTEX ? SK__ELIDED_MUTEX_SIM
						   : 2u,
			  __ATOMIC_RELAXED);
	return 1;
}

/* Mark the lock as held by this simulated section if it is free. */
static int sim_mark(int kind, void *lock)
{
	unsigned int *w = lock, v, seen;

	switch (kind) {
	case SK__ELIDE_MUTEX:
	case SK__ELIDE_RW_WRITE:
		if (kind == SK__ELIDE_RW_WRITE)
			w = &((struct sk_elided_rwlock *)lock)->word;
		v = 0;
		/* EL-S1: acquire; pairs with the release of the last holder. */
		return __atomic_compare_exchange_n(
			w, &v, kind == SK__ELIDE_MUTEX ? SK__ELIDED_MUTEX_SIM : 2u,
			0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	case SK__ELIDE_SPIN:
		/*
		 * Free is judged on v, the value the CAS expects: a second
		 * load could see the word free between another section's
		 * unmark and a third one's mark, and the CAS from a v that
		 * carries that third section's mark would then succeed
		 * (ABA on the SIM bit: two sections claiming the lock).
		 */
		v = __atomic_load_n(w, __ATOMIC_RELAXED);
		sim_spin_step(SK__SIM_SPIN_LOADED);
		/* The twin judges the second load this replaced (a97ea0a). */
		seen = __atomic_load_n(&sim_busted_spin, __ATOMIC_RELAXED)
			       ? __atomic_load_n(w, __ATOMIC_RELAXED)
			       : v;
		if (!SK__SPIN_FREE(seen))
			return 0;
		sim_spin_step(SK__SIM_SPIN_CAS);
		/* EL-S1 as above. */
		return __atomic_compare_exchange_n(w, &v,
						   v | SK__ELIDED_SPIN_SIM, 0,
						   __ATOMIC_ACQUIRE,
						   __ATOMIC_RELAXED);
	default:
		return !sk__rw_read_trylock_real(
			&((struct sk_elided_rwlock *)lock)->word);
	}
}

int sk__sim_read_lock(int kind, void *lock)
{
	struct sim_read *r;
	unsigned int i;

	for (i = 0; i < sim.nreads; i++)
		if (sim.reads[i].lock == lock && sim.reads[i].kind == kind) {
			sim.reads[i].count++; /* in the read set already */
			return 1;
		}
	if (sim.nreads == SIM_MAX_READS) {
		sk__sim_xabort(SK__TX_CAPACITY);
		return 0;
	}
	r = &sim.reads[sim.nreads];
	if (__atomic_load_n(&sim_busted, __ATOMIC_RELAXED))
		r->marked = sim_mark_blind(kind, lock);
	else if (sim_mark(kind, lock))
		r->marked = 1;
	else
		return 0;
	r->lock = lock;
	r->kind = kind;
	r->count = 1;
	sim.nreads++;
	return 1;
}

void sk__sim_read_unlock(int kind, void *lock)
{
	unsigned int i = sim.nreads;

	while (i > 0 && (sim.reads[i - 1].lock != lock ||
			 sim.reads[i - 1].kind != kind))
		i--;
	if (!i || --sim.reads[i - 1].count)
		return; /* not claimed (any more), or elided again inside */
	if (sim.reads[i - 1].marked)
		sim_unmark(kind, lock);
	for (; i < sim.nreads; i++)
		sim.reads[i - 1] = sim.reads[i];
	sim.nreads--;
}
#else
typedef int sk__elide_sim_absent; /* ISO C: no empty translation unit */
#endif /* SK_ELIDE_SIM */
