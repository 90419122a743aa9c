// SPDX-License-Identifier: MIT
//
// test_cpp_srcu.cpp - sk::srcu_domain and sk::srcu_read_guard
// (scalekit/srcu.hpp): construction and release, close()'s answers, the
// destructor's refusal (a death test), guards that nest and move between
// threads, grace periods that wait for guards, callbacks with lambdas,
// barrier, polling, and the independence of two domains.
//
// Built with SK_CXX_TEST_BROKEN (tests/cpp.cmake: the broken twin), the
// readers of the concurrency tests take a guard that enters no section;
// each of those tests must then fail, and only they run.
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

#include <unistd.h>

#include "scalekit/srcu.hpp"
#include "sk_test.hpp"

namespace {

// Exit status of a death-test child whose misuse was not caught.
constexpr int child_returned = 3;

// Yields a reader makes while it could be overtaken by a broken wait.
constexpr int overtake_yields = 50000;

#ifdef SK_CXX_TEST_BROKEN
constexpr bool broken = true;
// The broken twin's guard: holds the domain, enters no section.
struct reader_guard {
	explicit reader_guard(sk::srcu_domain &) noexcept {}
};
#else
constexpr bool broken = false;
using reader_guard = sk::srcu_read_guard;
#endif

// Spin (yielding) until flag reads nonzero.  Every flag of this file is
// set by a release store and read here with acquire (pairs with it): what
// the setter did before the store is visible after the return.  The
// fetch_adds of counters are relaxed: they are read after a join() or a
// barrier(), which order them.
void wait_for(const std::atomic<int> &flag)
{
	while (!flag.load(std::memory_order_acquire))
		std::this_thread::yield();
}

// Yield up to overtake_yields times, or until stop reads nonzero.
void linger(const std::atomic<int> &stop)
{
	for (int i = 0; i < overtake_yields &&
			!stop.load(std::memory_order_acquire);
	     i++)
		std::this_thread::yield();
}

// ---- construction, close(), destruction ------------------------------------

void child_destroy_inside_own_section()
{
	auto *d = new sk::srcu_domain;
	sk::srcu_read_guard g(*d);

	delete d; // must print and abort: the guard outlives the domain
	_exit(child_returned);
}

void destructor_aborts_inside_own_section()
{
	sk_test_expect_abort(child_destroy_inside_own_section, 30,
			     "sk::srcu_domain::~srcu_domain",
			     "sk_srcu_destroy() returned -16");
}

void domain_ctor_dtor()
{
	for (int round = 0; round < 3; round++) {
		sk::srcu_domain d;

		SK_CHECK(d.native() != nullptr);
		SK_CHECK_EQ(reinterpret_cast<std::uintptr_t>(d.native()) %
				    SK_CACHELINE,
			    0);
		sk::srcu_read_guard g(d);
		SK_CHECK(g.index() >= 0);
		SK_CHECK(g.owns_lock());
		SK_CHECK(g.domain() == &d);
		SK_CHECK(sk_srcu_read_lock_held(d.native()));
	}
	// Heap: C++17's aligned new keeps struct sk_srcu's 64-byte alignment.
	auto p = std::make_unique<sk::srcu_domain>();
	SK_CHECK_EQ(reinterpret_cast<std::uintptr_t>(p->native()) % SK_CACHELINE,
		    0);
	{
		sk::srcu_read_guard g(*p);
	}
	p->synchronize();
	p->synchronize_expedited();
	p->barrier();
	p.reset();
}

void close_refuses_while_a_guard_is_held()
{
	sk::srcu_domain d;
	auto g = std::make_unique<sk::srcu_read_guard>(d);

	SK_CHECK_EQ(d.close(), -EBUSY);
	{
		sk::srcu_read_guard inner(d); // still open and usable
		SK_CHECK(inner.owns_lock());
	}
	g.reset();
	SK_CHECK_EQ(d.close(), 0);
	SK_CHECK_EQ(d.close(), 0); // idempotent; the destructor does nothing
}

// A thread that holds a guard of d until told to leave.
struct holder {
	std::atomic<int> inside{0}, leave{0};
	std::thread t;

	explicit holder(sk::srcu_domain &d)
		: t([this, &d] {
			  sk::srcu_read_guard g(d);
			  inside.store(1, std::memory_order_release);
			  wait_for(leave);
		  })
	{
		wait_for(inside);
	}
	void release()
	{
		leave.store(1, std::memory_order_release);
		t.join();
	}
};

void close_refuses_with_callbacks_or_polls_pending()
{
	sk::srcu_domain d;
	std::atomic<int> ran{0};
	holder h(d);

	d.call(&ran, [](std::atomic<int> *r) {
		r->fetch_add(1, std::memory_order_relaxed);
	});
	unsigned long cookie = d.start_poll();
	SK_CHECK_EQ(d.close(), -EBUSY); // reader, callback and poll pending
	SK_CHECK_EQ(ran.load(), 0);
	SK_CHECK(!d.poll(cookie));
	h.release();
	d.barrier();
	SK_CHECK_EQ(ran.load(), 1);
	while (!d.poll(cookie))
		std::this_thread::yield();
	SK_CHECK_EQ(d.close(), 0);
}

void destructor_runs_pending_callbacks()
{
	std::atomic<int> ran{0};
	{
		sk::srcu_domain d;
		holder h(d);

		for (int i = 0; i < 3; i++)
			d.call(&ran, [](std::atomic<int> *r) {
				r->fetch_add(1, std::memory_order_relaxed);
			});
		d.start_poll();
		h.release();
	} // the destructor runs them (barrier) and waits for the poll
	SK_CHECK_EQ(ran.load(), 3);
}

// ---- guards -----------------------------------------------------------------

void guards_nest_and_unlock_once()
{
	sk::srcu_domain a, b;
	sk::srcu_read_guard g1(a);
	{
		sk::srcu_read_guard g2(a);
		sk::srcu_read_guard g3(b);

		SK_CHECK(g2.index() >= 0);
		SK_CHECK(sk_srcu_read_lock_held(b.native()));
		g3.unlock();
		g3.unlock(); // idempotent
		SK_CHECK(!g3.owns_lock());
		SK_CHECK_EQ(g3.index(), -1);
		SK_CHECK(!sk_srcu_read_lock_held(b.native()));
		SK_CHECK(sk_srcu_read_lock_held(a.native()));
	}
	SK_CHECK(sk_srcu_read_lock_held(a.native()));
	g1.unlock();
	SK_CHECK(!sk_srcu_read_lock_held(a.native()));
	b.synchronize(); // nothing of b is open any more
}

void moved_from_guard_releases_nothing()
{
	sk::srcu_domain d;
	sk::srcu_read_guard g1(d);
	int idx = g1.index();
	sk::srcu_read_guard g2(std::move(g1));

	SK_CHECK(!g1.owns_lock()); // NOLINT(bugprone-use-after-move)
	SK_CHECK_EQ(g1.index(), -1);
	SK_CHECK_EQ(g2.index(), idx);
	g1.unlock(); // nothing: an extra unlock would abort (unbalanced)

	// Move assignment ends the target's own section first.
	sk::srcu_read_guard g3(d);
	g3 = std::move(g2);
	SK_CHECK_EQ(g3.index(), idx);
	sk::srcu_read_guard &alias = g3;
	g3 = std::move(alias); // self-move keeps the section
	SK_CHECK(g3.owns_lock());
	g3.unlock();
	SK_CHECK(!sk_srcu_read_lock_held(d.native()));
	d.synchronize();
}

void guard_moved_to_another_thread_ends_there()
{
	sk::srcu_domain d;
	sk::srcu_read_guard g(d);
	std::atomic<int> ended{0};

	std::thread t([g = std::move(g), &ended]() mutable {
		SK_CHECK(g.owns_lock());
		g.unlock(); // the section ends on this thread
		ended.store(1, std::memory_order_release);
	});
	SK_CHECK(!g.owns_lock()); // NOLINT(bugprone-use-after-move)
	t.join();
	SK_CHECK_EQ(ended.load(), 1);
	SK_CHECK(!sk_srcu_read_lock_held(d.native()));
	d.synchronize(); // returns: the section ended on the other thread
	SK_CHECK_EQ(d.close(), 0);
}

// ---- grace periods and callbacks against readers (the twin breaks these) ----

// A reader thread that holds a guard of d (reader_guard: none in the
// twin) from its construction until it was told to leave and lingered
// (overtake_yields, or until stop), and stores left = 1 last in its
// section.  A wait for d's grace period that returned, or a callback of
// d that runs, after the section must read left == 1: the section's store
// is ordered before the unlock (SRCU-C), and the grace period's exit
// barrier orders it before what follows.
struct lingering_reader {
	std::atomic<int> inside{0}, go{0}, stop{0};
	int left = 0; // plain int, accessed atomically (relaxed)
	std::thread t;

	explicit lingering_reader(sk::srcu_domain &d)
		: t([this, &d] {
			  reader_guard g(d);
			  inside.store(1, std::memory_order_release);
			  wait_for(go);
			  linger(stop);
			  // Relaxed: the section's end (SRCU-C) and the grace
			  // period (SRCU-D) order it before the waiter's load.
			  __atomic_store_n(&left, 1, __ATOMIC_RELAXED);
		  })
	{
		wait_for(inside);
	}
	void leave() { go.store(1, std::memory_order_release); }
	int left_seen() const { return __atomic_load_n(&left, __ATOMIC_RELAXED); }
	void join()
	{
		stop.store(1, std::memory_order_release);
		t.join();
	}
};

// Tell the reader to leave, wait(), then check that the wait returned
// after the reader's section; join it.
template <class W>
void wait_for_the_reader(lingering_reader &r, const char *what, W wait)
{
	r.leave();
	wait();
	int seen = r.left_seen();
	if (seen != 1)
		std::fprintf(stderr, "ERROR: %s returned while a "
				     "srcu_read_guard was held\n", what);
	SK_CHECK_EQ(seen, 1);
	r.join();
}

// The reader leaves only after the updater started waiting.
void synchronize_waits_for_a_guard()
{
	sk::srcu_domain d;
	lingering_reader r(d);

	wait_for_the_reader(r, "synchronize()", [&d] { d.synchronize(); });
}

// A callback queued while the reader holds its guard runs after it left.
void call_runs_after_the_guards()
{
	sk::srcu_domain d;
	lingering_reader r(d);
	std::atomic<int> ran{0};
	int seen = -1;
	auto owned = std::make_unique<int>(7); // a move-only callable

	d.call(&seen, [&, owned = std::move(owned)](int *s) {
		*s = r.left_seen() * *owned;
		ran.store(1, std::memory_order_release);
		r.stop.store(1, std::memory_order_release);
	});
	r.leave();
	wait_for(ran);
	if (seen != 7)
		std::fprintf(stderr, "ERROR: call()'s callback ran while a "
				     "srcu_read_guard was held\n");
	SK_CHECK_EQ(seen, 7);
	r.join();
	d.barrier();
}

// The destructor, refused while a reader elsewhere is inside, waits for
// a grace period and then releases the domain.
void destructor_waits_for_a_guard_elsewhere()
{
	auto d = std::make_unique<sk::srcu_domain>();
	lingering_reader r(*d);

	wait_for_the_reader(r, "~srcu_domain()", [&d] { d.reset(); });
}

// ---- the rest -----------------------------------------------------------------

// A callable whose copies and destructions are counted.
struct counted_fn {
	std::atomic<int> *runs, *dtors;
	counted_fn(std::atomic<int> *r, std::atomic<int> *d) : runs(r), dtors(d) {}
	counted_fn(const counted_fn &o) = default;
	~counted_fn() { dtors->fetch_add(1, std::memory_order_relaxed); }
	void operator()(int *x) const
	{
		(*x)++;
		runs->fetch_add(1, std::memory_order_relaxed);
	}
};

// Member function pointers go through std::invoke.
struct tally {
	int n = 0;
	void bump() { n++; }
};

void barrier_waits_for_every_callback()
{
	sk::srcu_domain d;
	std::atomic<int> runs{0}, dtors{0};
	int x = 0;
	tally t;
	const int n = 100;

	for (int i = 0; i < n; i++)
		d.call(&x, counted_fn(&runs, &dtors));
	d.call(&t, &tally::bump);
	d.barrier();
	SK_CHECK_EQ(runs.load(), n);
	SK_CHECK_EQ(x, n);
	SK_CHECK_EQ(t.n, 1);
	// Each node's copy was destroyed with the node, and each temporary.
	SK_CHECK_EQ(dtors.load(), 2 * n);
}

void polling()
{
	sk::srcu_domain d;

	SK_CHECK(d.poll(SK_RCU_COOKIE_COMPLETED));
	unsigned long c1 = d.get_state();
	d.synchronize();
	SK_CHECK(d.poll(c1));
	unsigned long c2 = d.start_poll();
	while (!d.poll(c2))
		std::this_thread::yield();
}

// A reader that never leaves domain a (until the end) delays neither b's
// grace periods nor its callbacks.
void two_domains_are_independent()
{
	sk::srcu_domain a, b;
	holder h(a);
	int x = 0;
	int *p = &x;

	b.synchronize();
	b.synchronize_expedited();
	b.call(&x, [](int *v) { *v = 1; });
	b.barrier();
	SK_CHECK_EQ(x, 1);
	{
		sk::srcu_read_guard g(b);
		SK_CHECK(sk::srcu_dereference(p, b) == &x);
	}
	SK_CHECK_EQ(b.close(), 0);
	SK_CHECK_EQ(a.close(), -EBUSY);
	h.release();
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	if (!broken) { // the twin runs only what its guard breaks
	SK_RUN(destructor_aborts_inside_own_section); // first: fork, no threads yet
	SK_RUN(domain_ctor_dtor);
	SK_RUN(close_refuses_while_a_guard_is_held);
	SK_RUN(close_refuses_with_callbacks_or_polls_pending);
	SK_RUN(destructor_runs_pending_callbacks);
	SK_RUN(guards_nest_and_unlock_once);
	SK_RUN(moved_from_guard_releases_nothing);
	SK_RUN(guard_moved_to_another_thread_ends_there);
	SK_RUN(barrier_waits_for_every_callback);
	SK_RUN(polling);
	SK_RUN(two_domains_are_independent);
	}
	SK_RUN(synchronize_waits_for_a_guard);
	SK_RUN(call_runs_after_the_guards);
	SK_RUN(destructor_waits_for_a_guard_elsewhere);
	return sk_test_report();
}
