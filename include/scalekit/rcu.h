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

#include "scalekit/barrier.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Private doubly linked list node used inside library structures. */
struct sk__link {
	struct sk__link *next, *prev;
};

/*
 * Per-thread reader state.  The fields marked ABI are touched by the inline
 * fast paths below and keep their meaning and offset across releases; the
 * others are private to the library.
 */
struct sk_rcu_reader {
	unsigned long ctr;	  /* ABI: 0 outside a section, else gp snapshot */
	unsigned long nest;	  /* ABI: section nesting depth (owner only) */
	int registered;		  /* ABI: nonzero while in the registry */
	int kind;		  /* private: how the thread was registered */
	struct sk__link link_;	  /* private: registry links */
	long tid_;		  /* private: kernel thread id */
	unsigned long blocked_since_; /* private: stall bookkeeping */
};

/*
 * Grace-period state read by the fast paths.  Guarded by: ctr is written
 * only by the grace-period leader; futex by the leader (to -1) and by
 * readers that wake it (to 0).  Alone on its cache line, read-mostly.
 */
struct sk_rcu__gp_state {
	unsigned long ctr; /* ABI: current grace-period counter, >= 1 */
	int futex;	   /* ABI: -1 while a grace period sleeps on readers */
} __attribute__((aligned(SK_CACHELINE)));

SK_API extern struct sk_rcu__gp_state sk_rcu__gp;
SK_API extern __thread struct sk_rcu_reader sk_rcu__reader
	__attribute__((tls_model("initial-exec")));

/* nest value of an online QSBR thread outside any explicit read_lock. */
#define SK_RCU_QSBR_ONLINE (1UL << (sizeof(unsigned long) * 8 - 2))

/* Slow paths of the inline functions; not for direct use. */
SK_API void sk_rcu__register_slow(void);
SK_API void sk_rcu__wake_gp(void);
SK_API __attribute__((noreturn)) void sk_rcu__unlock_misuse(void);
SK_API __attribute__((noreturn)) void sk_rcu__qs_misuse(void);

/*
 * sk_rcu_read_lock() - enter a read-side critical section.
 * Context: any thread; registers the thread on first use (and unregisters
 * it at thread exit).  Nestable.  Wait-free: no atomic read-modify-write,
 * no fence (when membarrier(2) works), never blocks.  The section must not
 * block for long: it delays every grace period (use SRCU for that).
 * Ordering: loads inside the section are ordered after the section's start
 * as seen by sk_synchronize_rcu() (light fence paired with its heavy fence).
 * Reclamation: objects reached inside the section stay valid until the
 * matching sk_rcu_read_unlock().
 */
static inline void sk_rcu_read_lock(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;
	unsigned long n = r->nest;

	if (SK_LIKELY(n == 0)) {
		if (SK_UNLIKELY(!r->registered))
			sk_rcu__register_slow();
		/*
		 * L1: snapshot the grace-period counter.  Acquire pairs with
		 * the release R1 that advances it in the grace-period code.
		 */
		sk_atomic_store_relaxed(
			&r->ctr, sk_atomic_load_acquire(&sk_rcu__gp.ctr));
		/*
		 * L2: orders the ctr store before the section's loads; pairs
		 * with the heavy fence G1 issued before the reader scan.
		 */
		sk_fence_light();
	}
	/* After the ctr store, so a signal handler nesting here is covered. */
	r->nest = n + 1;
}

/*
 * sk_rcu_read_unlock() - leave a read-side critical section.
 * Context: the thread that called the matching sk_rcu_read_lock().
 * Wait-free, never blocks (may issue one futex wake when a grace period
 * sleeps on this thread).  An unbalanced call prints a message and aborts.
 * Ordering: loads inside the section are ordered before its end as seen by
 * sk_synchronize_rcu() (light fence paired with its heavy fence G2).
 * Reclamation: objects reached inside the section may be freed by an
 * updater once this returns and a grace period ends.
 */
static inline void sk_rcu_read_unlock(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;
	unsigned long n = r->nest;

	if (SK_LIKELY(n == 1)) {
		r->nest = 0;
		/*
		 * U1: orders the section's loads before ctr = 0; pairs with
		 * the heavy fence G2 issued after the reader scan.
		 */
		sk_fence_light();
		SK_TSAN_RELEASE(&r->ctr);
		sk_atomic_store_relaxed(&r->ctr, 0UL);
		/*
		 * U2: orders ctr = 0 before the futex load (store buffering);
		 * pairs with the heavy fence G3 after the waiter sets futex.
		 */
		sk_fence_light();
		if (SK_UNLIKELY(sk_atomic_load_relaxed(&sk_rcu__gp.futex)))
			sk_rcu__wake_gp();
	} else if (SK_UNLIKELY(n == 0 || n == SK_RCU_QSBR_ONLINE)) {
		sk_rcu__unlock_misuse();
	} else {
		r->nest = n - 1;
	}
}

/*
 * sk_rcu_read_ongoing() - nonzero inside a read-side critical section
 * (for a QSBR thread: while it is online).
 * Context: any thread; never blocks.  Ordering: none.
 */
static inline int sk_rcu_read_ongoing(void)
{
	return sk_rcu__reader.nest != 0;
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
 * sk_rcu_register_thread() - add the calling thread to the RCU registry.
 * Optional: sk_rcu_read_lock() registers on first use.  Calling it again on
 * a registered thread does nothing.
 * Context: any thread outside a read section; may block briefly on the
 * registry lock (never on a grace period).
 * Ordering: full barrier (mutex).
 * Returns: 0.
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
 * sk_rcu_quiescent_state() - a QSBR thread announces that it holds no
 * reference obtained from RCU-protected pointers.
 * Context: an online QSBR thread outside any sk_rcu_read_lock() section
 * (otherwise: message and abort).  Never blocks.  When no grace period
 * started since the last announcement it is a load and a compare.
 * Ordering: earlier loads are ordered before the announcement and later
 * loads after it, as seen by sk_synchronize_rcu() (light fences paired
 * with its heavy fences).
 * Reclamation: references obtained before the call may be freed by an
 * updater once a grace period ends.
 */
static inline void sk_rcu_quiescent_state(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;
	unsigned long gp = sk_atomic_load_acquire(&sk_rcu__gp.ctr);

	if (SK_UNLIKELY(r->nest != SK_RCU_QSBR_ONLINE))
		sk_rcu__qs_misuse();
	/* No grace period began since the last announcement: nobody waits. */
	if (gp == sk_atomic_load_relaxed(&r->ctr))
		return;
	/* Q1: earlier loads before the announcement; pairs with G2. */
	sk_fence_light();
	SK_TSAN_RELEASE(&r->ctr);
	sk_atomic_store_relaxed(&r->ctr, gp);
	/* Q2: announcement before the futex load and later loads; pairs with G1/G3. */
	sk_fence_light();
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&sk_rcu__gp.futex)))
		sk_rcu__wake_gp();
}

/*
 * sk_rcu_thread_online() - make the calling thread a QSBR reader that is
 * online: from now until sk_rcu_thread_offline() or the next
 * sk_rcu_quiescent_state() it is inside a read-side critical section.
 * Registers the thread if needed.
 * Context: a thread outside any read section (else message and abort).
 * Never blocks except briefly on the registry lock the first time.
 * Ordering: later loads are ordered after going online (light fence
 * paired with the grace period's heavy fence).
 */
SK_API void sk_rcu_thread_online(void);

/*
 * sk_rcu_thread_offline() - an online QSBR thread stops holding any
 * reference; grace periods no longer wait for it.  Use it around blocking
 * calls.  While offline the thread may still use sk_rcu_read_lock().
 * Context: an online QSBR thread outside sk_rcu_read_lock() (else message
 * and abort).  Never blocks.
 * Ordering: earlier loads are ordered before going offline (light fence
 * paired with the grace period's heavy fence).
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
 * grace periods.
 * Ordering: full barrier on entry and exit; on return, every access made
 * inside a pre-existing read section happened before the return.
 * Reclamation: objects unlinked before the call may be freed after it.
 */
SK_API void sk_synchronize_rcu(void);

/* Counters kept by the RCU domain (see sk_rcu_get_stats()). */
struct sk_rcu_stats {
	unsigned long grace_periods; /* grace periods completed */
	unsigned long sync_calls;    /* sk_synchronize_rcu() calls */
	unsigned long gp_sleeps;     /* times a grace period slept on a futex */
	unsigned long readers;	     /* threads in the registry now */
};

/*
 * sk_rcu_get_stats() - copy a snapshot of the domain's counters to *st.
 * Context: any thread; may block briefly on the registry lock.
 * Ordering: none (counters are read one by one).
 * Returns: 0, or -EINVAL when st is NULL.
 */
SK_API int sk_rcu_get_stats(struct sk_rcu_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_RCU_H */
