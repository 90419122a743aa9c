/* SPDX-License-Identifier: MIT */
/*
 * The lock tests' helpers (test_rwlock_rb.c, test_seqlock.c): a stress
 * run of one lock of the ops table that `scalekit torture locks` runs too
 * (tools/torture_lock_ops.h), or of its broken twin (->broken), in the
 * locks' stress loop of the torture tool (tools/lock_stress.h): writer
 * threads claim an owner field, bump a shadow counter (plain, non-atomic)
 * and write a multi-word snapshot one word at a time; reader threads
 * check the owner field, the snapshot and the counter.
 *
 * Checks made on the result: the counter ends exact (writers excluded
 * each other), no overlap and no torn snapshot (readers excluded writers,
 * or retried), every thread made progress.  A broken twin makes the same
 * run and must be caught.
 */
#ifndef SK_TEST_LOCKS_H
#define SK_TEST_LOCKS_H

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "sk_test.h"
#include "sk_test_util.h"
#include "lock_stress.h"

struct lk_spec {
	const struct sk_tort_lock_ops *ops; /* the lock, or its twin */
	void *lock;			    /* initialized by the caller */
	int try; /* the trylocks (spinning on -EBUSY), not the locks */
	int readers, writers;
	unsigned long writes_each; /* write sections per writer */
	double max_s;		   /* readers stop after this at the latest */
};

/* Run spec in the harness (busted: a twin, caught at its first error). */
void lk_stress(const struct lk_spec *spec, int busted,
	       struct sk_lks_result *res);

/* Run spec; writers excluded each other and no reader saw a torn copy. */
void lk_check_clean(struct lk_spec spec);

/* Run a broken twin until an error (20 s at most): it must show one. */
void lk_check_twin_caught(struct lk_spec spec);

/* fn, in a forked child, must abort with a message containing m1 and m2. */
void lk_check_aborts(void (*fn)(void), const char *m1,
		     const char *m2);

/* A wait that never ends fails the program with a message after s seconds. */
void lk_arm_alarm(unsigned s);

#endif /* SK_TEST_LOCKS_H */
