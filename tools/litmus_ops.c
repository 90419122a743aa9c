/* SPDX-License-Identifier: MIT */
/*
 * The operations of the executor of `scalekit litmus` (see
 * litmus_exec.h): expressions, addresses, and every memory, fence, RCU,
 * SRCU and spinlock operation as a call of scalekit's own primitive
 * (SK_READ_ONCE, sk_smp_mb, sk_rcu_read_lock, sk_synchronize_rcu,
 * sk_srcu_read_lock, sk_fence_heavy, ...), so what the run observes is
 * what the library's primitives do on this CPU.
 */
#define _GNU_SOURCE
#include "litmus_exec.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

double lx_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_verror(struct lt_run *R, int deadlock, int line,
		       const char *fmt, va_list ap)
{
	pthread_mutex_lock(&R->err_lock);
	if (!R->res->error[0]) {
		lt_verror(R->res->error, R->t->file, line, fmt, ap);
		R->res->deadlock = deadlock;
	}
	pthread_mutex_unlock(&R->err_lock);
	sk_atomic_store_relaxed(&R->abort, 1);
}

void lx_run_error(struct lt_run *R, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	run_verror(R, 0, line, fmt, ap);
	va_end(ap);
}

/* A runtime error that is a deadlock the test would reach: the verdict
 * of a test whose Result is DEADLOCK. */
__attribute__((format(printf, 3, 4))) static void
run_deadlock(struct lt_run *R, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	run_verror(R, 1, line, fmt, ap);
	va_end(ap);
}

/* ---- expressions and addresses ------------------------------------- */

static long eval_bin(const struct lt_test *t, const struct lt_expr *x,
		     const long *reg, char *slot)
{
	unsigned long a = (unsigned long)lx_eval(t, x->l, reg, slot);

	/* Short-circuit first; the rest on unsigned (no overflow UB). */
	if (x->op == 0)
		return a || lx_eval(t, x->r, reg, slot);
	if (x->op == 4)
		return a && lx_eval(t, x->r, reg, slot);
	{
		unsigned long b = (unsigned long)lx_eval(t, x->r, reg, slot);

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

long lx_eval(const struct lt_test *t, int e, const long *reg, char *slot)
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
		return !lx_eval(t, x->l, reg, slot);
	case LT_E_NEG:
		return (long)(0UL - (unsigned long)lx_eval(t, x->l, reg, slot));
	default:
		return eval_bin(t, x, reg, slot);
	}
}

/* The location a pointer value names in this iteration, or -1. */
int lx_ptr_loc(const struct lt_run *R, char *slot, long v)
{
	unsigned long off = (unsigned long)v - (unsigned long)slot;

	if (off >= R->stride || off % LT_CL)
		return -1;
	return (int)(off / LT_CL);
}

/* Nonzero when an operation of P writes register r. */
static int reg_is_set(const struct lt_proc *P, int r)
{
	int i;

	for (i = 0; i < P->nops; i++)
		if (P->ops[i].dst == r)
			return 1;
	return 0;
}

/* The cell op accesses, or NULL (runtime error) when a register used as
 * the address holds something that is no location of this iteration.
 * A register that the process loaded or computed and that holds 0 is a
 * null dereference (a pointer read before the store that publishes it,
 * in the corpora's RCU and release/acquire tests): such an execution has
 * no final state the test describes, so the access goes to the process's
 * scratch cell, the process runs on, and the tally leaves the iteration
 * out.  A register no operation sets can only hold its initial value:
 * an error of the test, reported. */
static long *cell_of(struct lt_run *R, const struct lt_op *op, const long *reg,
		     char *slot, int pid)
{
	int k = op->loc;

	if (k < 0 && reg[op->areg] == 0 &&
	    reg_is_set(&R->t->proc[pid], op->areg)) {
		size_t i = (size_t)(slot - R->mem) / R->stride;

		/* Relaxed: thread 0 reads it after the batch's rendezvous,
		 * whose release/acquire (meet()) orders it. */
		sk_atomic_store_relaxed(&R->null_hit[i], 1);
		return &R->null_cell[pid].v;
	}
	if (k < 0 && (k = lx_ptr_loc(R, slot, reg[op->areg])) < 0) {
		lx_run_error(R, op->line, "P%d dereferences %s = %ld, which "
			  "points to no location", pid,
			  R->t->proc[pid].reg[op->areg], reg[op->areg]);
		return NULL;
	}
	/* Any location is memory, as in herd7: a spinlock_t is its lock
	 * word, a struct srcu_struct a word that the domain (R->srcu[k],
	 * apart) does not use. */
	return (long *)(slot + (size_t)k * LT_CL);
}

/* ---- memory operations ---------------------------------------------- */

static long do_load(const struct lt_op *op, long *cell)
{
	switch (op->order) {
	case LT_PLAIN:
#ifdef SK__TSAN
		/* TSan would report the test's races as the tool's own. */
		return __atomic_load_n(cell, __ATOMIC_RELAXED);
#else
		return *cell; /* a plain access: no ordering, by design */
#endif
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
	else if (op->order == LT_PLAIN)
#ifdef SK__TSAN
		__atomic_store_n(cell, v, __ATOMIC_RELAXED); /* as do_load */
#else
		*cell = v; /* a plain access: no ordering, by design */
#endif
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
	case LT_RMW_ADD_UNLESS:                                          \
		return add_unless(cell, a, b, ORD);                      \
	default:                                                         \
		return __atomic_fetch_xor(cell, a, ORD);                 \
	}

/* atomic_add_unless(): add a unless the value is b; returns the old
 * value.  A failed attempt is a relaxed load (LKMM: no ordering when
 * nothing is added). */
static inline long add_unless(long *cell, long a, long b, int ord)
{
	long old = __atomic_load_n(cell, __ATOMIC_RELAXED);

	while (old != b &&
	       !__atomic_compare_exchange_n(cell, &old,
					    (long)((unsigned long)old + a), 1,
					    ord, __ATOMIC_RELAXED))
		;
	return old;
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
	if (op->ret_new == 2) /* atomic_add_unless(): whether it added */
		return old != b;
	if (!op->ret_new)
		return old;
	nv = op->rmw == LT_RMW_ADD ? (long)((unsigned long)old + a) :
					 (long)((unsigned long)old - a);
	return op->ret_new == 3 ? nv == 0 : nv; /* 3: atomic_*_and_test() */
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
	case LT_F_MEMB:
		/* smp_memb(): a full barrier on every thread of the run;
		 * pairs with the sk_fence_light() that a test using it
		 * runs after each operation of every process (run_proc). */
		sk_fence_heavy();
		break;
	case LT_F_COMPILER:
		/* barrier(), smp_read_barrier_depends(): the compiler's
		 * order only, pairs with nothing.  A dependent access takes
		 * its address from the register its load wrote, so the
		 * dependency is real on the CPU (no Alpha here). */
		sk_barrier();
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
		run_deadlock(R, op->line, "P%d waits for a grace period inside "
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
		lx_run_error(R, op->line, "P%d: rcu_read_unlock() without "
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
		lx_run_error(R, op->line, "P%d: SRCU sections nested too deeply",
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
		lx_run_error(R, op->line, "P%d: srcu_read_unlock(%s, %ld) matches "
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

static int down_held(struct lt_run *R, int loc, int pid);

static int do_sync_srcu(struct lt_run *R, const struct lt_op *op,
			struct lt_pstate *ps)
{
	int i;

	if (R->t->uses_down && down_held(R, op->loc, ps->pid)) {
		run_deadlock(R, op->line, "P%d: synchronize_srcu(%s) inside "
			     "its own srcu_down_read() section", ps->pid,
			     R->t->loc[op->loc].name);
		return -1;
	}
	for (i = 0; i < ps->nsrcu; i++) {
		if (ps->srcu_loc[i] == op->loc) {
			run_deadlock(R, op->line, "P%d: synchronize_srcu(%s) "
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

/* ---- srcu_down_read() and srcu_up_read() ---------------------------- */

/*
 * srcu_down_read(s): an SRCU section that another process may end (the
 * value travels through memory).  The table of the iteration's open
 * sections is under R->down_lock; the section itself is the library's
 * sk_srcu_read_lock(), whose unlock any thread may call.
 */
static int do_srcu_down(struct lt_run *R, const struct lt_op *op, int pid,
			long *reg)
{
	struct lt_down *d;
	int idx;

	pthread_mutex_lock(&R->down_lock);
	if (R->ndown >= LT_MAX_DOWN) {
		pthread_mutex_unlock(&R->down_lock);
		lx_run_error(R, op->line, "P%d: too many srcu_down_read() "
			     "sections open", pid);
		return -1;
	}
	d = &R->down[R->ndown++];
	d->loc = op->loc;
	d->pid = pid;
	d->idx = idx = sk_srcu_read_lock(R->srcu[op->loc]);
	/* Once unlocked, an up elsewhere may end d and reuse its slot. */
	pthread_mutex_unlock(&R->down_lock);
	if (op->dst >= 0)
		reg[op->dst] = idx;
	return 0;
}

/* Whether process pid opened a section of loc that is still open. */
static int down_held(struct lt_run *R, int loc, int pid)
{
	int k, held = 0;

	pthread_mutex_lock(&R->down_lock);
	for (k = 0; k < R->ndown; k++)
		held |= R->down[k].loc == loc && R->down[k].pid == pid;
	pthread_mutex_unlock(&R->down_lock);
	return held;
}

/* End open section k (R->down_lock held). */
static void down_end(struct lt_run *R, int k)
{
	sk_srcu_read_unlock(R->srcu[R->down[k].loc], R->down[k].idx);
	R->down[k] = R->down[--R->ndown];
}

/*
 * srcu_up_read(s, v): ends the open section of s that returned v.  When v
 * is no such value (the process read the index before the other stored
 * it: herd7 leaves such an up unmatched), it ends the oldest open section
 * of s instead, or, when none is open yet, is owed: the next section of s
 * ends when its process does.  Either way no grace period waits for a
 * section that no up will ever end.
 */
static int do_srcu_up(struct lt_run *R, const struct lt_op *op, long v)
{
	int k, first = -1;

	pthread_mutex_lock(&R->down_lock);
	for (k = 0; k < R->ndown; k++) {
		if (R->down[k].loc != op->loc)
			continue;
		if (R->down[k].idx == v)
			break;
		if (first < 0)
			first = k;
	}
	if (k < R->ndown)
		down_end(R, k);
	else if (first >= 0)
		down_end(R, first);
	else
		R->owed[op->loc]++;
	pthread_mutex_unlock(&R->down_lock);
	return 0;
}

/* The number of processes that run an srcu_up_read() of each domain, as
 * each iteration starts (R->down_lock held, or before the threads). */
void lx_down_reset(struct lt_run *R)
{
	int k;

	for (k = 0; k < LT_MAX_LOCS; k++)
		R->up_running[k] = __builtin_popcount(R->t->up_procs[k]);
	memset(R->owed, 0, sizeof(R->owed));
	R->done = 0;
}

void lx_down_proc_end(struct lt_run *R, int pid)
{
	const struct lt_test *t = R->t;
	int k, loc;

	pthread_mutex_lock(&R->down_lock);
	for (loc = 0; loc < t->nlocs; loc++)
		if (t->up_procs[loc] & (1u << pid))
			R->up_running[loc]--;
	for (k = R->ndown - 1; k >= 0; k--) {
		loc = R->down[k].loc;
		if (R->down[k].pid == pid && R->owed[loc] > 0) {
			R->owed[loc]--;
			down_end(R, k);
		} else if (R->up_running[loc] == 0) {
			/* No process left that could end it (its up was in a
			 * branch not taken): a grace period must not wait
			 * for it forever. */
			down_end(R, k);
		}
	}
	if (++R->done == t->nprocs) { /* the iteration's last process */
		while (R->ndown > 0)
			down_end(R, R->ndown - 1);
		lx_down_reset(R);
	}
	pthread_mutex_unlock(&R->down_lock);
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
		run_deadlock(R, op->line, "P%d: spin_lock(%s) while holding it",
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
				deadline = lx_now_s() + LT_LOCK_TIMEOUT_NS * 1e-9;
			else if (lx_now_s() > deadline) {
				run_deadlock(R, op->line, "P%d: spin_lock(%s) "
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

/* spin_trylock(): one compare-exchange 0 -> 1, acquire when it takes the
 * lock (pairs with the release in spin_unlock(), as spin_lock()); a
 * failed try orders nothing (relaxed), as in LKMM.  Returns 1 if taken;
 * a try of a lock the process holds fails. */
static long do_spin_trylock(struct lt_pstate *ps, const struct lt_op *op,
			    long *cell)
{
	long free_word = 0;

	if ((ps->locks & (1u << op->loc)) ||
	    !__atomic_compare_exchange_n(cell, &free_word, 1L, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	ps->locks |= 1u << op->loc;
	return 1;
}

static int do_spin_unlock(struct lt_run *R, const struct lt_op *op,
			  struct lt_pstate *ps, long *cell)
{
	if (!(ps->locks & (1u << op->loc))) {
		lx_run_error(R, op->line, "P%d: spin_unlock(%s) without "
			  "spin_lock()", ps->pid, R->t->loc[op->loc].name);
		return -1;
	}
	ps->locks &= ~(1u << op->loc);
	/* Release: pairs with the acquire exchange in do_spin_lock(). */
	sk_smp_store_release(cell, 0L);
	return 0;
}

/* A process that ends inside a section or holding a lock: undo, report. */
void lx_end_checks(struct lt_run *R, const struct lt_proc *P,
		       struct lt_pstate *ps, char *slot)
{
	int line = P->nops ? P->ops[P->nops - 1].line : 0, k;

	if (ps->nsrcu && !ps->rcu_nest && !ps->locks &&
	    R->t->expect == LT_FLAG &&
	    strcmp(R->t->flag, "srcu-bad-nesting") == 0)
		/* An SRCU section left open, which herd7 flags and the test
		 * expects ("Result: Flag srcu-bad-nesting"): closed below,
		 * reported as the flag. */
		sk_atomic_store_relaxed(&R->res->flagged, 1);
	else if (ps->rcu_nest || ps->nsrcu || ps->locks)
		lx_run_error(R, line, "P%d ends inside a read section or holding "
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

/* Fences and RCU; returns -1 on a runtime error. */
static int run_rcu_op(struct lt_run *R, const struct lt_op *op,
		      struct lt_pstate *ps)
{
	switch (op->code) {
	case LT_OP_FENCE:
		do_fence(op->order);
		return 0;
	case LT_OP_RCU_LOCK:
		if (ps->rcu_nest >= 100) {
			lx_run_error(R, op->line, "P%d: rcu_read_lock() "
				     "nested too deeply", ps->pid);
			return -1;
		}
		sk_rcu_read_lock();
		ps->rcu_nest++;
		return 0;
	case LT_OP_RCU_UNLOCK:
		return do_rcu_unlock(R, op, ps);
	default:
		return do_sync_rcu(R, op, ps);
	}
}

static int is_srcu_op(int code)
{
	return code == LT_OP_SRCU_LOCK || code == LT_OP_SRCU_UNLOCK ||
	       code == LT_OP_SYNC_SRCU || code == LT_OP_SRCU_DOWN ||
	       code == LT_OP_SRCU_UP;
}

/* Memory and synchronization operations; returns -1 on a runtime error. */
int lx_run_op(struct lt_run *R, const struct lt_op *op, struct lt_pstate *ps,
	      long *reg, char *slot)
{
	const struct lt_test *t = R->t;
	long *cell = NULL, a = 0, b = 0;

	if (op->code == LT_OP_FENCE || op->code == LT_OP_RCU_LOCK ||
	    op->code == LT_OP_RCU_UNLOCK || op->code == LT_OP_SYNC_RCU)
		return run_rcu_op(R, op, ps);
	if ((op->loc >= 0 || op->areg >= 0) && !is_srcu_op(op->code) &&
	    !(cell = cell_of(R, op, reg, slot, ps->pid)))
		return -1;
	if (op->a >= 0)
		a = lx_eval(t, op->a, reg, slot);
	if (op->b >= 0)
		b = lx_eval(t, op->b, reg, slot);
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
	case LT_OP_SRCU_DOWN:
		return do_srcu_down(R, op, ps->pid, reg);
	case LT_OP_SRCU_UP:
		return do_srcu_up(R, op, a);
	case LT_OP_SPIN_LOCK:
		return do_spin_lock(R, op, ps, cell);
	case LT_OP_SPIN_TRYLOCK:
		a = do_spin_trylock(ps, op, cell);
		if (op->dst >= 0)
			reg[op->dst] = a;
		return 0;
	case LT_OP_SPIN_IS_LOCKED:
		/* A relaxed load of the lock word (LKMM's spin_is_locked()
		 * orders nothing by itself). */
		if (op->dst >= 0)
			reg[op->dst] = SK_READ_ONCE(*cell) != 0;
		return 0;
	default:
		return do_spin_unlock(R, op, ps, cell);
	}
}
