/* SPDX-License-Identifier: MIT */
/*
 * rcu_stress.h - the RCU poison stress checker of the test programs
 * (test_rcu_stress.c; test_srcu_stress.c reuses its object checks and
 * counters with SRCU readers of its own).  Defined in
 * tests/support/rcu_stress.c (the test support library).  It calls the
 * primitive only through a struct sk_tort_ops (tools/torture_ops.h, the
 * sk_tort_ops library that `scalekit torture` runs on too): readers enter
 * and leave sections, QSBR readers go online, offline and quiescent,
 * updaters wait for grace periods, all by the ops of cfg.ops (default:
 * sk_tort_mixed_ops, whose even-numbered readers are general and odd ones
 * QSBR).  The harness around them (threads, the object, the checks) is this
 * file's, not the tool's: the tool runs for a time and reports, a test
 * runs a fixed number of updates and asserts on the counts.
 *
 * Readers follow one global pointer to a struct sk_stress_obj {magic, seq,
 * payload[]} while updaters replace it: allocate and fill a new object,
 * publish it with sk_rcu_assign_pointer(), wait with the ops' sync(), then
 * poison every field of the old object and put it in a quarantine;
 * objects leave the quarantine (free()) only after cfg.quarantine later
 * updates by the same updater, so a reader that still holds an object
 * after its grace period reads poison, not memory glibc handed to someone
 * else.
 *
 * Readers check, inside their section and several times with spin delays
 * (and now and then a sched_yield()) in between, that the object is live:
 * magic intact, payload consistent with seq, seq never going backwards.
 * Every failed check is counted, never fatal, so a broken primitive can be
 * run and its detection asserted (the kernel's BUSTED torture type).
 *
 * Reader kinds: general readers (readlock(), sometimes nested), QSBR
 * readers (reader_start() makes them QSBR; quiescent() every qs_every
 * reads, holding every reference obtained since the last quiescent state
 * and re-checking all of them; sometimes paused (offline), reading with
 * readlock_nest()), and churn threads that are created, start as one of
 * the ops' reader kinds (six ways with the mixed ops: general registered
 * explicitly or on first use, QSBR leaving in its three ways, and an
 * explicitly registered one that exits without reader_stop()), read and
 * exit without end.  Extra sync threads call sync() in a loop to exercise
 * batching.
 *
 * Broken primitives (cfg.broken = 1, e.g. cfg.ops made by
 * sk_tort_make_busted()): readers and the poisoner use
 * SK_READ_ONCE/SK_WRITE_ONCE on the objects so TSan does not report the
 * races the broken primitive causes, and nothing is freed before the end
 * of the run so ASan does not stop at the first use after free.  With a
 * correct primitive, plain (volatile) accesses are used on purpose: TSan
 * then checks that the library's grace period orders the readers' loads
 * before the poisoning stores and free().
 */
#ifndef SK_RCU_STRESS_H
#define SK_RCU_STRESS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "torture_ops.h"

#define SK_STRESS_MAGIC ((unsigned long)0x5ca1ab1e0b1ec7edULL)  /* a live object */
#define SK_STRESS_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL) /* after its grace period */
#define SK_STRESS_PAYLOAD 14		      /* object = 2 cache lines */
#define SK_STRESS_HOLD_MAX 64		      /* QSBR references held */

struct sk_stress_obj {
	unsigned long magic; /* SK_STRESS_MAGIC or poison */
	unsigned long seq;   /* update number, from 1 */
	unsigned long payload[SK_STRESS_PAYLOAD]; /* sk_stress_payload(seq, i) */
};

struct sk_stress_config {
	const char *name;	      /* for messages */
	unsigned int general_readers; /* sk_rcu_read_lock() readers */
	unsigned int qsbr_readers;    /* QSBR readers */
	unsigned int updaters;	      /* threads replacing the object */
	unsigned long updates;	      /* replacements per updater */
	unsigned int sync_threads;    /* threads only calling sync() */
	unsigned long sync_calls;     /* sync() calls per sync thread */
	unsigned int churn_threads;   /* spawners of short-lived readers */
	unsigned int qs_every;	      /* QSBR: quiescent state every K reads */
	unsigned int spin_in;	      /* max pause loops inside a section */
	unsigned int spin_out;	      /* max pause loops between sections */
	unsigned int quarantine;      /* poisoned objects kept per updater */
	size_t churn_stack;	      /* stack size of churn threads, 0: 128K */
	unsigned long min_churned;    /* updaters go on past `updates` until
				       * this many churn threads have run
				       * (broken runs: so that short-lived
				       * readers overlap the updates) */
	int broken;		      /* the grace period is known broken */
	const struct sk_tort_ops *ops; /* NULL: sk_tort_mixed_ops */
	uint64_t seed;
};

struct sk_stress_result {
	unsigned long reads;	  /* read-side critical sections */
	unsigned long checks;	  /* object checks */
	unsigned long violations; /* failed checks */
	unsigned long updates;	  /* objects replaced */
	unsigned long sync_calls; /* sync() calls by sync threads */
	unsigned long churned;	  /* short-lived reader threads run */
	unsigned long errors;	  /* setup failures (thread creation...) */
	char first[200];	  /* the first violation, for the log */
};

/* The run's shared state; one per sk_stress_run(). */
struct sk_stress {
	struct sk_stress_obj *gp
		__attribute__((aligned(64)));  /* RCU-protected */
	int stop __attribute__((aligned(64))); /* readers and churn stop */
	int readers_in; /* readers that finished their first read */
	unsigned long churned; /* churn threads run so far (atomic) */
	int churn_failed;      /* a churner stopped on an error (atomic) */
	unsigned long seq;    /* last seq published; guarded by lock */
	pthread_mutex_t lock; /* serializes updaters */
	const struct sk_stress_config *cfg;
	void *ctx; /* the instance of the ops (NULL for RCU's) */
	struct sk_stress_result *res;
	pthread_mutex_t res_lock; /* guards res->first and the sums */
};

struct sk_stress_thread {
	struct sk_stress *s;
	pthread_t tid;
	uint64_t rng;
	unsigned long idx; /* number among the run's threads: kind_hint */
	unsigned long reads, checks, violations, updates, calls, churned;
	unsigned long errors;
	unsigned long last_seq;	  /* highest seq seen: never goes backwards */
	struct sk_stress_obj **q; /* updater: quarantine, freed after the run */
	unsigned long qlen;	  /* its size */
	int started;
};

unsigned long sk_stress_payload(unsigned long seq, unsigned i);

/* Loads and stores on objects: plain when checked by TSan, else atomic. */
#define SK_STRESS_LOAD(broken, x) \
	((broken) ? SK_READ_ONCE(x) : *(volatile __typeof__(x) *)&(x))
#define SK_STRESS_STORE(broken, x, v)                          \
	do {                                                   \
		if (broken)                                    \
			SK_WRITE_ONCE(x, v);                   \
		else                                           \
			*(volatile __typeof__(x) *)&(x) = (v); \
	} while (0)

void sk_stress_spin(uint64_t *rng, unsigned int max);

void sk_stress_violation(struct sk_stress_thread *t,
			 const struct sk_stress_obj *p,
			 const char *what, unsigned long got,
			 unsigned long want);

/*
 * Check that *p is live (inside a read section).  Returns its seq, or 0
 * when the check failed.  last_seq: update the reader's high-water mark.
 */
unsigned long sk_stress_check(struct sk_stress_thread *t,
			      const struct sk_stress_obj *p,
			      int last_seq);

/* The primitive of s: s->cfg->ops, or sk_tort_mixed_ops. */
const struct sk_tort_ops *sk_stress_ops(const struct sk_stress *s);

/*
 * One general read-side critical section (readlock()), sometimes with a
 * nested one (readlock_nest()).
 */
void sk_stress_general_read(struct sk_stress_thread *t);

void *sk_stress_general_reader(void *arg);

/*
 * A QSBR reader (after reader_start() made it one): online all the time
 * except for short paused spells; it keeps every reference obtained since
 * its last quiescent state and re-checks them all at every read.
 */
void sk_stress_qsbr_loop(struct sk_stress_thread *t,
			 unsigned long max);

void *sk_stress_qsbr_reader(void *arg);

void *sk_stress_updater(void *arg);

void *sk_stress_syncer(void *arg);

/* A short-lived reader: starts as one of six kinds, reads, exits. */
void *sk_stress_ephemeral(void *arg);

void *sk_stress_churner(void *arg);

int sk_stress_start(struct sk_stress *s,
		    struct sk_stress_thread *t, unsigned long idx,
		    void *(*fn)(void *));

void sk_stress_join(struct sk_stress *s,
		    struct sk_stress_thread *t);

/*
 * Run the stress described by cfg until every updater and sync thread has
 * finished; fill *res.  An instance of the ops is made by its init() (when
 * it has one) and cleaned up at the end.  Returns 0, or -ENOMEM / -EAGAIN
 * or init()'s error when setup failed (res->errors is then nonzero too).
 */
int sk_stress_run(const struct sk_stress_config *cfg,
		  struct sk_stress_result *res);

/* Make o a live object with update number seq (before it is published). */
void sk_stress_obj_init(struct sk_stress_obj *o, unsigned long seq);

/*
 * Poison every field of o, after its grace period; with SK_STRESS_STORE,
 * so atomically when broken (the readers may still hold o).
 */
void sk_stress_obj_poison(struct sk_stress_obj *o, int broken);

/* One line for the log. */
void sk_stress_print(const struct sk_stress_config *cfg,
		     const struct sk_stress_result *res);

#endif /* SK_RCU_STRESS_H */
