/* SPDX-License-Identifier: MIT */
/*
 * tools/litmus_exec.h - what the executor of `scalekit litmus` shares
 * between its two files: the operations (litmus_ops.c: expressions, memory
 * accesses, fences, RCU, SRCU, the spinlock) and the run (litmus_exec.c:
 * threads, rendezvous, batches, tallies).  Internal to the two files.
 */
#ifndef SK_LITMUS_EXEC_H
#define SK_LITMUS_EXEC_H

#include "litmus.h"

#include <pthread.h>
#include <stddef.h>

#include "scalekit/barrier.h"

#define LT_BATCH 512
#define LT_CL SK_CACHELINE
#define LT_MAX_STATES 256
#define LT_MAX_SRCU_NEST 8
#define LT_LOCK_TIMEOUT_NS 2000000000L
#define LT_MAX_DOWN 64 /* open srcu_down_read() sections per iteration */

struct lt_meet {
	unsigned long arrived;
} __attribute__((aligned(SK_CACHELINE)));

/* An open srcu_down_read() section. */
struct lt_down {
	int loc; /* the domain's location */
	int idx; /* what sk_srcu_read_lock() returned */
	int pid; /* the process that opened it */
};

struct lt_run {
	const struct lt_test *t;
	const struct lt_opts *o;
	struct lt_result *res;
	int T;			/* threads */
	size_t stride;		/* bytes of one iteration's locations */
	char *mem;		/* LT_BATCH iterations of locations */
	long *regs;		/* [iteration][process][register] */
	struct sk_srcu *srcu[LT_MAX_LOCS];
	struct lt_meet *meet;	/* one per thread */
	int cpu[LT_MAX_PROCS];	/* CPU to pin thread t to, or -1 */
	/* Written by thread 0 before a batch's first rendezvous: */
	int nthis;		/* iterations in this batch; 0: stop */
	int nplan[LT_MAX_PROCS];
	int plan[LT_MAX_PROCS][LT_MAX_PROCS]; /* [thread][k]: process */
	unsigned int delay_max; /* pause instructions before a process */
	unsigned long rot;
	int batch;		/* size of the last batch */
	double start;
	int abort;		/* atomic: a runtime error stops the run */
	int go;			/* atomic: T is final, threads may start */
	pthread_mutex_t err_lock;
	/* srcu_down_read() sections of the iteration running (one at a
	 * time), under down_lock: they may end in another process. */
	pthread_mutex_t down_lock;
	int ndown;
	struct lt_down down[LT_MAX_DOWN];
	int owed[LT_MAX_LOCS]; /* srcu_up_read()s that found no section */
	int up_running[LT_MAX_LOCS]; /* processes that may still up loc */
	int done;	       /* processes of the iteration finished */
	/* An access through a pointer that is 0 (a null dereference) goes
	 * to its process's scratch cell and marks the iteration, which the
	 * tally then leaves out.  null_hit[i]: atomic, written by the
	 * processes of iteration i, read by thread 0 after the batch's
	 * rendezvous; null_cell[p]: touched only by process p. */
	int null_hit[LT_BATCH];
	struct {
		long v;
	} __attribute__((aligned(SK_CACHELINE))) null_cell[LT_MAX_PROCS];
};

struct lt_ctx {
	struct lt_run *R;
	int me;
	unsigned long meets;
	unsigned long long rng;
};

/* State of one process run, for the runtime checks. */
struct lt_pstate {
	int pid;
	int rcu_nest;
	int nsrcu;
	int srcu_loc[LT_MAX_SRCU_NEST];
	long srcu_idx[LT_MAX_SRCU_NEST];
	unsigned int locks; /* bit k: holds the spinlock at location k */
};

/* lx_now_s() - CLOCK_MONOTONIC in seconds. */
double lx_now_s(void);

/* lx_run_error() - record the run's first runtime error ("file:line:
 * message") and make every thread stop. */
__attribute__((format(printf, 3, 4))) void
lx_run_error(struct lt_run *R, int line, const char *fmt, ...);

/* lx_eval() - the value of expression e with these registers, in the
 * iteration whose locations start at slot. */
long lx_eval(const struct lt_test *t, int e, const long *reg, char *slot);

/* lx_ptr_loc() - the location a pointer value names in this iteration,
 * or -1. */
int lx_ptr_loc(const struct lt_run *R, char *slot, long v);

/* lx_run_op() - run one operation other than SET, JZ and JMP; returns 0,
 * or -1 on a runtime error (reported). */
int lx_run_op(struct lt_run *R, const struct lt_op *op, struct lt_pstate *ps,
	      long *reg, char *slot);

/* lx_end_checks() - a process that ends inside a section or holding a
 * lock: report, and undo. */
void lx_end_checks(struct lt_run *R, const struct lt_proc *P,
		   struct lt_pstate *ps, char *slot);

/* lx_down_reset() - the srcu_down_read() bookkeeping of a new iteration
 * (before the threads start; after, lx_down_proc_end() calls it). */
void lx_down_reset(struct lt_run *R);

/* lx_down_proc_end() - called by each process of an iteration when it
 * ends: its owed srcu_up_read()s end its own open srcu_down_read()
 * sections, and the last process ends the sections still open (the next
 * iteration starts with none). */
void lx_down_proc_end(struct lt_run *R, int pid);

#endif /* SK_LITMUS_EXEC_H */
