/* SPDX-License-Identifier: MIT */
/*
 * Stress harness shared by the lock tests (test_rwlock_rb.c,
 * test_seqlock.c): writer threads bump a non-atomic counter and write a
 * multi-word snapshot (every word the same value, written one at a time
 * with spins in between); reader threads read the snapshot and count the
 * torn ones.  The lock under test is one of the lock ops table that
 * `scalekit torture locks` runs too (tools/torture_lock_ops.h), or its
 * broken twin (->broken).
 *
 * Checks a caller makes from struct lk_result: the counter ends exact
 * (writers excluded each other), no torn snapshot (readers excluded
 * writers, or retried), both sides made progress.  A broken twin makes
 * the same run and must show torn snapshots.
 */
#ifndef SK_TEST_LOCKS_H
#define SK_TEST_LOCKS_H

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "sk_test.h"
#include "sk_test_util.h"
#include "torture_lock_ops.h"

#define LK_WORDS 4

/* The data the locks guard. */
struct lk_data {
	unsigned long counter;	       /* writers only: plain, non-atomic */
	unsigned long w[LK_WORDS];     /* snapshot: relaxed atomics */
};

struct lk_spec {
	const struct sk_tort_lock_ops *ops; /* the lock, or its twin */
	void *lock;			    /* initialized by the caller */
	int try; /* the trylocks (spinning on -EBUSY), not the locks */
	int readers, writers;
	unsigned long writes_each; /* write sections per writer */
	double max_s;		   /* readers stop after this at the latest */
	int stop_on_torn;	   /* twins: stop once a torn read is seen */
};

struct lk_result {
	unsigned long counter, expected;
	unsigned long reads, torn;
};

struct lk_run {
	const struct lk_spec *spec;
	struct lk_data d;
	int writers_left; /* atomic */
	int stop;	  /* atomic */
	unsigned long reads, torn; /* atomic sums */
};

/* Spin a few iterations (widens the windows a broken lock leaves open). */
void lk_spin(unsigned n);

/* One write section: counter + 1, then the words one by one. */
void lk_write(const struct lk_spec *spec, struct lk_data *d);

/* One read: the words one by one (again, while the lock asks a retry). */
void lk_read(const struct lk_spec *spec, struct lk_data *d,
	     unsigned long *out);

void *lk_writer(void *arg);

void *lk_reader(void *arg);

/* Run spec with real threads; the figures in *res. */
void lk_stress(const struct lk_spec *spec, struct lk_result *res);

/* Run spec; writers excluded each other and no reader saw a torn copy. */
void lk_check_clean(struct lk_spec spec);

/* Run a broken twin until a torn read (20 s at most): it must show one. */
void lk_check_twin_caught(struct lk_spec spec);

/* fn, in a forked child, must abort with a message containing m1 and m2. */
void lk_check_aborts(void (*fn)(void), const char *m1,
		     const char *m2);

/* A wait that never ends fails the program with a message after s seconds. */
void lk_arm_alarm(unsigned s);

#endif /* SK_TEST_LOCKS_H */
