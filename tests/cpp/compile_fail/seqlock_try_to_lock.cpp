// SPDX-License-Identifier: MIT
// sk::seqlock's writer side is BasicLockable only (the C API has no
// writer trylock): std::unique_lock with std::try_to_lock does not
// compile, std::lock_guard does.
// SK_CF_EXPECT: try_lock
#include <scalekit/locks.hpp>
#include <mutex>

int main()
{
	sk::seqlock s;
	{
		std::lock_guard<sk::seqlock> w(s);
	}
#ifndef SK_CF_OK
	std::unique_lock<sk::seqlock> bad(s, std::try_to_lock);
#endif
	return 0;
}
