/* SPDX-License-Identifier: MIT */
/*
 * Automatic per-CPU callback workers: the default sk_call_rcu() path,
 * with no set-up call.  A thread whose own queue has a backlog (callbacks
 * flow: more than CB_AUTO_MIN pending, see src/rcu_cb.c) hands its queue
 * to the worker of the CPU it runs on, which this file starts on first
 * use, pinned to that CPU, so that the callbacks run (and free() what the
 * thread malloc()ed) where the thread runs.  The queue stays the thread's
 * own: the callbacks of one thread keep their order, whichever worker
 * drains them (rcu_cb.c's busy flag: one consumer at a time).
 *
 * A program that never has a backlog starts none of them; one that does
 * starts at most one per CPU its producers ran on.  They stay until the
 * process exits (as the default worker does); a fork() child has none and
 * starts its own on demand.  When a worker cannot be started (no memory
 * for the slots, pthread_create() fails, the CPU is not allowed) the
 * queue stays with the worker it has (the default worker): nothing is
 * lost, and a later call tries again, at most once per CB_AUTO_RETRY_NS.
 *
 * Barrier pairs: CB-A1 (the slots before ncpu, release; the acquire in
 * sk__rcu_cb_auto_worker() and the fork handlers).  The workers run
 * rcu_cb.c's loop, which rcu_cb.c passes down (this file sits below it:
 * src/layers.txt); their sleep and kicks are those of internal/worker.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "internal/rcu_cb.h"

/* After a failed start, no new attempt before this many ns. */
#define CB_AUTO_RETRY_NS 1000000u

struct auto_cpu {
	struct sk__worker w;
	int running; /* w's thread exists (au.lock; relaxed reads) */
};

static struct {
	pthread_mutex_t lock; /* starts, allocation; held across fork() */
	struct auto_cpu *slot;
	int ncpu;	  /* slots; CB-A1 */
	uint64_t retry_ns; /* no start before (relaxed: a hint) */
#ifdef SK_TESTING
	int fail_allocs; /* sk__rcu_cb_auto_test_fail_allocs() */
#endif
} au = { .lock = PTHREAD_MUTEX_INITIALIZER };

#ifdef SK_TESTING
void sk__rcu_cb_auto_test_fail_allocs(int n)
{
	sk_atomic_store_relaxed(&au.fail_allocs, n);
	if (!n) /* and the back-off of the failures made so far */
		sk_atomic_store_relaxed(&au.retry_ns, 0);
}

int sk__rcu_cb_auto_running(void)
{
	int i, n = 0, ncpu = sk_atomic_load_acquire(&au.ncpu);

	for (i = 0; i < ncpu; i++)
		n += sk_atomic_load_relaxed(&au.slot[i].running);
	return n;
}

static int alloc_fails(void)
{
	int n = sk_atomic_load_relaxed(&au.fail_allocs);

	if (n <= 0)
		return 0;
	sk_atomic_store_relaxed(&au.fail_allocs, n - 1);
	return 1;
}
#else
static inline int alloc_fails(void)
{
	return 0;
}
#endif

/* Allocate the slots on first use.  au.lock held.  0 or -ENOMEM. */
/* See internal/rcu_cb.h (here: rcu_cb.c and rcu_cb_pcpu.c use it too). */
long sk__rcu_cb_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (n < 1)
		n = 1;
	if (n > CPU_SETSIZE)
		n = CPU_SETSIZE;
	return n;
}

static int slots_alloc(void)
{
	struct auto_cpu *s;
	long n;
	int i;

	if (au.slot)
		return 0;
	n = sk__rcu_cb_ncpu();
	s = alloc_fails() ? NULL
			  : aligned_alloc(SK_CACHELINE, sizeof(*s) * (size_t)n);
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s) * (size_t)n);
	for (i = 0; i < n; i++)
		s[i].w.cpu = -1;
	au.slot = s;
	/* CB-A1: the zeroed slots before ncpu; pairs with the acquires. */
	sk_atomic_store_release(&au.ncpu, (int)n);
	return 0;
}

/* See internal/rcu_cb.h. */
struct sk__worker *sk__rcu_cb_auto_worker(int cpu, sk__worker_loop_fn *loop)
{
	struct sk__worker *w = NULL;
	uint64_t now;
	int err;

	if (cpu < 0)
		return NULL;
	/* CB-A1: acquire; slot[0..ncpu) are set up. */
	if (cpu < sk_atomic_load_acquire(&au.ncpu) &&
	    sk_atomic_load_acquire(&au.slot[cpu].running))
		return &au.slot[cpu].w; /* the fast path: a running worker */
	now = sk__now_ns();
	if ((int64_t)(now - sk_atomic_load_relaxed(&au.retry_ns)) < 0)
		return NULL;
	pthread_mutex_lock(&au.lock);
	err = slots_alloc();
	if (!err && cpu >= au.ncpu)
		err = -EINVAL;
	if (!err && !au.slot[cpu].running) {
		err = sk__worker_start(&au.slot[cpu].w, "sk-rcu-cba", loop, cpu,
				       SK__WK_PIN);
		if (!err)
			/* Release: the worker's fields before the fast path's
			 * acquire above uses them. */
			sk_atomic_store_release(&au.slot[cpu].running, 1);
	}
	if (!err)
		w = &au.slot[cpu].w;
	else
		sk_atomic_store_relaxed(&au.retry_ns, now + CB_AUTO_RETRY_NS);
	pthread_mutex_unlock(&au.lock);
	return w;
}

/*
 * fork() prepare: no start in progress (au.lock) and no automatic worker
 * in the middle of a batch (their run_locks).  Called by rcu_cb.c's
 * prepare handler before it takes the default worker's run_lock and the
 * list lock (a worker holds its run_lock when it takes the list lock).
 */
void sk__rcu_cb_auto_fork_prepare(void)
{
	int i;

	pthread_mutex_lock(&au.lock);
	for (i = 0; i < au.ncpu; i++)
		pthread_mutex_lock(&au.slot[i].w.run_lock);
}

void sk__rcu_cb_auto_fork_parent(void)
{
	int i;

	for (i = 0; i < au.ncpu; i++)
		pthread_mutex_unlock(&au.slot[i].w.run_lock);
	pthread_mutex_unlock(&au.lock);
}

/*
 * fork() child: none of the workers exists; rcu_cb.c's child handler has
 * handed every queue to the default worker.  A later backlog starts new
 * ones.
 */
void sk__rcu_cb_auto_fork_child(void)
{
	int i;

	for (i = 0; i < au.ncpu; i++) {
		struct auto_cpu *s = &au.slot[i];

		/* Taken by this thread in the prepare handler. */
		pthread_mutex_unlock(&s->w.run_lock);
		sk__worker_fork_child(&s->w);
		s->running = 0;
	}
	au.retry_ns = 0;
	pthread_mutex_unlock(&au.lock);
}
