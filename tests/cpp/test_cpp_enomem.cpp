// SPDX-License-Identifier: MIT
//
// test_cpp_enomem.cpp - the C++ layer's allocating paths when memory runs
// out: each throws std::bad_alloc, queues nothing (the callable or
// deleter never runs, the object stays the caller's), and the same call
// works once memory is back.
//
//   sk::call_rcu(obj, f)                  one node per call (rcu.hpp)
//   sk::rcu_retire(p, d), stateful d      one node per call
//   sk::rcu_retire(p), stateless d, in a  the node path (sk_defer_rcu()
//     region of RCU protection            is for outside one)
//   sk::srcu_domain::call(obj, f)         one node per call (srcu.hpp)
//   sk::rhash(params)                     the table (params.alloc)
//   sk::srcu_domain()                     its state (sk_srcu_init(),
//                                         aligned_alloc())
//
// Memory runs out by a replaced global operator new that fails the
// calling thread's next allocation once armed (fail_next()), and by an
// rhash alloc hook that fails while armed, and by a replaced
// aligned_alloc() (the library's, through the dynamic linker) that fails
// the calling thread's next call once armed (c_fail_next()): only the
// test thread's own allocations fail, never the library's worker threads'.
//
// BROKEN twin (SK_CXX_TEST_BROKEN, tests/cpp.cmake: sk_cxx_test_twin):
// fail_next() arms nothing, so every call succeeds; every test here
// MUST then fail (the twin passes on "0 passed, N failed"), which shows
// that each test's checks can fail.
#include <cerrno>
#include <cstdlib>
#include <new>

#include "scalekit/rcu.hpp"
#include "scalekit/rhash.hpp"
#include "scalekit/srcu.hpp"
#include "sk_test.hpp"

namespace {

thread_local bool fail_armed; // the next operator new of this thread fails

void fail_next()
{
#ifndef SK_CXX_TEST_BROKEN
	fail_armed = true;
#endif
}

thread_local bool c_fail_armed; // the next aligned_alloc() of this thread fails

void c_fail_next()
{
#ifndef SK_CXX_TEST_BROKEN
	c_fail_armed = true;
#endif
}

} // namespace

// The library's aligned_alloc() (sk_srcu_init() gets a domain's state
// from it); posix_memalign() does the work, and is not replaced.
extern "C" void *aligned_alloc(std::size_t align, std::size_t n) noexcept
{
	void *p;

	if (c_fail_armed) {
		c_fail_armed = false;
		errno = ENOMEM;
		return nullptr;
	}
	return posix_memalign(&p, align, n) ? nullptr : p;
}

void *operator new(std::size_t n)
{
	void *p;

	if (fail_armed) {
		fail_armed = false;
		throw std::bad_alloc();
	}
	p = std::malloc(n ? n : 1);
	if (!p)
		throw std::bad_alloc();
	return p;
}

// The replacement delete frees what the replacement new got from malloc:
// gcc cannot see that pairing where it inlines them and warns.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void *p) noexcept
{
	std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

struct obj {
	int ran = 0; // atomic: how often the callable or deleter ran
};

int ran(const obj &o)
{
	return __atomic_load_n(&o.ran, __ATOMIC_ACQUIRE);
}

void mark(obj *o)
{
	__atomic_fetch_add(&o->ran, 1, __ATOMIC_RELEASE);
}

// Runs call() with the next allocation failing; true if it threw
// std::bad_alloc (anything else thrown fails the check).
template <class Call>
bool throws_bad_alloc(Call &&call)
{
	bool threw = false;

	fail_next();
	try {
		call();
	} catch (const std::bad_alloc &) {
		threw = true;
	} catch (...) {
		SK_CHECK(!"an exception other than std::bad_alloc");
	}
	fail_armed = false;
	return threw;
}

void call_rcu_without_memory_throws_and_queues_nothing()
{
	obj o;

	SK_CHECK(throws_bad_alloc(
		[&] { sk::call_rcu(&o, [](obj *p) { mark(p); }); }));
	sk::rcu_barrier();
	SK_CHECK_EQ(ran(o), 0);
	// Memory is back: the same call queues, and f runs once.
	sk::call_rcu(&o, [](obj *p) { mark(p); });
	sk::rcu_barrier();
	SK_CHECK_EQ(ran(o), 1);
}

// A deleter with state (so rcu_retire() takes the node path).
struct counting_deleter {
	int *deleted;
	void operator()(obj *p) const
	{
		__atomic_fetch_add(deleted, 1, __ATOMIC_RELEASE);
		delete p;
	}
};

void rcu_retire_stateful_without_memory_throws()
{
	static int deleted;
	auto *p = new obj;
	bool threw;

	__atomic_store_n(&deleted, 0, __ATOMIC_RELAXED);
	threw = throws_bad_alloc(
		[&] { sk::rcu_retire(p, counting_deleter{ &deleted }); });
	SK_CHECK(threw);
	sk::rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&deleted, __ATOMIC_ACQUIRE), 0);
	if (!threw)
		return; // p was retired (and deleted): not ours any more
	// p is still the caller's: retiring it now deletes it once.
	sk::rcu_retire(p, counting_deleter{ &deleted });
	sk::rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&deleted, __ATOMIC_ACQUIRE), 1);
}

// std::default_delete inside a region of RCU protection: the node path.
void rcu_retire_in_section_without_memory_throws()
{
	auto *p = new obj;
	bool threw;

	{
		sk::rcu_read_guard g;

		threw = throws_bad_alloc([&] { sk::rcu_retire(p); });
	}
	SK_CHECK(threw);
	sk::rcu_barrier();
	if (!threw)
		return; // p was retired (and deleted): not ours any more
	// Not deleted: the object is still ours to read and write.
	p->ran = 7;
	SK_CHECK_EQ(p->ran, 7);
	{
		sk::rcu_read_guard g;

		sk::rcu_retire(p);
	}
	sk::rcu_barrier();
}

void srcu_call_without_memory_throws()
{
	sk::srcu_domain d;
	obj o;

	SK_CHECK(throws_bad_alloc(
		[&] { d.call(&o, [](obj *p) { mark(p); }); }));
	d.barrier();
	SK_CHECK_EQ(ran(o), 0);
	d.call(&o, [](obj *p) { mark(p); });
	d.barrier();
	SK_CHECK_EQ(ran(o), 1);
}

// A domain whose state cannot be allocated: std::bad_alloc, as
// docs/cpp.md says of ENOMEM in a constructor (std::system_error before).
void srcu_domain_without_memory_throws_bad_alloc()
{
	bool threw = false;

	c_fail_next();
	try {
		sk::srcu_domain d;
	} catch (const std::bad_alloc &) {
		threw = true;
	} catch (...) {
		SK_CHECK(!"an exception other than std::bad_alloc");
	}
	c_fail_armed = false;
	SK_CHECK(threw);
	// Memory is back: a domain works.
	sk::srcu_domain d;
	obj o;

	d.call(&o, [](obj *p) { mark(p); });
	d.barrier();
	SK_CHECK_EQ(ran(o), 1);
}

// ---- sk::rhash's table, through params.alloc ----------------------------

bool rhash_alloc_fails; // the test thread's flag (no other thread creates)

void *rhash_alloc(size_t n)
{
	if (rhash_alloc_fails)
		return nullptr;
	return std::malloc(n);
}

struct entry {
	sk_rhash_node node{};
	unsigned long key = 0;
};

using table_t = sk::rhash<entry, &entry::node, &entry::key>;

void rhash_create_without_memory_throws()
{
	sk_rhash_params p = sk::rhash_default_params();
	bool threw = false;

	p.alloc = rhash_alloc;
#ifndef SK_CXX_TEST_BROKEN
	rhash_alloc_fails = true;
#endif
	try {
		table_t t(p);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	rhash_alloc_fails = false;
	SK_CHECK(threw);
	// Memory is back: the same parameters make a working table.
	table_t t(p);
	entry e;

	e.key = 42;
	SK_CHECK_EQ(t.insert(e), 0);
	{
		sk::rcu_read_guard g;

		SK_CHECK(t.find(42UL) == &e);
	}
	SK_CHECK_EQ(t.erase(e), 0);
	sk::rcu_barrier();
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(call_rcu_without_memory_throws_and_queues_nothing);
	SK_RUN(rcu_retire_stateful_without_memory_throws);
	SK_RUN(rcu_retire_in_section_without_memory_throws);
	SK_RUN(srcu_call_without_memory_throws);
	SK_RUN(srcu_domain_without_memory_throws_bad_alloc);
	SK_RUN(rhash_create_without_memory_throws);
	return sk_test_report();
}
