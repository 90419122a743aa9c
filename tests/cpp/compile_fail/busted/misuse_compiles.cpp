// SPDX-License-Identifier: MIT
// Broken on purpose (tests/cpp_compile_fail.cmake's twin): the "misuse"
// is valid, so the check must report that it compiles.
// SK_CF_EXPECT: deleted (function|constructor)
#include <memory>

int main()
{
	std::shared_ptr<int> a = std::make_shared<int>(1);
#ifndef SK_CF_OK
	std::shared_ptr<int> b(a);
	(void)b;
#endif
	return *a == 1 ? 0 : 1;
}
