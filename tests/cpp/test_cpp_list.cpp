// SPDX-License-Identifier: MIT
//
// test_cpp_list.cpp - sk::rcu_list (scalekit/list.hpp).
//
// What is proven, one function each:
//   - push_front / push_back / insert_before / insert_after put elements
//     where they say, and readers' range-for walks them in list order;
//   - erase and replace unlink as the C calls do: an iterator standing on
//     an erased element goes on into the list;
//   - const walks, iterator -> const_iterator, post-increment, operator->
//     and standard algorithms (std::find_if, std::distance) work;
//   - the updater's locked() walk lets the body erase the element it
//     stands on;
//   - the pointer to member gives offsetof's offset, also for a member of
//     a class that is not standard-layout;
//   - a stress: reader std::threads walk the sorted list inside
//     sk_rcu_read_lock() and check that every element they reach is live
//     (not poisoned), intact and in order, that every element no updater
//     touches is seen in every walk, and that walks end; updaters insert,
//     erase and replace under a mutex and free through sk_call_rcu() or
//     after sk_synchronize_rcu().  Run with --broken, the same stress
//     poisons erased elements without a grace period and MUST fail with
//     "readers saw a freed object" (the CTest test_cpp_list_broken).
#include "scalekit/list.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iterator>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "sk_test_retire.hpp"

namespace {

struct item : sk_test_retiree {
	int key;
	unsigned long gen;
	unsigned long payload; // check(key, gen), set before publication
	sk_list_head link{};

	item(int k, unsigned long g) : key(k), gen(g), payload(check(k, g))
	{
	}
	static unsigned long check(int k, unsigned long g)
	{
		return static_cast<unsigned long>(k) * 1000003UL + g;
	}
};

using list_t = sk::rcu_list<item, &item::link>;

static_assert(!std::is_copy_constructible_v<list_t>);
static_assert(!std::is_copy_assignable_v<list_t>);
static_assert(!std::is_move_constructible_v<list_t>);
static_assert(std::is_nothrow_default_constructible_v<list_t>);

// The keys of l, walked as a reader.
std::vector<int> keys(const list_t &l)
{
	std::vector<int> out;

	sk_rcu_read_lock();
	for (const item &it : l)
		out.push_back(it.key);
	sk_rcu_read_unlock();
	return out;
}

void expect_keys(const list_t &l, std::vector<int> want)
{
	std::vector<int> got = keys(l);

	sk_test_check_ints(got.data(), static_cast<int>(got.size()),
			   want.data(), static_cast<int>(want.size()));
}

void list_push_and_insert_order(void)
{
	list_t l;
	item a(1, 0), b(2, 0), c(3, 0), d(4, 0), e(5, 0);

	SK_CHECK(l.empty());
	expect_keys(l, {});
	l.push_back(b);
	l.push_front(a);
	l.push_back(d);
	SK_CHECK(!l.empty());
	expect_keys(l, { 1, 2, 4 });
	l.insert_after(b, c);
	expect_keys(l, { 1, 2, 3, 4 });
	l.insert_before(a, e);
	expect_keys(l, { 5, 1, 2, 3, 4 });
}

void list_erase_and_replace(void)
{
	list_t l;
	item a(1, 0), b(2, 0), c(3, 0), b2(2, 1);

	l.push_back(a);
	l.push_back(b);
	l.push_back(c);
	sk_rcu_read_lock();
	list_t::iterator on_b = std::next(l.begin());
	l.erase(b); // a reader standing on b goes on to c
	SK_CHECK_EQ(on_b->key, 2);
	++on_b;
	SK_CHECK(on_b != l.end());
	SK_CHECK_EQ(on_b->key, 3);
	sk_rcu_read_unlock();
	expect_keys(l, { 1, 3 });
	l.replace(a, b2);
	expect_keys(l, { 2, 3 });
	sk_rcu_read_lock();
	SK_CHECK_EQ(l.begin()->gen, 1);
	sk_rcu_read_unlock();
	l.erase(b2);
	l.erase(c);
	SK_CHECK(l.empty());
	expect_keys(l, {});
}

void list_const_walks_and_algorithms(void)
{
	list_t l;
	item it[4] = { item(10, 0), item(20, 0), item(30, 0), item(40, 0) };

	for (item &x : it)
		l.push_back(x);
	const list_t &cl = l;

	sk_rcu_read_lock();
	list_t::const_iterator ci = l.begin(); // iterator -> const_iterator
	SK_CHECK(ci == cl.cbegin());
	SK_CHECK_EQ(std::distance(cl.begin(), cl.end()), 4);
	auto found = std::find_if(l.begin(), l.end(),
				  [](const item &x) { return x.key == 30; });
	SK_CHECK(found != l.end());
	SK_CHECK(&*found == &it[2]);
	list_t::iterator pi = l.begin();
	list_t::iterator was = pi++;
	SK_CHECK_EQ(was->key, 10);
	SK_CHECK_EQ(pi->key, 20);
	int sum = 0;
	for (const item &x : cl)
		sum += x.key;
	SK_CHECK_EQ(sum, 100);
	sk_rcu_read_unlock();
	for (item &x : l.locked())
		l.erase(x);
	SK_CHECK(l.empty());
}

void list_locked_walk_may_erase_current(void)
{
	list_t l;
	std::vector<item *> gone;

	for (int k = 0; k < 10; k++)
		l.push_back(*new item(k, 0));
	for (item &x : l.locked()) {
		if (x.key % 2 == 0) {
			l.erase(x);
			gone.push_back(&x);
		}
	}
	expect_keys(l, { 1, 3, 5, 7, 9 });
	for (item &x : l.locked()) {
		l.erase(x);
		gone.push_back(&x);
	}
	SK_CHECK(l.empty());
	sk_synchronize_rcu();
	for (item *x : gone)
		delete x;
	SK_CHECK_EQ(gone.size(), 10);
}

struct plain {
	char pad[3];
	double d;
	sk_list_head link;
};

void list_member_offset_is_offsetof(void)
{
	item x(7, 0);

	SK_CHECK_EQ(sk::detail::member_offset(&plain::link),
		    offsetof(plain, link));
	SK_CHECK_EQ(sk::detail::member_offset(&plain::d), offsetof(plain, d));
	// item is not standard-layout (members in base and derived class).
	SK_CHECK(sk::detail::owner_of(&x.link, &item::link) == &x);
	SK_CHECK_EQ(sk::detail::member_offset(&item::link),
		    reinterpret_cast<char *>(&x.link) -
			    reinterpret_cast<char *>(&x));
}

// ---- stress ------------------------------------------------------------

constexpr int nslots = 64; // updated keys: 0, 2, ..., 126; stable: odd

struct stress {
	bool broken = false;
	unsigned long updates = 0;
	list_t list;
	std::mutex lock;	       // the updaters' lock
	item *live[nslots] = {};       // guarded by lock
	std::atomic<bool> stop{ false };
	std::atomic<unsigned long> walks{ 0 }, poisoned{ 0 }, corrupt{ 0 },
		unordered{ 0 }, missing{ 0 }, runaway{ 0 };
};

void reader(stress &s)
{
	while (!s.stop.load(std::memory_order_relaxed)) {
		int last = -1, n = 0, stable = 0;

		sk_rcu_read_lock();
		for (const item &it : s.list) {
			if (it.freed())
				s.poisoned++;
			if (it.payload != item::check(it.key, it.gen))
				s.corrupt++;
			if (it.key <= last)
				s.unordered++;
			stable += it.key % 2;
			last = it.key;
			if (++n > 8 * nslots) {
				s.runaway++;
				break;
			}
		}
		sk_rcu_read_unlock();
		if (n <= 8 * nslots && stable != nslots)
			s.missing++;
		s.walks++;
	}
}

// Insert n at its place in the sorted list (the caller holds s.lock).
void insert_sorted(stress &s, item &n)
{
	for (item &x : s.list.locked()) {
		if (x.key > n.key) {
			s.list.insert_before(x, n);
			return;
		}
	}
	s.list.push_back(n);
}

void updater(stress &s, std::uint64_t seed)
{
	sk_test_retirer<item> bin(s.broken, seed);
	std::uint64_t rng = seed;

	for (unsigned long i = 0; i < s.updates; i++) {
		int slot = static_cast<int>(sk_test_rand(&rng) % nslots);
		unsigned op = static_cast<unsigned>(sk_test_rand(&rng) % 3);
		item *old;
		{
			std::lock_guard<std::mutex> g(s.lock);

			old = s.live[slot];
			if (!old) {
				s.live[slot] = new item(2 * slot, 0);
				insert_sorted(s, *s.live[slot]);
			} else if (op == 0) {
				s.live[slot] = new item(2 * slot, old->gen + 1);
				s.list.replace(*old, *s.live[slot]);
			} else {
				s.list.erase(*old);
				s.live[slot] = nullptr;
			}
		}
		if (old)
			bin.retire(old);
	}
}

// One run; returns the number of poisoned sightings.
unsigned long run_stress(bool broken, std::uint64_t seed)
{
	stress s;
	std::vector<std::thread> threads;

	s.broken = broken;
	s.updates = 200000 / sk_test_slow();
	for (int k = 1; k < 2 * nslots; k += 2)
		insert_sorted(s, *new item(k, 0));
	for (int i = 0; i < 2; i++)
		threads.emplace_back(reader, std::ref(s));
	std::thread u1(updater, std::ref(s), seed * 31 + 1);
	std::thread u2(updater, std::ref(s), seed * 31 + 2);
	u1.join();
	u2.join();
	s.stop = true;
	for (std::thread &t : threads)
		t.join();
	sk_rcu_barrier(); // the sk_call_rcu() frees
	fprintf(stderr,
		"  list%s: %lu walks; failures: %lu poisoned, %lu corrupt, "
		"%lu out of order, %lu missing, %lu runaway\n",
		broken ? " BROKEN" : "", s.walks.load(), s.poisoned.load(),
		s.corrupt.load(), s.unordered.load(), s.missing.load(),
		s.runaway.load());
	sk_test_check_no_freed_seen(s.poisoned);
	SK_CHECK_EQ(s.corrupt + s.unordered + s.missing + s.runaway, 0);
	SK_CHECK_GT(s.walks, 0);
	// The list equals the model: the stable keys and the live slots.
	int n = 0, slots = 0;
	for (item &x : s.list.locked()) {
		SK_CHECK(x.key % 2 == 1 || s.live[x.key / 2] == &x);
		s.list.erase(x);
		delete &x;
		n++;
	}
	for (item *x : s.live)
		slots += x != nullptr;
	SK_CHECK_EQ(n, nslots + slots);
	return s.poisoned;
}

} // namespace

int main(int argc, char **argv)
{
	if (sk_test_stress_main(argc, argv, run_stress))
		return sk_test_report();
	SK_RUN(list_push_and_insert_order);
	SK_RUN(list_erase_and_replace);
	SK_RUN(list_const_walks_and_algorithms);
	SK_RUN(list_locked_walk_may_erase_current);
	SK_RUN(list_member_offset_is_offsetof);
	SK_RUN(stress_readers_updaters);
	return sk_test_report();
}
