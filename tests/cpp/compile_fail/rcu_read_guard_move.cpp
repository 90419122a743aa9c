// SPDX-License-Identifier: MIT
// sk::rcu_read_guard cannot be moved either: the section belongs to the
// thread that opened it (unlike sk::srcu_read_guard's).
// SK_CF_EXPECT: deleted
#include <scalekit/rcu.hpp>
#include <utility>

int main()
{
	sk::rcu_read_guard g;
#ifndef SK_CF_OK
	sk::rcu_read_guard moved(std::move(g));
#endif
	return 0;
}
