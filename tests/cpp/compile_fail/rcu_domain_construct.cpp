// SPDX-License-Identifier: MIT
// Users cannot create an sk::rcu_domain (P2545: no public constructor);
// rcu_default_domain() is the only one.
// SK_CF_EXPECT: deleted|private|protected|no matching|no default constructor
#include <scalekit/rcu.hpp>

int main()
{
	sk::rcu_domain &d = sk::rcu_default_domain();
	d.lock();
	d.unlock();
#ifndef SK_CF_OK
	sk::rcu_domain mine;
	mine.lock();
#endif
	return 0;
}
