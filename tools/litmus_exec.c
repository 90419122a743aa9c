/* SPDX-License-Identifier: MIT */
/*
 * The executor of `scalekit litmus`: an interpreter over the pre-decoded
 * operations of each process (the operations themselves: litmus_ops.c).
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
#include "litmus_exec.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

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

static void run_proc(struct lt_ctx *c, int pid, char *slot, long *reg)
{
	struct lt_run *R = c->R;
	const struct lt_proc *P = &R->t->proc[pid];
	struct lt_pstate ps = { .pid = pid };
	int pc = 0, stall_at = -1, rc = 0, k;
	unsigned int stall_len = 0;

	memcpy(reg, P->reg_init, sizeof(P->reg_init));
	for (k = 0; k < P->nregs; k++) /* "0:r1=x": the address of x */
		if (P->reg_init_ptr[k])
			reg[k] = (long)(slot + P->reg_init[k] * LT_CL);
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
			reg[op->dst] = lx_eval(R->t, op->a, reg, slot);
			break;
		case LT_OP_JZ:
			if (!lx_eval(R->t, op->a, reg, slot))
				pc = op->target;
			break;
		case LT_OP_JMP:
			pc = op->target;
			break;
		default:
			rc = lx_run_op(R, op, &ps, reg, slot);
		}
		/* A test with smp_memb(): the light side of the pair after
		 * every operation (pairs with sk_fence_heavy() in the
		 * process that runs smp_memb()). */
		if (R->t->uses_memb)
			sk_fence_light();
	}
	lx_end_checks(R, P, &ps, slot);
	if (R->t->uses_down)
		lx_down_proc_end(R, pid);
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
	case LT_C_EQ_OBS:
		return val[x->obs] == val[x->obs2];
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

	double spent = lx_now_s() - R->start;

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

		sk_atomic_store_relaxed(&R->null_hit[i], 0);
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

		/* A null dereference (see cell_of()): no final state. */
		if (sk_atomic_load_relaxed(&R->null_hit[i])) {
			R->res->null_deref++;
			continue;
		}
		for (j = 0; j < t->nobs; j++) {
			const struct lt_obs *o = &t->obs[j];
			long v = o->proc >= 0 ?
				regs[o->proc * LT_MAX_REGS + o->idx] :
				sk_atomic_load_relaxed(
					(long *)(slot + o->idx * LT_CL));
			int k = lx_ptr_loc(R, slot, v);

			val[j] = k >= 0 ? LT_PTR_TAG + k : v;
		}
		/* filter: herd7 drops the states it rejects from the count */
		if (t->filter_root >= 0 &&
		    !lt_cond_eval(t, t->filter_root, val)) {
			R->res->filtered++;
			continue;
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
			lx_run_error(R, 0, "cannot register an RCU reader thread");
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
		/* A batch that hit a runtime error (a deadlock the test
		 * expects, say) has iterations cut short: not counted. */
		if (c->me == 0 && !sk_atomic_load_relaxed(&R->abort))
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
	/* srcu_down_read(): the library counts the section as its thread's
	 * until an up ends it, and aborts a grace period that the thread
	 * would wait for itself: one thread per process. */
	if (t->uses_down)
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
	pthread_mutex_destroy(&R->down_lock);
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
	pthread_mutex_init(&R.down_lock, NULL);
	lx_down_reset(&R);
	if (setup(&R) != 0) {
		teardown(&R);
		snprintf(res->error, LT_ERR, "%s: out of memory", t->file);
		return -1;
	}
	res->threads = R.T;
	R.start = lx_now_s();
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
	res->elapsed = lx_now_s() - R.start;
	if (have_mask)
		sched_setaffinity(0, sizeof(mask), &mask);
	teardown(&R);
	return res->error[0] ? -1 : 0;
}
