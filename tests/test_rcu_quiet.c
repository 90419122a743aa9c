/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_quiet.c - normal grace periods that see every reader pass
 * without asking it anything (the quiet round, src/rcu_handshake.c).
 *
 * What is proven:
 *   - with one busy general reader besides the caller, normal grace
 *     periods complete by the quiet round (the first-barrier count
 *     "quiet" moves) and the reader never sees an object poisoned after
 *     its grace period: only a word of the new phase counts as passed;
 *   - broken twin SK__RCU_BUSTED_QUIET: the round takes the reader for
 *     passed whatever its word shows and skips the scan; the reader then
 *     sees poisoned objects.
 * Where one scan does not suffice (32-bit words, SK__RCU_SEQ_BITS < 40) the
 * round never runs: there the test checks that no grace period counts as
 * quiet, and that the twin changes nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

#define HAS_QUIET_ROUND (SK__RCU_SEQ_BITS >= 40)
#define Q_MAGIC ((unsigned long)0x9e3779b97f4a7c15ULL)
#define Q_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL)

static struct {
	struct sk_test_busy b; /* the reader and its object */
	struct sk_test_robj *grave;
} q;

/*
 * Replace the object, wait with sk_synchronize_rcu(), poison the old one;
 * free it (keep) when keep is 0 (1): the twin's readers may still hold it.
 */
static void q_replace(int keep)
{
	struct sk_test_robj *old = q.b.ptr;

	sk_rcu_assign_pointer(q.b.ptr, sk_test_robj_new(Q_MAGIC));
	sk_synchronize_rcu();
	__atomic_store_n(&old->val, Q_POISON, __ATOMIC_RELAXED);
	if (keep) {
		old->next = q.grave;
		q.grave = old;
	} else {
		free(old);
	}
}

static void q_start(pthread_t *rd)
{
	q.b.ptr = sk_test_robj_new(Q_MAGIC);
	q.b.magic = Q_MAGIC;
	q.grave = NULL;
	STORE(q.b.stop, 0);
	STORE(q.b.bad, 0);
	STORE(q.b.reads, 0);
	sk_test_thread_start(rd, sk_test_busy_reader, &q.b);
	while (LOAD(q.b.reads) < 2048)
		sched_yield();
}

static void q_stop(pthread_t rd)
{
	struct sk_test_robj *p;

	STORE(q.b.stop, 1);
	sk_test_thread_join(rd);
	sk_synchronize_rcu();
	free(q.b.ptr);
	while ((p = q.grave)) {
		q.grave = p->next;
		free(p);
	}
}

/*
 * Rounds of 100 replacements until stop(kinds so far) says so, or 30 s
 * passed (CTest runs this program alone: the reader has a CPU), or, where
 * the library has no quiet round, after 10 rounds; returns the quiet grace
 * periods counted.
 */
static unsigned long q_rounds(int keep, int (*stop)(unsigned long quiet))
{
	struct sk__rcu_gp_kinds k0, k1;
	double deadline = sk_test_now() + 30.0;
	int i, rounds = 0;

	sk__rcu_get_gp_kinds(&k0);
	do {
		for (i = 0; i < 100; i++)
			q_replace(keep);
		sk__rcu_get_gp_kinds(&k1);
	} while (!stop(k1.quiet - k0.quiet) && sk_test_now() < deadline &&
		 (HAS_QUIET_ROUND || ++rounds < 10));
	return k1.quiet - k0.quiet;
}

static int enough_quiet(unsigned long quiet)
{
	return quiet >= 100;
}

static void normal_grace_periods_pass_quietly(void)
{
	unsigned long quiet;
	pthread_t rd;

	q_start(&rd);
	quiet = q_rounds(0, enough_quiet);
	q_stop(rd);
	fprintf(stderr, "  quiet grace periods: %lu, reads %lu, bad %lu\n",
		quiet, LOAD(q.b.reads), LOAD(q.b.bad));
	SK_CHECK_EQ(LOAD(q.b.bad), 0);
	if (HAS_QUIET_ROUND)
		SK_CHECK_GT(quiet, 0);
	else
		SK_CHECK_EQ(quiet, 0);
}

static int twin_caught(unsigned long quiet)
{
	(void)quiet;
	return LOAD(q.b.bad) > 0;
}

static void busted_quiet_round_is_caught(void)
{
	unsigned long quiet;
	pthread_t rd;

	q_start(&rd);
	sk__rcu_set_busted(SK__RCU_BUSTED_QUIET);
	quiet = q_rounds(1, twin_caught);
	sk__rcu_set_busted(0);
	q_stop(rd);
	fprintf(stderr, "  twin: quiet grace periods %lu, bad reads %lu\n",
		quiet, LOAD(q.b.bad));
	if (HAS_QUIET_ROUND) {
		SK_CHECK_GT(LOAD(q.b.bad), 0);
	} else {
		/* No round to break: the grace periods stay correct. */
		SK_CHECK_EQ(quiet, 0);
		SK_CHECK_EQ(LOAD(q.b.bad), 0);
	}
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_quiet: a synchronize call", 120);
	SK_RUN(normal_grace_periods_pass_quietly);
	SK_RUN(busted_quiet_round_is_caught);
	return sk_test_report();
}
