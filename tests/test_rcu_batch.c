/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_batch.c - concurrent sk_synchronize_rcu() calls share grace
 * periods, and a caller served by another thread's grace period returns
 * only after it.
 *
 * What is proven:
 *   - a grace period runs only for a caller whose cookie names it, so
 *     rounds of concurrent calls run at most as many grace periods as
 *     their callers took distinct cookies.  Broken twin: every caller
 *     runs a grace period of its own (SK__RCU_SK__RCU_BUSTED_NO_BATCH), and rounds
 *     whose callers share a cookie run more;
 *   - callers that queue behind a running grace period (spinning, then
 *     asleep on their wait nodes) return only after the reader that holds
 *     up the next grace period, which serves them, has left.  Broken
 *     twin: the leader releases its batch before running the grace period
 *     (SK__RCU_SK__RCU_BUSTED_EARLY_WAKE), and the callers of that batch return
 *     while the reader is still inside.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

/* Hidden in every build of the library (src/internal/rcu.h). */
unsigned long sk__rcu_gp_count(void);

#define NTHREADS 4
#define ROUNDS 2000
/* A hang (a waiter nobody wakes) ends the test here with a message. */
#define HANG_S 120

/* ---- rounds of concurrent calls ----------------------------------------- */

struct rounds {
	pthread_barrier_t start, end;
	int nrounds;
	int snapped; /* callers that took their cookie, this round */
	unsigned long cookie[NTHREADS]; /* each caller's, this round */
};

struct caller {
	pthread_t t;
	struct rounds *r;
	int i;
};

static void *caller_main(void *arg)
{
	struct caller *c = arg;
	struct rounds *r = c->r;
	int i;

	for (i = 0; i < r->nrounds; i++) {
		pthread_barrier_wait(&r->start);
		r->cookie[c->i] = sk_get_state_synchronize_rcu();
		__atomic_fetch_add(&r->snapped, 1, __ATOMIC_RELEASE);
		sk_cond_synchronize_rcu(r->cookie[c->i]);
		pthread_barrier_wait(&r->end);
	}
	return NULL;
}

/* How many different cookies r->cookie holds. */
static unsigned long distinct_cookies(const struct rounds *r)
{
	unsigned long n = 0;
	int i, j;

	for (i = 0; i < NTHREADS; i++) {
		for (j = 0; j < i && r->cookie[j] != r->cookie[i]; j++)
			;
		n += j == i;
	}
	return n;
}

/*
 * Run nrounds rounds of NTHREADS concurrent calls (cookie, then
 * sk_cond_synchronize_rcu(), which waits as sk_synchronize_rcu() does);
 * returns how many rounds ran more grace periods than their callers held
 * distinct cookies.
 */
static int rounds_with_extra_gps(int nrounds)
{
	struct rounds r = { .nrounds = nrounds };
	struct caller c[NTHREADS];
	unsigned long g0, gps, most = 0;
	int i, bad = 0;

	pthread_barrier_init(&r.start, NULL, NTHREADS + 1);
	pthread_barrier_init(&r.end, NULL, NTHREADS + 1);
	for (i = 0; i < NTHREADS; i++) {
		c[i].r = &r;
		c[i].i = i;
		SK_CHECK_EQ(pthread_create(&c[i].t, NULL, caller_main, &c[i]),
			    0);
	}
	for (i = 0; i < nrounds; i++) {
		/* Every call of the last round has returned: no GP runs. */
		g0 = sk__rcu_gp_count();
		STORE(r.snapped, 0);
		/*
		 * Hold the round's first grace period until every caller has
		 * its cookie, so that they overlap: each took it before that
		 * grace period began, or while it ran.
		 */
		sk_rcu_read_lock();
		pthread_barrier_wait(&r.start);
		while (LOAD(r.snapped) < NTHREADS)
			sched_yield();
		sk_rcu_read_unlock();
		pthread_barrier_wait(&r.end);
		gps = sk__rcu_gp_count() - g0;
		most = gps > most ? gps : most;
		bad += gps > distinct_cookies(&r);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(c[i].t, NULL);
	pthread_barrier_destroy(&r.start);
	pthread_barrier_destroy(&r.end);
	fprintf(stderr, "    %d rounds of %d calls: at most %lu grace periods "
		"a round, %d rounds with more than their cookies\n",
		nrounds, NTHREADS, most, bad);
	return bad;
}

static int nrounds(void)
{
	return ROUNDS / (int)sk_test_slow();
}

/*
 * A grace period runs only for a caller whose cookie names it: callers
 * that snapshot before a grace period began share it, and the number of
 * grace periods in a round is at most the number of distinct cookies its
 * callers took (two callers that both snapshot before a grace period
 * began are served by one; ones that came during it, by one more).
 */
static void concurrent_calls_share_grace_periods(void)
{
	SK_CHECK_EQ(rounds_with_extra_gps(nrounds()), 0);
}

/* Broken twin: callers that do not share run extra grace periods. */
static void busted_no_batch_is_caught(void)
{
	int bad;

	sk__rcu_set_busted(SK__RCU_BUSTED_NO_BATCH);
	bad = rounds_with_extra_gps(nrounds() / 10 + 1);
	sk__rcu_set_busted(0);
	SK_CHECK_GT(bad, 0);
}

/* ---- waiters return after the grace period -------------------------------- */

struct waiter {
	pthread_t t;
	struct sk_test_holder *h; /* the reader whose section it waits for */
	int early; /* returned while that reader was still inside */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	sk_synchronize_rcu();
	w->early = !LOAD(w->h->left);
	return NULL;
}

static void waiter_start(struct waiter *w, struct sk_test_holder *h)
{
	w->h = h;
	w->early = 0;
	SK_CHECK_EQ(pthread_create(&w->t, NULL, waiter_main, w), 0);
}

/*
 * Reader r1 holds the grace period that caller w[0] leads; callers
 * w[1..] queue behind it (w[1] leads their batch, and waits for gp_lock)
 * and go to sleep.  Reader r2 then enters, after that grace period began
 * and so holding only the next one, which serves w[1..].  Returns how
 * many callers returned before the reader they wait for had left.
 */
static int waiters_returned_early(void)
{
	struct sk_test_holder r1, r2;
	struct waiter w[NTHREADS];
	struct sk_rcu_stats s0 = sk_test_rcu_stats();
	unsigned long c0;
	int i, early = 0;

	sk_test_holder_start(&r1, 0, NULL, NULL);
	c0 = sk_test_gp_ctr();
	waiter_start(&w[0], &r1);
	/* Its grace period took the queue before the others push. */
	sk_test_wait_gp_started(c0, NULL);
	for (i = 1; i < NTHREADS; i++)
		waiter_start(&w[i], &r2);
	/* All have entered sk_synchronize_rcu() (counted before queueing). */
	while (sk_test_rcu_stats().sync_calls - s0.sync_calls < NTHREADS)
		sched_yield();
	usleep(50000); /* let them queue, spin out and sleep */
	sk_test_holder_start(&r2, 0, NULL, NULL);
	sk_test_holder_release(&r1);
	usleep(50000); /* the next grace period waits for r2 */
	sk_test_holder_release(&r2);
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].t, NULL);
		early += w[i].early;
	}
	return early;
}

static void waiters_return_after_the_grace_period(void)
{
	struct sk_rcu_stats s0 = sk_test_rcu_stats(), s1;

	SK_CHECK_EQ(waiters_returned_early(), 0);
	/* The leaders counted every call they served. */
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.sync_calls - s0.sync_calls, (unsigned long)NTHREADS);
}

static void busted_early_wake_is_caught(void)
{
	int early;

	sk__rcu_set_busted(SK__RCU_BUSTED_EARLY_WAKE);
	early = waiters_returned_early();
	sk__rcu_set_busted(0);
	fprintf(stderr, "    busted: %d of %d returned early\n", early,
		NTHREADS);
	SK_CHECK_GT(early, 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_batch: a synchronize call", HANG_S);
	SK_RUN(concurrent_calls_share_grace_periods);
	SK_RUN(busted_no_batch_is_caught);
	SK_RUN(waiters_return_after_the_grace_period);
	SK_RUN(busted_early_wake_is_caught);
	return sk_test_report();
}
