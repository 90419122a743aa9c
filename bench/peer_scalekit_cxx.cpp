// SPDX-License-Identifier: MIT
/*
 * Adapter: scalekit's C++ layer (scalekit/rcu.hpp) against the C calls it
 * wraps, for the "c++" scenario (bench/cpp.c).  The ops structs are in
 * peer_scalekit.c (C designated initializers); this file holds the
 * loops, so that the C++ fast paths are inlined into them exactly as
 * the C ones are into peer_scalekit.c's.
 *
 *  scalekit-c++     sk::rcu_read_guard around each section.
 *  scalekit-std     std::scoped_lock on sk::rcu_default_domain() (P2545's
 *                   spelling of a read-side critical section).
 *  scalekit-c++     callbacks: new an object derived from
 *                   sk::rcu_obj_base and retire() it (its deleter,
 *                   std::default_delete, calls delete); the class's
 *                   operator new and delete call malloc() and free().
 *  scalekit-retire  callbacks: new a plain object and sk::rcu_retire() it
 *                   (which needs a node of its own for the head).
 * The C loops they pair with are peer_scalekit.c's "scalekit": malloc()
 * an object with an embedded struct sk_rcu_head, sk_call_rcu() with a
 * function that calls free().
 */
extern "C" {
#include "bench.h"
}

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>

#include "scalekit/rcu.hpp"

namespace {

/*
 * The allocation of the callback loops: malloc() and free(), the C loop's
 * calls, so that the rows compare retire() with sk_call_rcu() and not
 * libstdc++'s operator new (one more call around malloc(), about 1 ns
 * here) with malloc().
 */
struct c_alloc {
	static void *operator new(std::size_t size)
	{
		void *p = std::malloc(size);

		if (!p)
			throw std::bad_alloc();
		return p;
	}
	static void operator delete(void *p) noexcept
	{
		std::free(p);
	}
};

/* The object of the callback loops: the same 64 bytes as the C one. */
struct retire_obj : sk::rcu_obj_base<retire_obj>, c_alloc {
	long key;
	char pad[SK_BENCH_CB_OBJ_SIZE - sizeof(long) -
		 sizeof(sk::rcu_obj_base<retire_obj>)];
};
static_assert(sizeof(retire_obj) == SK_BENCH_CB_OBJ_SIZE,
	      "callback object size differs between libraries");

/* A plain object of the same size, for sk::rcu_retire(). */
struct plain_obj : c_alloc {
	long key;
	char pad[SK_BENCH_CB_OBJ_SIZE - sizeof(long)];
};

/* new, as a program writes it (out of memory: std::bad_alloc). */
template <class T> T *obj_new()
{
	T *o = new T;

	o->key = 1;
	return o;
}

} // namespace

extern "C" void sk_bench_cxx_guard_section(long n)
{
	SK_BENCH_READ_LOOP(n, sk::rcu_read_guard g,
			   sk_rcu_dereference(sk_bench_gp), (void)0);
}

extern "C" void sk_bench_cxx_std_section(long n)
{
	SK_BENCH_READ_LOOP(n, std::scoped_lock lk(sk::rcu_default_domain()),
			   sk_rcu_dereference(sk_bench_gp), (void)0);
}

extern "C" void sk_bench_cxx_retire_loop(long n)
{
	for (long i = 0; i < n; i++)
		obj_new<retire_obj>()->retire();
}

extern "C" void sk_bench_cxx_rcu_retire_loop(long n)
{
	for (long i = 0; i < n; i++)
		sk::rcu_retire(obj_new<plain_obj>());
}

extern "C" void sk_bench_cxx_barrier(void)
{
	sk::rcu_barrier();
}
