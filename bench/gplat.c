// SPDX-License-Identifier: MIT
/*
 * gp-latency: the distribution of one grace-period wait (p50, p90, p99,
 * max) for every grace-period primitive and peer, each with one busy
 * reader of its own kind, in one table.  Every implementation runs once
 * per repetition, the start rotating; each figure is the median over the
 * repetitions of that repetition's percentile.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GPL_MIN_CALLS 100
#define GPL_MAX_CALLS (1 << 20)

static const char *const gpl_impls[] = {
	"scalekit",	 "scalekit-qsbr", "scalekit-exp", "scalekit-srcu",
	"urcu-memb",	 "urcu-qsbr",	  "urcu-bp",	  "ck-epoch",
	NULL
};

#define GPL_NPCT 4
static const char *const gpl_name[GPL_NPCT] = { "1 busy reader p50",
						"1 busy reader p90",
						"1 busy reader p99",
						"1 busy reader max" };
static const double gpl_pct[GPL_NPCT] = { 0.50, 0.90, 0.99, 1.0 };

/* Nearest-rank percentile p of the sorted lat[0..n), in us. */
static double pct_us(const uint64_t *lat, size_t n, double p)
{
	size_t k = (size_t)ceil(p * (double)n);

	return (double)lat[k ? k - 1 : 0] / 1e3;
}

/*
 * One timed run of ops->sync with one busy reader: the percentiles into
 * column col, repetition rep, of rows[] (rep < 0: warm-up, not kept).
 * Returns 0, or -1 (message printed).
 */
static int gpl_run(const struct sk_bench_rcu_ops *ops, uint64_t run_ns,
		   uint64_t *lat, struct sk_bench_row **rows, int col, int rep)
{
	struct sk_bench_readers *g = NULL;
	double p50, p99;
	size_t n;
	int k;

	if (sk_bench_readers_start(&g, ops, 1))
		return -1;
	/* Sorts lat[0..n): the other percentiles are read from it. */
	n = sk_bench_time_calls(ops->sync, run_ns, GPL_MIN_CALLS,
				GPL_MAX_CALLS, lat, &p50, &p99);
	sk_bench_readers_stop(g, NULL);
	if (rep < 0)
		return 0;
	for (k = 0; k < GPL_NPCT; k++)
		rows[k]->rep[col][rep] = pct_us(lat, n, gpl_pct[k]);
	sk_bench_progress("gp-latency: rep %d, %-14s p50 %8.2f us  p90 %8.2f "
			  "us  p99 %8.2f us  max %8.2f us  (%zu calls)",
			  rep + 1, ops->name, rows[0]->rep[col][rep],
			  rows[1]->rep[col][rep], rows[2]->rep[col][rep],
			  rows[3]->rep[col][rep], n);
	return 0;
}

int sk_bench_gp_latency_run(const struct sk_bench_config *cfg,
			    struct sk_bench_results *res)
{
	struct sk_bench_row *rows[GPL_NPCT];
	uint64_t *lat = malloc(sizeof(*lat) * GPL_MAX_CALLS);
	int k, i, rep, n, ret = 0;

	if (!lat) {
		fprintf(stderr, "scalekit bench: gp-latency: out of memory\n");
		return -1;
	}
	for (k = 0; k < GPL_NPCT; k++)
		rows[k] = sk_bench_row_add(
			res, "gp-latency", gpl_name[k], "us",
			"gp-latency: one grace-period wait in us, one busy "
			"reader of the same kind (p50, p90, p99, max)",
			1, 1, gpl_impls, cfg->reps);
	n = rows[0]->nimpl;
	for (rep = -1; rep < cfg->reps && !ret; rep++)
		for (i = 0; i < n && !ret; i++) {
			/* Rotate the start so no implementation is always first. */
			int col = (i + (rep < 0 ? 0 : rep)) % n;

			if (!rows[0]->na[col])
				ret = gpl_run(rows[0]->impl[col],
					      rep < 0 ? cfg->warmup_ns : cfg->run_ns,
					      lat, rows, col, rep);
		}
	free(lat);
	return ret;
}
