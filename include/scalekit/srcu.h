/* SPDX-License-Identifier: MIT */
/*
 * scalekit/srcu.h - sleepable RCU: domains whose readers may block.
 *
 * A struct sk_srcu is a domain.  Readers bracket a section with
 *	int idx = sk_srcu_read_lock(d);  ...  sk_srcu_read_unlock(d, idx);
 * and may sleep, take locks or do I/O inside it; the unlock may run on
 * another thread than the lock.  sk_synchronize_srcu(d) waits for the
 * sections of d only: a reader blocked forever in one domain delays
 * neither other domains nor plain RCU.
 *
 * Read side: each thread has its own counter per domain and index
 * (sections entered less those it ended), so the fast path is a load and
 * a store of a thread-private counter and a compiler barrier: no atomic
 * read-modify-write, no fence.  The grace period sums the counters
 * and pays with the heavy fence.  See docs/srcu.md.
 */
#ifndef SCALEKIT_SRCU_H
#define SCALEKIT_SRCU_H

#include <pthread.h>
#include <stdint.h>

#include "scalekit/barrier.h"
#include "scalekit/rcu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads with their own counters: per chunk, and chunks per domain. */
#define SK__SRCU_CHUNK_SLOTS 64
#define SK__SRCU_MAX_CHUNKS  256

/*
 * A 64-bit field also on 32-bit targets (counters that must not wrap),
 * aligned to 8 so that its atomic accesses are single-copy atomic there
 * (i386 aligns uint64_t members to 4 only).
 */
typedef uint64_t sk_srcu__u64 __attribute__((aligned(8)));

/*
 * One thread index's counters in one domain, on its own cache line.
 * cnt[] is written only by the thread that owns the index (ABI: the
 * inline fast paths touch it): per index, the sections it entered minus
 * those it ended itself (a lock adds 1, the owner's unlock takes 1
 * away); remote[] counts sections of that thread ended by other threads
 * (atomic add).  So cnt[i] - remote[i] sections of the slot are open on
 * index i.  A grace period sums remote[i], then cnt[i], over all slots
 * (docs/srcu.md, "Grace periods").  key is what the owner's sections in
 * this domain return, less the index bit: binding incarnation << 16 |
 * thread index << 1, where the binding incarnation is new each time a
 * thread takes a slot (so a thread's keys in two domains differ, and an
 * idx of one domain ended on another is told apart).
 *
 * Type-stable: slot memory is never returned to malloc() (a destroyed
 * domain's chunks go to a process-wide pool and are reused at the same
 * thread index), so a thread's slot cache may keep a pointer to a slot
 * it no longer owns; dom and key tell (docs/srcu.md, "The read side").
 */
struct sk_srcu_slot {
	unsigned long cnt[2];	 /* ABI: sections entered minus those the
				    owner ended, per index */
	unsigned long remote[2]; /* ABI: own sections ended elsewhere */
	unsigned long key;	 /* ABI (atomic): idx of the owner's sections
				    without the index bit, |
				    SK__SRCU_KEY_REMOTE once remote[] may be
				    nonzero, | SK__SRCU_KEY_DOM(dom); 0 or
				    meaningless while dom is NULL */
	struct sk_srcu *dom;	 /* ABI (atomic): the domain whose binding
				    this is; NULL: none (the slot's owner
				    sets it, sk_srcu_destroy() clears it) */
} __attribute__((aligned(SK_CACHELINE)));

/*
 * Set in key (atomic OR) when another thread counts in remote[] (or when
 * the slot is bound with remote[] nonzero): the inline unlock's balance
 * check then adds remote[i]; without it remote[] is 0 and is not loaded.
 * Above the 32 bits an idx has, so the lock's (int) conversion drops it.
 * ILP32 has no such bit: the unlock always loads remote[i] there.
 */
#if __SIZEOF_LONG__ > 4
#define SK__SRCU_KEY_REMOTE    (1UL << 32)
#define SK__SRCU_KEY_REMOTE_ON 1
#else
#define SK__SRCU_KEY_REMOTE    0UL
#define SK__SRCU_KEY_REMOTE_ON 0
#endif

/*
 * The domain's part of a slot's key (LP64 only: bits 33 to 63, above the
 * 32 bits of an idx and SK__SRCU_KEY_REMOTE): bit 33 set, and bits 6 to 35
 * of the domain's address in bits 34 to 63 (a domain is
 * SK_CACHELINE-aligned: its bits 0 to 5 are 0, and bit 5 becomes bit 33).
 * So the inline unlock checks the slot's binding and, but for domains
 * whose addresses agree in bits 6 to 35, its domain with one load (key)
 * instead of two (key and dom).  Never 0: a slot that sk_srcu_destroy()
 * cleared (key 0) matches no domain.  ILP32: 0, and the unlock loads dom.
 */
#if SK__SRCU_KEY_REMOTE_ON
#define SK__SRCU_KEY_DOM(d) \
	(((unsigned long)(uintptr_t)(d) | 1UL << 5) << 28)
#else
#define SK__SRCU_KEY_DOM(d) 0UL
#endif

/* Word offset from &cnt[i] of remote[i] (ABI). */
#define SK__SRCU_REMOTE 2

/*
 * A domain: what the inline read paths touch (ABI), and a pointer to the
 * library's private state (grace periods, callbacks, the slot directory),
 * whose layout no application sees.  Define one with SK_SRCU_DEFINE(name)
 * (or SK_SRCU_DEFINE_STATIC), or initialize it with sk_srcu_init().
 *
 * Alignment: struct sk_srcu is aligned to SK_CACHELINE (64) bytes.  The
 * compiler does that for static, automatic and member storage; memory
 * from malloc() is not enough: allocate with
 * aligned_alloc(SK_CACHELINE, sizeof(struct sk_srcu)) (sk_srcu_init()
 * rejects a misaligned domain with -EINVAL).
 */
struct sk_srcu__state;
struct sk_srcu {
	unsigned long idx;	   /* ABI: low bit = index of new readers */
	struct sk_srcu__state *state; /* private: the library's state */
} __attribute__((aligned(SK_CACHELINE)));

/*
 * Room for the private state of a domain defined with SK_SRCU_DEFINE():
 * zeroed static storage that the library initializes on first use.  Its
 * size is the only thing about the private state an application compiles
 * in; the library checks at build time that its state fits, so private
 * fields may change within this reserve without any application noticing.
 */
#define SK__SRCU_STATE_BYTES 2048
struct sk_srcu__store {
	unsigned char bytes[SK__SRCU_STATE_BYTES];
} __attribute__((aligned(SK_CACHELINE)));

/*
 * SK_SRCU_DEFINE(name) - define struct sk_srcu name (external linkage)
 * and the static storage of its private state; ready to use without
 * sk_srcu_init().  SK_SRCU_DEFINE_STATIC(name): the same with internal
 * linkage.  At file (namespace) scope, in C and C++.
 */
#define SK__SRCU_DEFINE(cls, name)                                        \
	static struct sk_srcu__store name##__sk_srcu_store;              \
	cls struct sk_srcu name = {                                      \
		0, (struct sk_srcu__state *)(void *)&name##__sk_srcu_store \
	}
#define SK_SRCU_DEFINE(name)	    SK__SRCU_DEFINE(, name)
#define SK_SRCU_DEFINE_STATIC(name) SK__SRCU_DEFINE(static, name)

#ifndef __cplusplus
/*
 * SK_SRCU_INITIALIZER(name) - initializer for a domain that must be a
 * struct member or otherwise cannot use SK_SRCU_DEFINE():
 *	static struct { ...; struct sk_srcu d; } s = {
 *		.d = SK_SRCU_INITIALIZER(s.d) };
 * C only: the private state is a compound literal, which has static
 * storage at file scope and the enclosing block's lifetime in a function
 * (the same as an automatic domain's).  A static domain inside a function
 * cannot use it (the compiler rejects it): use SK_SRCU_DEFINE_STATIC at
 * file scope or sk_srcu_init().  name, the domain being initialized, is
 * not used by the macro: it only makes the call read like
 * SK_SRCU_DEFINE(name).
 */
#define SK_SRCU_INITIALIZER(name)                                         \
	{                                                                 \
		.state = (struct sk_srcu__state *)(void *)&(                \
			struct sk_srcu__store){ { 0 } },                    \
	}
#endif

/*
 * Per-thread cache of slots (ABI): a small direct-mapped table of this
 * thread's slots, one way per domain address, so the fast paths reach
 * the thread's slot without walking the slot directory.  An entry is
 * valid for d when its slot's dom is d (the slot is type-stable, see
 * struct sk_srcu_slot); an empty way points at a slot that no thread
 * binds (dom NULL).
 */
#define SK__SRCU_WAYS 8
#define SK__SRCU_WAY(d) \
	((unsigned int)((unsigned long)(d) / SK_CACHELINE) % SK__SRCU_WAYS)

struct sk_srcu__tls {
	struct sk_srcu_slot *slot[SK__SRCU_WAYS]; /* this thread's slots */
	/*
	 * The low 32 bits of slot[w]'s key (the idx of its binding's
	 * sections without the index bit), kept beside the pointer so that
	 * the lock reaches it without waiting for the load of slot[w]; the
	 * library stores it whenever it caches a slot, which it does after
	 * every binding (only this thread binds its slots), so it is the
	 * slot's while the slot's dom is d.
	 */
	unsigned int key[SK__SRCU_WAYS];
};

/*
 * The symbol's name (asm label) carries the layout of struct sk_srcu__tls
 * (key[] came with the second): a program built against another layout
 * than its library's fails to load, with an undefined symbol, instead of
 * reading the wrong words.
 */
SK_API extern __thread struct sk_srcu__tls sk_srcu__tls __asm__("sk_srcu__tls_v2")
	__attribute__((tls_model("initial-exec")));

/* Slow paths of the inline functions; not for direct use. */
SK_API SK__NOTHROW int sk_srcu__read_lock_slow(struct sk_srcu *d);
SK_API SK__NOTHROW void sk_srcu__read_unlock_slow(struct sk_srcu *d, int idx);

/*
 * sk_srcu_init() - initialize a domain (or re-initialize one that
 * sk_srcu_destroy() released): allocates its private state.
 * Context: any thread; the domain must not be in use.  Never blocks.
 * Returns: 0, -EINVAL when d is NULL or not aligned to SK_CACHELINE, or
 * -ENOMEM (d unchanged).
 */
SK_API int sk_srcu_init(struct sk_srcu *d);

/*
 * sk_srcu_destroy() - release the memory of a domain.  Once it returned 0,
 * a domain whose state sk_srcu_init() allocated must be initialized again
 * before any other use (sk_srcu_destroy() and
 * sk_poll_state_synchronize_srcu() excepted; any other call prints a
 * message and aborts); a domain from SK_SRCU_DEFINE() or
 * SK_SRCU_INITIALIZER() stays usable.
 * Context: any thread, outside read sections of d, also an SRCU callback;
 * no thread may begin a section of d (or make any other call on it)
 * while it runs: it sees the sections open when it looks, not one that
 * begins meanwhile.  May block briefly (while the worker runs a batch of d's callbacks:
 * until that batch has run).
 * Returns: 0; -EINVAL when d is NULL; -EBUSY (nothing printed; domain
 * left intact and usable) when a reader is inside a section of d or
 * callbacks or a polled grace period are pending, which includes a call
 * from a callback of d.
 */
SK_API int sk_srcu_destroy(struct sk_srcu *d);

/*
 * *p += 1 for the counter's only writer: a relaxed load and a relaxed
 * store, which clang compiles to one add to memory and gcc to three
 * instructions; on x86-64 that add, written out (not locked: no other
 * thread writes *p; its store of the aligned word is single-copy atomic,
 * as the relaxed store is, for the grace period's atomic loads).
 * Volatile, so that it stays where the source puts it (before the
 * section's compiler barrier SRCU-B).  TSan builds keep the atomics,
 * which it sees.
 */
static inline void sk_srcu__count_up(unsigned long *p)
{
#if defined(SK__BARRIER_ARCH_X86_64) && !defined(SK__TSAN)
	__asm__ __volatile__("addq $1, %0" : "+m"(*p));
#else
	sk_atomic_store_relaxed(p, sk_atomic_load_relaxed(p) + 1);
#endif
}

/*
 * sk_srcu_read_lock() - enter a read-side critical section of d.
 * Context: any thread; no registration.  Nestable, may sleep inside.
 * Wait-free: a look-up in this thread's slot cache, a load and a store of
 * this thread's counter, a load of its copy of the key and a compiler
 * barrier (where membarrier(2) is missing, a call and a full fence); the
 * first use by a thread or in a domain allocates its counters (never
 * fails: threads beyond the limit or out of memory share atomic counters).
 * Ordering: the section's accesses are ordered after the lock as seen by
 * the grace period (light fence SRCU-B, paired with its heavy fence SRCU-D).
 * Reclamation: objects reached inside the section stay valid until the
 * matching unlock.
 * Returns: the index to pass to sk_srcu_read_unlock() (>= 0).
 */
static inline int sk_srcu_read_lock(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = sk_srcu__tls.slot[SK__SRCU_WAY(d)];
	unsigned long bit;
	unsigned int key;

	/*
	 * The cached slot is ours in d while its dom is d: we set it when we
	 * bound the slot (our own write: no ordering), sk_srcu_destroy()
	 * clears it before the slot can be reused.  The library caches slots
	 * only when the fence mode is membarrier(2): without it every section
	 * takes the slow path.
	 */
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&s->dom) != d))
		return sk_srcu__read_lock_slow(d);
	/* The slot's key, from our own copy (struct sk_srcu__tls). */
	key = sk_srcu__tls.key[SK__SRCU_WAY(d)];
	bit = SK_READ_ONCE(d->idx) & 1;
	sk_srcu__count_up(&s->cnt[bit]);
	/*
	 * SRCU-B: the count before the section; pairs with the heavy fence
	 * SRCU-D (membarrier(2), which a cache hit implies): a compiler
	 * barrier.
	 */
	sk_barrier();
	return (int)(key | (unsigned int)bit);
}

/*
 * No section of a slot is open on an index: c points at its cnt[i], m is
 * cnt[i] - 1; with_remote: less remote[i] (other threads' ends of its
 * sections).  Open sections less one, read as signed: right when the
 * counters wrap (exact while fewer than LONG_MAX sections are open).
 */
static inline int sk_srcu__none_open(const unsigned long *c, unsigned long m,
				     int with_remote)
{
	if (with_remote)
		m -= sk_atomic_load_relaxed(&c[SK__SRCU_REMOTE]);
	return (long)m < 0;
}

/*
 * sk_srcu_read_unlock() - leave the section that returned idx.
 * Context: any thread (also another than the locker).  Never blocks and
 * never enters the kernel: an updater waiting for this section notices
 * the unlock by polling (readers wake no one).  An unbalanced end prints
 * a message and aborts; so does an idx that no lock of d returned
 * (garbage, or an idx of another domain while the thread that took it is
 * alive, also when it has a section of d open on the same index bit),
 * except the cases listed in docs/srcu.md (Misuse: the locker exited, a
 * binding incarnation reused, 0 or 1 while a shared section is open, an
 * idx naming a thread index that has a slot in d with an incarnation that
 * is not its current binding's), where it ends an open section of d
 * instead (in the last case, when that slot has none open on the index
 * bit, it aborts as unbalanced).
 * Wait-free: the slot-cache and key checks, a load and a release store of
 * this thread's counter (one more load once another thread has ended one
 * of its sections of d); no fence.
 * Ordering: the section's accesses are ordered before the unlock as seen
 * by the grace period (release SRCU-C, paired with its heavy fence SRCU-D).
 * Reclamation: objects reached in the section may be freed by an updater
 * once this returns and a grace period of d ends.
 */
static inline void sk_srcu_read_unlock(struct sk_srcu *d, int idx)
{
	struct sk_srcu_slot *s = sk_srcu__tls.slot[SK__SRCU_WAY(d)];
	/*
	 * idx is key | i for a section of the slot's binding, whose key has
	 * its low bit clear and holds SK__SRCU_KEY_DOM() of the binding's
	 * domain: when that domain is d, x is the index bit i (at most 1),
	 * or SK__SRCU_KEY_REMOTE | i when other threads ended some of the
	 * binding's sections.
	 */
	unsigned long k = sk_atomic_load_relaxed(&s->key);
	unsigned long dk = SK__SRCU_KEY_DOM(d), x, *c, n;

	/*
	 * dk opaque (no instruction): gcc would otherwise split the constant
	 * bit off and OR it in every pair; so it is one loop-invariant value.
	 */
	__asm__("" : "+r"(dk));
	x = ((unsigned long)(unsigned int)idx | dk) ^ k;

	/*
	 * x opaque to the optimizer (no instruction): the slow path below
	 * gets idx back as x ^ k (its low 32 bits), so that gcc keeps no
	 * copy of idx (a mov in every pair) for it.
	 */
	__asm__("" : "+r"(x));

	SK_TSAN_RELEASE(d); /* SRCU-C below, for TSan: pairs with SRCU-D */
	/*
	 * Unbalanced when the slot has no section open on this index: its
	 * count less the ends elsewhere (remote[i], loaded only when key
	 * says it may be nonzero) is not positive.  The slow path reports
	 * it.  The counter's address comes from idx, not from x: so it does
	 * not wait for the load of key (the next section's count, at the
	 * same address, would wait for this store's address).
	 */
	c = &s->cnt[(unsigned int)idx & 1];
	if (SK_LIKELY(x <= 1)) {
		n = sk_atomic_load_relaxed(c) - 1;
		/* ILP32 has no remote bit: remote[i] always counts there. */
		if (SK_UNLIKELY(
			    sk_srcu__none_open(c, n, !SK__SRCU_KEY_REMOTE_ON)))
			goto slow;
	} else {
		/* Not the slot's binding's idx (another thread's, another
		 * domain's, a stale way, bogus): the slow path. */
		if (!SK__SRCU_KEY_REMOTE_ON || x - SK__SRCU_KEY_REMOTE > 1)
			goto slow;
		n = sk_atomic_load_relaxed(c) - 1;
		if (sk_srcu__none_open(c, n, 1))
			goto slow;
	}
	/*
	 * The slot is our binding in d: its key (only we store a nonzero
	 * one, when we bind it; sk_srcu_destroy() clears it) says so on
	 * LP64, where it holds SK__SRCU_KEY_DOM(d), but for a domain whose
	 * address agrees with d's in bits 6 to 35 (docs/srcu.md, Misuse).
	 * ILP32 loads dom (only we set it to d, sk_srcu_destroy() and our
	 * exit clear it).  Otherwise (a way caching another domain's slot or
	 * a stale one; the counter above was then not ours, and is not
	 * written) the slow path.
	 */
	if (!SK__SRCU_KEY_REMOTE_ON &&
	    SK_UNLIKELY(sk_atomic_load_relaxed(&s->dom) != d))
		goto slow;
	/*
	 * SRCU-C: release: the section before the count; pairs with the
	 * sums' heavy fence SRCU-D (a count that went down means the section
	 * is over).  A release, not a fence: nothing after the unlock needs
	 * ordering (store-load), so no membarrier pairing, and on x86 a
	 * plain store.
	 */
	sk_atomic_store_release(c, n);
	return;
slow:
	sk_srcu__read_unlock_slow(d, (int)(unsigned int)(x ^ k)); /* idx */
}

/*
 * sk_srcu_dereference(p, d) - load an SRCU-protected pointer inside a
 * read section of d.  Ordering: as sk_rcu_dereference().
 */
#define sk_srcu_dereference(p, d) ((void)(d), sk_rcu_dereference(p))

/*
 * sk_srcu_read_lock_held() - nonzero when the calling thread has entered a
 * section of d that has not ended (for debug assertions).  A section
 * handed to another thread counts for the locker until it ends.  Sections
 * on the shared counters (idx 0 or 1: beyond the thread limit or out of
 * memory) are not seen: 0 for them.
 * Context: any thread; never blocks.  Ordering: none.
 */
SK_API int sk_srcu_read_lock_held(struct sk_srcu *d);

/*
 * sk_synchronize_srcu() - wait until every read section of d that began
 * before the call has ended.
 * Context: any thread outside a read section of d (inside one it would
 * deadlock: message and abort, but for a section on the shared counters,
 * which sk_srcu_read_lock_held() does not see); sections of other domains
 * are fine.
 * Blocks: spins briefly, then sleeps in naps that double from 20 us to
 * 1 ms until the readers leave (readers wake no one).
 * Concurrent callers share grace periods.
 * Ordering: full barrier on entry and exit.
 * Reclamation: objects unlinked before the call may be freed after it.
 */
SK_API void sk_synchronize_srcu(struct sk_srcu *d);

/*
 * sk_synchronize_srcu_expedited() - as sk_synchronize_srcu(), polling
 * and yielding instead of sleeping: lower latency, more CPU.
 */
SK_API void sk_synchronize_srcu_expedited(struct sk_srcu *d);

/*
 * sk_call_srcu() - run fn(head) after a grace period of d, on the SRCU
 * worker thread.  Callbacks of one domain run in the order queued.
 * Context: any thread, also inside a read section.  Wait-free enqueue.
 * Ordering: as sk_call_rcu().
 * A producer far ahead of the worker (2^18 callbacks of d pending) yields
 * the CPU once per call; beyond 10000 the worker expedites d's grace
 * periods.
 * Returns: 0, -EINVAL (NULL argument), -EBUSY (head already queued and
 * not yet run, in every build: nothing is printed, the second request is
 * dropped; as for sk_call_rcu(), two racing calls on one head are not
 * caught).  Never fails for want of a thread: when the worker thread
 * cannot be started (pthread_create() fails), the callback is queued all
 * the same, nothing is printed, a later sk_call_srcu() tries the start
 * again (at most once per millisecond), and sk_srcu_barrier() does the
 * worker's work itself if it cannot start it either.
 */
SK_API int sk_call_srcu(struct sk_srcu *d, struct sk_rcu_head *head,
			void (*fn)(struct sk_rcu_head *head));

/*
 * sk_srcu_barrier() - wait until every callback queued on d before the
 * call has run.  Returns at once when none is pending.  When callbacks are
 * pending and the worker thread does not run (its start failed, or this is
 * a fork child that inherited them), it starts it; when that fails too,
 * the caller does the worker's rounds itself (callbacks run on its
 * thread, each batch after its grace period), napping while readers hold
 * a domain.  In a fork child it may be called also when another thread of
 * the parent was in sk_srcu_barrier(d) at the fork (see docs/srcu.md,
 * "fork()", for what a grace period in progress at the fork does).
 * Context: outside read sections of d and outside SRCU callbacks (either
 * would deadlock: message and abort).  Blocks.
 */
SK_API void sk_srcu_barrier(struct sk_srcu *d);

/*
 * Polled grace periods of d: a cookie is the domain's 64-bit grace-period
 * number truncated to unsigned long and compared by difference, so it
 * stays right when unsigned long wraps; no cookie equals
 * SK_RCU_COOKIE_COMPLETED, which always reads as completed.  Where
 * unsigned long has 32 bits, a cookie kept across 2^31 grace periods of d
 * reads as not completed (never the reverse).
 * sk_get_state_synchronize_srcu(): cookie of a grace period that starts
 * after the call; never blocks.  sk_start_poll_synchronize_srcu(): the
 * same, and makes sure it starts (the worker drives it); never blocks.
 * When the worker thread is not running yet and cannot be started
 * (pthread_create() fails), the request is kept, not dropped: the worker
 * drives it once a later sk_call_srcu() or sk_start_poll_synchronize_srcu()
 * has started it, and any grace period of d that completes meanwhile (a
 * sk_synchronize_srcu()) completes the cookie too; nothing is printed.
 * sk_poll_state_synchronize_srcu(): 1 once completed (then a full
 * barrier), else 0; 1 also on a domain that sk_srcu_destroy() released
 * (no reader of it is left); never blocks.  Any thread, also inside a section.
 */
SK_API unsigned long sk_get_state_synchronize_srcu(struct sk_srcu *d);
SK_API unsigned long sk_start_poll_synchronize_srcu(struct sk_srcu *d);
SK_API int sk_poll_state_synchronize_srcu(struct sk_srcu *d,
					  unsigned long cookie);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_SRCU_H */
