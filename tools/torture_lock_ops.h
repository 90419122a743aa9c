/* SPDX-License-Identifier: MIT */
/*
 * The locks behind one ops table (torture_lock_ops.c): what
 * `scalekit torture locks` (torture_locks.c) and the lock tests
 * (tests/support/sk_test_locks.c, sk_test_elide.c) run, in one stress
 * loop (lock_stress.h).  It is part of
 * the sk_tort_ops library, which names no scalekit library: each user
 * links its own build (the testing build, the simulated-elision one).
 *
 * Every lock has a broken twin (->broken) that a harness must catch:
 * plain locks become a test-then-set lock that is not atomic,
 * reader-writer locks get readers that take no lock, the seqlock's
 * readers skip the retry check.
 */
#ifndef SK_TORTURE_LOCK_OPS_H
#define SK_TORTURE_LOCK_OPS_H

#include <pthread.h>

#include "scalekit/elide.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"

/* Storage for any of the locks (the largest, aligned). */
union sk_tort_lock {
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	struct sk_rwlock_rb rb;
	struct sk_seqlock sl;
	struct sk_elided_mutex em;
	struct sk_elided_spinlock es;
	struct sk_elided_rwlock erw;
	int word; /* the plain twin's lock word */
	unsigned char bytes[64];
} __attribute__((aligned(SK_CACHELINE)));

/*
 * One lock kind.  l points to the lock itself (a union sk_tort_lock, or
 * the lock's own struct).  Plain locks have no read side (read_lock
 * NULL); the seqlock has no trylocks (NULL).
 */
struct sk_tort_lock_ops {
	const char *name;
	const char *desc;
	int (*init)(void *l);	 /* 0 or -errno */
	int (*destroy)(void *l); /* 0 or -errno (-EBUSY: held) */
	void (*write_lock)(void *l);
	void (*write_unlock)(void *l);
	int (*write_trylock)(void *l); /* 0 or -EBUSY */
	/* A token for read_unlock(), which returns 1: retry (seqlock). */
	unsigned int (*read_lock)(void *l);
	int (*read_unlock)(void *l, unsigned int token);
	int (*read_trylock)(void *l); /* 0 or -EBUSY; unlock: token 0 */
	/* Elided locks: count elision events in *s (NULL: stop). */
	void (*attach_stats)(void *l, struct sk_elide_stats *s);
	const struct sk_tort_lock_ops *broken; /* the twin to catch */
	int seqlock; /* readers may see a torn copy before read_unlock() */
	int elided;  /* runs on each elision backend */
};

/* The locks, references (pthread) first; NULL-terminated. */
extern const struct sk_tort_lock_ops *const sk_tort_locks[];

extern const struct sk_tort_lock_ops sk_tort_lock_pthread_mutex;
extern const struct sk_tort_lock_ops sk_tort_lock_pthread_rwlock;
extern const struct sk_tort_lock_ops sk_tort_lock_rwlock_rb;
extern const struct sk_tort_lock_ops sk_tort_lock_seqlock;
extern const struct sk_tort_lock_ops sk_tort_lock_elided_mutex;
extern const struct sk_tort_lock_ops sk_tort_lock_elided_spinlock;
extern const struct sk_tort_lock_ops sk_tort_lock_elided_rwlock;

/* The lock called name, or NULL. */
const struct sk_tort_lock_ops *sk_tort_lock_find(const char *name);

#endif /* SK_TORTURE_LOCK_OPS_H */
