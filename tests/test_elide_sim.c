/* SPDX-License-Identifier: MIT */
/*
 * The elision state machine on the simulated backend (the library built
 * with SK_ELIDE_SIM, tests/elide_sim.cmake): every abort path driven by
 * injected abort statuses, the retry and skip knobs, nesting, trylock
 * inside a section, statistics, and mutual exclusion with real threads
 * under random aborts, plus the busted twin (sections that do not read
 * the lock word) that the same check must catch.
 */
#define _GNU_SOURCE
#define SK_ELIDE_SIM 1
#include <errno.h>

#include "../src/internal/elide.h"
#include "sk_test_elide.h"

#define ST_CONFLICT (SK__TX_CONFLICT | SK__TX_RETRY)
#define ST_CAPACITY SK__TX_CAPACITY
#define ST_EXPLICIT SK__TX_ABORTED(1)
#define ST_BUSY	    SK__TX_ABORTED(SK__XABORT_BUSY)
#define ST_OTHER    0u

static struct sk_elide_stats st;
static struct elide_lock L;

/* Fresh lock with st attached to all three, default knobs. */
static void fresh(void)
{
	struct sk_elide_tuning d = SK_ELIDE_TUNING_DEFAULT;
	int k;

	SK_CHECK_EQ(sk_elide_set_tuning(&d), 0);
	elide_lock_init(&L);
	sk_elide_stats_reset(&st);
	for (k = 0; k < ELIDE_NOPS; k++)
		elide_ops[k].attach(&L, &st);
}

/* One lock+unlock; returns whether the section ran elided. */
static int once(const struct elide_ops *o)
{
	int in;

	o->lock(&L);
	in = sk_elide_in_transaction();
	o->unlock(&L);
	return in;
}

static void set_knobs(unsigned int retries, unsigned int init,
		      unsigned int max)
{
	struct sk_elide_tuning t = SK_ELIDE_TUNING_DEFAULT;

	t.conflict_retries = retries;
	t.skip_initial = init;
	t.skip_max = max;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
}

static void backend_is_sim(void)
{
	SK_CHECK_EQ(sk_elide_backend(), SK_ELIDE_BACKEND_SIM);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	SK_CHECK_EQ(sk_elide_backend(), SK_ELIDE_BACKEND_FALLBACK);
	fresh();
	SK_CHECK_EQ(once(&elide_ops[0]), 0);
	SK_CHECK_EQ(st.commits + st.fallbacks + st.skips, 0);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
	SK_CHECK_EQ(sk_elide_backend(), SK_ELIDE_BACKEND_SIM);
}

static void commit_on_every_lock(void)
{
	int k;

	fresh();
	for (k = 0; k < ELIDE_NOPS; k++)
		SK_CHECK_EQ(once(&elide_ops[k]), 1);
	SK_CHECK_EQ(once(&elide_read_ops), 1);
	SK_CHECK_EQ(st.commits, ELIDE_NOPS + 1);
	SK_CHECK_EQ(st.fallbacks, 0);
	SK_CHECK_EQ(sk_elide_in_transaction(), 0);
}

static void conflict_is_retried_then_commits(void)
{
	int k;

	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		sk__elide_sim_inject(ST_CONFLICT);
		sk__elide_sim_inject(ST_CONFLICT);
		SK_CHECK_EQ(once(&elide_ops[k]), 1);
		SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_CONFLICT], 2);
		SK_CHECK_EQ(st.commits, 1);
		SK_CHECK_EQ(st.fallbacks, 0);
		SK_CHECK_EQ(once(&elide_ops[k]), 1); /* no skipping after it */
	}
}

static void conflict_retry_limit_is_the_knob(void)
{
	unsigned int r;
	int i;

	for (r = 0; r <= 5; r += 5) {
		fresh();
		set_knobs(r, 4, 1024);
		for (i = 0; i < 8; i++)
			sk__elide_sim_inject(ST_CONFLICT);
		SK_CHECK_EQ(once(&elide_ops[0]), 0);
		SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_CONFLICT], r + 1);
		SK_CHECK_EQ(st.fallbacks, 1);
		SK_CHECK_EQ(st.skips, 0);
		sk__elide_sim_inject(0xdead); /* flush: drop what is left */
		while (!once(&elide_ops[0]))
			;
	}
}

/* Capacity, explicit and busy make the lock skip; "other" does not. */
static void each_abort_cause_counts_and_adapts(void)
{
	static const unsigned int status[] = { ST_CAPACITY, ST_EXPLICIT,
					       ST_BUSY, ST_OTHER };
	static const int cause[] = { SK_ELIDE_ABORT_CAPACITY,
				     SK_ELIDE_ABORT_EXPLICIT,
				     SK_ELIDE_ABORT_BUSY,
				     SK_ELIDE_ABORT_OTHER };
	int i, k;

	for (k = 0; k < ELIDE_NOPS; k++)
		for (i = 0; i < 4; i++) {
			fresh();
			set_knobs(3, 2, 1024);
			sk__elide_sim_inject(status[i]);
			SK_CHECK_EQ(once(&elide_ops[k]), 0);
			SK_CHECK_EQ(st.aborts[cause[i]], 1);
			SK_CHECK_EQ(st.fallbacks, 1);
			SK_CHECK_EQ(once(&elide_ops[k]), i == 3);
			SK_CHECK_EQ(once(&elide_ops[k]), i == 3);
			SK_CHECK_EQ(once(&elide_ops[k]), 1);
			SK_CHECK_EQ(st.skips, i == 3 ? 0 : 2);
		}
}

/* Count acquisitions until one is elided again. */
static int skipped_before_elided(void)
{
	int n = 0;

	while (!once(&elide_ops[0]))
		n++;
	return n;
}

static void skip_grows_caps_and_decays(void)
{
	static const int want[] = { 2, 4, 8, 8 };
	unsigned long s0;
	int i, j;

	fresh();
	set_knobs(3, 2, 8);
	sk__elide_sim_inject(ST_CAPACITY);
	SK_CHECK_EQ(once(&elide_ops[0]), 0);
	SK_CHECK_EQ(skipped_before_elided(), 2); /* level 0: 2 << 0 */
	/* The commit decayed the level back to 0: the same skip again. */
	sk__elide_sim_inject(ST_CAPACITY);
	SK_CHECK_EQ(once(&elide_ops[0]), 0);
	SK_CHECK_EQ(skipped_before_elided(), 2);
	/* Aborts in a row (no commit between): 2, 4, 8, then capped at 8. */
	fresh();
	set_knobs(3, 2, 8);
	for (i = 0; i < 4; i++) {
		sk__elide_sim_inject(ST_CAPACITY);
		SK_CHECK_EQ(once(&elide_ops[0]), 0);
		SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_CAPACITY], i + 1);
		s0 = st.skips;
		for (j = 0; j < want[i]; j++)
			SK_CHECK_EQ(once(&elide_ops[0]), 0);
		SK_CHECK_EQ(st.skips - s0, want[i]);
	}
	SK_CHECK_EQ(once(&elide_ops[0]), 1); /* and elides again */
	SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_CAPACITY], 4);
}

/* ---- lock busy at start: a real holder in another thread ------------------ */

static void *busy_locker(void *arg)
{
	const struct elide_ops *o = arg;

	o->lock(&L);
	o->unlock(&L);
	return NULL;
}

static void busy_lock_at_start_falls_back(void)
{
	pthread_t t;
	int k;

	elide_deadline("busy_lock_at_start_falls_back", 120);
	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		SK_CHECK_EQ(elide_ops[k].trylock(&L), 0); /* real: not in a tx */
		sk_test_thread_start(&t, busy_locker, (void *)&elide_ops[k]);
		while (!__atomic_load_n(&st.fallbacks, __ATOMIC_RELAXED))
			sched_yield();
		elide_ops[k].unlock(&L);
		sk_test_thread_join(t);
		SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_BUSY], 1);
		SK_CHECK_EQ(st.commits, 0);
		SK_CHECK_EQ(once(&elide_ops[k]), 0); /* skipping now */
	}
	alarm(0);
}

/* ---- nesting and trylock inside ---------------------------------------------- */

static void nested_sections_commit_once(void)
{
	struct sk_elided_mutex inner = SK_ELIDED_MUTEX_INITIALIZER;

	fresh();
	sk_elided_mutex_attach_stats(&inner, &st);
	sk_elided_rwlock_read_lock(&L.rw);
	sk_elided_mutex_lock(&L.m);
	sk_elided_spinlock_lock(&L.s);
	sk_elided_mutex_lock(&inner);
	SK_CHECK_EQ(sk_elide_in_transaction(), 1);
	sk_elided_mutex_unlock(&inner);
	sk_elided_spinlock_unlock(&L.s);
	sk_elided_mutex_unlock(&L.m);
	SK_CHECK_EQ(st.commits, 0);
	SK_CHECK_EQ(sk_elide_in_transaction(), 1);
	sk_elided_rwlock_read_unlock(&L.rw);
	SK_CHECK_EQ(sk_elide_in_transaction(), 0);
	SK_CHECK_EQ(st.commits, 1);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&inner), 0);
}

/* Deeper than the simulated nesting limit: "other", reported at the end. */
static void nesting_too_deep_aborts_as_other(void)
{
	struct sk_elided_mutex m[10];
	int i;

	fresh();
	for (i = 0; i < 10; i++) {
		sk_elided_mutex_init(&m[i]);
		sk_elided_mutex_attach_stats(&m[i], &st);
	}
	for (i = 0; i < 10; i++)
		sk_elided_mutex_lock(&m[i]);
	for (i = 9; i >= 0; i--)
		sk_elided_mutex_unlock(&m[i]);
	SK_CHECK_EQ(st.commits, 0);
	SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_OTHER], 1);
	SK_CHECK_EQ(st.fallbacks, 1);
	for (i = 0; i < 10; i++)
		SK_CHECK_EQ(sk_elided_mutex_destroy(&m[i]), 0);
}

static void trylock_inside_transaction_aborts(void)
{
	int k;

	/* Its own lock, elided by this very section: never "got it". */
	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		elide_ops[k].lock(&L);
		SK_CHECK_EQ(sk_elide_in_transaction(), 1);
		SK_CHECK_EQ(elide_ops[k].trylock(&L), -EBUSY);
		elide_ops[k].unlock(&L);
		SK_CHECK_EQ(st.commits, 0);
		SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_EXPLICIT], 1);
		SK_CHECK_EQ(st.fallbacks, 1);
	}
	/* With the stats on the outer lock: the abort is explicit. */
	fresh();
	sk_elided_mutex_lock(&L.m);
	SK_CHECK_EQ(sk_elided_spinlock_trylock(&L.s), 0);
	sk_elided_spinlock_unlock(&L.s);
	sk_elided_mutex_unlock(&L.m);
	SK_CHECK_EQ(st.commits, 0);
	SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_EXPLICIT], 1);
	SK_CHECK_EQ(st.fallbacks, 1);
	SK_CHECK_EQ(once(&elide_ops[0]), 0); /* explicit: the lock skips */
}

static void stats_shared_by_two_locks(void)
{
	struct sk_elided_spinlock s2 = SK_ELIDED_SPINLOCK_INITIALIZER;
	struct sk_elide_stats r;
	int i;

	fresh();
	sk_elided_spinlock_attach_stats(&s2, &st);
	for (i = 0; i < 5; i++) {
		once(&elide_ops[1]);
		sk_elided_spinlock_lock(&s2);
		sk_elided_spinlock_unlock(&s2);
	}
	sk__elide_sim_inject(ST_CAPACITY);
	sk_elided_spinlock_lock(&s2);
	sk_elided_spinlock_unlock(&s2);
	sk_elide_stats_read(&st, &r);
	SK_CHECK_EQ(r.commits, 10);
	SK_CHECK_EQ(r.aborts[SK_ELIDE_ABORT_CAPACITY], 1);
	SK_CHECK_EQ(once(&elide_ops[1]), 1); /* L.s does not skip: s2 does */
	sk_elided_spinlock_attach_stats(&s2, NULL);
	sk_elided_spinlock_lock(&s2);
	sk_elided_spinlock_unlock(&s2);
	SK_CHECK_EQ(st.skips, 0);
}

/* ---- threads ------------------------------------------------------------------ */

static unsigned long run_all_kinds(int busted)
{
	struct elide_stress s = { 0 };
	unsigned long lost = 0, torn = 0;
	int k;

	s.lock = &L;
	s.racy = busted;
	s.iters = 4000 / sk_test_slow();
	/*
	 * The twin runs without aborts: with a real holder beside a busted
	 * section, the holder's unlock would find its lock already released
	 * and stop the program (sk__die) instead of letting the count fail.
	 */
	sk__elide_sim_random(busted ? 0 : 300, sk_t_seed);
	sk__elide_sim_busted(busted);
	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		s.ops = &elide_ops[k];
		s.rd_ops = k == 2 ? &elide_read_ops : NULL;
		lost += elide_stress_run(&s, 3, s.rd_ops ? 2 : 0);
		torn += s.torn;
	}
	sk__elide_sim_busted(0);
	sk__elide_sim_random(0, 0);
	fprintf(stderr, "    busted=%d: lost %lu, torn reads %lu; commits %lu, "
			"fallbacks %lu, skips %lu\n",
		busted, lost, torn, st.commits, st.fallbacks, st.skips);
	return lost + torn;
}

static void threads_exclude_under_random_aborts(void)
{
	elide_deadline("threads_exclude_under_random_aborts", 240);
	SK_CHECK_EQ(run_all_kinds(0), 0);
	SK_CHECK_GT(st.commits, 0);
	SK_CHECK_GT(st.fallbacks, 0);
	alarm(0);
}

/* The twin: sections that do not read (claim) the lock word must be caught. */
static void busted_twin_is_caught(void)
{
	elide_deadline("busted_twin_is_caught", 240);
	SK_CHECK_GT(run_all_kinds(1), 0);
	alarm(0);
}

static void *no_op(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	sk_test_args(argc, argv);
	sk_test_seed_init();
	/*
	 * A process that never had a second thread takes the mutex without
	 * trying elision (as glibc does): have one, as users of locks do.
	 */
	sk_test_thread_start(&t, no_op, NULL);
	sk_test_thread_join(t);
	SK_RUN_SELECTED(backend_is_sim);
	SK_RUN_SELECTED(commit_on_every_lock);
	SK_RUN_SELECTED(conflict_is_retried_then_commits);
	SK_RUN_SELECTED(conflict_retry_limit_is_the_knob);
	SK_RUN_SELECTED(each_abort_cause_counts_and_adapts);
	SK_RUN_SELECTED(skip_grows_caps_and_decays);
	SK_RUN_SELECTED(busy_lock_at_start_falls_back);
	SK_RUN_SELECTED(nested_sections_commit_once);
	SK_RUN_SELECTED(nesting_too_deep_aborts_as_other);
	SK_RUN_SELECTED(trylock_inside_transaction_aborts);
	SK_RUN_SELECTED(stats_shared_by_two_locks);
	SK_RUN_SELECTED(threads_exclude_under_random_aborts);
	SK_RUN_SELECTED(busted_twin_is_caught);
	return sk_test_report();
}
