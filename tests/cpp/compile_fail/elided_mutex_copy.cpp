// SPDX-License-Identifier: MIT
// sk::elided_mutex cannot be copied (nor moved): the C lock may not
// change address while anyone can reach it.
// SK_CF_EXPECT: deleted
#include <scalekit/locks.hpp>
#include <mutex>

int main()
{
	sk::elided_mutex m;
	{
		std::lock_guard<sk::elided_mutex> lock(m);
	}
#ifndef SK_CF_OK
	sk::elided_mutex copy(m);
#endif
	return 0;
}
