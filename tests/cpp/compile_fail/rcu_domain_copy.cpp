// SPDX-License-Identifier: MIT
// sk::rcu_domain cannot be copied (P2545: rcu_domain's copy constructor
// is deleted); rcu_default_domain() is the only one.
// SK_CF_EXPECT: deleted
#include <scalekit/rcu.hpp>

int main()
{
	sk::rcu_domain &d = sk::rcu_default_domain();
	d.lock();
	d.unlock();
#ifndef SK_CF_OK
	sk::rcu_domain copy(d);
#endif
	return 0;
}
