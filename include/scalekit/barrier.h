/* SPDX-License-Identifier: MIT */
/*
 * scalekit/barrier.h - memory barriers that are used in pairs.
 *
 * Every barrier in this file orders something on one side of a
 * communication; it is only useful together with a partner barrier on the
 * other side.  The classic pair is message passing:
 *
 *	writer                          reader
 *	data->x = 1;                    if (SK_READ_ONCE(flag)) {
 *	sk_smp_wmb();   ---- pairs ---- 	sk_smp_rmb();
 *	SK_WRITE_ONCE(flag, 1);         	use(data->x);
 *	                                }
 *
 * The primitives map onto GCC/Clang __atomic builtins so that both the
 * compiler and ThreadSanitizer see them.  See docs/memory-ordering.md.
 *
 * All macros and inline functions here may be called from any thread, in
 * any context (including signal handlers), and never block, except
 * sk_fence_heavy(), which enters the kernel.
 */
#ifndef SCALEKIT_BARRIER_H
#define SCALEKIT_BARRIER_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define SK_API __attribute__((visibility("default")))
#else
#define SK_API
#endif

/*
 * SK__NOTHROW: on the library functions that the inline fast paths call
 * (the slow paths named sk_*__*): they call no user code, so they never
 * throw, and a C++ caller (scalekit/rcu.hpp's noexcept guards) needs no
 * unwinding code around them.
 */
#if defined(__GNUC__)
#define SK__NOTHROW __attribute__((__nothrow__))
#else
#define SK__NOTHROW
#endif

#define SK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define SK_UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * The CPU the code below is written for.  SK__BARRIER_ARCH_X86 (x86-64 and i386):
 * total store order, and a locked instruction is a full barrier;
 * SK__BARRIER_ARCH_X86_64 in addition on x86-64; SK__BARRIER_ARCH_ARM64 on aarch64.
 * Neither elsewhere: only the portable C11 path (__atomic builtins).
 *
 * SK_ARCH_GENERIC, when defined (CMake -DSK_ARCH_GENERIC=ON), takes the
 * portable path on every CPU, so that its code is compiled and tested on
 * x86 too (make check-generic).  It only selects different instructions
 * for the same ordering: no layout or ABI changes.
 */
#if !defined(SK_ARCH_GENERIC) && (defined(__x86_64__) || defined(__i386__))
#define SK__BARRIER_ARCH_X86 1
#if defined(__x86_64__)
#define SK__BARRIER_ARCH_X86_64 1
#endif
#elif !defined(SK_ARCH_GENERIC) && defined(__aarch64__)
#define SK__BARRIER_ARCH_ARM64 1
#endif

/* Size of a cache line on the CPUs scalekit is tuned for. */
#define SK_CACHELINE 64

/* TSan detection: GCC defines __SANITIZE_THREAD__, Clang has __has_feature. */
#if defined(__SANITIZE_THREAD__)
#define SK__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SK__TSAN 1
#endif
#endif

/*
 * SK_TSAN_RELEASE(addr) / SK_TSAN_ACQUIRE(addr): tell ThreadSanitizer about
 * an ordering that it cannot see, namely one provided by the asymmetric
 * fence pair (sk_fence_light() on one side, membarrier(2) on the other).
 * They compile to nothing outside TSan builds.
 */
#ifdef SK__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define SK_TSAN_RELEASE(addr) __tsan_release((void *)(addr))
#define SK_TSAN_ACQUIRE(addr) __tsan_acquire((void *)(addr))
#else
#define SK_TSAN_RELEASE(addr) ((void)0)
#define SK_TSAN_ACQUIRE(addr) ((void)0)
#endif

/*
 * SK_READ_ONCE(x) - load x exactly once, untorn, without reordering against
 * other SK_READ_ONCE/SK_WRITE_ONCE by the compiler.
 * Ordering: none against other CPUs (a relaxed atomic load).
 */
#define SK_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/*
 * SK_WRITE_ONCE(x, v) - store v to x exactly once, untorn.
 * Ordering: none against other CPUs (a relaxed atomic store).
 */
#define SK_WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * Atomic accessors carrying their memory order in the name; thin wrappers
 * over the __atomic builtins (the same operations as C11 <stdatomic.h>
 * *_explicit calls, usable on plain fields from C and C++ alike).
 */
#define sk_atomic_load_relaxed(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define sk_atomic_load_acquire(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define sk_atomic_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define sk_atomic_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define sk_atomic_xchg_seq_cst(p, v)          __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define sk_atomic_fetch_add_seq_cst(p, v)     __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define sk_atomic_fetch_add_relaxed(p, v) \
	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define sk_atomic_cmpxchg_seq_cst(p, expp, v)                              \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_SEQ_CST, \
				    __ATOMIC_SEQ_CST)

/*
 * sk_barrier() - compiler barrier.
 * Ordering: the compiler does not move memory accesses across it; the CPU
 * may.  Pairs with nothing on another CPU by itself.
 */
#define sk_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* sk_cpu_relax() - hint to the CPU inside a spin loop. */
#if defined(SK__BARRIER_ARCH_X86)
#define sk_cpu_relax() __builtin_ia32_pause()
#elif defined(SK__BARRIER_ARCH_ARM64)
#define sk_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define sk_cpu_relax() sk_barrier()
#endif

/*
 * ThreadSanitizer does not model stand-alone fences (GCC even rejects them
 * with -fsanitize=thread).  In TSan builds only, the fences below become
 * read-modify-writes and acquire loads of one global variable: every
 * fence then synchronizes with every earlier fence, which TSan models.
 * This over-approximates the ordering (it may hide a race that a missing
 * fence on the other side would cause); the litmus tests and the
 * non-TSan stress tests cover that side.
 */
#ifdef SK__TSAN
SK_API extern unsigned long sk_barrier__tsan_fence;
#define SK__BARRIER_FENCE_RMW(order) ((void)__atomic_fetch_add(&sk_barrier__tsan_fence, 0UL, order))
#define SK__BARRIER_FENCE_ACQ() ((void)__atomic_load_n(&sk_barrier__tsan_fence, __ATOMIC_ACQUIRE))
#endif

/*
 * sk_smp_mb() - full memory barrier.
 * Ordering: every load and store before it is ordered before every load
 * and store after it, as seen by all CPUs.  The only barrier that orders
 * an earlier store before a later load (store buffering).
 */
static inline void sk_smp_mb(void)
{
#if defined(SK__TSAN)
	SK__BARRIER_FENCE_RMW(__ATOMIC_SEQ_CST);
#elif defined(SK__BARRIER_ARCH_X86_64)
	/* A locked no-op on the stack is a full barrier and cheaper than mfence. */
	__asm__ __volatile__("lock; addl $0,-4(%%rsp)" ::: "memory", "cc");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * sk_smp_rmb() - read barrier.
 * Ordering: loads before it are ordered before loads after it.  Pairs with
 * sk_smp_wmb() (or a release) on the writing side.  Implemented as an
 * acquire fence, which also orders earlier loads before later stores.
 */
#ifdef SK__TSAN
#define sk_smp_rmb() SK__BARRIER_FENCE_ACQ()
#else
#define sk_smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

/*
 * sk_smp_wmb() - write barrier.
 * Ordering: stores before it are ordered before stores after it.  Pairs
 * with sk_smp_rmb() (or an acquire) on the reading side.  Implemented as a
 * release fence, which also orders earlier loads before later stores.
 */
#ifdef SK__TSAN
#define sk_smp_wmb() SK__BARRIER_FENCE_RMW(__ATOMIC_RELEASE)
#else
#define sk_smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

/*
 * sk_smp_load_acquire(p) - load *p; no later access is reordered before it.
 * Ordering: pairs with sk_smp_store_release() of the value read.
 */
#define sk_smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

/*
 * sk_smp_store_release(p, v) - store v to *p; no earlier access is
 * reordered after it.
 * Ordering: pairs with sk_smp_load_acquire() that reads v.
 */
#define sk_smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/*
 * sk_smp_mb__before_atomic() / sk_smp_mb__after_atomic() - upgrade a
 * following (preceding) relaxed atomic read-modify-write to a full barrier.
 * On x86 every locked instruction is already a full barrier, so these only
 * stop the compiler.
 */
#if defined(SK__BARRIER_ARCH_X86)
#define sk_smp_mb__before_atomic() sk_barrier()
#define sk_smp_mb__after_atomic()  sk_barrier()
#else
#define sk_smp_mb__before_atomic() sk_smp_mb()
#define sk_smp_mb__after_atomic()  sk_smp_mb()
#endif

/*
 * Asymmetric fences.
 *
 * sk_fence_light() is the cheap side: a compiler barrier when the kernel
 * offers membarrier(2) MEMBARRIER_CMD_PRIVATE_EXPEDITED, a full fence
 * otherwise.  sk_fence_heavy() is the expensive side: it makes every
 * running thread of the process execute a full barrier before it returns.
 * Together they act as a pair of sk_smp_mb(): for any light fence L and
 * heavy fence H, either everything before L is visible after H, or
 * everything before H is visible after L.
 *
 * The choice is made once, in a library constructor, before main() runs;
 * the environment variable SCALEKIT_NO_MEMBARRIER=1 forces the fallback
 * (used by the tests to exercise both paths).
 *
 * ABI: sk_barrier__fence_sys is 1 when the light side may be a compiler barrier.
 * It never changes after initialization.
 */
SK_API extern int sk_barrier__fence_sys;

/*
 * sk_fence_light() - the cheap side of the asymmetric pair.
 * Context: any thread, any context; never blocks.
 * Ordering: pairs with sk_fence_heavy() as if both were sk_smp_mb().
 */
static inline int sk_barrier__fence_sys_get(void)
{
#if defined(SK__BARRIER_ARCH_X86_64) && !defined(SK__TSAN)
	const int *p;
	int v;

	/*
	 * Neither volatile nor a memory operand: to the compiler this is a
	 * constant, which it loads once per function (or loop) instead of
	 * after every compiler barrier.  Sound because the value only goes
	 * from 0 to 1, once, in the library constructor, and 0 (a real
	 * fence) is always safe.  Through the GOT, so that it links into
	 * executables and shared objects alike.
	 */
	__asm__("movq sk_barrier__fence_sys@GOTPCREL(%%rip), %0\n\t"
		"movl (%0), %1"
		: "=r"(p), "=r"(v));
	return v;
#else
	return __atomic_load_n(&sk_barrier__fence_sys, __ATOMIC_RELAXED);
#endif
}

static inline void sk_fence_light(void)
{
	if (SK_LIKELY(sk_barrier__fence_sys_get()))
		sk_barrier();
	else
		sk_smp_mb();
}

/*
 * sk_barrier__fence_light_sys(sys) - sk_fence_light() with sys read beforehand by
 * sk_barrier__fence_sys_get() (fast paths read it once, where it is unconditional,
 * so that a loop around them loads it once).
 */
static inline void sk_barrier__fence_light_sys(int sys)
{
	if (SK_LIKELY(sys))
		sk_barrier();
	else
		sk_smp_mb();
}

/*
 * sk_fence_heavy() - the expensive side of the asymmetric pair.
 * Context: any thread; enters the kernel (membarrier(2)), does not sleep
 * for long but is a system call; not async-signal-safe in the fallback.
 * Ordering: a full barrier on the calling thread and on every thread of
 * the process that runs concurrently; pairs with sk_fence_light().
 */
SK_API void sk_fence_heavy(void);

/*
 * sk_fence_uses_membarrier() - 1 when sk_fence_heavy() uses membarrier(2)
 * and sk_fence_light() is a compiler barrier, 0 in the fallback where both
 * are full fences.
 * Context: any thread; never blocks.
 */
SK_API int sk_fence_uses_membarrier(void);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_BARRIER_H */
