// SPDX-License-Identifier: MIT
// The harness's own snippet (standard library only): a std::unique_ptr
// cannot be copied.
// SK_CF_EXPECT: deleted (function|constructor)
#include <memory>
#include <utility>

int main()
{
	std::unique_ptr<int> a(new int(1));
	std::unique_ptr<int> b(std::move(a));
#ifndef SK_CF_OK
	std::unique_ptr<int> c(b);
	(void)c;
#endif
	return b ? 0 : 1;
}
