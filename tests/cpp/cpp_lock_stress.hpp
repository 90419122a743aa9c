// SPDX-License-Identifier: MIT
//
// The lock wrappers' stress (scalekit/locks.hpp), shared by
// test_cpp_locks.cpp and test_cpp_locks_sim.cpp: writer threads bump a
// plain counter and a shadow copy of it under a lock, taken through a
// std:: lock type; reader threads check, under a shared lock or a
// seqlock_read(), that the two are equal; at the end the counter must be
// exact.
//
// The broken twin (SK_CXX_TEST_BROKEN, tests/cpp.cmake) replaces every
// lock under test by broken_lock<>, whose lock functions do nothing, and
// yields inside the writers' sections, so that on 2 CPUs updates are lost
// and readers see the counter ahead of its shadow.  Its data are then
// accessed atomically (relaxed: still lost updates, but no data race for
// TSan to stop on), so that the test's own checks report the breakage.
#ifndef CPP_LOCK_STRESS_HPP
#define CPP_LOCK_STRESS_HPP

#include <atomic>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "scalekit/locks.hpp"
#include "sk_test.hpp"

namespace stress {

#ifdef SK_CXX_TEST_BROKEN
constexpr bool broken = true;
#else
constexpr bool broken = false;
#endif

// A lock under test that does not lock: the broken twin's.  The real
// lock is kept for the seqlock readers (its count never moves).
template <class L>
struct broken_lock {
	L real;
	void lock() noexcept {}
	bool try_lock() noexcept { return true; }
	void unlock() noexcept {}
	void lock_shared() noexcept {}
	bool try_lock_shared() noexcept { return true; }
	void unlock_shared() noexcept {}
};

// The lock type a test uses for L: L, or broken_lock<L> in the twin.
template <class L>
using subject = std::conditional_t<broken, broken_lock<L>, L>;

// The seqlock a reader reads through.
inline const sk::seqlock &seq_of(const sk::seqlock &s) { return s; }
inline const sk::seqlock &seq_of(const broken_lock<sk::seqlock> &b)
{
	return b.real;
}

// A counter and its shadow: equal outside write sections.
struct counters {
	long count = 0;
	long shadow = 0;
};

// Loads and stores of the counters: plain (the locks order them, and
// TSan checks that they do), or relaxed atomics where readers and writers
// overlap by design (seqlock) or by breakage (the twin).
template <bool Atomic>
long ld(const long &x)
{
	if constexpr (Atomic || broken)
		return __atomic_load_n(&x, __ATOMIC_RELAXED);
	else
		return x;
}

template <bool Atomic>
void st(long &x, long v)
{
	if constexpr (Atomic || broken)
		__atomic_store_n(&x, v, __ATOMIC_RELAXED);
	else
		x = v;
}

// The twin's yield inside a write section: where another writer or a
// reader gets in when the lock does not keep it out.
inline void window()
{
	if constexpr (broken)
		std::this_thread::yield();
}

// One write section's work: count + 1, then shadow = count.
template <bool Atomic = false>
void bump(counters &c)
{
	long v = ld<Atomic>(c.count);

	window();
	st<Atomic>(c.count, v + 1);
	window();
	st<Atomic>(c.shadow, v + 1);
}

// Inside a read section: the counter equals its shadow.
template <bool Atomic = false>
bool consistent(const counters &c)
{
	return ld<Atomic>(c.count) == ld<Atomic>(c.shadow);
}

// The seqlock reader: a snapshot of both, consistent by seqlock_read().
template <class S>
bool seq_consistent(const S &s, const counters &c)
{
	auto snap = sk::seqlock_read(seq_of(s), [&c] {
		return std::make_pair(ld<true>(c.count), ld<true>(c.shadow));
	});
	return snap.first == snap.second;
}

// Thread and iteration counts, smaller under sanitizers.
inline int writers() { return 3; }
// The twin needs few: it yields in every section, so each is caught.
inline long iterations()
{
	return (broken ? 2000 : 50000) / static_cast<long>(sk_test_slow());
}

// Run writers() threads calling write(t) iterations() times and, until
// they are done, readers threads calling read() (true: consistent).
// Returns the number of inconsistent reads.
template <class W, class R>
long run(W write, int readers, R read)
{
	std::atomic<int> done{0};
	std::atomic<long> torn{0};
	std::vector<std::thread> ts;

	for (int r = 0; r < readers; r++)
		ts.emplace_back([&, rd = read]() mutable { // a copy each
			long bad = 0, n = 0;
			// At least a few reads, then until the writers finish.
			while (n++ < 100 ||
			       !done.load(std::memory_order_acquire)) {
				if (!rd())
					bad++;
				window(); // the twin's writers get the CPU too
			}
			torn.fetch_add(bad, std::memory_order_relaxed);
		});
	std::vector<std::thread> ws;
	for (int t = 0; t < writers(); t++)
		ws.emplace_back([&write, t] {
			for (long i = 0; i < iterations(); i++)
				write(t);
		});
	for (auto &w : ws)
		w.join();
	// Release, paired with the readers' acquire load: nothing rides on it
	// but the end of their loop (the counters are checked after join()).
	done.store(1, std::memory_order_release);
	for (auto &r : ts)
		r.join();
	return torn.load();
}

// Check a run's outcome, with a message the twin's log shows.
inline void check(const char *what, const counters &c, long expected,
		  long torn)
{
	long got = ld<true>(c.count);

	if (got != expected)
		std::fprintf(stderr, "ERROR: %s: lost updates: count %ld, "
				     "expected %ld\n",
			     what, got, expected);
	if (torn)
		std::fprintf(stderr, "ERROR: %s: %ld reads saw the count "
				     "and its shadow differ\n",
			     what, torn);
	SK_CHECK_EQ(got, expected);
	SK_CHECK_EQ(torn, 0);
}

// Whether L has a reader side (SharedLockable) or is a seqlock.
template <class L, class = void>
struct is_shared : std::false_type {};
template <class L>
struct is_shared<L, std::void_t<decltype(std::declval<L &>().lock_shared())>>
	: std::true_type {};
template <class L>
constexpr bool is_seq = std::is_same_v<L, subject<sk::seqlock>>;

// The plain case: std::lock_guard for the writers and, for a shared
// lockable, readers under std::shared_lock (every other read with
// try_to_lock first), for a seqlock readers in seqlock_read().
template <class L>
void lock_guard_run(const char *what, L &l)
{
	counters c;
	long torn = run(
		[&](int) {
			std::lock_guard<L> g(l);
			bump<is_seq<L>>(c);
		},
		is_shared<L>::value || is_seq<L> ? 2 : 0,
		[&, n = 0]() mutable {
			if constexpr (is_seq<L>) {
				(void)n;
				return seq_consistent(l, c);
			} else if constexpr (is_shared<L>::value) {
				std::shared_lock<L> r(l, std::defer_lock);
				if (!(n++ & 1) || !r.try_lock())
					r.lock();
				return consistent(c);
			} else {
				(void)n;
				return true;
			}
		});
	check(what, c, writers() * iterations(), torn);
}

} // namespace stress

#endif // CPP_LOCK_STRESS_HPP
