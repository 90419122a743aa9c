/* SPDX-License-Identifier: MIT */
/*
 * The elision state machine on the simulated backend (the library built
 * with SK_ELIDE_SIM, tests/elide_sim.cmake): every abort path driven by
 * injected abort statuses, the retry and skip knobs, nesting, trylock
 * inside a section, statistics, and mutual exclusion with real threads
 * under random aborts, plus the busted twins (sections that do not read
 * the lock word; a spinlock claim that judges a second load, run through
 * the one schedule that breaks it) that the same checks must catch.
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
		el_attach(&elide_ops[k], &L, &st);
}

/* One lock+unlock; returns whether the section ran elided. */
static int once(const struct elide_ops *o)
{
	int in;

	el_lock(o, &L);
	in = sk_elide_in_transaction();
	el_unlock(o, &L);
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
	SK_CHECK_EQ(sk_elide_backend(), SK__ELIDE_BACKEND_SIM);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	SK_CHECK_EQ(sk_elide_backend(), SK_ELIDE_BACKEND_FALLBACK);
	fresh();
	SK_CHECK_EQ(once(&elide_ops[0]), 0);
	SK_CHECK_EQ(st.commits + st.fallbacks + st.skips, 0);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
	SK_CHECK_EQ(sk_elide_backend(), SK__ELIDE_BACKEND_SIM);
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

	el_lock(o, &L);
	el_unlock(o, &L);
	return NULL;
}

static void busy_lock_at_start_falls_back(void)
{
	pthread_t t;
	int k;

	elide_deadline("busy_lock_at_start_falls_back", 120);
	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		/* Real: not in a transaction. */
		SK_CHECK_EQ(el_trylock(&elide_ops[k], &L), 0);
		sk_test_thread_start(&t, busy_locker, (void *)&elide_ops[k]);
		while (!__atomic_load_n(&st.fallbacks, __ATOMIC_RELAXED))
			sched_yield();
		el_unlock(&elide_ops[k], &L);
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

/*
 * The simulated instructions themselves: one flat transaction with a
 * nesting count, as RTM keeps it.  An inner XEND only decrements the
 * count; an abort inside is reported by the outermost XEND (the hardware
 * would have rolled back to the outermost XBEGIN); claims stay until the
 * commit unless their lock is unlocked.
 */
static void sim_models_rtm_nesting(void)
{
	fresh();
	sk__sim_xabort(ST_BUSY); /* outside a transaction: nothing */
	SK_CHECK_EQ(sk__sim_xbegin(), SK__TX_STARTED);
	SK_CHECK_EQ(sk__sim_read_lock(SK__ELIDE_MUTEX, &L.m.word), 1);
	SK_CHECK_EQ(sk__sim_xbegin(), SK__TX_STARTED);
	SK_CHECK_EQ(sk__sim_xtest(), 1);
	SK_CHECK_EQ(sk__sim_read_lock(SK__ELIDE_SPIN, &L.s.word), 1);
	SK_CHECK_EQ(sk__sim_read_lock(SK__ELIDE_MUTEX, &L.m.word), 1);
	sk__sim_read_unlock(SK__ELIDE_MUTEX, &L.m.word); /* still claimed */
	SK_CHECK_EQ(sk_elided_mutex_trylock(&L.m), -EBUSY); /* aborts */
	SK_CHECK_EQ(sk__sim_xend(), 0);
	SK_CHECK_EQ(sk__sim_xtest(), 1);
	SK_CHECK_EQ(sk_elided_spinlock_destroy(&L.s), -EBUSY);
	SK_CHECK_EQ(sk__sim_xend(), SK__TX_ABORTED(SK__XABORT_TRYLOCK));
	SK_CHECK_EQ(sk__sim_xtest(), 0);
	SK_CHECK_EQ(sk_elided_spinlock_destroy(&L.s), 0);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&L.m), 0);
	SK_CHECK_EQ(sk__sim_xbegin(), SK__TX_STARTED); /* no doom left */
	SK_CHECK_EQ(sk__sim_xend(), 0);
}

/* The exclusive side of o's lock: the writers' for the rwlock's readers. */
static const struct elide_ops *excl_ops(const struct elide_ops *o)
{
	return o == &elide_read_ops ? &elide_ops[2] : o;
}

/* Another thread's trylock of o's lock L, exclusive. */
static void *try_other(void *arg)
{
	const struct elide_ops *o = excl_ops(arg);

	if (el_trylock(o, &L))
		return (void *)0;
	el_unlock(o, &L);
	return (void *)1;
}

/* 1 when a thread other than this one can take o's lock L now. */
static int other_thread_gets(const struct elide_ops *o)
{
	pthread_t t;
	void *got;

	sk_test_thread_start(&t, try_other, (void *)o);
	got = sk_test_thread_join(t);
	return got != NULL;
}

/* All the kinds of elided acquisition: three exclusive locks, a reader. */
static const struct elide_ops *kind_ops(int k)
{
	return k < ELIDE_NOPS ? &elide_ops[k] : &elide_read_ops;
}

/*
 * Outer section on L (outer kind), an inner one on *il (inner kind) that
 * begins and ends inside it; 1 when, after the inner unlock, the outer
 * section still runs in the transaction, nothing committed yet, and its
 * lock still keeps other threads out.  The outer lock is unlocked only
 * while the transaction runs: once it has ended, the outer lock is no
 * longer held, and unlocking it would stop the program.
 */
static int inner_unlock_leaves_outer(int outer, int inner,
				     struct elide_lock *il)
{
	const struct elide_ops *o = kind_ops(outer), *i = kind_ops(inner);
	int in_tx, other, commits;

	el_lock(o, &L);
	el_lock(i, il);
	el_unlock(i, il);
	in_tx = sk_elide_in_transaction();
	commits = (int)st.commits;
	other = other_thread_gets(o);
	if (in_tx)
		el_unlock(o, &L);
	if (in_tx && !commits && !other)
		return 1;
	fprintf(stderr, "    outer %s, inner %s%s: after the inner unlock in "
			"transaction %d, commits %d, another thread took the "
			"outer lock %d\n",
		o->name, i->name, il == &L ? " (same lock)" : "", in_tx,
		commits, other);
	return 0;
}

/*
 * Every pair of kinds, and a reader inside a reader of the same rwlock:
 * the inner unlock must not end the transaction (issue 24: on RTM it ran
 * XEND, which committed the outer section at hardware nesting depth 1).
 * busted: the twin, where every elided unlock ends it; returns how many
 * pairs kept the outer section.
 */
static int nested_pairs_kept(int busted)
{
	struct elide_lock x;
	int a, b, k, kept = 0, n = 0;

	sk__elide_sim_busted_nesting(busted);
	for (k = 0; k <= 16; k++, n++) {
		a = k < 16 ? k / 4 : 3;
		b = k < 16 ? k % 4 : 3;
		fresh();
		elide_lock_init(&x);
		el_attach(&elide_ops[0], &x, &st);
		el_attach(&elide_ops[1], &x, &st);
		el_attach(&elide_ops[2], &x, &st);
		if (!inner_unlock_leaves_outer(a, b, k < 16 ? &x : &L))
			continue;
		kept++;
		if (busted)
			continue;
		SK_CHECK_EQ(sk_elide_in_transaction(), 0);
		SK_CHECK_EQ(st.commits, 1);
		SK_CHECK_EQ(st.fallbacks, 0);
		SK_CHECK_EQ(sk_elided_mutex_destroy(&L.m) |
				    sk_elided_spinlock_destroy(&L.s) |
				    sk_elided_rwlock_destroy(&L.rw),
			    0);
		SK_CHECK_EQ(sk_elided_mutex_destroy(&x.m) |
				    sk_elided_spinlock_destroy(&x.s) |
				    sk_elided_rwlock_destroy(&x.rw),
			    0);
	}
	sk__elide_sim_busted_nesting(0);
	fprintf(stderr, "    busted=%d: %d of %d pairs kept the outer section\n",
		busted, kept, n);
	return kept;
}

static void inner_unlock_leaves_outer_section_elided(void)
{
	elide_deadline("inner_unlock_leaves_outer_section_elided", 120);
	SK_CHECK_EQ(nested_pairs_kept(0), 17);
	alarm(0);
}

/* The twin: when the inner unlock ends the transaction, it is caught. */
static void busted_nesting_twin_is_caught(void)
{
	elide_deadline("busted_nesting_twin_is_caught", 120);
	SK_CHECK_EQ(nested_pairs_kept(1), 0);
	alarm(0);
}

/* A thread holding the inner lock X for real until another one queues. */
struct holder {
	const struct elide_ops *ops;
	struct elide_lock *x;
	int held; /* set once ops' lock of x is held */
};

static void *hold_until_queued(void *arg)
{
	struct holder *h = arg;
	struct elide_lock *x = h->x;
	const struct elide_ops *o = excl_ops(h->ops);
	unsigned int w[4];

	SK_CHECK_EQ(el_trylock(o, x), 0);
	w[0] = (unsigned int)__atomic_load_n(&x->m.word, __ATOMIC_RELAXED);
	w[1] = __atomic_load_n(&x->s.word, __ATOMIC_RELAXED);
	w[2] = __atomic_load_n(&x->rw.word, __ATOMIC_RELAXED);
	w[3] = (unsigned int)__atomic_load_n(&x->rw.wlock, __ATOMIC_RELAXED);
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	/* Any change: the other thread found X busy and is taking it. */
	while ((unsigned int)__atomic_load_n(&x->m.word, __ATOMIC_RELAXED) ==
		       w[0] &&
	       __atomic_load_n(&x->s.word, __ATOMIC_RELAXED) == w[1] &&
	       __atomic_load_n(&x->rw.word, __ATOMIC_RELAXED) == w[2] &&
	       (unsigned int)__atomic_load_n(&x->rw.wlock,
					     __ATOMIC_RELAXED) == w[3])
		sched_yield();
	el_unlock(o, x);
	return NULL;
}

/*
 * Elided outer section, inner lock held for real by another thread: the
 * simulated section cannot roll back, so it takes the inner lock for real
 * inside the transaction (the hardware would have aborted to the outermost
 * XBEGIN).  Unlocking that inner lock is a real unlock: it must leave the
 * transaction alone, for a reader too, which its word cannot tell apart
 * from an elided one.  The busy abort is reported by the outer unlock.
 */
static void busy_inner_lock_is_taken_for_real_inside_section(void)
{
	struct elide_lock x;
	struct holder h;
	pthread_t t;
	int a, b, in_tx;

	elide_deadline("busy_inner_lock_is_taken_for_real_inside_section",
		       120);
	for (a = 0; a < 4; a++)
		for (b = 0; b < 4; b++) {
			fresh();
			elide_lock_init(&x);
			h.ops = kind_ops(b);
			h.x = &x;
			h.held = 0;
			sk_test_thread_start(&t, hold_until_queued, &h);
			while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
				sched_yield();
			el_lock(kind_ops(a), &L);
			el_lock(kind_ops(b), &x); /* waits for the holder */
			el_unlock(kind_ops(b), &x);
			in_tx = sk_elide_in_transaction();
			if (!in_tx)
				fprintf(stderr, "    outer %s, inner %s: the "
						"inner real unlock ended the "
						"transaction\n",
					kind_ops(a)->name, kind_ops(b)->name);
			SK_CHECK_EQ(in_tx, 1);
			if (in_tx) /* else the outer lock is not held now */
				el_unlock(kind_ops(a), &L);
			sk_test_thread_join(t);
			SK_CHECK_EQ(sk_elide_in_transaction(), 0);
			SK_CHECK_EQ(st.aborts[SK_ELIDE_ABORT_BUSY], 1);
			SK_CHECK_EQ(st.fallbacks, 1);
			SK_CHECK_EQ(st.commits, 0);
			SK_CHECK_EQ(sk_elided_rwlock_destroy(&x.rw), 0);
			SK_CHECK_EQ(sk_elided_mutex_destroy(&x.m) |
					    sk_elided_spinlock_destroy(&x.s),
				    0);
		}
	alarm(0);
}

/*
 * Sections that overlap without nesting: hand over hand (elided A, elided
 * B, unlock A, unlock B), and a reader taken for real before an elided
 * section and released inside it.  Each unlock must do what its own lock
 * needs: A's lets other threads take A, the real reader leaves the rwlock,
 * and only the last elided unlock commits.
 */
static void overlapping_sections_unlock_in_any_order(void)
{
	int in_tx;

	elide_deadline("overlapping_sections_unlock_in_any_order", 120);
	fresh();
	sk_elided_mutex_lock(&L.m);
	sk_elided_spinlock_lock(&L.s);
	sk_elided_mutex_unlock(&L.m);
	in_tx = sk_elide_in_transaction();
	SK_CHECK_EQ(in_tx, 1);
	SK_CHECK_EQ(st.commits, 0);
	SK_CHECK_EQ(other_thread_gets(&elide_ops[0]), 1); /* A is free */
	SK_CHECK_EQ(other_thread_gets(&elide_ops[1]), 0); /* B is not */
	if (in_tx)
		sk_elided_spinlock_unlock(&L.s);
	SK_CHECK_EQ(sk_elide_in_transaction(), 0);
	SK_CHECK_EQ(st.commits, 1);

	fresh();
	SK_CHECK_EQ(sk_elided_rwlock_read_trylock(&L.rw), 0); /* real */
	sk_elided_mutex_lock(&L.m);
	sk_elided_rwlock_read_unlock(&L.rw);
	in_tx = sk_elide_in_transaction();
	SK_CHECK_EQ(in_tx, 1);
	SK_CHECK_EQ(sk_elided_rwlock_destroy(&L.rw), 0); /* the reader left */
	if (in_tx)
		sk_elided_mutex_unlock(&L.m);
	SK_CHECK_EQ(sk_elide_in_transaction(), 0);
	SK_CHECK_EQ(st.commits, 1);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&L.m), 0);
	alarm(0);
}

/*
 * A transaction the library did not begin (the program's own, or glibc's
 * elided pthread mutex): an elided lock inside it nests in it, and its
 * unlock must not commit it.
 */
static void enclosing_transaction_survives_elided_unlock(void)
{
	int in_tx;

	fresh();
	SK_CHECK_EQ(sk__sim_xbegin(), SK__TX_STARTED);
	sk_elided_mutex_lock(&L.m);
	sk_elided_mutex_unlock(&L.m);
	in_tx = sk_elide_in_transaction();
	SK_CHECK_EQ(in_tx, 1);
	if (in_tx)
		SK_CHECK_EQ(sk__sim_xend(), 0);
	SK_CHECK_EQ(sk_elide_in_transaction(), 0);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&L.m), 0);
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
		el_lock(&elide_ops[k], &L);
		SK_CHECK_EQ(sk_elide_in_transaction(), 1);
		SK_CHECK_EQ(el_trylock(&elide_ops[k], &L), -EBUSY);
		el_unlock(&elide_ops[k], &L);
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

/* ---- the spinlock claim's ABA, scheduled ------------------------------------ */

/*
 * Three threads on one spinlock, each in a simulated section: B holds
 * (its SIM mark is in the word); A's claim loads the word, and at that
 * point (hook SK__SIM_SPIN_LOADED) B leaves; if A goes on to its CAS
 * (hook SK__SIM_SPIN_CAS), C enters first, marking the word with the
 * value A loaded.  The claim must refuse at the first step (the value it
 * loaded carries B's mark); the twin, which judged a second load, sees
 * the word free between B and C and its CAS then succeeds: A and C both
 * inside.  C stays inside until A's section has looked (or 2 s pass).
 */
static struct sk_elided_spinlock aba_lock = SK_ELIDED_SPINLOCK_INITIALIZER;
static int aba_step;	     /* 1 B holds, 2 B may leave, 3 B left, 4 C may
			      * enter, 5 C inside, 6 A looked; atomics */
static int aba_c_inside;     /* C's section runs */
static __thread int aba_is_a; /* this thread is A (the hook acts only there) */

static void aba_wait_step(int s)
{
	/* Acquire: pairs with the release of aba_set_step(). */
	while (__atomic_load_n(&aba_step, __ATOMIC_ACQUIRE) < s)
		sched_yield();
}

static void aba_set_step(int s)
{
	__atomic_store_n(&aba_step, s, __ATOMIC_RELEASE); /* see above */
}

static void aba_hook(int where)
{
	if (!aba_is_a)
		return;
	if (where == SK__SIM_SPIN_LOADED &&
	    __atomic_load_n(&aba_step, __ATOMIC_ACQUIRE) == 1) {
		aba_set_step(2); /* B leaves now */
		aba_wait_step(3);
	} else if (where == SK__SIM_SPIN_CAS &&
		   __atomic_load_n(&aba_step, __ATOMIC_ACQUIRE) == 3) {
		aba_set_step(4); /* C enters now */
		aba_wait_step(5);
	}
}

static void *aba_b(void *arg)
{
	sk_elided_spinlock_lock(&aba_lock);
	SK_CHECK_EQ(sk_elide_in_transaction(), 1);
	aba_set_step(1);
	aba_wait_step(2);
	sk_elided_spinlock_unlock(&aba_lock);
	aba_set_step(3);
	return arg;
}

static void *aba_c(void *arg)
{
	int i;

	aba_wait_step(4);
	sk_elided_spinlock_lock(&aba_lock);
	/*
	 * Relaxed: step 5's release below orders it before A's acquire in
	 * aba_wait_step(5), after which A reads it; the reset is ordered
	 * after A's read by step 6 (A's release, our acquire).
	 */
	__atomic_store_n(&aba_c_inside, 1, __ATOMIC_RELAXED);
	aba_set_step(5);
	/* Until A's section has looked (the twin), or 2 s. */
	for (i = 0; i < 2000 && __atomic_load_n(&aba_step, __ATOMIC_ACQUIRE) < 6;
	     i++)
		usleep(1000);
	__atomic_store_n(&aba_c_inside, 0, __ATOMIC_RELAXED);
	sk_elided_spinlock_unlock(&aba_lock);
	return arg;
}

/* One scheduled run; returns 1 when A's section ran beside C's. */
static int aba_run(int busted)
{
	pthread_t b, c;
	int both;

	fresh();
	sk_elided_spinlock_init(&aba_lock);
	__atomic_store_n(&aba_step, 0, __ATOMIC_RELAXED);
	sk__elide_sim_busted_spin(busted);
	sk__elide_sim_set_spin_hook(aba_hook);
	sk_test_thread_start(&c, aba_c, NULL);
	sk_test_thread_start(&b, aba_b, NULL);
	aba_wait_step(1);
	aba_is_a = 1;
	sk_elided_spinlock_lock(&aba_lock);
	aba_is_a = 0;
	both = __atomic_load_n(&aba_c_inside, __ATOMIC_RELAXED); /* see aba_c */
	aba_set_step(6);
	sk_elided_spinlock_unlock(&aba_lock);
	sk_test_thread_join(b);
	if (__atomic_load_n(&aba_step, __ATOMIC_ACQUIRE) < 4)
		aba_set_step(4); /* A did not reach its CAS: let C in now */
	sk_test_thread_join(c);
	sk__elide_sim_set_spin_hook(NULL);
	sk__elide_sim_busted_spin(0);
	return both;
}

static void spin_claim_refuses_the_aba(void)
{
	elide_deadline("spin_claim_refuses_the_aba", 60);
	SK_CHECK_EQ(aba_run(0), 0);
	/* And every section left the lock: its word is free again. */
	SK_CHECK_EQ(sk_elided_spinlock_destroy(&aba_lock), 0);
	alarm(0);
}

static void busted_spin_claim_twin_is_caught(void)
{
	elide_deadline("busted_spin_claim_twin_is_caught", 60);
	SK_CHECK_EQ(aba_run(1), 1);
	alarm(0);
}

/* ---- threads ------------------------------------------------------------------ */

static unsigned long run_all_kinds(int busted)
{
	struct sk_lks_result r;
	unsigned long found = 0;
	int k;

	/*
	 * The twin runs without aborts: with a real holder beside a busted
	 * section, the holder's unlock would find its lock already released
	 * and stop the program (sk__die) instead of letting the checks fail.
	 */
	sk__elide_sim_random(busted ? 0 : 300, sk_t_seed);
	sk__elide_sim_busted(busted);
	for (k = 0; k < ELIDE_NOPS; k++) {
		fresh();
		elide_stress(&elide_ops[k], &L, 4000 / sk_test_slow(), 3, 2,
			     busted ? ELIDE_BUSTED : ELIDE_LOCKED, &r);
		found += r.lost + r.overlaps + r.torn;
		if (!busted)
			SK_CHECK_EQ(r.errors, 0);
	}
	sk__elide_sim_busted(0);
	sk__elide_sim_random(0, 0);
	fprintf(stderr, "    busted=%d: %lu found; commits %lu, fallbacks %lu, "
			"skips %lu\n",
		busted, found, st.commits, st.fallbacks, st.skips);
	return found;
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
	SK_RUN(backend_is_sim);
	SK_RUN(commit_on_every_lock);
	SK_RUN(conflict_is_retried_then_commits);
	SK_RUN(conflict_retry_limit_is_the_knob);
	SK_RUN(each_abort_cause_counts_and_adapts);
	SK_RUN(skip_grows_caps_and_decays);
	SK_RUN(busy_lock_at_start_falls_back);
	SK_RUN(nested_sections_commit_once);
	SK_RUN(sim_models_rtm_nesting);
	SK_RUN(inner_unlock_leaves_outer_section_elided);
	SK_RUN(busted_nesting_twin_is_caught);
	SK_RUN(busy_inner_lock_is_taken_for_real_inside_section);
	SK_RUN(overlapping_sections_unlock_in_any_order);
	SK_RUN(enclosing_transaction_survives_elided_unlock);
	SK_RUN(nesting_too_deep_aborts_as_other);
	SK_RUN(trylock_inside_transaction_aborts);
	SK_RUN(stats_shared_by_two_locks);
	SK_RUN(spin_claim_refuses_the_aba);
	SK_RUN(busted_spin_claim_twin_is_caught);
	SK_RUN(threads_exclude_under_random_aborts);
	SK_RUN(busted_twin_is_caught);
	return sk_test_report();
}
