/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU RCU callback workers: sk_rcu_cb_workers_create(), _destroy()
 * and _running().  The queues, the worker loop and sk_call_rcu() are in
 * src/rcu_cb.c; what both files share: src/internal/rcu_cb.h.
 *
 * One more queue per CPU, with several producers, in the list of queues
 * of rcu_cb.c; each queue names the worker that drains it (q->w: the
 * default worker, or the per-CPU worker of its CPU), and every worker
 * runs the same loop over its own queues.  sk_call_rcu() picks the queue
 * of sched_getcpu() while the mode word pc->on is set.  A queue is taken
 * by a worker only when no other worker still runs a batch of it (busy),
 * so it keeps one consumer and its order when it changes hands (destroy
 * hands the per-CPU queues to the default worker).
 *
 * Labels placed here: CB-R2, CB-R3, CB-D1; their legend, with the
 * partners and litmus tests, is in internal/rcu_cb.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "internal/rcu.h"
#include "internal/rcu_cb.h"

/* sk__rcu_cb_pcpu is defined in rcu_cb.c, whose sk_call_rcu() reads pc->on. */
static struct sk__rcu_cb_pcpu *const pc = &sk__rcu_cb_pcpu;

/* Allocate pc->slot on first use.  pc->lock held.  Returns 0 or -ENOMEM. */
static int slots_alloc(void)
{
	long n;

	if (pc->slot)
		return 0;
	n = sk__rcu_cb_ncpu();
	pc->slot = aligned_alloc(SK_CACHELINE, sizeof(*pc->slot) * (size_t)n);
	if (!pc->slot)
		return -ENOMEM;
	memset(pc->slot, 0, sizeof(*pc->slot) * (size_t)n);
	/* CB-R3: the slots before ncpu; pairs with the acquire in
	 * fork_lock(). */
	sk_atomic_store_release(&pc->ncpu, (int)n);
	return 0;
}

/* Stop and join the per-CPU worker of s.  pc->lock held. */
static void slot_stop(struct sk__rcu_cb_cpu *s)
{
	if (!s->running)
		return;
	sk__worker_stop(&s->w);
	sk_atomic_store_relaxed(&s->running, 0);
}

/*
 * Point every slot's queue at its worker (or at the default worker when
 * it has none), adding the queues to the list of queues the first time.
 * pc->lock held.
 */
static void slots_attach(int to_default)
{
	struct sk__worker *w0 = sk__rcu_cb_default_worker();
	int i;

	sk__rcu_cb_lock();
	for (i = 0; i < pc->ncpu; i++) {
		struct sk__rcu_cb_cpu *s = &pc->slot[i];

		if (!pc->listed)
			sk__rcu_cb_add_cpu_queue(&s->q);
		sk_atomic_store_relaxed(&s->q.w, (!to_default && s->running)
							 ? &s->w : w0);
	}
	pc->listed = 1;
	sk__rcu_cb_unlock();
}

/* Start a worker for each CPU the caller may run on.  pc->lock held. */
static int slots_start(unsigned flags)
{
	cpu_set_t allowed;
	int i, err;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return -errno;
	for (i = 0; i < pc->ncpu; i++) {
		struct sk__rcu_cb_cpu *s = &pc->slot[i];

		if (!CPU_ISSET(i, &allowed))
			continue;
		err = sk__rcu_cb_worker_start(
			&s->w, i,
			(flags & SK_RCU_CB_WORKERS_UNPINNED) ? 0 : SK__WK_PIN,
			"sk-rcu-cb");
		if (err == -EINVAL && !(flags & SK_RCU_CB_WORKERS_UNPINNED))
			continue; /* the CPU went away meanwhile */
		if (err)
			return err;
		sk_atomic_store_relaxed(&s->running, 1);
	}
	return 0;
}

static int workers_create(unsigned flags)
{
	int err, i;

	/* The default worker runs before any slot. */
	err = sk__rcu_cb_worker_ensure();
	if (err)
		return err;
	pthread_mutex_lock(&pc->lock);
	err = pc->on ? -EEXIST : slots_alloc();
	if (!err)
		err = slots_start(flags);
	if (err) {
		for (i = 0; i < pc->ncpu && err != -EEXIST; i++)
			slot_stop(&pc->slot[i]);
	} else {
		slots_attach(0);
		/* CB-R2: the slots before on; pairs with the acquire in
		 * sk__rcu_cb_cpu_queue(). */
		sk_atomic_store_release(&pc->on, 1);
	}
	pthread_mutex_unlock(&pc->lock);
	return err;
}

static int workers_destroy(void)
{
	int i;

	pthread_mutex_lock(&pc->lock);
	if (!pc->on) {
		pthread_mutex_unlock(&pc->lock);
		return -ENOENT;
	}
	sk_atomic_store_relaxed(&pc->on, 0);
	slots_attach(1);
	/* CB-D1: the queues handed over before the kick; pairs with CB-P1. */
	sk_smp_mb();
	for (i = 0; i < pc->ncpu; i++)
		slot_stop(&pc->slot[i]);
	/* Whatever the stopped workers left, or producers pushed since. */
	sk__worker_wake(sk__rcu_cb_default_worker(), SK__WK_KICK_URGENT);
	pthread_mutex_unlock(&pc->lock);
	return 0;
}

/*
 * Create (destroy 0) or destroy (1) outside the read side.  Both may wait
 * for a worker's batch (destroy: each worker's; create: a concurrent
 * destroy's, for pc->lock), and a batch waits for a grace period: -EDEADLK
 * from a callback (its own batch) or inside a read section (the grace
 * period waits for the caller); an online QSBR thread goes offline for
 * the call.
 */
static int workers_change(int destroy, unsigned flags)
{
	int err, was_online;

	if (sk__rcu_cb_in_worker)
		return -EDEADLK;
	was_online = sk__rcu_try_enter_wait();
	if (was_online < 0)
		return -EDEADLK;
	err = destroy ? workers_destroy() : workers_create(flags);
	if (was_online)
		sk_rcu_thread_online();
	return err;
}

int sk_rcu_cb_workers_create(unsigned flags)
{
	if (flags & ~(unsigned)SK_RCU_CB_WORKERS_UNPINNED)
		return -EINVAL;
	return workers_change(0, flags);
}

int sk_rcu_cb_workers_destroy(void)
{
	return workers_change(1, 0);
}

/*
 * No lock: a callback may ask while a destroy holds pc->lock and waits for
 * the callback's worker.
 */
int sk_rcu_cb_workers_running(void)
{
	int i, n = 0;

	/* Acquire pairs with CB-R2: pc->slot and pc->ncpu are set. */
	if (!sk_atomic_load_acquire(&pc->on))
		return 0;
	for (i = 0; i < pc->ncpu; i++)
		n += sk_atomic_load_relaxed(&pc->slot[i].running);
	return n;
}

/*
 * fork() prepare (lock = 1) and parent (lock = 0) handlers: take or
 * release the run_lock of every per-CPU worker, so that none is in the
 * middle of a batch at the fork.  Before rcu_cb.c's prepare handler and
 * after its parent handler (src/rcu.c calls the parts in that order).
 */
static void fork_lock(int lock)
{
	/*
	 * Not pc->lock: a destroy holds it while it joins workers, which
	 * may wait for a grace period that waits for the forking thread.
	 * CB-R3: acquire; the slots are allocated.  A slot whose worker a
	 * concurrent create starts after this look has no queue yet (its
	 * attach needs cb.lock, which the prepare handler takes next).
	 */
	int i, n = sk_atomic_load_acquire(&pc->ncpu);

	for (i = 0; i < n; i++) {
		if (lock)
			pthread_mutex_lock(&pc->slot[i].w.run_lock);
		else
			pthread_mutex_unlock(&pc->slot[i].w.run_lock);
	}
}

static void fork_prepare(void)
{
	fork_lock(1);
}

static void fork_parent(void)
{
	fork_lock(0);
}

/* fork() child: no per-CPU worker runs; their queues stay listed. */
static void fork_child(void)
{
	/*
	 * No per-CPU worker runs in the child: rcu_cb.c's child handler
	 * (called before this one, by src/rcu.c) handed their queues
	 * to the default worker (they stay listed, so a later create there
	 * attaches them again).  pc->lock may have been held by a create or
	 * destroy in another thread.
	 */
	pthread_mutex_init(&pc->lock, NULL);
	pc->on = 0;
	for (int i = 0; i < pc->ncpu; i++) {
		struct sk__rcu_cb_cpu *s = &pc->slot[i];

		/* Locked by this thread in the prepare handler, or free. */
		pthread_mutex_init(&s->w.run_lock, NULL);
		sk__worker_fork_child(&s->w);
		s->running = 0;
	}
}

/* What src/rcu.c's fork handlers call here (the statistics: rcu_cb.c's). */
static const struct sk__rcu_part pcpu_part = {
	.fork_prepare = fork_prepare,
	.fork_parent = fork_parent,
	.fork_child = fork_child,
};

__attribute__((constructor)) static void pcpu_init(void)
{
	sk__rcu_register_part(SK__RCU_PART_CB_PCPU, &pcpu_part);
}
