// SPDX-License-Identifier: MIT
// sk::elided_mutex has no shared side: std::shared_lock on it does not
// compile (only sk::elided_rwlock and sk::rwlock_rb are SharedLockable).
// SK_CF_EXPECT: lock_shared
#include <scalekit/locks.hpp>
#include <shared_mutex>

int main()
{
	sk::elided_rwlock rw;
	{
		std::shared_lock<sk::elided_rwlock> r(rw);
	}
#ifndef SK_CF_OK
	sk::elided_mutex m;
	std::shared_lock<sk::elided_mutex> bad(m);
#endif
	return 0;
}
