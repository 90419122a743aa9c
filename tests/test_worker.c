/* SPDX-License-Identifier: MIT */
/*
 * test_worker.c - the callback worker threads of RCU and SRCU
 * (src/worker.c) when their thread cannot be started.
 *
 * The test hook sk__worker_test_fail_starts() (scalekit_testing,
 * src/internal/testing.h) makes the next worker starts fail as if
 * pthread_create() had returned an error.  Checked:
 *   - sk_call_rcu() never fails for want of a thread: it returns 0 and
 *     prints nothing, the callback stays queued (a second call on its
 *     head is -EBUSY), sk_rcu_barrier() runs the pending callbacks on
 *     its own thread (and completes a polled grace period asked for
 *     meanwhile), and once threads can be created again a later call
 *     starts the worker, which runs what is queued without a barrier;
 *   - an automatically resized hash table whose background work cannot
 *     get a worker: its grow waits, sk_rhash_barrier() returns with the
 *     grow done, and once threads can be created the next grow runs in
 *     the background and sk_rhash_destroy() returns (each in a forked
 *     child, whose worker has never started; a hang is caught by alarm);
 *   - the same for sk_call_srcu() and sk_srcu_barrier() (which does the
 *     worker's rounds itself), with a polled grace period of another
 *     domain that completes once a later call has started the worker;
 *   - sk_start_poll_synchronize_rcu() / _srcu() keep a request they could
 *     not hand to a worker: once a later call has started the worker, the
 *     cookie completes without anyone waiting for a grace period (a
 *     request dropped on the failure would never complete: the test
 *     reports a hang);
 *   - sk_rcu_cb_workers_create() whose per-CPU start fails returns the
 *     error with no per-CPU worker left running, and callbacks still run;
 *   - an explicit sk_rhash_resize() in a fork child that inherited a
 *     background resize between two of its slices (resize_lock held by
 *     the work), with every worker start failing: it runs the work on its
 *     own thread (through sk_rcu_barrier()) and resizes, where it slept
 *     on resize_lock forever before.
 * Each test is the first in the program to start its worker, so they run
 * in main()'s order (or alone, selected by name).
 *
 * No assertion bounds wall-clock time.  A wait that a working library
 * ends is reported as a hang after HANG_S seconds, and sk_test_deadline()
 * ends the program with a message as a last resort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#include "internal/rhash.h" /* white box: work_active, resize_lock */
#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "scalekit/rhash.h"
#include "scalekit/srcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* Seconds after which a wait that a working library ends is a hang. */
#define HANG_S 30

static int runs;
static void count_cb(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_fetch_add(&runs, 1, __ATOMIC_RELEASE);
}

static int runs_get(void)
{
	return __atomic_load_n(&runs, __ATOMIC_ACQUIRE);
}

/* Wait until poll(arg, cookie) reports completion; 0 on a hang. */
static int poll_until_done(int (*poll)(void *arg, unsigned long cookie),
			   void *arg, unsigned long cookie, const char *what)
{
	double end = sk_test_now() + HANG_S;

	while (!poll(arg, cookie)) {
		if (sk_test_now() > end) {
			fprintf(stderr, "hang: %s: the polled grace period "
					"never completed (request dropped?)\n",
				what);
			return 0;
		}
		sk_test_sleep_ms(1);
	}
	return 1;
}

static int poll_srcu(void *arg, unsigned long cookie)
{
	return sk_poll_state_synchronize_srcu(arg, cookie);
}

/* ---- RCU ------------------------------------------------------------------ */

/* Wait until n callbacks ran (no barrier); 0 on a hang. */
static int runs_reach(int n)
{
	double end = sk_test_now() + HANG_S;

	while (runs_get() < n) {
		if (sk_test_now() > end) {
			fprintf(stderr, "hang: %d of %d callbacks ran\n",
				runs_get(), n);
			return 0;
		}
		sk_test_sleep_ms(1);
	}
	return 1;
}

/* Runs in a fresh fork child: its callback worker has never started. */
static void rcu_calls_queue_while_no_worker_can_start(void)
{
	static struct sk_rcu_head h[3];
	struct sk_test_capture cap;
	unsigned long cookie;
	char msg[1024];
	int i;

	runs = 0;
	sk__worker_test_fail_starts(INT_MAX, EAGAIN);
	sk_test_capture_begin(&cap);
	for (i = 0; i < 3; i++)
		SK_CHECK_EQ(sk_call_rcu(&h[i], count_cb), 0);
	cookie = sk_start_poll_synchronize_rcu();
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(msg[0], '\0'); /* nothing printed */
	/* Queued, not dropped: the head is busy until its callback ran. */
	SK_CHECK_EQ(sk_call_rcu(&h[0], count_cb), -EBUSY);
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(runs_get(), 0); /* no thread could run them */
	/* The barrier cannot start the worker either: it runs them. */
	sk_rcu_barrier();
	SK_CHECK_EQ(runs_get(), 3);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(cookie), 1);
	/* Threads again: a later call (past the retry delay) starts it. */
	sk__worker_test_fail_starts(0, 0);
	sk_test_sleep_ms(5);
	SK_CHECK_EQ(sk_call_rcu(&h[0], count_cb), 0);
	SK_CHECK(runs_reach(4));
	sk_rcu_barrier();
	SK_CHECK_EQ(runs_get(), 4);
}

struct kobj {
	struct sk_rhash_node node;
	uint64_t key;
};

static void insert_range(struct sk_rhash *ht, struct kobj *o, unsigned from,
			 unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		o[i].key = i;
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	}
}

/* Runs in a fresh fork child: its callback worker has never started. */
static void rhash_grows_while_no_worker_can_start(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	unsigned n = 100000, i;
	struct kobj *o = calloc(4 * n, sizeof(*o));
	struct sk_rhash *ht;
	double end;

	SK_CHECK(o != NULL);
	p.head_offset = offsetof(struct kobj, node);
	p.key_offset = offsetof(struct kobj, key);
	p.key_len = sizeof(uint64_t);
	sk__worker_test_fail_starts(INT_MAX, EAGAIN);
	ht = sk_rhash_create(&p);
	SK_CHECK(ht != NULL);
	insert_range(ht, o, 0, n);
	sk_test_sleep_ms(20);
	/* The grow was queued, and no thread could run it. */
	SK_CHECK_EQ(sk_rhash_buckets(ht), 64);
	/* Before the fix: spun here forever (the work flags stayed set). */
	sk_rhash_barrier(ht);
	SK_CHECK_LE(n, sk_rhash_buckets(ht));
	/* Threads again: the next grow runs in the background. */
	sk__worker_test_fail_starts(0, 0);
	sk_test_sleep_ms(5);
	i = (unsigned)sk_rhash_buckets(ht);
	/*
	 * Three times the keys again: whatever the grow threshold (75 % by
	 * default, so 2n could sit just above it, within the count's
	 * per-stripe lag), the load factor asks for a bigger table.
	 */
	insert_range(ht, o, n, 4 * n);
	end = sk_test_now() + HANG_S;
	while (sk_rhash_buckets(ht) == i && sk_test_now() < end)
		sk_test_sleep_ms(1);
	SK_CHECK_GT(sk_rhash_buckets(ht), i);
	for (i = 0; i < 4 * n; i += 997) {
		uint64_t k = i;

		sk_rcu_read_lock();
		SK_CHECK(sk_rhash_lookup(ht, &k) == &o[i]);
		sk_rcu_read_unlock();
	}
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/* fn in a fork child whose worker never started; must exit 0. */
static void in_fresh_child(void (*fn)(void))
{
	static struct sk_test_child c;

	sk_test_fork_child(fn, HANG_S, 0, &c);
	SK_CHECK_EQ(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1, 0);
}

static void rcu_child(void)
{
	rcu_calls_queue_while_no_worker_can_start();
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void rhash_child(void)
{
	rhash_grows_while_no_worker_can_start();
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void rcu_callbacks_wait_for_a_worker_that_cannot_start(void)
{
	in_fresh_child(rcu_child);
}

static void rhash_resizes_wait_for_a_worker_that_cannot_start(void)
{
	in_fresh_child(rhash_child);
}

/* ---- SRCU ----------------------------------------------------------------- */

SK_SRCU_DEFINE_STATIC(dom_a);
SK_SRCU_DEFINE_STATIC(dom_b);

/*
 * The polled request is made on a domain (a) that nothing else touches
 * afterwards: only the worker's rounds (or the barrier's, which does them
 * when the worker cannot start) can complete it.
 */
static void srcu_calls_queue_while_no_worker_can_start(void)
{
	static struct sk_rcu_head h[2];
	struct sk_srcu *a = &dom_a, *b = &dom_b;
	struct sk_test_capture cap;
	unsigned long cookie;
	char msg[1024];

	runs = 0;
	sk__worker_test_fail_starts(INT_MAX, EAGAIN);
	sk_test_capture_begin(&cap);
	SK_CHECK_EQ(sk_call_srcu(b, &h[0], count_cb), 0);
	SK_CHECK_EQ(sk_call_srcu(b, &h[1], count_cb), 0);
	cookie = sk_start_poll_synchronize_srcu(a);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(msg[0], '\0'); /* nothing printed */
	/* Queued, not dropped: the head is busy until its callback ran. */
	SK_CHECK_EQ(sk_call_srcu(b, &h[0], count_cb), -EBUSY);
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(runs_get(), 0); /* no thread could run them */
	/* The barrier cannot start the worker either: it does its work. */
	sk_srcu_barrier(b);
	SK_CHECK_EQ(runs_get(), 2);
	/* Threads again: a later call (past the retry delay) starts it. */
	sk__worker_test_fail_starts(0, 0);
	sk_test_sleep_ms(5);
	SK_CHECK_EQ(sk_call_srcu(b, &h[0], count_cb), 0);
	SK_CHECK(runs_reach(3));
	SK_CHECK(poll_until_done(poll_srcu, a, cookie, "SRCU"));
	sk_srcu_barrier(b);
	SK_CHECK_EQ(runs_get(), 3);
	SK_CHECK_EQ(sk_srcu_destroy(a), 0);
	SK_CHECK_EQ(sk_srcu_destroy(b), 0);
}

/* ---- per-CPU RCU workers ---------------------------------------------------- */

static void pcpu_start_failure_leaves_no_worker_running(void)
{
	static struct sk_rcu_head h;
	struct sk_test_capture cap;
	char msg[1024];
	int rc;

	runs = 0;
	SK_CHECK_EQ(sk_call_rcu(&h, count_cb), 0); /* the default worker */
	sk_rcu_barrier();
	sk__worker_test_fail_starts(1, EAGAIN);
	sk_test_capture_begin(&cap);
	rc = sk_rcu_cb_workers_create(SK_RCU_CB_WORKERS_UNPINNED);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	sk__worker_test_fail_starts(0, 0);
	SK_CHECK_EQ(rc, -EAGAIN);
	SK_CHECK_EQ(msg[0], '\0');
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_call_rcu(&h, count_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(runs_get(), 2);
	/* Without the failure: they start, and stop again. */
	SK_CHECK_EQ(sk_rcu_cb_workers_create(SK_RCU_CB_WORKERS_UNPINNED), 0);
	SK_CHECK_GT(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_call_rcu(&h, count_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(runs_get(), 3);
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), 0);
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), 0);
}

/* ---- an explicit resize that must run the background work itself -------- */

static struct sk_rhash *mid_ht;
static struct kobj *mid_o;
static unsigned mid_n;

/* The child: its worker never starts; the resize must not sleep forever. */
static void explicit_resize_child(void)
{
	unsigned i;

	sk_rcu_read_unlock();
	sk__worker_test_fail_starts(INT_MAX, EAGAIN);
	SK_CHECK_EQ(sk_rhash_resize(mid_ht, 1UL << 10), 0);
	SK_CHECK_EQ(sk_rhash_buckets(mid_ht), 1UL << 10);
	SK_CHECK_EQ(__atomic_load_n(&mid_ht->resize_lock, __ATOMIC_RELAXED), 0);
	for (i = 0; i < mid_n; i += 97) {
		uint64_t k = i;

		sk_rcu_read_lock();
		SK_CHECK(sk_rhash_lookup(mid_ht, &k) == &mid_o[i]);
		sk_rcu_read_unlock();
	}
	sk_rhash_destroy(mid_ht, NULL, NULL);
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

/*
 * Catch the background grow of 4096 buckets (16 slices) between two
 * slices (a read section holds up the grace period the next one waits
 * for), fork, and resize explicitly in the child.
 */
static void rhash_explicit_resize_runs_background_work_without_worker(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	int attempt, caught = 0;

	mid_n = 300000 / sk_test_slow();
	mid_o = calloc(mid_n, sizeof(*mid_o));
	SK_CHECK(mid_o != NULL);
	p.initial_buckets = p.min_buckets = 4096;
	p.head_offset = offsetof(struct kobj, node);
	p.key_offset = offsetof(struct kobj, key);
	p.key_len = sizeof(uint64_t);
	sk_rcu_register_thread();
	for (attempt = 0; attempt < 5 && !caught; attempt++) {
		mid_ht = sk_rhash_create(&p);
		SK_CHECK(mid_ht != NULL);
		insert_range(mid_ht, mid_o, 0, mid_n);
		while (!__atomic_load_n(&mid_ht->work_active, __ATOMIC_RELAXED) &&
		       sk_rhash_buckets(mid_ht) == 4096)
			sk_cpu_relax();
		sk_rcu_read_lock();
		sk_test_sleep_ms(20);
		caught = __atomic_load_n(&mid_ht->work_active, __ATOMIC_RELAXED) &&
			 __atomic_load_n(&mid_ht->resize_lock, __ATOMIC_RELAXED);
		if (caught)
			in_fresh_child(explicit_resize_child);
		sk_rcu_read_unlock();
		sk_rhash_destroy(mid_ht, NULL, NULL);
	}
	SK_CHECK(caught);
	free(mid_o);
	sk_rcu_unregister_thread();
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_worker (a wait that never ended?)", 4 * HANG_S);
	/* These two fork first: their children have no worker yet. */
	SK_RUN(rcu_callbacks_wait_for_a_worker_that_cannot_start);
	SK_RUN(rhash_resizes_wait_for_a_worker_that_cannot_start);
	SK_RUN(srcu_calls_queue_while_no_worker_can_start);
	SK_RUN(pcpu_start_failure_leaves_no_worker_running);
	SK_RUN(rhash_explicit_resize_runs_background_work_without_worker);
	return sk_test_report();
}
