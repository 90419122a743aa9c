/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb_auto.c - the automatic per-CPU callback workers of the
 * default sk_call_rcu() path (src/rcu_cb_auto.c): no set-up call.
 *
 * What is proven, one function each (see the comment above each):
 *   - a program with no callback backlog starts no automatic worker (and
 *     one that never queues a callback no callback thread at all);
 *   - when the automatic workers' slots cannot be allocated (ENOMEM), or
 *     their threads cannot be started, callbacks still run (on the
 *     default worker), none is lost, and no automatic worker runs;
 *   - a backlog starts the worker of the producer's CPU, pinned there,
 *     and the callbacks run on that CPU;
 *   - the callbacks of one thread that moves between CPUs (so between
 *     workers) run in the order queued; a twin that gives the thread a
 *     new queue per CPU instead (per-CPU queues) MUST be caught;
 *   - many threads with a backlog on one CPU share its one worker;
 *   - a callback on an automatic worker waits for a read section that
 *     began before it was queued; workers that skip the grace period
 *     (the library's broken twin) MUST be caught;
 *   - sk_rcu_barrier() waits for the callbacks the automatic workers
 *     drain; a barrier that skips their queues (the broken twin) MUST be
 *     caught;
 *   - a thread whose own queue could not be allocated (ENOMEM: its
 *     callbacks go to the shared fallback queue) and then could: its
 *     callbacks before and after still run in the order queued; the twin
 *     that takes the own queue at once (the code before the fix) MUST be
 *     caught;
 *   - fork(): the child has no automatic worker, runs the callbacks
 *     pending at the fork and starts its own on a new backlog; the parent
 *     goes on (by name: a CTest of its own, labelled noqemu).
 * Links the testing build (broken modes, failing starts and allocations).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "internal/rcu_cb.h"  /* sk__rcu_cb_auto_*() */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_cpu.h"
#include "sk_test_util.h"

/* A backlog well beyond the library's threshold (CB_AUTO_MIN, 256). */
#define FLOW 4096

#define MAX_CPUS 8

static int cpus[MAX_CPUS], ncpus;

/* Let the calling thread run on every CPU it may (cpus[]). */
static void unpin(void)
{
	SK_CHECK_EQ(sk_test_pin_to_all(cpus, ncpus), 0);
}

/* Threads of this process whose name starts with prefix. */
static int threads_named(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* A callback that records where and in which order it ran. */
struct probe {
	struct sk_rcu_head head;
	unsigned long id;  /* order queued */
	unsigned long seq; /* order run */
	int cpu;
	int ran;
};

static unsigned long run_seq; /* atomic */

/*
 * hold_first: the callback with id 0 waits (at most HOLD_MS) so that a
 * backlog builds behind it whatever the timing (a worker that keeps up
 * never lets the backlog pass CB_AUTO_MIN, so the thread's queue never
 * moves: under TSan the split twin went uncaught that way).
 *   HOLD_FOR_LATER: until one queued after it has run.  With the queue
 *     kept in order nothing later can run and the wait times out; a twin
 *     that lets another worker run later callbacks meanwhile reorders
 *     them on every run.
 *   HOLD_FOR_PRODUCER: until the test thread has queued them all
 *     (queued_all), so the whole flow is a backlog.
 */
enum { HOLD_OFF, HOLD_FOR_LATER, HOLD_FOR_PRODUCER };
#define HOLD_MS 300
static int hold_first;         /* atomic: HOLD_*, set while idle */
static int queued_all;         /* atomic: HOLD_FOR_PRODUCER's release */
static unsigned long ran_upto; /* atomic: highest id run + 1 */

static int hold_released(int mode)
{
	if (mode == HOLD_FOR_LATER)
		return __atomic_load_n(&ran_upto, __ATOMIC_RELAXED) > 1;
	return __atomic_load_n(&queued_all, __ATOMIC_RELAXED);
}

static void hold_if_first(const struct probe *p)
{
	int mode = __atomic_load_n(&hold_first, __ATOMIC_RELAXED), ms;

	if (p->id != 0 || mode == HOLD_OFF)
		return;
	for (ms = 0; ms < HOLD_MS * (int)sk_test_slow(); ms++) {
		if (hold_released(mode))
			return;
		usleep(1000);
	}
}

/* Start holding in mode (the queue is idle: after a barrier). */
static void hold_start(int mode)
{
	__atomic_store_n(&ran_upto, 0UL, __ATOMIC_RELAXED);
	__atomic_store_n(&queued_all, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hold_first, mode, __ATOMIC_RELAXED);
}

static void probe_cb(struct sk_rcu_head *h)
{
	struct probe *p = (struct probe *)h;
	unsigned long upto;

	hold_if_first(p);
	upto = __atomic_load_n(&ran_upto, __ATOMIC_RELAXED);
	while (p->id + 1 > upto &&
	       !__atomic_compare_exchange_n(&ran_upto, &upto, p->id + 1, 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	p->cpu = sched_getcpu();
	p->seq = __atomic_fetch_add(&run_seq, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&p->ran, 1, __ATOMIC_RELEASE);
}

static int probe_ran(struct probe *p)
{
	return __atomic_load_n(&p->ran, __ATOMIC_ACQUIRE);
}

static struct probe *probes_new(int n)
{
	struct probe *p = calloc((size_t)n, sizeof(*p));

	if (!p)
		abort();
	return p;
}

/* Queue p[0..n) in order; returns the number accepted. */
static int queue_all(struct probe *p, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++) {
		p[i].id = (unsigned long)i;
		ok += sk_call_rcu(&p[i].head, probe_cb) == 0;
	}
	return ok;
}

static int count_ran(struct probe *p, int n)
{
	int i, ran = 0;

	for (i = 0; i < n; i++)
		ran += probe_ran(&p[i]);
	return ran;
}

/* ---- no flow, no thread; failures --------------------------------------- */

/*
 * Nothing queued: no callback thread.  A few callbacks (no backlog): the
 * default worker only, no automatic worker.  Runs first.
 */
static void no_backlog_starts_no_automatic_worker(void)
{
	enum { FEW = 50 };
	struct probe *p = probes_new(FEW);

	sk_synchronize_rcu();
	sk_rcu_barrier();
	SK_CHECK_EQ(threads_named("sk-rcu-cb"), 0);
	SK_CHECK_EQ(queue_all(p, FEW), FEW);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(p, FEW), FEW);
	SK_CHECK_EQ(sk__rcu_cb_auto_running(), 0);
	SK_CHECK_EQ(threads_named("sk-rcu-cba"), 0);
	SK_CHECK_EQ(threads_named("sk-rcu-cb"), 1); /* the default worker */
	free(p);
}

/*
 * A backlog while the slots cannot be allocated, then while no thread can
 * be started: every callback runs (the default worker's), no automatic
 * worker exists.  Before any other test starts one (the slots are
 * allocated once).
 */
static void backlog_without_memory_or_threads_loses_nothing(void)
{
	struct probe *p = probes_new(FLOW);
	int round;

	for (round = 0; round < 2; round++) {
		memset(p, 0, sizeof(*p) * FLOW);
		if (round == 0)
			sk__rcu_cb_auto_test_fail_allocs(1 << 20);
		else
			sk__worker_test_fail_starts(1 << 20, EAGAIN);
		hold_start(HOLD_FOR_PRODUCER); /* a backlog: a start is tried */
		SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
		__atomic_store_n(&queued_all, 1, __ATOMIC_RELAXED);
		sk_rcu_barrier();
		hold_start(HOLD_OFF);
		SK_CHECK_EQ(count_ran(p, FLOW), FLOW);
		SK_CHECK_EQ(sk__rcu_cb_auto_running(), 0);
		sk__rcu_cb_auto_test_fail_allocs(0);
		sk__worker_test_fail_starts(0, 0);
	}
	free(p);
}

/* ---- placement, order -------------------------------------------------- */

/*
 * A backlog queued from a thread pinned to a CPU starts that CPU's
 * worker, and (once it has) the callbacks run on that CPU.
 */
static void backlog_runs_on_the_producers_cpu(void)
{
	struct probe *p = probes_new(FLOW);
	int c;

	for (c = 0; c < ncpus; c++) {
		memset(p, 0, sizeof(*p) * FLOW);
		SK_CHECK_EQ(sk_test_pin_to(cpus[c]), 0);
		hold_start(HOLD_FOR_PRODUCER);
		SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
		__atomic_store_n(&queued_all, 1, __ATOMIC_RELAXED);
		sk_rcu_barrier();
		hold_start(HOLD_OFF);
		SK_CHECK_EQ(count_ran(p, FLOW), FLOW);
		/* The last ones were queued long after the switch. */
		SK_CHECK_EQ(p[FLOW - 1].cpu, cpus[c]);
	}
	unpin();
	SK_CHECK(sk__rcu_cb_auto_running() >= (ncpus < 2 ? 1 : 2));
	SK_CHECK_EQ(threads_named("sk-rcu-cba"), sk__rcu_cb_auto_running());
	free(p);
}

/*
 * One thread queues while it hops from CPU to CPU (so its queue goes from
 * worker to worker): its callbacks run in the order queued.  Returns how
 * many ran before one queued earlier (busted: the twin that gives the
 * thread a new queue on each CPU instead, which must be caught).
 */
static int out_of_order(int busted)
{
	int n = 200000 / (int)sk_test_slow(), i, bad = 0;
	struct probe *p = probes_new(n);

	hold_start(HOLD_FOR_LATER);
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_AUTO_SPLIT : 0);
	for (i = 0; i < n; i++) {
		if (i % 2000 == 0)
			SK_CHECK_EQ(sk_test_pin_to(cpus[(i / 2000) % ncpus]),
				    0);
		p[i].id = (unsigned long)i;
		SK_CHECK_EQ(sk_call_rcu(&p[i].head, probe_cb), 0);
	}
	sk__rcu_cb_set_busted(0);
	unpin();
	sk_rcu_barrier();
	hold_start(HOLD_OFF);
	SK_CHECK_EQ(count_ran(p, n), n);
	for (i = 1; i < n; i++)
		bad += p[i].seq <= p[i - 1].seq;
	free(p);
	return bad;
}

static void one_thread_keeps_its_order_across_cpus(void)
{
	SK_CHECK_EQ(out_of_order(0), 0);
}

static void queue_per_cpu_reorders_and_is_caught(void)
{
	if (ncpus < 2) {
		fprintf(stderr, "    (one CPU: nothing to hop between)\n");
		return;
	}
	SK_CHECK(out_of_order(1) > 0);
}

/*
 * The thread count stays bounded: many threads with a backlog on one CPU
 * share that CPU's one automatic worker (at most one per CPU in all).
 */
static void *backlog_on_cpu0(void *arg)
{
	struct probe *p = arg;

	SK_CHECK_EQ(sk_test_pin_to(cpus[0]), 0);
	SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
	return NULL;
}

static void one_worker_per_cpu_however_many_threads(void)
{
	enum { T = 6 };
	struct probe *p = probes_new(T * FLOW);
	pthread_t t[T];
	char name[24];
	int i;

	for (i = 0; i < T; i++)
		sk_test_thread_start(&t[i], backlog_on_cpu0, &p[i * FLOW]);
	for (i = 0; i < T; i++)
		sk_test_thread_join(t[i]);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(p, T * FLOW), T * FLOW);
	/* The whole name, newline included (/proc's comm). */
	snprintf(name, sizeof(name), "sk-rcu-cba/%d\n", cpus[0]);
	SK_CHECK_EQ(threads_named(name), 1);
	SK_CHECK(sk__rcu_cb_auto_running() <= sysconf(_SC_NPROCESSORS_CONF));
	SK_CHECK_EQ(threads_named("sk-rcu-cba"), sk__rcu_cb_auto_running());
	free(p);
}

/* ---- grace period, barrier: and their broken twins ---------------------- */

/*
 * Behind a backlog on an automatic worker, a probe queued while a reader
 * holds its section does not run before the reader leaves.  Returns 1
 * when it ran early (with busted, the twin that must be caught).  The
 * real workers get 100 ms to do wrong; with busted ones the test waits
 * for the probe (they run it without a grace period, behind the whole
 * backlog: more than 100 ms on a slow machine), at most HOLD_WAIT_S.
 */
#define HOLD_WAIT_S 30

static int ran_before_reader_left(int busted)
{
	struct probe *p = probes_new(FLOW + 1);
	struct sk_test_holder h;
	double end;
	int early;

	SK_CHECK_EQ(sk_test_pin_to(cpus[ncpus - 1]), 0);
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_NO_GP : 0);
	/* The backlog moves the queue to the automatic worker. */
	SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
	sk_test_holder_start(&h, 0, NULL, NULL);
	SK_CHECK_EQ(sk_call_rcu(&p[FLOW].head, probe_cb), 0);
	if (busted) {
		end = sk_test_now() + HOLD_WAIT_S;
		while (!probe_ran(&p[FLOW]) && sk_test_now() < end)
			sk_test_sleep_ms(1);
	} else {
		sk_test_sleep_ms(100);
	}
	early = probe_ran(&p[FLOW]);
	sk__rcu_cb_set_busted(0);
	sk_test_holder_release(&h);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(p, FLOW + 1), FLOW + 1);
	unpin();
	free(p);
	return early;
}

static void automatic_workers_wait_for_readers(void)
{
	SK_CHECK_EQ(ran_before_reader_left(0), 0);
}

static void worker_without_grace_period_is_caught(void)
{
	SK_CHECK_EQ(ran_before_reader_left(1), 1);
}

static void *release_later(void *arg)
{
	sk_test_sleep_ms(50);
	sk_test_holder_release(arg);
	return NULL;
}

/*
 * A backlog queued while a reader holds its section (so nothing can run
 * yet), then sk_rcu_barrier() while another thread lets the reader go
 * 50 ms later: on return every callback ran.  Returns how many had not
 * (busted: the twin that skips the automatic workers' queues, which must
 * be caught).
 */
static int missed_by_barrier(int busted)
{
	struct probe *p = probes_new(FLOW);
	struct sk_test_holder h;
	pthread_t t;
	int missed;

	SK_CHECK_EQ(sk_test_pin_to(cpus[0]), 0);
	sk_test_holder_start(&h, 0, NULL, NULL);
	SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_BARRIER : 0);
	sk_test_thread_start(&t, release_later, &h);
	sk_rcu_barrier();
	missed = FLOW - count_ran(p, FLOW);
	sk__rcu_cb_set_busted(0);
	sk_test_thread_join(t);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(p, FLOW), FLOW);
	unpin();
	free(p);
	return missed;
}

static void barrier_waits_for_automatic_workers(void)
{
	SK_CHECK_EQ(missed_by_barrier(0), 0);
}

static void barrier_that_skips_them_is_caught(void)
{
	SK_CHECK(missed_by_barrier(1) > 0);
}

/* ---- ENOMEM: the shared fallback queue ---------------------------------- */

/*
 * A thread's first callback goes to the shared fallback queue (its own
 * queue cannot be allocated: sk__rcu_cb_test_fail_queue_allocs(1)), the
 * FLOW after it are queued once allocations work again.  The default
 * worker, which drains the fallback, is held meanwhile by a callback of
 * another thread until one of the later callbacks has run (at most
 * HOLD_MS): the later ones are a backlog, so a queue of the thread's own
 * would move to its CPU's automatic worker, which runs them while the
 * first one waits.  Returns how many ran before one queued earlier
 * (busted: SK__CB_BUSTED_FALLBACK_LEAVE, the code before the fix, which
 * must be caught).
 */
static struct probe *fb_p;
static int fb_blocking; /* atomic: the blocker callback has started */

static void fb_blocker_cb(struct sk_rcu_head *h)
{
	int ms;

	(void)h;
	__atomic_store_n(&fb_blocking, 1, __ATOMIC_RELAXED);
	for (ms = 0; ms < HOLD_MS * (int)sk_test_slow(); ms++) {
		if (probe_ran(&fb_p[1]))
			return;
		usleep(1000);
	}
}

static void *fb_block_default_worker(void *arg)
{
	/* A new thread: its queue is the default worker's. */
	SK_CHECK_EQ(sk_call_rcu(arg, fb_blocker_cb), 0);
	return NULL;
}

static void *fb_producer(void *arg)
{
	(void)arg;
	SK_CHECK_EQ(sk_test_pin_to(cpus[0]), 0);
	sk__rcu_cb_test_fail_queue_allocs(1);
	SK_CHECK_EQ(queue_all(fb_p, FLOW + 1), FLOW + 1);
	sk__rcu_cb_test_fail_queue_allocs(0);
	return NULL;
}

static int fallback_out_of_order(int busted)
{
	struct sk_rcu_head blocker;
	pthread_t t;
	int i, bad = 0;

	fb_p = probes_new(FLOW + 1);
	__atomic_store_n(&fb_blocking, 0, __ATOMIC_RELAXED);
	sk_test_thread_start(&t, fb_block_default_worker, &blocker);
	sk_test_thread_join(t);
	while (!__atomic_load_n(&fb_blocking, __ATOMIC_RELAXED))
		sk_test_sleep_ms(1);
	sk__rcu_cb_set_busted(busted ? SK__CB_BUSTED_FALLBACK_LEAVE : 0);
	sk_test_thread_start(&t, fb_producer, NULL);
	sk_test_thread_join(t);
	sk_rcu_barrier();
	sk__rcu_cb_set_busted(0);
	SK_CHECK_EQ(count_ran(fb_p, FLOW + 1), FLOW + 1);
	for (i = 1; i <= FLOW; i++)
		bad += fb_p[i].seq <= fb_p[i - 1].seq;
	free(fb_p);
	return bad;
}

static void fallback_then_own_queue_keeps_order(void)
{
	SK_CHECK_EQ(fallback_out_of_order(0), 0);
}

static void fallback_left_at_once_reorders_and_is_caught(void)
{
	SK_CHECK(fallback_out_of_order(1) > 0);
}

/* ---- fork --------------------------------------------------------------- */

static struct probe *fork_p;

/*
 * The child: no automatic worker (and no callback thread at all until
 * something starts one); the callbacks pending at the fork run; a new
 * backlog starts a worker of the child's own.
 */
static void child_with_pending_backlog(void)
{
	struct probe *p = probes_new(FLOW);

	SK_CHECK_EQ(sk__rcu_cb_auto_running(), 0);
	SK_CHECK_EQ(threads_named("sk-rcu-cb"), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(fork_p, FLOW), FLOW);
	SK_CHECK_EQ(sk_test_pin_to(cpus[0]), 0);
	SK_CHECK_EQ(queue_all(p, FLOW), FLOW);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(p, FLOW), FLOW);
	SK_CHECK_EQ(sk__rcu_cb_auto_running(), 1);
	SK_CHECK_EQ(threads_named("sk-rcu-cba"), 1);
	free(p);
	if (sk_t_failed_checks)
		_exit(3);
}

static void automatic_workers_survive_fork(void)
{
	struct sk_test_child c;
	struct sk_test_holder h;

	fork_p = probes_new(FLOW);
	SK_CHECK_EQ(sk_test_pin_to(cpus[0]), 0);
	/* Running automatic workers, then a backlog held by a reader. */
	SK_CHECK_EQ(queue_all(fork_p, FLOW), FLOW);
	sk_rcu_barrier();
	SK_CHECK(sk__rcu_cb_auto_running() >= 1);
	memset(fork_p, 0, sizeof(*fork_p) * FLOW);
	sk_test_holder_start(&h, 0, NULL, NULL);
	SK_CHECK_EQ(queue_all(fork_p, FLOW), FLOW);
	sk_test_fork_child(child_with_pending_backlog, 60, 0, &c);
	SK_CHECK_EXIT_0(c.status);
	sk_test_holder_release(&h);
	sk_rcu_barrier();
	SK_CHECK_EQ(count_ran(fork_p, FLOW), FLOW);
	unpin();
	free(fork_p);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	ncpus = sk_test_cpus(cpus, MAX_CPUS);
	SK_RUN(no_backlog_starts_no_automatic_worker);
	SK_RUN(backlog_without_memory_or_threads_loses_nothing);
	SK_RUN(backlog_runs_on_the_producers_cpu);
	SK_RUN(one_thread_keeps_its_order_across_cpus);
	SK_RUN(queue_per_cpu_reorders_and_is_caught);
	SK_RUN(one_worker_per_cpu_however_many_threads);
	SK_RUN(automatic_workers_wait_for_readers);
	SK_RUN(worker_without_grace_period_is_caught);
	SK_RUN(barrier_waits_for_automatic_workers);
	SK_RUN(barrier_that_skips_them_is_caught);
	SK_RUN(fallback_then_own_queue_keeps_order);
	SK_RUN(fallback_left_at_once_reorders_and_is_caught);
	/*
	 * fork: by name only, a CTest of its own (labelled noqemu).  Where a
	 * fork child cannot start threads (SK_TEST_CHILD_THREADS), say so.
	 */
	if (argc > 1 && !SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "fork child without threads here: not run\n");
		return 0;
	}
	if (argc > 1)
		SK_RUN(automatic_workers_survive_fork);
	sk_rcu_barrier();
	return sk_test_report();
}
