/* SPDX-License-Identifier: MIT */
/*
 * Scenario "sweep" (`scalekit bench --sweep`): every read-side primitive
 * at 1, 2, 4 and 8 threads, over four read/update mixes (100%, 99%, 90%
 * and 50% reads), and the chooser: for each mix and thread count, which
 * primitive wins and by how much.
 *
 * An operation is the same for every primitive (bench/sweep.h): a read
 * checks a three-word value through the primitive's read side, an update
 * replaces it the primitive's way.  The runs are the read scenario's
 * (sk_bench_read_jobs_run()): per mix, a warm-up run of every primitive
 * and thread count, then the repetitions, each a round of all of them
 * back to back, so that the chooser's ratios are paired per repetition.
 */
#include "sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sk_bench_sweep_period;

void sk_bench_sweep_torn(const char *who, const struct sk_bench_sweep_val *s)
{
	fprintf(stderr,
		"scalekit bench: sweep: %s read a torn or freed value "
		"(a=%ld b=%ld c=%ld)\n",
		who, s->a, s->b, s->c);
	/* Now, whatever the other threads do: the figures are worthless. */
	_exit(3);
}

void *sk_bench_sweep_alloc(size_t size, long a)
{
	struct sk_bench_sweep_val *v = malloc(size);

	if (!v) {
		fprintf(stderr, "scalekit bench: out of memory\n");
		abort();
	}
	sk_bench_sweep_set(v, a);
	return v;
}

void sk_bench_sweep_free(void *obj)
{
	struct sk_bench_sweep_val *v = obj;

	/* b == a breaks the invariant: a late reader aborts. */
	__atomic_store_n(&v->b, __atomic_load_n(&v->a, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	free(obj);
}

/* The primitives, in table order: RCU family, locks, peers. */
static const struct sk_bench_rcu_ops *prims[] = {
	&sk_bench_sweep_scalekit_ops,	    &sk_bench_sweep_scalekit_qsbr_ops,
	&sk_bench_sweep_scalekit_srcu_ops,  &sk_bench_sweep_rwlock_rb_ops,
	&sk_bench_sweep_seqlock_ops,	    &sk_bench_sweep_elided_mutex_ops,
	&sk_bench_sweep_elided_rwlock_ops,  &sk_bench_sweep_pthread_rwlock_ops,
	&sk_bench_sweep_pthread_mutex_ops,  &sk_bench_sweep_refcount_ops,
	&sk_bench_sweep_urcu_memb_ops,	    &sk_bench_sweep_urcu_qsbr_ops,
	&sk_bench_sweep_urcu_bp_ops,	    &sk_bench_sweep_ck_epoch_ops,
};

#define NPRIMS ((int)(sizeof(prims) / sizeof(prims[0])))

/* Percent reads of each mix, and the baseline of the chooser. */
static const int mixes[] = { 100, 99, 90, 50 };
/* The rows' variant: the mix in words (the mix column has the number). */
static const char *const mix_names[] = { "100% reads", "99% reads",
					 "90% reads", "50% reads" };
static const int counts[] = { 1, 2, 4, 8 };
#define NMIXES ((int)(sizeof(mixes) / sizeof(mixes[0])))
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))
#define BASELINE "pthread-rwlock"

/*
 * A run of the sweep is shorter than the others' (it has 224 of them per
 * repetition): 3/10 of the default run (60 ms), 1/5 of --quick's (10 ms),
 * and at most SWEEP_MAX_REPS repetitions whatever --reps says: that keeps
 * `make bench`'s sweep near a minute on an idle 2-CPU machine (two on a
 * loaded one) and --quick's near three seconds (idle).
 */
#define SWEEP_MAX_REPS 3
#define SWEEP_RUN_NUM 3
#define SWEEP_RUN_DEN 10
#define SWEEP_QUICK_RUN_NUM 1
#define SWEEP_QUICK_RUN_DEN 5

static int is_sweep_row(const struct sk_bench_row *row, const char *unit)
{
	return row->mix && strcmp(row->unit, unit) == 0;
}

/* Add one mix's rows (ns/op and Mops/s per primitive and count); jobs. */
static int add_mix(const struct sk_bench_config *cfg,
		   struct sk_bench_results *res, int m,
		   struct sk_bench_read_job *jobs)
{
	int p, c, n = 0;

	for (p = 0; p < NPRIMS; p++)
		for (c = 0; c < NCOUNTS; c++) {
			struct sk_bench_row *ns, *mops;

			ns = sk_bench_row_add_ops(res, "sweep", mix_names[m],
						  "ns/op", "sweep", counts[c],
						  0, &prims[p], 1, cfg->reps);
			mops = sk_bench_row_add_ops(res, "sweep", mix_names[m],
						    "Mops/s", "sweep",
						    counts[c], 0, &prims[p], 1,
						    cfg->reps);
			ns->mix = mops->mix = mixes[m];
			if (!prims[p]->unavailable)
				jobs[n++] = (struct sk_bench_read_job){
					prims[p], counts[c], ns, mops, 0, NULL
				};
		}
	return n;
}

/*
 * SCALEKIT_BENCH_SWEEP_BUSTED=seqlock: the seqlock's column runs its
 * broken twin (bench/sweep_ops.c), which the sweep's check must catch by
 * ending the run (the bench_sweep_busted test); any other value is an error.
 */
static int sweep_busted(void)
{
	const char *v = getenv("SCALEKIT_BENCH_SWEEP_BUSTED");
	int p;

	if (!v || !*v)
		return 0;
	if (strcmp(v, "seqlock")) {
		fprintf(stderr, "scalekit bench: SCALEKIT_BENCH_SWEEP_BUSTED="
				"%s: the only broken twin is 'seqlock'\n", v);
		return -1;
	}
	for (p = 0; p < NPRIMS; p++)
		if (prims[p] == &sk_bench_sweep_seqlock_ops)
			prims[p] = &sk_bench_sweep_seqlock_busted_ops;
	return 0;
}

/* Wait for every deferred free the primitives queued (main thread). */
static void drain(void)
{
	int p;

	for (p = 0; p < NPRIMS; p++)
		if (!prims[p]->unavailable && prims[p]->barrier)
			prims[p]->barrier();
}

int sk_bench_sweep_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res)
{
	static struct sk_bench_read_job jobs[NPRIMS * NCOUNTS];
	static int initialized;
	struct sk_bench_config sc = *cfg;
	char name[32];
	int m, p, n, err = 0;

	if (cfg->quick)
		sc.run_ns = cfg->run_ns * SWEEP_QUICK_RUN_NUM /
			    SWEEP_QUICK_RUN_DEN;
	else
		sc.run_ns = cfg->run_ns * SWEEP_RUN_NUM / SWEEP_RUN_DEN;
	sc.warmup_ns = sc.run_ns / 4;
	/*
	 * Not gated: the updates' callback workers are threads of the
	 * primitives that share the CPUs on purpose, and the sweep keeps
	 * its minute.
	 */
	sc.no_occ_gate = 1;
	if (sc.reps > SWEEP_MAX_REPS)
		sc.reps = SWEEP_MAX_REPS;
	if (!initialized) {
		if (sweep_busted())
			return -1;
		/* Before any thread of the sweep exists. */
		for (p = 0; p < NPRIMS; p++)
			if (!prims[p]->unavailable)
				prims[p]->init();
		initialized = 1;
	}
	for (m = 0; m < NMIXES && !err; m++) {
		n = add_mix(&sc, res, m, jobs);
		/* Read by the threads that the runs create after it. */
		sk_bench_sweep_period =
			mixes[m] == 100 ? 0 : 100 / (100 - mixes[m]);
		snprintf(name, sizeof(name), "sweep %d%% reads", mixes[m]);
		err = sk_bench_read_jobs_run(&sc, name, jobs, n);
		drain();
	}
	sk_bench_sweep_period = 0;
	return err;
}

/* ---- the tables and the chooser ------------------------------------------ */

/* The Mops/s row of (mix, primitive, count), or NULL. */
static const struct sk_bench_row *find(const struct sk_bench_results *res,
				       int mix, const char *prim, int threads)
{
	int r;

	for (r = 0; r < res->nrows; r++) {
		const struct sk_bench_row *row = res->rows[r];

		if (is_sweep_row(row, "Mops/s") && row->mix == mix &&
		    row->threads == threads &&
		    strcmp(row->impl[0]->name, prim) == 0)
			return row;
	}
	return NULL;
}

static double median_of(const struct sk_bench_row *row)
{
	struct sk_bench_stat s;

	if (!row)
		return NAN;
	s = sk_bench_row_stat(row, 0);
	return s.n ? s.median : NAN;
}

/* The best and second-best primitive of (mix, count): indexes or -1. */
static void rank(const struct sk_bench_results *res, int mix, int threads,
		 int *best, int *second)
{
	double b = -1, s = -1;
	int p;

	*best = *second = -1;
	for (p = 0; p < NPRIMS; p++) {
		double v = median_of(find(res, mix, prims[p]->name, threads));

		if (!isfinite(v))
			continue;
		if (v > b) {
			s = b;
			*second = *best;
			b = v;
			*best = p;
		} else if (v > s) {
			s = v;
			*second = p;
		}
	}
}

static void print_mix(FILE *f, const struct sk_bench_results *res, int mix,
		      int ncpus)
{
	char num[24], cell[32];
	int best[NCOUNTS], second, p, c;

	fprintf(f,
		"sweep / %d%% reads: total Mops/s (higher is better; "
		"* best in its column)\n%-18s",
		mix, "primitive");
	for (c = 0; c < NCOUNTS; c++) {
		snprintf(cell, sizeof(cell), "%d thread%s%s", counts[c],
			 counts[c] == 1 ? "" : "s",
			 counts[c] > ncpus ? " (over)" : "");
		fprintf(f, "  %16s", cell);
		rank(res, mix, counts[c], &best[c], &second);
	}
	fputc('\n', f);
	for (c = 0; c < 18 + 18 * NCOUNTS; c++)
		fputc('-', f);
	fputc('\n', f);
	for (p = 0; p < NPRIMS; p++) {
		fprintf(f, "%-18s", prims[p]->name);
		for (c = 0; c < NCOUNTS; c++) {
			sk_bench_fmt_num(num, sizeof(num),
					 median_of(find(res, mix,
							prims[p]->name,
							counts[c])));
			snprintf(cell, sizeof(cell), "%s%s", num,
				 best[c] == p ? "*" : " ");
			fprintf(f, "  %16s", cell);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* "1.23x name", the paired ratio of winner w over row o, into buf. */
static void fmt_ratio(char *buf, size_t len, const struct sk_bench_row *w,
		      const struct sk_bench_row *o, const char *name)
{
	struct sk_bench_stat s;
	char num[24];

	if (!w || !o) {
		snprintf(buf, len, "n/a");
		return;
	}
	s = sk_bench_ratio_stat(w, 0, o, 0);
	sk_bench_fmt_num(num, sizeof(num), s.n ? s.median : NAN);
	snprintf(buf, len, "%sx %s", num, name);
}

static void print_chooser(FILE *f, const struct sk_bench_results *res,
			  int ncpus)
{
	char second_s[64], base_s[64], mops[24];
	int m, c, best, second;

	fprintf(f, "chooser: the fastest primitive for each mix and thread "
		   "count; x: its Mops/s over\nthe runner-up's and over "
		   BASELINE "'s (median of per-repetition ratios)\n");
	fprintf(f, "%-10s  %-14s  %-18s  %8s  %-28s  %s\n", "reads",
		"threads", "winner", "Mops/s", "vs runner-up",
		"vs " BASELINE);
	for (m = 0; m < NMIXES; m++)
		for (c = 0; c < NCOUNTS; c++) {
			const struct sk_bench_row *w, *o;
			char thr[24];

			rank(res, mixes[m], counts[c], &best, &second);
			if (best < 0)
				continue;
			w = find(res, mixes[m], prims[best]->name, counts[c]);
			o = second < 0 ? NULL
				       : find(res, mixes[m],
					      prims[second]->name, counts[c]);
			fmt_ratio(second_s, sizeof(second_s), w, o,
				  second < 0 ? "" : prims[second]->name);
			fmt_ratio(base_s, sizeof(base_s), w,
				  find(res, mixes[m], BASELINE, counts[c]),
				  "");
			sk_bench_fmt_num(mops, sizeof(mops), median_of(w));
			snprintf(thr, sizeof(thr), "%d%s", counts[c],
				 counts[c] > ncpus ? " (over)" : "");
			fprintf(f, "%3d%%        %-14s  %-18s  %8s  %-28s  %s\n",
				mixes[m], thr, prims[best]->name, mops,
				second_s, base_s);
		}
	fprintf(f,
		"(over): more threads than the %d CPUs this process may "
		"run on (oversubscribed).\n\n",
		ncpus);
}

void sk_bench_sweep_chooser_html(FILE *f, const struct sk_bench_results *res)
{
	char second_s[64], base_s[64];
	int ncpus = sk_bench_ncpus(), m, c, best, second, any = 0;

	for (m = 0; m < NMIXES && !any; m++)
		for (c = 0; c < NCOUNTS && !any; c++) {
			rank(res, mixes[m], counts[c], &best, &second);
			any = best >= 0;
		}
	if (!any)
		return;
	fputs("<h2>Chooser</h2>\n<p>The fastest primitive for each read/update "
	      "mix and thread count (total Mops/s, median), and by how much "
	      "it beats the runner-up and " BASELINE " (median of "
	      "per-repetition ratios; a ratio near 1 is a tie).</p>\n"
	      "<table class=\"chooser\"><tr><th>reads</th>", f);
	for (c = 0; c < NCOUNTS; c++)
		fprintf(f, "<th>%d thread%s%s</th>", counts[c],
			counts[c] == 1 ? "" : "s",
			counts[c] > ncpus ? " (oversubscribed)" : "");
	fputs("</tr>\n", f);
	for (m = 0; m < NMIXES; m++) {
		fprintf(f, "<tr><td>%d%%</td>", mixes[m]);
		for (c = 0; c < NCOUNTS; c++) {
			const struct sk_bench_row *w;

			rank(res, mixes[m], counts[c], &best, &second);
			if (best < 0) {
				fputs("<td>n/a</td>", f);
				continue;
			}
			w = find(res, mixes[m], prims[best]->name, counts[c]);
			fmt_ratio(second_s, sizeof(second_s), w,
				  second < 0 ? NULL
					     : find(res, mixes[m],
						    prims[second]->name,
						    counts[c]),
				  second < 0 ? "" : prims[second]->name);
			fmt_ratio(base_s, sizeof(base_s), w,
				  find(res, mixes[m], BASELINE, counts[c]),
				  BASELINE);
			fprintf(f, "<td><b>%s</b><br>%s<br>%s</td>",
				prims[best]->name, second_s, base_s);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

void sk_bench_sweep_print(FILE *f, const struct sk_bench_results *res)
{
	const struct sk_bench_row *row = NULL;
	int ncpus = sk_bench_ncpus(), m, r;

	for (r = 0; r < res->nrows && !row; r++)
		if (is_sweep_row(res->rows[r], "Mops/s"))
			row = res->rows[r];
	if (!row)
		return;
	fprintf(f,
		"sweep: one operation = a read (read side, check a 3-word "
		"value) or an update\n(replace it); figures: median over "
		"%d repetitions\n\n",
		row->nrep);
	for (m = 0; m < NMIXES; m++)
		print_mix(f, res, mixes[m], ncpus);
	print_chooser(f, res, ncpus);
}
