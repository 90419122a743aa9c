/* SPDX-License-Identifier: MIT */
/*
 * scalekit/rcu.h - read-copy-update: readers that pay almost nothing,
 * updaters that wait for a grace period.
 *
 * One global RCU domain serves two kinds of readers:
 *  - general readers bracket each read-side critical section with
 *    sk_rcu_read_lock()/sk_rcu_read_unlock();
 *  - QSBR readers (sk_rcu_thread_online()) are inside a read section
 *    whenever they are online, and announce sk_rcu_quiescent_state() from
 *    time to time.
 * sk_synchronize_rcu() waits for both kinds.
 *
 * The guarantee: every read-side critical section that began before a
 * grace period started has ended when the grace period ends.  So an
 * updater may unlink an object, call sk_synchronize_rcu(), and free it.
 *
 * See docs/rcu.md for the algorithm and the cost model.
 */
#ifndef SCALEKIT_RCU_H
#define SCALEKIT_RCU_H

#include <pthread.h>
#include <stddef.h>

#include "scalekit/barrier.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Callbacks.  Embed a struct sk_rcu_head in the object; its fields are
 * private to the library.
 */
struct sk_rcu_head {
	struct sk_rcu_head *next_;		/* private: queue link */
	void (*func_)(struct sk_rcu_head *);	/* private: the callback */
	unsigned long state_;			/* private: double-queue check */
};

/*
 * The calling thread's reader word (thread-local, ABI: the inline fast
 * paths below touch it; the grace-period code reads it from other threads
 * through the registry).  Layout:
 *   bits 0..14   nesting depth of read sections (SK__RCU_QSBR_NEST while
 *                an online QSBR thread is outside sk_rcu_read_lock());
 *   bit 15       SK__RCU_REG: the thread is registered and counts as a
 *                general reader, or is an online QSBR thread;
 *   the rest     SK__RCU_SEQ_BITS low bits of the scan-phase counter of
 *                the thread's latest outermost section (kept at depth
 *                0; 0 until its first section) or of its last quiescent
 *                state: 48 bits where unsigned long has 64, 16 where it
 *                has 32.
 * 0 means "not registered".  SK__RCU_REG clear and the word nonzero: a
 * QSBR thread that is offline (SK__RCU_QOFF) or a parked thread (see
 * src/internal/rcu_state.h); sk_rcu_read_lock() takes its slow path on
 * an outermost entry whose word lacks SK__RCU_REG, which lets such a
 * thread count itself as a general reader again (docs/rcu.md, "QSBR").
 * The phase bits are only ever compared for equality with the current
 * phase, so they may wrap; grace-period cookies are kept apart, in full
 * unsigned long width (see sk_get_state_synchronize_rcu()).  Where the
 * phase has fewer than 32 bits, every grace period scans twice
 * (docs/rcu.md, "Narrow words").
 */
#define SK__RCU_NEST_MASK 0x7fffUL
#define SK__RCU_QSBR_NEST 0x4000UL
#define SK__RCU_REG       0x8000UL
#define SK__RCU_SEQ_SHIFT 16
#define SK__RCU_SEQ_BITS  (8 * (int)sizeof(unsigned long) - SK__RCU_SEQ_SHIFT)
#define SK__RCU_QOFF      (1UL << SK__RCU_SEQ_SHIFT)

/*
 * Grace-period state read by the fast paths.  Guarded by: ctr, qs_word
 * and lock_word are written only by the grace-period leader; futex by
 * the leader (to -1 when it sleeps on readers, to a positive request
 * value while a grace period asks readers for a handshake, back to 0)
 * and by readers that wake it (-1 to 0).  sk_rcu_read_unlock() takes its
 * slow path on any nonzero value except a handshake value its thread
 * answered already (sk_rcu__hs_seen); the QSBR slow paths call
 * sk_rcu__wake_gp() on any nonzero value.  Alone on its cache line,
 * read-mostly.
 *
 * Fallback fences.  Where membarrier(2) is missing, light fences must be
 * full fences.  The two hottest fast paths do not test for that; the
 * words they compare do: in that mode lock_word differs from every
 * reader word (SK__RCU_HEAVY), and, on x86-64, the unlock's 8-byte load
 * of futex and heavy is never 0, so both take their slow paths, which
 * issue the full fences.
 */
struct sk_rcu__gp_state {
	unsigned long ctr; /* ABI: (phase << 16) | SK__RCU_REG | 1 */
	/*
	 * ABI: ctr + SK__RCU_QSBR_NEST - 1, stored before ctr: the word of an
	 * online QSBR thread that has announced ctr's phase (saves the
	 * quiescent state's fast path an addition).
	 */
	unsigned long qs_word;
	int futex;	   /* ABI: nonzero: readers call sk_rcu__wake_gp() */
	/*
	 * ABI: 1 where light fences are full fences (no membarrier(2)),
	 * decided before main() runs (grace periods store the same value
	 * again); futex's neighbour, so that one 8-byte load on x86-64 reads
	 * both (sk_rcu__unlock_flags()).
	 */
	int heavy;
	/*
	 * ABI: what sk_rcu_read_lock()'s fast path compares with the word it
	 * stored: ctr, stored after it (before the scan's heavy fence); with
	 * fallback fences ctr ^ SK__RCU_HEAVY, which equals no reader word.
	 */
	unsigned long lock_word;
} __attribute__((aligned(SK_CACHELINE)));

/* Set in lock_word with fallback fences: reader words have bit 1 clear at depth 1. */
#define SK__RCU_HEAVY 2UL

SK_API extern struct sk_rcu__gp_state sk_rcu__gp;
/*
 * The symbol's name (asm label) carries the word's protocol (the third:
 * a word outside sections keeps its phase, the read lock checks
 * lock_word after its store, and the fast paths leave fallback fences to
 * the slow paths that lock_word and heavy send them to): a program built
 * against another protocol than its library's fails to load, with an
 * undefined symbol.
 */
SK_API extern __thread unsigned long sk_rcu__ctr __asm__("sk_rcu__ctr_v3")
	__attribute__((tls_model("initial-exec")));
/*
 * ABI: the futex value of the last handshake this thread answered (0:
 * none).  While a grace period asks for a handshake, futex holds a
 * positive value that names the request; a reader that already answered
 * it skips the slow path on its later unlocks.
 */
SK_API extern __thread int sk_rcu__hs_seen
	__attribute__((tls_model("initial-exec")));

/* Slow paths of the inline functions; not for direct use. */
SK_API SK__NOTHROW void sk_rcu__lock_slow(void);
SK_API SK__NOTHROW void sk_rcu__lock_recheck(void);
SK_API SK__NOTHROW void sk_rcu__nest_slow(void);
SK_API SK__NOTHROW void sk_rcu__quiescent_slow(void);
SK_API SK__NOTHROW void sk_rcu__wake_gp(void);
/*
 * The unlock's slow path: v is the reader word of the section that just
 * ended.  Wakes a sleeping grace period only if that section could have
 * held it (sk_rcu__wake_gp() wakes it whatever the section).
 */
SK_API SK__NOTHROW void sk_rcu__wake_gp_from(unsigned long v);
SK_API SK__NOTHROW __attribute__((noreturn)) void sk_rcu__unlock_misuse(void);
SK_API SK__NOTHROW __attribute__((noreturn)) void sk_rcu__qs_misuse(void);
SK_API SK__NOTHROW __attribute__((noreturn)) void sk_rcu__nest_overflow(void);

/*
 * sk_rcu_read_lock() - enter a read-side critical section.
 * Context: any thread; registers the thread on first use (and unregisters
 * it at thread exit).  Nestable up to 16383 levels (deeper nesting prints
 * a message and aborts: the depth would overflow the reader word).
 * Lock-free, never blocks; no atomic read-modify-write and no fence (when
 * membarrier(2) works) in the common case: the outermost entry stores the
 * phase of the thread's last section (kept in its word) at depth 1, then
 * loads the grace-period counter to check that no grace period began
 * since that section; a nested entry stores the depth plus one and makes
 * the same check.  The first entry after a grace period began (once per
 * grace period and thread) takes a slow path that raises the thread's
 * registry chunk's mark (a compare-and-swap when no other thread of the
 * chunk did) and repeats only while grace periods keep beginning; it may
 * also issue one futex wake (a grace period asleep on the word it stored
 * first).  The first one after a grace-period wait of a
 * registered general thread (which parks it, see sk_synchronize_rcu())
 * counts the thread again: two atomic adds between full fences, a
 * compare-and-swap and a full fence.  Without membarrier(2) every
 * outermost entry takes a slow path (an out-of-line call) that issues a
 * full fence, and on x86-64 every outermost sk_rcu_read_unlock() does
 * too.  The section must not block for
 * long: it delays every grace period (use SRCU for that).
 * Ordering: loads inside the section are ordered after the section's start
 * as seen by sk_synchronize_rcu() (light fence paired with its heavy fence).
 * Reclamation: objects reached inside the section stay valid until the
 * matching sk_rcu_read_unlock().
 */
static inline void sk_rcu_read_lock(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (SK_LIKELY((v & (SK__RCU_NEST_MASK | SK__RCU_REG)) == SK__RCU_REG)) {
		/*
		 * A registered general thread outside any section: its word
		 * keeps the phase of its last section.  Enter with that phase
		 * (depth 1), then check that it is still the current one.
		 */
		sk_atomic_store_relaxed(&sk_rcu__ctr, v + 1);
		/*
		 * RCU-L2: orders the store before the load below and the
		 * section's loads; pairs with the heavy fence RCU-G1 issued
		 * after the advance, before the reader scan.  A compiler
		 * barrier: with fallback fences lock_word never equals the
		 * word, and the slow path issues RCU-L2 as a full fence.
		 */
		sk_barrier();
		/*
		 * RCU-L1: acquire pairs with the release RCU-R1 that advances
		 * the counter (lock_word is stored after ctr, before RCU-G1).
		 * Equal (RCU-L3): no scan began since this thread's last
		 * section, whose entry raised the chunk's mark to this phase
		 * (RCU-K1), so the next scan reads this word.  Else the slow
		 * path takes the new phase.
		 */
		if (SK_UNLIKELY(sk_atomic_load_acquire(&sk_rcu__gp.lock_word) !=
				v + 1))
			sk_rcu__lock_recheck();
	} else if (SK_LIKELY(v & SK__RCU_NEST_MASK)) {
		/*
		 * Nested: the low 14 bits of the depth wrap to 0 exactly when
		 * a general reader would reach SK__RCU_QSBR_NEST or a QSBR
		 * reader would carry into SK__RCU_REG.
		 */
		if (SK_UNLIKELY(!((v + 1) & (SK__RCU_QSBR_NEST - 1))))
			sk_rcu__nest_overflow();
		sk_atomic_store_relaxed(&sk_rcu__ctr, v + 1);
		/*
		 * A signal handler may nest inside an outer entry that has not
		 * made its RCU-L3 check yet: check here too (RCU-L2, then the
		 * counter's phase against the word's).  A phase that moved on
		 * (an outer section that a scan waits for, or that handler
		 * case) takes the slow path, which raises the chunk's mark to
		 * the current phase.
		 */
		sk_fence_light();
		if (SK_UNLIKELY((sk_atomic_load_acquire(&sk_rcu__gp.ctr) ^ v) >>
				SK__RCU_SEQ_SHIFT))
			sk_rcu__nest_slow();
	} else {
		/* Unregistered, parked, or an offline QSBR thread. */
		sk_rcu__lock_slow();
	}
}

/*
 * sk_rcu__unlock_flags() - what the unlock's fast path tests: nonzero
 * sends it to sk_rcu__wake_gp_from().  On x86-64 one 8-byte load of futex
 * and its neighbour heavy (so that fallback fences take the slow path,
 * which issues RCU-U2 as a full fence); elsewhere futex, after a light
 * fence that is a full one where membarrier(2) is missing.
 */
#if defined(SK__BARRIER_ARCH_X86_64) && !defined(SK__TSAN)
#define SK__RCU_UNLOCK_FLAGS_WIDE 1
#endif

static inline unsigned long sk_rcu__unlock_flags(void)
{
#ifdef SK__RCU_UNLOCK_FLAGS_WIDE
	unsigned long f;

	/*
	 * Volatile, and the operand is futex: the compiler neither caches
	 * nor moves this load across the compiler barrier before it.  x86
	 * loads of an aligned quadword are single-copy atomic.
	 */
	__asm__ __volatile__("movq %1, %0" : "=r"(f) : "m"(sk_rcu__gp.futex));
	return f;
#else
	return (unsigned int)sk_atomic_load_relaxed(&sk_rcu__gp.futex);
#endif
}

/*
 * The outermost unlock's fences RCU-U1 and RCU-U2: compiler barriers on
 * x86-64 (see sk_rcu_read_unlock()), light fences elsewhere.
 */
static inline void sk_rcu__unlock_fence(void)
{
#ifdef SK__RCU_UNLOCK_FLAGS_WIDE
	sk_barrier();
#else
	sk_fence_light();
#endif
}

/*
 * sk_rcu_read_unlock() - leave a read-side critical section.
 * Context: the thread that called the matching sk_rcu_read_lock().
 * Wait-free, never blocks (may issue one futex wake when a grace period
 * sleeps on this thread).  No fence when membarrier(2) works; without it
 * a full fence (on x86-64 in an out-of-line call).  An unbalanced call
 * prints a message and aborts.
 * Ordering: loads inside the section are ordered before its end as seen by
 * sk_synchronize_rcu() (light fence paired with its heavy fence RCU-G2).
 * Reclamation: objects reached inside the section may be freed by an
 * updater once this returns and a grace period ends.
 */
static inline void sk_rcu_read_unlock(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);
	unsigned long d = v - 1; /* depth 1 -> 0: the low 15 bits clear */
	unsigned long f;

	if (SK_LIKELY(!(d & SK__RCU_NEST_MASK))) {
		/*
		 * RCU-U1: orders the section's loads before the store; pairs
		 * with RCU-G2 after the reader scan.  On x86-64 a compiler
		 * barrier in either mode: no x86 CPU moves a load after a
		 * later store.
		 */
		sk_rcu__unlock_fence();
		SK_TSAN_RELEASE(&sk_rcu__ctr);
		/* Depth 0; the word keeps the section's phase. */
		sk_atomic_store_relaxed(&sk_rcu__ctr, d);
		/*
		 * RCU-U2: orders the store before the futex load (store
		 * buffering); pairs with the heavy fence RCU-G3 after the
		 * waiter sets futex.  On x86-64 a compiler barrier: with
		 * fallback fences heavy is set and the slow path issues
		 * RCU-U2 as a full fence before it loads futex again.  A
		 * nonzero futex is also how a grace period asks for a
		 * handshake (RCU-H0); the slow path answers it with a full
		 * barrier (RCU-H1), once per request: a value equal to
		 * sk_rcu__hs_seen is one it answered.
		 */
		sk_rcu__unlock_fence();
		f = sk_rcu__unlock_flags();
		if (SK_UNLIKELY(f) &&
		    f != (unsigned int)sk_atomic_load_relaxed(&sk_rcu__hs_seen))
			sk_rcu__wake_gp_from(v);
	} else if (SK_UNLIKELY(!(v & SK__RCU_NEST_MASK) ||
			       (v & SK__RCU_NEST_MASK) == SK__RCU_QSBR_NEST)) {
		sk_rcu__unlock_misuse();
	} else {
		/*
		 * TSan only: a nested section's end is released too.  A
		 * signal handler's section that runs between the outermost
		 * unlock's release and its store nests in it (TSan delivers
		 * signals at such runtime calls); the grace period's
		 * acquire (slot_passed()) then covers the handler's loads,
		 * which the hardware orders before that store anyway.
		 */
		SK_TSAN_RELEASE(&sk_rcu__ctr);
		sk_atomic_store_relaxed(&sk_rcu__ctr, d);
	}
}

/*
 * sk_rcu_read_lock_held() - nonzero inside a read-side critical section
 * (for a QSBR thread: while it is online).
 * Context: any thread; never blocks.  Ordering: none.
 */
static inline int sk_rcu_read_lock_held(void)
{
	return (sk_atomic_load_relaxed(&sk_rcu__ctr) & SK__RCU_NEST_MASK) != 0;
}

/*
 * sk_rcu_dereference(p) - load an RCU-protected pointer for use inside a
 * read-side critical section.
 * Ordering: loads through the returned pointer see the object as it was
 * initialized before sk_rcu_assign_pointer() published it (pairs with
 * that release; consume, which compilers treat as acquire).
 */
#define sk_rcu_dereference(p) __atomic_load_n(&(p), __ATOMIC_CONSUME)

/*
 * sk_rcu_assign_pointer(p, v) - publish v in the RCU-protected pointer p.
 * Context: updaters (serialize updaters among themselves).
 * Ordering: the initialization of *v is ordered before the store of v
 * (release; pairs with sk_rcu_dereference()).
 */
#define sk_rcu_assign_pointer(p, v) \
	__atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

/*
 * sk_rcu_xchg_pointer(pp, v) - publish v in the RCU-protected pointer *pp
 * and return the pointer it replaces, in one atomic step.  pp is the
 * pointer's address (unlike sk_rcu_assign_pointer(), which takes the
 * pointer itself), as for C11 atomic_exchange().  Updaters that swap a
 * pointer this way need no lock among themselves: each gets a different
 * old value, which it may free after a grace period.
 * Context: any thread (an updater; inside a read section too, but the old
 * object must then be freed after the section, through sk_call_rcu()).
 * Never blocks.
 * Ordering: full barrier before and after the exchange: the
 * initialization of *v is ordered before the store of v (pairs with
 * sk_rcu_dereference(), like sk_rcu_assign_pointer()), and the exchange
 * is ordered before the caller's later accesses (its grace-period wait).
 */
#define sk_rcu_xchg_pointer(pp, v) __extension__ ({			\
	__typeof__(*(pp)) sk_x_new_ = (v);				\
	__typeof__(*(pp)) sk_x_old_;					\
	/* Orders *v's initialization before the store [the reader's	\
	 * sk_rcu_dereference()]; full, as liburcu's exchange is. */	\
	sk_smp_mb__before_atomic();					\
	sk_x_old_ = __atomic_exchange_n((pp), sk_x_new_, __ATOMIC_SEQ_CST); \
	/* Orders the exchange before what follows (the caller's wait	\
	 * for readers of the old object). */				\
	sk_smp_mb__after_atomic();					\
	sk_x_old_;							\
})

/*
 * sk_rcu_cmpxchg_pointer(pp, old, v) - publish v in the RCU-protected
 * pointer *pp if it still holds old; return the value it held (old when
 * the exchange took place).  pp is the pointer's address.
 * Context: any thread (an updater).  Never blocks (one compare-and-swap).
 * Ordering: full barrier before and after, whether or not the exchange
 * took place: on success the initialization of *v is ordered before the
 * store of v (pairs with sk_rcu_dereference()).
 */
#define sk_rcu_cmpxchg_pointer(pp, old, v) __extension__ ({		\
	__typeof__(*(pp)) sk_c_exp_ = (old);				\
	__typeof__(*(pp)) sk_c_new_ = (v);				\
	/* Orders *v's initialization before the store [the reader's	\
	 * sk_rcu_dereference()]. */					\
	sk_smp_mb__before_atomic();					\
	(void)__atomic_compare_exchange_n((pp), &sk_c_exp_, sk_c_new_, 0, \
					  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	/* Orders the compare-and-swap before what follows. */		\
	sk_smp_mb__after_atomic();					\
	sk_c_exp_;							\
})

/*
 * sk_rcu_register_thread() - add the calling thread to the RCU registry.
 * Optional: sk_rcu_read_lock() registers on first use.  Calling it again on
 * a registered thread does nothing.
 * Context: any thread outside a read section; may block briefly on the
 * registry lock (never on a grace period).
 * Ordering: full barrier (mutex).
 * Returns: 0, or -ENOMEM when no registry slot could be allocated.
 */
SK_API int sk_rcu_register_thread(void);

/*
 * sk_rcu_unregister_thread() - remove the calling thread from the registry.
 * Threads are unregistered automatically when they exit.  Calling it inside
 * a read-side critical section prints a message and aborts.  A QSBR thread
 * is put offline first.
 * Context: any thread; may block briefly on the registry lock.
 * Ordering: full barrier.
 * Returns: 0, or -EINVAL if the thread was not registered.
 */
SK_API int sk_rcu_unregister_thread(void);

/*
 * sk_rcu_qsbr_read_lock() / sk_rcu_qsbr_read_unlock() - mark a read-side
 * critical section of an online QSBR thread (sk_rcu_thread_online()).
 * Such a thread is inside one long read section whenever it is online, so
 * these cost nothing: they compile to nothing unless the code that uses
 * them is compiled with SK_DEBUG >= 1, where they are sk_rcu_read_lock()
 * and sk_rcu_read_unlock() (nesting counted: sk_rcu_quiescent_state() or
 * sk_rcu_thread_offline() inside the section is then reported).  They are
 * the QSBR flavor's read lock, as liburcu's urcu-qsbr has one; a thread
 * that is not an online QSBR thread must use sk_rcu_read_lock().
 * Context: an online QSBR thread.  Never blocks.  Ordering: none needed
 * (the thread's quiescent states carry it).
 */
#if defined(SK_DEBUG) && SK_DEBUG >= 1
#define sk_rcu_qsbr_read_lock()	  sk_rcu_read_lock()
#define sk_rcu_qsbr_read_unlock() sk_rcu_read_unlock()
#else
#define sk_rcu_qsbr_read_lock()	  ((void)0)
#define sk_rcu_qsbr_read_unlock() ((void)0)
#endif

/*
 * sk_rcu_quiescent_state() - a QSBR thread announces that it holds no
 * reference obtained from RCU-protected pointers.
 * Context: an online QSBR thread outside any sk_rcu_read_lock() section
 * (otherwise: message and abort).  Never blocks.  When no grace period
 * started since the last announcement it is two loads and a compare.
 * Ordering: earlier loads are ordered before the announcement and later
 * loads after it, as seen by sk_synchronize_rcu() (full fences, paired
 * with its heavy or full fences).
 * Reclamation: references obtained before the call may be freed by an
 * updater once a grace period ends.
 */
static inline void sk_rcu_quiescent_state(void)
{
	/*
	 * A plain load, not an atomic one: only this thread (and its signal
	 * handlers, which leave the word as they found it) ever stores to
	 * its reader word; other threads only load it, so this load races
	 * with no store.  Plain, the compiler may fold it into the compare
	 * below, or keep the value in a register across a loop until this
	 * thread stores to the word itself (the slow path's call), as
	 * liburcu-qsbr's fast path does with its own reader word; an atomic
	 * load costs an extra instruction in every pass.  Relaxed ordered
	 * nothing either: the value is the same in every execution.
	 */
	unsigned long v = sk_rcu__ctr;

	/*
	 * No grace period began since the last announcement (and the thread
	 * is an online QSBR reader outside sk_rcu_read_lock()): the word
	 * equals the counter word with the QSBR depth instead of depth 1
	 * (qs_word).  A stale qs_word only delays an announcement, as a
	 * stale ctr would.
	 * Relaxed: nobody waits for this thread, so nothing needs ordering;
	 * the slow path orders with full fences (RCU-Q1/RCU-Q2).
	 */
	if (SK_LIKELY(v == sk_atomic_load_relaxed(&sk_rcu__gp.qs_word)))
		return;
	sk_rcu__quiescent_slow();
}

/*
 * sk_rcu_thread_online() - make the calling thread a QSBR reader that is
 * online: from now until sk_rcu_thread_offline() or the next
 * sk_rcu_quiescent_state() it is inside a read-side critical section.
 * Registers the thread if needed.
 * Context: a thread outside any read section (else message and abort).
 * Never blocks except briefly on the registry lock the first time.
 * Ordering: later loads are ordered after going online (full fence
 * paired with the grace period's heavy or full fence).  The first call
 * (and the first after the thread used sk_rcu_read_lock() while offline)
 * switches the thread to QSBR mode: it stops counting as a general
 * reader (an atomic add between two full fences, no lock), which lets
 * grace periods skip membarrier(2) (docs/rcu.md, "QSBR").  Only a call
 * that registers the thread takes the registry lock.
 * Returns: 0, or -ENOMEM when the thread could not be registered.
 */
SK_API int sk_rcu_thread_online(void);

/*
 * sk_rcu_thread_offline() - an online QSBR thread stops holding any
 * reference; grace periods no longer wait for it.  Use it around blocking
 * calls.  While offline the thread may still use sk_rcu_read_lock().
 * Context: an online QSBR thread outside sk_rcu_read_lock() (else message
 * and abort).  Never blocks.
 * Ordering: earlier loads are ordered before going offline (full fence
 * paired with the grace period's heavy or full fence).  The thread's
 * first sk_rcu_read_lock() while offline takes a slow path that counts
 * it as a general reader again until sk_rcu_thread_online() (an atomic
 * add between two full fences, no lock).
 */
SK_API void sk_rcu_thread_offline(void);

/*
 * sk_synchronize_rcu() - wait for a grace period: every read-side critical
 * section (general or QSBR) that began before the call has ended when it
 * returns.
 * Context: any thread outside a read-side critical section (inside one it
 * would deadlock: message and abort).  An online QSBR thread is put
 * offline for the wait and back online after.  Blocks: spins briefly, then
 * sleeps on a futex until the readers are done.  Concurrent callers share
 * grace periods.  Its first barrier is a handshake with the other registered
 * threads when they all answer within 5 us, else membarrier(2), and no
 * system call at all when they are all QSBR threads (docs/rcu.md).  A
 * registered general caller parks: it leaves the counts that grace
 * periods read until its next sk_rcu_read_lock(), so that grace periods
 * run while every other registered thread is parked need no barrier for
 * them (docs/rcu.md, "Parking").
 * Ordering: full barrier on entry and exit; on return, every access made
 * inside a pre-existing read section happened before the return.
 * Reclamation: objects unlinked before the call may be freed after it.
 */
SK_API void sk_synchronize_rcu(void);

/*
 * sk_synchronize_rcu_expedited() - like sk_synchronize_rcu(), with the
 * lowest latency at a higher CPU cost: instead of membarrier(2) the
 * caller first asks the other registered threads for a barrier at their
 * next unlock or quiescent state and waits up to 5 us for every answer
 * (falling back to membarrier(2) when one is missing; see docs/rcu.md);
 * then it polls the readers and yields the CPU instead of sleeping, and a
 * normal grace period already in progress switches to polling too.
 * Readers pay for it only while a request is open: one slow-path call and
 * a full fence per thread.
 * Context: as sk_synchronize_rcu().  Blocks (busy).
 * Ordering: as sk_synchronize_rcu().
 * Reclamation: objects unlinked before the call may be freed after it.
 */
SK_API void sk_synchronize_rcu_expedited(void);

/*
 * Polled grace periods.  A cookie names a grace period; cookies have the
 * width of unsigned long and are compared modulo 2^width, so they may wrap
 * (32-bit targets): a cookie of any age reads as completed, except one
 * taken a multiple of 2^width grace periods ago (give or take 1024), which
 * reads as not completed for at most 1024 more grace periods.
 * SK_RCU_COOKIE_COMPLETED always reads as completed; no cookie returned by
 * the functions below equals it.
 */
#define SK_RCU_COOKIE_COMPLETED 0UL

/*
 * sk_get_state_synchronize_rcu() - cookie for "a grace period that starts
 * after this call", without starting one.
 * Context: any thread, also inside a read section.  Never blocks.
 * Ordering: full barrier before the snapshot (the caller's unlinks are
 * ordered before it).
 * Returns: the cookie.
 */
SK_API unsigned long sk_get_state_synchronize_rcu(void);

/*
 * sk_start_poll_synchronize_rcu() - as sk_get_state_synchronize_rcu(),
 * and makes sure that grace period will start (the callback worker runs
 * it) without the caller blocking.  When the worker thread is not running
 * yet and cannot be started (pthread_create() fails), the request is
 * kept, not dropped: the worker runs it once a later sk_call_rcu() or
 * sk_start_poll_synchronize_rcu() has started it, and any grace period
 * that completes meanwhile (a sk_synchronize_rcu()) completes the cookie
 * too; nothing is printed.
 * Context: any thread, also inside a read section.  Never blocks.
 * Ordering: full barrier before the snapshot.
 * Returns: the cookie.
 */
SK_API unsigned long sk_start_poll_synchronize_rcu(void);

/*
 * sk_poll_state_synchronize_rcu() - has the grace period named by cookie
 * completed?
 * Context: any thread, also inside a read section.  Never blocks.
 * Ordering: when it returns 1, a full barrier after the observation: the
 * caller's later accesses (frees) come after every pre-existing reader.
 * Reclamation: on 1, objects unlinked before the cookie was taken may be
 * freed.
 * Returns: 1 when completed, 0 otherwise.
 */
SK_API int sk_poll_state_synchronize_rcu(unsigned long cookie);

/*
 * sk_cond_synchronize_rcu() - wait for the grace period named by cookie,
 * blocking only if it has not completed yet.
 * Context: as sk_synchronize_rcu().  May block.
 * Ordering: full barrier on return.
 * Reclamation: objects unlinked before the cookie was taken may be freed
 * after it.
 */
SK_API void sk_cond_synchronize_rcu(unsigned long cookie);

/*
 * Callbacks: struct sk_rcu_head is defined above.
 *
 * sk_call_rcu() - run fn(head) after a grace period, on the library's
 * callback worker thread (started on first use), or on the worker of the
 * caller's CPU while per-CPU workers run (sk_rcu_cb_workers_create()).
 * Callbacks queued by one thread run in the order queued (with per-CPU
 * workers: while it stays on one CPU); one grace period serves a whole
 * batch.  fn must not block for long, must not call sk_synchronize_rcu(),
 * sk_rcu_barrier() or sk_rcu_cb_workers_create()/_destroy(), and may call
 * sk_call_rcu().
 * Context: any thread, also inside a read section and inside a callback.
 * Wait-free: one atomic exchange on a per-thread queue; a thread with
 * many of its callbacks pending also yields the CPU once per call (more
 * than 2^18, or more than 4096 while the worker is running callbacks), so
 * that a flood cannot outrun the worker.
 * Ordering: the caller's accesses before the call happen before fn runs;
 * fn runs after every read section that began before the call has ended.
 * Reclamation: fn may free the object containing head.
 * Returns: 0; -EINVAL (nothing queued) when head or fn is NULL; -EBUSY
 * when head is already queued and its callback has not started yet:
 * nothing is printed and the second request is dropped, never queued (fn
 * does not run for it, so what it was to free stays allocated); the first
 * stays queued.  Checked in every
 * build, from a mark that sk_call_rcu() writes into head and that
 * includes head's address: head needs no initialisation before its first
 * sk_call_rcu(), and a copy of a queued head is not taken for it.  Two
 * calls on one head in different threads that the program does not order
 * (a data race) may both pass the check; the queue is then corrupt.
 * Never fails for want of a thread: when the callback worker's thread
 * cannot be started (pthread_create() fails: RLIMIT_NPROC, a pids cgroup
 * limit, no memory), the callback is queued all the same, nothing is
 * printed, and a later sk_call_rcu() tries the start again (at most once
 * per millisecond); sk_rcu_barrier() runs the pending callbacks itself if
 * it cannot start the worker either.
 */
SK_API int sk_call_rcu(struct sk_rcu_head *head,
		       void (*fn)(struct sk_rcu_head *head));

/*
 * sk_rcu_barrier() - wait until every callback queued (by any thread)
 * before the call has run.  Returns at once when none is pending.  When
 * the callback worker does not run and cannot be started, the caller
 * runs the pending callbacks of the default worker itself (each batch
 * after a grace period, as the worker would).
 * Context: any thread outside a read section and outside a callback
 * (either would deadlock: message and abort).  Blocks.
 * Ordering: the callbacks' accesses happen before the return.
 */
SK_API void sk_rcu_barrier(void);

/*
 * Per-CPU callback workers.  By default one worker thread runs every
 * callback; a program whose callbacks free memory that its producers
 * malloc()ed can instead have callbacks run near their producer:
 * sk_rcu_cb_workers_create() starts one worker per CPU the caller may run
 * on, pinned to that CPU, and from then on sk_call_rcu() and SK_FREE_RCU()
 * push onto the queue of the CPU the caller runs on (sched_getcpu()); that
 * CPU's worker waits for the grace period and runs them there, where the
 * objects were just touched (liburcu's create_all_cpu_call_rcu_data()).
 * The default worker stays: it runs the queues of CPUs without a worker,
 * polled grace periods, and, after sk_rcu_cb_workers_destroy(), whatever
 * is left on the per-CPU queues.
 *
 * Order: callbacks queued by one thread on one CPU run in the order
 * queued; callbacks that a thread queued before and after the scheduler
 * moved it to another CPU are not ordered with each other.
 */

/* Flag of sk_rcu_cb_workers_create(): do not pin the workers. */
#define SK_RCU_CB_WORKERS_UNPINNED 1u

/*
 * sk_rcu_cb_workers_create() - start the per-CPU callback workers, one for
 * each CPU in the caller's affinity mask, pinned to it unless flags has
 * SK_RCU_CB_WORKERS_UNPINNED (then the scheduler places them; the queues
 * are still per CPU).  Callbacks queued earlier stay where they are and
 * run as before.
 * Context: any thread outside a read section and outside a callback
 * (-EDEADLK: a concurrent destroy may wait for the caller); an online
 * QSBR thread is put offline for the call and back online after.
 * Blocks: creates threads, and waits for a concurrent create or destroy.
 * Ordering: a sk_call_rcu() that happens after the return uses the
 * per-CPU queues (acquire/release on the mode word).
 * Reclamation: unchanged (see sk_call_rcu()); sk_rcu_barrier() waits for
 * the per-CPU queues too.
 * Returns: 0; -EEXIST when the per-CPU workers run already; -EINVAL for
 * unknown flags; -EDEADLK from a callback or a read section (nothing
 * changed); -ENOMEM or -EAGAIN when memory
 * or a thread is missing (then no per-CPU worker runs).
 */
SK_API int sk_rcu_cb_workers_create(unsigned flags);

/*
 * sk_rcu_cb_workers_destroy() - stop the per-CPU callback workers.
 * Callbacks still on the per-CPU queues, or queued there by calls that
 * overlap the destroy, are not lost: the default worker runs them, after
 * their grace period, as usual.  The per-CPU queues (two cache lines per
 * CPU) stay allocated for a later create.
 * Context: any thread outside a read section and outside a callback
 * (-EDEADLK: it would wait for its own worker, or for a batch's grace
 * period, which waits for the caller); an online QSBR thread is put
 * offline for the call and back online after.  Blocks: waits for each
 * worker to finish the batch it runs.
 * Ordering: a sk_call_rcu() that happens after the return uses the
 * calling thread's own queue again.
 * Returns: 0, -ENOENT when no per-CPU worker runs, -EDEADLK.
 */
SK_API int sk_rcu_cb_workers_destroy(void);

/*
 * sk_rcu_cb_workers_running() - how many per-CPU workers run (0 when
 * none: sk_call_rcu() uses the default worker); a snapshot, which a
 * concurrent create or destroy may change at once.
 * Context: any thread, also a callback.  Never blocks.
 * Ordering: none.
 */
SK_API int sk_rcu_cb_workers_running(void);

/*
 * sk_defer_rcu() - call fn(p) after a grace period, for an object that
 * has no struct sk_rcu_head (liburcu's defer_rcu()).  Each call is one
 * RCU callback (see sk_call_rcu() for where and in which order callbacks
 * run) whose head comes from a slab of 63 that the calling thread owns,
 * allocated once per 63 calls and freed after the last of its callbacks
 * ran; sk_rcu_barrier() waits for deferred calls too.  fn runs on a
 * callback worker, under the same rules as a callback.
 * Context: any thread outside a read-side critical section (inside one:
 * message and abort, in every build); an online QSBR thread may call it.
 * Blocks only when memory runs out: then it waits for a grace period as
 * sk_synchronize_rcu() does (an online QSBR thread goes offline for the
 * wait) and calls fn(p) itself before returning.
 * Ordering: the caller's accesses before the call happen before fn runs;
 * fn runs after every read section that began before the call has ended.
 * Returns: 0; -EINVAL when fn is NULL (nothing is called).
 */
SK_API int sk_defer_rcu(void (*fn)(void *p), void *p);

/*
 * Callback workers of the program's own (liburcu's create_call_rcu_data()).
 * sk_rcu_cb_worker_create() starts a worker thread with a queue of its
 * own; sk_call_rcu_on() queues a callback there, which that thread runs
 * after a grace period (as the default worker would, same rules for fn).
 * sk_call_rcu() never uses such a worker: a program routes callbacks to
 * it explicitly (e.g. one worker per subsystem, or per thread).
 * sk_rcu_barrier() waits for their callbacks too.  Order: callbacks that
 * one thread queues on one worker run in the order queued.
 */
struct sk_rcu_cb_worker;

/*
 * sk_rcu_cb_worker_create() - start a callback worker; pinned to CPU cpu
 * when cpu >= 0, not pinned when cpu is -1.  Also starts the default
 * worker if it does not run yet (it takes over at the destroy).
 * Context: any thread, also a callback.  Blocks: creates a thread.
 * Ordering: a sk_call_rcu_on() that happens after the return uses the
 * new worker.
 * Returns: the worker, or NULL with errno EINVAL (flags not 0, cpu < -1,
 * or a CPU the process may not run on), ENOMEM, or EAGAIN (no thread).
 */
SK_API struct sk_rcu_cb_worker *sk_rcu_cb_worker_create(unsigned flags,
							 int cpu);

/*
 * sk_rcu_cb_worker_destroy() - stop worker w and free it.  Callbacks
 * still on its queue are not lost: the default worker runs them, after
 * their grace period, and frees w's memory once they ran.  The caller
 * must make sure that no sk_call_rcu_on(w) runs during or after the call.
 * Context: any thread outside a read section and outside a callback
 * (-EDEADLK: either would wait for itself); an online QSBR thread is put
 * offline for the call and back online after.  Blocks: waits for the
 * batch w is running, and for the grace period that batch waits for.
 * Returns: 0, -EINVAL (w NULL), -EDEADLK (from a callback or a read
 * section; w unchanged).
 */
SK_API int sk_rcu_cb_worker_destroy(struct sk_rcu_cb_worker *w);

/*
 * sk_call_rcu_on() - sk_call_rcu() onto worker w's queue: w runs fn(head)
 * after a grace period.  Same contract as sk_call_rcu() (wait-free, never
 * fails for want of a thread: after a fork() the child has no thread of
 * w, and the default worker runs w's callbacks there).
 * Returns: 0; -EINVAL (w, head or fn NULL); -EBUSY (head already queued).
 */
SK_API int sk_call_rcu_on(struct sk_rcu_cb_worker *w,
			  struct sk_rcu_head *head,
			  void (*fn)(struct sk_rcu_head *head));

/*
 * sk_rcu_cb_worker_pthread() - the thread of worker w, in *out.
 * Context: any thread.  May block briefly on a library mutex.
 * Returns: 0; -EINVAL (NULL argument); -ESRCH when w has no thread (in a
 * fork() child).
 */
SK_API int sk_rcu_cb_worker_pthread(struct sk_rcu_cb_worker *w,
				    pthread_t *out);

/* Queue free((char *)head - offset) after a grace period (SK_FREE_RCU). */
SK_API SK__NOTHROW int sk_rcu__free_offset(struct sk_rcu_head *head, size_t offset);

/*
 * SK_FREE_RCU(ptr, field) - free(ptr) after a grace period, where field is
 * the struct sk_rcu_head member of *ptr; no callback to write.
 * Context, ordering, returns: as sk_call_rcu().  ptr must come from
 * malloc() and field must lie in its first 4 KiB.
 */
#define SK_FREE_RCU(ptr, field) \
	sk_rcu__free_offset(&(ptr)->field, offsetof(__typeof__(*(ptr)), field))

/* Counters kept by the RCU domain (see sk_rcu_get_stats()). */
struct sk_rcu_stats {
	unsigned long grace_periods; /* grace periods completed */
	unsigned long sync_calls;    /* sk_synchronize_rcu() calls, with the
					_expedited ones (also of exited
					threads) */
	unsigned long gp_sleeps;     /* times a grace period slept on a futex */
	unsigned long readers;	     /* threads in the registry now */
	unsigned long cb_queued;     /* sk_call_rcu() calls accepted */
	unsigned long cb_invoked;    /* callbacks that have run */
	unsigned long cb_batches;    /* grace periods run by the worker */
	unsigned long cb_peak_backlog; /* most callbacks pending at once */
	unsigned long exp_handshakes; /* expedited grace periods whose first
					 barrier was a handshake with the
					 readers (no membarrier) */
	unsigned long exp_fallbacks;  /* expedited grace periods that used
					 membarrier(2) (a reader did not
					 answer, or backing off) */
};

/*
 * sk_rcu_get_stats() - copy a snapshot of the domain's counters to *st.
 * Context: any thread; may block briefly on the registry lock and on the
 * lock of the per-thread synchronize counts (sync_calls is their sum).
 * Ordering: none (counters are read one by one).
 * Returns: 0, or -EINVAL when st is NULL.
 */
SK_API int sk_rcu_get_stats(struct sk_rcu_stats *st);

/*
 * sk_rcu_set_stall_ms() - set the threshold of the stall watchdog: a grace
 * period that has waited longer than ms milliseconds prints the threads
 * that block it on stderr, and again after 2x, 4x ... that time.  The
 * process starts with SCALEKIT_RCU_STALL_MS (read once at load time) or
 * 21000; this call replaces it for every later grace period (one that
 * already waits keeps the threshold it started with).
 * Context: any thread, also inside a read section; never blocks.
 * Returns: 0, or -EINVAL (nothing changed) when ms is 0 or above 24 hours
 * (86,400,000).
 */
SK_API int sk_rcu_set_stall_ms(unsigned long ms);

/* sk_rcu_get_stall_ms() - the stall watchdog's threshold now, in ms. */
SK_API unsigned long sk_rcu_get_stall_ms(void);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_RCU_H */
