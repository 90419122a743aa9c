// SPDX-License-Identifier: MIT
// sk::srcu_read_guard cannot be copied (two guards would end one
// section twice); moving it is allowed, and the valid part does so.
// SK_CF_EXPECT: deleted
#include <scalekit/srcu.hpp>
#include <utility>

int main()
{
	sk::srcu_domain d;
	sk::srcu_read_guard g(d);
	sk::srcu_read_guard moved(std::move(g));
#ifndef SK_CF_OK
	sk::srcu_read_guard copy(moved);
#endif
	return 0;
}
