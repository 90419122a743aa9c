/* SPDX-License-Identifier: MIT */
/*
 * RCU callbacks, shared by src/rcu_cb.c (queues, the worker loop,
 * sk_call_rcu(), sk_rcu_barrier(), polled starts, fork),
 * src/rcu_cb_pcpu.c (the per-CPU workers) and src/rcu_cb_own.c (the
 * program's own workers).  rcu_cb.c and rcu_cb_pcpu.c register their fork
 * handlers (and rcu_cb.c its statistics) with src/rcu.c, a lower file,
 * whose handlers call them (struct sk__rcu_part, internal/rcu.h);
 * rcu_cb_own.c registers its own with pthread_atfork() at its first
 * create.  Never installed.
 *
 * Barrier pairs of RCU callbacks, the legend of the CB-* labels of
 * src/rcu_cb.c, src/rcu_cb_pcpu.c and src/rcu_cb_auto.c (those of the
 * queue itself, CB-C1 and CB-C2/CB-C2', are in internal/cbq.h; partners
 * in brackets):
 *   CB-P1 (producer, mb)  - after the CB-C1 push onto a per-CPU queue,
 *                           before the load of q->w [CB-D1 in
 *                           rcu_cb_pcpu.c; store buffering]: either the
 *                           load sees the default worker, or the
 *                           destroy's kick of it comes after the push.
 *   CB-I1 (worker, release) - q->invoked stored after the callbacks it
 *                           counts ran [the acquire loads of invoked in
 *                           sk_rcu_barrier()'s barrier_push(), the orphan
 *                           reaper and the statistics].
 *   CB-B1 (worker, release) - a barrier's done flag, set by the last of
 *                           its marker callbacks [the acquire in
 *                           sk_rcu_barrier()'s wait]: every callback run
 *                           before a marker happens before the return.
 *   CB-R2 (create, release) - the slots and ncpu before pc->on [the
 *                           acquire in sk__rcu_cb_cpu_queue(), below].
 *   CB-R3 (alloc, release) - the zeroed slots before ncpu [the acquire
 *                           in rcu_cb_pcpu.c's fork_lock(), which runs
 *                           without pc->lock].
 *   CB-A1 (alloc, release) - rcu_cb_auto.c: the automatic workers'
 *                           zeroed slots before ncpu [the acquires in
 *                           sk__rcu_cb_auto_worker()'s fast path and the
 *                           fork handlers, which run without au.lock].
 *   CB-D1 (destroy, mb)   - (sk_rcu_cb_workers_destroy() in rcu_cb_pcpu.c,
 *                           sk_rcu_cb_worker_destroy() in rcu_cb_own.c)
 *                           q->w = the default worker before its kick
 *                           [CB-P1 in rcu_cb.c's queue_kick(): a
 *                           producer's push before its load of q->w;
 *                           store buffering]: a producer that still saw
 *                           the old worker pushed before the kick, so
 *                           the default worker's re-check (WK-W2) sees
 *                           the callback.
 *   Used from elsewhere: CB-C1 (producer, xchg) and CB-C2/CB-C2'
 *   (release/acquire), the push and the worker's walk [internal/cbq.h]:
 *   the caller's accesses before sk_call_rcu() happen before the
 *   callback.  WK-W1/WK-W2 (the worker's sleep) against WK-K1/WK-K2 (the
 *   kicks: a push, the poll_req CAS, a barrier push, a stop request,
 *   which is a store before an urgent kick in sk__worker_stop()), and
 *   WK-K3 before the take [internal/worker.h].  The full barrier at the
 *   start of sk__rcu_snap() [rcu_gp.c, RCU-S1] orders the take, and so
 *   every push it saw, before the grace period the batch waits for.
 *   Litmus tests (litmus/, see docs/litmus.md): CB-C2/CB-C2', CB-I1,
 *   CB-B1, CB-R2, CB-R3 - MP+rel+acq.litmus; CB-C1, CB-P1/CB-D1 -
 *   SB+xchg+mb.litmus and SB+mbs.litmus.  Not covered: the callback
 *   itself (the format has no call_rcu()); the grace period a callback
 *   waits for is the one of rcu-deferred-free.litmus.
 */
#ifndef SCALEKIT_INTERNAL_RCU_CB_H
#define SCALEKIT_INTERNAL_RCU_CB_H

#include <pthread.h>
#include <sched.h>

#include "internal/cbq.h"
#include "internal/util.h"
#include "internal/worker.h"

struct sk_rcu_barrier_state;

/*
 * The callback queue of one producer: a thread (allocated on its first
 * callback, freed once drained after it exited), a CPU (per-CPU workers),
 * or the shared fallback.  The list itself is a struct sk__wfq
 * (internal/cbq.h); around it, the counts, the batch the worker took and
 * the worker that drains it.
 */
struct sk__rcu_cb_queue {
	/* The list: tail written by producers, head.next_ by the worker. */
	struct sk__wfq wfq __attribute__((aligned(SK_CACHELINE)));
	unsigned long queued; /* callbacks accepted (barrier heads excluded) */
	/*
	 * The worker that drains the queue: written under the queue list's
	 * lock, read by workers under it and by producers without it
	 * (relaxed, after the full barrier CB-P1).  Changes only for per-CPU
	 * queues (pcpu), between their worker and the default worker.
	 */
	struct sk__worker *w;
	int pcpu; /* a per-CPU queue: its worker may change */
	/*
	 * A thread's queue: the CPU whose automatic worker drains it, -1 for
	 * the default worker (rcu_cb_auto.c).  Written with w, under the
	 * list lock, by the owner thread only (and the fork child handler),
	 * so the owner reads both without the lock.
	 */
	int acpu;

	/* Consumer side: the worker. */
	unsigned long invoked __attribute__((aligned(SK_CACHELINE)));
	struct sk_rcu_head *b_first, *b_last;  /* batch taken, not yet run */
	struct sk__rcu_cb_queue *b_next;       /* next queue with a batch */
	int busy; /* a worker owns a batch (list lock) */

	/* Guarded by the queue list's lock. */
	struct sk__link link; /* in the list of queues */
	int orphan;	      /* owner thread exited */
	int shared;	      /* several producers: count atomically */

	/* sk_rcu_barrier() (serialized by its lock). */
	struct sk_rcu_head bhead;
	struct sk_rcu_barrier_state *barrier;
};

/*
 * One CPU's queue and worker (sk_rcu_cb_workers_create()).  The slots are
 * allocated on the first create and never freed: a producer that read
 * on == 1 may still push onto a slot's queue after a destroy, which then
 * hands the queue to the default worker.
 */
struct sk__rcu_cb_cpu {
	struct sk__rcu_cb_queue q;
	struct sk__worker w;
	int running; /* w's thread exists (written under lock) */
};

/*
 * The per-CPU workers' state (rcu_cb_pcpu.c; defined in rcu_cb.c, which
 * reads on in sk__rcu_cb_cpu_queue()).  Guarded by lock, except on
 * (acquire/release CB-R2: slot and ncpu are set before it) and what
 * struct sk__rcu_cb_queue says of its fields.
 */
struct sk__rcu_cb_pcpu {
	pthread_mutex_t lock;	     /* create/destroy */
	struct sk__rcu_cb_cpu *slot; /* ncpu slots, one per configured CPU */
	int ncpu;
	int listed; /* the slots' queues are in the list of queues */
	int on;	    /* producers use the slots' queues */
};
extern struct sk__rcu_cb_pcpu sk__rcu_cb_pcpu;

/*
 * The queue of the CPU the caller runs on while per-CPU workers run, else
 * NULL.  The acquire pairs with CB-R2 in sk_rcu_cb_workers_create().
 */
static inline struct sk__rcu_cb_queue *sk__rcu_cb_cpu_queue(void)
{
	if (SK_UNLIKELY(sk_atomic_load_acquire(&sk__rcu_cb_pcpu.on))) {
		int cpu = sched_getcpu();

		if (cpu >= 0 && cpu < sk__rcu_cb_pcpu.ncpu)
			return &sk__rcu_cb_pcpu.slot[cpu].q;
	}
	return NULL;
}

/* ---- rcu_cb.c, for rcu_cb_pcpu.c ---- */

/* Nonzero on an RCU callback worker thread. */
extern __thread int sk__rcu_cb_in_worker
	__attribute__((tls_model("initial-exec")));
/*
 * The number of per-CPU slots to allocate: the configured CPUs, 1 ..
 * CPU_SETSIZE (per-CPU and automatic workers index them by CPU number).
 * In rcu_cb_auto.c, the lowest file that needs it.
 */
long sk__rcu_cb_ncpu(void);
/* Start the default worker if needed.  Returns 0 or -errno. */
int sk__rcu_cb_worker_ensure(void);

/*
 * sk_call_rcu()'s start of the default worker, also for modules whose
 * queued work may wait for it (rhash): as sk__rcu_cb_worker_ensure(), but
 * after a failed start the next attempt waits at least 1 ms, so that a
 * flood of calls does not make a failing pthread_create() each.  The
 * callbacks queued meanwhile wait for a later start, or for
 * sk_rcu_barrier(), which runs them itself when it cannot start the
 * worker.  A load when the worker runs.  Never blocks but on the start.
 */
void sk__rcu_cb_start_worker(void);
/* Start a callback worker named name on w (sk__worker_start()). */
int sk__rcu_cb_worker_start(struct sk__worker *w, int cpu, unsigned flags,
			    const char *name);
/* The default worker (started by sk__rcu_cb_worker_ensure()). */
struct sk__worker *sk__rcu_cb_default_worker(void);
/* Take and release the lock of the list of queues. */
void sk__rcu_cb_lock(void);
void sk__rcu_cb_unlock(void);
/*
 * Set up q as an empty per-CPU queue of the default worker and add it to
 * the list of queues.  List lock held.
 */
void sk__rcu_cb_add_cpu_queue(struct sk__rcu_cb_queue *q);
/*
 * sk_call_rcu() onto queue q (a per-CPU or an own worker's queue, whose
 * worker may change), or onto the caller's queue when q is NULL.
 */
int sk__rcu_cb_enqueue(struct sk__rcu_cb_queue *q, struct sk_rcu_head *head,
		       void (*fn)(struct sk_rcu_head *));

/*
 * Fork handlers of the files above rcu_cb.c (src/layers.txt) whose locks
 * a callback may need: rcu_cb_own.c's (a callback may create an own
 * worker) and rcu_defer.c's (a callback may defer a call).  Each
 * registers them from its constructor; rcu_cb.c's handlers call them
 * between the workers' run_locks and the list lock (see
 * cb_fork_prepare()), so that those locks are never held while a
 * callback's batch is waited for.  Prepare in this order, parent and
 * child in the reverse.
 */
struct sk__rcu_part;
enum { SK__RCU_CB_UPPER_OWN, SK__RCU_CB_UPPER_DEFER, SK__RCU_CB_NUPPER };
void sk__rcu_cb_register_upper(int which, const struct sk__rcu_part *p);

/* ---- rcu_cb_auto.c, for rcu_cb.c ---- */

/*
 * The automatic worker of cpu, started (pinned there, running loop:
 * rcu_cb.c's worker loop) if it does not run yet; NULL when it cannot
 * run: no memory, a failed start (then no new attempt for 1 ms), cpu out
 * of range.  A load when it runs.  Any thread but a callback worker.
 */
struct sk__worker *sk__rcu_cb_auto_worker(int cpu, sk__worker_loop_fn *loop);
/* rcu_cb.c's fork handlers call these (lock order: see rcu_cb_auto.c). */
void sk__rcu_cb_auto_fork_prepare(void);
void sk__rcu_cb_auto_fork_parent(void);
void sk__rcu_cb_auto_fork_child(void);
/*
 * Testing build only (SK_TESTING): the next n allocations of the slots
 * fail as with ENOMEM (n = 0 also ends the back-off of the failures so
 * far); the number of automatic workers running.
 */
void sk__rcu_cb_auto_test_fail_allocs(int n);
int sk__rcu_cb_auto_running(void);
/*
 * A broken mode of sk__rcu_cb_set_busted() (testing build), beside those
 * of internal/testing.h: a thread that moves to another CPU's automatic
 * worker gets a new queue there instead of handing its queue over (the
 * naive per-CPU design), so its callbacks before and after the move may
 * run out of order.  test_rcu_cb_auto must catch it.  (The automatic
 * workers also obey SK__CB_BUSTED_NO_GP, and SK__CB_BUSTED_BARRIER skips
 * their queues too.)
 */
#define SK__CB_BUSTED_AUTO_SPLIT 4
/*
 * Another (testing build): a thread whose callback went to the shared
 * fallback queue (its own queue could not be allocated) takes its own
 * queue at the next call that can allocate one, even while its callbacks
 * on the fallback have not run (the code before the fix), so callbacks
 * queued before and after may run out of order.  test_rcu_cb_auto must
 * catch it.
 */
#define SK__CB_BUSTED_FALLBACK_LEAVE 8
/*
 * Testing build only: the next n allocations of a thread's own callback
 * queue (queue_get() in rcu_cb.c) fail as with ENOMEM.
 */
void sk__rcu_cb_test_fail_queue_allocs(int n);

#endif /* SCALEKIT_INTERNAL_RCU_CB_H */
