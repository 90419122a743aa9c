/* SPDX-License-Identifier: MIT */
/*
 * Adapter: liburcu's memb flavor (urcu_memb_*), the closest peer of
 * scalekit's general readers: a per-thread counter snapshot, membarrier(2)
 * on the grace-period side.  Callbacks: urcu_memb_call_rcu() onto the
 * default call_rcu thread, urcu_memb_barrier().
 *
 * _LGPL_SOURCE selects liburcu's inline read-side fast paths, as a
 * performance-minded user would; scalekit's fast paths are inline too.
 * The flavor header maps unprefixed names onto this flavor, so it is
 * included here and nowhere else.
 */
#include "bench.h"
#include "sweep.h"

#ifdef SK_HAVE_LIBURCU_MEMB
#define _LGPL_SOURCE
#include <stdlib.h>

#include <urcu/urcu-memb.h>

/* The object of the callback loop (layout: see SK_BENCH_CB_OBJ_SIZE). */
struct memb_cb_obj {
	long key;
	struct rcu_head head;
	char pad[SK_BENCH_CB_OBJ_SIZE - sizeof(long) - sizeof(struct rcu_head)];
};

_Static_assert(sizeof(struct memb_cb_obj) == SK_BENCH_CB_OBJ_SIZE,
	       "callback object size differs between libraries");

static void memb_cb_free(struct rcu_head *h)
{
	free(caa_container_of(h, struct memb_cb_obj, head));
}

/* The caller is registered (thread_init), as call_rcu() requires. */
static void memb_call_loop(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		struct memb_cb_obj *o = malloc(sizeof(*o));

		if (!o) {
			fprintf(stderr, "scalekit bench: out of memory\n");
			abort();
		}
		o->key = 1;
		urcu_memb_call_rcu(&o->head, memb_cb_free);
	}
}

static void memb_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, urcu_memb_read_lock(),
			   rcu_dereference(sk_bench_gp),
			   urcu_memb_read_unlock());
}

/* Registered memb readers and their callbacks: what both ops share. */
#define MEMB_READERS_AND_CALLBACKS                                 \
	.init = urcu_memb_init,                                    \
	.thread_init = urcu_memb_register_thread,                  \
	.thread_exit = urcu_memb_unregister_thread,                \
	.read_section = memb_read_section, .call_loop = memb_call_loop, \
	.barrier = urcu_memb_barrier

const struct sk_bench_rcu_ops sk_bench_urcu_memb_ops = {
	.name = "urcu-memb",
	.desc = "liburcu memb (urcu_memb_*): read_lock/unlock, "
		"synchronize_rcu, call_rcu",
	MEMB_READERS_AND_CALLBACKS,
	.sync = urcu_memb_synchronize_rcu,
};

/*
 * liburcu's per-CPU call_rcu threads, as its users turn them on:
 * create_all_cpu_call_rcu_data(0) (one thread per CPU, pinned to it;
 * call_rcu() then picks the queue of the CPU it runs on), and
 * free_all_cpu_call_rcu_data() after the run.
 */
static void memb_pcpu_setup(void)
{
	if (urcu_memb_create_all_cpu_call_rcu_data(0) != 0) {
		fprintf(stderr, "scalekit bench: liburcu "
				"create_all_cpu_call_rcu_data failed\n");
		abort();
	}
}

const struct sk_bench_rcu_ops sk_bench_urcu_memb_pcpu_ops = {
	.name = "urcu-memb-pcpu",
	.desc = "liburcu memb: call_rcu with per-CPU call_rcu threads "
		"(create_all_cpu_call_rcu_data), urcu_memb_barrier",
	MEMB_READERS_AND_CALLBACKS,
	.cb_setup = memb_pcpu_setup,
	.cb_teardown = urcu_memb_free_all_cpu_call_rcu_data,
};

/* The sweep (bench/sweep.h): memb readers, urcu_memb_call_rcu(). */
#define SK_BENCH_SWEEP_URCU_RETIRE_memb(o) \
	urcu_memb_call_rcu(&(o)->head, sw_memb_free)
SK_BENCH_SWEEP_URCU(sk_bench_sweep_urcu_memb_ops, "urcu-memb", memb, (void)0,
		    .thread_exit = urcu_memb_unregister_thread);

#else

SK_BENCH_PEER_MISSING(sk_bench_urcu_memb_ops, "urcu-memb",
		      "liburcu memb flavor", "liburcu-memb");
SK_BENCH_PEER_MISSING(sk_bench_urcu_memb_pcpu_ops, "urcu-memb-pcpu",
		      "liburcu memb flavor, per-CPU call_rcu threads",
		      "liburcu-memb");

SK_BENCH_PEER_MISSING(sk_bench_sweep_urcu_memb_ops, "urcu-memb",
		      "liburcu memb flavor", "liburcu-memb");

#endif /* SK_HAVE_LIBURCU_MEMB */
