/* SPDX-License-Identifier: MIT */
/*
 * Adapter: scalekit's RCU, both reader kinds of its single domain.
 *
 *  scalekit            general readers: sk_rcu_read_lock()/unlock().
 *  scalekit-qsbr       online QSBR threads that bracket each section with
 *                      sk_rcu_qsbr_read_lock()/unlock() (the QSBR flavor's
 *                      read lock: empty unless SK_DEBUG, like urcu-qsbr's)
 *                      and announce sk_rcu_quiescent_state() every
 *                      SK_BENCH_QS_PERIOD sections.
 *  scalekit-qsbr-bare  the same without any read_lock/unlock: the floor.
 *
 * All three share sk_synchronize_rcu(): one domain, one grace period.
 * The general readers also serve:
 *
 *  scalekit-exp        sk_synchronize_rcu_expedited() as the grace period.
 *  scalekit-poll       sk_start_poll_synchronize_rcu(), then
 *                      sk_poll_state_synchronize_rcu() until it completes
 *                      (yielding the CPU between polls) as the grace period.
 *  scalekit-free       callbacks queued with SK_FREE_RCU() instead of
 *                      sk_call_rcu() with a function that calls free().
 *
 * And SRCU, a separate mechanism with its own domain:
 *
 *  scalekit-srcu       sk_srcu_read_lock()/sk_srcu_dereference()/
 *                      sk_srcu_read_unlock() on one domain,
 *                      sk_synchronize_srcu() on it.
 */
#include "bench.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

/* A reader that cannot register cannot be measured: stop loudly. */
static void sk_check(int err, const char *call)
{
	if (err) {
		fprintf(stderr, "scalekit bench: %s failed: %s\n", call,
			strerror(-err));
		abort();
	}
}

static void sk_thread_init(void)
{
	sk_check(sk_rcu_register_thread(), "sk_rcu_register_thread()");
}

static void sk_thread_exit(void)
{
	sk_rcu_unregister_thread();
}

static void sk_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, sk_rcu_read_lock(),
			   sk_rcu_dereference(sk_bench_gp),
			   sk_rcu_read_unlock());
}

/* The object of the callback loops (layout: see SK_BENCH_CB_OBJ_SIZE). */
struct sk_cb_obj {
	long key;
	struct sk_rcu_head head;
	char pad[SK_BENCH_CB_OBJ_SIZE - sizeof(long) -
		 sizeof(struct sk_rcu_head)];
};

_Static_assert(sizeof(struct sk_cb_obj) == SK_BENCH_CB_OBJ_SIZE,
	       "callback object size differs between libraries");

static struct sk_cb_obj *sk_cb_alloc(void)
{
	struct sk_cb_obj *o = malloc(sizeof(*o));

	if (!o) {
		fprintf(stderr, "scalekit bench: out of memory\n");
		abort();
	}
	o->key = 1;
	return o;
}

static void sk_cb_free(struct sk_rcu_head *h)
{
	free((char *)h - offsetof(struct sk_cb_obj, head));
}

static void sk_call_loop(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		struct sk_cb_obj *o = sk_cb_alloc();

		sk_check(sk_call_rcu(&o->head, sk_cb_free), "sk_call_rcu()");
	}
}

static void sk_free_loop(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		struct sk_cb_obj *o = sk_cb_alloc();

		sk_check(SK_FREE_RCU(o, head), "SK_FREE_RCU()");
	}
}

/* A polled grace period waited for the way a poller would: yielding. */
static void sk_poll_sync(void)
{
	unsigned long cookie = sk_start_poll_synchronize_rcu();

	while (!sk_poll_state_synchronize_rcu(cookie))
		sched_yield();
}

/* The SRCU domain of the scalekit-srcu readers and grace periods. */
static struct sk_srcu sk_bench_srcu;

static void sk_srcu_setup(void)
{
	sk_check(sk_srcu_init(&sk_bench_srcu), "sk_srcu_init()");
}

static void sk_srcu_read_section(long n)
{
	int idx;

	SK_BENCH_READ_LOOP(n, idx = sk_srcu_read_lock(&sk_bench_srcu),
			   sk_srcu_dereference(sk_bench_gp, &sk_bench_srcu),
			   sk_srcu_read_unlock(&sk_bench_srcu, idx));
}

static void sk_srcu_sync(void)
{
	sk_synchronize_srcu(&sk_bench_srcu);
}

static void sk_qsbr_thread_init(void)
{
	sk_check(sk_rcu_thread_online(), "sk_rcu_thread_online()");
}

static void sk_qsbr_thread_exit(void)
{
	/* Unregistering puts an online thread offline first. */
	sk_rcu_unregister_thread();
}

static void sk_qsbr_read_section(long n)
{
	SK_BENCH_QSBR_LOOP(n, sk_rcu_qsbr_read_lock(),
			   sk_rcu_dereference(sk_bench_gp),
			   sk_rcu_qsbr_read_unlock(), sk_rcu_quiescent_state());
}

static void sk_qsbr_bare_read_section(long n)
{
	SK_BENCH_QSBR_LOOP(n, (void)0, sk_rcu_dereference(sk_bench_gp), (void)0,
			   sk_rcu_quiescent_state());
}

/* sync-qsbr-every: a quiescent state after every section. */
static void sk_qsbr_every_read_section(long n)
{
	SK_BENCH_READ_LOOP(n, (void)0, sk_rcu_dereference(sk_bench_gp),
			   sk_rcu_quiescent_state());
}

/* Registered general readers: the fields most ops share. */
#define SK_GENERAL_READERS                                            \
	.thread_init = sk_thread_init, .thread_exit = sk_thread_exit, \
	.read_section = sk_read_section

const struct sk_bench_rcu_ops sk_bench_scalekit_ops = {
	.name = "scalekit",
	.desc = "sk_rcu_read_lock/unlock, sk_synchronize_rcu, sk_call_rcu",
	SK_GENERAL_READERS,
	.sync = sk_synchronize_rcu,
	.call_loop = sk_call_loop,
	.barrier = sk_rcu_barrier,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_exp_ops = {
	.name = "scalekit-exp",
	.desc = "sk_rcu_read_lock/unlock, sk_synchronize_rcu_expedited",
	SK_GENERAL_READERS,
	.sync = sk_synchronize_rcu_expedited,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_poll_ops = {
	.name = "scalekit-poll",
	.desc = "sk_start_poll_synchronize_rcu, then poll until done",
	SK_GENERAL_READERS,
	.sync = sk_poll_sync,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_free_ops = {
	.name = "scalekit-free",
	.desc = "callbacks queued with SK_FREE_RCU, sk_rcu_barrier",
	SK_GENERAL_READERS,
	.sync = sk_synchronize_rcu,
	.call_loop = sk_free_loop,
	.barrier = sk_rcu_barrier,
};

/*
 * The C++ layer's loops (peer_scalekit_cxx.cpp, which says what each
 * runs): registered general readers like "scalekit", the C side they are
 * compared with in the "c++" scenario (bench/cpp.c).
 */
void sk_bench_cxx_guard_section(long n);
void sk_bench_cxx_std_section(long n);
void sk_bench_cxx_retire_loop(long n);
void sk_bench_cxx_rcu_retire_loop(long n);
void sk_bench_cxx_barrier(void);

const struct sk_bench_rcu_ops sk_bench_scalekit_cxx_ops = {
	.name = "scalekit-c++",
	.desc = "C++: sk::rcu_read_guard; rcu_obj_base::retire()",
	.thread_init = sk_thread_init,
	.thread_exit = sk_thread_exit,
	.read_section = sk_bench_cxx_guard_section,
	.call_loop = sk_bench_cxx_retire_loop,
	.barrier = sk_bench_cxx_barrier,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_std_ops = {
	.name = "scalekit-std",
	.desc = "C++: std::scoped_lock on sk::rcu_default_domain() (P2545)",
	.thread_init = sk_thread_init,
	.thread_exit = sk_thread_exit,
	.read_section = sk_bench_cxx_std_section,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_retire_ops = {
	.name = "scalekit-retire",
	.desc = "C++: sk::rcu_retire() of a plain object (P2545)",
	.thread_init = sk_thread_init,
	.thread_exit = sk_thread_exit,
	.read_section = sk_bench_cxx_guard_section,
	.call_loop = sk_bench_cxx_rcu_retire_loop,
	.barrier = sk_bench_cxx_barrier,
};

/* Per-CPU callback workers around each run (pinned: the default). */
static void sk_pcpu_setup(void)
{
	int err = sk_rcu_cb_workers_create(0);

	if (err) {
		fprintf(stderr, "scalekit bench: sk_rcu_cb_workers_create: %s\n",
			strerror(-err));
		abort();
	}
}

static void sk_pcpu_teardown(void)
{
	sk_rcu_cb_workers_destroy();
}

const struct sk_bench_rcu_ops sk_bench_scalekit_pcpu_ops = {
	.name = "scalekit-pcpu",
	.desc = "sk_call_rcu with per-CPU callback workers "
		"(sk_rcu_cb_workers_create), sk_rcu_barrier",
	SK_GENERAL_READERS,
	.call_loop = sk_call_loop,
	.barrier = sk_rcu_barrier,
	.cb_setup = sk_pcpu_setup,
	.cb_teardown = sk_pcpu_teardown,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_srcu_ops = {
	.name = "scalekit-srcu",
	.desc = "sk_srcu_read_lock/unlock, sk_synchronize_srcu, one domain",
	.init = sk_srcu_setup,
	.read_section = sk_srcu_read_section,
	.sync = sk_srcu_sync,
};

/* The QSBR ops differ only in their name, line and read loop. */
#define SK_QSBR_OPS(sym, nm, what, section)                               \
	SK_BENCH_QSBR_OPS(sym, nm, what, sk_qsbr_thread_init,             \
			  sk_rcu_thread_offline, sk_qsbr_thread_exit, section, \
			  sk_synchronize_rcu)

SK_QSBR_OPS(sk_bench_scalekit_qsbr_ops, "scalekit-qsbr",
	    "online QSBR thread: qsbr_read_lock/unlock + quiescent state "
	    "every 1024",
	    sk_qsbr_read_section);
SK_QSBR_OPS(sk_bench_scalekit_qsbr_bare_ops, "scalekit-qsbr-bare",
	    "online QSBR thread: dereference only + quiescent state every "
	    "1024",
	    sk_qsbr_bare_read_section);
SK_QSBR_OPS(sk_bench_scalekit_qsbr_every_ops, "scalekit-qsbr-every",
	    "online QSBR thread: dereference + quiescent state every one",
	    sk_qsbr_every_read_section);
