/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb_pcpu.c - per-CPU callback workers: sk_rcu_cb_workers_create(),
 * sk_rcu_cb_workers_destroy() and what sk_call_rcu() and sk_rcu_barrier()
 * do while they run, under real threads.
 *
 * What is proven, one function each (see the comment above each):
 *   - create and destroy return the documented errors (-EEXIST, -ENOENT,
 *     -EINVAL, -EDEADLK from a callback) and the worker count follows;
 *   - a callback runs on the CPU whose thread queued it;
 *   - a callback on a per-CPU worker waits for a read section that began
 *     before sk_call_rcu(); per-CPU workers that skip the grace period
 *     (the library's broken twin) MUST be caught;
 *   - sk_rcu_barrier() waits for the callbacks of every per-CPU queue,
 *     queued by threads that move between CPUs; a barrier that skips the
 *     per-CPU queues (the library's broken twin) MUST be caught;
 *   - destroying and creating the workers while threads queue loses no
 *     callback and runs none twice.
 * The fork() case is in test_rcu_fork.c (a child that starts threads
 * cannot run under qemu-user).  Counts shrink by sk_test_slow().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_cpu.h"

/* Seconds after which a hang is reported (see main()). */
#define HANG_S 240

#define MAX_CPUS 8

/* The CPUs this process may run on (at most MAX_CPUS of them). */
static int cpus[MAX_CPUS], ncpus;

static void workers_on(void)
{
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0), 0);
}

static void workers_off(void)
{
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), 0);
}

/* ---- errors ---------------------------------------------------------------- */

static int cb_create_err, cb_destroy_err, cb_ran;

static void misuse_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(cb_destroy_err, sk_rcu_cb_workers_destroy());
	STORE(cb_create_err, sk_rcu_cb_workers_create(0));
	INC(cb_ran);
}

/*
 * create: 0, then -EEXIST while running, -EINVAL for an unknown flag;
 * destroy: 0, then -ENOENT; from a callback both return -EDEADLK (it
 * would wait for its own worker), and inside a read section (for a grace
 * period that waits for the caller); sk_rcu_cb_workers_running() counts a
 * worker per CPU of the affinity mask.
 */
static void workers_create_destroy_return_documented_errors(void)
{
	static struct sk_rcu_head h;

	SK_CHECK_EQ(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0x80), -EINVAL);
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), -ENOENT);
	workers_on();
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), ncpus);
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0), -EEXIST);
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), ncpus);
	SK_CHECK_EQ(sk_call_rcu(&h, misuse_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(cb_ran), 1);
	SK_CHECK_EQ(LOAD(cb_destroy_err), -EDEADLK);
	SK_CHECK_EQ(LOAD(cb_create_err), -EDEADLK);
	/* Inside a read section: a batch's grace period would wait for us. */
	sk_rcu_read_lock();
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), -EDEADLK);
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0), -EDEADLK);
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), ncpus);
	workers_off();
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), -ENOENT);
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_rcu_cb_workers_create(SK_RCU_CB_WORKERS_UNPINNED), 0);
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), ncpus);
	workers_off();
}

/* ---- placement ------------------------------------------------------------- */

struct cnode {
	struct sk_rcu_head rcu;
	int cpu;	   /* where it was queued */
	unsigned long ran; /* runs of this node's callback */
};

static unsigned long placed_ok, placed_bad;

static void placed_cb(struct sk_rcu_head *h)
{
	struct cnode *n = OF(h, struct cnode, rcu);

	if (sched_getcpu() == n->cpu)
		INC(placed_ok);
	else
		INC(placed_bad);
}

static void *placed_producer(void *arg)
{
	struct cnode *n = arg;
	int i, k = 200;

	if (sk_test_pin_to(n->cpu) != 0)
		abort();
	for (i = 0; i < k; i++)
		SK_CHECK_EQ(sk_call_rcu(&n[i].rcu, placed_cb), 0);
	return NULL;
}

/*
 * A thread pinned to a CPU queues callbacks there; each runs on that
 * CPU (its worker is pinned to it), for every CPU of the affinity mask.
 */
static void callbacks_run_on_the_cpu_that_queued_them(void)
{
	struct cnode *n = calloc((size_t)ncpus * 200, sizeof(*n));
	pthread_t t;
	int c, i;

	if (!n)
		abort();
	workers_on();
	for (c = 0; c < ncpus; c++) {
		for (i = 0; i < 200; i++)
			n[c * 200 + i].cpu = cpus[c];
		sk_test_thread_start(&t, placed_producer, &n[c * 200]);
		sk_test_thread_join(t);
	}
	sk_rcu_barrier();
	workers_off();
	SK_CHECK_EQ(LOAD(placed_ok), (unsigned long)ncpus * 200);
	SK_CHECK_EQ(LOAD(placed_bad), 0);
	free(n);
}

/* ---- grace period ---------------------------------------------------------- */

static int early_ran;

static void early_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(early_ran, 1);
}

/*
 * 1 when the callback queued while a reader holds a section ran before
 * the reader left.  With busted per-CPU workers the test waits for the
 * callback (it runs without a grace period, so the wait ends); with real
 * ones it gives the worker 20 ms to do wrong.
 */
static int pcpu_callback_runs_early(int busted)
{
	static struct sk_rcu_head h;
	struct sk_test_holder r;
	int ran;

	STORE(early_ran, 0);
	workers_on();
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_NO_GP : 0);
	sk_test_holder_start(&r, 0, NULL, NULL);
	SK_CHECK_EQ(sk_call_rcu(&h, early_cb), 0);
	if (busted)
		while (!LOAD(early_ran))
			sk_test_sleep_ms(1);
	else
		sk_test_sleep_ms(20);
	ran = LOAD(early_ran);
	sk_test_holder_release(&r);
	sk_rcu_barrier();
	sk__rcu_cb_set_busted(0);
	workers_off();
	SK_CHECK_EQ(LOAD(early_ran), 1);
	return ran;
}

/*
 * A callback on a per-CPU worker does not run while a read section that
 * began before sk_call_rcu() is open.  Workers that skip the grace period
 * must be caught by the same check.
 */
static void pcpu_callback_waits_for_preexisting_reader(void)
{
	SK_CHECK_EQ(pcpu_callback_runs_early(0), 0);
	fprintf(stderr, "  broken twin (per-CPU workers skip the grace "
			"period):\n");
	SK_CHECK_EQ(pcpu_callback_runs_early(1), 1);
}

/* ---- producers that move between CPUs -------------------------------------- */

#define MIG_PRODUCERS 2

static struct {
	unsigned long m; /* callbacks per producer */
	struct cnode *nodes;
	unsigned long count; /* callbacks run */
	int done;	     /* producers done queueing */
	pthread_t t[MIG_PRODUCERS];
} mig;

static void count_cb(struct sk_rcu_head *h)
{
	struct cnode *n = OF(h, struct cnode, rcu);

	INC(n->ran);
	INC(mig.count);
}

/* Queue m callbacks, moving to the next CPU every 32 of them. */
static void *mig_producer(void *arg)
{
	struct cnode *n = arg;
	unsigned long i;

	for (i = 0; i < mig.m; i++) {
		if (i % 32 == 0)
			sk_test_pin_to(
				cpus[(i / 32 + (n == mig.nodes)) % ncpus]);
		SK_CHECK_EQ(sk_call_rcu(&n[i].rcu, count_cb), 0);
		if (i % 256 == 0)
			sched_yield();
	}
	INC(mig.done);
	return NULL;
}

/* Start the producers of m callbacks each. */
static void mig_start(unsigned long m)
{
	int p;

	memset(&mig, 0, sizeof(mig));
	mig.m = m;
	mig.nodes = calloc(MIG_PRODUCERS * m, sizeof(*mig.nodes));
	if (!mig.nodes)
		abort();
	for (p = 0; p < MIG_PRODUCERS; p++)
		sk_test_thread_start(&mig.t[p], mig_producer,
				     &mig.nodes[p * m]);
}

/* Join the producers; after a barrier, every callback ran exactly once. */
static void mig_finish(void)
{
	unsigned long i, all = MIG_PRODUCERS * mig.m;
	int p;

	for (p = 0; p < MIG_PRODUCERS; p++)
		sk_test_thread_join(mig.t[p]);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(mig.count), all);
	for (i = 0; i < all; i++)
		if (LOAD(mig.nodes[i].ran) != 1)
			SK_CHECK_EQ(LOAD(mig.nodes[i].ran), 1);
	free(mig.nodes);
}

/* ---- barrier ----------------------------------------------------------------- */

static int bar_started, bar_done;

static void *bar_barrier_thread(void *arg)
{
	unsigned long *seen = arg;

	STORE(bar_started, 1);
	sk_rcu_barrier();
	STORE(*seen, LOAD(mig.count));
	STORE(bar_done, 1);
	return NULL;
}

/*
 * Callbacks run when sk_rcu_barrier() returned.  While producers queue
 * (moving between CPUs) and the barrier is called, a reader holds a
 * section, so none can run before the barrier starts; the reader leaves
 * once the barrier has returned, or 20 ms after it started (a loaded
 * machine may keep the barrier thread off the CPU for longer than a fixed
 * delay from its creation: the reader would then leave first, and a
 * barrier that skips the per-CPU queues could find them run already).
 */
static unsigned long barrier_sees(int busted, unsigned long m)
{
	struct sk_test_holder r;
	unsigned long seen = 0;
	pthread_t b;
	int i;

	workers_on();
	sk_test_holder_start(&r, 0, NULL, NULL);
	mig_start(m);
	while (LOAD(mig.done) < MIG_PRODUCERS)
		sched_yield();
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_BARRIER : 0);
	STORE(bar_started, 0);
	STORE(bar_done, 0);
	sk_test_thread_start(&b, bar_barrier_thread, &seen);
	while (!LOAD(bar_started))
		sched_yield();
	for (i = 0; i < 20 && !LOAD(bar_done); i++)
		sk_test_sleep_ms(1);
	sk_test_holder_release(&r);
	sk_test_thread_join(b);
	sk__rcu_cb_set_busted(0);
	mig_finish(); /* its barrier cleans up after the broken one */
	workers_off();
	return LOAD(seen);
}

/*
 * sk_rcu_barrier() returns only after every callback on every per-CPU
 * queue has run.  A barrier that skips the per-CPU queues must be caught.
 */
static void barrier_waits_for_every_per_cpu_queue(void)
{
	unsigned long m = 4000 / sk_test_slow();

	SK_CHECK_EQ(barrier_sees(0, m), MIG_PRODUCERS * m);
	fprintf(stderr, "  broken twin (barrier skips the per-CPU "
			"queues):\n");
	SK_CHECK_LE(barrier_sees(1, m) + 1, MIG_PRODUCERS * m);
}

/* ---- hand-over ---------------------------------------------------------------- */

/*
 * Two threads queue callbacks, moving between CPUs, while the main thread
 * destroys and creates the per-CPU workers over and over: the queues go
 * from per-CPU workers to the default worker and back.  Every callback
 * runs exactly once, and all have run after one sk_rcu_barrier().
 */
static void create_destroy_cycles_lose_no_callback(void)
{
	unsigned long cycles = 0;

	mig_start(20000 / sk_test_slow());
	while (LOAD(mig.done) < MIG_PRODUCERS) {
		workers_on();
		sched_yield();
		workers_off();
		cycles++;
	}
	mig_finish();
	fprintf(stderr, "  %lu create/destroy cycles\n", cycles);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_cb_pcpu (a barrier or a worker is stuck?)",
			 HANG_S);
	sk_test_seed_init();
	ncpus = sk_test_cpus(cpus, MAX_CPUS);
	SK_RUN(workers_create_destroy_return_documented_errors);
	SK_RUN(callbacks_run_on_the_cpu_that_queued_them);
	SK_RUN(pcpu_callback_waits_for_preexisting_reader);
	SK_RUN(barrier_waits_for_every_per_cpu_queue);
	SK_RUN(create_destroy_cycles_lose_no_callback);
	return sk_test_report();
}
