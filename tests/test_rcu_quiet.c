/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_quiet.c - normal grace periods that see every reader pass
 * without asking it anything (the quiet round, src/rcu_exp.c).
 *
 * What is proven:
 *   - with one busy general reader besides the caller, normal grace
 *     periods complete by the quiet round (the first-barrier count
 *     "quiet" moves) and the reader never sees an object poisoned after
 *     its grace period: only a word of the new phase counts as passed;
 *   - broken twin SK__RCU_BUSTED_QUIET: the round takes the reader for
 *     passed whatever its word shows and skips the scan; the reader then
 *     sees poisoned objects.
 * Where one scan does not suffice (32-bit words, SK_RCU_SEQ_BITS < 40) the
 * round never runs: there the test checks that no grace period counts as
 * quiet, and that the twin changes nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* Hidden in the library (src/internal/rcu.h); linked statically. */
enum { BUSTED_QUIET = 5 };
void sk__rcu_set_busted(int mode);
struct sk__rcu_gp_kinds {
	unsigned long handshake, heavy, qsbr_only, quiet;
};
void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k);

#define HAS_QUIET_ROUND (SK_RCU_SEQ_BITS >= 40)
#define Q_MAGIC ((unsigned long)0x9e3779b97f4a7c15ULL)
#define Q_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL)

struct qobj {
	unsigned long val;
	struct qobj *next; /* in the graveyard (twin: never freed early) */
};

static struct {
	struct qobj *ptr;
	struct qobj *grave;
	int stop;
	unsigned long reads, bad;
} q;

/* A busy general reader: sections of a few hundred nanoseconds. */
static void *q_reader(void *arg)
{
	unsigned long reads = 0, k;

	(void)arg;
	while (!LOAD(q.stop)) {
		struct qobj *p;
		unsigned long v1, v2;

		sk_rcu_read_lock();
		p = sk_rcu_dereference(q.ptr);
		v1 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		for (k = 0; k < 50; k++)
			sk_cpu_relax();
		v2 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
		sk_rcu_read_unlock();
		if (v1 != Q_MAGIC || v2 != Q_MAGIC)
			INC(q.bad);
		if (++reads % 1024 == 0)
			__atomic_fetch_add(&q.reads, 1024, __ATOMIC_RELAXED);
	}
	return NULL;
}

static struct qobj *q_new(void)
{
	struct qobj *p = malloc(sizeof(*p));

	if (!p)
		abort();
	p->val = Q_MAGIC;
	p->next = NULL;
	return p;
}

/*
 * Replace the object, wait with sk_synchronize_rcu(), poison the old one;
 * free it (keep) when keep is 0 (1): the twin's readers may still hold it.
 */
static void q_replace(int keep)
{
	struct qobj *old = q.ptr;

	sk_rcu_assign_pointer(q.ptr, q_new());
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
	q.ptr = q_new();
	q.grave = NULL;
	STORE(q.stop, 0);
	STORE(q.bad, 0);
	STORE(q.reads, 0);
	sk_test_thread_start(rd, q_reader, NULL);
	while (LOAD(q.reads) < 2048)
		sched_yield();
}

static void q_stop(pthread_t rd)
{
	struct qobj *p;

	STORE(q.stop, 1);
	sk_test_thread_join(rd);
	sk_synchronize_rcu();
	free(q.ptr);
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
		quiet, LOAD(q.reads), LOAD(q.bad));
	SK_CHECK_EQ(LOAD(q.bad), 0);
	if (HAS_QUIET_ROUND)
		SK_CHECK_GT(quiet, 0);
	else
		SK_CHECK_EQ(quiet, 0);
}

static int twin_caught(unsigned long quiet)
{
	(void)quiet;
	return LOAD(q.bad) > 0;
}

static void busted_quiet_round_is_caught(void)
{
	unsigned long quiet;
	pthread_t rd;

	q_start(&rd);
	sk__rcu_set_busted(BUSTED_QUIET);
	quiet = q_rounds(1, twin_caught);
	sk__rcu_set_busted(0);
	q_stop(rd);
	fprintf(stderr, "  twin: quiet grace periods %lu, bad reads %lu\n",
		quiet, LOAD(q.bad));
	if (HAS_QUIET_ROUND) {
		SK_CHECK_GT(LOAD(q.bad), 0);
	} else {
		/* No round to break: the grace periods stay correct. */
		SK_CHECK_EQ(quiet, 0);
		SK_CHECK_EQ(LOAD(q.bad), 0);
	}
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_quiet: a synchronize call", 120);
	SK_RUN_SELECTED(normal_grace_periods_pass_quietly);
	SK_RUN_SELECTED(busted_quiet_round_is_caught);
	return sk_test_report();
}
