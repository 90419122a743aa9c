// SPDX-License-Identifier: MIT
// sk::srcu_domain cannot be copied: it owns a struct sk_srcu, which
// readers and callbacks refer to by address.
// SK_CF_EXPECT: deleted
#include <scalekit/srcu.hpp>

int main()
{
	sk::srcu_domain d;
#ifndef SK_CF_OK
	sk::srcu_domain copy(d);
#endif
	return 0;
}
