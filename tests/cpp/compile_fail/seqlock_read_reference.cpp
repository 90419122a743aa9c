// SPDX-License-Identifier: MIT
// sk::seqlock_read() returns a copy of what the callable read: a callable
// that returns a reference into the protected data is refused (the
// reference would outlive the consistent read).
// SK_CF_EXPECT: reference
#include <scalekit/locks.hpp>

static sk::seqlock s;
static long value;

int main()
{
	long copy = sk::seqlock_read(s, [] { return value; });
#ifndef SK_CF_OK
	const long &bad = sk::seqlock_read(
		s, []() -> const long & { return value; });
	(void)bad;
#endif
	return (int)copy;
}
