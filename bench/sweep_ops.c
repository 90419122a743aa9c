/* SPDX-License-Identifier: MIT */
/*
 * The sweep's glue (bench/sweep.h says what an operation is) for
 * scalekit's RCU (general and QSBR readers), SRCU and locks, for pthread's
 * locks and for an atomic reference count.
 */
#include "sweep.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/elide.h"
#include "scalekit/rcu.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"
#include "scalekit/srcu.h"

/* A deferred free that cannot be queued cannot be measured: stop. */
static void sw_must(int err, const char *call)
{
	if (err) {
		fprintf(stderr, "scalekit bench: sweep: %s failed: %s\n", call,
			strerror(-err));
		abort();
	}
}

/* ---- scalekit RCU: general readers, QSBR readers, SRCU ---------------- */

#define SWR_RETIRE(o) sw_must(sk_call_rcu(&(o)->head, swr_free), "sk_call_rcu")
SK_BENCH_SWEEP_RCU(swr, struct sk_rcu_head, sk_rcu_read_lock,
		   sk_rcu_read_unlock, sk_rcu_dereference, SWR_RETIRE, (void)0)

#define SWQ_RETIRE(o) sw_must(sk_call_rcu(&(o)->head, swq_free), "sk_call_rcu")
SK_BENCH_SWEEP_RCU(swq, struct sk_rcu_head, sk_rcu_qsbr_read_lock,
		   sk_rcu_qsbr_read_unlock, sk_rcu_dereference, SWQ_RETIRE,
		   sk_rcu_quiescent_state())

static struct sk_srcu sws_domain;
#define SWS_LOCK() int sws_idx_ = sk_srcu_read_lock(&sws_domain)
#define SWS_UNLOCK() sk_srcu_read_unlock(&sws_domain, sws_idx_)
#define SWS_DEREF(p) sk_srcu_dereference(p, &sws_domain)
#define SWS_RETIRE(o) \
	sw_must(sk_call_srcu(&sws_domain, &(o)->head, sws_free), "sk_call_srcu")
SK_BENCH_SWEEP_RCU(sws, struct sk_rcu_head, SWS_LOCK, SWS_UNLOCK, SWS_DEREF,
		   SWS_RETIRE, (void)0)

static void sw_register(void)
{
	sw_must(sk_rcu_register_thread(), "sk_rcu_register_thread");
}

static void sw_online(void)
{
	sw_must(sk_rcu_thread_online(), "sk_rcu_thread_online");
}

/* Unregistering puts an online QSBR thread offline first. */
static void sw_unregister(void)
{
	sk_rcu_unregister_thread();
}

static void sws_setup(void)
{
	sw_must(sk_srcu_init(&sws_domain), "sk_srcu_init");
	sws_init();
}

static void sws_barrier(void)
{
	sk_srcu_barrier(&sws_domain);
}

SK_BENCH_SWEEP_OPS(sk_bench_sweep_scalekit_ops, "scalekit",
		   "sk_rcu_read_lock/unlock; sk_call_rcu", swr,
		   .thread_init = sw_register,
		   .thread_exit = sw_unregister,
		   .barrier = sk_rcu_barrier);
SK_BENCH_SWEEP_OPS(sk_bench_sweep_scalekit_qsbr_ops, "scalekit-qsbr",
		   "online QSBR thread, quiescent state every 1024; "
		   "sk_call_rcu",
		   swq, .thread_init = sw_online,
		   .thread_offline = sk_rcu_thread_offline,
		   .thread_exit = sw_unregister,
		   .barrier = sk_rcu_barrier);
/* Its init sets up the domain, then the pointer. */
const struct sk_bench_rcu_ops sk_bench_sweep_scalekit_srcu_ops = {
	.name = "scalekit-srcu",
	.desc = "sk_srcu_read_lock/unlock on one domain; sk_call_srcu",
	.init = sws_setup,
	.read_section = sws_section,
	.barrier = sws_barrier,
};

/* ---- locks: the value rewritten in place under the write side -------- */

static struct sk_rwlock_rb swrb_lock = SK_RWLOCK_RB_INITIALIZER;
SK_BENCH_SWEEP_LOCKED(swrb, &swrb_lock, sk_rwlock_rb_read_lock,
		      sk_rwlock_rb_read_unlock, sk_rwlock_rb_write_lock,
		      sk_rwlock_rb_write_unlock)
static struct sk_elided_mutex swem_lock = SK_ELIDED_MUTEX_INITIALIZER;
SK_BENCH_SWEEP_LOCKED(swem, &swem_lock, sk_elided_mutex_lock,
		      sk_elided_mutex_unlock, sk_elided_mutex_lock,
		      sk_elided_mutex_unlock)
static struct sk_elided_rwlock swerw_lock = SK_ELIDED_RWLOCK_INITIALIZER;
SK_BENCH_SWEEP_LOCKED(swerw, &swerw_lock, sk_elided_rwlock_read_lock,
		      sk_elided_rwlock_read_unlock, sk_elided_rwlock_write_lock,
		      sk_elided_rwlock_write_unlock)
static pthread_rwlock_t swprw_lock = PTHREAD_RWLOCK_INITIALIZER;
SK_BENCH_SWEEP_LOCKED(swprw, &swprw_lock, pthread_rwlock_rdlock,
		      pthread_rwlock_unlock, pthread_rwlock_wrlock,
		      pthread_rwlock_unlock)
static pthread_mutex_t swpm_lock = PTHREAD_MUTEX_INITIALIZER;
SK_BENCH_SWEEP_LOCKED(swpm, &swpm_lock, pthread_mutex_lock,
		      pthread_mutex_unlock, pthread_mutex_lock,
		      pthread_mutex_unlock)

SK_BENCH_SWEEP_OPS(sk_bench_sweep_rwlock_rb_ops, "sk-rwlock-rb",
		   "sk_rwlock_rb read / write lock", swrb);
SK_BENCH_SWEEP_OPS(sk_bench_sweep_elided_mutex_ops, "sk-elided-mutex",
		   "sk_elided_mutex for reads and updates", swem);
SK_BENCH_SWEEP_OPS(sk_bench_sweep_elided_rwlock_ops, "sk-elided-rwlock",
		   "sk_elided_rwlock read / write lock", swerw);
SK_BENCH_SWEEP_OPS(sk_bench_sweep_pthread_rwlock_ops, "pthread-rwlock",
		   "pthread_rwlock_rdlock / wrlock", swprw);
SK_BENCH_SWEEP_OPS(sk_bench_sweep_pthread_mutex_ops, "pthread-mutex",
		   "pthread_mutex for reads and updates", swpm);

/* The seqlock's reader retries instead of locking: its own glue. */
static struct sk_seqlock swsl_lock = SK_SEQLOCK_INITIALIZER;
static struct sk_bench_sweep_val swsl_val __attribute__((aligned(64)));

static void swsl_init(void)
{
	sk_bench_sweep_set(&swsl_val, 0);
}

static inline __attribute__((always_inline)) void swsl_read(void)
{
	struct sk_bench_sweep_val s;
	unsigned int seq;

	do {
		seq = sk_seqlock_read_begin(&swsl_lock);
		sk_bench_sweep_load(&swsl_val, &s);
	} while (sk_seqlock_read_retry(&swsl_lock, seq));
	/* Only a snapshot the sequence validated must be whole. */
	sk_bench_sweep_verify(&s, "swsl");
	SK_BENCH_USE(s.a);
}

static inline __attribute__((always_inline)) void swsl_update(void)
{
	sk_seqlock_write_lock(&swsl_lock);
	sk_bench_sweep_set(&swsl_val,
			   __atomic_load_n(&swsl_val.a, __ATOMIC_RELAXED) + 1);
	sk_seqlock_write_unlock(&swsl_lock);
}

static void swsl_section(long n)
{
	SK_BENCH_SWEEP_LOOP(n, swsl_read(), swsl_update(), (void)0);
}

SK_BENCH_SWEEP_OPS(sk_bench_sweep_seqlock_ops, "sk-seqlock",
		   "sk_seqlock read_begin/read_retry / write lock", swsl);

/*
 * BROKEN twin (SCALEKIT_BENCH_SWEEP_BUSTED=seqlock, see sweep.c): a
 * seqlock reader that never retries, against a writer that leaves the
 * value half-written until other threads have read it a few times (a
 * bounded wait that yields the CPU, so that the tear is there to be seen
 * even when a loaded machine rarely runs two threads at once).  The
 * sweep's check MUST catch it and end the run: that proves the check can
 * fail.
 */
static unsigned long swslb_reads; /* atomic: busted reads completed */

static void swslb_read(void)
{
	struct sk_bench_sweep_val s;

	(void)sk_seqlock_read_begin(&swsl_lock);
	sk_bench_sweep_load(&swsl_val, &s);
	sk_bench_sweep_verify(&s, "sk-seqlock-busted"); /* BROKEN: no retry */
	SK_BENCH_USE(s.a);
	__atomic_fetch_add(&swslb_reads, 1, __ATOMIC_RELAXED);
}

static void swslb_update(void)
{
	unsigned long seen;
	long a;
	int i;

	sk_seqlock_write_lock(&swsl_lock);
	a = __atomic_load_n(&swsl_val.a, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&swsl_val.a, a, __ATOMIC_RELAXED);
	/* The window: a new, b and c old, until others read (or 1000 yields:
	 * a run of one thread has no other reader). */
	seen = __atomic_load_n(&swslb_reads, __ATOMIC_RELAXED);
	for (i = 0; i < 1000; i++) {
		if (__atomic_load_n(&swslb_reads, __ATOMIC_RELAXED) - seen >= 4)
			break;
		sched_yield();
	}
	sk_bench_sweep_set(&swsl_val, a);
	sk_seqlock_write_unlock(&swsl_lock);
}

static void swslb_section(long n)
{
	SK_BENCH_SWEEP_LOOP(n, swslb_read(), swslb_update(), (void)0);
}

#define swslb_init swsl_init
SK_BENCH_SWEEP_OPS(sk_bench_sweep_seqlock_busted_ops, "sk-seqlock",
		   "BROKEN: sk_seqlock read without retry", swslb);

/* ---- an atomic reference count ------------------------------------------ */

/*
 * The way a shared_ptr held in an atomic works: a reader takes a reference
 * under a small spinlock that guards the pointer (a load and an increment
 * cannot be made atomic together otherwise), reads without it, and drops
 * the reference; the last reference frees the object.  The pointer holds
 * one reference of its own, which an updater's swap hands to it to drop.
 */
struct swrc_obj {
	struct sk_bench_sweep_val v;
	long refs; /* atomic: references held, the pointer's included */
};

static struct {
	int lock;	      /* 1: held; guards ptr */
	struct swrc_obj *ptr; /* guarded by lock */
} swrc __attribute__((aligned(64)));

static void swrc_lock(void)
{
	int spins = 0;

	/* Acquire: pairs with the release in swrc_unlock(). */
	while (__atomic_exchange_n(&swrc.lock, 1, __ATOMIC_ACQUIRE))
		if (++spins % 64 == 0)
			sched_yield(); /* the holder may be preempted */
}

static void swrc_unlock(void)
{
	/* Release: the critical section before the next holder's. */
	__atomic_store_n(&swrc.lock, 0, __ATOMIC_RELEASE);
}

static void swrc_put(struct swrc_obj *o)
{
	/*
	 * Acq_rel: every holder's reads of o happen before the last
	 * decrement (release), which the freeing thread's acquire sees.
	 */
	if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
		sk_bench_sweep_free(o);
}

static void swrc_init(void)
{
	swrc.ptr = sk_bench_sweep_alloc(sizeof(struct swrc_obj), 0);
	swrc.ptr->refs = 1; /* the pointer's; before any thread exists */
}

static inline __attribute__((always_inline)) void swrc_read(void)
{
	struct swrc_obj *o;

	swrc_lock();
	o = swrc.ptr;
	/* Relaxed: the lock orders it against the swap; swrc_put() frees. */
	__atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
	swrc_unlock();
	sk_bench_sweep_check(&o->v, "refcount");
	swrc_put(o);
}

static __thread long swrc_gen;

static inline __attribute__((always_inline)) void swrc_update(void)
{
	struct swrc_obj *o = sk_bench_sweep_alloc(sizeof(*o), ++swrc_gen);
	struct swrc_obj *old;

	o->refs = 1; /* the pointer's; published by the unlock's release */
	swrc_lock();
	old = swrc.ptr;
	swrc.ptr = o;
	swrc_unlock();
	swrc_put(old);
}

static void swrc_section(long n)
{
	SK_BENCH_SWEEP_LOOP(n, swrc_read(), swrc_update(), (void)0);
}

SK_BENCH_SWEEP_OPS(sk_bench_sweep_refcount_ops, "refcount",
		   "atomic reference count, pointer swapped under a spinlock",
		   swrc);
