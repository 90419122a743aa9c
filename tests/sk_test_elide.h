/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the elided-lock tests (test_elide.c on the real backends,
 * test_elide_sim.c on the simulated one): the three locks of the lock ops
 * table that `scalekit torture locks` runs too (tools/torture_lock_ops.h),
 * side by side; a mutual-exclusion stress with a non-atomic counter; and
 * a hang detector.
 */
#ifndef SK_TEST_ELIDE_H
#define SK_TEST_ELIDE_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "scalekit/elide.h"
#include "sk_test.h"
#include "sk_test_util.h"
#include "torture_lock_ops.h"

/* One lock of each kind. */
struct elide_lock {
	struct sk_elided_mutex m;
	struct sk_elided_spinlock s;
	struct sk_elided_rwlock rw;
};

/*
 * A lock of the table and where it is in struct elide_lock; "write" side
 * for the rwlock, unless read.
 */
struct elide_ops {
	const char *name;
	const struct sk_tort_lock_ops *ops;
	size_t off; /* of the lock in struct elide_lock */
	int read;
};

/* The exclusive locks; the rwlock's read side is elide_read_ops. */
extern const struct elide_ops elide_ops[3];
extern const struct elide_ops elide_read_ops;
#define ELIDE_NOPS ((int)(sizeof(elide_ops) / sizeof(elide_ops[0])))

/* Initialize the three locks of l. */
void elide_lock_init(struct elide_lock *l);

/* Lock, unlock, trylock (0 or -EBUSY), attach stats: o's lock of l. */
void el_lock(const struct elide_ops *o, struct elide_lock *l);
void el_unlock(const struct elide_ops *o, struct elide_lock *l);
int el_trylock(const struct elide_ops *o, struct elide_lock *l);
void el_attach(const struct elide_ops *o, struct elide_lock *l,
	       struct sk_elide_stats *s);

/* ---- hang detection ------------------------------------------------------- */

/* Fail the whole program (with a message) unless disarmed in time. */
void elide_deadline(const char *what, unsigned int s);

/* ---- mutual exclusion with a non-atomic counter -------------------------- */

struct elide_stress {
	const struct elide_ops *ops;	  /* the writers' lock operations */
	const struct elide_ops *rd_ops;	  /* readers (rwlock), or NULL */
	struct elide_lock *lock;
	unsigned long iters;		  /* per thread */
	int nolock;			  /* broken twin: no lock at all */
	int racy;			  /* a twin: relaxed atomics, so
					   * TSan lets the count show it */
	unsigned long counter;		  /* guarded by the lock */
	unsigned long shadow;		  /* written with counter */
	unsigned long torn;		  /* readers that saw them differ */
	int nthreads;			  /* writers + readers of the run */
	int started;			  /* threads at the start line */
};

/*
 * Run nthreads writers (and nreaders readers when st->rd_ops is set),
 * released together once all have started (so that they overlap even
 * where thread creation is slow, e.g. under TSan); returns the number of
 * lost updates (0 when the lock excludes).
 */
unsigned long elide_stress_run(struct elide_stress *st, int nthreads,
			       int nreaders);

#endif /* SK_TEST_ELIDE_H */
