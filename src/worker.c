/* SPDX-License-Identifier: MIT */
/*
 * Callback worker threads (internal/worker.h): start, name, sleep, kick,
 * stop and fork reset, for RCU and SRCU alike.
 *
 * The labels of the worker protocol (WK-*): the legend is in
 * internal/worker.h.  All are placed here but WK-K1 and WK-K2, which the
 * inline sk__worker_wake() of internal/worker.h places in the kicker.
 */
#define _GNU_SOURCE
#include "internal/worker.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>

#include "internal/testing.h"

#ifdef SK_TESTING
static int fail_starts, fail_err;

void sk__worker_test_fail_starts(int n, int err)
{
	sk_atomic_store_relaxed(&fail_err, err);
	sk_atomic_store_relaxed(&fail_starts, n);
}

/* The error an injected failure gives (consumes one), or 0. */
static int injected_failure(void)
{
	int n = sk_atomic_load_relaxed(&fail_starts);

	while (n > 0 && !sk_atomic_cmpxchg_seq_cst(&fail_starts, &n, n - 1))
		;
	return n > 0 ? sk_atomic_load_relaxed(&fail_err) : 0;
}
#else
static inline int injected_failure(void)
{
	return 0;
}
#endif

static void *worker_thread(void *arg)
{
	struct sk__worker *w = arg;
	char name[16];

	if (w->cpu >= 0)
		snprintf(name, sizeof(name), "%s/%u", w->name,
			 (unsigned)w->cpu % 10000u);
	else
		snprintf(name, sizeof(name), "%s", w->name);
	pthread_setname_np(pthread_self(), name);
	w->loop(w);
	return NULL;
}

/* pthread_create() with every signal blocked in the new thread. */
static int create_masked(struct sk__worker *w, pthread_attr_t *attr)
{
	sigset_t all, old;
	int err = injected_failure();

	if (err)
		return err;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&w->thread, attr, worker_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

int sk__worker_start(struct sk__worker *w, const char *name,
		     sk__worker_loop_fn *loop, int cpu, unsigned flags)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	/*
	 * Atomic: a producer that read a stale pointer to w (a per-CPU
	 * worker stopped and started again) may still kick it: a spurious
	 * wake-up.
	 */
	sk_atomic_store_relaxed(&w->sleeping, SK__WK_AWAKE);
	sk_atomic_store_relaxed(&w->urgent, 0);
	sk_atomic_store_relaxed(&w->invoking, 0);
	sk_atomic_store_relaxed(&w->stop, 0);
	w->cpu = cpu;
	w->loop = loop;
	w->name = name;
	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	if (flags & SK__WK_PIN) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	if (!err)
		err = create_masked(w, &attr);
	pthread_attr_destroy(&attr);
	return -err;
}

int sk__worker_ensure(struct sk__worker *w, pthread_mutex_t *lock,
		      const char *name, sk__worker_loop_fn *loop)
{
	int err = 0;

	/* Acquire pairs with WK-S: the worker's fields are set. */
	if (SK_LIKELY(sk_atomic_load_acquire(&w->started)))
		return 0;
	pthread_mutex_lock(lock);
	if (!w->started) {
		err = sk__worker_start(w, name, loop, -1, 0);
		if (!err) {
			pthread_detach(w->thread);
			/* WK-S: release; pairs with the acquire above. */
			sk_atomic_store_release(&w->started, 1);
		}
	}
	pthread_mutex_unlock(lock);
	return err;
}

void sk__worker_wake_sleeper(struct sk__worker *w, int st)
{
	if (sk_atomic_cmpxchg_seq_cst(&w->sleeping, &st, SK__WK_AWAKE))
		sk__futex_wake(&w->sleeping, 1);
}

int sk__worker_take_kicks(struct sk__worker *w)
{
	/* WK-K3: consume the kicks before the look for work (see above). */
	return sk_atomic_xchg_seq_cst(&w->urgent, 0);
}

void sk__worker_sleep(struct sk__worker *w, int st, uint64_t timeout_ns,
		      int (*idle)(struct sk__worker *w, uint64_t *timeout_ns))
{
	/* WK-W1: announce the sleep before re-checking. */
	sk_atomic_xchg_seq_cst(&w->sleeping, st);
	/* WK-W2: WK-W1 before the re-check's loads; pairs with WK-K2. */
	sk_smp_mb__after_atomic();
	if (idle(w, &timeout_ns)) {
		if (timeout_ns)
			sk__futex_wait_ns(&w->sleeping, st, timeout_ns);
		else
			sk__futex_wait(&w->sleeping, st);
	}
	sk_atomic_store_relaxed(&w->sleeping, SK__WK_AWAKE);
}

void sk__worker_stop(struct sk__worker *w)
{
	sk_atomic_store_relaxed(&w->stop, 1);
	/* The stop store before the kick's load of sleeping (WK-K2 in it). */
	sk__worker_wake(w, SK__WK_KICK_URGENT);
	pthread_join(w->thread, NULL);
}

void sk__worker_fork_child(struct sk__worker *w)
{
	w->started = 0;
	w->sleeping = SK__WK_AWAKE;
	w->urgent = w->invoking = w->stop = 0;
}
