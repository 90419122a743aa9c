/* SPDX-License-Identifier: MIT */
/*
 * The simulated transactional backend, compiled only into the test-only
 * SK_ELIDE_SIM build of the library (tests/elide_sim.cmake).  It drives
 * the state machine of src/elide.c on any CPU:
 *
 *  - sk__sim_begin() is XBEGIN: it returns an abort status that a test
 *    injected (sk__elide_sim_inject(), in order, per thread), a random
 *    one (sk__elide_sim_random()), or "started";
 *  - a started simulated section claims its lock instead of reading the
 *    word: it marks the word (mutex/spinlock SIM bit, rwlock SIM bit for
 *    a writer, a real reader count for a reader) only if the lock is
 *    free, so real holders and simulated sections exclude each other as
 *    a hardware abort would make them;
 *  - it cannot roll back, so an abort requested after the section began
 *    (trylock inside it, a busy lock nested inside it) dooms it: the
 *    section runs on (still exclusive: a busy nested lock is then taken
 *    for real) and the abort is reported when the outermost section
 *    ends, in place of the commit.
 *  - sk__elide_sim_busted(1) makes sections mark the lock without
 *    looking whether it is free (readers mark nothing): the broken twin
 *    of "the lock word is read inside the transaction".
 */
#ifdef SK_ELIDE_SIM
#define _GNU_SOURCE
#include <stdint.h>

#include "internal/elide.h"
#include "internal/util.h"

#define SIM_MAX_DEPTH 8
#define SIM_MAX_INJECT 32

static __thread struct {
	void *locks[SIM_MAX_DEPTH];	 /* claimed locks, outermost first */
	int depth;			 /* number of claimed locks */
	unsigned int doom;		 /* pending late abort status, or 0 */
	unsigned int inject[SIM_MAX_INJECT]; /* injected statuses (FIFO) */
	unsigned int ninject, next;	 /* queue length, next to use */
	uint64_t rng;			 /* random-abort state */
} sim;

static unsigned int sim_permille; /* random aborts per 1000 begins */
static unsigned long sim_seed;
static int sim_busted;

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

unsigned int sk__sim_begin(void)
{
	static const unsigned int causes[] = {
		SK__TX_CONFLICT | SK__TX_RETRY, SK__TX_CAPACITY,
		SK__TX_ABORTED(1), 0
	};
	unsigned int pm = __atomic_load_n(&sim_permille, __ATOMIC_RELAXED);

	if (sim.next < sim.ninject)
		return sim.inject[sim.next++];
	if (pm && sim_rand() % 1000 < pm)
		return causes[sim_rand() % 4];
	return SK__TX_STARTED;
}

int sk__sim_depth(void)
{
	return sim.depth;
}

void sk__sim_doom(unsigned int status)
{
	if (!sim.doom)
		sim.doom = status;
}

unsigned int sk__sim_take_doom(void)
{
	unsigned int d = sim.doom;

	sim.doom = 0;
	return d;
}

/* The busted twin: mark without looking whether the lock is free. */
static int sim_mark_blind(int kind, void *lock)
{
	if (kind == SK__ELIDE_RW_READ)
		return 1;
	if (kind == SK__ELIDE_RW_WRITE)
		lock = &((struct sk_elided_rwlock *)lock)->word;
	/* Relaxed: the twin is meant to break the ordering. */
	__atomic_fetch_or((unsigned int *)lock,
			  kind == SK__ELIDE_SPIN	   ? SK_ELIDED_SPIN_SIM
			  : kind == SK__ELIDE_MUTEX ? SK_ELIDED_MUTEX_SIM
						   : 2u,
			  __ATOMIC_RELAXED);
	return 1;
}

/* Mark the lock as held by this simulated section if it is free. */
static int sim_mark(int kind, void *lock)
{
	unsigned int *w = lock, v;

	if (__atomic_load_n(&sim_busted, __ATOMIC_RELAXED))
		return sim_mark_blind(kind, lock);

	switch (kind) {
	case SK__ELIDE_MUTEX:
	case SK__ELIDE_RW_WRITE:
		if (kind == SK__ELIDE_RW_WRITE)
			w = &((struct sk_elided_rwlock *)lock)->word;
		v = 0;
		/* S1: acquire; pairs with the release of the last holder. */
		return __atomic_compare_exchange_n(
			w, &v, kind == SK__ELIDE_MUTEX ? SK_ELIDED_MUTEX_SIM : 2u,
			0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	case SK__ELIDE_SPIN:
		v = __atomic_load_n(w, __ATOMIC_RELAXED);
		/* S1 as above. */
		return sk__elide_lock_free(kind, lock) &&
		       __atomic_compare_exchange_n(w, &v,
						   v | SK_ELIDED_SPIN_SIM, 0,
						   __ATOMIC_ACQUIRE,
						   __ATOMIC_RELAXED);
	default:
		return !sk__rw_read_trylock_real(
			&((struct sk_elided_rwlock *)lock)->word);
	}
}

static void sim_unmark(int kind, void *lock)
{
	switch (kind) {
	case SK__ELIDE_MUTEX:
		sk__mutex_unlock_real(lock, SK_ELIDED_MUTEX_SIM);
		break;
	case SK__ELIDE_SPIN:
		/* S2: release; pairs with SL2 of the next ticket holder. */
		__atomic_fetch_and((unsigned int *)lock, ~SK_ELIDED_SPIN_SIM,
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

int sk__sim_claim(int kind, void *lock)
{
	if (sim.depth == SIM_MAX_DEPTH) {
		sk__sim_doom(SK__TX_NESTED); /* hardware: nesting too deep */
		return 0;
	}
	if (!sim_mark(kind, lock))
		return 0;
	sim.locks[sim.depth++] = lock;
	return 1;
}

/* 1 when lock was claimed by this thread's simulated section (now not). */
int sk__sim_release(int kind, void *lock)
{
	int i;

	for (i = sim.depth - 1; i >= 0; i--)
		if (sim.locks[i] == lock)
			break;
	if (i < 0)
		return 0;
	for (; i < sim.depth - 1; i++)
		sim.locks[i] = sim.locks[i + 1];
	sim.depth--;
	if (kind != SK__ELIDE_RW_READ ||
	    !__atomic_load_n(&sim_busted, __ATOMIC_RELAXED))
		sim_unmark(kind, lock);
	return 1;
}
#else
typedef int sk__elide_sim_absent; /* ISO C: no empty translation unit */
#endif /* SK_ELIDE_SIM */
