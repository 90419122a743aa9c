/* SPDX-License-Identifier: MIT */
/*
 * The read-biased reader-writer lock (scalekit/rwlock_rb.h): the table of
 * visible readers, the bias and its revocation, and the underlying futex
 * reader-writer lock.
 *
 * The table has one row per thread (made on its first biased read,
 * handed to another thread after it exits), and a lock has one slot in
 * every row, at the index its address hashes to.  Only the owner writes
 * its row, so announcing is a plain store: no atomic read-modify-write
 * and no cache line shared with another reader.  A writer checks one
 * slot per row.  A thread's second lock hashing to the slot of a first
 * one it holds (and a nested acquisition of one lock) takes the
 * underlying lock instead.
 *
 * The fences carry RB-* labels; their legend (what each orders and its
 * partner) is in src/internal/rwlock_rb.h, the table in docs/locks.md.
 */
#define _GNU_SOURCE
#include "scalekit/rwlock_rb.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal/util.h"

/* Underlying lock word: a writer holds it, a writer waits, readers. */
#define RB_WRITER 1
#define RB_WWAIT  2
#define RB_READER 4

/* Spins before a waiter sleeps (futex) or a writer yields (table). */
#define RB_SPINS 128

/*
 * A thread's row of the visible-readers table: slot[i] holds the lock the
 * thread holds for reading through the table, or NULL.  Only its owner
 * writes a slot; writers read them.  Rows are never freed: a thread that
 * exits gives its row back (in_use = 0) for the next thread to take.
 */
struct rb_row {
	void *slot[SK__RWLOCK_RB_ROW_SLOTS]; /* owner writes, writers read */
	struct rb_row *next; /* immutable once the row is on the list */
	int in_use;	     /* 1 while a thread owns the row (atomic) */
} __attribute__((aligned(SK_CACHELINE)));

/* Every row ever made (push-only; release on push, acquire on read). */
static struct rb_row *rb_rows;

static __thread struct rb_row *rb_my_row
	__attribute__((tls_model("initial-exec")));
static pthread_key_t rb_key;
static pthread_once_t rb_once = PTHREAD_ONCE_INIT;
static int rb_key_ok;

#ifdef SK_TESTING
/* Test hook (internal/testing.h): writers do not wait for readers. */
static int rb_busted;

void sk__rwlock_rb_test_busted(int on)
{
	__atomic_store_n(&rb_busted, on, __ATOMIC_RELAXED);
}
#define RB_BUSTED() __atomic_load_n(&rb_busted, __ATOMIC_RELAXED)
#else
#define RB_BUSTED() 0
#endif

/* The slot of l in every row: a multiplicative hash of its address. */
static inline size_t rb_slot(const struct sk_rwlock_rb *l)
{
	uint64_t x = (uint64_t)(uintptr_t)l * 0x9e3779b97f4a7c15ULL;

	return (size_t)(x >> 40) & (SK__RWLOCK_RB_ROW_SLOTS - 1);
}

/* Thread exit: the row must be empty; give it back. */
static void rb_row_put(void *p)
{
	struct rb_row *r = p;
	size_t i;

	for (i = 0; i < SK__RWLOCK_RB_ROW_SLOTS; i++)
		if (sk_atomic_load_relaxed(&r->slot[i]))
			sk__die("thread exits holding sk_rwlock_rb %p for "
				"reading",
				r->slot[i]);
	rb_my_row = NULL;
	/* Release: the next owner sees the slots empty. */
	sk_atomic_store_release(&r->in_use, 0);
}

static void rb_key_init(void)
{
	rb_key_ok = pthread_key_create(&rb_key, rb_row_put) == 0;
}

/* Take a free row or make one; NULL when out of memory. */
static struct rb_row *rb_row_new(void)
{
	struct rb_row *r;
	void *p;
	int z;

	/* Acquire: pairs with the release of the push below. */
	for (r = sk_atomic_load_acquire(&rb_rows); r; r = r->next) {
		z = 0;
		/* Acquire: pairs with the release in rb_row_put(). */
		if (sk_atomic_load_relaxed(&r->in_use) == 0 &&
		    __atomic_compare_exchange_n(&r->in_use, &z, 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return r;
	}
	if (posix_memalign(&p, SK_CACHELINE, sizeof(*r)) != 0)
		return NULL;
	r = memset(p, 0, sizeof(*r));
	r->in_use = 1;
	r->next = sk_atomic_load_relaxed(&rb_rows);
	/* Release: the row's fields before it is on the list. */
	while (!__atomic_compare_exchange_n(&rb_rows, &r->next, r, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return r;
}

/* The calling thread's first row (out of line); NULL: out of memory. */
static __attribute__((noinline)) struct rb_row *rb_row_first(void)
{
	struct rb_row *r;

	pthread_once(&rb_once, rb_key_init);
	if (!rb_key_ok)
		return NULL;
	r = rb_row_new();
	if (r && pthread_setspecific(rb_key, r) != 0) {
		sk_atomic_store_release(&r->in_use, 0);
		r = NULL;
	}
	rb_my_row = r;
	return r;
}

/* The calling thread's row (made on first use); NULL: out of memory. */
static inline struct rb_row *rb_row_get(void)
{
	struct rb_row *r = rb_my_row;

	return SK_LIKELY(r) ? r : rb_row_first();
}

/* ---- the underlying futex reader-writer lock ------------------------------ */

/* Sleep while rw == v. */
static void rb_wait(struct sk_rwlock_rb *l, int v)
{
	sk_atomic_fetch_add_relaxed(&l->waiters, 1);
	/* RB-F1: waiters++ before the kernel re-reads rw; pairs with RB-F2. */
	sk_smp_mb__after_atomic();
	sk__futex_wait(&l->rw, v);
	sk_atomic_fetch_add_relaxed(&l->waiters, -1);
}

/* After an RMW of rw that may let a sleeper in: wake every sleeper. */
static void rb_wake(struct sk_rwlock_rb *l)
{
	/* RB-F2: the rw RMW before reading waiters; pairs with RB-F1. */
	sk_smp_mb__after_atomic();
	if (sk_atomic_load_relaxed(&l->waiters))
		sk__futex_wake(&l->rw, INT_MAX);
}

/* Spin a little, then sleep, while rw is still v. */
static void rb_backoff(struct sk_rwlock_rb *l, int v, unsigned int *spins)
{
	if (++*spins < RB_SPINS)
		sk_cpu_relax();
	else
		rb_wait(l, v);
}

/* One attempt to add a reader; -EBUSY while a writer holds or waits. */
static int rb_try_rd(struct sk_rwlock_rb *l)
{
	int v = sk_atomic_load_relaxed(&l->rw);

	while (!(v & (RB_WRITER | RB_WWAIT))) {
		/* RB-U1: acquire; pairs with RB-U2 of the last writer. */
		if (__atomic_compare_exchange_n(&l->rw, &v, v + RB_READER, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	}
	return -EBUSY;
}

static void rb_read_lock_under(struct sk_rwlock_rb *l)
{
	unsigned int spins = 0;
	int v;

	while (rb_try_rd(l) != 0) {
		v = sk_atomic_load_relaxed(&l->rw);
		if (v & (RB_WRITER | RB_WWAIT))
			rb_backoff(l, v, &spins);
	}
}

static void rb_write_lock_under(struct sk_rwlock_rb *l)
{
	unsigned int spins = 0;
	int v = sk_atomic_load_relaxed(&l->rw);

	for (;;) {
		if ((v & ~RB_WWAIT) == 0) {
			/* RB-U1: acquire; pairs with RB-U2 of earlier ones. */
			if (__atomic_compare_exchange_n(
				    &l->rw, &v, RB_WRITER, 0, __ATOMIC_ACQUIRE,
				    __ATOMIC_RELAXED))
				return;
			continue;
		}
		/* Keep new readers out while this writer waits. */
		if (!(v & RB_WWAIT) &&
		    !__atomic_compare_exchange_n(&l->rw, &v, v | RB_WWAIT, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			continue;
		rb_backoff(l, v | RB_WWAIT, &spins);
		v = sk_atomic_load_relaxed(&l->rw);
	}
}

static void rb_read_unlock_under(struct sk_rwlock_rb *l)
{
	int v = sk_atomic_load_relaxed(&l->rw);

	do {
		if (v < RB_READER)
			sk__die("sk_rwlock_rb_read_unlock(%p): not held for "
				"reading",
				(void *)l);
		/* RB-U2: release; pairs with RB-U1 of the next writer. */
	} while (!__atomic_compare_exchange_n(&l->rw, &v, v - RB_READER, 0,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if ((v - RB_READER) < RB_READER)
		rb_wake(l);
}

/* ---- the bias -------------------------------------------------------------- */

/* Wait until the slot p no longer announces l (spin, then yield). */
static void rb_wait_slot(void **p, const struct sk_rwlock_rb *l)
{
	unsigned int spins = 0;

	/* RB-W3: acquire; pairs with RB-R4 of the reader leaving the slot. */
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) == l) {
		if (++spins < RB_SPINS)
			sk_cpu_relax();
		else
			sched_yield();
	}
}

/*
 * With the underlying write lock held: turn the bias off and wait for the
 * readers announced in the table (wait), or give up when there is one
 * (!wait: the bias is turned on again and -EBUSY returned).
 */
static int rb_revoke(struct sk_rwlock_rb *l, int wait)
{
	size_t i = rb_slot(l);
	struct rb_row *r;
	uint64_t t0;

	if (!sk_atomic_load_relaxed(&l->bias))
		return 0;
	t0 = sk__now_ns();
	sk_atomic_store_relaxed(&l->bias, 0); /* RB-W1 */
	/* RB-W2: bias = 0 before reading the slots; pairs with RB-R2. */
	sk_fence_heavy();
	/* Acquire: pairs with the release of a row's push. */
	for (r = sk_atomic_load_acquire(&rb_rows); r && !RB_BUSTED();
	     r = r->next) {
		/* RB-W3: acquire; pairs with RB-R4. */
		if (__atomic_load_n(&r->slot[i], __ATOMIC_ACQUIRE) != l)
			continue;
		if (!wait) {
			/* No section of ours ran: readers may use it again. */
			sk_atomic_store_relaxed(&l->bias, 1);
			return -EBUSY;
		}
		rb_wait_slot(&r->slot[i], l);
	}
	/* Writer-proportional delay; readers read it under the lock. */
	l->inhibit_until = sk__now_ns() +
			   (sk__now_ns() - t0 + 1) * SK_RWLOCK_RB_INHIBIT;
	return 0;
}

/*
 * With the underlying read lock held: turn the bias back on once the
 * inhibition delay has passed (no writer can hold l meanwhile).
 */
static void rb_rebias(struct sk_rwlock_rb *l)
{
	if (sk_atomic_load_relaxed(&l->bias) || sk__now_ns() < l->inhibit_until)
		return;
	/* RB-B1: release; pairs with RB-R3 of fast-path readers. */
	sk_atomic_store_release(&l->bias, 1);
}

/*
 * Announce the calling thread as a reader of l; 1 when it worked.  Inlined
 * into its callers, whose other paths are out of line: the read lock's
 * fast path then needs no stack frame and no second call.
 */
static inline __attribute__((always_inline)) int
rb_announce(struct sk_rwlock_rb *l)
{
	struct rb_row *r;
	void **p;

	if (!sk_atomic_load_relaxed(&l->bias))
		return 0;
	r = rb_row_get();
	if (SK_UNLIKELY(!r))
		return 0;
	p = &r->slot[rb_slot(l)];
	if (sk_atomic_load_relaxed(p) != NULL)
		return 0; /* our slot holds another lock (or l, nested) */
	sk_atomic_store_relaxed(p, (void *)l); /* RB-R1 */
	/* RB-R2: slot = l before reading bias; pairs with RB-W2 (heavy). */
	sk_fence_light();
	/* RB-R3: acquire; pairs with RB-B1 (orders the section after it). */
	if (SK_LIKELY(sk_atomic_load_acquire(&l->bias)))
		return 1;
	/* A writer is revoking: leave the slot (RB-R4) and queue up. */
	sk_atomic_store_release(p, NULL);
	return 0;
}

/* ---- the API ---------------------------------------------------------------- */

void sk_rwlock_rb_init(struct sk_rwlock_rb *l)
{
	struct sk_rwlock_rb init = SK_RWLOCK_RB_INITIALIZER;

	*l = init;
}

int sk_rwlock_rb_destroy(struct sk_rwlock_rb *l)
{
	size_t i = rb_slot(l);
	struct rb_row *r;

	if (sk_atomic_load_relaxed(&l->rw) & ~RB_WWAIT)
		return -EBUSY;
	for (r = sk_atomic_load_acquire(&rb_rows); r; r = r->next)
		if (sk_atomic_load_acquire(&r->slot[i]) == l)
			return -EBUSY;
	return 0;
}

/* The read lock when the bias is off (or no row): the underlying lock. */
static __attribute__((noinline)) void rb_read_lock_slow(struct sk_rwlock_rb *l)
{
	rb_read_lock_under(l);
	rb_rebias(l);
}

void sk_rwlock_rb_read_lock(struct sk_rwlock_rb *l)
{
	if (SK_LIKELY(rb_announce(l)))
		return;
	rb_read_lock_slow(l);
}

int sk_rwlock_rb_read_trylock(struct sk_rwlock_rb *l)
{
	if (rb_announce(l))
		return 0;
	if (rb_try_rd(l) != 0)
		return -EBUSY;
	rb_rebias(l);
	return 0;
}

void sk_rwlock_rb_read_unlock(struct sk_rwlock_rb *l)
{
	struct rb_row *r = rb_my_row;
	void **p;

	if (SK_LIKELY(r)) {
		p = &r->slot[rb_slot(l)];
		if (sk_atomic_load_relaxed(p) == l) {
			/* RB-R4: release; pairs with RB-W3 of a revoker. */
			sk_atomic_store_release(p, NULL);
			return;
		}
	}
	rb_read_unlock_under(l);
}

void sk_rwlock_rb_write_lock(struct sk_rwlock_rb *l)
{
	rb_write_lock_under(l);
	rb_revoke(l, 1);
}

int sk_rwlock_rb_write_trylock(struct sk_rwlock_rb *l)
{
	int v = sk_atomic_load_relaxed(&l->rw);

	/* RB-U1: acquire; keeps a waiting writer's WWAIT. */
	if ((v & ~RB_WWAIT) != 0 ||
	    !__atomic_compare_exchange_n(&l->rw, &v, v | RB_WRITER, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -EBUSY;
	if (rb_revoke(l, 0) == 0)
		return 0;
	sk_rwlock_rb_write_unlock(l);
	return -EBUSY;
}

void sk_rwlock_rb_write_unlock(struct sk_rwlock_rb *l)
{
	/* RB-U2: release; pairs with RB-U1 of the next reader or writer. */
	int old = __atomic_fetch_and(&l->rw, ~RB_WRITER, __ATOMIC_RELEASE);

	if (!(old & RB_WRITER))
		sk__die("sk_rwlock_rb_write_unlock(%p): not held for writing",
			(void *)l);
	rb_wake(l);
}

int sk_rwlock_rb_is_biased(const struct sk_rwlock_rb *l)
{
	return sk_atomic_load_relaxed(&l->bias);
}
