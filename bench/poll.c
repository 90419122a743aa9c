/* SPDX-License-Identifier: MIT */
/*
 * Scenario "poll": polled grace periods of scalekit's RCU.
 *
 *  - cost: one thread loops over sk_get_state_synchronize_rcu() +
 *    sk_poll_state_synchronize_rcu(), the pair a reclaimer pays per
 *    object it retires and checks, and over each call alone (poll of a
 *    cookie still pending, and of one completed), in ns per iteration;
 *  - latency: sk_start_poll_synchronize_rcu() then
 *    sk_poll_state_synchronize_rcu() until it completes, yielding the CPU
 *    between polls (the scalekit-poll adapter), against
 *    sk_synchronize_rcu(), with 0 and 1 busy general reader.  The polled
 *    grace period runs on the callback worker, so the difference is the
 *    hand-off to that thread.
 *
 * There is no peer: the liburcu found at build time (0.13) has no polled
 * grace periods.  The cost loops call scalekit directly, the only library
 * here, instead of going through an adapter.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"

/* Iterations between two looks at the clock. */
#define POLL_CHUNK 4096

static const char *const sk_only[] = { "scalekit", NULL };

static const char *const cost_title =
	"poll / cost: ns per call (or pair of calls), one thread, no grace "
	"period running (lower is better)";

/* One loop of the cost table; n iterations. */
struct poll_loop {
	const char *variant;
	void (*run)(long n);
};

static void loop_get_poll(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		unsigned long c = sk_get_state_synchronize_rcu();

		SK_BENCH_USE(sk_poll_state_synchronize_rcu(c));
	}
}

static void loop_get(long n)
{
	long i;

	for (i = 0; i < n; i++)
		SK_BENCH_USE(sk_get_state_synchronize_rcu());
}

static void loop_poll_pending(long n)
{
	/* No grace period runs meanwhile: this cookie stays pending. */
	unsigned long c = sk_get_state_synchronize_rcu();
	long i;

	for (i = 0; i < n; i++)
		SK_BENCH_USE(sk_poll_state_synchronize_rcu(c));
}

static void loop_poll_done(long n)
{
	long i;

	for (i = 0; i < n; i++)
		SK_BENCH_USE(
			sk_poll_state_synchronize_rcu(SK_RCU_COOKIE_COMPLETED));
}

static const struct poll_loop loops[] = {
	{ "get+poll", loop_get_poll },
	{ "get", loop_get },
	{ "poll pending", loop_poll_pending },
	{ "poll done", loop_poll_done },
};

#define NLOOPS ((int)(sizeof(loops) / sizeof(loops[0])))

/* ns per iteration of loop over about run_ns. */
static double measure(const struct poll_loop *loop, uint64_t run_ns)
{
	uint64_t t0 = sk_bench_now_ns(), t;
	long n = 0;

	do {
		loop->run(POLL_CHUNK);
		n += POLL_CHUNK;
		t = sk_bench_now_ns();
	} while (t - t0 < run_ns);
	return (double)(t - t0) / (double)n;
}

static int run_cost(const struct sk_bench_config *cfg,
		    struct sk_bench_results *res)
{
	struct sk_bench_row *rows[NLOOPS];
	int i, rep;

	for (i = 0; i < NLOOPS; i++)
		rows[i] = sk_bench_row_add(res, "poll", loops[i].variant,
					   "ns/op", cost_title, 1, 0, sk_only,
					   cfg->reps);
	if (rows[0]->na[0])
		return 0;
	sk_bench_progress("poll: cost: %d loops x %d reps, %.0f ms each "
			  "(warm-up %.0f ms)",
			  NLOOPS, cfg->reps, cfg->run_ns / 1e6,
			  cfg->warmup_ns / 1e6);
	for (i = 0; i < NLOOPS; i++)
		measure(&loops[i], cfg->warmup_ns);
	for (rep = 0; rep < cfg->reps; rep++) {
		for (i = 0; i < NLOOPS; i++) {
			/* Rotate the start so no loop always runs first. */
			int k = (i + rep) % NLOOPS;
			double ns = measure(&loops[k], cfg->run_ns);

			rows[k]->rep[0][rep] = ns;
			sk_bench_progress("poll: rep %d/%d, %-12s %8.2f ns/op",
					  rep + 1, cfg->reps, loops[k].variant,
					  ns);
		}
	}
	return 0;
}

static const int zero_one[] = { 0, 1 };
static const char *const latency_impls[] = {
	"scalekit-poll",
	"scalekit",
	NULL,
};

int sk_bench_poll_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res)
{
	static const struct sk_bench_sync_spec spec = {
		.scenario = "poll",
		.p50_variant = "latency p50",
		.p99_variant = "latency p99",
		.p50_title = "poll / latency p50: sk_start_poll_synchronize_rcu"
			     " + poll until complete vs sk_synchronize_rcu, us,"
			     " N busy general readers (threads = N; lower is "
			     "better)",
		.p99_title = "poll / latency p99: sk_start_poll_synchronize_rcu"
			     " + poll until complete vs sk_synchronize_rcu, us,"
			     " N busy general readers (threads = N; lower is "
			     "better)",
		.ratio_prefix = "poll",
		.impls = latency_impls,
		.readers = zero_one,
		.nreaders = 2,
	};
	struct sk_bench_row *p50[2], *p99[2];

	if (run_cost(cfg, res))
		return -1;
	return sk_bench_sync_rows(cfg, res, &spec, p50, p99);
}
