// SPDX-License-Identifier: MIT
//
// test_cpp_rhash.cpp - sk::rhash (scalekit/rhash.hpp).
//
// What is proven, one function each:
//   - 8-byte integer keys: insert, insert_unique (-EEXIST), a second
//     insert of one object (-EBUSY), find, erase (-ENOENT the second
//     time), replace (-EINVAL for another key), size;
//   - the other key kinds: std::string and std::string_view keys (the
//     string hash and compare callbacks), 4-byte keys and double keys
//     (std::hash and ==);
//   - range-for over the whole table visits every object once when no
//     resize runs, also through a const table, and std::distance works;
//   - resize, bucket_count and barrier call their C functions;
//   - construction: EINVAL parameters throw std::system_error, a failing
//     allocator std::bad_alloc; rhash_default_params() equals
//     SK_RHASH_PARAMS_DEFAULT (checked where C++20's designated
//     initializers can spell it);
//   - a stress: reader std::threads look keys up (in a table of 8-byte
//     keys and in one of the same objects by std::string name) and walk
//     the first table inside sk_rcu_read_lock() and check that every object they reach is
//     live (not poisoned), intact and has the key they asked for, and
//     that keys no updater touches are always found; updaters insert,
//     erase and replace, freeing through sk_call_rcu() or after
//     sk_synchronize_rcu(), while a resizer thread resizes.  Run with
//     --broken, the same stress poisons erased objects without a grace
//     period and MUST fail with "readers saw a freed object" (the CTest
//     test_cpp_rhash_broken).
#include "scalekit/rhash.hpp"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <iterator>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "sk_test_retire.hpp"

namespace {

struct entry : sk_test_retiree {
	std::uint64_t key;
	unsigned long gen;
	unsigned long value; // check(key, gen), set before insertion
	std::string name;    // name_of(key): the key of a second table
	sk_rhash_node node{};
	sk_rhash_node name_node{};

	entry(std::uint64_t k, unsigned long g)
		: key(k), gen(g), value(check(k, g)), name(name_of(k))
	{
	}
	static unsigned long check(std::uint64_t k, unsigned long g)
	{
		return static_cast<unsigned long>(k) * 2654435761UL + g;
	}
	static std::string name_of(std::uint64_t k)
	{
		return "k" + std::to_string(k); // short: no allocation
	}
};

using table_t = sk::rhash<entry, &entry::node, &entry::key>;
using names_t = sk::rhash<entry, &entry::name_node, &entry::name>;

static_assert(!std::is_copy_constructible_v<table_t>);
static_assert(!std::is_copy_assignable_v<table_t>);
static_assert(!std::is_move_constructible_v<table_t>);

void rhash_u64_insert_find_erase_replace(void)
{
	// Objects first: they outlive the table (its destructor waits for
	// the background resize, which walks them).
	std::deque<entry> es; // entries do not move
	entry dup(14, 1), newer(7 * 6, 1), other(1000, 0);
	table_t t;

	for (std::uint64_t k = 0; k < 100; k++)
		es.emplace_back(k * 7, 0);
	for (entry &e : es)
		SK_CHECK_EQ(t.insert(e), 0);
	SK_CHECK_EQ(t.size(), 100);
	SK_CHECK_EQ(t.insert_unique(dup), -EEXIST);
	SK_CHECK_EQ(t.insert(es[0]), -EBUSY);
	sk_rcu_read_lock();
	for (entry &e : es)
		SK_CHECK(t.find(e.key) == &e);
	SK_CHECK(t.find(3) == nullptr);
	sk_rcu_read_unlock();

	SK_CHECK_EQ(t.erase(es[5]), 0);
	SK_CHECK_EQ(t.erase(es[5]), -ENOENT);
	SK_CHECK_EQ(t.replace(es[6], newer), 0);
	SK_CHECK_EQ(t.replace(newer, other), -EINVAL);
	sk_rcu_read_lock();
	SK_CHECK(t.find(es[5].key) == nullptr);
	SK_CHECK(t.find(es[6].key) == &newer);
	sk_rcu_read_unlock();
	SK_CHECK_EQ(t.size(), 99);
	SK_CHECK(t.native_handle() != nullptr);
	// The destructor frees no object; es and newer outlive the table.
	sk_synchronize_rcu();
}

struct named {
	std::string name;
	int value;
	sk_rhash_node node{};
};
struct viewed {
	std::string_view name;
	int value;
	sk_rhash_node node{};
};
struct small {
	std::int32_t id;
	sk_rhash_node node{};
};
struct real {
	double x;
	sk_rhash_node node{};
};

void rhash_string_small_and_double_keys(void)
{
	named alice{ "alice", 1 }, bob{ "bob", 2 },
		longer{ std::string(100, 'x'), 3 }, alice2{ "alice", 9 },
		bob2{ "bob", 20 };
	viewed va{ alice.name, 1 }, vb{ bob.name, 2 };
	small s1{ -1 }, s2{ 1 << 20 };
	real r1{ 0.5 }, r2{ 1.5 };
	char buf[] = "bob";
	sk::rhash<named, &named::node, &named::name> by_name;
	sk::rhash<viewed, &viewed::node, &viewed::name> by_view;
	sk::rhash<small, &small::node, &small::id> by_id;
	sk::rhash<real, &real::node, &real::x> by_x;

	SK_CHECK_EQ(by_name.insert_unique(alice), 0);
	SK_CHECK_EQ(by_name.insert_unique(bob), 0);
	SK_CHECK_EQ(by_name.insert_unique(longer), 0);
	SK_CHECK_EQ(by_name.insert_unique(alice2), -EEXIST);
	SK_CHECK_EQ(by_view.insert(va), 0);
	SK_CHECK_EQ(by_view.insert(vb), 0);
	SK_CHECK_EQ(by_id.insert(s1), 0);
	SK_CHECK_EQ(by_id.insert(s2), 0);
	SK_CHECK_EQ(by_x.insert(r1), 0);
	SK_CHECK_EQ(by_x.insert(r2), 0);

	sk_rcu_read_lock();
	SK_CHECK(by_name.find(std::string("alice")) == &alice);
	SK_CHECK(by_name.find("bob") == &bob);
	SK_CHECK(by_name.find(std::string(100, 'x')) == &longer);
	SK_CHECK(by_name.find("carol") == nullptr);
	SK_CHECK(by_name.find("") == nullptr);
	SK_CHECK(by_view.find(std::string_view(buf, 3)) == &vb);
	SK_CHECK(by_view.find("alice") == &va);
	SK_CHECK(by_view.find(std::string_view(buf, 2)) == nullptr);
	SK_CHECK(by_id.find(-1) == &s1);
	SK_CHECK(by_id.find(1 << 20) == &s2);
	SK_CHECK(by_id.find(0) == nullptr);
	SK_CHECK(by_x.find(1.5) == &r2);
	SK_CHECK(by_x.find(2.5) == nullptr);
	sk_rcu_read_unlock();

	SK_CHECK_EQ(by_name.replace(bob, bob2), 0);
	SK_CHECK_EQ(by_name.erase(alice), 0);
	sk_rcu_read_lock();
	SK_CHECK(by_name.find("bob") == &bob2);
	SK_CHECK(by_name.find("alice") == nullptr);
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
}

sk_rhash_params fixed_size_params(void)
{
	sk_rhash_params p = sk::rhash_default_params();

	p.automatic_resize = 0; // no resize: each object is walked once
	return p;
}

void rhash_range_for_visits_each_once(void)
{
	std::deque<entry> es; // entries do not move; outlive the table
	table_t t(fixed_size_params());

	for (std::uint64_t k = 0; k < 300; k++)
		es.emplace_back(k, 0);
	for (entry &e : es)
		SK_CHECK_EQ(t.insert(e), 0);
	std::vector<int> seen(es.size(), 0);
	const table_t &ct = t;

	sk_rcu_read_lock();
	for (entry &e : t)
		seen[e.key]++;
	unsigned long sum = 0;
	for (const entry &e : ct)
		sum += e.key;
	SK_CHECK_EQ(std::distance(t.begin(), t.end()), 300);
	table_t::iterator it = t.begin();
	table_t::iterator was = it++;
	SK_CHECK(was != it);
	SK_CHECK(&*was != &*it);
	sk_rcu_read_unlock();
	for (int n : seen)
		SK_CHECK_EQ(n, 1);
	SK_CHECK_EQ(sum, 299 * 300 / 2);
	sk_rcu_read_lock();
	sk::rhash<small, &small::node, &small::id> empty;
	SK_CHECK(empty.begin() == empty.end());
	sk_rcu_read_unlock();
}

void rhash_resize_and_barrier(void)
{
	std::deque<entry> es; // entries do not move; outlive the table
	table_t t(fixed_size_params());

	for (std::uint64_t k = 0; k < 64; k++) {
		es.emplace_back(k, 0);
		SK_CHECK_EQ(t.insert(es.back()), 0);
	}
	SK_CHECK_EQ(t.bucket_count(), 64);
	SK_CHECK_EQ(t.resize(256), 0);
	SK_CHECK_EQ(t.bucket_count(), 256);
	SK_CHECK_EQ(t.resize(3), -EINVAL);
	SK_CHECK_EQ(t.resize(8), 0);
	SK_CHECK_EQ(t.bucket_count(), 8);
	sk_rcu_read_lock();
	for (entry &e : es)
		SK_CHECK(t.find(e.key) == &e);
	sk_rcu_read_unlock();
	t.barrier();
}

void *failing_alloc(std::size_t)
{
	return nullptr;
}

void rhash_construction_errors(void)
{
	sk_rhash_params p = sk::rhash_default_params();
	bool threw = false;

	p.initial_buckets = 3;
	try {
		table_t t(p);
	} catch (const std::system_error &e) {
		threw = true;
		SK_CHECK_EQ(e.code().value(), EINVAL);
	}
	SK_CHECK(threw);
	threw = false;
	p = sk::rhash_default_params();
	p.alloc = failing_alloc;
	try {
		table_t t(p);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	SK_CHECK(threw);
#if __cplusplus >= 202002L
	// C's initializer names only the fields it sets, as C allows.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
	const sk_rhash_params c = SK_RHASH_PARAMS_DEFAULT;
#pragma GCC diagnostic pop
	sk_rhash_params d = sk::rhash_default_params();
	SK_CHECK_EQ(d.initial_buckets, c.initial_buckets);
	SK_CHECK_EQ(d.min_buckets, c.min_buckets);
	SK_CHECK_EQ(d.max_buckets, c.max_buckets);
	SK_CHECK_EQ(d.grow_above_pct, c.grow_above_pct);
	SK_CHECK_EQ(d.shrink_below_pct, c.shrink_below_pct);
	SK_CHECK_EQ(d.automatic_resize, c.automatic_resize);
	SK_CHECK_EQ(d.seed, c.seed);
	SK_CHECK(d.alloc == c.alloc && d.free == c.free);
#endif
}

// ---- stress ------------------------------------------------------------

constexpr int nslots = 64;	     // keys per updater
constexpr int nstable = 64;	     // keys no updater touches
constexpr std::uint64_t stable_base = 1000000;

struct stress {
	bool broken = false;
	unsigned long updates = 0;
	table_t table;
	names_t names; // the same objects by name
	std::atomic<bool> stop{ false }, updaters_done{ false };
	std::atomic<unsigned long> sections{ 0 }, walks{ 0 }, resizes{ 0 },
		poisoned{ 0 }, corrupt{ 0 }, wrong_key{ 0 }, missing{ 0 };
};

// Check one object a reader reached (looking up key, or any key: ~0).
void check_entry(stress &s, const entry &e, std::uint64_t key)
{
	if (e.freed())
		s.poisoned++;
	if (e.value != entry::check(e.key, e.gen) ||
	    e.name != entry::name_of(e.key))
		s.corrupt++;
	if (key != ~std::uint64_t(0) && e.key != key)
		s.wrong_key++;
}

void reader(stress &s, std::uint64_t seed)
{
	std::uint64_t rng = seed;

	while (!s.stop.load(std::memory_order_relaxed)) {
		unsigned long n = s.sections++;

		sk_rcu_read_lock();
		for (int i = 0; i < 8; i++) {
			std::uint64_t r = sk_test_rand(&rng);
			std::uint64_t k = (r & 1)
				? stable_base + r / 2 % nstable
				: (r / 2 % 2) * 1000 + r / 4 % nslots;
			const entry *e = s.table.find(k);

			if (e)
				check_entry(s, *e, k);
			else if (k >= stable_base)
				s.missing++;
			e = s.names.find(entry::name_of(k));
			if (e)
				check_entry(s, *e, k);
			else if (k >= stable_base)
				s.missing++;
		}
		if (n % 16 == 0) {
			std::uint64_t stable_seen = 0;

			for (const entry &e : s.table) {
				check_entry(s, e, ~std::uint64_t(0));
				if (e.key >= stable_base)
					stable_seen |= 1ULL
						<< (e.key - stable_base);
			}
			if (stable_seen != ~std::uint64_t(0))
				s.missing++;
			s.walks++;
		}
		sk_rcu_read_unlock();
	}
}

// Updater u owns keys u * 1000 + [0, nslots): no lock among updaters.
void updater(stress &s, int u, std::uint64_t seed)
{
	sk_test_retirer<entry> bin(s.broken, seed);
	std::uint64_t rng = seed;
	entry *live[nslots] = {};

	for (unsigned long i = 0; i < s.updates; i++) {
		int slot = static_cast<int>(sk_test_rand(&rng) % nslots);
		unsigned op = static_cast<unsigned>(sk_test_rand(&rng) % 3);
		std::uint64_t k = static_cast<std::uint64_t>(u) * 1000 + slot;
		entry *old = live[slot];

		if (!old) {
			live[slot] = new entry(k, 0);
			SK_CHECK_EQ(op ? s.table.insert(*live[slot])
				       : s.table.insert_unique(*live[slot]),
				    0);
			SK_CHECK_EQ(s.names.insert_unique(*live[slot]), 0);
		} else if (op == 0) {
			live[slot] = new entry(k, old->gen + 1);
			SK_CHECK_EQ(s.table.replace(*old, *live[slot]), 0);
			SK_CHECK_EQ(s.names.replace(*old, *live[slot]), 0);
		} else {
			SK_CHECK_EQ(s.table.erase(*old), 0);
			SK_CHECK_EQ(s.names.erase(*old), 0);
			live[slot] = nullptr;
		}
		if (old)
			bin.retire(old);
	}
	for (entry *&e : live) {
		if (e) {
			SK_CHECK_EQ(s.table.erase(*e), 0);
			SK_CHECK_EQ(s.names.erase(*e), 0);
			bin.retire(e);
		}
	}
}

void resizer(stress &s)
{
	unsigned long sizes[] = { 16, 512, 4, 128 };

	for (unsigned i = 0; !s.updaters_done.load(); i++) {
		SK_CHECK_EQ(s.table.resize(sizes[i % 4]), 0);
		SK_CHECK_EQ(s.names.resize(sizes[(i + 1) % 4]), 0);
		s.resizes++;
		sk_test_sleep_ms(1);
	}
}

// One run; returns the number of poisoned sightings.
unsigned long run_stress(bool broken, std::uint64_t seed)
{
	stress s;
	std::vector<entry *> stable;

	s.broken = broken;
	s.updates = 200000 / sk_test_slow();
	for (int i = 0; i < nstable; i++) {
		stable.push_back(new entry(stable_base + i, 0));
		SK_CHECK_EQ(s.table.insert(*stable.back()), 0);
		SK_CHECK_EQ(s.names.insert(*stable.back()), 0);
	}
	std::thread r1(reader, std::ref(s), seed * 17 + 1);
	std::thread r2(reader, std::ref(s), seed * 17 + 2);
	std::thread rs(resizer, std::ref(s));
	std::thread u0(updater, std::ref(s), 0, seed * 31 + 1);
	std::thread u1(updater, std::ref(s), 1, seed * 31 + 2);
	u0.join();
	u1.join();
	s.updaters_done = true;
	rs.join();
	s.stop = true;
	r1.join();
	r2.join();
	sk_rcu_barrier(); // the sk_call_rcu() frees
	s.table.barrier();
	s.names.barrier();
	fprintf(stderr,
		"  rhash%s: %lu sections, %lu walks, %lu resizes; failures: "
		"%lu poisoned, %lu corrupt, %lu wrong key, %lu missing\n",
		broken ? " BROKEN" : "", s.sections.load(), s.walks.load(),
		s.resizes.load(), s.poisoned.load(), s.corrupt.load(),
		s.wrong_key.load(), s.missing.load());
	sk_test_check_no_freed_seen(s.poisoned);
	SK_CHECK_EQ(s.corrupt + s.wrong_key + s.missing, 0);
	SK_CHECK_GT(s.walks, 0);
	SK_CHECK_GT(s.resizes, 0);
	// Only the stable objects are left.
	SK_CHECK_EQ(s.table.size(), nstable);
	SK_CHECK_EQ(s.names.size(), nstable);
	for (entry *e : stable) {
		SK_CHECK_EQ(s.table.erase(*e), 0);
		SK_CHECK_EQ(s.names.erase(*e), 0);
	}
	sk_synchronize_rcu();
	for (entry *e : stable)
		delete e;
	return s.poisoned;
}

} // namespace

int main(int argc, char **argv)
{
	if (sk_test_stress_main(argc, argv, run_stress))
		return sk_test_report();
	SK_RUN(rhash_u64_insert_find_erase_replace);
	SK_RUN(rhash_string_small_and_double_keys);
	SK_RUN(rhash_range_for_visits_each_once);
	SK_RUN(rhash_resize_and_barrier);
	SK_RUN(rhash_construction_errors);
	SK_RUN(stress_readers_updaters);
	return sk_test_report();
}
