/* SPDX-License-Identifier: MIT */
/*
 * Lock elision: the once-decided backend dispatch, the policy and tuning
 * API, the statistics, and the per-lock state machine that every elided
 * lock (src/elide_locks.c) runs around its real lock.
 *
 * The dispatch runs in a constructor, like src/barrier.c: CPUID leaf 7
 * (RTM, RTM_ALWAYS_ABORT), the short list of broken models, then a probe
 * transaction.  XBEGIN/XTEST are executed only when the CPUID RTM bit is
 * set (sk__elide_rtm), whatever the policy says.
 */
#define _GNU_SOURCE
#include "scalekit/elide.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal/elide.h"
#include "internal/util.h"

_Static_assert(sizeof(struct sk_elided_mutex) <= 16, "mutex over budget");
_Static_assert(sizeof(struct sk_elided_spinlock) <= 16, "spin over budget");

int sk_elide__enabled;
int sk__elide_rtm;
struct sk_elide_tuning sk__elide_tuning = SK_ELIDE_TUNING_DEFAULT;

/*
 * The locks this thread elides now, in acquisition order: its own elided
 * section is the one transaction they all run in, begun by the first of
 * them (one XBEGIN) and committed when the last of them is unlocked (one
 * XEND).  Written only inside that transaction, so an abort rolls it back
 * to its state at the outermost XBEGIN, empty, with everything else (the
 * simulated backend cannot roll back, but then runs the section on to its
 * unlocks, which empty it).  It tells each unlock whether its lock was
 * elided, which the rwlock's reader count cannot say.
 * Guarded by: the thread itself.
 */
static __thread struct {
	void *locks[SK__ELIDE_MAX_NEST]; /* elided locks, outermost first */
	unsigned int depth;		 /* entries of locks[] in use */
} elided __attribute__((tls_model("initial-exec")));

static unsigned int cpu_flags;	 /* SK_ELIDE_CPU_*, set once */
static int elide_policy;	 /* enum sk_elide_policy */
static int elide_backend;	 /* enum sk_elide_backend */

/* Policy word: bits 0..15 acquisitions left to skip, 16..20 growth level. */
#define POL_SKIP_MASK 0xffffu
#define POL_LEVEL_ONE 0x10000u
#define POL_LEVEL_MAX 16u

/* ---- dispatch -------------------------------------------------------------- */

#ifdef SK__ELIDE_RTM
/*
 * Intel family 6 models whose TSX has errata serious enough that
 * microcode disabled it on most parts (Haswell HSW136, early Broadwell).
 */
static const unsigned char broken_models[] = { 0x3c, 0x3f, 0x45, 0x46,
					       0x3d, 0x47 };

static int cpu_is_broken(void)
{
	unsigned int a, b, c, d, fam, model;
	size_t i;

	if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x756e6547 /* Genu */)
		return 0;
	__get_cpuid(1, &a, &b, &c, &d);
	fam = (a >> 8) & 0xf;
	model = ((a >> 4) & 0xf) | ((a >> 12) & 0xf0);
	for (i = 0; fam == 6 && i < sizeof(broken_models); i++)
		if (model == broken_models[i])
			return 1;
	return 0;
}

static int probe_transaction(void)
{
	int i;

	for (i = 0; i < 16; i++) {
		if (sk__xbegin() == SK__TX_STARTED) {
			sk__xend();
			return 1;
		}
	}
	return 0;
}

static unsigned int detect_cpu(void)
{
	unsigned int a, b, c, d, f = 0;

	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	if (b & (1u << 11))
		f |= SK_ELIDE_CPU_RTM;
	if (d & (1u << 11))
		f |= SK_ELIDE_CPU_ALWAYS_ABORT;
	if (cpu_is_broken())
		f |= SK_ELIDE_CPU_BROKEN;
	if ((f & SK_ELIDE_CPU_RTM) && !(f & SK_ELIDE_CPU_ALWAYS_ABORT) &&
	    probe_transaction())
		f |= SK_ELIDE_CPU_PROBE_OK;
	return f;
}
#else
static unsigned int detect_cpu(void)
{
	return 0; /* no RTM on this architecture, or the simulated build */
}
#endif

static int backend_for(int policy)
{
	unsigned int f = cpu_flags;

	if (policy == SK_ELIDE_OFF)
		return SK_ELIDE_BACKEND_FALLBACK;
#ifdef SK_ELIDE_SIM
	(void)f;
	return SK__ELIDE_BACKEND_SIM;
#else
	if (!(f & SK_ELIDE_CPU_RTM))
		return SK_ELIDE_BACKEND_FALLBACK;
	if (policy == SK_ELIDE_ON || (f & SK_ELIDE_CPU_PROBE_OK &&
				      !(f & SK_ELIDE_CPU_BROKEN)))
		return SK_ELIDE_BACKEND_RTM;
	return SK_ELIDE_BACKEND_FALLBACK;
#endif
}

static void apply_policy(int policy)
{
	int b = backend_for(policy);

	/* Relaxed: the inline fast paths only need to see one of the two. */
	__atomic_store_n(&elide_policy, policy, __ATOMIC_RELAXED);
	__atomic_store_n(&elide_backend, b, __ATOMIC_RELAXED);
	__atomic_store_n(&sk_elide__enabled, b != SK_ELIDE_BACKEND_FALLBACK,
			 __ATOMIC_RELAXED);
}

static int policy_from_env(void)
{
	const char *v = getenv("SCALEKIT_ELIDE");

	if (!v || !*v || !strcmp(v, "auto"))
		return SK_ELIDE_AUTO;
	if (!strcmp(v, "on"))
		return SK_ELIDE_ON;
	if (!strcmp(v, "off"))
		return SK_ELIDE_OFF;
	fprintf(stderr,
		"scalekit: warning: ignoring SCALEKIT_ELIDE=\"%s\" (expected "
		"auto, on or off); using auto\n",
		v);
	return SK_ELIDE_AUTO;
}

__attribute__((constructor)) static void sk_elide_init(void)
{
	cpu_flags = detect_cpu();
	sk__elide_rtm = !!(cpu_flags & SK_ELIDE_CPU_RTM);
	apply_policy(policy_from_env());
}

int sk_elide_set_policy(enum sk_elide_policy policy)
{
	if (policy != SK_ELIDE_AUTO && policy != SK_ELIDE_ON &&
	    policy != SK_ELIDE_OFF)
		return -EINVAL;
	apply_policy(policy);
	return 0;
}

enum sk_elide_policy sk_elide_get_policy(void)
{
	return (enum sk_elide_policy)__atomic_load_n(&elide_policy,
						     __ATOMIC_RELAXED);
}

enum sk_elide_backend sk_elide_backend(void)
{
	return (enum sk_elide_backend)__atomic_load_n(&elide_backend,
						      __ATOMIC_RELAXED);
}

const char *sk_elide_backend_name(enum sk_elide_backend b)
{
	static const char *const names[] = { "fallback", "rtm", "sim" };

	return (unsigned)b < 3 ? names[b] : "?";
}

unsigned int sk_elide_cpu_has_rtm(void)
{
	return cpu_flags;
}

/* ---- tuning and statistics -------------------------------------------------- */

int sk_elide_set_tuning(const struct sk_elide_tuning *t)
{
	struct sk_elide_tuning *k = &sk__elide_tuning;

	if (!t || t->conflict_retries > 64 || t->skip_max < 1 ||
	    t->skip_max > 65535 || t->skip_initial < 1 ||
	    t->skip_initial > t->skip_max || t->handoff_wakeups < 1 ||
	    t->handoff_wakeups > 1000)
		return -EINVAL;
	/* Relaxed: each knob is read on its own by later acquisitions. */
	__atomic_store_n(&k->conflict_retries, t->conflict_retries,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&k->skip_initial, t->skip_initial, __ATOMIC_RELAXED);
	__atomic_store_n(&k->skip_max, t->skip_max, __ATOMIC_RELAXED);
	__atomic_store_n(&k->handoff_wakeups, t->handoff_wakeups,
			 __ATOMIC_RELAXED);
	return 0;
}

void sk_elide_get_tuning(struct sk_elide_tuning *t)
{
	struct sk_elide_tuning *k = &sk__elide_tuning;

	t->conflict_retries = __atomic_load_n(&k->conflict_retries,
					      __ATOMIC_RELAXED);
	t->skip_initial = __atomic_load_n(&k->skip_initial, __ATOMIC_RELAXED);
	t->skip_max = __atomic_load_n(&k->skip_max, __ATOMIC_RELAXED);
	t->handoff_wakeups = __atomic_load_n(&k->handoff_wakeups,
					     __ATOMIC_RELAXED);
}

/* Apply op to every counter of s (and of out, when given). */
static void stats_each(struct sk_elide_stats *s, struct sk_elide_stats *out)
{
	unsigned long *src = (unsigned long *)s, *dst = (unsigned long *)out;
	size_t i, n = sizeof(*s) / sizeof(unsigned long);

	/* Relaxed: counters are independent statistics. */
	for (i = 0; i < n; i++) {
		if (dst)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		else
			__atomic_store_n(&src[i], 0, __ATOMIC_RELAXED);
	}
}

void sk_elide_stats_read(const struct sk_elide_stats *s,
			 struct sk_elide_stats *out)
{
	stats_each((struct sk_elide_stats *)s, out);
}

void sk_elide_stats_reset(struct sk_elide_stats *s)
{
	stats_each(s, NULL);
}

const char *sk_elide_abort_cause_name(int cause)
{
	static const char *const names[] = { "conflict", "capacity",
					     "explicit", "busy", "other" };

	return (unsigned)cause < SK_ELIDE_ABORT_NCAUSES ? names[cause] : "?";
}

/* ---- the state machine ------------------------------------------------------ */

/*
 * The backend's XBEGIN, XTEST, XEND and XABORT, and the read of the lock
 * word into the read set.  The simulated backend (src/elide_sim.c) keeps
 * a nesting count as the hardware does; it cannot roll back, so its
 * XABORT returns (see enter_nested()) and its XEND returns the status of
 * an abort decided after XBEGIN (0: committed).
 */
static inline unsigned int tx_begin(void)
{
#if defined(SK_ELIDE_SIM)
	return sk__sim_xbegin();
#elif defined(SK__ELIDE_RTM)
	return sk__xbegin();
#else
	return SK__TX_ABORTED(0); /* never reached: no backend to enable */
#endif
}

static inline int tx_test(void)
{
#if defined(SK_ELIDE_SIM)
	return sk__sim_xtest();
#elif defined(SK__ELIDE_RTM)
	return sk__elide_rtm && sk__xtest();
#else
	return 0;
#endif
}

static inline unsigned int tx_end(void)
{
#if defined(SK_ELIDE_SIM)
	return sk__sim_xend();
#elif defined(SK__ELIDE_RTM)
	sk__xend();
#endif
	return 0;
}

#if defined(SK_ELIDE_SIM)
#define tx_abort(code) sk__sim_xabort(SK__TX_ABORTED(code))
#elif defined(SK__ELIDE_RTM)
#define tx_abort(code) sk__xabort(code)
#else
#define tx_abort(code) ((void)0)
#endif

static inline int tx_read_lock(int kind, void *lock)
{
#if defined(SK_ELIDE_SIM)
	return sk__sim_read_lock(kind, lock);
#else
	return sk__elide_lock_free(kind, lock);
#endif
}

/* An elided lock was unlocked: the simulated read set lets it go. */
static inline void tx_read_unlock(int kind, void *lock)
{
#if defined(SK_ELIDE_SIM)
	sk__sim_read_unlock(kind, lock);
#else
	(void)kind; /* RTM: the word stays in the read set until XEND */
	(void)lock;
#endif
}

int sk_elide_in_transaction(void)
{
	return tx_test();
}

/*
 * Map an abort status to a cause.  Explicit aborts carry our code; the
 * hardware bits are tested capacity first (a capacity abort may also
 * report a conflict, and retrying it is useless).
 */
static int abort_cause(unsigned int s)
{
	if (s & SK__TX_EXPLICIT)
		return SK__TX_CODE(s) == SK__XABORT_BUSY ? SK_ELIDE_ABORT_BUSY
		       : SK__TX_CODE(s) == SK__XABORT_NESTED
			       ? SK_ELIDE_ABORT_OTHER
			       : SK_ELIDE_ABORT_EXPLICIT;
	if (s & SK__TX_CAPACITY)
		return SK_ELIDE_ABORT_CAPACITY;
	if (s & SK__TX_CONFLICT)
		return SK_ELIDE_ABORT_CONFLICT;
	return SK_ELIDE_ABORT_OTHER;
}

/*
 * A non-retryable abort: skip elision for skip_initial << level
 * acquisitions (capped), and let the next such abort skip twice as long.
 * The policy word shares the lock's cache line, so it is written only
 * here, when skipping and when a commit decays the level: never on the
 * steady elided path, where a write would abort the other elided readers
 * of the line.  Relaxed: a heuristic; racing updates lose a step at most.
 */
static void policy_penalize(unsigned int *policy)
{
	unsigned int p = __atomic_load_n(policy, __ATOMIC_RELAXED);
	unsigned int level = p / POL_LEVEL_ONE, skip;
	unsigned int init = __atomic_load_n(&sk__elide_tuning.skip_initial,
					    __ATOMIC_RELAXED);
	unsigned int max = __atomic_load_n(&sk__elide_tuning.skip_max,
					   __ATOMIC_RELAXED);

	skip = level >= POL_LEVEL_MAX || (init << level) > max ? max
							       : init << level;
	if (level < POL_LEVEL_MAX)
		level++;
	__atomic_store_n(policy, level * POL_LEVEL_ONE | skip,
			 __ATOMIC_RELAXED);
}

/* 1 (and one skip used up) when the lock is in its skip period. */
static int policy_skip(unsigned int *policy, struct sk_elide_stats *stats)
{
	unsigned int p = __atomic_load_n(policy, __ATOMIC_RELAXED);

	if (!(p & POL_SKIP_MASK))
		return 0;
	/* Relaxed: see policy_penalize(). */
	__atomic_store_n(policy, p - 1, __ATOMIC_RELAXED);
	SK__STAT_INC(stats, skips);
	return 1;
}

/* Count an abort; returns 1 when the transaction should be retried. */
static int after_abort(unsigned int status, int tries, unsigned int *policy,
		       struct sk_elide_stats *stats)
{
	int cause = abort_cause(status);

	SK__STAT_INC(stats, aborts[cause]);
	if (cause == SK_ELIDE_ABORT_CONFLICT &&
	    (unsigned)tries < __atomic_load_n(&sk__elide_tuning.conflict_retries,
					      __ATOMIC_RELAXED))
		return 1;
	if (cause == SK_ELIDE_ABORT_CAPACITY ||
	    cause == SK_ELIDE_ABORT_EXPLICIT || cause == SK_ELIDE_ABORT_BUSY)
		policy_penalize(policy);
	SK__STAT_INC(stats, fallbacks);
	return 0;
}

/*
 * Inside this thread's elided section: the inner lock elides too, in the
 * same transaction (no XBEGIN: the nesting depth is ours, see elided).  A
 * busy inner lock, or one past SK__ELIDE_MAX_NEST, aborts the transaction:
 * on RTM that rolls back to the outermost XBEGIN, and the outermost lock
 * falls back.  The simulated backend cannot roll back: its XABORT returns
 * and the section runs on under the inner lock's real lock, which the
 * unlock then releases for real (the lock is not in elided).
 */
static int enter_nested(int kind, void *lock)
{
	if (elided.depth == SK__ELIDE_MAX_NEST) {
		tx_abort(SK__XABORT_NESTED);
	} else if (tx_read_lock(kind, lock)) {
		elided.locks[elided.depth++] = lock;
		return 1;
	} else {
		tx_abort(SK__XABORT_BUSY);
	}
	return 0;
}

/*
 * Begin this thread's elided section: XBEGIN (nested in a transaction the
 * program began itself, if any: the hardware counts it), then the lock
 * word into the read set.
 */
static unsigned int begin_on(int kind, void *lock)
{
	unsigned int s = tx_begin();

	if (s != SK__TX_STARTED)
		return s;
	if (tx_read_lock(kind, lock)) {
		elided.locks[0] = lock;
		elided.depth = 1;
		return s;
	}
#ifdef SK_ELIDE_SIM
	return sk__sim_unwind(SK__TX_ABORTED(SK__XABORT_BUSY)); /* none ran */
#else
	tx_abort(SK__XABORT_BUSY); /* resumes in tx_begin() with the status */
	return SK__TX_ABORTED(SK__XABORT_BUSY);
#endif
}

int sk__elide_enter(int kind, void *lock, unsigned int *policy,
		    struct sk_elide_stats *stats)
{
	unsigned int s;
	int tries;

	if (!__atomic_load_n(&sk_elide__enabled, __ATOMIC_RELAXED))
		return 0;
	if (elided.depth)
		return enter_nested(kind, lock);
	if (policy_skip(policy, stats))
		return 0;
	for (tries = 0;; tries++) {
		s = begin_on(kind, lock);
		if (s == SK__TX_STARTED)
			return 1;
		if (!after_abort(s, tries, policy, stats))
			return 0;
	}
}

/* The outermost elided section committed: count it, decay the level. */
static void after_commit(unsigned int *policy, struct sk_elide_stats *stats)
{
	unsigned int p = __atomic_load_n(policy, __ATOMIC_RELAXED);

	SK__STAT_INC(stats, commits);
	/* Relaxed: see policy_penalize(); written only while level > 0. */
	if (p >= POL_LEVEL_ONE)
		__atomic_store_n(policy, p - POL_LEVEL_ONE, __ATOMIC_RELAXED);
}

/* Take lock out of elided; 0 when this thread did not elide it. */
static int elided_remove(void *lock)
{
	unsigned int i = elided.depth;

	while (i > 0 && elided.locks[i - 1] != lock)
		i--;
	if (!i)
		return 0;
	for (; i < elided.depth; i++)
		elided.locks[i - 1] = elided.locks[i];
	elided.depth--;
	return 1;
}

/* sk__elide_exit() of a thread that elides some lock now. */
static __attribute__((noinline)) int
exit_elided(int kind, void *lock, unsigned int *policy,
	    struct sk_elide_stats *const *statsp)
{
	struct sk_elide_stats *stats;
	unsigned int s;

	if (!elided_remove(lock))
		return 0;
	/* Relaxed: a pointer to counters that are updated relaxed. */
	stats = __atomic_load_n(statsp, __ATOMIC_RELAXED);
	tx_read_unlock(kind, lock);
#ifdef SK_ELIDE_SIM
	if (sk__sim_busted_nesting())
		elided.depth = 0; /* the twin: this unlock ends the section */
#endif
	if (elided.depth)
		return 1; /* the elided section goes on: no XEND */
	s = tx_end();
	if (s)
		after_abort(s, INT_MAX, policy, stats); /* simulated only */
	else
		after_commit(policy, stats);
	return 1;
}

/*
 * The real unlocks call this first: for a thread that elides nothing it
 * is one thread-local load (the list's search and the commit are out of
 * line, so that this path saves no registers).
 */
int sk__elide_exit(int kind, void *lock, unsigned int *policy,
		   struct sk_elide_stats *const *statsp)
{
	if (__builtin_expect(!elided.depth, 1))
		return 0;
	return exit_elided(kind, lock, policy, statsp);
}

void sk__elide_trylock_check(void)
{
	if (!tx_test())
		return;
	/* glibc's choice: a trylock cannot answer truthfully inside a tx. */
	tx_abort(SK__XABORT_TRYLOCK);
}
