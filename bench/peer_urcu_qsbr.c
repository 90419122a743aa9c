/* SPDX-License-Identifier: MIT */
/*
 * Adapter: liburcu's QSBR flavor (urcu_qsbr_*), the peer of scalekit's
 * QSBR readers.  Registered threads are online; the loop shape matches
 * scalekit-qsbr exactly: read_lock/unlock around each dereference (empty
 * in liburcu's QSBR) and a quiescent state every SK_BENCH_QS_PERIOD
 * sections.  urcu-qsbr-bare drops the (empty) read_lock/unlock calls.
 *
 * _LGPL_SOURCE selects the inline fast paths; the flavor header is
 * included here and nowhere else (it maps unprefixed names).
 */
#include "bench.h"
#include "sweep.h"

#ifdef SK_HAVE_LIBURCU_QSBR
#define _LGPL_SOURCE
#include <urcu/urcu-qsbr.h>

static void qsbr_read_section(long n)
{
	SK_BENCH_QSBR_LOOP(n, urcu_qsbr_read_lock(),
			   rcu_dereference(sk_bench_gp),
			   urcu_qsbr_read_unlock(),
			   urcu_qsbr_quiescent_state());
}

static void qsbr_bare_read_section(long n)
{
	SK_BENCH_QSBR_LOOP(n, (void)0, rcu_dereference(sk_bench_gp), (void)0,
			   urcu_qsbr_quiescent_state());
}

static void qsbr_every_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, (void)0, rcu_dereference(sk_bench_gp),
			   urcu_qsbr_quiescent_state());
}

/* The mapped names are macros (_LGPL_SOURCE); give them addresses. */
static void qsbr_thread_offline(void)
{
	urcu_qsbr_thread_offline();
}

/* The three ops differ only in their name, line and read loop. */
#define URCU_QSBR_OPS(sym, nm, what, section)                           \
	SK_BENCH_QSBR_OPS(sym, nm, what, urcu_qsbr_register_thread,     \
			  qsbr_thread_offline, urcu_qsbr_unregister_thread, \
			  section, urcu_qsbr_synchronize_rcu)

URCU_QSBR_OPS(sk_bench_urcu_qsbr_ops, "urcu-qsbr",
	      "liburcu qsbr: read_lock/unlock + quiescent state every 1024",
	      qsbr_read_section);
URCU_QSBR_OPS(sk_bench_urcu_qsbr_bare_ops, "urcu-qsbr-bare",
	      "liburcu qsbr: dereference only + quiescent state every 1024",
	      qsbr_bare_read_section);
URCU_QSBR_OPS(sk_bench_urcu_qsbr_every_ops, "urcu-qsbr-every",
	      "liburcu qsbr: dereference + quiescent state every one",
	      qsbr_every_read_section);

/* The sweep (bench/sweep.h): online qsbr readers, like urcu-qsbr's. */
#define SK_BENCH_SWEEP_URCU_RETIRE_qsbr(o) \
	urcu_qsbr_call_rcu(&(o)->head, sw_qsbr_free)
SK_BENCH_SWEEP_URCU(sk_bench_sweep_urcu_qsbr_ops, "urcu-qsbr", qsbr,
		    urcu_qsbr_quiescent_state(),
		    .thread_offline = qsbr_thread_offline,
		    .thread_exit = urcu_qsbr_unregister_thread);

#else

SK_BENCH_PEER_MISSING(sk_bench_urcu_qsbr_ops, "urcu-qsbr",
		      "liburcu qsbr flavor", "liburcu-qsbr");
SK_BENCH_PEER_MISSING(sk_bench_urcu_qsbr_bare_ops, "urcu-qsbr-bare",
		      "liburcu qsbr flavor, no read_lock/unlock",
		      "liburcu-qsbr");
SK_BENCH_PEER_MISSING(sk_bench_urcu_qsbr_every_ops, "urcu-qsbr-every",
		      "liburcu qsbr flavor, quiescent state every section",
		      "liburcu-qsbr");

SK_BENCH_PEER_MISSING(sk_bench_sweep_urcu_qsbr_ops, "urcu-qsbr",
		      "liburcu qsbr flavor", "liburcu-qsbr");

#endif /* SK_HAVE_LIBURCU_QSBR */
