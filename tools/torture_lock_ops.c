/* SPDX-License-Identifier: MIT */
/*
 * The locks behind one ops table, and their broken twins (see
 * torture_lock_ops.h).  Adapters: the API takes the lock's own type, the
 * table a void pointer to it.
 */
#define _GNU_SOURCE
#include "torture_lock_ops.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "scalekit/barrier.h"

/* ---- the adapters -------------------------------------------------------- */

/*
 * SK__TL_EXCL(x, T, init, destroy, lock, unlock, trylock) - x_init(),
 * x_destroy(), x_lock(), x_unlock() and x_trylock() for a lock of type T
 * whose init cannot fail.
 */
#define SK__TL_EXCL(x, T, init, destroy, lock, unlock, trylock)               \
	static int x##_init(void *l)                                          \
	{                                                                     \
		init((T *)l);                                                 \
		return 0;                                                     \
	}                                                                     \
	static int x##_destroy(void *l) { return destroy((T *)l); }           \
	static void x##_lock(void *l) { lock((T *)l); }                       \
	static void x##_unlock(void *l) { unlock((T *)l); }                   \
	static int x##_trylock(void *l) { return trylock((T *)l); }

/*
 * SK__TL_READ(x, T, lock, unlock, trylock) - x_read_lock(),
 * x_read_unlock() and x_read_trylock() for a read side that never asks
 * for a retry.
 */
#define SK__TL_READ(x, T, lock, unlock, trylock)                              \
	static unsigned int x##_read_lock(void *l)                            \
	{                                                                     \
		lock((T *)l);                                                 \
		return 0;                                                     \
	}                                                                     \
	static int x##_read_unlock(void *l, unsigned int token)               \
	{                                                                     \
		(void)token;                                                  \
		unlock((T *)l);                                               \
		return 0;                                                     \
	}                                                                     \
	static int x##_read_trylock(void *l) { return trylock((T *)l); }

/* pthread: errors are returned, not -errno. */
static int pm_init(void *l) { return -pthread_mutex_init(l, NULL); }
static int pm_destroy(void *l) { return -pthread_mutex_destroy(l); }
static void pm_lock(void *l) { (void)pthread_mutex_lock(l); }
static void pm_unlock(void *l) { (void)pthread_mutex_unlock(l); }
static int pm_trylock(void *l) { return -pthread_mutex_trylock(l); }
static int prw_destroy(void *l) { return -pthread_rwlock_destroy(l); }
static void prw_lock(void *l) { (void)pthread_rwlock_wrlock(l); }
static void prw_unlock(void *l) { (void)pthread_rwlock_unlock(l); }
static int prw_trylock(void *l) { return -pthread_rwlock_trywrlock(l); }
static int prw_read_trylock(void *l) { return -pthread_rwlock_tryrdlock(l); }

static unsigned int prw_read_lock(void *l)
{
	(void)pthread_rwlock_rdlock(l);
	return 0;
}

static int prw_read_unlock(void *l, unsigned int token)
{
	(void)token;
	(void)pthread_rwlock_unlock(l);
	return 0;
}

/*
 * Writer-preferring, as scalekit's rwlocks: glibc's default prefers
 * readers, and its writers then starve (a progress check fails).
 */
static int prw_init(void *l)
{
	pthread_rwlockattr_t a;
	int err;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	err = pthread_rwlock_init(l, &a);
	pthread_rwlockattr_destroy(&a);
	return -err;
}

SK__TL_EXCL(rb, struct sk_rwlock_rb, sk_rwlock_rb_init, sk_rwlock_rb_destroy,
	    sk_rwlock_rb_write_lock, sk_rwlock_rb_write_unlock,
	    sk_rwlock_rb_write_trylock)
SK__TL_READ(rb, struct sk_rwlock_rb, sk_rwlock_rb_read_lock,
	    sk_rwlock_rb_read_unlock, sk_rwlock_rb_read_trylock)

SK__TL_EXCL(em, struct sk_elided_mutex, sk_elided_mutex_init,
	    sk_elided_mutex_destroy, sk_elided_mutex_lock,
	    sk_elided_mutex_unlock, sk_elided_mutex_trylock)
SK__TL_EXCL(es, struct sk_elided_spinlock, sk_elided_spinlock_init,
	    sk_elided_spinlock_destroy, sk_elided_spinlock_lock,
	    sk_elided_spinlock_unlock, sk_elided_spinlock_trylock)
SK__TL_EXCL(erw, struct sk_elided_rwlock, sk_elided_rwlock_init,
	    sk_elided_rwlock_destroy, sk_elided_rwlock_write_lock,
	    sk_elided_rwlock_write_unlock, sk_elided_rwlock_write_trylock)
SK__TL_READ(erw, struct sk_elided_rwlock, sk_elided_rwlock_read_lock,
	    sk_elided_rwlock_read_unlock, sk_elided_rwlock_read_trylock)

static void em_attach(void *l, struct sk_elide_stats *s)
{
	sk_elided_mutex_attach_stats(l, s);
}

static void es_attach(void *l, struct sk_elide_stats *s)
{
	sk_elided_spinlock_attach_stats(l, s);
}

static void erw_attach(void *l, struct sk_elide_stats *s)
{
	sk_elided_rwlock_attach_stats(l, s);
}

/* The seqlock: no trylocks; read_unlock() is the retry check. */
static int sl_init(void *l)
{
	sk_seqlock_init(l);
	return 0;
}

static int sl_destroy(void *l) { return sk_seqlock_destroy(l); }
static void sl_lock(void *l) { sk_seqlock_write_lock(l); }
static void sl_unlock(void *l) { sk_seqlock_write_unlock(l); }
static unsigned int sl_begin(void *l) { return sk_seqlock_read_begin(l); }

static int sl_retry(void *l, unsigned int token)
{
	return sk_seqlock_read_retry(l, token);
}

/* ---- the broken twins ---------------------------------------------------- */

/*
 * The plain twin: test, then set, not atomically, on the first word of
 * the lock (which its real init() left at 0).
 */
static void busted_lock(void *l)
{
	int *word = l, i;

	while (SK_READ_ONCE(*word))
		sk_cpu_relax();
	/* The window another thread slips through, also on one CPU. */
	for (i = 0; i < 64; i++)
		sk_cpu_relax();
	sched_yield();
	SK_WRITE_ONCE(*word, 1);
}

static void busted_unlock(void *l) { SK_WRITE_ONCE(*(int *)l, 0); }
static int busted_destroy(void *l) { (void)l; return 0; }

static int busted_trylock(void *l)
{
	if (SK_READ_ONCE(*(int *)l))
		return -EBUSY;
	sched_yield();
	SK_WRITE_ONCE(*(int *)l, 1);
	return 0;
}

/* Readers that take no lock (reader-writer twins). */
static unsigned int busted_read_lock(void *l) { (void)l; return 0; }
static int busted_read_try(void *l) { (void)l; return 0; }

static int busted_read_unlock(void *l, unsigned int token)
{
	(void)l;
	(void)token;
	return 0;
}

/*
 * SK__TL_PLAIN_TWIN(x, init_fn) - the plain twin of lock x, on storage
 * its real init(), init_fn, prepared.
 */
#define SK__TL_PLAIN_TWIN(x, init_fn)                                         \
	static const struct sk_tort_lock_ops x##_twin = {                     \
		.name = #x "-busted", .desc = "test-then-set, not atomic",    \
		.init = init_fn, .destroy = busted_destroy,                    \
		.write_lock = busted_lock, .write_unlock = busted_unlock,     \
		.write_trylock = busted_trylock,                              \
	}

/*
 * SK__TL_READ_TWIN(x, excl, rd_lock, rd_unlock) - the twin of
 * reader-writer lock x: the write side of excl (x itself), and the read
 * side rd_lock/rd_unlock (readers that take no lock, or no retry).
 */
#define SK__TL_READ_TWIN(x, excl, rd_lock, rd_unlock)                         \
	static const struct sk_tort_lock_ops x##_twin = {                     \
		.name = #x "-busted", .desc = "readers take no lock",         \
		.init = excl##_init, .destroy = busted_destroy,               \
		.write_lock = excl##_lock, .write_unlock = excl##_unlock,     \
		.read_lock = rd_lock, .read_unlock = rd_unlock,               \
		.read_trylock = busted_read_try,                              \
	}

SK__TL_PLAIN_TWIN(pm, pm_init);
SK__TL_PLAIN_TWIN(em, em_init);
SK__TL_PLAIN_TWIN(es, es_init);
SK__TL_READ_TWIN(prw, prw, busted_read_lock, busted_read_unlock);
SK__TL_READ_TWIN(rb, rb, busted_read_lock, busted_read_unlock);
SK__TL_READ_TWIN(erw, erw, busted_read_lock, busted_read_unlock);
/* The seqlock's: one attempt, no retry check. */
SK__TL_READ_TWIN(sl, sl, sl_begin, busted_read_unlock);

/* ---- the table ----------------------------------------------------------- */

/*
 * SK__TL_OPS(x, name, desc, ...) - the ops of lock x (its adapters x_*
 * and twin x_twin), with the designated initializers ... for the rest.
 */
#define SK__TL_OPS(x, name_, desc_, ...)                                      \
	{                                                                     \
		.name = name_, .desc = desc_, .init = x##_init,               \
		.destroy = x##_destroy, .write_lock = x##_lock,               \
		.write_unlock = x##_unlock, .broken = &x##_twin, __VA_ARGS__  \
	}
#define SK__TL_RD(x)                                                          \
	.read_lock = x##_read_lock, .read_unlock = x##_read_unlock,           \
	.read_trylock = x##_read_trylock

const struct sk_tort_lock_ops sk_tort_lock_pthread_mutex = SK__TL_OPS(
	pm, "pthread-mutex", "pthread_mutex_t (reference)",
	.write_trylock = pm_trylock);
const struct sk_tort_lock_ops sk_tort_lock_pthread_rwlock = SK__TL_OPS(
	prw, "pthread-rwlock", "pthread_rwlock_t (reference)",
	.write_trylock = prw_trylock, SK__TL_RD(prw));
const struct sk_tort_lock_ops sk_tort_lock_rwlock_rb = SK__TL_OPS(
	rb, "rwlock-rb", "sk_rwlock_rb, read-biased",
	.write_trylock = rb_trylock, SK__TL_RD(rb));
const struct sk_tort_lock_ops sk_tort_lock_seqlock = SK__TL_OPS(
	sl, "seqlock", "sk_seqlock", .read_lock = sl_begin,
	.read_unlock = sl_retry, .seqlock = 1);
const struct sk_tort_lock_ops sk_tort_lock_elided_mutex = SK__TL_OPS(
	em, "elided-mutex", "sk_elided_mutex, on each elision backend",
	.write_trylock = em_trylock, .attach_stats = em_attach, .elided = 1);
const struct sk_tort_lock_ops sk_tort_lock_elided_spinlock = SK__TL_OPS(
	es, "elided-spinlock", "sk_elided_spinlock, on each elision backend",
	.write_trylock = es_trylock, .attach_stats = es_attach, .elided = 1);
const struct sk_tort_lock_ops sk_tort_lock_elided_rwlock = SK__TL_OPS(
	erw, "elided-rwlock", "sk_elided_rwlock, on each elision backend",
	.write_trylock = erw_trylock, SK__TL_RD(erw),
	.attach_stats = erw_attach, .elided = 1);

const struct sk_tort_lock_ops *const sk_tort_locks[] = {
	&sk_tort_lock_pthread_mutex,   &sk_tort_lock_pthread_rwlock,
	&sk_tort_lock_rwlock_rb,       &sk_tort_lock_seqlock,
	&sk_tort_lock_elided_mutex,    &sk_tort_lock_elided_spinlock,
	&sk_tort_lock_elided_rwlock,   NULL,
};

const struct sk_tort_lock_ops *sk_tort_lock_find(const char *name)
{
	int i;

	for (i = 0; sk_tort_locks[i]; i++)
		if (strcmp(sk_tort_locks[i]->name, name) == 0)
			return sk_tort_locks[i];
	return NULL;
}
