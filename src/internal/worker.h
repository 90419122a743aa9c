/* SPDX-License-Identifier: MIT */
/*
 * The callback worker threads of RCU (src/rcu_cb.c, src/rcu_cb_pcpu.c)
 * and SRCU (src/srcu_cb.c): one mechanism for starting, naming, putting
 * to sleep, kicking, stopping and fork-resetting them (src/worker.c).
 * What a worker does between two sleeps is its module's loop.
 *
 * Sleep and kick, the legend of the WK-* labels of the worker protocol
 * (placed in src/worker.c, but WK-K1 and WK-K2, which the inline
 * sk__worker_wake() below places in the kicker).  The worker's sleep and
 * the kicks that end it are store buffering: each side stores, then
 * loads what the other stored; tests/models/cb_wake.pml checks it, and
 * its broken twins, under a weak memory model:
 *   WK-W1 (worker, xchg)  - sleeping = state, before the re-check.
 *   WK-W2 (worker, mb)    - full barrier: WK-W1 before the re-check's
 *                           loads (the module's work: queues, poll
 *                           requests, stop, urgent); pairs with WK-K2.
 *   WK-K1 (kicker, xchg)  - urgent = 1 (urgent kicks only), before the
 *                           load of sleeping: a worker that announces a
 *                           lazy sleep after that load sees it.
 *   WK-K2 (kicker, mb)    - full barrier: the request (a CB-C1 push, a
 *                           poll request's CAS, WK-K1, a stop store)
 *                           before the load of sleeping; pairs with
 *                           WK-W2.  Either the kicker sees the sleep
 *                           announced and wakes the worker, or the
 *                           worker's re-check sees the request.
 *   WK-K3 (worker, xchg)  - urgent = 0 before the loop looks for work.  A
 *                           kick whose WK-K1 it reads has its request
 *                           (made before WK-K1) seen by the look; a later
 *                           WK-K1 leaves urgent set for the next round.  A
 *                           plain store could land after a WK-K1 whose
 *                           request the look missed, and the worker would
 *                           then sleep through it.
 *   WK-S  (ensure, release) - started = 1 after the start; pairs with the
 *                           acquire in sk__worker_ensure()'s fast path.
 * A seq_cst RMW is no full barrier for a later relaxed load in C11 (nor
 * on ARMv8.0: LDAXR/STLXR, then LDR), hence WK-W2 and WK-K2; on x86 the
 * locked instruction is one, and they only stop the compiler.
 * Litmus tests (litmus/, see docs/litmus.md): WK-W1/WK-W2, WK-K1/WK-K2,
 * WK-K3 - SB+xchg+mb.litmus and SB+mbs.litmus; WK-S - MP+rel+acq.litmus.
 *
 * A request is whatever the worker's re-check reads: a push onto a
 * callback queue (CB-C1 of internal/cbq.h), a poll request, a stop
 * request, or (SRCU) the urgent flag itself.
 */
#ifndef SCALEKIT_INTERNAL_WORKER_H
#define SCALEKIT_INTERNAL_WORKER_H

#include <pthread.h>
#include <stdint.h>

#include "internal/util.h"

/*
 * Callback thresholds, the same for RCU and SRCU.  Backlog: callbacks
 * queued and not yet run (RCU: of the queues a worker takes in one batch;
 * SRCU: of one domain).
 *   SK__CB_BACKLOG_EXPEDITE: beyond it the worker expedites the grace
 *   period its batch waits for.
 *   SK__CB_THROTTLE: beyond it (RCU: the producer's own queue) a producer
 *   yields the CPU to the worker once per call, so that a flood cannot
 *   outrun the worker (forward progress, bounded memory).
 */
#define SK__CB_BACKLOG_EXPEDITE 10000UL
#define SK__CB_THROTTLE (1UL << 18)

/* w->sleeping: awake, or asleep until kicked (idle) or kicked urgently
 * or timed out (lazy), or until kicked urgently or timed out, a backlog
 * kick included (handover: RCU's wait for a queue whose batch another
 * worker runs, src/rcu_cb.c). */
enum { SK__WK_AWAKE, SK__WK_IDLE, SK__WK_LAZY, SK__WK_HANDOVER };

/*
 * Kinds of kick (sk__worker_wake()): IDLE ends an idle sleep only;
 * BACKLOG also a lazy one, as a hint (urgent set without ordering);
 * URGENT ends or prevents either for sure (WK-K1).
 */
enum { SK__WK_KICK_IDLE, SK__WK_KICK_BACKLOG, SK__WK_KICK_URGENT };

struct sk__worker;
typedef void sk__worker_loop_fn(struct sk__worker *w);

/*
 * A worker.  The words of the sleep protocol are on their own cache line;
 * zeroed storage with cpu = -1 is a worker that has not started.
 */
struct sk__worker {
	int sleeping __attribute__((aligned(SK_CACHELINE))); /* futex, SK__WK_* */
	int urgent;   /* a kick the loop has not consumed (WK-K1/WK-K3) */
	int invoking; /* runs callbacks (relaxed: a hint for producers,
			 orders nothing) */
	int stop;     /* exit the loop (sk__worker_stop()) */
	int started;  /* sk__worker_ensure(): acquire/release */
	int cpu;      /* its CPU (pinned there or not), -1: none */
	/*
	 * Held by whoever runs callbacks for this worker (the worker, or a
	 * thread that runs its work because it cannot start), from the first
	 * callback of a round to the bookkeeping after the last: the
	 * module's fork prepare handler takes it, so that no fork() happens
	 * in the middle of a batch.  Zeroed storage is an unlocked mutex
	 * (glibc, musl: PTHREAD_MUTEX_INITIALIZER is all zero bits).
	 */
	pthread_mutex_t run_lock;
	pthread_t thread;
	sk__worker_loop_fn *loop; /* the module's loop (runs until stop) */
	const char *name;	  /* thread name; "/<cpu>" appended */
};

/* Flags of sk__worker_start(). */
#define SK__WK_PIN 1u /* pinned to its CPU */

/*
 * Start w's thread running loop(w), named name (plus "/<cpu>" when cpu >=
 * 0), pinned to cpu when flags has SK__WK_PIN, with every signal blocked
 * (it takes no signal meant for the application).  Resets the sleep words
 * and stop first.  Joinable: sk__worker_stop() joins it.
 * Returns 0, or the error of pthread_attr_setaffinity_np() or
 * pthread_create(), negated: -EAGAIN when the system lacks the resources
 * for a thread, -EINVAL when cpu is not a CPU the thread may run on (with
 * SK__WK_PIN), -EPERM when not permitted.  Nothing runs then.
 */
int sk__worker_start(struct sk__worker *w, const char *name,
		     sk__worker_loop_fn *loop, int cpu, unsigned flags);

/*
 * Start w (unpinned, detached) unless it runs already; w->started is
 * read with acquire, and set with release after the start under lock (the
 * module's lock, which its fork handlers hold across fork()).  Returns 0,
 * or the error of sk__worker_start(): a later call tries again.
 */
int sk__worker_ensure(struct sk__worker *w, pthread_mutex_t *lock,
		      const char *name, sk__worker_loop_fn *loop);

/* The slow path of sk__worker_wake(): w sleeps in state st; wake it. */
void sk__worker_wake_sleeper(struct sk__worker *w, int st);

/*
 * Kick w as kick says (SK__WK_KICK_*).  The caller has just made its
 * request with an atomic read-modify-write, or with a store followed by a
 * full barrier.  Never blocks; any thread.  Inline: sk_call_rcu() and
 * sk_call_srcu() kick on every call, and an awake worker costs a load.
 */
static inline void sk__worker_wake(struct sk__worker *w, int kick)
{
	int st;

	if (kick == SK__WK_KICK_URGENT)
		/* WK-K1: urgent before the load of sleeping. */
		sk_atomic_xchg_seq_cst(&w->urgent, 1);
	else if (kick == SK__WK_KICK_BACKLOG &&
		 !sk_atomic_load_relaxed(&w->urgent))
		/* A hint, unordered: no locked instruction per call. */
		sk_atomic_store_relaxed(&w->urgent, 1);
	/* WK-K2: the request and WK-K1 before the load; pairs with WK-W2. */
	sk_smp_mb__after_atomic();
	st = sk_atomic_load_relaxed(&w->sleeping);
	if (st == SK__WK_AWAKE ||
	    (st == SK__WK_LAZY && kick == SK__WK_KICK_IDLE) ||
	    (st == SK__WK_HANDOVER && kick != SK__WK_KICK_URGENT))
		return;
	sk__worker_wake_sleeper(w, st);
}

/*
 * Worker side: consume the kicks (WK-K3) before looking for work.
 * Returns nonzero when an urgent kick was pending.
 */
int sk__worker_take_kicks(struct sk__worker *w);

/*
 * Worker side: sleep in state st (SK__WK_IDLE or SK__WK_LAZY) unless
 * kicked meanwhile.  Announces the sleep (WK-W1, WK-W2), then calls
 * idle(w, &timeout_ns): nonzero means nothing to do, and the worker
 * sleeps until kicked or until *timeout_ns (0: no timeout) has passed.
 */
void sk__worker_sleep(struct sk__worker *w, int st, uint64_t timeout_ns,
		      int (*idle)(struct sk__worker *w, uint64_t *timeout_ns));

/*
 * Stop w between two rounds of its loop (the stop request, then an
 * urgent kick) and join it.  Blocks until the loop returns; not from w.
 */
void sk__worker_stop(struct sk__worker *w);

/*
 * fork() child: w does not run there.  Resets it as never started.  The
 * caller holds what guards w's start (the prepare handler took it).
 */
void sk__worker_fork_child(struct sk__worker *w);

/* Its test hook, sk__worker_test_fail_starts(): internal/testing.h. */

#endif /* SCALEKIT_INTERNAL_WORKER_H */
