/* SPDX-License-Identifier: MIT */
/*
 * test_worker.c - the callback worker threads of RCU and SRCU
 * (src/worker.c) when their thread cannot be started.
 *
 * The test hook sk__worker_test_fail_starts() (scalekit_hooks, declared
 * here) makes the next worker starts fail as if pthread_create() had
 * returned an error.  Checked, for RCU and SRCU alike:
 *   - sk_call_rcu() / sk_call_srcu() return that error negated (-EAGAIN,
 *     -EPERM: one mapping for both), print nothing and leave the head
 *     untouched; a later call starts the worker and its callback runs once;
 *   - sk_start_poll_synchronize_rcu() / _srcu() keep a request they could
 *     not hand to a worker: once a later call has started the worker, the
 *     cookie completes without anyone waiting for a grace period (a
 *     request dropped on the failure would never complete: the test
 *     reports a hang);
 *   - sk_rcu_cb_workers_create() whose per-CPU start fails returns the
 *     error with no per-CPU worker left running, and callbacks still run.
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

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* Test hook of src/worker.c (hidden: the test links scalekit_hooks). */
void sk__worker_test_fail_starts(int n, int err);

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

static int poll_rcu(void *arg, unsigned long cookie)
{
	(void)arg;
	return sk_poll_state_synchronize_rcu(cookie);
}

static int poll_srcu(void *arg, unsigned long cookie)
{
	return sk_poll_state_synchronize_srcu(arg, cookie);
}

/*
 * call(head) with the next worker start failing with err: returns
 * -err, prints nothing, and leaves head as it was.
 */
static void call_fails_cleanly(int (*call)(struct sk_rcu_head *h), int err)
{
	struct sk_rcu_head h, before;
	struct sk_test_capture cap;
	char msg[1024];
	int rc;

	memset(&h, 0xa5, sizeof(h));
	before = h;
	sk__worker_test_fail_starts(1, err);
	sk_test_capture_begin(&cap);
	rc = call(&h);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	sk__worker_test_fail_starts(0, 0);
	SK_CHECK_EQ(rc, -err);
	SK_CHECK_EQ(msg[0], '\0'); /* a returned error prints nothing */
	SK_CHECK_EQ(memcmp(&h, &before, sizeof(h)), 0);
}

/* Cookie of start_poll() while the next worker start fails; silent. */
static unsigned long start_poll_failing(unsigned long (*start)(void *arg),
					void *arg)
{
	struct sk_test_capture cap;
	unsigned long cookie;
	char msg[1024];

	sk__worker_test_fail_starts(1, EAGAIN);
	sk_test_capture_begin(&cap);
	cookie = start(arg);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	sk__worker_test_fail_starts(0, 0);
	SK_CHECK_EQ(msg[0], '\0');
	return cookie;
}

/* ---- RCU ------------------------------------------------------------------ */

static int call_rcu(struct sk_rcu_head *h)
{
	return sk_call_rcu(h, count_cb);
}

static unsigned long start_poll_rcu(void *arg)
{
	(void)arg;
	return sk_start_poll_synchronize_rcu();
}

static void rcu_start_failure_is_returned_and_retried(void)
{
	static struct sk_rcu_head h;
	unsigned long cookie;

	runs = 0;
	call_fails_cleanly(call_rcu, EAGAIN);
	call_fails_cleanly(call_rcu, EPERM);
	cookie = start_poll_failing(start_poll_rcu, NULL);
	/* This call starts the worker; the poll request was kept. */
	SK_CHECK_EQ(sk_call_rcu(&h, count_cb), 0);
	SK_CHECK(poll_until_done(poll_rcu, NULL, cookie, "RCU"));
	sk_rcu_barrier();
	SK_CHECK_EQ(runs_get(), 1);
}

/* ---- SRCU ----------------------------------------------------------------- */

static struct sk_srcu *srcu_d;

static int call_srcu(struct sk_rcu_head *h)
{
	return sk_call_srcu(srcu_d, h, count_cb);
}

static unsigned long start_poll_srcu(void *arg)
{
	return sk_start_poll_synchronize_srcu(arg);
}

SK_SRCU_DEFINE_STATIC(dom_a);
SK_SRCU_DEFINE_STATIC(dom_b);

/*
 * The polled request is made on a domain (a) that nothing else touches
 * afterwards: only the worker, started by a call on another domain (b),
 * can complete it.
 */
static void srcu_start_failure_is_returned_and_retried(void)
{
	static struct sk_rcu_head h;
	struct sk_srcu *a = &dom_a, *b = &dom_b;
	unsigned long cookie;

	runs = 0;
	srcu_d = b;
	call_fails_cleanly(call_srcu, EAGAIN);
	call_fails_cleanly(call_srcu, EPERM);
	cookie = start_poll_failing(start_poll_srcu, a);
	/* Nothing pending on b: the barrier needs no worker. */
	sk_srcu_barrier(b);
	/* This call starts the worker; a's poll request was kept. */
	SK_CHECK_EQ(sk_call_srcu(b, &h, count_cb), 0);
	SK_CHECK(poll_until_done(poll_srcu, a, cookie, "SRCU"));
	sk_srcu_barrier(b);
	SK_CHECK_EQ(runs_get(), 1);
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

#define RUN(fn) SK_RUN_SELECTED(fn)

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_worker (a wait that never ended?)", 4 * HANG_S);
	RUN(rcu_start_failure_is_returned_and_retried);
	RUN(srcu_start_failure_is_returned_and_retried);
	RUN(pcpu_start_failure_leaves_no_worker_running);
	return sk_test_report();
}
