// SPDX-License-Identifier: MIT
// Users cannot create an sk::rcu_domain with braces either: in C++17 a
// class whose only declared constructors are deleted copies is an
// aggregate, and `T x{};` would compile unless the class prevents it.
// SK_CF_EXPECT: deleted|private|protected|no matching|no default constructor
#include <scalekit/rcu.hpp>

int main()
{
	sk::rcu_domain &d = sk::rcu_default_domain();
	d.lock();
	d.unlock();
#ifndef SK_CF_OK
	sk::rcu_domain mine{};
	mine.lock();
#endif
	return 0;
}
