/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb_barrier.c - sk_rcu_barrier(), under real threads.
 *
 * What is proven, one function each (see the comment above each):
 *   - sk_rcu_barrier() waits for the callbacks of every producer, live or
 *     exited, and of concurrent producers; a no-op barrier (the torture
 *     ops' busted twin) MUST be caught; with nothing pending it starts no
 *     grace period;
 *   - sk_rcu_barrier() inside a read section or a callback aborts with a
 *     message (death tests: this program run again as a child).
 * Counts shrink by sk_test_slow() under sanitizers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "torture_ops.h"

/* The library's callbacks, and their busted twin (made by main()). */
static const struct sk_tort_ops *const real_ops = &sk_tort_rcu_ops;
static struct sk_tort_ops broken_now_ops;

/* ---- sk_rcu_barrier() ---------------------------------------------------- */

#define BAR_PRODUCERS 4

struct bnode {
	struct sk_rcu_head rcu;
	unsigned long *counter;
};

static void bnode_cb(struct sk_rcu_head *h)
{
	INC(*OF(h, struct bnode, rcu)->counter);
}

static struct {
	unsigned long m; /* callbacks per producer */
	struct bnode *nodes;
	unsigned long count[BAR_PRODUCERS];
	unsigned long call_err;
	int queued, go; /* producers done queueing; may exit */
	const struct sk_tort_ops *ops;
	unsigned long seen; /* sum of counts right after the barrier */
	int barrier_started, barrier_done;
} bar;

static void *bar_producer(void *arg)
{
	unsigned p = (unsigned)(uintptr_t)arg;
	unsigned long i;

	for (i = 0; i < bar.m; i++) {
		struct bnode *n = &bar.nodes[p * bar.m + i];

		n->counter = &bar.count[p];
		if (sk_call_rcu(&n->rcu, bnode_cb) != 0)
			INC(bar.call_err);
	}
	INC(bar.queued);
	/* Producers 0 and 1 exit now; 2 and 3 stay alive until released. */
	if (p >= 2)
		while (!LOAD(bar.go))
			sched_yield();
	return NULL;
}

static void *bar_barrier_thread(void *arg)
{
	unsigned long sum = 0;
	int p;

	(void)arg;
	STORE(bar.barrier_started, 1);
	bar.ops->cb_barrier(NULL);
	for (p = 0; p < BAR_PRODUCERS; p++)
		sum += LOAD(bar.count[p]);
	STORE(bar.seen, sum);
	STORE(bar.barrier_done, 1);
	return NULL;
}

/*
 * Returns the number of callbacks run when ops->cb_barrier() returned.  While
 * the producers queue, a reader holds a section, so no callback can run;
 * the barrier is called from another thread and the reader is released
 * once the barrier has returned, or 50 ms after it started (a loaded
 * machine may keep the barrier thread off the CPU for longer than a fixed
 * delay from its creation).
 */
static unsigned long barrier_sees(const struct sk_tort_ops *ops,
				  unsigned long m)
{
	pthread_t t[BAR_PRODUCERS], b;
	struct sk_test_holder h;
	unsigned p, i;

	memset(&bar, 0, sizeof(bar));
	bar.m = m;
	bar.ops = ops;
	bar.nodes = calloc(BAR_PRODUCERS * m, sizeof(*bar.nodes));
	if (!bar.nodes)
		abort();
	sk_test_holder_start(&h, 0, NULL, NULL);
	for (p = 0; p < BAR_PRODUCERS; p++)
		sk_test_thread_start(&t[p], bar_producer, (void *)(uintptr_t)p);
	sk_test_thread_join(t[0]);
	/* Two producers have exited before the barrier. */
	sk_test_thread_join(t[1]);
	while (LOAD(bar.queued) < BAR_PRODUCERS)
		sched_yield();
	sk_test_thread_start(&b, bar_barrier_thread, NULL);
	while (!LOAD(bar.barrier_started))
		sched_yield();
	for (i = 0; i < 50 && !LOAD(bar.barrier_done); i++)
		usleep(1000);
	sk_test_holder_release(&h);
	sk_test_thread_join(b);
	STORE(bar.go, 1);
	sk_test_thread_join(t[2]);
	sk_test_thread_join(t[3]);
	sk_rcu_barrier(); /* clean up after a broken barrier */
	SK_CHECK_EQ(LOAD(bar.call_err), 0);
	for (p = 0; p < BAR_PRODUCERS; p++)
		SK_CHECK_EQ(LOAD(bar.count[p]), m);
	free(bar.nodes);
	return LOAD(bar.seen);
}

/*
 * sk_rcu_barrier() returns only after every callback queued before it has
 * run: those of producers that have exited and of producers still alive,
 * even when the grace period they need is held up while the barrier
 * waits.  A no-op barrier must be caught.
 */
static void barrier_waits_for_every_producer(void)
{
	unsigned long m = 20000 / sk_test_slow();

	SK_CHECK_EQ(barrier_sees(real_ops, m), BAR_PRODUCERS * m);
	SK_CHECK_LE(barrier_sees(&broken_now_ops, m) + 1, BAR_PRODUCERS * m);
}

static struct {
	unsigned long rounds, k;
	unsigned long err, call_err;
} cbar;

static void *cbar_thread(void *arg)
{
	unsigned long count = 0, r, i;
	struct bnode *n = calloc(cbar.k, sizeof(*n));

	(void)arg;
	if (!n)
		abort();
	for (r = 0; r < cbar.rounds; r++) {
		for (i = 0; i < cbar.k; i++) {
			n[i].counter = &count;
			if (sk_call_rcu(&n[i].rcu, bnode_cb) != 0)
				INC(cbar.call_err);
		}
		sk_rcu_barrier();
		if (LOAD(count) != cbar.k * (r + 1))
			INC(cbar.err);
	}
	free(n);
	return NULL;
}

/*
 * Several threads each queue a round of callbacks, call sk_rcu_barrier()
 * and find all of their own callbacks run, concurrently with the others'
 * barriers and callbacks.
 */
static void concurrent_barriers_each_see_their_callbacks(void)
{
	pthread_t t[3];
	int i;

	cbar.rounds = 200 / sk_test_slow();
	cbar.k = 50;
	cbar.err = cbar.call_err = 0;
	for (i = 0; i < 3; i++)
		sk_test_thread_start(&t[i], cbar_thread, NULL);
	for (i = 0; i < 3; i++)
		sk_test_thread_join(t[i]);
	SK_CHECK_EQ(LOAD(cbar.err), 0);
	SK_CHECK_EQ(LOAD(cbar.call_err), 0);
}

/*
 * With nothing pending, sk_rcu_barrier() returns without a grace period
 * and without a worker batch (the non-timing meaning of "returns at once
 * when none is pending").
 */
static void barrier_with_nothing_pending_runs_no_grace_period(void)
{
	struct sk_rcu_stats s0, s1;
	int i;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	for (i = 0; i < 1000; i++)
		sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.grace_periods, s0.grace_periods);
	SK_CHECK_EQ(s1.cb_batches, s0.cb_batches);
	SK_CHECK_EQ(s1.cb_invoked, s0.cb_invoked);
}


/* ---- death tests --------------------------------------------------------- */

static void child_barrier_in_section(void)
{
	sk_rcu_read_lock();
	sk_rcu_barrier();
	fprintf(stderr, "sk_rcu_barrier() returned inside a section\n");
}

static struct sk_rcu_head death_head;
static void barrier_from_callback(struct sk_rcu_head *h)
{
	(void)h;
	sk_rcu_barrier();
	fprintf(stderr, "sk_rcu_barrier() returned inside a callback\n");
}

static void child_barrier_in_callback(void)
{
	/* Our own barrier waits for the callback, which must abort. */
	if (sk_call_rcu(&death_head, barrier_from_callback) != 0)
		fprintf(stderr, "sk_call_rcu failed\n");
	sk_rcu_barrier();
}

/*
 * Run this program again as a child in mode: it must abort, naming
 * sk_rcu_barrier(), the thread and what (where the barrier was called).
 */
static void child_aborts(const char *mode, const char *what)
{
	char out[4096];
	int st = sk_test_run_child("test_rcu_cb_barrier", mode, NULL, NULL,
				   out, sizeof(out));

	fprintf(stderr, "child stderr: %s", out);
	if (!WIFSIGNALED(st))
		fprintf(stderr, "%s: child exited with status %d\n", mode,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	SK_CHECK_ABORTED(st);
	SK_CHECK_STR_CONTAINS(out, "sk_rcu_barrier()");
	SK_CHECK_STR_CONTAINS(out, "scalekit: thread ");
	SK_CHECK_STR_CONTAINS(out, what);
}

/*
 * sk_rcu_barrier() inside a read section would wait for itself: message
 * and abort (in a child process).
 */
static void barrier_inside_read_section_aborts(void)
{
	child_aborts("barrier-in-section", "read-side critical section");
}

/* sk_rcu_barrier() from a callback would wait for itself: message, abort. */
static void barrier_inside_callback_aborts(void)
{
	child_aborts("barrier-in-callback", "callback");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child=barrier-in-section")) {
		child_barrier_in_section();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--child=barrier-in-callback")) {
		child_barrier_in_callback();
		return 0;
	}
	sk_test_args(argc, argv);
	sk_tort_make_busted(real_ops, &broken_now_ops);
	sk_test_seed_init();
	SK_RUN(barrier_waits_for_every_producer);
	SK_RUN(concurrent_barriers_each_see_their_callbacks);
	SK_RUN(barrier_with_nothing_pending_runs_no_grace_period);
	SK_RUN(barrier_inside_read_section_aborts);
	SK_RUN(barrier_inside_callback_aborts);
	return sk_test_report();
}
