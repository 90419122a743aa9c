// SPDX-License-Identifier: MIT
// Broken on purpose (tests/cpp_compile_fail.cmake's twin): the block
// fails for another reason than the expected one (an undeclared name),
// so the check must report that the messages do not match.
// SK_CF_EXPECT: deleted (function|constructor)
#include <memory>

int main()
{
	std::unique_ptr<int> a(new int(1));
#ifndef SK_CF_OK
	std::unique_ptr<int> c(sk_cf_no_such_name);
#endif
	return a ? 0 : 1;
}
