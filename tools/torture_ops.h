/* SPDX-License-Identifier: MIT */
/*
 * tools/torture_ops.h - one definition per synchronization primitive of
 * how a reader enters and leaves a section and how an updater waits for a
 * grace period: struct sk_tort_ops (rcutorture's struct rcu_torture_ops).
 *
 * Who uses it: `scalekit torture` (every scenario of tools/torture_*.c
 * calls the primitive through the ops of its run) and the concurrency
 * checks of the tests with their broken twins: the RCU poison stress
 * (tests/support/rcu_stress.c, run by test_rcu_stress.c), the SRCU poison
 * stress (test_srcu_stress.c), the SRCU generation checker
 * (sk_test_srcu.c's gen_*, run by test_srcu_gp.c and
 * test_srcu_callbacks.c), test_rcu_sync.c's holder and mid-grace-period
 * checks, test_rcu_cb*.c's callback checks and test_rcu_poll.c's and
 * test_rcu_gp_kinds.c's reader/updater checks.  The tool and the tests link
 * the ops as one small static library, sk_tort_ops (tools/torture_ops.c,
 * with the locks' table and stress loop tools/torture_lock_ops.c and
 * lock_stress.c, and the hash table's stress harness tools/rhash_stress.c
 * and its tests' runner rhash_stress_run.c, built in every configuration,
 * the test-only ones too); it names
 * no scalekit library: its user links one after it.
 *
 * Not through the ops, on purpose: tests whose subject is one API call
 * (the holder/syncer helpers of sk_test_srcu.h, test_srcu_api.c), that
 * steer or break the library from inside (its hidden test hooks and
 * SK__RCU_BUSTED_* twins: test_rcu_batch, test_rcu_cb_pcpu,
 * test_rcu_wrap, test_srcu_wrap, test_rcu_expedite), or whose subject is
 * a user of RCU and whose twin breaks that user, not the grace period
 * (test_list.c, whose twin poisons at once; the rhash tests).
 *
 * An ops is a constant table of functions; the functions that act on one
 * instance of the primitive (an SRCU domain) take the instance as their
 * first argument, ctx, which init() creates.  So one ops drives as many
 * domains at once as its user creates.  The RCU ops act on the one global
 * RCU domain: their init is NULL and ctx is NULL.  Thread hooks
 * (reader_start() ... updater_stop()) act on the calling thread, not on
 * an instance, and take no ctx.
 *
 * Every ops has a "busted" twin (sk_tort_make_busted()): the same readers,
 * grace periods that do not wait.  A run or a test with the twin must
 * FAIL; if it does not, its checks are blind.
 */
#ifndef SK_TORTURE_OPS_H
#define SK_TORTURE_OPS_H

#include <stdint.h>

#include "scalekit/rcu.h"

/* The grace-period primitives an updater may pick (--gp). */
enum sk_tort_gp {
	SK_TORT_GP_SYNC, /* synchronize */
	SK_TORT_GP_EXP,	 /* synchronize_expedited */
	SK_TORT_GP_CB,	 /* call (callback after a grace period) */
	SK_TORT_GP_POLL, /* start_poll + poll until done */
	SK_TORT_GP_COND, /* get_state + cond_synchronize */
	SK_TORT_GP_NR
};

extern const char *const sk_tort_gp_names[SK_TORT_GP_NR];

/* Per-thread PRNG (splitmix64): every random choice comes from one. */
struct sk_tort_rng {
	uint64_t s;
};

static inline uint64_t sk_tort_rand(struct sk_tort_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static inline unsigned long sk_tort_below(struct sk_tort_rng *r,
					  unsigned long n)
{
	return n ? (unsigned long)(sk_tort_rand(r) % n) : 0;
}

/* 1 with probability 1/n. */
static inline int sk_tort_one_in(struct sk_tort_rng *r, unsigned long n)
{
	return sk_tort_below(r, n) == 0;
}

/* Grace-period counters of a primitive, for the report and the monitor. */
struct sk_tort_gp_stats {
	unsigned long gps;	  /* grace periods completed */
	unsigned long cb_queued;  /* callbacks accepted by the library */
	unsigned long cb_invoked; /* callbacks the library ran */
	unsigned long exp_handshakes, exp_fallbacks; /* expedited G1 kinds */
	int have_cb;		  /* the library counts callbacks itself */
};

/*
 * One synchronization primitive (rcutorture's struct rcu_torture_ops).
 * Function pointers that a primitive lacks are NULL; the torture harness
 * refuses --gp types whose functions are missing.  Reader functions run
 * on reader threads, update functions on updater (and callback) threads.
 * ctx is the instance init() made (NULL for the RCU ops, which have no
 * init): every function of one instance gets the same ctx.
 */
struct sk_tort_ops {
	const char *name;
	const char *desc;
	int busted;	 /* grace periods do not wait: the run must FAIL */
	int can_sleep;	 /* readers may block inside a section */
	int can_handoff; /* a section may end on another thread */
	int global_rcu;	 /* grace periods are the global RCU domain's
			    (SK_FREE_RCU and sk_rhash may be used) */
	int updater_reads; /* updaters also read, in sections of their
			      own between updates (mode rcu: registered
			      updaters park in their grace-period waits) */

	/*
	 * Create an instance (a domain): 0 and *ctx set, or -errno and
	 * nothing created.  cleanup() waits for its callbacks and frees it:
	 * 0, or -EBUSY when the instance is still in use (then it is kept,
	 * leaked rather than freed in use).
	 */
	int (*init)(void **ctx);
	int (*cleanup)(void *ctx);

	/*
	 * Reader threads: reader_start() returns 1 when the thread is a QSBR
	 * reader (it holds what it reads until quiescent()), 0 otherwise;
	 * kind_hint is the reader's number (mixed: the parity picks the kind).
	 * reader_pause()/resume() bracket a stutter pause or a long sleep
	 * outside sections; reader_stop() runs before the thread exits (a
	 * thread may also exit without it: the library cleans up).
	 */
	int (*reader_start)(unsigned long kind_hint);
	void (*reader_pause)(void);
	void (*reader_resume)(void);
	void (*reader_stop)(void);
	int (*readlock)(void *ctx);	       /* outermost: returns an index */
	void (*readunlock)(void *ctx, int idx); /* may run on another thread
						   if can_handoff */
	/*
	 * A section nested inside readlock()'s.  It is a full read-side
	 * section of its own also where readlock() is not (a QSBR reader's
	 * readlock() marks a section that its being online already makes):
	 * a paused (offline) QSBR reader may read inside it.
	 */
	int (*readlock_nest)(void *ctx);
	void (*readunlock_nest)(void *ctx, int idx);
	void (*quiescent)(void); /* QSBR: between sections */
	/* Delay inside a section (spin, yield, sleep when allowed). */
	void (*read_delay)(struct sk_tort_rng *rng, int sleep_ok);
	/* Load an RCU-protected pointer inside a section (any instance). */
	void *(*deref)(void *const *pp);

	/* Updaters. */
	void (*updater_start)(void);	 /* e.g. QSBR updaters go online */
	void (*updater_quiescent)(void); /* between updates / poll tries */
	void (*updater_stop)(void);
	void (*sync)(void *ctx);
	void (*exp_sync)(void *ctx);
	int (*call)(void *ctx, struct sk_rcu_head *head,
		    void (*fn)(struct sk_rcu_head *head));
	void (*cb_barrier)(void *ctx);
	unsigned long (*get_gp_state)(void *ctx);
	unsigned long (*start_gp_poll)(void *ctx);
	int (*poll_gp_state)(void *ctx, unsigned long cookie);
	void (*cond_sync)(void *ctx, unsigned long cookie);

	/* A counter that advances with grace periods (Reader Batch). */
	unsigned long (*gp_seq)(void *ctx);
	void (*stats)(void *ctx, struct sk_tort_gp_stats *st);
};

/* The primitives (torture_ops.c). */
extern const struct sk_tort_ops sk_tort_rcu_ops;
extern const struct sk_tort_ops sk_tort_qsbr_ops;
extern const struct sk_tort_ops sk_tort_mixed_ops;
extern const struct sk_tort_ops sk_tort_srcu_ops;

/*
 * sk_tort_make_busted() - out = real with grace periods that do not wait
 * (sync is a full barrier, callbacks run at once, cookies complete at
 * once).  Readers are those of real.
 */
void sk_tort_make_busted(const struct sk_tort_ops *real,
			 struct sk_tort_ops *out);

/* Does ops implement grace-period type g? */
int sk_tort_ops_has_gp(const struct sk_tort_ops *ops, int g);

/* Spin for up to max pause instructions (max + 1 choices, from rng). */
void sk_tort_spin(struct sk_tort_rng *rng, unsigned long max);

/* The domain of an instance of sk_tort_srcu_ops (white-box tests). */
struct sk_srcu *sk_tort_srcu_domain(void *ctx);

#endif /* SK_TORTURE_OPS_H */
