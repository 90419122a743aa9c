/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture locks`: every lock under contention from more threads
 * than CPUs.
 *
 * Each lock in turn gets the same workload: threads pick, at random, a
 * write section (one in four for reader-writer locks, always for plain
 * locks) or a read section.  A write section checks that the owner field
 * is free, claims it, bumps a shadow counter with a load, a spin and a
 * store (a lost update shows a second writer), copies the counter into a
 * multi-word snapshot one word at a time, and checks that it still owns
 * the owner field.  A read section copies the owner field and the
 * snapshot, and (once the lock says the copy is good: seqlocks may ask
 * for a retry) checks that no writer owned the data and that the words
 * agree.  At the end the shadow counter must equal the sum of the write
 * sections, and every thread must have made progress.
 *
 * --busted swaps in a broken twin of each lock, which the checks must
 * catch: plain locks become a test-then-set lock that is not atomic,
 * reader-writer locks get readers that take no lock, the seqlock's
 * readers skip the retry check.
 *
 * The reference locks (pthread_mutex, pthread_rwlock) are tortured like
 * scalekit's: a failure of theirs means the tool is wrong.  Elided locks
 * run once on each backend the CPU offers (fallback, rtm); the
 * scalekit_sim build of this tool (tests only) runs them on the simulated
 * backend with random injected aborts, and its --busted twin is the
 * library's: simulated sections that do not look at the lock word.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/elide.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"
#include "tool.h"
#include "torture_core.h"

#define CMD "torture"
#define TL_WORDS 4
#define TL_MAX_THREADS 256
#define TL_MAX_DURATION (366L * 24 * 3600)
/* A run where no section completes for this long has hung. */
#define TL_HANG_S 30

/* ---- the locks --------------------------------------------------------- */

/* Storage for any of the locks (the largest, aligned). */
union tl_storage {
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	struct sk_rwlock_rb rb;
	struct sk_seqlock sl;
	struct sk_elided_mutex em;
	struct sk_elided_spinlock es;
	struct sk_elided_rwlock erw;
	int word;
	unsigned char bytes[64];
} __attribute__((aligned(SK_CACHELINE)));

/*
 * One lock: init/destroy, the write side, and the read side when it has
 * one.  rd_end() returns 1 when the read must be retried (seqlock).
 */
struct tl_lock {
	const char *name;
	const char *desc;
	int (*init)(union tl_storage *s); /* 0 or -errno */
	int (*destroy)(union tl_storage *s);
	void (*wr_lock)(union tl_storage *s);
	void (*wr_unlock)(union tl_storage *s);
	unsigned int (*rd_begin)(union tl_storage *s);
	int (*rd_end)(union tl_storage *s, unsigned int token);
	int seqlock; /* readers may see a torn copy before rd_end() */
	int elided;  /* run once on each elision backend */
};

static int tl_mutex_init(union tl_storage *s)
{
	return -pthread_mutex_init(&s->m, NULL);
}

static int tl_mutex_destroy(union tl_storage *s)
{
	return -pthread_mutex_destroy(&s->m);
}

static void tl_mutex_lock(union tl_storage *s)
{
	pthread_mutex_lock(&s->m);
}

static void tl_mutex_unlock(union tl_storage *s)
{
	pthread_mutex_unlock(&s->m);
}

/*
 * Writer-preferring, as scalekit's rwlocks: glibc's default prefers
 * readers, and its writers then starve (the progress check fails).
 */
static int tl_rw_init(union tl_storage *s)
{
	pthread_rwlockattr_t a;
	int err;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	err = pthread_rwlock_init(&s->rw, &a);
	pthread_rwlockattr_destroy(&a);
	return -err;
}

static int tl_rw_destroy(union tl_storage *s)
{
	return -pthread_rwlock_destroy(&s->rw);
}

static void tl_rw_write_lock(union tl_storage *s)
{
	pthread_rwlock_wrlock(&s->rw);
}

static void tl_rw_unlock(union tl_storage *s)
{
	pthread_rwlock_unlock(&s->rw);
}

/*
 * TL_ADAPTERS(x, m, init, destroy, lock, unlock) - tl_x_init(),
 * tl_x_destroy(), tl_x_lock() and tl_x_unlock() on member m of union
 * tl_storage, for a lock whose init cannot fail.
 */
#define TL_ADAPTERS(x, m, init, destroy, lock, unlock)    \
	static int tl_##x##_init(union tl_storage *s)     \
	{                                                 \
		init(&s->m);                              \
		return 0;                                 \
	}                                                 \
	static int tl_##x##_destroy(union tl_storage *s)  \
	{                                                 \
		return destroy(&s->m);                    \
	}                                                 \
	static void tl_##x##_lock(union tl_storage *s)    \
	{                                                 \
		lock(&s->m);                              \
	}                                                 \
	static void tl_##x##_unlock(union tl_storage *s)  \
	{                                                 \
		unlock(&s->m);                            \
	}

/*
 * TL_READ_ADAPTERS(x, m, read_lock, read_unlock) - tl_x_read_lock() and
 * tl_x_read_unlock() for a read side that never asks for a retry.
 */
#define TL_READ_ADAPTERS(x, m, read_lock, read_unlock)                   \
	static unsigned int tl_##x##_read_lock(union tl_storage *s)      \
	{                                                                \
		read_lock(&s->m);                                        \
		return 0;                                                \
	}                                                                \
	static int tl_##x##_read_unlock(union tl_storage *s,             \
					unsigned int t)                  \
	{                                                                \
		(void)t;                                                 \
		read_unlock(&s->m);                                      \
		return 0;                                                \
	}

TL_READ_ADAPTERS(rw, rw, pthread_rwlock_rdlock, pthread_rwlock_unlock)

TL_ADAPTERS(rb, rb, sk_rwlock_rb_init, sk_rwlock_rb_destroy,
	    sk_rwlock_rb_write_lock, sk_rwlock_rb_write_unlock)
TL_READ_ADAPTERS(rb, rb, sk_rwlock_rb_read_lock, sk_rwlock_rb_read_unlock)

static int tl_sl_init(union tl_storage *s)
{
	sk_seqlock_init(&s->sl);
	return 0;
}

static int tl_sl_destroy(union tl_storage *s)
{
	return sk_seqlock_destroy(&s->sl);
}

static void tl_sl_lock(union tl_storage *s)
{
	sk_seqlock_write_lock(&s->sl);
}

static void tl_sl_unlock(union tl_storage *s)
{
	sk_seqlock_write_unlock(&s->sl);
}

static unsigned int tl_sl_begin(union tl_storage *s)
{
	return sk_seqlock_read_begin(&s->sl);
}

static int tl_sl_retry(union tl_storage *s, unsigned int token)
{
	return sk_seqlock_read_retry(&s->sl, token);
}

TL_ADAPTERS(em, em, sk_elided_mutex_init, sk_elided_mutex_destroy,
	    sk_elided_mutex_lock, sk_elided_mutex_unlock)
TL_ADAPTERS(es, es, sk_elided_spinlock_init, sk_elided_spinlock_destroy,
	    sk_elided_spinlock_lock, sk_elided_spinlock_unlock)
TL_ADAPTERS(erw, erw, sk_elided_rwlock_init, sk_elided_rwlock_destroy,
	    sk_elided_rwlock_write_lock, sk_elided_rwlock_write_unlock)
TL_READ_ADAPTERS(erw, erw, sk_elided_rwlock_read_lock,
		 sk_elided_rwlock_read_unlock)

static const struct tl_lock tl_locks[] = {
	{ "pthread-mutex", "pthread_mutex_t (reference)", tl_mutex_init,
	  tl_mutex_destroy, tl_mutex_lock, tl_mutex_unlock, NULL, NULL, 0, 0 },
	{ "pthread-rwlock", "pthread_rwlock_t (reference)", tl_rw_init,
	  tl_rw_destroy, tl_rw_write_lock, tl_rw_unlock, tl_rw_read_lock,
	  tl_rw_read_unlock, 0, 0 },
	{ "rwlock-rb", "sk_rwlock_rb, read-biased", tl_rb_init,
	  tl_rb_destroy, tl_rb_lock, tl_rb_unlock, tl_rb_read_lock,
	  tl_rb_read_unlock, 0, 0 },
	{ "seqlock", "sk_seqlock", tl_sl_init, tl_sl_destroy, tl_sl_lock,
	  tl_sl_unlock, tl_sl_begin, tl_sl_retry, 1, 0 },
	{ "elided-mutex", "sk_elided_mutex, on each elision backend",
	  tl_em_init, tl_em_destroy, tl_em_lock, tl_em_unlock, NULL, NULL, 0,
	  1 },
	{ "elided-spinlock", "sk_elided_spinlock, on each elision backend",
	  tl_es_init, tl_es_destroy, tl_es_lock, tl_es_unlock, NULL, NULL, 0,
	  1 },
	{ "elided-rwlock", "sk_elided_rwlock, on each elision backend",
	  tl_erw_init, tl_erw_destroy, tl_erw_lock, tl_erw_unlock,
	  tl_erw_read_lock, tl_erw_read_unlock, 0, 1 },
};

#define TL_NLOCKS ((int)(sizeof(tl_locks) / sizeof(tl_locks[0])))

/* The busted plain lock: test, then set, not atomically. */
static void tl_busted_lock(union tl_storage *s)
{
	int i;

	while (SK_READ_ONCE(s->word))
		sk_cpu_relax();
	/* The window another thread slips through, also on one CPU. */
	for (i = 0; i < 64; i++)
		sk_cpu_relax();
	sched_yield();
	SK_WRITE_ONCE(s->word, 1);
}

static void tl_busted_unlock(union tl_storage *s)
{
	SK_WRITE_ONCE(s->word, 0);
}

/* ---- one run of one lock ------------------------------------------------- */

struct tl_run;

struct tl_thread {
	struct tl_run *run;
	pthread_t tid;
	struct sk_tort_rng rng;
	unsigned long id; /* 1.. : the owner field's value */
	unsigned long reads, writes, retries, errors; /* relaxed */
} __attribute__((aligned(SK_CACHELINE)));

struct tl_run {
	const struct tl_lock *lk;
	const char *label; /* lock name, and /backend for elided locks */
	int busted;	   /* a broken lock: races are expected */
	int twin;	   /* the tool's broken twin replaces the lock */
	int stop; /* atomic */
	union tl_storage lock;
	/* The guarded data, on its own line. */
	unsigned long owner __attribute__((aligned(SK_CACHELINE)));
	unsigned long shadow;
	unsigned long w[TL_WORDS];
	unsigned long printed; /* atomic: error lines printed */
};

static void tl_error(struct tl_thread *t, const char *what, unsigned long a,
		     unsigned long b)
{
	sk_tort_inc(&t->errors);
	if (__atomic_fetch_add(&t->run->printed, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "ERROR: %s thread %lu: %s (%lu vs %lu)\n",
			t->run->label, t->id, what, a, b);
}

/*
 * The shadow counter: plain accesses with a working lock (so that TSan
 * checks the lock's ordering), relaxed atomics with a busted one.
 */
static unsigned long tl_shadow_get(struct tl_run *r)
{
	return r->busted ? SK_READ_ONCE(r->shadow)
			 : *(volatile unsigned long *)&r->shadow;
}

static void tl_shadow_set(struct tl_run *r, unsigned long v)
{
	if (r->busted)
		SK_WRITE_ONCE(r->shadow, v);
	else
		*(volatile unsigned long *)&r->shadow = v;
}

static void tl_write_section(struct tl_thread *t)
{
	struct tl_run *r = t->run;
	int plain_busted = r->twin && !r->lk->rd_begin;
	unsigned long v, o;
	int k;

	if (plain_busted)
		tl_busted_lock(&r->lock);
	else
		r->lk->wr_lock(&r->lock);
	o = SK_READ_ONCE(r->owner);
	if (o != 0)
		tl_error(t, "lock taken while another thread owns it", o, 0);
	SK_WRITE_ONCE(r->owner, t->id);
	v = tl_shadow_get(r) + 1;
	sk_tort_spin(&t->rng, 8);
	tl_shadow_set(r, v);
	for (k = 0; k < TL_WORDS; k++) {
		SK_WRITE_ONCE(r->w[k], v);
		sk_tort_spin(&t->rng, 16);
		/* Preempted inside the section (the twins' readers see it). */
		if (sk_tort_one_in(&t->rng, r->busted ? 4 : 64))
			sched_yield();
	}
	o = SK_READ_ONCE(r->owner);
	if (o != t->id)
		tl_error(t, "owner changed inside a write section", o, t->id);
	SK_WRITE_ONCE(r->owner, 0);
	if (plain_busted)
		tl_busted_unlock(&r->lock);
	else
		r->lk->wr_unlock(&r->lock);
	sk_tort_inc(&t->writes);
}

static void tl_read_section(struct tl_thread *t)
{
	struct tl_run *r = t->run;
	unsigned long o, w[TL_WORDS];
	unsigned int tok = 0;
	int k, retry;

	do {
		/* Busted readers take no lock (the seqlock's: no retry). */
		if (!r->twin || r->lk->seqlock)
			tok = r->lk->rd_begin(&r->lock);
		o = SK_READ_ONCE(r->owner);
		for (k = 0; k < TL_WORDS; k++) {
			w[k] = SK_READ_ONCE(r->w[k]);
			sk_tort_spin(&t->rng, 16);
			/* Preempted mid-read: a writer may run meanwhile. */
			if (sk_tort_one_in(&t->rng, r->busted ? 4 : 256))
				sched_yield();
		}
		retry = r->twin ? 0 : r->lk->rd_end(&r->lock, tok);
		if (retry)
			sk_tort_inc(&t->retries);
	} while (retry);
	if (o != 0)
		tl_error(t, "read section overlapped a writer", o, 0);
	for (k = 1; k < TL_WORDS; k++)
		if (w[k] != w[0])
			tl_error(t, "torn snapshot", w[0], w[k]);
	sk_tort_inc(&t->reads);
}

static void *tl_main(void *arg)
{
	struct tl_thread *t = arg;
	struct tl_run *r = t->run;

	while (!sk_atomic_load_acquire(&r->stop)) {
		if (r->lk->rd_begin && !sk_tort_one_in(&t->rng, 4))
			tl_read_section(t);
		else
			tl_write_section(t);
		if (sk_tort_one_in(&t->rng, 64))
			sched_yield();
	}
	return NULL;
}

/* Sum of the threads' sections (for the monitor). */
static unsigned long tl_sections(struct tl_thread *th, unsigned long n)
{
	unsigned long i, s = 0;

	for (i = 0; i < n; i++)
		s += sk_atomic_load_relaxed(&th[i].reads) +
		     sk_atomic_load_relaxed(&th[i].writes);
	return s;
}

/* Sleep for the run, printing progress; 0, or -1 when it hung. */
static int tl_monitor(struct tl_run *r, struct tl_thread *th, unsigned long n,
		      double secs)
{
	uint64_t start = sk_tort_now_ns(), last_change = start, now;
	unsigned long seen = 0, s;

	for (;;) {
		usleep(100000);
		now = sk_tort_now_ns();
		s = tl_sections(th, n);
		if (s != seen) {
			seen = s;
			last_change = now;
		}
		if ((now - last_change) / 1000000000ULL >= TL_HANG_S) {
			fprintf(stderr, "ERROR: %s: no section completed for "
					"%d s: hang\n",
				r->label, TL_HANG_S);
			return -1;
		}
		if ((now - start) / 1e9 >= secs)
			return 0;
	}
}

/* Final checks and the report line; returns the errors counted. */
static unsigned long tl_report(struct tl_run *r, struct tl_thread *th,
			       unsigned long n, double secs)
{
	unsigned long i, reads = 0, writes = 0, retries = 0, errors = 0;

	for (i = 0; i < n; i++) {
		reads += th[i].reads;
		writes += th[i].writes;
		retries += th[i].retries;
		errors += th[i].errors;
		if (th[i].reads + th[i].writes == 0) {
			fprintf(stderr, "ERROR: %s thread %lu made no "
					"progress\n",
				r->label, th[i].id);
			errors++;
		}
	}
	if (r->shadow != writes) {
		fprintf(stderr, "ERROR: %s: shadow counter %lu, but %lu write "
				"sections (lost updates)\n",
			r->label, r->shadow, writes);
		errors++;
	}
	printf("%-22s %lu threads, %.1f s: %lu reads (%lu retries), %lu "
	       "writes, shadow %lu, errors %lu\n",
	       r->label, n, secs, reads, retries, writes, r->shadow, errors);
	return errors;
}

/*
 * The sim backend's busted twin corrupts the lock word, and the library's
 * own unlock check then aborts the process.  The run in progress (its
 * threads' error counters) decides the verdict: caught when the checks
 * counted errors before the abort.  Async-signal-safe: relaxed loads,
 * write(), _exit().
 */
static struct tl_thread *tl_abort_th;
static unsigned long tl_abort_n;

static void tl_on_abort(int sig)
{
	static const char caught[] =
		"the library aborted on the corrupted lock word after the "
		"checks had counted errors\n--busted: locks that do not "
		"exclude; the detector caught it, as it must\nFAILURE\n";
	static const char blind[] =
		"the library aborted on the corrupted lock word before any "
		"check failed\n--busted: NOT DETECTED: the detector is "
		"blind\nFAILURE\n";
	static int entered;
	unsigned long i, errors = 0;

	(void)sig;
	/* Several threads may abort at once: the first one reports. */
	if (__atomic_exchange_n(&entered, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	for (i = 0; i < tl_abort_n; i++)
		errors += __atomic_load_n(&tl_abort_th[i].errors,
					  __ATOMIC_RELAXED);
	if (errors) {
		if (write(1, caught, sizeof(caught) - 1) < 0)
			_exit(SK_TOOL_EXIT_FAIL);
	} else if (write(1, blind, sizeof(blind) - 1) < 0) {
		_exit(SK_TOOL_EXIT_FAIL);
	}
	_exit(errors ? SK_TOOL_EXIT_FAIL : 3);
}

/*
 * A thread is still in the lock TL_HANG_S s after the stop of run r.  With
 * a broken lock (--busted: a lock word that stays taken) that is its
 * failure, and the verdict is that of the checks, as in tl_on_abort();
 * with a working one it is a hang.  Does not return.
 */
static void tl_stuck(const struct tl_run *r, struct tl_thread *th,
		     unsigned long n)
{
	unsigned long i, errors = 0;

	fprintf(stderr, "ERROR: %s: a thread is still in the lock %d s after "
			"the end of the run: hang\n",
		r->label, TL_HANG_S);
	if (!r->busted) {
		fflush(stdout);
		_exit(SK_TOOL_EXIT_FAIL);
	}
	for (i = 0; i < n; i++)
		errors += __atomic_load_n(&th[i].errors, __ATOMIC_RELAXED);
	printf("%s", errors ? "threads stuck in the broken lock after the "
			      "checks had counted errors\n--busted: locks "
			      "that do not exclude; the detector caught it, "
			      "as it must\nFAILURE\n"
			    : "threads stuck in the broken lock before any "
			      "check failed\n--busted: NOT DETECTED: the "
			      "detector is blind\nFAILURE\n");
	fflush(stdout);
	_exit(errors ? SK_TOOL_EXIT_FAIL : 3);
}

/* Join the started threads of run r within TL_HANG_S s (tl_stuck()). */
static void tl_join_all(const struct tl_run *r, struct tl_thread *th,
			unsigned long started)
{
	struct timespec deadline;
	unsigned long i;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += TL_HANG_S;
	for (i = 0; i < started; i++)
		if (pthread_timedjoin_np(th[i].tid, NULL, &deadline) != 0)
			tl_stuck(r, th, started);
}

/*
 * Torture lk (called label) with n threads for secs; the errors it found
 * (-1: setup).  busted: the lock is broken (twin: by the tool's twin).
 */
static long tl_run_one(const struct tl_lock *lk, const char *label,
		       unsigned long n, double secs, uint64_t seed, int busted,
		       int twin)
{
	static struct tl_run r;
	struct tl_thread *th = calloc(n, sizeof(*th));
	unsigned long i, started = 0, errors;
	int err, hung;

	memset(&r, 0, sizeof(r));
	r.lk = lk;
	r.label = label;
	r.busted = busted;
	r.twin = twin;
	err = th ? lk->init(&r.lock) : -ENOMEM;
	if (err) {
		fprintf(stderr, "scalekit torture: %s: cannot initialize: %s\n",
			label, strerror(-err));
		free(th);
		return -1;
	}
	if (busted && !twin) {
		/* The library's own twin (sim): see tl_on_abort(). */
		tl_abort_th = th;
		tl_abort_n = n;
		fflush(stdout);
		signal(SIGABRT, tl_on_abort);
	}
	for (i = 0; i < n; i++) {
		th[i].run = &r;
		th[i].id = i + 1;
		th[i].rng.s = seed ^ (0x9e3779b97f4a7c15ULL * (i + 1));
		if (pthread_create(&th[i].tid, NULL, tl_main, &th[i]) != 0)
			break;
		started++;
	}
	hung = started == n ? tl_monitor(&r, th, n, secs) : 0;
	if (hung) {
		fflush(stdout);
		_exit(SK_TOOL_EXIT_FAIL); /* threads stuck in a lock */
	}
	sk_atomic_store_release(&r.stop, 1);
	tl_join_all(&r, th, started);
	if (started < n) {
		fprintf(stderr, "scalekit torture: %s: cannot start %lu "
				"threads\n",
			label, n);
		free(th);
		return -1;
	}
	errors = tl_report(&r, th, n, secs);
	if (!busted && lk->destroy(&r.lock) != 0)
		errors++;
	free(th);
	return (long)errors;
}

/* ---- elision backends ------------------------------------------------------- */

/* The simulated backend's hooks (scalekit_elide_sim, tests/elide_sim.cmake). */
#include "internal/testing.h"

/* Random simulated aborts per 1000 transactions (sim backend). */
#define TL_SIM_ABORTS 100

/* An elision backend a run of an elided lock visits. */
struct tl_backend {
	const char *name;
	enum sk_elide_policy policy;
	enum sk_elide_backend expect;
};

/*
 * The backends this CPU (or build) offers: fallback, rtm when a probe
 * transaction committed; in the scalekit_sim tool (built against the
 * SK_ELIDE_SIM library), sim only.  Returns how many.
 */
static int tl_backends(struct tl_backend *out)
{
	int n = 0;

#ifdef SK_TORT_SIM
	out[n++] = (struct tl_backend){ "sim", SK_ELIDE_AUTO,
					SK__ELIDE_BACKEND_SIM };
#else
	out[n++] = (struct tl_backend){ "fallback", SK_ELIDE_OFF,
					SK_ELIDE_BACKEND_FALLBACK };
	if (sk_elide_cpu_has_rtm() & SK_ELIDE_CPU_PROBE_OK)
		out[n++] = (struct tl_backend){ "rtm", SK_ELIDE_AUTO,
						SK_ELIDE_BACKEND_RTM };
#endif
	return n;
}

/*
 * Switch to backend b (busted: its broken twin, sim only); 0, or -1 when
 * the library did not pick the backend (message printed).
 */
static int tl_backend_enter(const struct tl_backend *b, uint64_t seed,
			    int busted)
{
	sk_elide_set_policy(b->policy);
	if (sk_elide_backend() != b->expect) {
		fprintf(stderr, "scalekit torture: policy for backend %s "
				"gave backend %s\n",
			b->name, sk_elide_backend_name(sk_elide_backend()));
		return -1;
	}
#ifdef SK_TORT_SIM
	sk__elide_sim_random(TL_SIM_ABORTS, (unsigned long)seed);
	sk__elide_sim_busted(busted);
#else
	(void)seed;
	(void)busted;
#endif
	return 0;
}

static void tl_backend_leave(void)
{
#ifdef SK_TORT_SIM
	sk__elide_sim_busted(0);
	sk__elide_sim_random(0, 0);
#endif
	sk_elide_set_policy(SK_ELIDE_AUTO);
}

/*
 * Torture lock i on every backend it runs on; the errors found, or -1.
 * With --busted, each run must find errors (*uncaught counts the runs
 * that did not).
 */
static long tl_run_lock(int i, unsigned long n, double secs, uint64_t seed,
			int busted, int *uncaught)
{
	const struct tl_lock *lk = &tl_locks[i];
	struct tl_backend bs[3];
	char label[64];
	int nb = lk->elided ? tl_backends(bs) : 1, b;
	long e, errors = 0;

	for (b = 0; b < nb; b++) {
		int lib_twin = 0;

		snprintf(label, sizeof(label), "%s%s%s", lk->name,
			 lk->elided ? "/" : "", lk->elided ? bs[b].name : "");
		if (lk->elided) {
			if (tl_backend_enter(&bs[b], seed, busted))
				return -1;
			lib_twin = bs[b].expect == SK__ELIDE_BACKEND_SIM;
		}
		e = tl_run_one(lk, label, n, secs, seed, busted,
			       busted && !lib_twin);
		if (lk->elided)
			tl_backend_leave();
		if (e < 0)
			return -1;
		if (busted && e == 0) {
			printf("%s: its busted twin was NOT caught\n", label);
			++*uncaught;
		}
		errors += e;
		fflush(stdout);
	}
	return errors;
}

/* Runs of lock i (its backends); only: the --lock name or NULL. */
static int tl_nruns(int i, const char *only)
{
	struct tl_backend bs[3];

	if (only && strcmp(only, tl_locks[i].name))
		return 0;
	return tl_locks[i].elided ? tl_backends(bs) : 1;
}

/* ---- command line ---------------------------------------------------------- */

static void tl_usage(FILE *f)
{
	int i;

	fprintf(f,
		"usage: scalekit torture locks [--duration S] [--threads N] "
		"[--lock NAME]\n"
		"              [--seed X] [--busted]\n"
		"\n"
		"Torture every lock (or one, --lock) in turn with more "
		"threads than CPUs:\nmutual exclusion by a shadow counter and "
		"an owner field, readers check a\nmulti-word snapshot.  The "
		"duration is shared among the locks.\n\nLocks:\n");
	for (i = 0; i < TL_NLOCKS; i++)
		fprintf(f, "  %-22s %s\n", tl_locks[i].name, tl_locks[i].desc);
	fprintf(f,
		"\nOptions:\n"
		"  --duration S  seconds in all (default 10)\n"
		"  --threads N   threads per lock (default: 2 x CPUs + 1)\n"
		"  --lock NAME   only this lock\n"
		"  --seed X      seed of the random choices (decimal)\n"
		"  --busted      broken twins of the locks: the run must "
		"report FAILURE\n");
}

struct tl_config {
	long duration, threads, seed;
	const char *only;
	int busted;
};

/* Parse argv (argv[0] "torture", one word "locks"); -1: usage error. */
static int tl_parse(int argc, char **argv, struct tl_config *c)
{
	static const struct {
		const char *name;
		long min, max;
		size_t off;
	} nums[] = {
		{ "--duration", 1, TL_MAX_DURATION,
		  offsetof(struct tl_config, duration) },
		{ "--threads", 1, TL_MAX_THREADS,
		  offsetof(struct tl_config, threads) },
		{ "--seed", 0, 0x7fffffffL, offsetof(struct tl_config, seed) },
	};
	const char *val;
	size_t k;
	int i, r;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "locks") == 0)
			continue;
		if (strcmp(argv[i], "--busted") == 0) {
			c->busted = 1;
			continue;
		}
		r = sk_tool_option_value(CMD, argc, argv, &i, "--lock", &val);
		if (r < 0)
			return -1;
		if (r > 0) {
			c->only = val;
			continue;
		}
		for (k = 0, r = 0; k < sizeof(nums) / sizeof(nums[0]) && !r;
		     k++) {
			r = sk_tool_option_value(CMD, argc, argv, &i,
						 nums[k].name, &val);
			if (r > 0 &&
			    sk_tool_parse_long(val, nums[k].min, nums[k].max,
					       (long *)((char *)c +
							nums[k].off)) != 0) {
				sk_tool_usage_error(CMD, "%s wants a whole "
					"number from %ld to %ld, not '%s'",
					nums[k].name, nums[k].min,
					nums[k].max, val);
				return -1;
			}
		}
		if (r < 0)
			return -1;
		if (r == 0) {
			sk_tool_usage_error(CMD, "locks: unknown option or "
					    "word '%s'", argv[i]);
			return -1;
		}
	}
	return 0;
}

int sk_tort_locks_main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct tl_config c = { 10, 2 * (ncpu < 1 ? 1 : ncpu) + 1, 1, NULL, 0 };
	long errors = 0, e;
	int i, nsel = 0, uncaught = 0;
	double secs;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			tl_usage(stdout);
			return SK_TOOL_EXIT_OK;
		}
	if (tl_parse(argc, argv, &c) != 0)
		return SK_TOOL_EXIT_USAGE;
	for (i = 0; i < TL_NLOCKS; i++)
		nsel += tl_nruns(i, c.only);
	if (!nsel)
		return sk_tool_usage_error(CMD, "locks: unknown lock '%s' "
					   "(see --help)", c.only);
	secs = (double)c.duration / nsel;
	printf("torture locks: %d run%s, %ld threads each, %.1f s each, "
	       "seed %ld%s\n",
	       nsel, nsel == 1 ? "" : "s", c.threads, secs, c.seed,
	       c.busted ? ", BUSTED twins" : "");
	fflush(stdout);
	for (i = 0; i < TL_NLOCKS; i++) {
		if (!tl_nruns(i, c.only))
			continue;
		e = tl_run_lock(i, (unsigned long)c.threads, secs,
				(uint64_t)c.seed + (uint64_t)i, c.busted,
				&uncaught);
		if (e < 0)
			return SK_TOOL_EXIT_FAIL;
		errors += e;
	}
	printf("errors: %ld\n", errors);
	if (c.busted)
		printf("--busted: locks that do not exclude; %s\n",
		       !uncaught ? "the detector caught it, as it must"
			      : "NOT DETECTED: the detector is blind");
	printf("%s\n", errors || c.busted ? "FAILURE" : "SUCCESS");
	return errors || c.busted ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
}
