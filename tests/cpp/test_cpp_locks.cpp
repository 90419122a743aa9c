// SPDX-License-Identifier: MIT
//
// test_cpp_locks.cpp - scalekit/locks.hpp under the standard's lock
// types: each lock under std::lock_guard (readers under std::shared_lock
// or in seqlock_read()), std::unique_lock with try_to_lock, defer_lock
// and std::lock() of two, std::scoped_lock of two different lock types;
// a plain counter that must end exact (cpp_lock_stress.hpp).  Then
// try_lock's answers, seqlock_read()'s retry, the destructors' refusal
// (death tests) and the types' compile-time properties.
//
// Built with SK_CXX_TEST_BROKEN (the broken twin, tests/cpp.cmake) only
// the stress tests run, on locks that do not lock: each must fail.
#include <cerrno>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <type_traits>

#include <unistd.h>

#include "cpp_lock_stress.hpp"
#include "scalekit/locks.hpp"
#include "sk_test.hpp"

namespace {

using stress::counters;
using stress::subject;

// ---- compile-time properties ---------------------------------------------------

template <class L>
constexpr bool pinned = !std::is_copy_constructible_v<L> &&
			!std::is_copy_assignable_v<L> &&
			!std::is_move_constructible_v<L> &&
			!std::is_move_assignable_v<L>;
static_assert(pinned<sk::elided_mutex> && pinned<sk::elided_spinlock> &&
	      pinned<sk::elided_rwlock> && pinned<sk::rwlock_rb> &&
	      pinned<sk::seqlock>);

template <class L>
constexpr bool nothrow_lockable =
	std::is_nothrow_default_constructible_v<L> &&
	noexcept(std::declval<L &>().lock()) &&
	noexcept(std::declval<L &>().try_lock()) &&
	noexcept(std::declval<L &>().unlock());
static_assert(nothrow_lockable<sk::elided_mutex> &&
	      nothrow_lockable<sk::elided_spinlock> &&
	      nothrow_lockable<sk::elided_rwlock> &&
	      nothrow_lockable<sk::rwlock_rb>);
static_assert(noexcept(std::declval<sk::rwlock_rb &>().lock_shared()) &&
	      noexcept(std::declval<sk::elided_rwlock &>().try_lock_shared()));
struct nothrow_read {
	int operator()() const noexcept { return 1; }
};
struct throwing_read {
	int operator()() const { return 1; }
};
static_assert(noexcept(sk::seqlock_read(std::declval<const sk::seqlock &>(),
					nothrow_read())));
static_assert(!noexcept(sk::seqlock_read(std::declval<const sk::seqlock &>(),
					 throwing_read())));

// Constant initialization, as std::mutex (C++20 can say it).
#if __cplusplus >= 202002L
constinit sk::elided_mutex global_mutex;
constinit sk::elided_spinlock global_spinlock;
constinit sk::elided_rwlock global_rwlock;
constinit sk::rwlock_rb global_rwlock_rb;
constinit sk::seqlock global_seqlock;
#else
sk::elided_mutex global_mutex;
sk::elided_spinlock global_spinlock;
sk::elided_rwlock global_rwlock;
sk::rwlock_rb global_rwlock_rb;
sk::seqlock global_seqlock;
#endif

// ---- every lock under std::lock_guard (and std::shared_lock) -----------------

// Run under the name "lock_guard_of<sk::TYPE>" (a name filter may pick one).
template <class L>
void lock_guard_of()
{
	subject<L> l;
	stress::lock_guard_run(__PRETTY_FUNCTION__, l);
}

// ---- std::unique_lock ---------------------------------------------------------------

// try_to_lock first; when that fails, lock() the same unique_lock.
template <class L>
void try_to_lock_run(const char *what)
{
	subject<L> l;
	counters c;
	long torn = stress::run(
		[&](int) {
			std::unique_lock<subject<L>> g(l, std::try_to_lock);
			if (!g.owns_lock())
				g.lock();
			stress::bump(c);
		},
		0, [] { return true; });
	stress::check(what, c, stress::writers() * stress::iterations(), torn);
}

void unique_lock_try_to_lock()
{
	try_to_lock_run<sk::elided_mutex>("unique_lock<elided_mutex>(try_to_lock)");
	try_to_lock_run<sk::elided_spinlock>(
		"unique_lock<elided_spinlock>(try_to_lock)");
	try_to_lock_run<sk::elided_rwlock>("unique_lock<elided_rwlock>(try_to_lock)");
	try_to_lock_run<sk::rwlock_rb>("unique_lock<rwlock_rb>(try_to_lock)");
}

// Two locks of types A and B, each guarding its counter: each writer
// thread t runs write(t, a, b, ca, cb) iterations() times, and each
// counter must end at want.
template <class A, class B, class W>
void two_locks_run(const char *what, long want, W write)
{
	subject<A> a;
	subject<B> b;
	counters ca, cb;
	long torn = stress::run([&](int t) { write(t, a, b, ca, cb); }, 0,
				[] { return true; });
	stress::check(what, ca, want, torn);
	stress::check(what, cb, want, torn);
}

// Both locks taken together by std::lock() of two deferred unique_locks,
// in opposite orders by odd and even threads (std::lock() avoids the
// deadlock with try_lock()).
template <class A, class B>
void std_lock_run(const char *what)
{
	two_locks_run<A, B>(
		what, stress::writers() * stress::iterations(),
		[](int t, auto &a, auto &b, counters &ca, counters &cb) {
			std::unique_lock ua(a, std::defer_lock);
			std::unique_lock ub(b, std::defer_lock);
			if (t & 1)
				std::lock(ua, ub);
			else
				std::lock(ub, ua);
			stress::bump(ca);
			stress::bump(cb);
		});
}

void unique_lock_defer_lock_and_std_lock_of_two()
{
	std_lock_run<sk::elided_mutex, sk::elided_spinlock>(
		"std::lock(unique_lock<elided_mutex>, unique_lock<elided_spinlock>)");
	std_lock_run<sk::elided_rwlock, sk::rwlock_rb>(
		"std::lock(unique_lock<elided_rwlock>, unique_lock<rwlock_rb>)");
}

// ---- std::scoped_lock of two different lock types --------------------------------

// Thread 0 takes a alone, thread 1 b alone, thread 2 both in one
// std::scoped_lock: each counter is bumped by two of the three.
template <class A, class B>
void scoped_lock_run(const char *what)
{
	two_locks_run<A, B>(
		what, 2 * stress::iterations(),
		[](int t, auto &a, auto &b, counters &ca, counters &cb) {
			if (t == 0) {
				std::lock_guard g(a);
				stress::bump(ca);
			} else if (t == 1) {
				std::lock_guard g(b);
				stress::bump(cb);
			} else {
				std::scoped_lock g(a, b);
				stress::bump(ca);
				stress::bump(cb);
			}
		});
}

void scoped_lock_of_two_types()
{
	scoped_lock_run<sk::elided_mutex, sk::rwlock_rb>(
		"scoped_lock(elided_mutex, rwlock_rb)");
	scoped_lock_run<sk::elided_spinlock, sk::elided_rwlock>(
		"scoped_lock(elided_spinlock, elided_rwlock)");
}

// ---- try_lock's answers ---------------------------------------------------------------

// What another thread's try-function answers now.
template <class F>
bool elsewhere(F f)
{
	bool r = false;
	std::thread t([&] { r = f(); });

	t.join();
	return r;
}

template <class L>
void try_lock_answers_of(L &l)
{
	auto try_excl = [&l] {
		bool ok = l.try_lock();
		if (ok)
			l.unlock();
		return ok;
	};
	l.lock();
	SK_CHECK(!elsewhere(try_excl));
	l.unlock();
	SK_CHECK(elsewhere(try_excl));
	if constexpr (stress::is_shared<L>::value) {
		auto try_shared = [&l] {
			bool ok = l.try_lock_shared();
			if (ok)
				l.unlock_shared();
			return ok;
		};
		l.lock();
		SK_CHECK(!elsewhere(try_shared));
		l.unlock();
		l.lock_shared();
		SK_CHECK(!elsewhere(try_excl));
		SK_CHECK(elsewhere(try_shared));
		l.unlock_shared();
		SK_CHECK(elsewhere(try_excl));
	}
}

void try_lock_answers()
{
	try_lock_answers_of(global_mutex);
	try_lock_answers_of(global_spinlock);
	try_lock_answers_of(global_rwlock);
	try_lock_answers_of(global_rwlock_rb);
	sk::rwlock_rb fresh;
	SK_CHECK(fresh.is_biased()); // SK_RWLOCK_RB_INITIALIZER starts biased
}

// ---- seqlock_read() -------------------------------------------------------------------

void seqlock_read_retries_until_consistent()
{
	sk::seqlock &s = global_seqlock;
	int runs = 0;
	// The first run overlaps a write section (another thread's, joined
	// before the run ends): it must be run again, and the second run's
	// result returned.
	int got = sk::seqlock_read(s, [&] {
		if (++runs == 1) {
			std::thread w([] {
				std::lock_guard<sk::seqlock> g(global_seqlock);
			});
			w.join();
		}
		return runs * 10;
	});
	SK_CHECK_EQ(runs, 2);
	SK_CHECK_EQ(got, 20);

	// void callables run until one run was consistent, too.
	runs = 0;
	sk::seqlock_read(s, [&] { runs++; });
	SK_CHECK_EQ(runs, 1);

	// The writer side with std::unique_lock (BasicLockable use only).
	std::unique_lock<sk::seqlock> g(s);
	g.unlock();
	unsigned start = s.read_begin();
	SK_CHECK(!s.read_retry(start));
	SK_CHECK(s.native() != nullptr);
}

// ---- the destructors' refusal ------------------------------------------------------------

constexpr int child_returned = 3;

// Child: destroy L while this thread holds it (shared when Shared).
template <class L, bool Shared>
void child_destroy_held()
{
	auto *l = new L;

	if constexpr (Shared)
		l->lock_shared();
	else
		l->lock();
	delete l; // must print and abort
	_exit(child_returned);
}

template <class L, bool Shared = false>
void expect_refusal(const char *name)
{
	sk_test_expect_abort(child_destroy_held<L, Shared>, 30, name,
			     "returned -16");
}

void destructors_abort_when_held()
{
	expect_refusal<sk::elided_mutex>("sk::elided_mutex::~elided_mutex");
	expect_refusal<sk::elided_spinlock>(
		"sk::elided_spinlock::~elided_spinlock");
	expect_refusal<sk::elided_rwlock>("sk::elided_rwlock::~elided_rwlock");
	expect_refusal<sk::elided_rwlock, true>(
		"sk::elided_rwlock::~elided_rwlock");
	expect_refusal<sk::rwlock_rb>("sk::rwlock_rb::~rwlock_rb");
	expect_refusal<sk::rwlock_rb, true>("sk::rwlock_rb::~rwlock_rb");
	expect_refusal<sk::seqlock>("sk::seqlock::~seqlock");
}

void native_handles_and_stats()
{
	sk_elide_stats st = SK_ELIDE_STATS_INITIALIZER;
	sk::elided_mutex m(&st);
	sk::elided_spinlock s(&st);
	sk::elided_rwlock rw(&st);

	SK_CHECK(m.native()->stats == &st);
	SK_CHECK(s.native()->stats == &st);
	{
		std::scoped_lock g(m, s); // nests: std::lock() over two
		std::shared_lock<sk::elided_rwlock> r(rw);
	}
	m.attach_stats(nullptr);
	SK_CHECK(m.native()->stats == nullptr);
	SK_CHECK_EQ(sk_elided_mutex_trylock(m.native()), 0); // the C API
	m.unlock();
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	if (!stress::broken) { // the twin runs only the stress tests
		SK_RUN(destructors_abort_when_held); // first: fork, no threads yet
		SK_RUN(try_lock_answers);
		SK_RUN(seqlock_read_retries_until_consistent);
		SK_RUN(native_handles_and_stats);
	}
	SK_RUN(lock_guard_of<sk::elided_mutex>);
	SK_RUN(lock_guard_of<sk::elided_spinlock>);
	SK_RUN(lock_guard_of<sk::elided_rwlock>); // and shared_lock
	SK_RUN(lock_guard_of<sk::rwlock_rb>);	    // and shared_lock
	SK_RUN(lock_guard_of<sk::seqlock>);	    // and seqlock_read()
	SK_RUN(unique_lock_try_to_lock);
	SK_RUN(unique_lock_defer_lock_and_std_lock_of_two);
	SK_RUN(scoped_lock_of_two_types);
	return sk_test_report();
}
