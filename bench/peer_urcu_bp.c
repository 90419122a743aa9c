/* SPDX-License-Identifier: MIT */
/*
 * Adapter: liburcu's bulletproof flavor (urcu_bp_*): readers register
 * themselves on first use, like scalekit's, at the price of a pointer
 * indirection to the per-thread state.
 *
 * _LGPL_SOURCE selects the inline fast paths; the flavor header is
 * included here and nowhere else (it maps unprefixed names).
 */
#include "bench.h"
#include "sweep.h"

#ifdef SK_HAVE_LIBURCU_BP
#define _LGPL_SOURCE
#include <urcu/urcu-bp.h>

static void bp_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, urcu_bp_read_lock(), rcu_dereference(sk_bench_gp),
			   urcu_bp_read_unlock());
}

const struct sk_bench_rcu_ops sk_bench_urcu_bp_ops = {
	.name = "urcu-bp",
	.desc = "liburcu bp: urcu_bp_read_lock/unlock, urcu_bp_synchronize_rcu",
	.thread_init = urcu_bp_register_thread,
	/* bp threads leave the registry by themselves at thread exit. */
	.read_section = bp_read_section,
	.sync = urcu_bp_synchronize_rcu,
};

/* The sweep (bench/sweep.h): bp readers (they need no unregistering). */
#define SK_BENCH_SWEEP_URCU_RETIRE_bp(o) urcu_bp_call_rcu(&(o)->head, sw_bp_free)
SK_BENCH_SWEEP_URCU(sk_bench_sweep_urcu_bp_ops, "urcu-bp", bp, (void)0);

#else

SK_BENCH_PEER_MISSING(sk_bench_urcu_bp_ops, "urcu-bp", "liburcu bp flavor",
		      "liburcu-bp");

SK_BENCH_PEER_MISSING(sk_bench_sweep_urcu_bp_ops, "urcu-bp",
		      "liburcu bp flavor", "liburcu-bp");

#endif /* SK_HAVE_LIBURCU_BP */
