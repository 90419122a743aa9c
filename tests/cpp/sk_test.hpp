// SPDX-License-Identifier: MIT
//
// The C test harness (tests/sk_test.h and the support library's helpers)
// for the C++ tests in tests/cpp/: the same checks, runner and seeds.
// The support library is C, so its declarations get C linkage here.
#ifndef SK_TEST_HPP
#define SK_TEST_HPP

extern "C" {
#include "sk_test.h"
#include "sk_test_util.h"
}

#endif
