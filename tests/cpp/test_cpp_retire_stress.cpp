// SPDX-License-Identifier: MIT
//
// test_cpp_retire_stress.cpp - readers in sk::rcu_read_guard sections walk
// a few sk::rcu_ptr<node> slots and check every field of the node they
// see, again and again while they hold it; updaters replace nodes and
// retire the old ones through every path of scalekit/rcu.hpp in turn:
//   0  obj->retire()                       (stored D, default value)
//   1  obj->retire(node_deleter{...})      (stored D, with state)
//   2  sk::rcu_retire(p, node_deleter{...}) (allocated node)
//   3  sk::rcu_retire(p)                   (default_delete: sk_defer_rcu())
//   4  sk::rcu_retire(p) inside a guard    (default_delete: allocated node)
// The destructor poisons the node before its memory goes, so a reader
// holding a node freed too early sees the poison even without ASan.  At
// the end rcu_barrier(), and every node must have been deleted exactly
// once; every stateful deleter must have run with its own state.
//
// Broken twin: `test_cpp_retire_stress --broken` calls the deleter at once
// instead of retiring (the bug RCU exists to prevent).  A reader must then
// report "ERROR: a reader saw a poisoned node"; CTest checks that it does
// (tests/cpp.cmake).  In that mode freed nodes go to a graveyard freed at
// exit, so that the poison stays readable and the sanitizers report
// nothing of their own: the message is the test's in every build.
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "scalekit/rcu.hpp"
#include "sk_test.hpp"

namespace {

constexpr int nslots = 4;
constexpr int nreaders = 3;
constexpr int nupdaters = 2;
constexpr int spin_checks = 200;       // re-checks of a node per section
constexpr unsigned long updates = 100000; // per updater (normal mode)
constexpr unsigned long broken_cap = 400000; // per updater (twin)
constexpr std::uint64_t magic = 0x600dc0de600dc0deULL;
constexpr std::uint64_t poison = 0xdeaddeaddeaddeadULL;
constexpr std::uint64_t mul = 0x9e3779b97f4a7c15ULL;

bool broken;				 // --broken: free at once
std::atomic<bool> stop{false};		 // readers stop
std::atomic<unsigned long> poisoned{0};	 // reader reports
std::atomic<unsigned long> double_deletes{0};
std::atomic<unsigned long> stateful_runs{0}; // deleters with state
std::atomic<unsigned long> state_lost{0};    // ... that got a wrong node
std::atomic<std::uint64_t> next_id{0};
std::unique_ptr<std::atomic<unsigned char>[]> deleted; // per node id

std::mutex grave_lock;		// the twin's freed nodes
std::vector<void *> graveyard;

struct node;

// Stateful when count is set: it must run on the node it was given for.
struct node_deleter {
	std::atomic<unsigned long> *count = nullptr;
	std::uint64_t expect_id = 0;

	void operator()(node *n) const;
};

struct node : sk::rcu_obj_base<node, node_deleter> {
	// Atomic (relaxed) so that the poisoning stores are neither removed
	// as dead stores in a destructor nor a data race in the twin.
	std::atomic<std::uint64_t> id, a, b, m;

	explicit node(std::uint64_t i) : id(i), a(i * mul), b(~i), m(magic)
	{
	}

	~node()
	{
		std::uint64_t i = id.load(std::memory_order_relaxed);

		if (deleted[i].fetch_add(1, std::memory_order_relaxed) != 0)
			double_deletes.fetch_add(1);
		id.store(poison, std::memory_order_relaxed);
		a.store(poison, std::memory_order_relaxed);
		b.store(poison, std::memory_order_relaxed);
		m.store(poison, std::memory_order_relaxed);
	}

	bool intact() const
	{
		std::uint64_t i = id.load(std::memory_order_relaxed);

		return m.load(std::memory_order_relaxed) == magic &&
		       a.load(std::memory_order_relaxed) == i * mul &&
		       b.load(std::memory_order_relaxed) == ~i;
	}

	static void *operator new(std::size_t sz)
	{
		return ::operator new(sz);
	}

	static void operator delete(void *p, std::size_t)
	{
		if (!broken) {
			::operator delete(p);
			return;
		}
		std::lock_guard<std::mutex> lk(grave_lock);
		graveyard.push_back(p);
	}
};

void node_deleter::operator()(node *n) const
{
	if (count) {
		if (n->id.load(std::memory_order_relaxed) != expect_id)
			state_lost.fetch_add(1);
		count->fetch_add(1);
	}
	delete n;
}

sk::rcu_ptr<node> slots[nslots];

void reader(std::uint64_t seed)
{
	std::uint64_t rng = seed;

	while (!stop.load(std::memory_order_relaxed)) {
		sk::rcu_read_guard g;
		node *n = slots[sk_test_rand(&rng) % nslots].load();

		// Hold the node across a spin of re-checks: a node freed
		// meanwhile shows its poison here.
		for (int k = 0; k < spin_checks; k++) {
			if (n->intact())
				continue;
			if (poisoned.fetch_add(1) == 0)
				std::fprintf(stderr,
					     "ERROR: a reader saw a poisoned "
					     "node (id %#" PRIx64 ", magic %#"
					     PRIx64 ")\n",
					     n->id.load(), n->m.load());
			break;
		}
	}
}

void retire_old(node *old, unsigned long i)
{
	std::uint64_t oid = old->id.load(std::memory_order_relaxed);

	if (broken) { // the bug: no grace period
		node_deleter{&stateful_runs, oid}(old);
		return;
	}
	switch (i % 5) {
	case 0:
		old->retire();
		break;
	case 1:
		old->retire(node_deleter{&stateful_runs, oid});
		break;
	case 2:
		sk::rcu_retire(old, node_deleter{&stateful_runs, oid});
		break;
	case 3:
		sk::rcu_retire(old);
		break;
	default: {
		sk::rcu_read_guard g;
		sk::rcu_retire(old);
	}
	}
}

// Returns how many stateful deleters it scheduled.
unsigned long updater(std::uint64_t seed, unsigned long n)
{
	std::uint64_t rng = seed;
	unsigned long stateful = 0, i;

	for (i = 0; i < n; i++) {
		if (broken && poisoned.load(std::memory_order_relaxed))
			break;
		node *fresh = new node(next_id.fetch_add(1));
		node *old = slots[sk_test_rand(&rng) % nslots].exchange(fresh);

		if (broken || i % 5 == 1 || i % 5 == 2)
			stateful++;
		retire_old(old, i);
	}
	return stateful;
}

void readers_and_updaters_retire_safely()
{
	unsigned slow = sk_test_slow();
	unsigned long per = broken ? broken_cap : updates / slow;
	std::size_t ids = nslots + nupdaters * per;
	std::atomic<unsigned long> expect_stateful{0};
	std::vector<std::thread> threads;

	deleted.reset(new std::atomic<unsigned char>[ids]());
	for (auto &s : slots)
		s.store(new node(next_id.fetch_add(1)));
	for (int r = 0; r < nreaders; r++)
		threads.emplace_back(reader, sk_t_seed + 17 * (r + 1));
	for (int u = 0; u < nupdaters; u++)
		threads.emplace_back([&, u] {
			expect_stateful.fetch_add(
				updater(sk_t_seed ^ (u + 1) * mul, per));
		});
	for (std::size_t t = nreaders; t < threads.size(); t++)
		threads[t].join();
	stop.store(true);
	for (int r = 0; r < nreaders; r++)
		threads[r].join();

	// What the readers could still see goes too, then every callback.
	for (auto &s : slots)
		s.exchange(nullptr)->retire();
	sk::rcu_barrier();

	std::uint64_t made = next_id.load();
	unsigned long not_once = 0;

	for (std::uint64_t i = 0; i < made; i++)
		if (deleted[i].load() != 1)
			not_once++;
	fprintf(stderr, "    %" PRIu64 " nodes, %lu stateful deleters\n",
		made, stateful_runs.load());
	SK_CHECK_EQ(poisoned.load(), 0);
	SK_CHECK_EQ(not_once, 0);
	SK_CHECK_EQ(double_deletes.load(), 0);
	SK_CHECK_EQ(state_lost.load(), 0);
	SK_CHECK_EQ(stateful_runs.load(), expect_stateful.load());

	for (void *p : graveyard)
		::operator delete(p);
	graveyard.clear();
	deleted.reset();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && std::strcmp(argv[1], "--broken") == 0) {
		broken = true;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(readers_and_updaters_retire_safely);
	return sk_test_report();
}
