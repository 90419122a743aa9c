// SPDX-License-Identifier: MIT
// sk::rcu_read_guard cannot be copied: a copy would unlock the section
// twice.
// SK_CF_EXPECT: deleted
#include <scalekit/rcu.hpp>

int main()
{
	sk::rcu_read_guard g;
#ifndef SK_CF_OK
	sk::rcu_read_guard copy(g);
#endif
	return 0;
}
