/* SPDX-License-Identifier: MIT */
/*
 * The ops of the C++ layer's adapter (the loops are in
 * peer_scalekit_cxx.cpp, which says what each one runs).  Readers and
 * enqueuers register like peer_scalekit.c's "scalekit", the C side they
 * are compared with.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"

void sk_bench_cxx_guard_section(long n);
void sk_bench_cxx_std_section(long n);
void sk_bench_cxx_retire_loop(long n);
void sk_bench_cxx_rcu_retire_loop(long n);
void sk_bench_cxx_barrier(void);

static void cxx_thread_init(void)
{
	int err = sk_rcu_register_thread();

	if (err) {
		fprintf(stderr, "scalekit bench: sk_rcu_register_thread(): "
				"%s\n",
			strerror(-err));
		abort();
	}
}

static void cxx_thread_exit(void)
{
	sk_rcu_unregister_thread();
}

const struct sk_bench_rcu_ops sk_bench_scalekit_cxx_ops = {
	.name = "scalekit-c++",
	.desc = "C++: sk::rcu_read_guard; rcu_obj_base::retire()",
	.thread_init = cxx_thread_init,
	.thread_exit = cxx_thread_exit,
	.read_section = sk_bench_cxx_guard_section,
	.call_loop = sk_bench_cxx_retire_loop,
	.barrier = sk_bench_cxx_barrier,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_std_ops = {
	.name = "scalekit-std",
	.desc = "C++: std::scoped_lock on sk::rcu_default_domain() (P2545)",
	.thread_init = cxx_thread_init,
	.thread_exit = cxx_thread_exit,
	.read_section = sk_bench_cxx_std_section,
};

const struct sk_bench_rcu_ops sk_bench_scalekit_retire_ops = {
	.name = "scalekit-retire",
	.desc = "C++: sk::rcu_retire() of a plain object (P2545)",
	.thread_init = cxx_thread_init,
	.thread_exit = cxx_thread_exit,
	.read_section = sk_bench_cxx_guard_section,
	.call_loop = sk_bench_cxx_rcu_retire_loop,
	.barrier = sk_bench_cxx_barrier,
};
