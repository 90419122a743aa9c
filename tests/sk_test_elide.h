/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the elided-lock tests (test_elide.c on the real backends,
 * test_elide_sim.c on the simulated one): the three locks behind one ops
 * table, a mutual-exclusion stress with a non-atomic counter, and a
 * hang detector.
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

/* One lock of any kind; "write" side for the rwlock. */
struct elide_lock {
	struct sk_elided_mutex m;
	struct sk_elided_spinlock s;
	struct sk_elided_rwlock rw;
};

struct elide_ops {
	const char *name;
	void (*lock)(struct elide_lock *);
	void (*unlock)(struct elide_lock *);
	int (*trylock)(struct elide_lock *);
	void (*attach)(struct elide_lock *, struct sk_elide_stats *);
};

/* The exclusive locks; the rwlock's read side is elide_read_ops. */
extern const struct elide_ops elide_ops[3];
extern const struct elide_ops elide_read_ops;
#define ELIDE_NOPS ((int)(sizeof(elide_ops) / sizeof(elide_ops[0])))

/* Initialize the three locks of l. */
void elide_lock_init(struct elide_lock *l);

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
