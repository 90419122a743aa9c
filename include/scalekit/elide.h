/* SPDX-License-Identifier: MIT */
/*
 * scalekit/elide.h - elided locks: a mutex, a spinlock and a
 * reader-writer lock that run their critical sections as hardware
 * transactions (Intel TSX RTM) when they can.
 *
 * What they promise: each is a correct lock on every CPU.  A section
 * excludes every other section of the lock (for the rwlock: a writer
 * excludes readers and writers, readers share), whether it ran as a
 * transaction or under the real lock, and the caller cannot tell which.
 * Where the CPU has working RTM, sections under one lock that touch
 * different data run in parallel; everywhere else (AMD, aarch64, TSX
 * disabled by microcode) the locks are plain locks.
 *  - struct sk_elided_mutex     spins briefly, then sleeps when
 *                               contended; a waiter that keeps losing
 *                               the lock gets it next, in ticket order
 *                               (see "Fairness" in docs/elision.md);
 *  - struct sk_elided_spinlock  a ticket spinlock: FIFO, never sleeps;
 *  - struct sk_elided_rwlock    readers and writers both elide; neither
 *                               side starves.
 * A zero-filled lock is an unlocked lock.  Locks of any kind nest, and
 * may be unlocked in any order (see "Nesting" below).
 *
 * When to use them: a coarse lock around a large structure whose
 * sections mostly touch different cache lines (a hash table, a tree),
 * taken by more than one thread.  Not for sections that usually
 * conflict (a shared counter), that make system calls or do I/O, or
 * that are large: those abort, and an abort costs more than the lock
 * (a lock whose sections keep aborting stops trying for a while).
 * Attach a struct sk_elide_stats to see which case a lock is in.
 *
 * Nesting: a thread's elided section is one transaction, whatever locks
 * it takes; it commits when the last of the thread's elided locks is
 * unlocked, in whatever order they are unlocked.  At most 8 locks elide
 * at once (a ninth aborts the section, counted as "other").  A busy
 * inner lock aborts the whole section, which then runs again under the
 * real lock of the outermost one.  A lock taken for real before the
 * section may be released inside it, readers included.  A section inside
 * a transaction the program began itself nests in it, and does not
 * commit it.
 *
 * How it works (the backends and their detection at load time, the
 * adaptive policy and its knobs in struct sk_elide_tuning, the
 * statistics, fairness): see docs/elision.md.
 */
#ifndef SCALEKIT_ELIDE_H
#define SCALEKIT_ELIDE_H

#include <stddef.h>

#include "scalekit/barrier.h"

/*
 * glibc 2.32+ says whether the process has ever had a second thread; like
 * its own mutexes, the elided mutex then skips the locked instructions.
 */
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SK__ELIDE_SINGLE_THREADED() \
	__atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED)
#endif
#endif
#ifndef SK__ELIDE_SINGLE_THREADED
#define SK__ELIDE_SINGLE_THREADED() 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- statistics --------------------------------------------------------- */

/* Abort causes, as counted in struct sk_elide_stats.aborts[]. */
enum sk_elide_abort_cause {
	SK_ELIDE_ABORT_CONFLICT = 0, /* another thread touched our data */
	SK_ELIDE_ABORT_CAPACITY,     /* read/write set exceeded the cache */
	SK_ELIDE_ABORT_EXPLICIT,     /* XABORT, e.g. trylock inside a tx */
	SK_ELIDE_ABORT_BUSY,	     /* the lock was held for real */
	SK_ELIDE_ABORT_OTHER,	     /* nesting depth, debug, interrupt, ... */
	SK_ELIDE_ABORT_NCAUSES
};

/*
 * Optional statistics, owned by the user and attached to any number of
 * locks.  Counters are updated with relaxed atomic increments outside
 * transactions; read them with sk_elide_stats_read().  Attaching stats
 * makes every elided acquisition write a shared counter: attach them to
 * measure, not in production hot paths.
 */
struct sk_elide_stats {
	unsigned long commits;		/* elided sections committed (one
					 * per section, however many locks
					 * it elided) */
	unsigned long aborts[SK_ELIDE_ABORT_NCAUSES]; /* aborts, by cause */
	unsigned long fallbacks;	/* real acquisitions after elision failed */
	unsigned long skips;		/* real acquisitions, elision skipped */
};

#define SK_ELIDE_STATS_INITIALIZER { 0, { 0, 0, 0, 0, 0 }, 0, 0 }

/*
 * sk_elide_stats_read() - copy the counters of s into *out.
 * Context: any thread, any time.  Ordering: relaxed loads; each counter is
 * exact once the threads that update it have been joined.
 */
SK_API void sk_elide_stats_read(const struct sk_elide_stats *s,
				struct sk_elide_stats *out);

/*
 * sk_elide_stats_reset() - set every counter of s to zero.
 * Context: any thread; increments racing with it may survive.
 */
SK_API void sk_elide_stats_reset(struct sk_elide_stats *s);

/* sk_elide_abort_cause_name() - "conflict", "capacity", ... or "?". */
SK_API const char *sk_elide_abort_cause_name(int cause);

/* ---- policy, backend, tuning --------------------------------------------- */

enum sk_elide_policy {
	SK_ELIDE_AUTO = 0, /* elide where the dispatch found working RTM */
	SK_ELIDE_ON,	   /* elide wherever CPUID reports RTM, even on a
			    * model on the broken list or when the probe
			    * transaction aborted; never without the CPUID
			    * bit (so never a SIGILL) */
	SK_ELIDE_OFF	   /* never elide: plain locks */
};

enum sk_elide_backend {
	SK_ELIDE_BACKEND_FALLBACK = 0, /* plain locks */
	SK_ELIDE_BACKEND_RTM	       /* Intel TSX restricted transactions */
};

/*
 * sk_elide_set_policy() - choose auto, on or off for the whole process.
 * The default is SCALEKIT_ELIDE=auto|on|off from the environment, read
 * once when the library is loaded (an unknown value prints one warning
 * on stderr and means auto).
 * Context: any thread, preferably before the locks are used.  Sections
 * already elided finish normally; acquisitions that start after the call
 * returns follow the new policy.
 * Returns: 0, or -EINVAL for a value that is not a policy.
 */
SK_API int sk_elide_set_policy(enum sk_elide_policy policy);

/* sk_elide_get_policy() - the current process-wide policy. */
SK_API enum sk_elide_policy sk_elide_get_policy(void);

/*
 * sk_elide_backend() - the backend elided locks use now (the policy
 * applied to what the CPU offers).  Cheap: reads a cached value.
 */
SK_API enum sk_elide_backend sk_elide_backend(void);

/* sk_elide_backend_name() - "fallback", "rtm" or "?". */
SK_API const char *sk_elide_backend_name(enum sk_elide_backend b);

/*
 * sk_elide_cpu_has_rtm() - what the dispatch found, independent of the
 * policy: bit 0 CPUID reports RTM, bit 1 RTM_ALWAYS_ABORT is set, bit 2
 * the model is on the broken list, bit 3 the probe transaction committed
 * (only tried when bit 0 is set and bit 1 is clear).  0 on non-x86.
 */
SK_API unsigned int sk_elide_cpu_has_rtm(void);
#define SK_ELIDE_CPU_RTM	   1u
#define SK_ELIDE_CPU_ALWAYS_ABORT 2u
#define SK_ELIDE_CPU_BROKEN	   4u
#define SK_ELIDE_CPU_PROBE_OK	   8u

/*
 * sk_elide_in_transaction() - 1 inside an elided (transactional) section,
 * else 0 (XTEST; always 0 on the fallback backend).
 */
SK_API int sk_elide_in_transaction(void);

/* The adaptive-policy and fairness knobs, process-wide. */
struct sk_elide_tuning {
	unsigned int conflict_retries; /* transactions retried after a
					* conflict abort before the real lock
					* is taken (0..64) */
	unsigned int skip_initial;     /* acquisitions that skip elision
					* after the first non-retryable abort
					* (1..skip_max) */
	unsigned int skip_max;	       /* cap of the doubling skip count
					* (1..65535) */
	unsigned int handoff_wakeups;  /* futex wakeups a mutex waiter loses
					* before it takes a handoff ticket
					* (1..1000) */
};

#define SK_ELIDE_TUNING_DEFAULT { 3, 4, 1024, 4 }

/*
 * sk_elide_set_tuning() - replace the knobs (all of them at once).
 * Context: any thread; locks pick the new values up at their next
 * acquisition.  Returns: 0, or -EINVAL (nothing changed) when a field is
 * out of the range documented in struct sk_elide_tuning.
 */
SK_API int sk_elide_set_tuning(const struct sk_elide_tuning *t);

/* sk_elide_get_tuning() - copy the current knobs into *t. */
SK_API void sk_elide_get_tuning(struct sk_elide_tuning *t);

/* ---- private: what the inline fast paths below need ---------------------- */

/*
 * ABI: nonzero while elision may be tried (the backend is not fallback);
 * the inline lock fast paths take the plain lock when it is 0.
 */
SK_API extern int sk_elide__enabled;

/*
 * Mutex word (ABI): 0 free; LOCKED | WAITERS | tickets otherwise.  The
 * ticket fields are private; their counter wraps within them, so a free
 * mutex always reads 0.
 */
#define SK__ELIDED_MUTEX_LOCKED  1
#define SK__ELIDED_MUTEX_WAITERS 2

/*
 * Spinlock word (ABI): owner ticket bits 0..14, SLOW bit 15, next 16..31.
 * While SLOW is set, lock and unlock leave the word to the library's slow
 * paths.  The released library never sets it: the bit is reserved in the
 * ABI so that a build of the library may take a word over without
 * recompiling its callers (the project's own checking build does).
 * Testing it costs the inline paths one bit test.
 */
#define SK__ELIDED_SPIN_OWNER_MASK 0x7fffu
#define SK__ELIDED_SPIN_SLOW	   0x8000u
#define SK__ELIDED_SPIN_NEXT_ONE   0x10000u

/* Slow paths of the inline functions; not for direct use. */
SK_API SK__NOTHROW void sk_elided_mutex__lock_slow(int *word, unsigned int *policy,
				       struct sk_elide_stats *stats);
SK_API SK__NOTHROW void sk_elided_mutex__unlock_slow(int *word);
SK_API SK__NOTHROW void sk_elided_spinlock__lock_slow(unsigned int *word,
					  unsigned int *policy,
					  struct sk_elide_stats *stats);
SK_API SK__NOTHROW void sk_elided_spinlock__wait(unsigned int *word, unsigned int old);
SK_API SK__NOTHROW void sk_elided_spinlock__unlock_slow(unsigned int *word);

/* ---- sk_elided_mutex ------------------------------------------------------ */

/*
 * A futex mutex with elision.  16 bytes on LP64 (12 on ILP32); no hidden
 * state: a zero-filled struct is an unlocked mutex.  Not recursive.
 * fork(): a mutex that the forking thread holds (a pthread_atfork()
 * prepare handler's lock) can be unlocked and used in the child, also
 * when other threads waited for it: the child drops their handoff
 * tickets.  One held by another thread stays held in the child.
 */
struct sk_elided_mutex {
	int word;		      /* ABI: lock word, SK_ELIDED_MUTEX_* */
	unsigned int policy;	      /* private: adaptive skip state */
	struct sk_elide_stats *stats; /* ABI: attached statistics, or NULL */
};

#define SK_ELIDED_MUTEX_INITIALIZER { 0, 0, NULL }

/*
 * sk_elided_mutex_init() - initialize m unlocked, no stats attached.
 * Context: any thread; m must not be in use.
 */
SK_API void sk_elided_mutex_init(struct sk_elided_mutex *m);

/*
 * sk_elided_mutex_destroy() - end the life of m.
 * Context: any thread; nobody may use m afterwards.
 * Returns: 0, or -EBUSY when m is held (m is left unchanged).
 */
SK_API int sk_elided_mutex_destroy(struct sk_elided_mutex *m);

/*
 * sk_elided_mutex_attach_stats() - count m's elision events in *s (NULL:
 * stop counting).  Context: any thread; acquisitions that start after the
 * call use the new pointer.  *s must outlive its use by m.
 */
SK_API void sk_elided_mutex_attach_stats(struct sk_elided_mutex *m,
					 struct sk_elide_stats *s);

/*
 * sk_elided_mutex_lock() - acquire m (elided or real).
 * Context: any thread; may block (futex) when m is held for real.  Must
 * not be called while the thread holds m.
 * Ordering: acquire; the section is ordered after the previous holder's
 * sk_elided_mutex_unlock() (release), whether either was elided or not.
 */
static inline void sk_elided_mutex_lock(struct sk_elided_mutex *m)
{
	int z = 0;

	/*
	 * EL-L0: the only thread: no other thread to order against (a thread
	 * created later starts after pthread_create(), which orders).
	 */
	if (SK__ELIDE_SINGLE_THREADED() &&
	    __atomic_load_n(&m->word, __ATOMIC_RELAXED) == 0) {
		__atomic_store_n(&m->word, SK__ELIDED_MUTEX_LOCKED,
				 __ATOMIC_RELAXED);
		return;
	}
	/* EL-L1: acquire on success; pairs with unlock's release EL-U1. */
	if (!__atomic_load_n(&sk_elide__enabled, __ATOMIC_RELAXED) &&
	    __atomic_compare_exchange_n(&m->word, &z, SK__ELIDED_MUTEX_LOCKED,
					0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	sk_elided_mutex__lock_slow(&m->word, &m->policy,
				   __atomic_load_n(&m->stats,
						   __ATOMIC_RELAXED));
}

/*
 * sk_elided_mutex_trylock() - acquire m if that needs no waiting.
 * Context: any thread; never blocks.  Inside an elided section it aborts
 * the transaction (SK_ELIDE_ABORT_EXPLICIT): the section is then run again
 * with the real lock, where trylock gives a true answer.
 * Ordering: acquire when it succeeds.
 * Returns: 0 (m is held, for real), or -EBUSY.
 */
SK_API int sk_elided_mutex_trylock(struct sk_elided_mutex *m);

/*
 * sk_elided_mutex_unlock() - release m.
 * Context: the thread that locked m.  When m was elided, commits the
 * transaction if m was the last of the thread's elided locks (see
 * "Nesting" above), else leaves it running.
 * Ordering: release; pairs with the acquire of the next lock (EL-L1).
 */
static inline void sk_elided_mutex_unlock(struct sk_elided_mutex *m)
{
	int l = SK__ELIDED_MUTEX_LOCKED;

	if (SK__ELIDE_SINGLE_THREADED() &&
	    __atomic_load_n(&m->word, __ATOMIC_RELAXED) == l) {
		/* EL-U0: the only thread, as EL-L0; release for the compiler */
		__atomic_store_n(&m->word, 0, __ATOMIC_RELEASE);
		return;
	}
	/*
	 * EL-U1: release; pairs with EL-L1.  The plain load first keeps the CAS
	 * (which writes even when it fails) out of elided sections, where
	 * the word reads 0 and the slow path ends the elided hold.
	 */
	if (__atomic_load_n(&m->word, __ATOMIC_RELAXED) == l &&
	    __atomic_compare_exchange_n(&m->word, &l, 0, 0, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return;
	sk_elided_mutex__unlock_slow(&m->word);
}

/* ---- sk_elided_spinlock --------------------------------------------------- */

/*
 * A ticket spinlock with elision: FIFO among real waiters, never sleeps.
 * 16 bytes on LP64; a zero-filled struct is unlocked.  Not recursive.
 * fork(): a spinlock that any thread waited for at the fork is unusable
 * in the child (its next holder would be a thread the child lacks).
 */
struct sk_elided_spinlock {
	unsigned int word;	      /* ABI: tickets, SK_ELIDED_SPIN_* */
	unsigned int policy;	      /* private: adaptive skip state */
	struct sk_elide_stats *stats; /* ABI: attached statistics, or NULL */
};

#define SK_ELIDED_SPINLOCK_INITIALIZER { 0, 0, NULL }

/* sk_elided_spinlock_init() - as sk_elided_mutex_init(). */
SK_API void sk_elided_spinlock_init(struct sk_elided_spinlock *l);

/* sk_elided_spinlock_destroy() - as sk_elided_mutex_destroy(). */
SK_API int sk_elided_spinlock_destroy(struct sk_elided_spinlock *l);

/* sk_elided_spinlock_attach_stats() - as sk_elided_mutex_attach_stats(). */
SK_API void sk_elided_spinlock_attach_stats(struct sk_elided_spinlock *l,
					    struct sk_elide_stats *s);

/*
 * sk_elided_spinlock_lock() - acquire l (elided or real).
 * Context: any thread; spins (never sleeps) while l is held for real;
 * real waiters get l in arrival order.  Must not be called while the
 * thread holds l.
 * Ordering: acquire; pairs with the release in unlock (EL-SU1).
 */
static inline void sk_elided_spinlock_lock(struct sk_elided_spinlock *l)
{
	unsigned int old;

	if (!__atomic_load_n(&sk_elide__enabled, __ATOMIC_RELAXED)) {
		/* EL-SL1: take a ticket; acquire pairs with EL-SU1. */
		old = __atomic_fetch_add(&l->word, SK__ELIDED_SPIN_NEXT_ONE,
					 __ATOMIC_ACQUIRE);
		if ((old & SK__ELIDED_SPIN_OWNER_MASK) !=
			    ((old >> 16) & SK__ELIDED_SPIN_OWNER_MASK) ||
		    (old & SK__ELIDED_SPIN_SLOW))
			sk_elided_spinlock__wait(&l->word, old);
		return;
	}
	sk_elided_spinlock__lock_slow(&l->word, &l->policy,
				      __atomic_load_n(&l->stats,
						      __ATOMIC_RELAXED));
}

/*
 * sk_elided_spinlock_trylock() - as sk_elided_mutex_trylock().
 * Returns: 0 (l is held, for real), or -EBUSY.
 */
SK_API int sk_elided_spinlock_trylock(struct sk_elided_spinlock *l);

/* Private: what adds one to owner field own without carrying out of it. */
static inline unsigned int sk_elided_spinlock__step(unsigned int own)
{
	return own == SK__ELIDED_SPIN_OWNER_MASK ? 0u - SK__ELIDED_SPIN_OWNER_MASK
						: 1u;
}

/*
 * sk_elided_spinlock_unlock() - release l.
 * Context: the thread that locked l.  When l was elided, commits the
 * transaction if l was the last of the thread's elided locks (see
 * "Nesting" above), else leaves it running.
 * Ordering: release; pairs with the acquire of the next lock (EL-SL1).
 */
static inline void sk_elided_spinlock_unlock(struct sk_elided_spinlock *l)
{
	unsigned int w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
	unsigned int own = w & SK__ELIDED_SPIN_OWNER_MASK;

	/* Held for real: owner != next and not left to the slow paths. */
	if (own != ((w >> 16) & SK__ELIDED_SPIN_OWNER_MASK) &&
	    !(w & SK__ELIDED_SPIN_SLOW)) {
		/*
		 * EL-SU1: release; pairs with EL-SL1.  Only the holder changes
		 * the owner field: wrap it without carrying into bit 15.
		 */
		__atomic_fetch_add(&l->word, sk_elided_spinlock__step(own),
				   __ATOMIC_RELEASE);
		return;
	}
	sk_elided_spinlock__unlock_slow(&l->word);
}

/* ---- sk_elided_rwlock ----------------------------------------------------- */

/*
 * A reader-writer lock with elision for readers and writers.  The real
 * lock: readers add to a count in one word; a writer first takes the
 * writers' fair mutex, then sets a writer bit that sends new readers,
 * after a brief spin for the writer to leave, to that same mutex (where
 * they queue with the writers, in the mutex's
 * bounded-wait order), and waits for the readers already inside.  So
 * writers do not starve behind a stream of readers, and readers that
 * find a writer wait behind at most the writers queued before them.
 * A zero-filled struct is unlocked.  Not recursive for writers.
 * fork(): one that the forking thread holds for writing can be unlocked
 * and used in the child, also when other threads waited for it, except
 * when the fork lands in another thread's few instructions between a
 * reader's optimistic add to the count and its undo (docs/elision.md,
 * "fork()"); one held by another thread stays held in the child.
 */
struct sk_elided_rwlock {
	unsigned int word;	      /* private: readers << 3 | flags */
	int wlock;		      /* private: writers' mutex word */
	unsigned int policy;	      /* private: adaptive skip state */
	struct sk_elide_stats *stats; /* private: attached statistics */
};

#define SK_ELIDED_RWLOCK_INITIALIZER { 0, 0, 0, NULL }

/* sk_elided_rwlock_init() - as sk_elided_mutex_init(). */
SK_API void sk_elided_rwlock_init(struct sk_elided_rwlock *rw);

/* sk_elided_rwlock_destroy() - 0, or -EBUSY when held (read or write). */
SK_API int sk_elided_rwlock_destroy(struct sk_elided_rwlock *rw);

/* sk_elided_rwlock_attach_stats() - as sk_elided_mutex_attach_stats(). */
SK_API void sk_elided_rwlock_attach_stats(struct sk_elided_rwlock *rw,
					  struct sk_elide_stats *s);

/*
 * sk_elided_rwlock_read_lock() - acquire rw shared (elided or real).
 * Context: any thread; may block (futex) while a writer holds or waits
 * for rw.  Readers may nest only when no writer can be waiting (as with
 * any writer-fair rwlock).
 * Ordering: acquire; pairs with the release in write_unlock.
 */
SK_API void sk_elided_rwlock_read_lock(struct sk_elided_rwlock *rw);

/* sk_elided_rwlock_read_trylock() - 0, or -EBUSY; aborts inside a tx. */
SK_API int sk_elided_rwlock_read_trylock(struct sk_elided_rwlock *rw);

/*
 * sk_elided_rwlock_read_unlock() - release a shared hold.
 * Context: the thread that read-locked rw.  When the hold was elided,
 * commits the transaction if it was the last of the thread's elided
 * locks (see "Nesting" above), else leaves it running.
 * Ordering: release; pairs with the acquire in write_lock.
 */
SK_API void sk_elided_rwlock_read_unlock(struct sk_elided_rwlock *rw);

/*
 * sk_elided_rwlock_write_lock() - acquire rw exclusive (elided or real).
 * Context: any thread; may block (futex).
 * Ordering: acquire; pairs with the releases of read_unlock and
 * write_unlock.
 */
SK_API void sk_elided_rwlock_write_lock(struct sk_elided_rwlock *rw);

/* sk_elided_rwlock_write_trylock() - 0, or -EBUSY; aborts inside a tx. */
SK_API int sk_elided_rwlock_write_trylock(struct sk_elided_rwlock *rw);

/*
 * sk_elided_rwlock_write_unlock() - release an exclusive hold.
 * Context: the thread that write-locked rw.  When the hold was elided,
 * commits the transaction if it was the last of the thread's elided
 * locks (see "Nesting" above), else leaves it running.
 * Ordering: release; pairs with the acquires of read_lock and write_lock.
 */
SK_API void sk_elided_rwlock_write_unlock(struct sk_elided_rwlock *rw);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_ELIDE_H */
