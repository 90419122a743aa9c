// SPDX-License-Identifier: MIT
// The C++ test build itself: the C headers and the harness from C++.
#include "scalekit/scalekit.h"
#include "sk_test.hpp"

static void read_section_from_cxx(void)
{
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(read_section_from_cxx);
	return sk_test_report();
}
