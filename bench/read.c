/* SPDX-License-Identifier: MIT */
/*
 * Scenarios "read" and "srcu-read": the cost of a read-side critical
 * section.
 *
 * For each thread count, every thread runs read_section() in a loop for a
 * fixed time; the figures are the mean over threads of ns per
 * lock+dereference+unlock, and the total throughput in Mops/s.  Within one
 * repetition every implementation and thread count runs once, back to
 * back (starting from a different one each time), so a noisy neighbour
 * slows all of them alike and the per-repetition ratios stay meaningful.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Rows compare the first implementation (scalekit) with the others. */
static const char *const general_impls[] = {
	"scalekit",	  "urcu-memb",	   "urcu-bp", "ck-epoch",
	"pthread-rwlock", "pthread-mutex", NULL,
};
static const char *const qsbr_impls[] = { "scalekit-qsbr", "urcu-qsbr", NULL };
static const char *const bare_impls[] = {
	"scalekit-qsbr-bare",
	"urcu-qsbr-bare",
	NULL,
};

struct read_variant {
	const char *name;
	const char *const *impls;
	const char *title_ns;
	const char *title_mops;
	const char *ratio_prefix; /* NULL: "sk" */
	/*
	 * In interleaved windows: the column the others are paired with.
	 * read and srcu-read run one window per job and repetition (their
	 * 2-thread / 1-thread row divides throughputs over wall time, which
	 * shorter windows lower: 1.81 to 1.86 with 4 windows of 50 or
	 * 100 ms against 1.94 to 1.98 with one of 200 ms, same VM, same
	 * hour), so NULL there.
	 */
	const char *pair_ref;
};

static const struct read_variant variants[] = {
	{ "general", general_impls,
	  "read / general: ns per read_lock+dereference+read_unlock, per "
	  "thread (lower is better)",
	  "read / general: total throughput, Mops/s (higher is better)", NULL,
	  NULL },
	{ "qsbr", qsbr_impls,
	  "read / qsbr: online QSBR threads, ns per read_lock+dereference+"
	  "read_unlock, quiescent state every 1024 (lower is better)",
	  "read / qsbr: total throughput, Mops/s (higher is better)", NULL,
	  NULL },
	{ "qsbr-bare", bare_impls,
	  "read / qsbr-bare: online QSBR threads, ns per dereference, "
	  "quiescent state every 1024, no read_lock/unlock (lower is better)",
	  "read / qsbr-bare: total throughput, Mops/s (higher is better)",
	  NULL, NULL },
};

/*
 * srcu-read: SRCU read sections on one domain, against the general
 * readers of liburcu memb and of scalekit's RCU (same loop shape).
 */
static const char *const srcu_impls[] = {
	"scalekit-srcu",
	"urcu-memb",
	"scalekit",
	NULL,
};

static const struct read_variant srcu_variant = {
	"srcu", srcu_impls,
	"srcu-read: ns per sk_srcu_read_lock+sk_srcu_dereference+"
	"sk_srcu_read_unlock on one domain, per thread, vs general RCU "
	"readers (lower is better)",
	"srcu-read: total throughput, Mops/s (higher is better)", "srcu",
	NULL /* one run per job and repetition: nothing to pair */
};

/*
 * c++ (the read half of the "c++" scenario, bench/cpp.c): the C++ layer's
 * read sections against the C pair they wrap, same loop shape.
 */
static const char *const cxx_impls[] = {
	"scalekit-c++",
	"scalekit-std",
	"scalekit",
	NULL,
};

static const struct read_variant cxx_variant = {
	"read", cxx_impls,
	"c++ / read: ns per read section + dereference, per thread: "
	"sk::rcu_read_guard, std::scoped_lock on sk::rcu_default_domain(), "
	"the C pair (lower is better)",
	"c++ / read: total throughput, Mops/s (higher is better)", "c++",
	"scalekit"
};

/*
 * The c++ rows compare loops that compile to the same instructions
 * (docs/benchmarks.md, "The c++ rows"): their ratio is 1 plus whatever
 * the machine did between two runs.  Interleaved windows of a quarter of
 * a run put the two loops side by side in time, and each wrapper's
 * figure is paired with the C pair's window by window (jobs_run(),
 * paired_figures()).
 */
#define CXX_READ_WINDOWS 9

#define NVARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))
#define MAX_COUNTS 16

/* The rows of one run of read variants, by variant and thread count. */
struct read_rows {
	int ncounts;
	int counts[MAX_COUNTS];
	struct sk_bench_row *ns[NVARIANTS][MAX_COUNTS];
	struct sk_bench_row *mops[NVARIANTS][MAX_COUNTS];
};

/*
 * One run of ops on n threads for run_ns: *ns_per_op and *mops as
 * sk_bench_read_measure() gives them; *occ the occupancy (bench.h): the
 * least CPU time a thread got over the run's wall time.
 */
static int read_measure(const struct sk_bench_rcu_ops *ops, int n,
			uint64_t run_ns, double *ns_per_op, double *mops,
			double *occ)
{
	struct sk_bench_reader_stat *st = calloc((size_t)n, sizeof(*st));
	struct sk_bench_readers *g;
	uint64_t t0, t1, sections = 0;
	double sum = 0, o = 1.0;
	int i, err;

	if (!st)
		return -ENOMEM;
	err = sk_bench_readers_start(&g, ops, n);
	if (err) {
		free(st);
		return err;
	}
	t0 = sk_bench_now_ns();
	sk_bench_sleep_ns(run_ns);
	sk_bench_readers_stop(g, st);
	t1 = sk_bench_now_ns();
	for (i = 0; i < n; i++) {
		sections += st[i].sections;
		sum += (double)st[i].ns / (double)st[i].sections;
		if ((double)st[i].cpu_ns / (double)(t1 - t0) < o)
			o = (double)st[i].cpu_ns / (double)(t1 - t0);
	}
	free(st);
	*ns_per_op = sum / n;
	/* Threads stop within one chunk of each other; the wall time is fair. */
	*mops = (double)sections / ((double)(t1 - t0) / 1e3);
	*occ = o;
	return 0;
}

int sk_bench_read_measure(const struct sk_bench_rcu_ops *ops, int n,
			  uint64_t run_ns, double *ns_per_op, double *mops)
{
	double occ;

	return read_measure(ops, n, run_ns, ns_per_op, mops, &occ);
}

int sk_bench_read_measure_gated(const struct sk_bench_rcu_ops *ops, int n,
				uint64_t run_ns, double *ns_per_op,
				double *mops)
{
	int gated = sk_bench_occ_gated(n), try = 0, err;
	double occ;

	do {
		err = read_measure(ops, n, run_ns, ns_per_op, mops, &occ);
	} while (!err && gated && sk_bench_occ_retry(++try, occ));
	return err;
}

/* Target: ns/op of the row's first implementation / peer <= limit. */
static void add_ratio_target(struct sk_bench_results *res,
			     const struct sk_bench_row *row, const char *id,
			     const char *peer, double limit)
{
	char what[96];

	snprintf(what, sizeof(what), "%s %s, %d thread%s: ns/op %s / %s",
		 row->scenario, row->variant, row->threads,
		 row->threads == 1 ? "" : "s", row->impl[0]->name, peer);
	sk_bench_ratio_target(res, row, row->impl[0]->name, peer, limit, 1,
			      what, id);
}

/*
 * The rows of the nv variants vs[] under scenario's name for
 * 1..max_threads threads, into res; rr receives them.
 */
static void add_rows(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res, const char *scenario,
		     const struct read_variant *vs, int nv,
		     struct read_rows *rr)
{
	int c, v;

	rr->ncounts = sk_bench_thread_counts(cfg->max_threads, 0, rr->counts,
					     MAX_COUNTS);
	/* Rows in display order: per variant ns/op, then per variant Mops/s. */
	for (v = 0; v < nv; v++)
		for (c = 0; c < rr->ncounts; c++) {
			rr->ns[v][c] = sk_bench_row_add(res, scenario,
							vs[v].name, "ns/op",
							vs[v].title_ns,
							rr->counts[c], 1,
							vs[v].impls, cfg->reps);
			rr->ns[v][c]->ratio_prefix = vs[v].ratio_prefix;
		}
	for (v = 0; v < nv; v++)
		for (c = 0; c < rr->ncounts; c++)
			rr->mops[v][c] = sk_bench_row_add(
				res, scenario, vs[v].name, "Mops/s",
				vs[v].title_mops, rr->counts[c], 0, vs[v].impls,
				cfg->reps);
}

/*
 * The runs of every row of rr into jobs (room for nv * ncounts *
 * SK_BENCH_MAX_IMPL); returns how many.  Job order: an implementation's
 * thread counts back to back (the scaling ratio pairs them), then the
 * next implementation of the variant (the scalekit/peer ratios pair those).
 */
static int make_jobs(const struct read_rows *rr, const struct read_variant *vs,
		     int nv, struct sk_bench_read_job *jobs)
{
	int c, v, i, njobs = 0;

	for (v = 0; v < nv; v++)
		for (i = 0; i < rr->ns[v][0]->nimpl; i++)
			for (c = 0; c < rr->ncounts; c++) {
				if (rr->ns[v][c]->na[i])
					continue;
				jobs[njobs++] = (struct sk_bench_read_job){
					rr->ns[v][c]->impl[i], rr->counts[c],
					rr->ns[v][c], rr->mops[v][c], i,
					vs[v].pair_ref
				};
			}
	return njobs;
}

/*
 * One timed run of jb for run_ns (behind the occupancy gate unless
 * cfg->no_occ_gate): 0 or -errno.
 */
static int job_measure(const struct sk_bench_config *cfg,
		       const struct sk_bench_read_job *jb, uint64_t run_ns,
		       double *ns, double *mops)
{
	return cfg->no_occ_gate ? sk_bench_read_measure(jb->ops, jb->threads,
							run_ns, ns, mops)
				: sk_bench_read_measure_gated(
					  jb->ops, jb->threads, run_ns, ns,
					  mops);
}

/* Is jb's figure paired with another job's (paired_figures())? */
static int paired(const struct sk_bench_read_job *jb)
{
	return jb->pair_ref && strcmp(jb->ops->name, jb->pair_ref);
}

/*
 * Paired windows (jobs_run()): job j's figure of a repetition becomes its
 * reference job's median times the median over the windows of j's
 * figure over the reference's in the same window
 * (sk_bench_paired_median()).  Two runs of one window are at most one
 * window of every job apart, so a machine that slows down or speeds up
 * between windows changes both alike, which the median of each job's own
 * windows does not undo (its windows and the reference's fall at
 * different moments).  The reference of j is the job of the same row
 * whose implementation is named j's pair_ref; the reference itself, and
 * jobs without one, keep their own median.  v[j * windows + w] are the
 * window figures, out[j] receives the figures.  Returns 0 or -ENOMEM.
 */
static int paired_figures(const struct sk_bench_read_job *jobs, int njobs,
			  int windows, const double *v, double *out)
{
	double *tmp = calloc((size_t)windows, sizeof(*tmp));
	int j, r;

	if (!tmp)
		return -ENOMEM;
	for (j = 0; j < njobs; j++) {
		/* sk_bench_median() sorts: v stays in window order. */
		memcpy(tmp, &v[j * windows], (size_t)windows * sizeof(*tmp));
		out[j] = sk_bench_median(tmp, windows);
	}
	free(tmp);
	for (j = 0; j < njobs; j++) {
		if (!paired(&jobs[j]))
			continue;
		for (r = 0; r < njobs; r++)
			if (jobs[r].ns_row == jobs[j].ns_row &&
			    !strcmp(jobs[r].ops->name, jobs[j].pair_ref))
				break;
		if (r < njobs)
			out[j] = sk_bench_paired_median(&v[j * windows],
							&v[r * windows],
							windows);
	}
	return 0;
}

/*
 * The jobs' repetitions.  windows == 1: every job runs once per
 * repetition for cfg->run_ns, every round starting at the next job.
 * windows > 1: every job runs `windows` times per repetition for
 * window_ns, interleaved (window w runs every job once, starting at
 * the next job each window), and the repetition's figure is the median
 * of a job's windows: a disturbance of a few hundred milliseconds then
 * falls on every job alike instead of on the one job that ran then.
 * Jobs with a pair_ref are paired (paired_figures()).
 */
static int jobs_run(const struct sk_bench_config *cfg, const char *scenario,
		    struct sk_bench_read_job *jobs, int njobs, int windows,
		    uint64_t window_ns)
{
	struct sk_bench_read_job *jb = NULL;
	uint64_t run_ns = windows > 1 ? window_ns : cfg->run_ns;
	double *fns = NULL, *fmops = NULL;
	double ns, mops, *wns = NULL, *wmops = NULL;
	int i, w, rep, err = 0;

	if (windows > 1) {
		wns = calloc((size_t)(njobs * windows), sizeof(*wns));
		wmops = calloc((size_t)(njobs * windows), sizeof(*wmops));
		fns = calloc((size_t)njobs, sizeof(*fns));
		fmops = calloc((size_t)njobs, sizeof(*fmops));
		if (!wns || !wmops || !fns || !fmops) {
			free(wns);
			free(wmops);
			free(fns);
			free(fmops);
			fprintf(stderr, "scalekit bench: %s: out of memory\n",
				scenario);
			return -1;
		}
		sk_bench_progress("%s: %d runs x %d reps x %d interleaved "
				  "windows, %.0f ms each (warm-up %.0f ms)",
				  scenario, njobs, cfg->reps, windows,
				  run_ns / 1e6, cfg->warmup_ns / 1e6);
	} else {
		sk_bench_progress("%s: %d runs x %d reps, %.0f ms each (warm-up "
				  "%.0f ms)",
				  scenario, njobs, cfg->reps, run_ns / 1e6,
				  cfg->warmup_ns / 1e6);
	}
	/* Warm-up: caches, branch predictors, CPU frequency, registration. */
	for (i = 0; i < njobs && !err; i++) {
		jb = &jobs[i];
		err = sk_bench_read_measure(jb->ops, jb->threads, cfg->warmup_ns,
					    &ns, &mops);
	}
	for (rep = 0; rep < cfg->reps && !err && windows == 1; rep++) {
		for (i = 0; i < njobs && !err; i++) {
			/* Rotate the start so no job always runs first. */
			jb = &jobs[(i + rep) % njobs];
			err = job_measure(cfg, jb, run_ns, &ns, &mops);
			if (err)
				break;
			jb->ns_row->rep[jb->col][rep] = ns;
			jb->mops_row->rep[jb->col][rep] = mops;
			sk_bench_progress("%s: rep %d/%d, %d thread%s, %-18s "
					  "%8.2f ns/op %9.1f Mops/s",
					  scenario, rep + 1, cfg->reps,
					  jb->threads,
					  jb->threads == 1 ? " " : "s",
					  jb->ops->name, ns, mops);
		}
	}
	for (rep = 0; rep < cfg->reps && !err && windows > 1; rep++) {
		for (w = 0; w < windows && !err; w++) {
			for (i = 0; i < njobs && !err; i++) {
				/* Rotate the start so no job always runs first. */
				int j = (i + rep + w) % njobs;

				jb = &jobs[j];
				err = job_measure(cfg, jb, run_ns,
						  &wns[j * windows + w],
						  &wmops[j * windows + w]);
			}
		}
		if (!err)
			err = paired_figures(jobs, njobs, windows, wns, fns);
		if (!err)
			err = paired_figures(jobs, njobs, windows, wmops,
					     fmops);
		for (i = 0; i < njobs && !err; i++) {
			jb = &jobs[i];
			ns = fns[i];
			mops = fmops[i];
			jb->ns_row->rep[jb->col][rep] = ns;
			jb->mops_row->rep[jb->col][rep] = mops;
			sk_bench_progress("%s: rep %d/%d, %d thread%s, %-18s "
					  "%8.2f ns/op %9.1f Mops/s (%s%s, "
					  "%d windows)",
					  scenario, rep + 1, cfg->reps,
					  jb->threads,
					  jb->threads == 1 ? " " : "s",
					  jb->ops->name, ns, mops,
					  paired(jb) ? "paired with " : "median",
					  paired(jb) ? jb->pair_ref : "",
					  windows);
		}
	}
	free(wns);
	free(wmops);
	free(fns);
	free(fmops);
	if (!err)
		return 0;
	fprintf(stderr,
		"scalekit bench: %s: cannot run %s on %d threads: "
		"%s\n",
		scenario, jb->ops->name, jb->threads, strerror(-err));
	return -1;
}

int sk_bench_read_jobs_run(const struct sk_bench_config *cfg, const char *scenario,
		    struct sk_bench_read_job *jobs, int njobs)
{
	return jobs_run(cfg, scenario, jobs, njobs, 1, 0);
}

/*
 * Add the rows of variants vs (ns/op and Mops/s) and measure them on
 * 1..max threads, in `windows` interleaved windows of window_ns per
 * repetition, each variant's columns paired with its pair_ref (see
 * jobs_run()); rr receives the rows.  Returns 0, or -1 after a message.
 */
static int run_variants(const struct sk_bench_config *cfg,
			struct sk_bench_results *res, const char *scenario,
			const struct read_variant *vs, int nv, int windows,
			uint64_t window_ns, struct read_rows *rr)
{
	struct sk_bench_read_job *jobs;
	int err;

	add_rows(cfg, res, scenario, vs, nv, rr);
	jobs = calloc((size_t)(nv * rr->ncounts * SK_BENCH_MAX_IMPL),
		      sizeof(*jobs));
	if (!jobs)
		return -1;
	err = jobs_run(cfg, scenario, jobs, make_jobs(rr, vs, nv, jobs),
		       windows, window_ns);
	free(jobs);
	sk_bench_occ_note(res, scenario);
	return err;
}

int sk_bench_read_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res)
{
	struct read_rows rr;
	int c;

	if (run_variants(cfg, res, "read", variants, NVARIANTS, 1, 0, &rr))
		return -1;
	for (c = 0; c < rr.ncounts; c++) {
		add_ratio_target(res, rr.ns[0][c], "read-general", "urcu-memb",
				 1.0);
		/*
		 * 1.05, not 1.00: both QSBR loops are the same four
		 * instructions per section (callgrind: 4.01 and 4.02), so the
		 * ratio is 1 plus noise; docs/benchmarks.md, "The QSBR
		 * read row".
		 */
		add_ratio_target(res, rr.ns[1][c], "read-qsbr", "urcu-qsbr",
				 1.05);
	}
	/* Scaling: total throughput on 2 threads over 1 thread. */
	{
		struct sk_bench_target t = { .threads = 2, .limit = 1.9 };
		int c1 = -1, c2 = -1;

		for (c = 0; c < rr.ncounts; c++) {
			if (rr.counts[c] == 1)
				c1 = c;
			if (rr.counts[c] == 2)
				c2 = c;
		}
		snprintf(t.what, sizeof(t.what),
			 "read general: scalekit Mops/s 2 threads / 1 thread");
		snprintf(t.id, sizeof(t.id), "read-scaling");
		snprintf(t.ratio_name, sizeof(t.ratio_name), "scalekit 2T/1T");
		if (c1 < 0 || c2 < 0)
			t.na = "needs --threads 2 or more";
		else
			t.ratio = sk_bench_ratio_stat(rr.mops[0][c2], 0,
						      rr.mops[0][c1], 0);
		sk_bench_target_add(res, &t);
	}
	return 0;
}

int sk_bench_srcu_read_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	struct read_rows rr;
	int c;

	if (run_variants(cfg, res, "srcu-read", &srcu_variant, 1, 1, 0, &rr))
		return -1;
	for (c = 0; c < rr.ncounts; c++)
		add_ratio_target(res, rr.ns[0][c], "srcu-read", "urcu-memb",
				 1.25);
	return 0;
}

int sk_bench_cpp_read_run(const struct sk_bench_config *cfg,
			  struct sk_bench_results *res)
{
	struct read_rows rr;
	char what[96];
	int c;

	if (run_variants(cfg, res, "c++", &cxx_variant, 1, CXX_READ_WINDOWS,
			 cfg->run_ns / 4, &rr))
		return -1;
	for (c = 0; c < rr.ncounts; c++) {
		add_ratio_target(res, rr.ns[0][c], "cpp-guard", "scalekit",
				 1.02);
		snprintf(what, sizeof(what),
			 "c++ read, %d thread%s: ns/op scalekit-std / scalekit",
			 rr.counts[c], rr.counts[c] == 1 ? "" : "s");
		sk_bench_ratio_target(res, rr.ns[0][c], "scalekit-std",
				      "scalekit", 1.02, 1, what, "cpp-std");
	}
	return 0;
}
