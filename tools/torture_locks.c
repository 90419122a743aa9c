/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture locks`, the locks mode (sk_tort_locks_scenario, a run
 * of its own): every lock of the ops table (torture_lock_ops.c), or the
 * one --lock names, under contention from more threads than CPUs
 * (--threads); --duration, --seed and --busted as in every mode.
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
 * --busted swaps in each lock's broken twin (its ->broken in the table),
 * which the checks must catch: plain locks become a test-then-set lock that is not atomic,
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

#include "tool.h"
#include "torture_core.h"
#include "torture_lock_ops.h"

#define TL_WORDS 4
/* A run where no section completes for this long has hung. */
#define TL_HANG_S 30

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
	const struct sk_tort_lock_ops *lk; /* the lock, or its broken twin */
	const char *label; /* lock name, and /backend for elided locks */
	int busted;	   /* a broken lock: races are expected */
	int stop; /* atomic */
	union sk_tort_lock lock;
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
	unsigned long v, o;
	int k;

	r->lk->write_lock(&r->lock);
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
	r->lk->write_unlock(&r->lock);
	sk_tort_inc(&t->writes);
}

static void tl_read_section(struct tl_thread *t)
{
	struct tl_run *r = t->run;
	unsigned long o, w[TL_WORDS];
	unsigned int tok;
	int k, retry;

	do {
		/* Twins: readers take no lock (the seqlock's: no retry). */
		tok = r->lk->read_lock(&r->lock);
		o = SK_READ_ONCE(r->owner);
		for (k = 0; k < TL_WORDS; k++) {
			w[k] = SK_READ_ONCE(r->w[k]);
			sk_tort_spin(&t->rng, 16);
			/* Preempted mid-read: a writer may run meanwhile. */
			if (sk_tort_one_in(&t->rng, r->busted ? 4 : 256))
				sched_yield();
		}
		retry = r->lk->read_unlock(&r->lock, tok);
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
		if (r->lk->read_lock && !sk_tort_one_in(&t->rng, 4))
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
 * (-1: setup).  busted: the lock is broken (lk is its twin, or the
 * library's sim backend is busted).
 */
static long tl_run_one(const struct sk_tort_lock_ops *lk, const char *label,
		       unsigned long n, double secs, uint64_t seed, int busted)
{
	static struct tl_run r;
	struct tl_thread *th = calloc(n, sizeof(*th));
	unsigned long i, started = 0, errors;
	int err, hung;

	memset(&r, 0, sizeof(r));
	r.lk = lk;
	r.label = label;
	r.busted = busted;
	err = th ? lk->init(&r.lock) : -ENOMEM;
	if (err) {
		fprintf(stderr, "scalekit torture: %s: cannot initialize: %s\n",
			label, strerror(-err));
		free(th);
		return -1;
	}
	if (busted && lk->broken) {
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
	if (lk->destroy(&r.lock) != 0)
		errors++;
	free(th);
	return (long)errors;
}

/* ---- elision backends ---------------------------------------------------- */

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
 * Torture lk on every backend it runs on; the errors found, or -1.  With
 * --busted, each run must find errors (*uncaught counts the runs that did
 * not).
 */
static long tl_run_lock(const struct sk_tort_lock_ops *lk, unsigned long n,
			double secs, uint64_t seed, int busted, int *uncaught)
{
	struct tl_backend bs[3];
	char label[64];
	int nb = lk->elided ? tl_backends(bs) : 1, b;
	long e, errors = 0;

	for (b = 0; b < nb; b++) {
		/* The sim backend's twin is the library's (tl_on_abort()). */
		int lib_twin = lk->elided &&
			       bs[b].expect == SK__ELIDE_BACKEND_SIM;

		snprintf(label, sizeof(label), "%s%s%s", lk->name,
			 lk->elided ? "/" : "", lk->elided ? bs[b].name : "");
		if (lk->elided && tl_backend_enter(&bs[b], seed, busted))
			return -1;
		e = tl_run_one(busted && !lib_twin ? lk->broken : lk, label, n,
			       secs, seed, busted);
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

/* Runs of lock lk (its backends); only: the --lock name or NULL. */
static int tl_nruns(const struct sk_tort_lock_ops *lk, const char *only)
{
	struct tl_backend bs[3];

	if (only && strcmp(only, lk->name))
		return 0;
	return lk->elided ? tl_backends(bs) : 1;
}

/* ---- the mode ------------------------------------------------------------ */

void sk_tort_locks_list(FILE *f)
{
	int i;

	for (i = 0; sk_tort_locks[i]; i++)
		fprintf(f, "    %-18s %s\n", sk_tort_locks[i]->name,
			sk_tort_locks[i]->desc);
}

static int tl_run_mode(const struct sk_tort_config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), errors = 0, e;
	unsigned long n = 2 * (unsigned long)(ncpu < 1 ? 1 : ncpu) + 1;
	int i, nsel = 0, uncaught = 0;
	double secs;

	if (cfg->threads)
		n = cfg->threads;
	for (i = 0; sk_tort_locks[i]; i++)
		nsel += tl_nruns(sk_tort_locks[i], cfg->lock);
	if (!nsel)
		return sk_tool_usage_error("torture",
					   "locks: unknown lock '%s' (see "
					   "--help)",
					   cfg->lock);
	secs = (double)cfg->duration_s / nsel;
	printf("torture locks: %d run%s, %lu threads each, %.1f s each, "
	       "seed %llu%s\n",
	       nsel, nsel == 1 ? "" : "s", n, secs,
	       (unsigned long long)cfg->seed,
	       cfg->busted ? ", BUSTED twins" : "");
	fflush(stdout);
	for (i = 0; sk_tort_locks[i]; i++) {
		if (!tl_nruns(sk_tort_locks[i], cfg->lock))
			continue;
		e = tl_run_lock(sk_tort_locks[i], n, secs,
				cfg->seed + (uint64_t)i, cfg->busted,
				&uncaught);
		if (e < 0)
			return SK_TOOL_EXIT_FAIL;
		errors += e;
	}
	printf("errors: %ld\n", errors);
	if (cfg->busted)
		printf("--busted: locks that do not exclude; %s\n",
		       !uncaught ? "the detector caught it, as it must"
				 : "NOT DETECTED: the detector is blind");
	printf("%s\n", errors || cfg->busted ? "FAILURE" : "SUCCESS");
	return errors || cfg->busted ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
}

const struct sk_tort_scenario sk_tort_locks_scenario = {
	.name = "locks",
	.run = tl_run_mode,
};
