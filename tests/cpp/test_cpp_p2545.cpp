// SPDX-License-Identifier: MIT
//
// test_cpp_p2545.cpp - a program written against P2545's interface only
// (C++26 <rcu>), the way a user would write it with std::.  The proof that
// "replace std:: with sk::" is all it takes: compared with the std version
// of this program, exactly two lines differ, marked "std:" below (the
// header, and the namespace the RCU names come from).  Everything else is
// standard C++17: std::atomic with acquire/release publication as in
// P2545's examples, std::scoped_lock on the domain, std::thread.
//
// The harness (sk_test.hpp: SK_CHECK, SK_RUN) is the test's, not part of
// the program under test.
//
// What it does: a read-mostly configuration object, readers that check it
// is consistent inside regions of RCU protection, and updaters that
// publish a new one and reclaim the old one the three ways P2545 offers:
// obj->retire(), rcu_retire(p), and rcu_synchronize() then delete.  At
// the end, rcu_barrier(), and every replaced object must have been
// destroyed exactly once.
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "scalekit/rcu.hpp" // std: #include <rcu>
namespace rcu_ns = sk;	    // std: namespace rcu_ns = std;

#include "sk_test.hpp"

namespace {

std::atomic<long> destroyed{0};

// The read-mostly object: b is always 2 * a + 1.
struct config : rcu_ns::rcu_obj_base<config> {
	long a;
	long b;

	explicit config(long v) : a(v), b(2 * v + 1)
	{
	}

	~config()
	{
		destroyed.fetch_add(1, std::memory_order_relaxed);
	}
};

// Side data without a base class: reclaimed with rcu_retire().
struct limits {
	long lo;
	long hi; // always lo + 10

	~limits()
	{
		destroyed.fetch_add(1, std::memory_order_relaxed);
	}
};

std::atomic<config *> current_config{nullptr};
std::atomic<limits *> current_limits{nullptr};
std::atomic<bool> done{false};
std::atomic<long> bad_reads{0};

void reader()
{
	rcu_ns::rcu_domain &dom = rcu_ns::rcu_default_domain();

	while (!done.load(std::memory_order_relaxed)) {
		std::scoped_lock lk(dom);
		config *c = current_config.load(std::memory_order_acquire);
		limits *l = current_limits.load(std::memory_order_acquire);

		if (c->b != 2 * c->a + 1 || l->hi != l->lo + 10)
			bad_reads.fetch_add(1, std::memory_order_relaxed);
	}
}

void updater(long first, long n)
{
	for (long i = 0; i < n; i++) {
		long v = first + i;
		config *old = current_config.exchange(
			new config(v), std::memory_order_acq_rel);

		switch (i % 3) {
		case 0:
			old->retire();
			break;
		case 1:
			rcu_ns::rcu_retire(old);
			break;
		default:
			rcu_ns::rcu_synchronize();
			delete old;
		}
		limits *ol = current_limits.exchange(new limits{v, v + 10},
						     std::memory_order_acq_rel);
		rcu_ns::rcu_retire(ol, std::default_delete<limits>(),
				   rcu_ns::rcu_default_domain());
	}
}

void config_readers_and_updaters()
{
	const long per = 3000 / static_cast<long>(sk_test_slow());
	std::vector<std::thread> readers;

	destroyed.store(0);
	current_config.store(new config(0), std::memory_order_release);
	current_limits.store(new limits{0, 10}, std::memory_order_release);
	for (int r = 0; r < 2; r++)
		readers.emplace_back(reader);
	std::thread u1(updater, 1, per);
	std::thread u2(updater, 1000000, per);
	u1.join();
	u2.join();
	done.store(true);
	for (auto &t : readers)
		t.join();

	rcu_ns::rcu_barrier(); // every retire() and rcu_retire() has run
	SK_CHECK_EQ(destroyed.load(), 2 * 2 * per); // config and limits
	SK_CHECK_EQ(bad_reads.load(), 0);

	delete current_config.exchange(nullptr);
	delete current_limits.exchange(nullptr);
}

void unique_lock_and_synchronize()
{
	rcu_ns::rcu_domain &dom = rcu_ns::rcu_default_domain();
	config *c = new config(5);

	{
		std::unique_lock<rcu_ns::rcu_domain> lk(dom);
		SK_CHECK_EQ(c->b, 11);
	}
	rcu_ns::rcu_synchronize(dom);
	rcu_ns::rcu_barrier(dom);
	c->retire(std::default_delete<config>(), dom);
	rcu_ns::rcu_barrier();
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(config_readers_and_updaters);
	SK_RUN(unique_lock_and_synchronize);
	return sk_test_report();
}
