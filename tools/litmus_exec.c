/* SPDX-License-Identifier: MIT */
/*
 * The executor of `scalekit litmus`: an interpreter over the pre-decoded
 * operations of each process, every operation a call of scalekit's own
 * primitive (SK_READ_ONCE, sk_smp_mb, sk_rcu_read_lock, sk_synchronize_rcu,
 * sk_srcu_read_lock, ...), so what the run observes is what the library's
 * primitives do on this CPU.
 *
 * Iterations run in batches of LT_BATCH.  Each iteration has fresh
 * locations, one cache line each.  Before a batch, thread 0 initializes
 * the batch's locations and deals the processes to the threads (rotating
 * the assignment, and the order when a thread runs several processes);
 * the threads then meet at a spinning rendezvous before every iteration,
 * wait a random few pause instructions and run their processes.  After
 * the batch thread 0 reads the registers and the final memory and tallies
 * the final states.  A quarter of the process runs also stall at a random
 * operation for a random while, which opens the windows that timing
 * alone decides (a reader's section against a grace period).
 */
#define _GNU_SOURCE
#include "litmus.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scalekit/barrier.h"
#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

#define LT_BATCH 512
#define LT_CL SK_CACHELINE
#define LT_MAX_STATES 256
#define LT_MAX_SRCU_NEST 8
#define LT_LOCK_TIMEOUT_NS 2000000000L

struct lt_meet {
	unsigned long arrived;
} __attribute__((aligned(SK_CACHELINE)));

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned int rnd(struct lt_ctx *c)
{
	/* xorshift64*: seeded per thread, so a run is repeatable in kind. */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return (unsigned int)((c->rng * 2685821657736338717ULL) >> 32);
}

static void spin(unsigned int n)
{
	while (n--)
		sk_cpu_relax();
}

static __attribute__((format(printf, 3, 4))) void
run_error(struct lt_run *R, int line, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&R->err_lock);
	if (!R->res->error[0]) {
		va_start(ap, fmt);
		lt_verror(R->res->error, R->t->file, line, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&R->err_lock);
	sk_atomic_store_relaxed(&R->abort, 1);
}

/*
 * All threads meet: each publishes how many times it arrived (release)
 * and waits until every other has arrived as often (acquire), so what a
 * thread wrote before arriving (registers, thread 0's initialization) is
 * visible to all after.  Spins, yielding the CPU after a while (a loaded
 * machine, or a process blocked in a grace period).
 */
static void meet(struct lt_ctx *c)
{
	struct lt_run *R = c->R;
	unsigned long n = ++c->meets;
	unsigned int spins = 0;
	int t;

	sk_smp_store_release(&R->meet[c->me].arrived, n);
	for (t = 0; t < R->T; t++) {
		while (sk_smp_load_acquire(&R->meet[t].arrived) < n) {
			if (++spins < 4000)
				sk_cpu_relax();
			else
				sched_yield();
		}
	}
}

/* ---- expressions and addresses ------------------------------------- */

static long eval(const struct lt_test *t, int e, const long *reg, char *slot);

static long eval_bin(const struct lt_test *t, const struct lt_expr *x,
		     const long *reg, char *slot)
{
	unsigned long a = (unsigned long)eval(t, x->l, reg, slot);

	/* Short-circuit first; the rest on unsigned (no overflow UB). */
	if (x->op == 0)
		return a || eval(t, x->r, reg, slot);
	if (x->op == 4)
		return a && eval(t, x->r, reg, slot);
	{
		unsigned long b = (unsigned long)eval(t, x->r, reg, slot);

		switch (x->op) {
		case 8: return (long)(a | b);
		case 12: return (long)(a ^ b);
		case 16: return (long)(a & b);
		case 20: return a == b;
		case 21: return a != b;
		case 24: return (long)a < (long)b;
		case 25: return (long)a > (long)b;
		case 26: return (long)a <= (long)b;
		case 27: return (long)a >= (long)b;
		case 28: return (long)(a + b);
		case 29: return (long)(a - b);
		default: return (long)(a * b);
		}
	}
}

static long eval(const struct lt_test *t, int e, const long *reg, char *slot)
{
	const struct lt_expr *x = &t->expr[e];

	switch (x->kind) {
	case LT_E_IMM:
		return x->v;
	case LT_E_REG:
		return reg[x->v];
	case LT_E_ADDR:
		return (long)(slot + x->v * LT_CL);
	case LT_E_NOT:
		return !eval(t, x->l, reg, slot);
	case LT_E_NEG:
		return (long)(0UL - (unsigned long)eval(t, x->l, reg, slot));
	default:
		return eval_bin(t, x, reg, slot);
	}
}

/* The location a pointer value names in this iteration, or -1. */
static int ptr_loc(const struct lt_run *R, char *slot, long v)
{
	unsigned long off = (unsigned long)v - (unsigned long)slot;

	if (off >= R->stride || off % LT_CL)
		return -1;
	return (int)(off / LT_CL);
}

/* The cell op accesses, or NULL (runtime error) when a register used as
 * the address holds something that is no location of this iteration. */
static long *cell_of(struct lt_run *R, const struct lt_op *op, const long *reg,
		     char *slot, int pid)
{
	int k = op->loc;

	if (k < 0 && (k = ptr_loc(R, slot, reg[op->areg])) < 0) {
		run_error(R, op->line, "P%d dereferences %s = %ld, which "
			  "points to no location", pid,
			  R->t->proc[pid].reg[op->areg], reg[op->areg]);
		return NULL;
	}
	if (R->t->loc[k].kind != LT_INT && op->code != LT_OP_SPIN_LOCK &&
	    op->code != LT_OP_SPIN_UNLOCK) {
		run_error(R, op->line, "P%d accesses '%s' as memory", pid,
			  R->t->loc[k].name);
		return NULL;
	}
	return (long *)(slot + (size_t)k * LT_CL);
}

/* ---- memory operations ---------------------------------------------- */

static long do_load(const struct lt_op *op, long *cell)
{
	switch (op->order) {
	case LT_ACQUIRE:
		return sk_smp_load_acquire(cell);
	case LT_DEREF:
		return sk_rcu_dereference(*cell);
	default:
		return SK_READ_ONCE(*cell);
	}
}

static void do_store(const struct lt_op *op, long *cell, long v)
{
	if (op->order == LT_RELEASE)
		sk_rcu_assign_pointer(*cell, v); /* = sk_smp_store_release */
	else
		SK_WRITE_ONCE(*cell, v);
}

#define RMW_CASES(ORD)                                                   \
	switch (rmw) {                                                   \
	case LT_RMW_XCHG:                                                \
		return __atomic_exchange_n(cell, a, ORD);                \
	case LT_RMW_CMPXCHG:                                             \
		__atomic_compare_exchange_n(cell, &a, b, 0, ORD,         \
					    __ATOMIC_RELAXED);           \
		return a;                                                \
	case LT_RMW_ADD:                                                 \
		return __atomic_fetch_add(cell, a, ORD);                 \
	case LT_RMW_SUB:                                                 \
		return __atomic_fetch_sub(cell, a, ORD);                 \
	case LT_RMW_AND:                                                 \
		return __atomic_fetch_and(cell, a, ORD);                 \
	case LT_RMW_OR:                                                  \
		return __atomic_fetch_or(cell, a, ORD);                  \
	default:                                                         \
		return __atomic_fetch_xor(cell, a, ORD);                 \
	}

/* The RMW at the order op asks for; returns the old value.  The memory
 * order must be a constant for the compiler to honour a weak one. */
static long rmw_order(int rmw, int order, long *cell, long a, long b)
{
	switch (order) {
	case LT_ONCE:
		RMW_CASES(__ATOMIC_RELAXED)
	case LT_ACQUIRE:
		RMW_CASES(__ATOMIC_ACQUIRE)
	case LT_RELEASE:
		RMW_CASES(__ATOMIC_RELEASE)
	default:
		RMW_CASES(__ATOMIC_SEQ_CST)
	}
}

static long do_rmw(const struct lt_op *op, long *cell, long a, long b)
{
	long old, nv;

	if (op->order == LT_FULL)
		/* LKMM: a value-returning RMW is fully ordered; the
		 * kernel's own recipe (pairs with the other side's
		 * barriers, as the test says). */
		sk_smp_mb__before_atomic();
	old = rmw_order(op->rmw, op->order, cell, a, b);
	if (op->order == LT_FULL)
		sk_smp_mb__after_atomic();
	if (!op->ret_new)
		return old;
	nv = op->rmw == LT_RMW_ADD ? (long)((unsigned long)old + a) :
					 (long)((unsigned long)old - a);
	return nv;
}

static void do_fence(int order)
{
	/* Each fence pairs with whatever the test pairs it with. */
	switch (order) {
	case LT_F_MB:
		sk_smp_mb();
		break;
	case LT_F_RMB:
		sk_smp_rmb();
		break;
	case LT_F_WMB:
		sk_smp_wmb();
		break;
	case LT_F_BEFORE_ATOMIC:
		sk_smp_mb__before_atomic();
		break;
	default:
		sk_smp_mb__after_atomic();
		break;
	}
}

/* ---- RCU, SRCU and the spinlock -------------------------------------- */

static int do_sync_rcu(struct lt_run *R, const struct lt_op *op,
		       struct lt_pstate *ps)
{
	if (ps->rcu_nest || ps->nsrcu) {
		run_error(R, op->line, "P%d waits for a grace period inside "
			  "a read section (it would deadlock)", ps->pid);
		return -1;
	}
	if (R->o->busted)
		sk_smp_mb(); /* --busted: a full barrier, no wait at all */
	else if (op->order)
		sk_synchronize_rcu_expedited();
	else
		sk_synchronize_rcu();
	return 0;
}

static int do_rcu_unlock(struct lt_run *R, const struct lt_op *op,
			 struct lt_pstate *ps)
{
	if (ps->rcu_nest == 0) {
		run_error(R, op->line, "P%d: rcu_read_unlock() without "
			  "rcu_read_lock()", ps->pid);
		return -1;
	}
	ps->rcu_nest--;
	sk_rcu_read_unlock();
	return 0;
}

static int do_srcu_lock(struct lt_run *R, const struct lt_op *op,
			struct lt_pstate *ps, long *reg)
{
	int idx;

	if (ps->nsrcu >= LT_MAX_SRCU_NEST) {
		run_error(R, op->line, "P%d: SRCU sections nested too deeply",
			  ps->pid);
		return -1;
	}
	idx = sk_srcu_read_lock(R->srcu[op->loc]);
	ps->srcu_loc[ps->nsrcu] = op->loc;
	ps->srcu_idx[ps->nsrcu++] = idx;
	if (op->dst >= 0)
		reg[op->dst] = idx;
	return 0;
}

/* srcu_read_unlock(s, v): v must be what an open srcu_read_lock(s) of
 * this process returned (else the library would abort on it). */
static int do_srcu_unlock(struct lt_run *R, const struct lt_op *op,
			  struct lt_pstate *ps, long v)
{
	int i;

	for (i = ps->nsrcu - 1; i >= 0; i--)
		if (ps->srcu_loc[i] == op->loc && ps->srcu_idx[i] == v)
			break;
	if (i < 0) {
		run_error(R, op->line, "P%d: srcu_read_unlock(%s, %ld) matches "
			  "no open srcu_read_lock()", ps->pid,
			  R->t->loc[op->loc].name, v);
		return -1;
	}
	sk_srcu_read_unlock(R->srcu[op->loc], (int)v);
	ps->nsrcu--;
	memmove(&ps->srcu_loc[i], &ps->srcu_loc[i + 1],
		sizeof(int) * (size_t)(ps->nsrcu - i));
	memmove(&ps->srcu_idx[i], &ps->srcu_idx[i + 1],
		sizeof(long) * (size_t)(ps->nsrcu - i));
	return 0;
}

static int do_sync_srcu(struct lt_run *R, const struct lt_op *op,
			struct lt_pstate *ps)
{
	int i;

	for (i = 0; i < ps->nsrcu; i++) {
		if (ps->srcu_loc[i] == op->loc) {
			run_error(R, op->line, "P%d: synchronize_srcu(%s) "
				  "inside its own read section", ps->pid,
				  R->t->loc[op->loc].name);
			return -1;
		}
	}
	if (R->o->busted)
		sk_smp_mb(); /* --busted: a full barrier, no wait at all */
	else if (op->order)
		sk_synchronize_srcu_expedited(R->srcu[op->loc]);
	else
		sk_synchronize_srcu(R->srcu[op->loc]);
	return 0;
}

/* spin_lock(): an acquire exchange, spinning on plain loads while held
 * (acquire: the section's accesses stay after it, as LKMM's spin_lock;
 * pairs with the release in spin_unlock()).  Gives up with an error after
 * LT_LOCK_TIMEOUT_NS or when another thread hit an error. */
static int do_spin_lock(struct lt_run *R, const struct lt_op *op,
			struct lt_pstate *ps, long *cell)
{
	unsigned long spins = 0;
	double deadline = 0;

	if (ps->locks & (1u << op->loc)) {
		run_error(R, op->line, "P%d: spin_lock(%s) while holding it",
			  ps->pid, R->t->loc[op->loc].name);
		return -1;
	}
	while (__atomic_exchange_n(cell, 1L, __ATOMIC_ACQUIRE) != 0) {
		while (SK_READ_ONCE(*cell) != 0) {
			sk_cpu_relax();
			if (++spins % 65536)
				continue;
			if (sk_atomic_load_relaxed(&R->abort))
				return -1;
			if (deadline == 0)
				deadline = now_s() + LT_LOCK_TIMEOUT_NS * 1e-9;
			else if (now_s() > deadline) {
				run_error(R, op->line, "P%d: spin_lock(%s) "
					  "waited 2 s: deadlock?", ps->pid,
					  R->t->loc[op->loc].name);
				return -1;
			}
			sched_yield();
		}
	}
	ps->locks |= 1u << op->loc;
	return 0;
}

static int do_spin_unlock(struct lt_run *R, const struct lt_op *op,
			  struct lt_pstate *ps, long *cell)
{
	if (!(ps->locks & (1u << op->loc))) {
		run_error(R, op->line, "P%d: spin_unlock(%s) without "
			  "spin_lock()", ps->pid, R->t->loc[op->loc].name);
		return -1;
	}
	ps->locks &= ~(1u << op->loc);
	/* Release: pairs with the acquire exchange in do_spin_lock(). */
	sk_smp_store_release(cell, 0L);
	return 0;
}

/* A process that ends inside a section or holding a lock: undo, report. */
static void end_checks(struct lt_run *R, const struct lt_proc *P,
		       struct lt_pstate *ps, char *slot)
{
	int line = P->nops ? P->ops[P->nops - 1].line : 0, k;

	if (ps->rcu_nest || ps->nsrcu || ps->locks)
		run_error(R, line, "P%d ends inside a read section or holding "
			  "a lock", ps->pid);
	for (; ps->rcu_nest; ps->rcu_nest--)
		sk_rcu_read_unlock();
	while (ps->nsrcu--)
		sk_srcu_read_unlock(R->srcu[ps->srcu_loc[ps->nsrcu]],
				    (int)ps->srcu_idx[ps->nsrcu]);
	for (k = 0; k < LT_MAX_LOCS; k++)
		if (ps->locks & (1u << k))
			sk_smp_store_release((long *)(slot + k * LT_CL), 0L);
}

/* ---- one process ------------------------------------------------------ */

/* Memory and synchronization operations; returns -1 on a runtime error. */
static int run_mem_op(struct lt_run *R, const struct lt_op *op,
		      struct lt_pstate *ps, long *reg, char *slot)
{
	const struct lt_test *t = R->t;
	long *cell = NULL, a = 0, b = 0;

	if (op->loc >= 0 || op->areg >= 0)
		if (op->code != LT_OP_SRCU_LOCK && op->code != LT_OP_SRCU_UNLOCK &&
		    op->code != LT_OP_SYNC_SRCU &&
		    !(cell = cell_of(R, op, reg, slot, ps->pid)))
			return -1;
	if (op->a >= 0)
		a = eval(t, op->a, reg, slot);
	if (op->b >= 0)
		b = eval(t, op->b, reg, slot);
	switch (op->code) {
	case LT_OP_LOAD:
		a = do_load(op, cell);
		if (op->dst >= 0)
			reg[op->dst] = a;
		return 0;
	case LT_OP_STORE:
		do_store(op, cell, a);
		return 0;
	case LT_OP_RMW:
		a = do_rmw(op, cell, a, b);
		if (op->dst >= 0)
			reg[op->dst] = a;
		return 0;
	case LT_OP_SRCU_LOCK:
		return do_srcu_lock(R, op, ps, reg);
	case LT_OP_SRCU_UNLOCK:
		return do_srcu_unlock(R, op, ps, a);
	case LT_OP_SYNC_SRCU:
		return do_sync_srcu(R, op, ps);
	case LT_OP_SPIN_LOCK:
		return do_spin_lock(R, op, ps, cell);
	default:
		return do_spin_unlock(R, op, ps, cell);
	}
}

static void run_proc(struct lt_ctx *c, int pid, char *slot, long *reg)
{
	struct lt_run *R = c->R;
	const struct lt_proc *P = &R->t->proc[pid];
	struct lt_pstate ps = { .pid = pid };
	int pc = 0, stall_at = -1, rc = 0;
	unsigned int stall_len = 0;

	memcpy(reg, P->reg_init, sizeof(P->reg_init));
	if ((rnd(c) & 3) == 0) {
		stall_at = (int)(rnd(c) % (unsigned int)(P->nops + 1));
		stall_len = rnd(c) % 256;
	}
	while (pc < P->nops && rc == 0) {
		const struct lt_op *op = &P->ops[pc];

		if (pc++ == stall_at)
			spin(stall_len);
		switch (op->code) {
		case LT_OP_SET:
			reg[op->dst] = eval(R->t, op->a, reg, slot);
			break;
		case LT_OP_JZ:
			if (!eval(R->t, op->a, reg, slot))
				pc = op->target;
			break;
		case LT_OP_JMP:
			pc = op->target;
			break;
		case LT_OP_FENCE:
			do_fence(op->order);
			break;
		case LT_OP_RCU_LOCK:
			if (ps.rcu_nest >= 100) {
				run_error(R, op->line, "P%d: rcu_read_lock() "
					  "nested too deeply", pid);
				rc = -1;
				break;
			}
			sk_rcu_read_lock();
			ps.rcu_nest++;
			break;
		case LT_OP_RCU_UNLOCK:
			rc = do_rcu_unlock(R, op, &ps);
			break;
		case LT_OP_SYNC_RCU:
			rc = do_sync_rcu(R, op, &ps);
			break;
		default:
			rc = run_mem_op(R, op, &ps, reg, slot);
		}
	}
	end_checks(R, P, &ps, slot);
}

/* ---- batches ---------------------------------------------------------- */

int lt_cond_eval(const struct lt_test *t, int c, const long *val)
{
	const struct lt_cond *x = &t->cond[c];

	switch (x->kind) {
	case LT_C_TRUE:
		return 1;
	case LT_C_EQ:
		return val[x->obs] == x->value;
	case LT_C_NOT:
		return !lt_cond_eval(t, x->l, val);
	case LT_C_AND:
		return lt_cond_eval(t, x->l, val) && lt_cond_eval(t, x->r, val);
	default:
		return lt_cond_eval(t, x->l, val) || lt_cond_eval(t, x->r, val);
	}
}

/* Thread 0, before a batch: how many iterations (0: stop), who runs which
 * process in which order, fresh locations. */
static void plan_batch(struct lt_ctx *c)
{
	struct lt_run *R = c->R;
	const struct lt_test *t = R->t;
	static const unsigned int delays[] = { 1, 4, 16, 64, 256 };
	int perm[LT_MAX_PROCS], i, k, n = t->nprocs;
	unsigned long left = R->o->iterations - R->res->iterations;

	double spent = now_s() - R->start;

	/* Batches grow from 16 iterations, and stay within the time left at
	 * the rate seen so far (grace periods make some tests slow). */
	R->batch = R->batch ? R->batch * 2 : 16;
	if (R->batch > LT_BATCH)
		R->batch = LT_BATCH;
	if (R->res->iterations && spent > 0) {
		double fit = (double)R->res->iterations / spent *
			     (R->o->seconds - spent);

		if (fit < R->batch)
			R->batch = fit < 1 ? 1 : (int)fit;
	}
	R->nthis = left < (unsigned long)R->batch ? (int)left : R->batch;
	/* At least one batch, however late the threads got going.  A
	 * Never outcome once seen decides the verdict (FAIL): stop. */
	if (sk_atomic_load_relaxed(&R->abort) ||
	    (spent >= R->o->seconds && R->res->iterations) ||
	    (R->res->positive && lt_expects_never(t)))
		R->nthis = 0;
	/* Rotate which thread (CPU) runs which process; shuffle when a
	 * thread runs several, so that every order gets its turn. */
	for (i = 0; i < n; i++)
		perm[i] = (int)((i + R->rot) % (unsigned long)n);
	R->rot++;
	for (i = n - 1; n > R->T && i > 0; i--) {
		int j = (int)(rnd(c) % (unsigned int)(i + 1)), x = perm[i];

		perm[i] = perm[j];
		perm[j] = x;
	}
	memset(R->nplan, 0, sizeof(R->nplan));
	for (i = 0; i < n; i++) {
		k = i % R->T;
		R->plan[k][R->nplan[k]++] = perm[i];
	}
	R->delay_max = delays[rnd(c) % 5];
	for (i = 0; i < R->nthis; i++) {
		char *slot = R->mem + (size_t)i * R->stride;

		for (k = 0; k < t->nlocs; k++) {
			const struct lt_loc *l = &t->loc[k];
			long v = l->init_ptr ? (long)(slot + l->init * LT_CL) :
					       l->init;

			sk_atomic_store_relaxed((long *)(slot + k * LT_CL),
						l->kind == LT_INT ? v : 0L);
		}
	}
}

/* Add one final state to the histogram. */
static void tally_state(struct lt_result *res, const long *val, int nobs,
			int match)
{
	int s;

	for (s = 0; s < res->nstates; s++) {
		if (memcmp(res->states[s].val, val, sizeof(long) * nobs) == 0) {
			res->states[s].count++;
			return;
		}
	}
	if (res->nstates == LT_MAX_STATES) {
		res->other_count++;
		return;
	}
	memcpy(res->states[s].val, val, sizeof(long) * nobs);
	res->states[s].count = 1;
	res->states[s].match = match;
	res->nstates++;
}

/* Thread 0, after a batch: read the registers and the final memory. */
static void tally_batch(struct lt_run *R, int n)
{
	const struct lt_test *t = R->t;
	long val[LT_MAX_OBS];
	int i, j;

	for (i = 0; i < n; i++) {
		char *slot = R->mem + (size_t)i * R->stride;
		const long *regs = R->regs + (size_t)i * t->nprocs * LT_MAX_REGS;
		int match;

		for (j = 0; j < t->nobs; j++) {
			const struct lt_obs *o = &t->obs[j];
			long v = o->proc >= 0 ?
				regs[o->proc * LT_MAX_REGS + o->idx] :
				sk_atomic_load_relaxed(
					(long *)(slot + o->idx * LT_CL));
			int k = ptr_loc(R, slot, v);

			val[j] = k >= 0 ? LT_PTR_TAG + k : v;
		}
		match = lt_cond_eval(t, t->cond_root, val);
		R->res->positive += (unsigned long)match;
		tally_state(R->res, val, t->nobs, match);
	}
	R->res->iterations += (unsigned long)n;
}

static void pin(struct lt_run *R, int me)
{
	cpu_set_t set;

	if (R->cpu[me] < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(R->cpu[me], &set);
	/* Best effort: without it reorderings are only rarer. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void run_batch(struct lt_ctx *c, int n)
{
	struct lt_run *R = c->R;
	const struct lt_test *t = R->t;
	int i, k;

	for (i = 0; i < n; i++) {
		char *slot = R->mem + (size_t)i * R->stride;
		long *regs = R->regs + (size_t)i * t->nprocs * LT_MAX_REGS;

		if (R->T > 1)
			meet(c);
		for (k = 0; k < R->nplan[c->me]; k++) {
			int pid = R->plan[c->me][k];

			/* Processes sharing a thread would share its store
			 * buffer (a reader could see a write by "another
			 * CPU" before anyone else, breaking multicopy
			 * atomicity on x86): a full barrier between them
			 * makes the earlier one finished and visible, as a
			 * process on another CPU that ran first. */
			if (k > 0)
				sk_smp_mb();
			spin(rnd(c) % R->delay_max);
			run_proc(c, pid, slot, regs + pid * LT_MAX_REGS);
		}
	}
}

static void *thread_main(void *arg)
{
	struct lt_ctx *c = arg;
	struct lt_run *R = c->R;
	int n, reg = 0;

	/* Acquire: pairs with the release of go in lt_run(). */
	while (!sk_smp_load_acquire(&R->go))
		sched_yield();
	pin(R, c->me);
	if (R->t->uses_rcu) {
		if (sk_rcu_register_thread() != 0)
			run_error(R, 0, "cannot register an RCU reader thread");
		else
			reg = 1;
	}
	for (;;) {
		if (c->me == 0)
			plan_batch(c);
		meet(c);
		if ((n = R->nthis) == 0)
			break;
		run_batch(c, n);
		meet(c);
		if (c->me == 0)
			tally_batch(R, n);
	}
	if (reg)
		sk_rcu_unregister_thread();
	return NULL;
}

/* Up to T CPUs this process may run on (thread t pinned to cpu[t]). */
static void find_cpus(struct lt_run *R)
{
	cpu_set_t set;
	int cpu, n = 0, t;

	for (t = 0; t < LT_MAX_PROCS; t++)
		R->cpu[t] = -1;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (cpu = 0; cpu < CPU_SETSIZE && n < R->T; cpu++)
		if (CPU_ISSET(cpu, &set))
			R->cpu[n++] = cpu;
	if (n < R->T) /* fewer CPUs than threads: let the kernel place them */
		for (t = 0; t < LT_MAX_PROCS; t++)
			R->cpu[t] = -1;
}

static int online_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

static int setup(struct lt_run *R)
{
	const struct lt_test *t = R->t;
	int k;

	R->T = R->o->threads > 0 ? R->o->threads : online_cpus();
	if (R->T > t->nprocs)
		R->T = t->nprocs;
	R->stride = (size_t)(t->nlocs ? t->nlocs : 1) * LT_CL;
	R->mem = aligned_alloc(LT_CL, LT_BATCH * R->stride);
	R->regs = calloc((size_t)LT_BATCH * t->nprocs * LT_MAX_REGS,
			 sizeof(long));
	R->meet = aligned_alloc(LT_CL, sizeof(*R->meet) * LT_MAX_PROCS);
	R->res->states = calloc(LT_MAX_STATES, sizeof(*R->res->states));
	if (!R->mem || !R->regs || !R->meet || !R->res->states)
		return -ENOMEM;
	memset(R->meet, 0, sizeof(*R->meet) * LT_MAX_PROCS);
	for (k = 0; k < t->nlocs; k++) {
		size_t sz = (sizeof(struct sk_srcu) + LT_CL - 1) / LT_CL * LT_CL;

		if (t->loc[k].kind != LT_SRCU)
			continue;
		R->srcu[k] = aligned_alloc(LT_CL, sz);
		if (!R->srcu[k])
			return -ENOMEM;
		if (sk_srcu_init(R->srcu[k]) != 0) {
			free(R->srcu[k]);
			R->srcu[k] = NULL;
			return -ENOMEM;
		}
	}
	find_cpus(R);
	return 0;
}

static void teardown(struct lt_run *R)
{
	int k;

	for (k = 0; k < LT_MAX_LOCS; k++) {
		if (R->srcu[k]) {
			sk_srcu_destroy(R->srcu[k]);
			free(R->srcu[k]);
		}
	}
	free(R->mem);
	free(R->regs);
	free(R->meet);
	pthread_mutex_destroy(&R->err_lock);
}

int lt_run(const struct lt_test *t, const struct lt_opts *o,
	   struct lt_result *res)
{
	struct lt_run R = { .t = t, .o = o, .res = res };
	struct lt_ctx ctx[LT_MAX_PROCS];
	pthread_t tid[LT_MAX_PROCS];
	int i, started = 0, have_mask;
	cpu_set_t mask;

	/* The calling thread is thread 0 and gets pinned: restore after. */
	have_mask = sched_getaffinity(0, sizeof(mask), &mask) == 0;

	memset(res, 0, sizeof(*res));
	pthread_mutex_init(&R.err_lock, NULL);
	if (setup(&R) != 0) {
		teardown(&R);
		snprintf(res->error, LT_ERR, "%s: out of memory", t->file);
		return -1;
	}
	res->threads = R.T;
	R.start = now_s();
	for (i = 0; i < R.T; i++) {
		ctx[i].R = &R;
		ctx[i].me = i;
		ctx[i].meets = 0;
		ctx[i].rng = (o->seed + 1) * 0x9e3779b97f4a7c15ULL + (unsigned)i;
		if (i > 0 && pthread_create(&tid[i], NULL, thread_main,
					    &ctx[i]) != 0)
			break;
		started++;
	}
	/* Fewer threads than planned: run with those (each runs more
	 * processes).  Release: R.T before the threads read it. */
	R.T = started;
	res->threads = R.T;
	sk_smp_store_release(&R.go, 1);
	thread_main(&ctx[0]);
	for (i = 1; i < started; i++)
		pthread_join(tid[i], NULL);
	res->elapsed = now_s() - R.start;
	if (have_mask)
		sched_setaffinity(0, sizeof(mask), &mask);
	teardown(&R);
	return res->error[0] ? -1 : 0;
}
