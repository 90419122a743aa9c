/* SPDX-License-Identifier: MIT */
/*
 * bench/sweep.h - the operations of `scalekit bench --sweep` (bench/sweep.c):
 * one mixed read/update loop per primitive, shaped alike for all of them.
 *
 * The sweep reuses the harness unchanged: each primitive is a struct
 * sk_bench_rcu_ops whose read_section(n) runs n *operations*, of which one
 * in sk_bench_sweep_period is an update (0: none, all reads).  The harness
 * counts them as sections, so its Mops/s is operations per microsecond.
 *
 *  read    enter the read side, load the shared value (a struct of three
 *          words), check its invariant, leave.  A value that breaks the
 *          invariant (torn by a writer, or poisoned by a free) ends the
 *          program with exit status 3 (sk_bench_sweep_torn()).
 *  update  RCU family: allocate a new value, publish it with an atomic
 *          exchange, retire the old one with the primitive's own deferred
 *          free (call_rcu, call_srcu, ck_epoch_call), which poisons it and
 *          frees it.  Locks: take the write side, rewrite the value in
 *          place, release.  Reference count: swap the pointer under a
 *          spinlock and drop the old object's reference (the last
 *          reference frees it).
 *
 * Each liburcu flavor's glue lives in its adapter file (peer_urcu_*.c),
 * which alone may include the flavor header; ck's in peer_ck_epoch.c;
 * scalekit's, pthread's and the reference count's in sweep_ops.c.
 */
#ifndef SK_BENCH_SWEEP_H
#define SK_BENCH_SWEEP_H

#include "bench.h"

#include <stddef.h>

/* The shared value: b and c are functions of a, so a torn read shows. */
struct sk_bench_sweep_val {
	long a, b, c;
};

#define SK_BENCH_SWEEP_K1 0x5bd1e995L
#define SK_BENCH_SWEEP_K2 0x27d4eb2fL

/*
 * One operation in this many is an update; 0: reads only.  Written by the
 * main thread before it creates the threads of a run (pthread_create()
 * orders the store before every thread's load), never during a run.
 */
extern int sk_bench_sweep_period;

/*
 * Every access to a value is a relaxed atomic: under a lock it is as cheap
 * as a plain one, and a seqlock reader may race with its writer.
 */
static inline void sk_bench_sweep_set(struct sk_bench_sweep_val *v, long a)
{
	__atomic_store_n(&v->a, a, __ATOMIC_RELAXED);
	__atomic_store_n(&v->b, a ^ SK_BENCH_SWEEP_K1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->c, a + SK_BENCH_SWEEP_K2, __ATOMIC_RELAXED);
}

static inline void sk_bench_sweep_load(const struct sk_bench_sweep_val *v,
				       struct sk_bench_sweep_val *out)
{
	out->a = __atomic_load_n(&v->a, __ATOMIC_RELAXED);
	out->b = __atomic_load_n(&v->b, __ATOMIC_RELAXED);
	out->c = __atomic_load_n(&v->c, __ATOMIC_RELAXED);
}

/* Print what was read and _exit(3): a torn or freed read. */
void sk_bench_sweep_torn(const char *who, const struct sk_bench_sweep_val *s)
	__attribute__((noreturn));

static inline void sk_bench_sweep_verify(const struct sk_bench_sweep_val *s,
					 const char *who)
{
	if (__builtin_expect(s->b != (s->a ^ SK_BENCH_SWEEP_K1) ||
				     s->c != s->a + SK_BENCH_SWEEP_K2,
			     0))
		sk_bench_sweep_torn(who, s);
}

static inline void sk_bench_sweep_check(const struct sk_bench_sweep_val *v,
					const char *who)
{
	struct sk_bench_sweep_val s;

	sk_bench_sweep_load(v, &s);
	sk_bench_sweep_verify(&s, who);
	SK_BENCH_USE(s.a);
}

/*
 * sk_bench_sweep_alloc() - malloc(size) of an object whose first member is
 * a struct sk_bench_sweep_val, set from a; aborts when memory runs out.
 * sk_bench_sweep_free() poisons the value (breaks its invariant) and
 * frees the object: a reader that reaches it later aborts.
 */
void *sk_bench_sweep_alloc(size_t size, long a);
void sk_bench_sweep_free(void *obj);

/*
 * SK_BENCH_SWEEP_LOOP(n, rd, upd, qs) - n operations: upd once every
 * sk_bench_sweep_period of them (a per-thread countdown that carries over
 * from one call to the next), rd otherwise, and qs after every
 * SK_BENCH_QS_PERIOD operations ((void)0 for all but QSBR).
 */
#define SK_BENCH_SWEEP_LOOP(n, rd, upd, qs)                                \
	do {                                                               \
		static __thread int sk_left_;                              \
		const int sk_per_ = sk_bench_sweep_period;                 \
		long sk_i_;                                                \
		for (sk_i_ = 0; sk_i_ < (n); sk_i_++) {                    \
			if (sk_per_ && --sk_left_ <= 0) {                  \
				sk_left_ = sk_per_;                        \
				upd;                                       \
			} else {                                           \
				rd;                                        \
			}                                                  \
			if ((sk_i_ & (SK_BENCH_QS_PERIOD - 1)) ==          \
			    SK_BENCH_QS_PERIOD - 1)                        \
				qs;                                        \
		}                                                          \
	} while (0)

/*
 * SK_BENCH_SWEEP_RCU(pfx, head_t, lock, unlock, deref, retire, qs) - the
 * glue of an RCU-family primitive: a published pointer pfx##_ptr to an
 * object { value; head_t head; }, pfx##_init() (publishes the first
 * object; call before any thread starts), pfx##_free(head) (the deferred
 * free's callback) and pfx##_section(n).  lock() and unlock() are
 * function-like macros (lock() may declare a variable unlock() uses),
 * deref(p) loads the pointer p, retire(o) queues o's deferred free.
 */
#define SK_BENCH_SWEEP_RCU(pfx, head_t, lock, unlock, deref, retire, qs)     \
	struct pfx##_obj {                                                   \
		struct sk_bench_sweep_val v;                                 \
		head_t head;                                                 \
	};                                                                   \
	static struct pfx##_obj *pfx##_ptr;                                  \
	static __thread long pfx##_gen;                                      \
	static void pfx##_init(void)                                         \
	{                                                                    \
		/* Before any thread exists: pthread_create() publishes it. */ \
		pfx##_ptr = sk_bench_sweep_alloc(sizeof(struct pfx##_obj), 0); \
	}                                                                    \
	static void pfx##_free(head_t *h)                                    \
	{                                                                    \
		sk_bench_sweep_free((char *)h -                              \
				    offsetof(struct pfx##_obj, head));       \
	}                                                                    \
	static inline __attribute__((always_inline)) void pfx##_read(void)   \
	{                                                                    \
		lock();                                                      \
		sk_bench_sweep_check(&deref(pfx##_ptr)->v, #pfx);            \
		unlock();                                                    \
	}                                                                    \
	static inline __attribute__((always_inline)) void pfx##_update(void) \
	{                                                                    \
		struct pfx##_obj *o_ = sk_bench_sweep_alloc(                 \
			sizeof(*o_), ++pfx##_gen);                           \
		/*                                                           \
		 * Full barrier: the value's initialization is ordered       \
		 * before the pointer store (pairs with the readers'         \
		 * deref, a dependency/acquire load), and the exchange       \
		 * before the retire that follows.  Each updater gets a      \
		 * different old object, so updaters need no lock.           \
		 */                                                          \
		o_ = __atomic_exchange_n(&pfx##_ptr, o_, __ATOMIC_SEQ_CST);  \
		retire(o_);                                                  \
	}                                                                    \
	static void pfx##_section(long n)                                    \
	{                                                                    \
		SK_BENCH_SWEEP_LOOP(n, pfx##_read(), pfx##_update(), qs);    \
	}

/*
 * SK_BENCH_SWEEP_LOCKED(pfx, lock, rdlock, rdunlock, wrlock, wrunlock) - the
 * glue of a lock: the value pfx##_val guarded by the lock at address lock,
 * pfx##_init() and pfx##_section(n); the four others are the functions
 * that take and release its read and write sides, given lock.
 */
#define SK_BENCH_SWEEP_LOCKED(pfx, lock, rdlock, rdunlock, wrlock, wrunlock) \
	static struct sk_bench_sweep_val pfx##_val                           \
		__attribute__((aligned(64)));                                \
	static void pfx##_init(void)                                         \
	{                                                                    \
		sk_bench_sweep_set(&pfx##_val, 0);                           \
	}                                                                    \
	static inline __attribute__((always_inline)) void pfx##_read(void)   \
	{                                                                    \
		rdlock(lock);                                                \
		sk_bench_sweep_check(&pfx##_val, #pfx);                      \
		rdunlock(lock);                                              \
	}                                                                    \
	static inline __attribute__((always_inline)) void pfx##_update(void) \
	{                                                                    \
		wrlock(lock);                                                \
		sk_bench_sweep_set(&pfx##_val,                               \
				   __atomic_load_n(&pfx##_val.a,             \
						   __ATOMIC_RELAXED) + 1);   \
		wrunlock(lock);                                              \
	}                                                                    \
	static void pfx##_section(long n)                                    \
	{                                                                    \
		SK_BENCH_SWEEP_LOOP(n, pfx##_read(), pfx##_update(),         \
				    (void)0);                                \
	}

/*
 * SK_BENCH_SWEEP_URCU(sym, nm, fl, qs, ...) - the ops sym of liburcu's
 * flavor fl (memb, qsbr, bp; the flavor header included, _LGPL_SOURCE):
 * urcu_<fl>_read_lock/unlock, urcu_<fl>_call_rcu() as the deferred free,
 * registration by urcu_<fl>_register_thread, urcu_<fl>_barrier to drain;
 * qs as in SK_BENCH_SWEEP_LOOP, then the ops' other fields.
 */
#define SK_BENCH_SWEEP_URCU(sym, nm, fl, qs, ...)                           \
	SK_BENCH_SWEEP_RCU(sw_##fl, struct rcu_head, urcu_##fl##_read_lock, \
			   urcu_##fl##_read_unlock, rcu_dereference,        \
			   SK_BENCH_SWEEP_URCU_RETIRE_##fl, qs)              \
	SK_BENCH_SWEEP_OPS(sym, nm,                                         \
			   "urcu_" #fl "_read_lock/unlock; urcu_" #fl        \
			   "_call_rcu",                                      \
			   sw_##fl,                                          \
			   .thread_init = urcu_##fl##_register_thread,       \
			   .barrier = urcu_##fl##_barrier, __VA_ARGS__)

/*
 * SK_BENCH_SWEEP_OPS(sym, nm, what, pfx, ...) - the ops sym of the glue
 * pfx: init pfx##_init, read_section pfx##_section, then the fields given.
 */
#define SK_BENCH_SWEEP_OPS(sym, nm, what, pfx, ...)                    \
	const struct sk_bench_rcu_ops sym = { .name = nm,              \
					      .desc = what,            \
					      .init = pfx##_init,      \
					      .read_section = pfx##_section, \
					      __VA_ARGS__ }

/*
 * The sweep's primitives, in the order of its tables: the adapters'
 * sweep ops ("name" as in the read scenario; read_section is the mixed
 * loop; barrier, where there is one, drains the deferred frees).
 */
extern const struct sk_bench_rcu_ops sk_bench_sweep_scalekit_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_scalekit_qsbr_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_scalekit_srcu_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_rwlock_rb_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_seqlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_seqlock_busted_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_elided_mutex_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_elided_rwlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_pthread_rwlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_pthread_mutex_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_refcount_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_urcu_memb_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_urcu_qsbr_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_urcu_bp_ops;
extern const struct sk_bench_rcu_ops sk_bench_sweep_ck_epoch_ops;

#endif /* SK_BENCH_SWEEP_H */
