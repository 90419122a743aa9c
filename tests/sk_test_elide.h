/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the elided-lock tests (test_elide.c on the real backends,
 * test_elide_sim.c on the simulated one): the three locks of the lock ops
 * table that `scalekit torture locks` runs too (tools/torture_lock_ops.h),
 * side by side; their run in the locks' stress loop (tools/lock_stress.h),
 * the one `scalekit torture locks` runs; and a hang detector.
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
#include "lock_stress.h"

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

/* ---- the stress ---------------------------------------------------------- */

/* What runs under the stress: the lock, or a twin. */
enum elide_twin {
	ELIDE_LOCKED, /* the lock under test */
	ELIDE_NOLOCK, /* broken twin: no lock at all */
	ELIDE_BUSTED, /* the lock, broken in the library (sim): racy */
};

/*
 * o's lock of l in the locks' stress loop of the torture tool
 * (tools/lock_stress.h, a non-atomic shadow counter and an owner field):
 * writers threads, plus readers threads on the read side when o is the
 * rwlock, iters sections each (readers: at least), all released together
 * once all have started (so that they overlap even where thread creation
 * is slow, e.g. under TSan).  The findings in *res (lost updates,
 * overlaps, torn reads: none when the lock excludes).
 */
void elide_stress(const struct elide_ops *o, struct elide_lock *l,
		  unsigned long iters, int writers, int readers,
		  enum elide_twin twin, struct sk_lks_result *res);

#endif /* SK_TEST_ELIDE_H */
