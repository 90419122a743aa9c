/* SPDX-License-Identifier: MIT */
/*
 * Adapter: liburcu's memb flavor (urcu_memb_*), the closest peer of
 * scalekit's general readers: a per-thread counter snapshot, membarrier(2)
 * on the grace-period side.
 *
 * _LGPL_SOURCE selects liburcu's inline read-side fast paths, as a
 * performance-minded user would; scalekit's fast paths are inline too.
 * The flavor header maps unprefixed names onto this flavor, so it is
 * included here and nowhere else.
 */
#include "bench.h"

#ifdef SK_HAVE_LIBURCU_MEMB
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

static void memb_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, urcu_memb_read_lock(),
			   rcu_dereference(sk_bench_gp),
			   urcu_memb_read_unlock());
}

const struct sk_bench_rcu_ops sk_bench_urcu_memb_ops = {
	.name = "urcu-memb",
	.desc = "liburcu memb: urcu_memb_read_lock/unlock, "
		"urcu_memb_synchronize_rcu",
	.init = urcu_memb_init,
	.thread_init = urcu_memb_register_thread,
	.thread_exit = urcu_memb_unregister_thread,
	.read_section = memb_read_section,
	.sync = urcu_memb_synchronize_rcu,
};

#else

const struct sk_bench_rcu_ops sk_bench_urcu_memb_ops = {
	.name = "urcu-memb",
	.desc = "liburcu memb flavor",
	.unavailable = "liburcu-memb was not found by pkg-config at build time",
};

#endif /* SK_HAVE_LIBURCU_MEMB */
