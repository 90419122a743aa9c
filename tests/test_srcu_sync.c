/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_sync.c - srcu.h: concurrent synchronize callers keep the
 * guarantee and share grace periods, checked by the generation checker of
 * sk_test_srcu.h; its broken twin, a synchronize that does not wait, MUST
 * be caught.
 *
 * No assertion bounds wall-clock time.  "test_srcu_sync <name>" runs only
 * the tests whose name contains <name>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

static unsigned int slow; /* sk_test_slow(): 1, or 8 under sanitizers */
static uint64_t seed;

/* ---- 5. concurrent synchronize callers: generation checker --------------- */

struct gen_run {
	struct gen_dom g;
	int stop;
	int broken; /* synchronize is a no-op */
	unsigned long calls;
	struct gate go;
};

struct gen_thread {
	struct gen_run *run;
	int r;
	pthread_t tid;
};

static void *gen_reader(void *arg)
{
	struct gen_thread *me = arg;
	uint64_t rng = seed * 31 + (uint64_t)me->r + 1;

	while (!flag_get(&me->run->stop))
		gen_section(&me->run->g, me->r, &rng, 200);
	return NULL;
}

static void *gen_syncer(void *arg)
{
	struct gen_thread *me = arg;
	struct gen_run *run = me->run;
	unsigned long i, n = 300 / slow;

	gate_wait(&run->go);
	for (i = 0; i < n; i++) {
		unsigned long g0 = gen_begin(&run->g);

		if (!run->broken) {
			if ((i + (unsigned long)me->r) % 3 == 0)
				sk_synchronize_srcu_expedited(run->g.d);
			else
				sk_synchronize_srcu(run->g.d);
		}
		gen_check(&run->g, g0);
		__atomic_fetch_add(&run->calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static unsigned long gen_run_syncers(int broken, unsigned int nsync)
{
	struct gen_run run;
	struct gen_thread rd[GEN_READERS], sy[8];
	unsigned long v;
	unsigned int i;

	memset(&run, 0, sizeof(run));
	gen_dom_init(&run.g);
	run.broken = broken;
	gate_init(&run.go);
	for (i = 0; i < GEN_READERS; i++) {
		rd[i] = (struct gen_thread){ &run, (int)i, 0 };
		sk_test_thread_start(&rd[i].tid, gen_reader, &rd[i]);
	}
	for (i = 0; i < nsync; i++) {
		sy[i] = (struct gen_thread){ &run, (int)i, 0 };
		sk_test_thread_start(&sy[i].tid, gen_syncer, &sy[i]);
	}
	gen_wait_readers(&run.g, 4 * GEN_READERS);
	gate_open(&run.go);
	for (i = 0; i < nsync; i++)
		sk_test_thread_join(sy[i].tid);
	flag_set(&run.stop);
	for (i = 0; i < GEN_READERS; i++)
		sk_test_thread_join(rd[i].tid);
	v = run.g.violations;
	fprintf(stderr,
		"  %s: %u callers, %lu calls, %lu checks, %lu "
		"violations\n",
		broken ? "BROKEN (no wait)" : "synchronize", nsync, run.calls,
		run.g.checks, v);
	SK_CHECK_EQ(run.calls, nsync * (300 / slow));
	domain_free(run.g.d);
	return v;
}

static void concurrent_synchronize_callers_keep_the_guarantee(void)
{
	SK_CHECK_EQ(gen_run_syncers(0, 6), 0);
	/* BUSTED twin: the same checker must see open pre-existing sections. */
	SK_CHECK_GT(gen_run_syncers(1, 2), 0);
}

/*
 * Concurrent callers share grace periods.  There is no grace-period count
 * in the SRCU API; the cookie of sk_get_state_synchronize_srcu() is
 * "grace periods started + 1" in this implementation, so the difference
 * of two cookies counts the grace periods started in between (an
 * implementation detail the test states here).  N callers all blocked
 * behind one reader need at most two grace periods; without sharing they
 * would need N.
 */
static void concurrent_synchronize_callers_share_grace_periods(void)
{
	enum { N = 8 };
	struct sk_srcu *d = domain_new();
	struct syncer s[N];
	unsigned long before, after;
	struct holder h;
	int i;

	sk_synchronize_srcu(d);
	before = sk_get_state_synchronize_srcu(d);
	holder_start(&h, d, NULL);
	for (i = 0; i < N; i++)
		syncer_start(&s[i], d, i & 1);
	sk_test_sleep_ms(50); /* let them all take their cookie and block */
	for (i = 0; i < N; i++)
		SK_CHECK_EQ(flag_get(&s[i].done), 0);
	holder_finish(&h);
	for (i = 0; i < N; i++)
		sk_test_thread_join(s[i].tid);
	after = sk_get_state_synchronize_srcu(d);
	fprintf(stderr, "  %d concurrent callers: %lu grace periods\n", N,
		after - before);
	SK_CHECK_GT(after - before, 0);
	SK_CHECK_LE(after - before, N / 2);
	domain_free(d);
}

#define RUN(fn) SK_RUN_SELECTED(fn)

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	seed = sk_test_seed_init();
	slow = sk_test_slow();

	RUN(concurrent_synchronize_callers_keep_the_guarantee);
	RUN(concurrent_synchronize_callers_share_grace_periods);
	return sk_test_report();
}
