/* SPDX-License-Identifier: MIT */
/*
 * Elided locks on the backend this CPU offers (rtm where CPUID and a
 * probe transaction say RTM works, fallback elsewhere): dispatch, policy
 * and environment, tuning, trylock/destroy, mutual exclusion of every
 * lock with real threads (and a lockless twin the check must catch), and
 * the fairness of the fallback mutex.  The simulated backend's abort
 * paths are in test_elide_sim.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "../src/internal/elide.h" /* the mutex word's ticket fields */
#include "../src/internal/testing.h" /* the fork twin */
#include "sk_test_elide.h"

static const char *prog;

/* ---- dispatch --------------------------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
/*
 * What CPUID says, independently of the library: leaf 7, EBX bit 11 (RTM)
 * and EDX bit 11 (RTM_ALWAYS_ABORT).
 */
static unsigned int cpuid_flags(void)
{
	unsigned int r[4] = { 0, 0, 0, 0 };

	if (__get_cpuid_max(0, NULL) >= 7)
		__cpuid_count(7, 0, r[0], r[1], r[2], r[3]);
	return ((r[1] >> 11) & 1 ? SK_ELIDE_CPU_RTM : 0) |
	       ((r[3] >> 11) & 1 ? SK_ELIDE_CPU_ALWAYS_ABORT : 0);
}

/* Our own probe transaction; only run when CPUID reports RTM. */
static int probe_commits(void)
{
	unsigned int s;
	int i;

	for (i = 0; i < 16; i++) {
		s = ~0u;
		__asm__ __volatile__(".byte 0xc7, 0xf8; .long 0"
				     : "+a"(s)
				     :
				     : "memory");
		if (s == ~0u) {
			__asm__ __volatile__(".byte 0x0f, 0x01, 0xd5" ::
						     : "memory");
			return 1;
		}
	}
	return 0;
}
#else
static unsigned int cpuid_flags(void)
{
	return 0;
}

static int probe_commits(void)
{
	return 0;
}
#endif

static void dispatch_matches_cpuid_and_probe(void)
{
	unsigned int want = cpuid_flags(), got = sk_elide_cpu_has_rtm();
	unsigned int m = SK_ELIDE_CPU_RTM | SK_ELIDE_CPU_ALWAYS_ABORT;
	int usable = 0;

	SK_CHECK_EQ(got & m, want);
	if ((want & SK_ELIDE_CPU_RTM) && !(want & SK_ELIDE_CPU_ALWAYS_ABORT))
		usable = probe_commits();
	SK_CHECK_EQ(!!(got & SK_ELIDE_CPU_PROBE_OK), usable);
	usable = usable && !(got & SK_ELIDE_CPU_BROKEN);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
	SK_CHECK_EQ(sk_elide_backend(), usable ? SK_ELIDE_BACKEND_RTM
					       : SK_ELIDE_BACKEND_FALLBACK);
	fprintf(stderr, "    cpu flags %#x, backend %s%s\n", got,
		sk_elide_backend_name(sk_elide_backend()),
		want & SK_ELIDE_CPU_RTM ? ""
					: " (no RTM: the rtm path cannot run here)");
}

/* Policy on without the CPUID bit must not execute XBEGIN (no SIGILL). */
static void policy_on_without_rtm_never_sigills(void)
{
	struct elide_lock l;
	int i, k;

	elide_lock_init(&l);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_ON), 0);
	SK_CHECK_EQ(sk_elide_backend(), (cpuid_flags() & SK_ELIDE_CPU_RTM)
						? SK_ELIDE_BACKEND_RTM
						: SK_ELIDE_BACKEND_FALLBACK);
	for (k = 0; k < ELIDE_NOPS; k++)
		for (i = 0; i < 100; i++) {
			el_lock(&elide_ops[k], &l);
			SK_CHECK_EQ(el_trylock(&elide_ops[k], &l), -EBUSY);
			el_unlock(&elide_ops[k], &l);
		}
	sk_elided_rwlock_read_lock(&l.rw);
	SK_CHECK_EQ(sk_elide_in_transaction(),
		    sk_elide_backend() == SK_ELIDE_BACKEND_RTM);
	sk_elided_rwlock_read_unlock(&l.rw);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	SK_CHECK_EQ(sk_elide_backend(), SK_ELIDE_BACKEND_FALLBACK);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
}

static void policy_api_rejects_unknown_values(void)
{
	SK_CHECK_EQ(sk_elide_set_policy((enum sk_elide_policy)7), -EINVAL);
	SK_CHECK_EQ(sk_elide_get_policy(), SK_ELIDE_AUTO);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	SK_CHECK_EQ(sk_elide_get_policy(), SK_ELIDE_OFF);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
	SK_CHECK_EQ(strcmp(sk_elide_backend_name(SK__ELIDE_BACKEND_SIM), "sim"),
		    0);
	SK_CHECK_EQ(strcmp(sk_elide_abort_cause_name(SK_ELIDE_ABORT_BUSY),
			   "busy"),
		    0);
}

/* Child: print the policy the environment gave. */
static int child_print_policy(void)
{
	fprintf(stderr, "policy=%d backend=%s\n", (int)sk_elide_get_policy(),
		sk_elide_backend_name(sk_elide_backend()));
	return 0;
}

static void env_sets_the_process_default(void)
{
	static const char *const vals[] = { "off", "on", "auto", "bogus" };
	static const int want[] = { SK_ELIDE_OFF, SK_ELIDE_ON, SK_ELIDE_AUTO,
				    SK_ELIDE_AUTO };
	char out[4096], exp[32];
	int i, st;

	for (i = 0; i < 4; i++) {
		st = sk_test_run_child(prog, "policy", "SCALEKIT_ELIDE",
				       vals[i], out, sizeof(out));
		SK_CHECK_EQ(st, 0);
		snprintf(exp, sizeof(exp), "policy=%d ", want[i]);
		SK_CHECK_STR_CONTAINS(out, exp);
		SK_CHECK_EQ(sk_test_count_substr(out, "warning"), i == 3);
	}
	SK_CHECK_STR_CONTAINS(out, "SCALEKIT_ELIDE=\"bogus\"");
}

static void tuning_api_checks_ranges(void)
{
	struct sk_elide_tuning d = SK_ELIDE_TUNING_DEFAULT, t = d, g;

	t.skip_initial = 0;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), -EINVAL);
	t = d;
	t.skip_initial = t.skip_max + 1;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), -EINVAL);
	t = d;
	t.handoff_wakeups = 0;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), -EINVAL);
	t = d;
	t.conflict_retries = 65;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), -EINVAL);
	SK_CHECK_EQ(sk_elide_set_tuning(NULL), -EINVAL);
	t = d;
	t.conflict_retries = 7;
	t.skip_max = 99;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
	sk_elide_get_tuning(&g);
	SK_CHECK_EQ(g.conflict_retries, 7);
	SK_CHECK_EQ(g.skip_max, 99);
	SK_CHECK_EQ(sk_elide_set_tuning(&d), 0);
}

/* ---- single-thread semantics ------------------------------------------------ */

static void trylock_and_destroy_report_busy(void)
{
	struct elide_lock l;
	int k;

	elide_lock_init(&l);
	for (k = 0; k < ELIDE_NOPS; k++) {
		SK_CHECK_EQ(el_trylock(&elide_ops[k], &l), 0);
		SK_CHECK_EQ(el_trylock(&elide_ops[k], &l), -EBUSY);
		el_unlock(&elide_ops[k], &l);
	}
	SK_CHECK_EQ(sk_elided_rwlock_read_trylock(&l.rw), 0);
	SK_CHECK_EQ(sk_elided_rwlock_read_trylock(&l.rw), 0);
	SK_CHECK_EQ(sk_elided_rwlock_write_trylock(&l.rw), -EBUSY);
	SK_CHECK_EQ(sk_elided_rwlock_destroy(&l.rw), -EBUSY);
	sk_elided_rwlock_read_unlock(&l.rw);
	sk_elided_rwlock_read_unlock(&l.rw);
	SK_CHECK_EQ(sk_elided_mutex_trylock(&l.m), 0);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&l.m), -EBUSY);
	sk_elided_mutex_unlock(&l.m);
	SK_CHECK_EQ(sk_elided_spinlock_trylock(&l.s), 0);
	SK_CHECK_EQ(sk_elided_spinlock_destroy(&l.s), -EBUSY);
	sk_elided_spinlock_unlock(&l.s);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&l.m), 0);
	SK_CHECK_EQ(sk_elided_spinlock_destroy(&l.s), 0);
	SK_CHECK_EQ(sk_elided_rwlock_destroy(&l.rw), 0);
}

/* The 15-bit tickets wrap without carrying into the SIM bit. */
static void spinlock_tickets_wrap(void)
{
	struct sk_elided_spinlock l = SK_ELIDED_SPINLOCK_INITIALIZER;
	int i;

	l.word = 0x7ffdu | (0x7ffdu << 16);
	for (i = 0; i < 6; i++) {
		if (i % 2)
			SK_CHECK_EQ(sk_elided_spinlock_trylock(&l), 0);
		else
			sk_elided_spinlock_lock(&l);
		SK_CHECK_EQ(sk_elided_spinlock_destroy(&l), -EBUSY);
		sk_elided_spinlock_unlock(&l);
		SK_CHECK_EQ(sk_elided_spinlock_destroy(&l), 0);
		SK_CHECK_EQ(l.word & SK__ELIDED_SPIN_SIM, 0);
	}
	SK_CHECK_EQ(l.word & SK__ELIDED_SPIN_OWNER_MASK, 3);
}

/* The static initializers give unlocked locks; the budget holds. */
static void initializers_and_sizes(void)
{
	static struct sk_elided_mutex m = SK_ELIDED_MUTEX_INITIALIZER;
	static struct sk_elided_spinlock s = SK_ELIDED_SPINLOCK_INITIALIZER;
	static struct sk_elided_rwlock rw = SK_ELIDED_RWLOCK_INITIALIZER;

	SK_CHECK_LE(sizeof(m), 16);
	SK_CHECK_LE(sizeof(s), 16);
	sk_elided_mutex_lock(&m);
	sk_elided_mutex_unlock(&m);
	sk_elided_spinlock_lock(&s);
	sk_elided_spinlock_unlock(&s);
	sk_elided_rwlock_write_lock(&rw);
	sk_elided_rwlock_write_unlock(&rw);
	SK_CHECK_EQ(sk_elided_mutex_destroy(&m), 0);
}

/* Without RTM nothing is elided, so attached stats stay at zero. */
static void fallback_counts_nothing(void)
{
	struct sk_elide_stats s = SK_ELIDE_STATS_INITIALIZER, r;
	struct elide_lock l;
	int k;

	if (sk_elide_backend() != SK_ELIDE_BACKEND_FALLBACK)
		return;
	elide_lock_init(&l);
	for (k = 0; k < ELIDE_NOPS; k++) {
		el_attach(&elide_ops[k], &l, &s);
		el_lock(&elide_ops[k], &l);
		el_unlock(&elide_ops[k], &l);
	}
	sk_elide_stats_read(&s, &r);
	SK_CHECK_EQ(r.commits + r.fallbacks + r.skips + r.aborts[0], 0);
}

/* ---- threads ------------------------------------------------------------------ */

static void *lock_once(void *arg)
{
	struct sk_elided_mutex *m = arg;

	sk_elided_mutex_lock(m);
	sk_elided_mutex_unlock(m);
	return NULL;
}

/*
 * Locked while the process had one thread (the glibc single-thread fast
 * path), then contended by the first second thread: it must wait.
 */
static void mutex_held_across_first_thread(void)
{
	struct sk_elided_mutex m = SK_ELIDED_MUTEX_INITIALIZER;
	pthread_t t;

	elide_deadline("mutex_held_across_first_thread", 60);
	sk_elided_mutex_lock(&m);
	sk_test_thread_start(&t, lock_once, &m);
	while (!(__atomic_load_n(&m.word, __ATOMIC_RELAXED) &
		 SK__ELIDED_MUTEX_WAITERS))
		sched_yield(); /* the thread spins, then sleeps on the word */
	sk_elided_mutex_unlock(&m);
	sk_test_thread_join(t);
	SK_CHECK_EQ(m.word, 0);
	alarm(0);
}

static unsigned long stress_iters(void)
{
	return 10000 / sk_test_slow();
}

static void every_lock_excludes_under_threads(void)
{
	struct elide_lock l;
	struct sk_lks_result r;
	int k;

	elide_deadline("every_lock_excludes_under_threads", 240);
	elide_lock_init(&l);
	for (k = 0; k < ELIDE_NOPS; k++) {
		double t0 = sk_test_now();

		elide_stress(&elide_ops[k], &l, stress_iters(), 3, 2,
			     ELIDE_LOCKED, &r);
		SK_CHECK_EQ(r.lost, 0);
		SK_CHECK_EQ(r.overlaps, 0);
		SK_CHECK_EQ(r.torn, 0);
		SK_CHECK_EQ(r.errors, 0);
		fprintf(stderr, "    %s: %.2f s\n", elide_ops[k].name,
			sk_test_now() - t0);
	}
	alarm(0);
}

/*
 * The broken twin: without the lock the same checks see writers overlap
 * (and lose updates).  A run whose threads happen not to interleave
 * finds nothing, so the twin gets up to 20 runs and must be caught in
 * one of them.
 */
static void twin_without_lock_is_caught(void)
{
	struct elide_lock l;
	struct sk_lks_result r = { 0 };
	int run;

	elide_lock_init(&l);
	for (run = 0; run < 20 && r.errors == 0; run++)
		elide_stress(&elide_ops[0], &l, stress_iters(), 3, 0,
			     ELIDE_NOLOCK, &r);
	fprintf(stderr, "    caught in run %d\n", run);
	SK_CHECK_GT(r.overlaps + r.lost, 0);
}

/* ---- handoff tickets at their wrap (issue 24) --------------------------------- */

struct wrap {
	const struct elide_ops *ops; /* the mutex, or the rwlock's writers */
	struct elide_lock l;
	unsigned long iters;	     /* sections per thread, its ticket's first */
	unsigned long counter;	     /* guarded by the lock (plain accesses) */
};

/* The mutex word that holds the handoff tickets of w's lock. */
static int *wrap_word(struct wrap *w)
{
	return w->ops == &elide_ops[0] ? &w->l.m.word : &w->l.rw.wlock;
}

static int wrap_destroy(struct wrap *w)
{
	return w->ops == &elide_ops[0] ? sk_elided_mutex_destroy(&w->l.m)
				       : sk_elided_rwlock_destroy(&w->l.rw);
}

static void *wrap_worker(void *arg)
{
	struct wrap *w = arg;
	unsigned long i;

	for (i = 0; i < w->iters; i++) {
		el_lock(w->ops, &w->l);
		/* Plain (volatile): TSan checks that the lock orders it. */
		*(volatile unsigned long *)&w->counter += 1;
		if (i % 4 == 0)
			sched_yield(); /* let the others queue and sleep */
		el_unlock(w->ops, &w->l);
	}
	return NULL;
}

/*
 * Hold ops' lock with its tickets preset to serving = next = first, as if
 * a long handoff episode had served that many, and let nthreads waiters
 * each lose one wakeup (handoff_wakeups = 1) and take a ticket: the last
 * ticket is SK__M_TMASK, so next wraps to 0.  The word must then be the
 * expected one exactly; once the waiters have had their sections (iters
 * each), the free lock must be the word 0, destroy must return 0, and
 * the next acquisition must find the word free (the inline CAS from 0,
 * or elision where it runs) again.
 */
static void ticket_wrap_run(const struct elide_ops *ops, int nthreads,
			    unsigned long iters)
{
	struct sk_elide_tuning t = SK_ELIDE_TUNING_DEFAULT, d = t;
	unsigned int first = SK__M_TMASK + 1 - (unsigned int)nthreads;
	unsigned int want = SK__ELIDED_MUTEX_LOCKED | SK__ELIDED_MUTEX_WAITERS |
			    SK__M_TICKETS_AT(first, 0);
	struct wrap w = { 0 };
	pthread_t th[8];
	unsigned int v;
	int i, *word;

	w.ops = ops;
	w.iters = iters;
	word = wrap_word(&w);
	t.handoff_wakeups = 1;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
	elide_lock_init(&w.l);
	/* Held for real on any backend. */
	SK_CHECK_EQ(el_trylock(ops, &w.l), 0);
	__atomic_fetch_or((unsigned int *)word, SK__M_TICKETS_AT(first, first),
			  __ATOMIC_RELAXED);
	for (i = 0; i < nthreads; i++)
		sk_test_thread_start(&th[i], wrap_worker, &w);
	/* Wake the sleepers until every one has lost a wakeup: tickets. */
	for (;;) {
		v = __atomic_load_n((unsigned int *)word, __ATOMIC_RELAXED);
		if (((sk__m_next(v) - sk__m_serving(v)) & SK__M_TMASK) ==
		    (unsigned int)nthreads)
			break;
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
			NULL, 0);
		usleep(1000);
	}
	fprintf(stderr, "    %s, %d thread(s): tickets %#x..%#x taken, word "
			"%#x (want %#x)\n",
		ops->name, nthreads, first, SK__M_TMASK, v, want);
	SK_CHECK_EQ(v, want);
	el_unlock(ops, &w.l);
	for (i = 0; i < nthreads; i++)
		sk_test_thread_join(th[i]);
	v = __atomic_load_n((unsigned int *)word, __ATOMIC_RELAXED);
	fprintf(stderr, "    after %lu sections: free word %#x\n",
		nthreads * iters, v);
	SK_CHECK_EQ(w.counter, nthreads * iters);
	SK_CHECK_EQ(v, 0);
	SK_CHECK_EQ(w.l.rw.word, 0);
	SK_CHECK_EQ(wrap_destroy(&w), 0);
	el_lock(ops, &w.l);
	/* Taken for real from the free word: just LOCKED; elided: untouched. */
	want = sk_elide_in_transaction() ? 0 : SK__ELIDED_MUTEX_LOCKED;
	SK_CHECK_EQ(*word, want);
	el_unlock(ops, &w.l);
	SK_CHECK_EQ(*word, 0);
	SK_CHECK_EQ(wrap_destroy(&w), 0);
	SK_CHECK_EQ(sk_elide_set_tuning(&d), 0);
}

/* The 14-bit ticket counter wraps to 0 without setting any other bit. */
static void handoff_tickets_wrap_within_their_field(void)
{
	elide_deadline("handoff_tickets_wrap_within_their_field", 120);
	ticket_wrap_run(&elide_ops[0], 1, 1);
	ticket_wrap_run(&elide_ops[2], 1, 1); /* the rwlock's writers */
	alarm(0);
}

/*
 * Real threads through the wrap and on: they still exclude each other,
 * and afterwards the lock is free in every sense (issue 24 found a free
 * mutex reading 0x80000000: busy for destroy, for the CAS fast path and
 * for elision).
 */
static void handoff_stress_past_ticket_wrap_leaves_lock_free(void)
{
	unsigned long iters = 2000 / sk_test_slow();

	elide_deadline("handoff_stress_past_ticket_wrap_leaves_lock_free", 240);
	ticket_wrap_run(&elide_ops[0], 4, iters);
	ticket_wrap_run(&elide_ops[2], 4, iters);
	alarm(0);
}

/* ---- fairness ---------------------------------------------------------------- */

struct fair {
	struct sk_elided_mutex m;
	unsigned long got[3];	/* sections per thread (relaxed atomics) */
	unsigned long need;	/* every thread must reach this */
	int done;		/* set when all have */
};

struct fair_arg {
	struct fair *f;
	int id;
};

static void *fair_worker(void *arg)
{
	struct fair_arg *a = arg;
	struct fair *f = a->f;
	unsigned long mine = 0;

	while (!__atomic_load_n(&f->done, __ATOMIC_RELAXED)) {
		sk_elided_mutex_lock(&f->m);
		mine++;
		__atomic_store_n(&f->got[a->id], mine, __ATOMIC_RELAXED);
		if (mine % 4 == 0)
			sched_yield(); /* let the others queue and sleep */
		sk_elided_mutex_unlock(&f->m);
	}
	return NULL;
}

/* Wait until every thread has `need` sections (the alarm catches starving). */
static void fair_until_all_progress(unsigned int handoff)
{
	struct sk_elide_tuning t = SK_ELIDE_TUNING_DEFAULT, d = t;
	struct fair f = { SK_ELIDED_MUTEX_INITIALIZER, { 0 }, 2000, 0 };
	struct fair_arg a[3];
	pthread_t th[3];
	unsigned long tickets = 0;
	int i, all;

	t.handoff_wakeups = handoff;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
	f.need = 2000 / sk_test_slow();
	for (i = 0; i < 3; i++) {
		a[i].f = &f;
		a[i].id = i;
		sk_test_thread_start(&th[i], fair_worker, &a[i]);
	}
	do {
		for (i = 0; i < 100; i++) {
			/* Ticket fields (bits 3..30) in use: handoff mode. */
			tickets += (__atomic_load_n(&f.m.word,
						    __ATOMIC_RELAXED) >> 3) != 0;
			sched_yield();
		}
		for (all = 1, i = 0; i < 3; i++)
			all &= __atomic_load_n(&f.got[i], __ATOMIC_RELAXED) >=
			       f.need;
		/* The knob is real: at 1 the waiters do take tickets. */
	} while (!all || (handoff == 1 && !tickets));
	__atomic_store_n(&f.done, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 3; i++)
		sk_test_thread_join(th[i]);
	fprintf(stderr, "    handoff after %u: %lu %lu %lu sections, tickets "
			"seen in %lu samples\n",
		handoff, f.got[0], f.got[1], f.got[2], tickets);
	SK_CHECK_EQ(sk_elide_set_tuning(&d), 0);
}

static void mutex_every_thread_progresses(void)
{
	elide_deadline("mutex_every_thread_progresses (a starved thread, "
		       "or no handoff ticket ever taken)",
		       240);
	fair_until_all_progress(4);
	fair_until_all_progress(1); /* the handoff tickets all the time */
	alarm(0);
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * The atfork pattern: the forking thread holds the lock across fork()
 * (as a prepare handler would lock it) and the child unlocks it and goes
 * on using it.  Here two of the parent's waiters hold handoff tickets of
 * the mutex (for the rwlock: of its writers' mutex, where its waiting
 * writers and readers queue) at the fork; those threads do not exist in
 * the child, whose later locks must not wait for them.  With the broken
 * twin (sk__elide_mutex_test_fork_busted) the child keeps their tickets
 * and its lock hangs: the test must see the child die by its alarm.
 */
static struct sk_elided_mutex fork_m = SK_ELIDED_MUTEX_INITIALIZER;
static struct sk_elided_rwlock fork_rw = SK_ELIDED_RWLOCK_INITIALIZER;
static int fork_kind; /* 0: fork_m; 1: fork_rw, written; 2: fork_rw, read */

static void fork_lock(int kind)
{
	if (!kind)
		sk_elided_mutex_lock(&fork_m);
	else if (kind == 1)
		sk_elided_rwlock_write_lock(&fork_rw);
	else
		sk_elided_rwlock_read_lock(&fork_rw);
}

static void fork_unlock(int kind)
{
	if (!kind)
		sk_elided_mutex_unlock(&fork_m);
	else if (kind == 1)
		sk_elided_rwlock_write_unlock(&fork_rw);
	else
		sk_elided_rwlock_read_unlock(&fork_rw);
}

static void fork_child_relocks(void)
{
	fork_unlock(fork_kind ? 1 : 0);
	fork_lock(fork_kind ? 1 : 0); /* waits for no ticket of the parent */
	fork_unlock(fork_kind ? 1 : 0);
	if (fork_kind) {
		fork_lock(2);
		fork_unlock(2);
		SK_CHECK_EQ(sk_elided_rwlock_destroy(&fork_rw), 0);
	} else {
		SK_CHECK_EQ(sk_elided_mutex_destroy(&fork_m), 0);
	}
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void *fork_waiter(void *arg)
{
	int kind = (int)(intptr_t)arg;

	fork_lock(kind);
	fork_unlock(kind);
	return NULL;
}

/* kind 0: the mutex, 1: the rwlock with a writer and a reader waiting. */
static void fork_with_tickets_out(int kind, int busted)
{
	struct sk_elide_tuning t = SK_ELIDE_TUNING_DEFAULT, d = t;
	unsigned int *tw = kind ? (unsigned int *)&fork_rw.wlock
				: (unsigned int *)&fork_m.word, v;
	struct sk_test_child c;
	pthread_t th[2];
	int i;

	t.handoff_wakeups = 1;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
	fork_kind = kind;
	if (kind)
		fork_lock(1);
	else
		SK_CHECK_EQ(sk_elided_mutex_trylock(&fork_m), 0); /* real */
	for (i = 0; i < 2; i++)
		sk_test_thread_start(&th[i], fork_waiter,
				     (void *)(intptr_t)(kind ? 1 + i : 0));
	/* Wake the sleepers until both have lost a wakeup: tickets. */
	for (;;) {
		v = __atomic_load_n(tw, __ATOMIC_RELAXED);
		if (((sk__m_next(v) - sk__m_serving(v)) & SK__M_TMASK) == 2)
			break;
		syscall(SYS_futex, tw, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL,
			0);
		usleep(1000);
	}
	sk__elide_mutex_test_fork_busted(busted);
	sk_test_fork_child(fork_child_relocks, busted ? 2 : 20, 0, &c);
	sk__elide_mutex_test_fork_busted(0);
	if (busted) {
		/*
		 * The twin's child waits for a ticket of no thread until its
		 * alarm, whose handler (elide_deadline()'s) reports it.
		 */
		SK_T_CHECK_WAIT(c.status, WIFEXITED, WEXITSTATUS, 2);
		SK_CHECK(strstr(c.err, "HANG") != NULL);
	} else {
		SK_CHECK_EXIT_0(c.status);
	}
	/* The parent's waiters get the lock in ticket order, as before. */
	fork_unlock(kind ? 1 : 0);
	for (i = 0; i < 2; i++)
		sk_test_thread_join(th[i]);
	SK_CHECK_EQ(*tw, 0);
	if (kind)
		SK_CHECK_EQ(fork_rw.word, 0);
	SK_CHECK_EQ(sk_elide_set_tuning(&d), 0);
}

static void mutex_held_across_fork_with_tickets_out(void)
{
	elide_deadline("mutex_held_across_fork_with_tickets_out", 120);
	fork_with_tickets_out(0, 0);
	alarm(0);
}

static void mutex_fork_twin_keeps_tickets_and_hangs(void)
{
	elide_deadline("mutex_fork_twin_keeps_tickets_and_hangs", 120);
	fork_with_tickets_out(0, 1);
	alarm(0);
}

static void rwlock_written_across_fork_with_waiters(void)
{
	elide_deadline("rwlock_written_across_fork_with_waiters", 120);
	fork_with_tickets_out(1, 0);
	alarm(0);
}

/* ------------------------------------------------------------------------
 * Misuse: unlocking a lock that is not held stops the program with one
 * message naming the function (the lock's state is never changed).
 */
static struct sk_elided_mutex mis_m = SK_ELIDED_MUTEX_INITIALIZER;
static struct sk_elided_spinlock mis_s = SK_ELIDED_SPINLOCK_INITIALIZER;
static struct sk_elided_rwlock mis_rw = SK_ELIDED_RWLOCK_INITIALIZER;

static void do_mutex_unbalanced(void)
{
	sk_elided_mutex_lock(&mis_m);
	sk_elided_mutex_unlock(&mis_m);
	sk_elided_mutex_unlock(&mis_m);
}

static void do_spinlock_unbalanced(void)
{
	sk_elided_spinlock_unlock(&mis_s);
}

static void do_read_unbalanced(void)
{
	sk_elided_rwlock_read_unlock(&mis_rw);
}

static void do_write_unbalanced(void)
{
	sk_elided_rwlock_write_unlock(&mis_rw);
}

static void expect_unlock_death(void (*fn)(void), const char *needle)
{
	struct sk_test_child c;

	sk_test_fork_child(fn, 120, 0, &c);
	if (!WIFSIGNALED(c.status) || WTERMSIG(c.status) != SIGABRT)
		SK_T_FAIL("child %d did not die by SIGABRT (status %#x)",
			  (int)c.pid, c.status);
	SK_CHECK_STR_CONTAINS(c.err, needle);
	SK_CHECK_EQ(sk_test_count_substr(c.err, "scalekit: "), 1);
}

static void unbalanced_unlock_aborts_with_message(void)
{
	expect_unlock_death(do_mutex_unbalanced,
			    "sk_elided_mutex_unlock(");
	expect_unlock_death(do_spinlock_unbalanced,
			    "sk_elided_spinlock_unlock(");
	expect_unlock_death(do_read_unbalanced,
			    "sk_elided_rwlock_read_unlock(");
	expect_unlock_death(do_write_unbalanced,
			    "sk_elided_rwlock_write_unlock(");
}

int main(int argc, char **argv)
{
	prog = argv[0];
	if (argc > 1 && !strcmp(argv[1], "--child=policy"))
		return child_print_policy();
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(mutex_held_across_first_thread); /* first thread */
	SK_RUN(dispatch_matches_cpuid_and_probe);
	SK_RUN(policy_on_without_rtm_never_sigills);
	SK_RUN(policy_api_rejects_unknown_values);
	SK_RUN(env_sets_the_process_default);
	SK_RUN(tuning_api_checks_ranges);
	SK_RUN(trylock_and_destroy_report_busy);
	SK_RUN(initializers_and_sizes);
	SK_RUN(spinlock_tickets_wrap);
	SK_RUN(fallback_counts_nothing);
	SK_RUN(every_lock_excludes_under_threads);
	SK_RUN(twin_without_lock_is_caught);
	SK_RUN(mutex_every_thread_progresses);
	SK_RUN(handoff_tickets_wrap_within_their_field);
	SK_RUN(handoff_stress_past_ticket_wrap_leaves_lock_free);
	SK_RUN(unbalanced_unlock_aborts_with_message);
	SK_RUN(mutex_held_across_fork_with_tickets_out);
	SK_RUN(mutex_fork_twin_keeps_tickets_and_hangs);
	SK_RUN(rwlock_written_across_fork_with_waiters);
	return sk_test_report();
}
