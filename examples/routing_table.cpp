// SPDX-License-Identifier: MIT
/*
 * routing_table.cpp - a read-mostly IPv4 routing table in C++ with
 * scalekit's C++26-style RCU interface (scalekit/rcu.hpp).
 *
 * The table is an immutable snapshot: a sorted vector of routes.  Lookups
 * (longest-prefix match) run in read-side critical sections and never
 * wait for the updater.  The updater copies the current snapshot, changes
 * the copy, publishes it with one release store and retires the old one:
 * rcu_obj_base::retire() deletes it after a grace period, once no lookup
 * that could have seen it is still running.
 *
 * Written against P2545's interface: the same code compiles with C++26's
 * <rcu> by replacing "sk::" with "std::" (and the include).
 *
 * What it checks, so that it can fail: every snapshot carries a checksum
 * of its routes, and its destructor poisons both; each lookup verifies the
 * checksum of the snapshot it reads and that the route it found matches
 * the address.  A snapshot freed too early shows up as a bad checksum (or
 * under ASan as a use after free).  Prints "routing_table: ok" last.
 *
 * Build: c++ -std=c++17 routing_table.cpp $(pkg-config --cflags --libs scalekit)
 */
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "scalekit/rcu.hpp"

namespace {

struct route {
	std::uint32_t prefix; // host byte order
	int len;	      // prefix length, 0..32
	int next_hop;
};

std::uint32_t mask_of(int len)
{
	return len == 0 ? 0 : ~std::uint32_t(0) << (32 - len);
}

// One immutable version of the table.
struct route_table : sk::rcu_obj_base<route_table> {
	std::vector<route> routes; // longest prefixes first
	std::uint64_t version;
	std::uint64_t checksum;

	static std::uint64_t sum(const std::vector<route> &rs, std::uint64_t v)
	{
		std::uint64_t s = v * 0x9e3779b97f4a7c15ull;

		for (const route &r : rs)
			s = (s ^ (r.prefix + (std::uint64_t(r.len) << 32) +
				  (std::uint64_t(r.next_hop) << 40))) *
			    0x100000001b3ull;
		return s;
	}

	route_table(std::vector<route> rs, std::uint64_t v)
		: routes(std::move(rs)), version(v), checksum(0)
	{
		std::sort(routes.begin(), routes.end(),
			  [](const route &a, const route &b) {
				  return a.len > b.len;
			  });
		checksum = sum(routes, version);
	}

	// Poison: a lookup that still reads this snapshot fails its check.
	~route_table()
	{
		checksum = ~sum(routes, version);
		for (route &r : routes)
			r.next_hop = -1;
	}

	bool intact() const { return checksum == sum(routes, version); }

	const route *lookup(std::uint32_t addr) const
	{
		for (const route &r : routes)
			if ((addr & mask_of(r.len)) == r.prefix)
				return &r;
		return nullptr;
	}
};

// The published snapshot: readers load it with acquire, the updater
// stores with release (P2545's examples use std::atomic the same way).
std::atomic<route_table *> current;
std::mutex update_lock; // one updater at a time

// Reader: the next hop of addr, or -1; counts damage it sees.
int next_hop(std::uint32_t addr, long &damaged)
{
	std::scoped_lock rcu(sk::rcu_default_domain());
	const route_table *t = current.load(std::memory_order_acquire);
	const route *r = t->lookup(addr);

	if (!t->intact() || (r && (addr & mask_of(r->len)) != r->prefix))
		damaged++;
	return r ? r->next_hop : -1;
}

// Updater: copy, change, publish, retire the old snapshot.
void update(std::uint32_t prefix, int len, int hop)
{
	std::scoped_lock lk(update_lock);
	route_table *old = current.load(std::memory_order_relaxed);
	std::vector<route> rs;

	for (const route &r : old->routes)
		if (r.prefix != prefix || r.len != len)
			rs.push_back(r);
	if (hop >= 0)
		rs.push_back({ prefix & mask_of(len), len, hop });
	current.store(new route_table(std::move(rs), old->version + 1),
		      std::memory_order_release);
	old->retire(); // deleted after a grace period
}

} // namespace

int main()
{
	const int readers = 2, updates = 20000;
	std::atomic<bool> stop{ false };
	std::vector<std::thread> th;
	std::vector<long> damaged(readers), lookups(readers);

	current.store(new route_table({ { 0, 0, 1 } }, 0)); // default route
	for (int i = 0; i < readers; i++)
		th.emplace_back([&, i] {
			std::uint32_t addr = 0x0a000001u * (i + 1);
			long n = 0, bad = 0;

			while (!stop.load(std::memory_order_relaxed)) {
				next_hop(addr, bad);
				addr = addr * 1664525u + 1013904223u;
				n++;
			}
			lookups[i] = n;
			damaged[i] = bad;
		});
	for (int i = 0; i < updates; i++) {
		std::uint32_t net = std::uint32_t(10 + i % 50) << 24 |
				    std::uint32_t(i % 7) << 16;

		update(net, 16, i % 2 ? -1 : 2 + i % 5); // add or withdraw
	}
	stop = true;
	for (std::thread &t : th)
		t.join();
	sk::rcu_barrier(); // every retired snapshot is deleted

	long bad = 0, total = 0;
	for (int i = 0; i < readers; i++) {
		bad += damaged[i];
		total += lookups[i];
	}
	long dummy = 0;
	int hop = next_hop(0x0b050001u, dummy);
	std::printf("routing_table: %d updates, %ld lookups, %zu routes, "
		    "next hop of 11.5.0.1 is %d\n",
		    updates, total, current.load()->routes.size(), hop);
	delete current.exchange(nullptr); // no reader is left
	if (bad || dummy) {
		std::printf("routing_table: FAILED: %ld lookups saw a damaged "
			    "snapshot\n",
			    bad + dummy);
		return 1;
	}
	std::printf("routing_table: ok\n");
	return 0;
}
