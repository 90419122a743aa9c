/* SPDX-License-Identifier: MIT */
/*
 * tools/lock_stress.h - the locks' stress loop, one for the torture tool
 * and the tests: `scalekit torture locks` (tools/torture_locks.c) runs it
 * timed on every lock of the ops table (tools/torture_lock_ops.h), and the
 * lock tests (tests/support/sk_test_locks.c for test_rwlock_rb.c and
 * test_seqlock.c, tests/support/sk_test_elide.c for test_elide.c and
 * test_elide_sim.c) run it for a count of sections, then assert on the
 * struct sk_lks_result it returns.  Code in tools/lock_stress.c, built
 * into the sk_tort_ops library that both link.
 *
 * Threads: writers (write sections only), readers (read sections only)
 * and mixed threads, which pick at random a write section (one in
 * cfg.write_one_in) or a read section.  Locks without a read side (plain
 * locks) run write sections only.  All threads wait at a start line, so
 * that they overlap even where thread creation is slow (TSan).
 *
 * A write section checks that the owner field is free, claims it, bumps
 * a shadow counter with a load, a spin (sometimes a sched_yield(), so that
 * two writers inside at once lose an update even on one CPU) and a store,
 * copies the counter into a multi-word snapshot one word at a time, and
 * checks that it still owns the owner field.  A read section copies the
 * owner field, the shadow counter and the snapshot, and once the lock
 * says the copy is good (seqlocks may ask for a retry) checks that no
 * writer owned the data, that the words agree (a torn snapshot) and, for
 * locks whose readers exclude writers, that the shadow counter agrees
 * with them.  At the end the shadow counter must equal the number of
 * write sections (lost updates), and every thread must have made
 * progress.
 *
 * The shadow counter takes plain accesses with a working lock, so that
 * TSan checks the lock's ordering; with cfg.busted (a broken lock, whose
 * races are the point) every access is a relaxed atomic.
 */
#ifndef SK_LOCK_STRESS_H
#define SK_LOCK_STRESS_H

#include <stdint.h>

#include "torture_lock_ops.h"

#define SK_LKS_WORDS 4

struct sk_lks_cfg {
	const struct sk_tort_lock_ops *ops; /* the lock, or its twin */
	/* The lock, initialized by the caller; NULL: the harness inits
	 * (ops->init) and destroys one of its own (held at the end: error). */
	void *lock;
	const char *label; /* for the error lines */
	int writers, readers, mixed; /* threads of each kind */
	unsigned long write_one_in;  /* mixed threads; 0: 4 */
	/* Sections per writer and mixed thread; readers read while they
	 * run, and at least this often.  0: run until sk_lks_stop(). */
	unsigned long iters;
	double max_s;	  /* iters: readers stop after this (0: never) */
	int try;	  /* the trylocks (yield on -EBUSY), not the locks */
	int nolock;	  /* take no lock at all (a twin) */
	int busted;	  /* a broken lock: racy accesses, more yields */
	int stop_on_error; /* twins: every thread stops at the first error */
	unsigned long print_errors; /* error lines printed at most */
	uint64_t seed;
};

struct sk_lks_result {
	unsigned long reads, writes, retries; /* retries: seqlock reads */
	unsigned long shadow;	/* the shadow counter at the end */
	unsigned long lost;	/* writes - shadow: lost updates */
	unsigned long overlaps; /* owner field: two writers, or a reader
				 * inside a write section */
	unsigned long torn;	/* reads whose snapshot did not agree */
	unsigned long idle;	/* threads that completed no section */
	unsigned long errors;	/* all of the above, + 1 if destroy failed */
};

struct sk_lks;

/* Start cfg's threads (cfg must live until sk_lks_finish); NULL: failed. */
struct sk_lks *sk_lks_start(const struct sk_lks_cfg *cfg);

/* Sections completed so far (for a hang monitor). */
unsigned long sk_lks_sections(const struct sk_lks *s);

/* Threads that have not completed a section yet (for the monitor). */
unsigned long sk_lks_idle(const struct sk_lks *s);

/* Errors counted so far; relaxed loads only: async-signal-safe. */
unsigned long sk_lks_errors(const struct sk_lks *s);

/* Tell every thread to stop. */
void sk_lks_stop(struct sk_lks *s);

/* Join the threads; timeout_s > 0: -1 when one is still running then. */
int sk_lks_join(struct sk_lks *s, double timeout_s);

/* After sk_lks_join(): the final checks into *res; frees s. */
void sk_lks_finish(struct sk_lks *s, struct sk_lks_result *res);

/*
 * The whole run: start, wait for the iterations (or cfg->max_s seconds
 * when cfg->iters is 0), stop, join, check.  0, or -1 when the threads
 * could not start or the lock not be initialized.
 */
int sk_lks_run(const struct sk_lks_cfg *cfg, struct sk_lks_result *res);

#endif /* SK_LOCK_STRESS_H */
