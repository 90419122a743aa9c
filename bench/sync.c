/* SPDX-License-Identifier: MIT */
/*
 * Scenarios "sync", "sync-many", "expedited" and "srcu-sync": how long an
 * updater waits for a grace period.
 *
 * The main thread calls sync() in a loop for a fixed time (and at least
 * SYNC_MIN_CALLS times), timing each call with clock_gettime(); a
 * repetition yields the p50 and p99 of those calls, and the table shows
 * the median over repetitions of each.  Two families of runs:
 *  - busy readers: 0..N threads loop over read sections of the same
 *    implementation while the updater runs (with N + 1 threads on N CPUs
 *    the updater competes with the readers, as it would in production);
 *  - idle readers: 1 or cfg->idle_threads threads registered with every
 *    implementation and blocked on a condition variable; this shows what
 *    a grace period costs per registered thread that never reads.
 * "expedited" compares sk_synchronize_rcu_expedited() with
 * sk_synchronize_rcu(), "srcu-sync" sk_synchronize_srcu() with
 * sk_synchronize_rcu() and liburcu's, each with 0 and 1 busy reader of
 * its own kind, through sk_bench_sync_rows() (also used by "poll").
 * "sync-many" compares scalekit with urcu-memb in a process of 0, 64, 256
 * and 1,024 registered idle threads, with 0 and 8 busy readers (see there).
 */
#include "bench.h"

#include "scalekit/barrier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A repetition takes at least this many calls, up to 10 run lengths. */
#define SYNC_MIN_CALLS 100
#define SYNC_MAX_CALLS (1 << 20)

#define MAX_COUNTS 16

static const char *const general_impls[] = {
	"scalekit", "urcu-memb", "urcu-bp", "ck-epoch", NULL,
};
static const char *const qsbr_impls[] = { "scalekit-qsbr", "urcu-qsbr", NULL };
static const char *const idle_impls[] = {
	"scalekit", "urcu-memb", "urcu-qsbr", "urcu-bp", "ck-epoch", NULL,
};

struct sync_variant {
	const char *p50_name, *p99_name;
	const char *const *impls;
	const char *p50_title, *p99_title;
};

static const struct sync_variant busy_variants[] = {
	{ "general p50", "general p99", general_impls,
	  "sync / general p50: synchronize latency in us with N busy general "
	  "readers (threads = N; lower is better)",
	  "sync / general p99: synchronize latency in us with N busy general "
	  "readers (threads = N; lower is better)" },
	{ "qsbr p50", "qsbr p99", qsbr_impls,
	  "sync / qsbr p50: synchronize latency in us with N busy QSBR readers "
	  "(threads = N; lower is better)",
	  "sync / qsbr p99: synchronize latency in us with N busy QSBR readers "
	  "(threads = N; lower is better)" },
};

#define NBUSY ((int)(sizeof(busy_variants) / sizeof(busy_variants[0])))

static const struct sync_variant idle_variant = {
	"idle p50",
	"idle p99",
	idle_impls,
	"sync / idle p50: synchronize latency in us with N registered idle "
	"threads, no reader running (threads = N; lower is better)",
	"sync / idle p99: synchronize latency in us with N registered idle "
	"threads, no reader running (threads = N; lower is better)",
};

/* One implementation at one reader count: its p50 and p99 rows. */
struct sync_job {
	const struct sk_bench_rcu_ops *ops;
	int readers;
	struct sk_bench_row *p50_row, *p99_row;
	int col;
	int pin; /* pin the updater beside the readers (sk_bench_pin_main) */
};

/*
 * Time ops->sync() with readers busy reader threads for about run_ns;
 * lat has room for SYNC_MAX_CALLS values.  Returns 0 or -errno.
 */
static int measure(const struct sk_bench_rcu_ops *ops, int readers, int pin,
		   uint64_t run_ns, uint64_t *lat, double *p50_us,
		   double *p99_us, size_t *calls)
{
	struct sk_bench_readers *g = NULL;
	int err;

	if (pin)
		sk_bench_pin_main(readers);
	if (readers) {
		err = sk_bench_readers_start(&g, ops, readers);
		if (err) {
			sk_bench_unpin_main();
			return err;
		}
	}
	*calls = sk_bench_time_calls(ops->sync, run_ns, SYNC_MIN_CALLS,
				     SYNC_MAX_CALLS, lat, p50_us, p99_us);
	sk_bench_readers_stop(g, NULL);
	sk_bench_unpin_main();
	return 0;
}

/*
 * Run every job once untimed, then cfg->reps timed rounds; progress lines
 * start with scenario.
 */
static int run_jobs(const struct sk_bench_config *cfg, struct sync_job *jobs,
		    int njobs, uint64_t *lat, const char *scenario,
		    const char *what)
{
	struct sync_job *jb;
	double p50, p99;
	size_t calls;
	int i, rep, err;

	for (i = 0; i < njobs; i++) {
		jb = &jobs[i];
		err = measure(jb->ops, jb->readers, jb->pin, cfg->warmup_ns,
			      lat, &p50, &p99, &calls);
		if (err)
			goto fail;
	}
	for (rep = 0; rep < cfg->reps; rep++) {
		for (i = 0; i < njobs; i++) {
			/* Rotate the start so no job always runs first. */
			jb = &jobs[(i + rep) % njobs];
			err = measure(jb->ops, jb->readers, jb->pin,
				      cfg->run_ns, lat, &p50, &p99, &calls);
			if (err)
				goto fail;
			jb->p50_row->rep[jb->col][rep] = p50;
			jb->p99_row->rep[jb->col][rep] = p99;
			sk_bench_progress("%s: rep %d/%d, %4d %s, %-14s p50 "
					  "%9.2f us  p99 %9.2f us  (%zu calls)",
					  scenario, rep + 1, cfg->reps,
					  jb->p50_row->threads, what,
					  jb->ops->name, p50, p99, calls);
		}
	}
	return 0;

fail:
	fprintf(stderr,
		"scalekit bench: %s: cannot run %s with %d readers: %s\n",
		scenario, jb->ops->name, jb->readers, strerror(-err));
	return -1;
}

/* Grace periods with 0..max busy readers of the same implementation. */
static int run_busy(const struct sk_bench_config *cfg,
		    struct sk_bench_results *res, uint64_t *lat)
{
	struct sk_bench_row *p50[NBUSY][MAX_COUNTS], *p99[NBUSY][MAX_COUNTS];
	struct sync_job jobs[NBUSY * MAX_COUNTS * SK_BENCH_MAX_IMPL];
	int counts[MAX_COUNTS], ncounts, v, c, i, njobs = 0;

	ncounts =
		sk_bench_thread_counts(cfg->max_threads, 1, counts, MAX_COUNTS);
	for (v = 0; v < NBUSY; v++) {
		const struct sync_variant *sv = &busy_variants[v];

		for (c = 0; c < ncounts; c++)
			p50[v][c] = sk_bench_row_add(res, "sync", sv->p50_name,
						     "us", sv->p50_title,
						     counts[c], 1, sv->impls,
						     cfg->reps);
		for (c = 0; c < ncounts; c++)
			p99[v][c] = sk_bench_row_add(res, "sync", sv->p99_name,
						     "us", sv->p99_title,
						     counts[c], 1, sv->impls,
						     cfg->reps);
	}
	for (c = 0; c < ncounts; c++)
		for (v = 0; v < NBUSY; v++)
			for (i = 0; i < p50[v][c]->nimpl; i++) {
				if (p50[v][c]->na[i])
					continue;
				jobs[njobs++] =
					(struct sync_job){ p50[v][c]->impl[i],
							   counts[c],
							   p50[v][c],
							   p99[v][c],
							   i,
							   0 };
			}
	sk_bench_progress("sync: busy readers: %d runs x %d reps, >= %.0f ms "
			  "each (warm-up %.0f ms)",
			  njobs, cfg->reps, cfg->run_ns / 1e6,
			  cfg->warmup_ns / 1e6);
	if (run_jobs(cfg, jobs, njobs, lat, "sync", "readers"))
		return -1;
	/* Issue 14's targets, with 1 busy reader. */
	for (c = 0; c < ncounts; c++) {
		if (counts[c] != 1)
			continue;
		sk_bench_ratio_target(res, p50[0][c], "scalekit", "urcu-memb",
				      0.25, 1,
				      "sync general p50, 1 busy reader: "
				      "scalekit / urcu-memb",
				      "sync-general-p50");
		sk_bench_ratio_target(res, p50[1][c], "scalekit-qsbr",
				      "urcu-qsbr", 1.0, 1,
				      "sync qsbr p50, 1 busy reader: "
				      "scalekit-qsbr / urcu-qsbr",
				      "sync-qsbr-p50");
	}
	return 0;
}

/* Grace periods with 1 and cfg->idle_threads registered idle threads. */
static int run_idle(const struct sk_bench_config *cfg,
		    struct sk_bench_results *res, uint64_t *lat)
{
	const int counts[2] = { 1, cfg->idle_threads };
	const struct sk_bench_rcu_ops *ops[SK_BENCH_MAX_IMPL];
	struct sk_bench_row *p50[2], *p99[2];
	struct sync_job jobs[SK_BENCH_MAX_IMPL];
	struct sk_bench_target t = { .threads = cfg->idle_threads,
				     .limit = 10.0,
				     .at_most = 1 };
	int c, i, nops = 0, njobs, created, err = 0;

	for (c = 0; c < 2; c++)
		p50[c] = sk_bench_row_add(res, "sync", idle_variant.p50_name,
					  "us", idle_variant.p50_title,
					  counts[c], 1, idle_variant.impls,
					  cfg->reps);
	for (c = 0; c < 2; c++)
		p99[c] = sk_bench_row_add(res, "sync", idle_variant.p99_name,
					  "us", idle_variant.p99_title,
					  counts[c], 1, idle_variant.impls,
					  cfg->reps);
	for (i = 0; i < p50[0]->nimpl; i++)
		if (!p50[0]->na[i])
			ops[nops++] = p50[0]->impl[i];

	for (c = 0; c < 2 && !err; c++) {
		struct sk_bench_idle *idle;

		sk_bench_progress("sync: starting %d idle thread%s registered "
				  "with %d implementations",
				  counts[c], counts[c] == 1 ? "" : "s", nops);
		created = sk_bench_idle_start(&idle, ops, nops, counts[c]);
		if (created < counts[c]) {
			/* Not the configuration asked for: no figures. */
			for (i = 0; i < p50[c]->nimpl; i++)
				if (!p50[c]->na[i])
					p50[c]->na[i] = p99[c]->na[i] =
						"too few threads";
			sk_bench_idle_stop(idle);
			continue;
		}
		njobs = 0;
		for (i = 0; i < p50[c]->nimpl; i++)
			if (!p50[c]->na[i])
				jobs[njobs++] = (struct sync_job){
					p50[c]->impl[i], 0, p50[c], p99[c], i, 0
				};
		err = run_jobs(cfg, jobs, njobs, lat, "sync", "idle   ");
		sk_bench_idle_stop(idle);
	}
	if (err)
		return -1;

	snprintf(t.what, sizeof(t.what),
		 "sync idle: scalekit p50 with %d idle threads / with 1",
		 cfg->idle_threads);
	snprintf(t.id, sizeof(t.id), "sync-idle");
	snprintf(t.ratio_name, sizeof(t.ratio_name), "scalekit %d/1",
		 cfg->idle_threads);
	if (p50[1]->na[0] || p50[0]->na[0])
		t.na = p50[1]->na[0] ? p50[1]->na[0] : p50[0]->na[0];
	else
		t.ratio = sk_bench_ratio_stat(p50[1], 0, p50[0], 0);
	sk_bench_target_add(res, &t);
	return 0;
}

int sk_bench_sync_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res)
{
	uint64_t *lat = malloc(sizeof(*lat) * SYNC_MAX_CALLS);
	int err;

	if (!lat) {
		fprintf(stderr, "scalekit bench: sync: out of memory\n");
		return -1;
	}
	err = run_busy(cfg, res, lat);
	if (!err)
		err = run_idle(cfg, res, lat);
	free(lat);
	return err;
}

int sk_bench_sync_rows(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res,
		       const struct sk_bench_sync_spec *spec,
		       struct sk_bench_row **p50, struct sk_bench_row **p99)
{
	struct sync_job jobs[MAX_COUNTS * SK_BENCH_MAX_IMPL];
	uint64_t *lat;
	int c, i, njobs = 0, err;

	if (spec->nreaders < 1 || spec->nreaders > MAX_COUNTS) {
		fprintf(stderr,
			"scalekit bench: internal error: %s: %d reader "
			"counts\n",
			spec->scenario, spec->nreaders);
		abort();
	}
	for (c = 0; c < spec->nreaders; c++) {
		p50[c] = sk_bench_row_add(res, spec->scenario,
					  spec->p50_variant, "us",
					  spec->p50_title, spec->readers[c], 1,
					  spec->impls, cfg->reps);
		p50[c]->ratio_prefix = spec->ratio_prefix;
	}
	for (c = 0; c < spec->nreaders; c++) {
		p99[c] = sk_bench_row_add(res, spec->scenario,
					  spec->p99_variant, "us",
					  spec->p99_title, spec->readers[c], 1,
					  spec->impls, cfg->reps);
		p99[c]->ratio_prefix = spec->ratio_prefix;
	}
	lat = malloc(sizeof(*lat) * SYNC_MAX_CALLS);
	if (!lat) {
		fprintf(stderr, "scalekit bench: %s: out of memory\n",
			spec->scenario);
		return -1;
	}
	/* Reader counts outermost: starting readers is the costly part. */
	for (c = 0; c < spec->nreaders; c++)
		for (i = 0; i < p50[c]->nimpl; i++)
			if (!p50[c]->na[i])
				jobs[njobs++] = (struct sync_job){
					.ops = p50[c]->impl[i],
					.readers = spec->readers[c],
					.p50_row = p50[c],
					.p99_row = p99[c],
					.col = i,
					.pin = 1,
				};
	sk_bench_progress("%s: %d runs x %d reps, >= %.0f ms each (warm-up "
			  "%.0f ms)",
			  spec->scenario, njobs, cfg->reps, cfg->run_ns / 1e6,
			  cfg->warmup_ns / 1e6);
	err = run_jobs(cfg, jobs, njobs, lat, spec->scenario, "readers");
	free(lat);
	return err;
}

/*
 * Scenario "sync-many" (issue 28 item 5): grace periods in a process with
 * many registered threads, most of them idle, as in a server whose
 * threads mostly block.  For each idle count in many_idle[], that many
 * threads are registered with scalekit and with urcu-memb at once (small
 * stacks, blocked on a condition variable outside any read section, still
 * registered while every figure of that count is taken); then each
 * library's sync() is timed with 0 and with MANY_BUSY busy readers of its
 * own kind (unpinned: more threads than CPUs, the updater competes with
 * them).  The libraries alternate within each repetition (run_jobs).
 */
static const char *const many_impls[] = { "scalekit", "urcu-memb", NULL };
static const int many_idle[] = { 0, 64, 256, 1024 };

#define MANY_NIDLE ((int)(sizeof(many_idle) / sizeof(many_idle[0])))
#define MANY_BUSY 8

/*
 * The targets, scalekit / urcu-memb p50 <= 0.5: busy 0 or 1 (rows[busy]:
 * no busy reader, or MANY_BUSY), idle an index into many_idle[].
 */
struct many_target {
	int busy, idle;
	const char *what, *id;
};

static const struct many_target many_targets[] = {
	{ 0, 1, "sync-many p50, 64 idle threads: scalekit / urcu-memb",
	  "sync-many-idle64-p50" },
	{ 0, 3, "sync-many p50, 1024 idle threads: scalekit / urcu-memb",
	  "sync-many-idle1024-p50" },
	{ 1, 0, "sync-many p50, 8 busy readers: scalekit / urcu-memb",
	  "sync-many-busy8-p50" },
	{ 1, 3, "sync-many p50, 1024 idle + 8 busy: scalekit / urcu-memb",
	  "sync-many-busy8-idle1024-p50" },
};

/* Rows of one busy count: p50 and p99 at each idle count. */
struct many_rows {
	struct sk_bench_row *p50[MANY_NIDLE], *p99[MANY_NIDLE];
};

static void many_add_rows(const struct sk_bench_config *cfg,
			  struct sk_bench_results *res, struct many_rows *r,
			  const char *p50_variant, const char *p99_variant,
			  const char *p50_title, const char *p99_title)
{
	int c;

	for (c = 0; c < MANY_NIDLE; c++)
		r->p50[c] = sk_bench_row_add(res, "sync-many", p50_variant,
					     "us", p50_title, many_idle[c], 1,
					     many_impls, cfg->reps);
	for (c = 0; c < MANY_NIDLE; c++)
		r->p99[c] = sk_bench_row_add(res, "sync-many", p99_variant,
					     "us", p99_title, many_idle[c], 1,
					     many_impls, cfg->reps);
}

/* Every figure of idle count c is missing: say why in each row. */
static void many_mark_na(struct many_rows *rows, int nrows, int c,
			 const char *why)
{
	int k, i;

	for (k = 0; k < nrows; k++)
		for (i = 0; i < rows[k].p50[c]->nimpl; i++)
			if (!rows[k].p50[c]->na[i])
				rows[k].p50[c]->na[i] = rows[k].p99[c]->na[i] =
					why;
}

/*
 * Notes: each library's p50 at every idle count, the cost per added idle
 * thread between consecutive counts from 64 on (0 -> 64 also adds the
 * heavy fences, which a grace period with no other registered thread
 * skips), and how many times the added cost grows from 64 to 1,024 idle
 * threads (16x the threads: 16 when linear).
 */
static void many_growth_notes(struct sk_bench_results *res,
			      const struct many_rows *idle)
{
	int i, c;

	for (i = 0; i < idle->p50[0]->nimpl; i++) {
		double p[MANY_NIDLE];
		char sizes[96], slopes[128];
		size_t ls = 0, lp = 0;

		for (c = 0; c < MANY_NIDLE; c++) {
			if (idle->p50[c]->na[i])
				break;
			p[c] = sk_bench_row_stat(idle->p50[c], i).median;
		}
		if (c < MANY_NIDLE)
			continue;
		sizes[0] = slopes[0] = '\0';
		for (c = 0; c < MANY_NIDLE; c++) {
			ls += (size_t)snprintf(sizes + ls, sizeof(sizes) - ls,
					       "%s%.2f", c ? " / " : "", p[c]);
			if (c >= 2)
				lp += (size_t)snprintf(
					slopes + lp, sizeof(slopes) - lp,
					"%s%.1f ns (%d->%d)", c > 2 ? ", " : "",
					(p[c] - p[c - 1]) * 1e3 /
						(many_idle[c] - many_idle[c - 1]),
					many_idle[c - 1], many_idle[c]);
		}
		sk_bench_note_add(res,
				  "sync-many: %s p50 with 0 (none registered) "
				  "/ 64 / 256 / 1024 idle threads: %s us; added "
				  "cost per idle thread %s; 16x the idle threads "
				  "(64->1024) cost %.1fx the time above 0 "
				  "threads (16x: linear)",
				  idle->p50[0]->impl[i]->name, sizes, slopes,
				  p[1] > p[0] ? (p[MANY_NIDLE - 1] - p[0]) /
							(p[1] - p[0])
					      : 0.0);
	}
}

/*
 * Note: what one heavy fence costs at each idle count (fence[c], p50 in
 * us; negative: not measured).  It is the fixed part of a grace period
 * with idle registered threads, which never answer scalekit's handshake:
 * scalekit issues one (RCU-G1), urcu-memb two (before and after its
 * scan); the rest is the scan (the cost per idle thread of
 * many_growth_notes()).  So the 64-thread ratio cannot be far below 0.5.
 * Measured with the idle threads in place: membarrier(2) returns at once
 * in a process of one thread, and with 0 idle threads the bench may be
 * one.
 */
static void many_fence_note(struct sk_bench_results *res,
			    const double *fence)
{
	char buf[96];
	size_t l = 0;
	int c;

	buf[0] = '\0';
	for (c = 0; c < MANY_NIDLE; c++) {
		if (fence[c] < 0)
			l += (size_t)snprintf(buf + l, sizeof(buf) - l,
					      "%sn/a", c ? " / " : "");
		else
			l += (size_t)snprintf(buf + l, sizeof(buf) - l,
					      "%s%.2f", c ? " / " : "",
					      fence[c]);
	}
	sk_bench_note_add(res,
			  "sync-many: one sk_fence_heavy() (%s) p50 with 0 / "
			  "64 / 256 / 1024 idle threads: %s us: the fixed "
			  "part of a grace period with idle registered "
			  "threads (scalekit issues one, urcu-memb two)",
			  sk_fence_uses_membarrier() ? "membarrier(2)"
						     : "fallback, no membarrier",
			  buf);
}

/*
 * One heavy fence's p50 in us while MANY_BUSY busy readers of scalekit
 * run (the grace period's RCU-G1 in the busy rows), or -1 when scalekit
 * is not among ops or its readers cannot start.
 */
static double many_busy_fence(const struct sk_bench_config *cfg,
			      const struct sk_bench_rcu_ops *const *ops,
			      int nops, uint64_t *lat)
{
	struct sk_bench_readers *g = NULL;
	double p50 = -1, p99;
	int i;

	for (i = 0; i < nops; i++)
		if (!strcmp(ops[i]->name, "scalekit"))
			break;
	if (i == nops || sk_bench_readers_start(&g, ops[i], MANY_BUSY))
		return -1;
	sk_bench_time_calls(sk_fence_heavy, cfg->run_ns, SYNC_MIN_CALLS,
			    SYNC_MAX_CALLS, lat, &p50, &p99);
	sk_bench_readers_stop(g, NULL);
	return p50;
}

int sk_bench_sync_many_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	/*
	 * Half-length runs: with 8 busy readers on 2 CPUs, urcu-memb's
	 * synchronize waits up to seconds at its tail, so its runs end at
	 * the 10-run-length cap of sk_bench_time_calls(); halving keeps the
	 * scenario near 20 s (idle runs still take thousands of calls).
	 */
	struct sk_bench_config mcfg = *cfg;
	/* rows[0]: no busy reader; rows[1]: MANY_BUSY busy readers. */
	struct many_rows rows[2];
	static char why[MANY_NIDLE][96];
	double fence[MANY_NIDLE], p99, busy_fence = -1;
	const struct sk_bench_rcu_ops *ops[SK_BENCH_MAX_IMPL];
	struct sync_job jobs[2 * SK_BENCH_MAX_IMPL];
	uint64_t *lat;
	int c, i, k, nops = 0, njobs, created;

	many_add_rows(cfg, res, &rows[0], "idle p50", "idle p99",
		      "sync-many / idle p50: synchronize latency in us with N "
		      "registered idle threads, no busy reader (threads = N; "
		      "lower is better)",
		      "sync-many / idle p99: synchronize latency in us with N "
		      "registered idle threads, no busy reader (threads = N; "
		      "lower is better)");
	many_add_rows(cfg, res, &rows[1], "busy8 p50", "busy8 p99",
		      "sync-many / busy8 p50: synchronize latency in us with N "
		      "registered idle threads and 8 busy readers, unpinned "
		      "(threads = N idle; lower is better)",
		      "sync-many / busy8 p99: synchronize latency in us with N "
		      "registered idle threads and 8 busy readers, unpinned "
		      "(threads = N idle; lower is better)");
	for (i = 0; i < rows[0].p50[0]->nimpl; i++)
		if (!rows[0].p50[0]->na[i])
			ops[nops++] = rows[0].p50[0]->impl[i];
	lat = malloc(sizeof(*lat) * SYNC_MAX_CALLS);
	if (!lat) {
		fprintf(stderr, "scalekit bench: sync-many: out of memory\n");
		return -1;
	}
	mcfg.run_ns = cfg->run_ns / 2;
	mcfg.warmup_ns = cfg->warmup_ns / 2;
	for (c = 0; c < MANY_NIDLE; c++) {
		struct sk_bench_idle *idle = NULL;

		fence[c] = -1;

		sk_bench_progress("sync-many: starting %d idle threads "
				  "registered with %d implementations",
				  many_idle[c], nops);
		created = many_idle[c] ? sk_bench_idle_start(&idle, ops, nops,
							     many_idle[c])
				       : 0;
		if (created < many_idle[c]) {
			/* Not the configuration asked for: no figures. */
			snprintf(why[c], sizeof(why[c]),
				 "thread creation failed: %d of %d created",
				 created, many_idle[c]);
			many_mark_na(rows, 2, c, why[c]);
			sk_bench_idle_stop(idle);
			continue;
		}
		sk_bench_time_calls(sk_fence_heavy, mcfg.run_ns,
				    SYNC_MIN_CALLS, SYNC_MAX_CALLS, lat,
				    &fence[c], &p99);
		/*
		 * Idle rows, then busy rows: a busy reader thread that
		 * cannot be created (message printed) leaves that row n/a
		 * and the scenario goes on.
		 */
		for (k = 0; k < 2; k++) {
			njobs = 0;
			for (i = 0; i < rows[k].p50[c]->nimpl; i++)
				if (!rows[k].p50[c]->na[i])
					jobs[njobs++] = (struct sync_job){
						rows[k].p50[c]->impl[i],
						k ? MANY_BUSY : 0,
						rows[k].p50[c],
						rows[k].p99[c],
						i,
						0
					};
			if (run_jobs(&mcfg, jobs, njobs, lat, "sync-many",
				     k ? "idle + 8 busy" : "idle"))
				many_mark_na(&rows[k], 1, c,
					     "cannot create the busy readers "
					     "(see stderr)");
		}
		if (c == 0)
			busy_fence = many_busy_fence(&mcfg, ops, nops, lat);
		sk_bench_idle_stop(idle);
	}
	free(lat);

	many_fence_note(res, fence);
	if (busy_fence >= 0)
		sk_bench_note_add(
			res,
			"sync-many: one sk_fence_heavy() p50 while %d busy "
			"scalekit readers run: %.2f us (%.2f with none, when "
			"no other CPU runs a thread of the process and "
			"membarrier(2) interrupts none).  Most of 8 busy "
			"readers on 2 CPUs are preempted and cannot answer "
			"the handshake, so such a grace period is about one "
			"fence for scalekit and two for urcu-memb: the 8-busy "
			"ratio cannot be far below 0.5",
			MANY_BUSY, busy_fence, fence[0]);
	many_growth_notes(res, &rows[0]);
	for (k = 0; k < (int)(sizeof(many_targets) / sizeof(many_targets[0]));
	     k++) {
		const struct many_target *mt = &many_targets[k];

		sk_bench_ratio_target(res, rows[mt->busy].p50[mt->idle],
				      "scalekit", "urcu-memb", 0.5, 1, mt->what,
				      mt->id);
	}
	return 0;
}

/* Busy reader counts of the scenarios below: idle, then one reader. */
static const int zero_one[] = { 0, 1 };

static const char *const exp_impls[] = { "scalekit-exp", "scalekit", NULL };

int sk_bench_expedited_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	static const struct sk_bench_sync_spec spec = {
		.scenario = "expedited",
		.p50_variant = "p50",
		.p99_variant = "p99",
		.p50_title = "expedited p50: sk_synchronize_rcu_expedited vs "
			     "sk_synchronize_rcu latency in us with N busy "
			     "general readers (threads = N; lower is better)",
		.p99_title = "expedited p99: sk_synchronize_rcu_expedited vs "
			     "sk_synchronize_rcu latency in us with N busy "
			     "general readers (threads = N; lower is better)",
		.ratio_prefix = "exp",
		.impls = exp_impls,
		.readers = zero_one,
		.nreaders = 2,
	};
	struct sk_bench_row *p50[2], *p99[2];

	if (sk_bench_sync_rows(cfg, res, &spec, p50, p99))
		return -1;
	/*
	 * Normal grace periods take the same handshake as expedited ones,
	 * so with a reader whose sections are short both end about as fast;
	 * what expedited adds (polling instead of a futex sleep while a
	 * reader holds the grace period) this reader does not exercise.
	 * The target says that expedited never costs latency.
	 */
	sk_bench_ratio_target(res, p50[1], "scalekit-exp", "scalekit", 1.0, 1,
			      "expedited, 1 busy reader: p50 scalekit-exp / "
			      "scalekit",
			      "expedited-p50");
	return 0;
}

static const char *const srcu_sync_impls[] = {
	"scalekit-srcu",
	"scalekit",
	"urcu-memb",
	NULL,
};

int sk_bench_srcu_sync_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	static const struct sk_bench_sync_spec spec = {
		.scenario = "srcu-sync",
		.p50_variant = "p50",
		.p99_variant = "p99",
		.p50_title = "srcu-sync p50: sk_synchronize_srcu latency in us "
			     "with N busy readers of each implementation's "
			     "kind (threads = N; lower is better)",
		.p99_title = "srcu-sync p99: sk_synchronize_srcu latency in us "
			     "with N busy readers of each implementation's "
			     "kind (threads = N; lower is better)",
		.ratio_prefix = "srcu",
		.impls = srcu_sync_impls,
		.readers = zero_one,
		.nreaders = 2,
	};
	struct sk_bench_row *p50[2], *p99[2];

	if (sk_bench_sync_rows(cfg, res, &spec, p50, p99))
		return -1;
	sk_bench_ratio_target(res, p50[1], "scalekit-srcu", "urcu-memb", 1.5, 1,
			      "srcu-sync, 1 busy reader: p50 scalekit-srcu / "
			      "urcu-memb",
			      "srcu-sync-busy-p50");
	sk_bench_ratio_target(res, p50[0], "scalekit-srcu", "urcu-memb", 1.5, 1,
			      "srcu-sync, idle: p50 scalekit-srcu / urcu-memb",
			      "srcu-sync-idle-p50");
	return 0;
}
