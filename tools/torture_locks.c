/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture locks`, the locks mode (sk_tort_locks_scenario, a run
 * of its own): every lock of the ops table (torture_lock_ops.c), or the
 * one --lock names, under contention from more threads than CPUs
 * (--threads); --duration, --seed and --busted as in every mode.
 *
 * Each lock in turn gets the same workload, the locks' stress loop of
 * lock_stress.h (the one the lock tests run too), timed, with mixed
 * threads only: threads pick, at random, a write section (one in four for
 * reader-writer locks, always for plain locks) or a read section.  A
 * write section checks that the owner field is free, claims it, bumps a
 * shadow counter with a load, a spin and a store (a lost update shows a
 * second writer), copies the counter into a multi-word snapshot one word
 * at a time, and checks that it still owns the owner field.  A read
 * section copies the owner field and the snapshot, and (once the lock
 * says the copy is good: seqlocks may ask for a retry) checks that no
 * writer owned the data and that the words agree.  At the end the shadow
 * counter must equal the sum of the write sections, and every thread
 * must have made progress.  This file adds what a tool run needs around
 * the loop: a hang monitor, a verdict when the library aborts or threads
 * stay stuck in a broken lock, the elision backends, the report.
 *
 * --busted swaps in each lock's broken twin (its ->broken in the table),
 * which the checks must catch: plain locks become a test-then-set lock
 * that is not atomic, reader-writer locks get readers that take no lock, the seqlock's
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
#include "lock_stress.h"
#include "torture_lock_ops.h"

/* A run where no section completes for this long has hung. */
#define TL_HANG_S 30
/*
 * The same limit in a --busted run whose checks have already counted
 * errors: its verdict (caught) is known, and a broken lock word that
 * stays taken would otherwise hold the run for TL_HANG_S (32 s of a 2 s
 * run, seen under ASan on a loaded machine).
 */
#define TL_HANG_CAUGHT_S 2

/* The hang limit of run s: see TL_HANG_CAUGHT_S. */
static int tl_hang_s(struct sk_lks *s, int busted)
{
	return busted && sk_lks_errors(s) ? TL_HANG_CAUGHT_S : TL_HANG_S;
}

/*
 * Sleep for the run, watching progress; 0, or -1 when it hung.  A busted
 * run ends at its first error.  The run goes on past secs while a thread
 * has not completed a section yet (one that a loaded machine or a
 * sanitizer scheduled late), at most until the hang limit:
 * sk_lks_finish() then names each thread that never did.
 */
static int tl_monitor(struct sk_lks *s, const char *label, double secs,
		      int busted)
{
	uint64_t start = sk_tort_now_ns(), last_change = start, now;
	unsigned long seen = 0, n;
	int hang_s;

	for (;;) {
		usleep(100000);
		now = sk_tort_now_ns();
		n = sk_lks_sections(s);
		if (n != seen) {
			seen = n;
			last_change = now;
		}
		hang_s = tl_hang_s(s, busted);
		if ((now - last_change) / 1000000000ULL >= (uint64_t)hang_s) {
			fprintf(stderr, "ERROR: %s: no section completed for "
					"%d s: hang\n",
				label, hang_s);
			return -1;
		}
		if ((now - start) / 1e9 >= secs &&
		    (!sk_lks_idle(s) || (now - start) / 1e9 >= secs + hang_s))
			return 0;
		/* A broken twin has proved its point at its first error. */
		if (busted && sk_lks_errors(s))
			return 0;
	}
}

/* The verdict of a busted run that cannot finish (the run's errors). */
static const char tl_caught[] =
	"--busted: locks that do not exclude; the detector caught it, as "
	"it must\nFAILURE\n";
static const char tl_blind[] =
	"--busted: NOT DETECTED: the detector is blind\nFAILURE\n";

/*
 * The sim backend's busted twin corrupts the lock word, and the library's
 * own unlock check then aborts the process.  The run in progress (its
 * threads' error counters) decides the verdict: caught when the checks
 * counted errors.  The abort may come before they count any (once in
 * the aarch64 job under qemu-user): the other threads still run the
 * broken lock, so the handler gives their checks up to
 * TL_ABORT_WAIT_MS to count one before it calls the detector blind.
 * Async-signal-safe: atomic loads (sk_lks_errors()), nanosleep(),
 * write(), _exit().
 */
#define TL_ABORT_WAIT_MS 3000

static struct sk_lks *tl_abort_run;

static void tl_on_abort(int sig)
{
	static const char why[] = "the library aborted on the corrupted "
				  "lock word\n";
	static int entered;
	unsigned long errors;
	int waited;

	(void)sig;
	/* Several threads may abort at once: the first one reports. */
	if (__atomic_exchange_n(&entered, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	for (errors = 0, waited = 0;; waited++) {
		struct timespec ms = { 0, 1000000 };
		/* Acquire: pairs with tl_run_one()'s release (the run's
		 * state before its pointer). */
		struct sk_lks *run =
			__atomic_load_n(&tl_abort_run, __ATOMIC_ACQUIRE);

		if (run)
			errors = sk_lks_errors(run);
		if (errors || waited >= TL_ABORT_WAIT_MS)
			break;
		nanosleep(&ms, NULL);
	}
	if (write(1, why, sizeof(why) - 1) < 0)
		_exit(SK_TOOL_EXIT_FAIL);
	if (errors) {
		if (write(1, tl_caught, sizeof(tl_caught) - 1) < 0)
			_exit(SK_TOOL_EXIT_FAIL);
	} else if (write(1, tl_blind, sizeof(tl_blind) - 1) < 0) {
		_exit(SK_TOOL_EXIT_FAIL);
	}
	_exit(errors ? SK_TOOL_EXIT_FAIL : 3);
}

/*
 * A thread is still in the lock hang_s s after the stop of run s.  With
 * a broken lock (--busted: a lock word that stays taken) that is its
 * failure, and the verdict is that of the checks, as in tl_on_abort();
 * with a working one it is a hang.  Does not return.
 */
static void tl_stuck(struct sk_lks *s, const char *label, int busted,
		     int hang_s)
{
	unsigned long errors = sk_lks_errors(s);

	fprintf(stderr, "ERROR: %s: a thread is still in the lock %d s after "
			"the end of the run: hang\n",
		label, hang_s);
	if (busted)
		printf("threads stuck in the broken lock %s\n%s",
		       errors ? "after the checks had counted errors"
			      : "before any check failed",
		       errors ? tl_caught : tl_blind);
	fflush(stdout);
	_exit(busted && !errors ? 3 : SK_TOOL_EXIT_FAIL);
}

/*
 * Torture lk (called label) with n mixed threads for secs, in the
 * harness of lock_stress.h; the errors it found (-1: setup).  busted: the
 * lock is broken (lk is its twin, or the library's sim backend is
 * busted).
 */
static long tl_run_one(const struct sk_tort_lock_ops *lk, const char *label,
		       unsigned long n, double secs, uint64_t seed, int busted)
{
	struct sk_lks_cfg cfg = { .ops = lk, .label = label,
				  .mixed = (int)n, .busted = busted,
				  .print_errors = 10, .seed = seed };
	struct sk_lks_result r;
	struct sk_lks *s;
	uint64_t start;
	double ran;
	int hang_s;

	fflush(stdout);
	/* The library's own twin (sim): see tl_on_abort(); set before the
	 * threads start, which may abort at once. */
	if (busted && lk->broken)
		signal(SIGABRT, tl_on_abort);
	s = sk_lks_start(&cfg);
	if (!s) {
		fprintf(stderr, "scalekit torture: %s: cannot initialize the "
				"lock or start %lu threads\n",
			label, n);
		return -1;
	}
	if (busted && lk->broken) /* release: pairs with tl_on_abort() */
		__atomic_store_n(&tl_abort_run, s, __ATOMIC_RELEASE);
	start = sk_tort_now_ns();
	if (tl_monitor(s, label, secs, busted)) {
		fflush(stdout);
		_exit(SK_TOOL_EXIT_FAIL); /* threads stuck in a lock */
	}
	sk_lks_stop(s);
	hang_s = tl_hang_s(s, busted);
	if (sk_lks_join(s, hang_s))
		tl_stuck(s, label, busted, hang_s);
	/* Relaxed: every thread joined, none can abort any more. */
	__atomic_store_n(&tl_abort_run, NULL, __ATOMIC_RELAXED);
	ran = (sk_tort_now_ns() - start) / 1e9;
	sk_lks_finish(s, &r);
	printf("%-22s %lu threads, %.1f s: %lu reads (%lu retries), %lu "
	       "writes, shadow %lu, errors %lu\n",
	       label, n, ran, r.reads, r.retries, r.writes, r.shadow,
	       r.errors);
	return (long)r.errors;
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
