/* SPDX-License-Identifier: MIT */
/*
 * Scenarios of the update side at full speed (issue 14):
 *  - "sync-qsbr-every": the QSBR read loop with a quiescent state after
 *    every section (scalekit-qsbr-every vs urcu-qsbr-every), ns per
 *    section, 1..N threads; no updater runs, so this is the quiescent
 *    state's fast path;
 *  - "update-load": the throughput of one general reader thread while
 *    another thread runs synchronize in a loop (scalekit vs urcu-memb):
 *    what each library's grace periods cost its readers (scalekit's
 *    handshake slow path against liburcu's membarrier(2) interrupts);
 *  - "uperf": 1 and 2 updater threads, no reader, each calling
 *    synchronize in a loop (scalekit vs urcu-memb and urcu-qsbr): time
 *    per update, i.e. run time x updaters / updates, as liburcu's
 *    rcutorture uperf reports it.
 * Every figure is a median over repetitions; ratios pair repetitions.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const every_impls[] = {
	"scalekit-qsbr-every", "urcu-qsbr-every", NULL,
};
static const char *const load_impls[] = { "scalekit", "urcu-memb", NULL };
static const char *const uperf_impls[] = {
	"scalekit", "urcu-memb", "urcu-qsbr", NULL,
};

#define UPD_MAX_COUNTS 16

/* Measure ops on threads threads for run_ns: *val is the row's figure. */
typedef int (*upd_measure_fn)(const struct sk_bench_rcu_ops *ops,
			      int threads, uint64_t run_ns, double *val);

/*
 * Fill rows[0..nrows) with fn: one untimed warm-up round, then cfg->reps
 * rounds, every implementation of every row once per round.  Returns 0,
 * or -1 after a message.
 */
static int run_rows(const struct sk_bench_config *cfg, const char *scen,
		    struct sk_bench_row **rows, int nrows, upd_measure_fn fn)
{
	const struct sk_bench_rcu_ops *ops;
	int rep, c, i, err;
	double v;

	for (rep = -1; rep < cfg->reps; rep++)
		for (c = 0; c < nrows; c++)
			for (i = 0; i < rows[c]->nimpl; i++) {
				if (rows[c]->na[i])
					continue;
				ops = rows[c]->impl[i];
				err = fn(ops, rows[c]->threads,
					 rep < 0 ? cfg->warmup_ns : cfg->run_ns,
					 &v);
				if (err) {
					fprintf(stderr,
						"scalekit bench: %s: %s on %d "
						"thread(s): %s\n",
						scen, ops->name,
						rows[c]->threads,
						strerror(-err));
					return -1;
				}
				if (rep < 0)
					continue;
				rows[c]->rep[i][rep] = v;
				sk_bench_progress("%s: rep %d/%d, %d thread(s), "
						  "%-20s %9.2f %s",
						  scen, rep + 1, cfg->reps,
						  rows[c]->threads, ops->name,
						  v, rows[c]->unit);
			}
	return 0;
}

/* ---- sync-qsbr-every --------------------------------------------------- */

static int every_measure(const struct sk_bench_rcu_ops *ops, int threads,
			 uint64_t run_ns, double *ns)
{
	double mops;

	return sk_bench_read_measure(ops, threads, run_ns, ns, &mops);
}

int sk_bench_qsbr_every_run(const struct sk_bench_config *cfg,
			    struct sk_bench_results *res)
{
	struct sk_bench_row *rows[UPD_MAX_COUNTS];
	int counts[UPD_MAX_COUNTS], n, c;
	char what[96];

	n = sk_bench_thread_counts(cfg->max_threads, 0, counts, UPD_MAX_COUNTS);
	for (c = 0; c < n; c++)
		rows[c] = sk_bench_row_add(
			res, "sync-qsbr-every", "qsbr-every", "ns/op",
			"sync-qsbr-every: online QSBR threads, ns per "
			"dereference + quiescent state after every one (lower "
			"is better)",
			counts[c], 1, every_impls, cfg->reps);
	if (run_rows(cfg, "sync-qsbr-every", rows, n, every_measure))
		return -1;
	for (c = 0; c < n; c++) {
		snprintf(what, sizeof(what),
			 "sync-qsbr-every, %d thread%s: ns/op scalekit / "
			 "urcu-qsbr",
			 counts[c], counts[c] == 1 ? "" : "s");
		sk_bench_ratio_target(res, rows[c], every_impls[0],
				      every_impls[1], 1.0, 1, what,
				      "sync-qsbr-every");
	}
	return 0;
}

/* ---- update-load and uperf: updater threads ------------------------------ */

struct upd_thread {
	pthread_t tid;
	const struct sk_bench_rcu_ops *ops;
	int *stop;
	int registered; /* register as a reader (thread_init) first */
	uint64_t updates;
	uint64_t cpu_ns; /* CPU time of its update loop (thread clock) */
};

static void *updater_main(void *arg)
{
	struct upd_thread *u = arg;
	uint64_t n = 0, c0;

	/*
	 * A registered updater stays registered (and, for QSBR, online)
	 * around its grace periods, as an application thread that both
	 * reads and updates does.
	 */
	if (u->registered && u->ops->thread_init)
		u->ops->thread_init();
	c0 = sk_bench_thread_cpu_ns();
	while (!__atomic_load_n(u->stop, __ATOMIC_RELAXED)) {
		u->ops->sync();
		n++;
	}
	u->cpu_ns = sk_bench_thread_cpu_ns() - c0;
	if (u->registered && u->ops->thread_exit)
		u->ops->thread_exit();
	u->updates = n;
	return NULL;
}

/*
 * Start n updater threads of ops (registered as readers first when
 * registered is set); 0 or -errno (those started are joined).
 */
static int updaters_start(struct upd_thread *u, int n,
			  const struct sk_bench_rcu_ops *ops, int *stop,
			  int registered)
{
	int i, err;

	__atomic_store_n(stop, 0, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		u[i].ops = ops;
		u[i].stop = stop;
		u[i].registered = registered;
		u[i].updates = 0;
		err = pthread_create(&u[i].tid, NULL, updater_main, &u[i]);
		if (err) {
			__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
			while (i--)
				pthread_join(u[i].tid, NULL);
			return -err;
		}
	}
	return 0;
}

/* Stop and join n updaters; returns their updates in total. */
static uint64_t updaters_stop(struct upd_thread *u, int n, int *stop)
{
	uint64_t total = 0;
	int i;

	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		pthread_join(u[i].tid, NULL);
		total += u[i].updates;
	}
	return total;
}

/* One reader's Mops/s while one updater loops on ops->sync(). */
static int load_measure(const struct sk_bench_rcu_ops *ops, int threads,
			uint64_t run_ns, double *mops)
{
	struct upd_thread u;
	double ns;
	int stop, err = updaters_start(&u, 1, ops, &stop, 0);

	if (err)
		return err;
	err = sk_bench_read_measure(ops, threads, run_ns, &ns, mops);
	updaters_stop(&u, 1, &stop);
	return err;
}

int sk_bench_update_load_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	struct sk_bench_row *row;

	row = sk_bench_row_add(res, "update-load", "1 reader", "Mops/s",
			       "update-load: one general reader's throughput "
			       "while one updater runs synchronize in a loop, "
			       "Mops/s (higher is better)",
			       1, 1, load_impls, cfg->reps);
	if (run_rows(cfg, "update-load", &row, 1, load_measure))
		return -1;
	sk_bench_ratio_target(res, row, "scalekit", "urcu-memb", 1.0, 0,
			      "update-load, 1 reader: Mops/s scalekit / "
			      "urcu-memb",
			      "update-load");
	return 0;
}

/*
 * n updaters (registered or not) for run_ns: ns per update (run time x n
 * / updates); *occ the least CPU time an updater got over the run time.
 */
static int uperf_run(const struct sk_bench_rcu_ops *ops, int n,
		     uint64_t run_ns, double *ns, int registered, double *occ)
{
	struct upd_thread u[2];
	uint64_t t0, t1, total;
	int stop, err, i;

	t0 = sk_bench_now_ns();
	err = updaters_start(u, n, ops, &stop, registered);
	if (err)
		return err;
	sk_bench_sleep_ns(run_ns);
	total = updaters_stop(u, n, &stop);
	t1 = sk_bench_now_ns();
	/* No update completed at all (a stalled machine): no figure. */
	*ns = total ? (double)(t1 - t0) * n / (double)total : NAN;
	*occ = 1.0;
	for (i = 0; i < n; i++)
		if ((double)u[i].cpu_ns / (double)(t1 - t0) < *occ)
			*occ = (double)u[i].cpu_ns / (double)(t1 - t0);
	return 0;
}

/*
 * uperf_run() behind the occupancy gate (bench.h): two updaters that
 * time-share one CPU do not contend, and the figure would be another
 * process's.  run_rows() runs the warm-up through here too, gated like
 * the timed runs.
 */
static int uperf_measure_as(const struct sk_bench_rcu_ops *ops, int n,
			    uint64_t run_ns, double *ns, int registered)
{
	int gated = sk_bench_occ_gated(n), try = 0, err;
	double occ;

	do {
		err = uperf_run(ops, n, run_ns, ns, registered, &occ);
	} while (!err && gated && sk_bench_occ_retry(++try, occ));
	return err;
}

static int uperf_measure(const struct sk_bench_rcu_ops *ops, int n,
			 uint64_t run_ns, double *ns)
{
	return uperf_measure_as(ops, n, run_ns, ns, 0);
}

static int uperf_measure_registered(const struct sk_bench_rcu_ops *ops, int n,
				    uint64_t run_ns, double *ns)
{
	return uperf_measure_as(ops, n, run_ns, ns, 1);
}

int sk_bench_uperf_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res)
{
	static const char *const variant[2] = { "no readers",
						"registered" };
	static const upd_measure_fn fn[2] = { uperf_measure,
					      uperf_measure_registered };
	struct sk_bench_row *rows[2][2];
	char what[112];
	int c, v;

	for (v = 0; v < 2; v++) {
		for (c = 0; c < 2; c++)
			rows[v][c] = sk_bench_row_add(
				res, "uperf", variant[v], "ns/update",
				v ? "uperf / registered: the same updaters, "
				    "each registered as a reader (online) "
				    "first, ns per update per updater "
				    "(lower is better)"
				  : "uperf: N updaters, no readers, "
				    "synchronize per update, ns per update "
				    "per updater (lower is better)",
				c + 1, 1, uperf_impls, cfg->reps);
		if (run_rows(cfg, "uperf", rows[v], 2, fn[v]))
			return -1;
	}
	sk_bench_occ_note(res, "uperf");
	for (v = 0; v < 2; v++)
		for (c = 0; c < 2; c++) {
			snprintf(what, sizeof(what),
				 "uperf%s, %d updater%s: ns/update scalekit / "
				 "urcu-memb",
				 v ? " registered" : "", c + 1, c ? "s" : "");
			sk_bench_ratio_target(res, rows[v][c], "scalekit",
					      "urcu-memb", 1.0, 1, what,
					      "uperf");
		}
	return 0;
}
