// SPDX-License-Identifier: MIT
//
// cpp_consumer.cpp - a C++ program that uses an installed scalekit's C++
// header (scalekit/rcu.hpp): an object reclaimed through rcu_obj_base, a
// read guard, rcu_synchronize() and rcu_barrier().  Built by
// tests/install_check.cmake with `pkg-config --cflags --libs scalekit`
// (g++ -std=c++17) and by tests/install_consumer/ against
// scalekit::scalekit; prints "cpp_consumer: ok" when all went as it should.
#include <atomic>
#include <cstdio>
#include <thread>

#include <scalekit/rcu.hpp>

namespace {

std::atomic<int> freed{0};

struct greeting : sk::rcu_obj_base<greeting> {
	int words = 2;

	~greeting()
	{
		freed.fetch_add(1);
	}
};

sk::rcu_ptr<greeting> current;

} // namespace

int main()
{
	current.store(new greeting);
	std::thread reader([] {
		sk::rcu_read_guard g;
		greeting *p = current.load();
		(void)p->words;
	});
	reader.join();

	greeting *old = current.exchange(new greeting);
	old->retire();
	sk::rcu_synchronize();
	sk::rcu_barrier();
	current.exchange(nullptr)->retire();
	sk::rcu_barrier();
	if (freed.load() != 2) {
		std::fprintf(stderr, "cpp_consumer: %d objects freed, not 2\n",
			     freed.load());
		return 1;
	}
	std::printf("cpp_consumer: ok\n");
	return 0;
}
