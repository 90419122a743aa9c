// SPDX-License-Identifier: MIT
// sk::call_rcu(obj, f) calls f(obj): a callable that cannot take the
// object's pointer is refused at compile time, not at run time.
// SK_CF_EXPECT: callable with a T
#include <scalekit/rcu.hpp>

struct item {
	int v;
};

int main()
{
	item *good = new item{ 1 };
	sk::call_rcu(good, [](item *p) { delete p; });
#ifndef SK_CF_OK
	item *bad = new item{ 2 };
	sk::call_rcu(bad, [](int x) { (void)x; });
#endif
	sk::rcu_barrier();
	return 0;
}
