/* SPDX-License-Identifier: MIT */
/*
 * Adapter: scalekit's RCU, both reader kinds of its single domain.
 *
 *  scalekit            general readers: sk_rcu_read_lock()/unlock().
 *  scalekit-qsbr       online QSBR threads that still bracket each section
 *                      with sk_rcu_read_lock()/unlock() and announce
 *                      sk_rcu_quiescent_state() every SK_BENCH_QS_PERIOD
 *                      sections: the honest loop of a QSBR user whose code
 *                      is shared with general readers.
 *  scalekit-qsbr-bare  the same without read_lock/unlock: the floor.
 *
 * All three share sk_synchronize_rcu(): one domain, one grace period.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"

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
	SK_BENCH_QSBR_LOOP(n, sk_rcu_read_lock(),
			   sk_rcu_dereference(sk_bench_gp),
			   sk_rcu_read_unlock(), sk_rcu_quiescent_state());
}

static void sk_qsbr_bare_read_section(long n)
{
	SK_BENCH_QSBR_LOOP(n, (void)0, sk_rcu_dereference(sk_bench_gp), (void)0,
			   sk_rcu_quiescent_state());
}

const struct sk_bench_rcu_ops sk_bench_scalekit_ops = {
	.name = "scalekit",
	.desc = "sk_rcu_read_lock/unlock, sk_synchronize_rcu",
	.thread_init = sk_thread_init,
	.thread_exit = sk_thread_exit,
	.read_section = sk_read_section,
	.sync = sk_synchronize_rcu,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_qsbr_ops = {
	.name = "scalekit-qsbr",
	.desc = "online QSBR thread: read_lock/unlock + quiescent state "
		"every 1024",
	.thread_init = sk_qsbr_thread_init,
	.thread_offline = sk_rcu_thread_offline,
	.thread_exit = sk_qsbr_thread_exit,
	.read_section = sk_qsbr_read_section,
	.sync = sk_synchronize_rcu,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_qsbr_bare_ops = {
	.name = "scalekit-qsbr-bare",
	.desc = "online QSBR thread: dereference only + quiescent state "
		"every 1024",
	.thread_init = sk_qsbr_thread_init,
	.thread_offline = sk_rcu_thread_offline,
	.thread_exit = sk_qsbr_thread_exit,
	.read_section = sk_qsbr_bare_read_section,
	.sync = sk_synchronize_rcu,
};
