/* SPDX-License-Identifier: MIT */
/*
 * Scenario "c++": what the C++ layer (scalekit/rcu.hpp) costs over the C
 * calls it wraps, measured in the same run (target: at most 1.02x).
 *
 *  read     sk::rcu_read_guard and std::scoped_lock on
 *           sk::rcu_default_domain() against sk_rcu_read_lock/unlock
 *           (read.c's loop, sk_bench_cpp_read_run()).
 *  retire   rcu_obj_base::retire() of a new'd 64-byte object whose
 *           deleter deletes it, against sk_call_rcu() of a malloc()ed
 *           64-byte object whose callback frees it; and sk::rcu_retire()
 *           of a plain 64-byte object, which needs a node of its own for
 *           the head (no target: it does more work).  Two rows:
 *    enqueue     the caller's cost per allocation + retire, one thread,
 *                in batches of 1000 that the worker leaves alone while
 *                the clock runs, the implementations' batches taking
 *                turns (measure_batches()): the figure is the
 *                wrapper and the allocator, not the worker's timing (end
 *                to end, the worker's frees and grace periods land on the
 *                enqueuer's CPU and allocator at unpredictable moments,
 *                and runs of the same code differ by 2x on 2 CPUs).
 *                Target.
 *    end to end  unpinned enqueuers (1 and 2), from the start to the
 *                return of the barrier (sk_bench_cb_measure()).  For
 *                information: no target.
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CXX_CB_PER_THREAD 200000L
#define CXX_CB_PER_THREAD_QUICK 50000L
#define CXX_MAX_THREADS 2
#define CXX_BATCH 1000L
#define CXX_PAIR 2 /* retire_impls[0] and [1]: the target's pair */

static const char *const retire_impls[] = {
	"scalekit-c++",
	"scalekit",
	"scalekit-retire",
	NULL,
};

struct retire_rows {
	int ncounts, counts[CXX_MAX_THREADS];
	struct sk_bench_row *enq, *e2e[CXX_MAX_THREADS];
};

static void add_rows(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res, struct retire_rows *rr,
		     long n)
{
	static char enq_title[200], e2e_title[160];
	int c;

	snprintf(enq_title, sizeof(enq_title),
		 "c++ / retire, enqueue: ns per new+retire (C: malloc+"
		 "sk_call_rcu), %ld in batches of %ld, one thread (lower "
		 "is better)",
		 n, CXX_BATCH);
	snprintf(e2e_title, sizeof(e2e_title),
		 "c++ / retire, end to end: ns per callback, %ld per "
		 "unpinned thread then one barrier (lower is better)",
		 n);
	rr->enq = sk_bench_row_add(res, "c++", "retire enqueue", "ns/cb",
				   enq_title, 1, 1, retire_impls, cfg->reps);
	rr->ncounts = sk_bench_thread_counts(cfg->max_threads, 0, rr->counts,
					     CXX_MAX_THREADS);
	for (c = 0; c < rr->ncounts; c++)
		rr->e2e[c] = sk_bench_row_add(res, "c++", "retire end to end",
					      "ns/cb", e2e_title, rr->counts[c],
					      1, retire_impls, cfg->reps);
}

/*
 * The ops->call_loop() of implementations lo..hi-1 in batches of
 * CXX_BATCH, each timed, each followed by an untimed barrier; the
 * implementations take turns batch by batch (the first one rotating), so
 * the load of any moment falls on all of them alike (the loops of
 * scalekit-c++ and scalekit compile to the same instructions:
 * docs/benchmarks.md, "The c++ rows").  Only the target's pair takes
 * turns (CXX_PAIR): with two, each follows the other as often as itself;
 * a third (scalekit-retire, which frees a plain object and a slab node)
 * would precede one of them more often, and the heap it leaves behind
 * made the next implementation's mallocs slower (scalekit-c++ / scalekit
 * 1.17 with the three in turn, on the same instructions).  A batch stays
 * below the backlog at which the worker starts a grace period at once
 * (CB_LAZY_MAX in src/rcu_cb.c): it waits up to a millisecond for more,
 * so no callback runs, no object is freed and no grace period is forced
 * while the clock runs; each batch reuses the memory the previous one
 * freed.  ns[k]: per call of implementation k, the median of its batches
 * (a batch that a preemption or an interrupt lengthened does not move
 * it), and for the pair's first the paired figure below.  Returns 0 or
 * -ENOMEM.
 */
static int measure_batches(const struct retire_rows *rr, long n, int first,
			   int lo, int hi, double *ns)
{
	int i, k, nimpl = hi - lo, nb = (int)((n + CXX_BATCH - 1) / CXX_BATCH);
	double *t = calloc((size_t)(nimpl * nb), sizeof(*t));
	uint64_t t0;
	int b;

	if (!t)
		return -ENOMEM;
	for (b = 0; b < nb; b++)
		for (i = 0; i < nimpl; i++) {
			const struct sk_bench_rcu_ops *ops;

			k = lo + (int)((i + first + b) % nimpl);
			if (rr->enq->na[k])
				continue;
			ops = rr->enq->impl[k];
			t0 = sk_bench_now_ns();
			ops->call_loop(CXX_BATCH);
			t[(k - lo) * nb + b] =
				(double)(sk_bench_now_ns() - t0) / CXX_BATCH;
			ops->barrier();
		}
	/*
	 * The pair (lo, lo + 1 when nimpl is 2): lo's figure is the C
	 * pair's median times the median of lo's batch over the C batch
	 * next to it (batch by batch, so that a slower stretch of the
	 * machine falls on both sides of a ratio); alone: its median.
	 */
	if (nimpl == 2 && !rr->enq->na[lo] && !rr->enq->na[lo + 1])
		ns[lo] = sk_bench_paired_median(t, t + nb, nb);
	else if (!rr->enq->na[lo])
		ns[lo] = sk_bench_median(t, nb);
	for (k = lo + 1; k < hi; k++)
		if (!rr->enq->na[k])
			ns[k] = sk_bench_median(&t[(k - lo) * nb], nb);
	free(t);
	return 0;
}

/* Implementation k's end-to-end runs at every count; rep < 0: a warm-up. */
static int run_impl(const struct sk_bench_config *cfg, struct retire_rows *rr,
		    int k, int rep, long n, double enq)
{
	const struct sk_bench_rcu_ops *ops = rr->enq->impl[k];
	double e2e, unused;
	int c, err;

	for (c = 0; c < rr->ncounts; c++) {
		err = sk_bench_cb_measure(ops, rr->counts[c], n, 1, &e2e,
					  &unused);
		if (err) {
			fprintf(stderr,
				"scalekit bench: c++: cannot run %s on %d "
				"threads: %s\n",
				ops->name, rr->counts[c], strerror(-err));
			return -1;
		}
		if (rep >= 0)
			rr->e2e[c]->rep[k][rep] = e2e;
	}
	if (rep < 0)
		return 0;
	rr->enq->rep[k][rep] = enq;
	sk_bench_progress("c++: rep %d/%d, retire, %-16s enqueue %7.2f ns/cb, "
			  "end to end (unpinned, %d thread%s) %7.2f ns/cb",
			  rep + 1, cfg->reps, ops->name, enq,
			  rr->counts[rr->ncounts - 1],
			  rr->counts[rr->ncounts - 1] == 1 ? "" : "s", e2e);
	return 0;
}

int sk_bench_cpp_run(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res)
{
	long n = cfg->quick ? CXX_CB_PER_THREAD_QUICK : CXX_CB_PER_THREAD;
	struct retire_rows rr;
	int i, rep;

	if (sk_bench_cpp_read_run(cfg, res))
		return -1;
	add_rows(cfg, res, &rr, n);
	sk_bench_progress("c++: retire: %d implementations x %d reps, %ld "
			  "callbacks per run",
			  rr.enq->nimpl, cfg->reps, n);
	/* Rotate the start so no implementation always runs first. */
	for (rep = -1; rep < cfg->reps; rep++) {
		double enq[SK_BENCH_MAX_IMPL] = { 0 };
		int first = rep < 0 ? 0 : rep;

		if (measure_batches(&rr, n, first, 0, CXX_PAIR, enq) ||
		    measure_batches(&rr, n, 0, CXX_PAIR, rr.enq->nimpl, enq)) {
			fprintf(stderr, "scalekit bench: c++: out of memory\n");
			return -1;
		}
		for (i = 0; i < rr.enq->nimpl; i++) {
			int k = (i + first) % rr.enq->nimpl;

			if (!rr.enq->na[k] &&
			    run_impl(cfg, &rr, k, rep, n, enq[k]))
				return -1;
		}
	}
	sk_bench_ratio_target(res, rr.enq, "scalekit-c++", "scalekit", 1.02,
			      1,
			      "c++ retire, 1 thread, batches of 1000: ns/cb "
			      "enqueue scalekit-c++ / scalekit",
			      "cpp-retire");
	return 0;
}
