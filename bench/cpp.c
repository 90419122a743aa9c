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
 *           of a plain 64-byte object, which allocates a node of its own
 *           for the head (no target: it does more work).  Enqueuers are
 *           unpinned (threads as programs run them), 1 and 2 of them;
 *           rows: each enqueuer's cost per call, and end to end (the
 *           clock stops when the barrier returns).
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define CXX_CB_PER_THREAD 200000L
#define CXX_CB_PER_THREAD_QUICK 50000L
#define CXX_MAX_THREADS 2

static const char *const retire_impls[] = {
	"scalekit-c++",
	"scalekit",
	"scalekit-retire",
	NULL,
};

struct retire_rows {
	int ncounts, counts[CXX_MAX_THREADS];
	struct sk_bench_row *enq[CXX_MAX_THREADS], *e2e[CXX_MAX_THREADS];
};

static void add_rows(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res, struct retire_rows *rr,
		     long n)
{
	static char e2e_title[160];
	int c;

	snprintf(e2e_title, sizeof(e2e_title),
		 "c++ / retire, end to end: ns per callback, %ld per "
		 "unpinned thread then one barrier (lower is better)",
		 n);
	rr->ncounts = sk_bench_thread_counts(cfg->max_threads, 0, rr->counts,
					     CXX_MAX_THREADS);
	for (c = 0; c < rr->ncounts; c++)
		rr->enq[c] = sk_bench_row_add(
			res, "c++", "retire enqueue", "ns/cb",
			"c++ / retire, enqueue: ns per new+retire (C: "
			"malloc+sk_call_rcu) in each unpinned thread (lower "
			"is better)",
			rr->counts[c], 1, retire_impls, cfg->reps);
	for (c = 0; c < rr->ncounts; c++)
		rr->e2e[c] = sk_bench_row_add(res, "c++", "retire end to end",
					      "ns/cb", e2e_title, rr->counts[c],
					      1, retire_impls, cfg->reps);
}

/* Every implementation at every count once: rep < 0 is the warm-up. */
static int run_round(const struct sk_bench_config *cfg,
		     struct retire_rows *rr, int rep, long n)
{
	const struct sk_bench_row *row = rr->enq[0];
	int i, c, err;

	for (i = 0; i < row->nimpl; i++) {
		int k = (i + (rep < 0 ? 0 : rep)) % row->nimpl;

		if (row->na[k])
			continue;
		for (c = 0; c < rr->ncounts; c++) {
			double e2e, enq;

			err = sk_bench_cb_measure(row->impl[k], rr->counts[c],
						  n, 1, &e2e, &enq);
			if (err) {
				fprintf(stderr,
					"scalekit bench: c++: cannot run %s "
					"on %d threads: %s\n",
					row->impl[k]->name, rr->counts[c],
					strerror(-err));
				return -1;
			}
			if (rep < 0)
				continue;
			rr->enq[c]->rep[k][rep] = enq;
			rr->e2e[c]->rep[k][rep] = e2e;
			sk_bench_progress("c++: rep %d/%d, retire, %d thread%s, "
					  "%-16s enqueue %7.2f ns/cb, end to "
					  "end %7.2f ns/cb",
					  rep + 1, cfg->reps, rr->counts[c],
					  rr->counts[c] == 1 ? " " : "s",
					  row->impl[k]->name, enq, e2e);
		}
	}
	return 0;
}

int sk_bench_cpp_run(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res)
{
	long n = cfg->quick ? CXX_CB_PER_THREAD_QUICK : CXX_CB_PER_THREAD;
	struct retire_rows rr;
	char what[112];
	int c, rep;

	if (sk_bench_cpp_read_run(cfg, res))
		return -1;
	add_rows(cfg, res, &rr, n);
	sk_bench_progress("c++: retire: %d implementations x %d thread counts "
			  "x %d reps, %ld callbacks per thread",
			  rr.enq[0]->nimpl, rr.ncounts, cfg->reps, n);
	for (rep = -1; rep < cfg->reps; rep++)
		if (run_round(cfg, &rr, rep, n))
			return -1;
	for (c = 0; c < rr.ncounts; c++) {
		snprintf(what, sizeof(what),
			 "c++ retire, %d thread%s: ns/cb enqueue scalekit-c++ "
			 "/ scalekit",
			 rr.counts[c], rr.counts[c] == 1 ? "" : "s");
		sk_bench_ratio_target(res, rr.enq[c], "scalekit-c++",
				      "scalekit", 1.02, 1, what,
				      "cpp-retire-enqueue");
		snprintf(what, sizeof(what),
			 "c++ retire, %d thread%s: ns/cb end to end "
			 "scalekit-c++ / scalekit",
			 rr.counts[c], rr.counts[c] == 1 ? "" : "s");
		sk_bench_ratio_target(res, rr.e2e[c], "scalekit-c++",
				      "scalekit", 1.02, 1, what,
				      "cpp-retire-e2e");
	}
	return 0;
}
