/* SPDX-License-Identifier: MIT */
/*
 * Scenario "callbacks": call_rcu end to end.
 *
 * A run: T enqueuing threads (pinned round-robin, registered through
 * thread_init() as liburcu requires) each call call_loop(n): n times,
 * malloc() an object of SK_BENCH_CB_OBJ_SIZE bytes and queue a callback
 * that frees it, as fast as they can.  Once every thread is done, the main
 * thread calls barrier().  The clock runs from the release of the threads
 * to the return of barrier(), so the figure covers the enqueueing, the
 * grace periods, every callback and its free(): ns per callback and
 * millions of callbacks per second.  Side figures of the same runs:
 *  - each thread's own enqueue time per callback (the caller's cost);
 *  - for scalekit, the worker's batches (one grace period each) per run,
 *    from sk_rcu_get_stats().
 * A second family times barrier() alone with nothing queued (p50, p99).
 *
 * Unpinned variant (1 and 2 enqueuing threads): the same runs with the
 * threads placed by the scheduler, as most programs run.  Then the
 * worker free()s on one CPU what an enqueuer malloc()ed on another, and
 * both contend on the allocator; per-CPU callback workers (scalekit-pcpu:
 * sk_rcu_cb_workers_create(0); urcu-memb-pcpu: liburcu's
 * create_all_cpu_call_rcu_data(0), pinned per-CPU call_rcu threads) run
 * each callback on the CPU that queued it.  Their setup and teardown
 * happen outside the clock, around each run.
 *
 * Memory: the notes give getrusage()'s peak RSS, a high-water mark of the
 * process.  A per-run peak is not measured: glibc keeps the freed objects
 * in the top chunk of the enqueuing thread's arena, which malloc_trim()
 * does not return, so later runs reuse the memory of earlier ones and a
 * per-run RSS peak would mostly show the order of the runs.
 *
 * Implementations: scalekit (sk_call_rcu with a function that calls
 * free()), scalekit-free (SK_FREE_RCU) and urcu-memb (urcu_memb_call_rcu
 * onto the default call_rcu thread, urcu_memb_barrier).  All scalekit runs
 * warm up first, so the notes can give getrusage()'s peak RSS after them
 * and before any liburcu callback.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "scalekit/rcu.h"

/* Callbacks queued by each thread in one run. */
#define CB_PER_THREAD 1000000L
#define CB_PER_THREAD_QUICK 100000L

/* barrier() calls per repetition: at least this many, up to 10 run lengths. */
#define BARRIER_MIN_CALLS 10
#define BARRIER_MAX_CALLS (1 << 20)

#define MAX_COUNTS 16

static const char *const cb_impls[] = {
	"scalekit",
	"scalekit-free",
	"urcu-memb",
	NULL,
};
static const char *const sk_impls[] = { "scalekit", "scalekit-free", NULL };
static const char *const barrier_impls[] = { "scalekit", "urcu-memb", NULL };
static const char *const unp_impls[] = {
	"scalekit-pcpu", "scalekit", "urcu-memb", "urcu-memb-pcpu", NULL,
};

/* The unpinned variant runs with at most this many enqueuers. */
#define UNPINNED_MAX_THREADS 2

/* Row headings; the end-to-end one names the callback count. */
static char e2e_title[160];
static const char *const mcbs_title =
	"callbacks / end to end: throughput, millions of callbacks per "
	"second (higher is better)";
static const char *const enq_title =
	"callbacks / enqueue: ns per call_rcu (with its malloc) in each "
	"enqueuing thread, barrier excluded (lower is better)";
static const char *const batch_title =
	"callbacks / batches: scalekit worker batches (grace periods) per "
	"run, from sk_rcu_get_stats()";
static char unp_title[160];
static const char *const unp_mcbs_title =
	"callbacks / end to end, unpinned: throughput, millions of callbacks "
	"per second (higher is better)";
static const char *const barrier_title =
	"callbacks / barrier: latency in us of a barrier with nothing queued "
	"(one caller; lower is better)";

/* ---- one run ---------------------------------------------------------------- */

struct cb_thread {
	struct cb_group *g;
	pthread_t tid;
	uint64_t ns; /* the thread's call_loop(), written before it exits */
} __attribute__((aligned(64)));

struct cb_group {
	const struct sk_bench_rcu_ops *ops;
	long n;
	/* Written by the main thread, read by the enqueuers; own cache line. */
	int go __attribute__((aligned(64)));
	/* Incremented by each enqueuer once it is registered. */
	int ready __attribute__((aligned(64)));
	struct cb_thread *t;
};

/* What one run measured; NAN where nothing was. */
struct cb_result {
	double ns_per_cb, mcbs, enq_ns, batches;
};

static void *enqueuer_main(void *arg)
{
	struct cb_thread *me = arg;
	struct cb_group *g = me->g;
	uint64_t t0;

	if (g->ops->thread_init)
		g->ops->thread_init();
	__atomic_fetch_add(&g->ready, 1, __ATOMIC_RELEASE);
	/* Yield while waiting: with the main thread, T + 1 threads run. */
	while (!__atomic_load_n(&g->go, __ATOMIC_ACQUIRE))
		sched_yield();
	t0 = sk_bench_now_ns();
	g->ops->call_loop(g->n);
	me->ns = sk_bench_now_ns() - t0;
	if (g->ops->thread_exit)
		g->ops->thread_exit();
	return NULL;
}

static double ru_maxrss_mb(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return NAN;
	return (double)ru.ru_maxrss / 1024.0; /* kB on Linux */
}

/* The group of a run: threads enqueuers of n callbacks; NULL: ENOMEM. */
static struct cb_group *group_new(const struct sk_bench_rcu_ops *ops,
				  int threads, long n)
{
	struct cb_group *g = aligned_alloc(64, sizeof(*g));

	if (!g)
		return NULL;
	memset(g, 0, sizeof(*g));
	g->ops = ops;
	g->n = n;
	g->t = aligned_alloc(64, sizeof(*g->t) * (size_t)threads);
	if (!g->t) {
		free(g);
		return NULL;
	}
	memset(g->t, 0, sizeof(*g->t) * (size_t)threads);
	return g;
}

/*
 * Start the enqueuers (pinned round-robin unless unpinned) and wait until
 * each started one is registered: 0, or the pthread_create() error, with
 * *created of them running.
 */
static int start_enqueuers(struct cb_group *g, int threads, int unpinned,
			   int *created)
{
	int i, err = 0;

	*created = 0;
	for (i = 0; i < threads; i++) {
		pthread_attr_t attr;

		g->t[i].g = g;
		pthread_attr_init(&attr);
		if (!unpinned)
			sk_bench_attr_pin_always(&attr, i);
		err = pthread_create(&g->t[i].tid, &attr, enqueuer_main,
				     &g->t[i]);
		pthread_attr_destroy(&attr);
		if (err)
			break;
		(*created)++;
	}
	/* Acquire: pairs with each enqueuer's release of ready. */
	while (__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE) < *created)
		sched_yield();
	return err;
}

/*
 * One run of ops with threads enqueuers of n callbacks each, pinned
 * round-robin or (unpinned) placed by the scheduler.
 */
static int measure(const struct sk_bench_rcu_ops *ops, int threads, long n,
		   int unpinned, struct cb_result *out)
{
	struct cb_group *g = group_new(ops, threads, n);
	struct sk_rcu_stats s0, s1;
	uint64_t t0, t1;
	int i, err, created;
	double enq = 0;

	if (!g)
		return -ENOMEM;
	if (ops->cb_setup)
		ops->cb_setup();
	sk_rcu_get_stats(&s0);
	err = start_enqueuers(g, threads, unpinned, &created);
	t0 = sk_bench_now_ns();
	if (err) {
		/* Let the threads that exist run and finish: no figures. */
		g->n = 0;
	}
	/* Release: the enqueuers' acquire of go sees g->n. */
	__atomic_store_n(&g->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < created; i++) {
		pthread_join(g->t[i].tid, NULL);
		enq += (double)g->t[i].ns;
	}
	ops->barrier();
	t1 = sk_bench_now_ns();
	sk_rcu_get_stats(&s1);
	if (ops->cb_teardown)
		ops->cb_teardown();
	free(g->t);
	free(g);
	if (err)
		return -err;

	out->ns_per_cb = (double)(t1 - t0) / ((double)n * threads);
	out->mcbs = (double)n * threads / ((double)(t1 - t0) / 1e3);
	out->enq_ns = enq / threads / (double)n;
	out->batches = (double)(s1.cb_batches - s0.cb_batches);
	return 0;
}

int sk_bench_cb_measure(const struct sk_bench_rcu_ops *ops, int threads,
			long n, int unpinned, double *ns_per_cb, double *enq_ns)
{
	struct cb_result r;
	int err = measure(ops, threads, n, unpinned, &r);

	if (err)
		return err;
	*ns_per_cb = r.ns_per_cb;
	*enq_ns = r.enq_ns;
	return 0;
}

/* ---- barrier with nothing queued ------------------------------------------------ */

static int measure_barrier(const struct sk_bench_rcu_ops *ops, uint64_t run_ns,
			   uint64_t *lat, double *p50, double *p99,
			   size_t *calls)
{
	ops->barrier(); /* whatever a previous run left */
	*calls = sk_bench_time_calls(ops->barrier, run_ns, BARRIER_MIN_CALLS,
				     BARRIER_MAX_CALLS, lat, p50, p99);
	return 0;
}

static int run_barrier(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res)
{
	struct sk_bench_row *p50, *p99;
	uint64_t *lat;
	double a, b;
	size_t calls;
	int i, rep;

	p50 = sk_bench_row_add(res, "callbacks", "barrier p50", "us",
			       barrier_title, 1, 1, barrier_impls, cfg->reps);
	p99 = sk_bench_row_add(res, "callbacks", "barrier p99", "us",
			       barrier_title, 1, 1, barrier_impls, cfg->reps);
	lat = malloc(sizeof(*lat) * BARRIER_MAX_CALLS);
	if (!lat) {
		fprintf(stderr, "scalekit bench: callbacks: out of memory\n");
		return -1;
	}
	sk_bench_progress("callbacks: barrier with nothing queued: %d runs x "
			  "%d reps, >= %.0f ms and >= %d calls each",
			  p50->nimpl, cfg->reps, cfg->run_ns / 1e6,
			  BARRIER_MIN_CALLS);
	for (i = 0; i < p50->nimpl; i++)
		if (!p50->na[i])
			measure_barrier(p50->impl[i], cfg->warmup_ns, lat, &a,
					&b, &calls);
	for (rep = 0; rep < cfg->reps; rep++) {
		for (i = 0; i < p50->nimpl; i++) {
			int k = (i + rep) % p50->nimpl;

			if (p50->na[k])
				continue;
			measure_barrier(p50->impl[k], cfg->run_ns, lat, &a, &b,
					&calls);
			p50->rep[k][rep] = a;
			p99->rep[k][rep] = b;
			sk_bench_progress("callbacks: rep %d/%d, barrier, "
					  "%-14s p50 %9.2f us  p99 %9.2f us  "
					  "(%zu calls)",
					  rep + 1, cfg->reps,
					  p50->impl[k]->name, a, b, calls);
		}
	}
	free(lat);
	return 0;
}

/* ---- the scenario ------------------------------------------------------------------ */

/* One implementation at one thread count: its rows and column. */
struct cb_job {
	const struct sk_bench_rcu_ops *ops;
	int threads;
	int c;	 /* index of the thread count */
	int col; /* column in the rows of cb_impls (unp_impls) */
	int unpinned;
};

struct cb_rows {
	struct sk_bench_row *e2e[MAX_COUNTS], *mcbs[MAX_COUNTS];
	struct sk_bench_row *enq[MAX_COUNTS];
	struct sk_bench_row *batches[MAX_COUNTS];
	struct sk_bench_row *unp[MAX_COUNTS], *unp_mcbs[MAX_COUNTS];
};

static void store(struct cb_rows *rows, const struct cb_job *jb, int rep,
		  const struct cb_result *r)
{
	int b = sk_bench_row_impl(rows->batches[jb->c], jb->ops->name);

	if (jb->unpinned) {
		rows->unp[jb->c]->rep[jb->col][rep] = r->ns_per_cb;
		rows->unp_mcbs[jb->c]->rep[jb->col][rep] = r->mcbs;
		return;
	}
	rows->e2e[jb->c]->rep[jb->col][rep] = r->ns_per_cb;
	rows->mcbs[jb->c]->rep[jb->col][rep] = r->mcbs;
	rows->enq[jb->c]->rep[jb->col][rep] = r->enq_ns;
	if (b >= 0)
		rows->batches[jb->c]->rep[b][rep] = r->batches;
}

static void note_stats(struct sk_bench_results *res, const char *when)
{
	struct sk_rcu_stats st;

	sk_rcu_get_stats(&st);
	sk_bench_note_add(res,
			  "callbacks: %s: getrusage ru_maxrss %.0f MB; "
			  "sk_rcu_get_stats cb_batches %lu, cb_peak_backlog "
			  "%lu, cb_queued %lu, cb_invoked %lu",
			  when, ru_maxrss_mb(), st.cb_batches,
			  st.cb_peak_backlog, st.cb_queued, st.cb_invoked);
}

/*
 * The unpinned variant: rows for 1 and 2 enqueuers (of counts[]) and a
 * job per implementation and count, appended to jobs[*njobs].
 */
static void add_unpinned(const struct sk_bench_config *cfg,
			 struct sk_bench_results *res, const int *counts,
			 int ncounts, struct cb_rows *rows,
			 struct cb_job *jobs, int *njobs)
{
	int c, i;

	snprintf(unp_title, sizeof(unp_title),
		 "callbacks / end to end, unpinned: ns per callback, "
		 "threads placed by the scheduler (lower is better)");
	for (c = 0; c < ncounts && counts[c] <= UNPINNED_MAX_THREADS; c++)
		rows->unp[c] = sk_bench_row_add(res, "callbacks",
						"end to end unpinned", "ns/cb",
						unp_title, counts[c], 1,
						unp_impls, cfg->reps);
	for (c = 0; c < ncounts && counts[c] <= UNPINNED_MAX_THREADS; c++)
		rows->unp_mcbs[c] = sk_bench_row_add(
			res, "callbacks", "end to end unpinned", "Mcb/s",
			unp_mcbs_title, counts[c], 0, unp_impls, cfg->reps);
	for (i = 0; rows->unp[0] && i < rows->unp[0]->nimpl; i++)
		for (c = 0; c < ncounts && rows->unp[c]; c++)
			if (!rows->unp[c]->na[i])
				jobs[(*njobs)++] = (struct cb_job){
					rows->unp[c]->impl[i], counts[c], c,
					i, 1
				};
}

/*
 * The targets: pinned (scalekit) and unpinned runs, the default
 * (scalekit: no set-up call, automatic per-CPU workers) and the opt-in
 * per-CPU workers (scalekit-pcpu).
 */
static void add_targets(struct sk_bench_results *res,
			const struct cb_rows *rows, const int *counts,
			int ncounts)
{
	char what[112];
	int c;

	for (c = 0; c < ncounts; c++) {
		snprintf(what, sizeof(what),
			 "callbacks, %d thread%s: ns/cb end to end scalekit / "
			 "urcu-memb",
			 counts[c], counts[c] == 1 ? "" : "s");
		sk_bench_ratio_target(res, rows->e2e[c], "scalekit",
				      "urcu-memb", 1 / 1.5, 1, what,
				      "callbacks-e2e");
	}
	for (c = 0; c < ncounts && rows->unp[c]; c++) {
		static const char *const sk_unp[] = { "scalekit",
						      "scalekit-pcpu" };
		int k;

		/* The default (no set-up call) first: issue 28's target. */
		for (k = 0; k < 2; k++) {
			snprintf(what, sizeof(what),
				 "callbacks unpinned, %d thread%s: Mcb/s "
				 "%s / urcu-memb",
				 counts[c], counts[c] == 1 ? "" : "s",
				 sk_unp[k]);
			sk_bench_ratio_target(res, rows->unp_mcbs[c],
					      sk_unp[k], "urcu-memb", 1.5, 0,
					      what, "callbacks-unpinned");
		}
	}
}

/*
 * The pinned rows (end to end, throughput, enqueue, batches) for counts[]
 * and a job per implementation and count, appended to jobs[*njobs]:
 * implementations outermost, scalekit first (see the notes).
 */
static void add_pinned(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res, const int *counts,
		       int ncounts, struct cb_rows *rows, struct cb_job *jobs,
		       int *njobs)
{
	const struct {
		struct sk_bench_row **rows;
		const char *variant, *unit, *title;
		int ratios;
		const char *const *impls;
	} kinds[] = {
		{ rows->e2e, "end to end", "ns/cb", e2e_title, 1, cb_impls },
		{ rows->mcbs, "end to end", "Mcb/s", mcbs_title, 0, cb_impls },
		{ rows->enq, "enqueue", "ns/cb", enq_title, 1, cb_impls },
		{ rows->batches, "batches", "per run", batch_title, 0,
		  sk_impls },
	};
	int c, i, k;

	for (k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++)
		for (c = 0; c < ncounts; c++)
			kinds[k].rows[c] = sk_bench_row_add(
				res, "callbacks", kinds[k].variant,
				kinds[k].unit, kinds[k].title, counts[c],
				kinds[k].ratios, kinds[k].impls, cfg->reps);
	for (i = 0; i < rows->e2e[0]->nimpl; i++)
		for (c = 0; c < ncounts; c++)
			if (!rows->e2e[c]->na[i])
				jobs[(*njobs)++] = (struct cb_job){
					rows->e2e[c]->impl[i], counts[c], c,
					i, 0
				};
}

static void progress_run(const struct sk_bench_config *cfg,
			 const struct cb_rows *rows, const struct cb_job *jb,
			 int rep, const struct cb_result *r)
{
	char batches[32] = "";

	if (sk_bench_row_impl(rows->batches[0], jb->ops->name) >= 0)
		snprintf(batches, sizeof(batches), ", %.0f batches",
			 r->batches);
	sk_bench_progress("callbacks: rep %d/%d, %d thread%s%s, %-14s %7.2f "
			  "ns/cb %7.2f Mcb/s, enqueue %6.2f ns/cb%s",
			  rep + 1, cfg->reps, jb->threads,
			  jb->threads == 1 ? " " : "s",
			  jb->unpinned ? " unpinned" : "", jb->ops->name,
			  r->ns_per_cb, r->mcbs, r->enq_ns, batches);
}

/*
 * One warm-up run of every job (the library's counters noted after the
 * scalekit ones), then cfg->reps timed rounds.  0, or -1 after a message.
 */
static int run_jobs(const struct sk_bench_config *cfg,
		    struct sk_bench_results *res, struct cb_rows *rows,
		    const struct cb_job *jobs, int njobs, long n)
{
	const struct cb_job *jb = NULL;
	int j, rep, err = 0, warm_sk_done = 0;
	struct cb_result r;

	for (j = 0; j < njobs && !err; j++) {
		jb = &jobs[j];
		if (!warm_sk_done &&
		    sk_bench_row_impl(rows->batches[0], jb->ops->name) < 0) {
			note_stats(res, "after the scalekit warm-up runs, "
					"before any other");
			warm_sk_done = 1;
		}
		err = measure(jb->ops, jb->threads, n, jb->unpinned, &r);
	}
	for (rep = 0; rep < cfg->reps && !err; rep++) {
		for (j = 0; j < njobs && !err; j++) {
			/* Rotate the start so no job always runs first. */
			jb = &jobs[(j + rep) % njobs];
			err = measure(jb->ops, jb->threads, n, jb->unpinned,
				      &r);
			if (err)
				break;
			store(rows, jb, rep, &r);
			progress_run(cfg, rows, jb, rep, &r);
		}
	}
	if (!err)
		return 0;
	fprintf(stderr,
		"scalekit bench: callbacks: cannot run %s on %d threads: %s\n",
		jb->ops->name, jb->threads, strerror(-err));
	return -1;
}

int sk_bench_callbacks_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	long n = cfg->quick ? CB_PER_THREAD_QUICK : CB_PER_THREAD;
	int counts[MAX_COUNTS], ncounts, njobs = 0;
	struct cb_job jobs[2 * MAX_COUNTS * SK_BENCH_MAX_IMPL];
	struct cb_rows rows = { 0 };
	double rss_before = ru_maxrss_mb();

	snprintf(e2e_title, sizeof(e2e_title),
		 "callbacks / end to end: ns per callback, %ld callbacks per "
		 "thread then one barrier (lower is better)",
		 n);
	ncounts =
		sk_bench_thread_counts(cfg->max_threads, 0, counts, MAX_COUNTS);
	add_pinned(cfg, res, counts, ncounts, &rows, jobs, &njobs);
	add_unpinned(cfg, res, counts, ncounts, &rows, jobs, &njobs);
	sk_bench_progress("callbacks: %d runs x %d reps, %ld callbacks per "
			  "thread (warm-up: one run each)",
			  njobs, cfg->reps, n);
	if (run_jobs(cfg, res, &rows, jobs, njobs, n))
		return -1;
	if (run_barrier(cfg, res))
		return -1;
	note_stats(res, "at the end (every run)");
	sk_bench_note_add(res,
			  "callbacks: getrusage ru_maxrss before the scenario: "
			  "%.0f MB; objects of %d bytes from malloc(), %ld per "
			  "thread per run",
			  rss_before, SK_BENCH_CB_OBJ_SIZE, n);
	sk_bench_note_add(
		res, "callbacks: cb_* counters are totals since the "
		     "process started (cb_batches also counts the worker's "
		     "grace periods for sk_start_poll_synchronize_rcu(), "
		     "e.g. of the poll scenario); the batches rows are "
		     "per run");

	add_targets(res, &rows, counts, ncounts);
	return 0;
}
