// SPDX-License-Identifier: MIT
// Broken on purpose (headers_hpp_busted, tests/headers.cmake): an
// umbrella header that includes no other .hpp of its directory.
#if __cplusplus < 201703L
#error "scalekit/scalekit.hpp needs C++17 or later"
#endif
#ifndef SK_BUSTED_SCALEKIT_HPP
#define SK_BUSTED_SCALEKIT_HPP
#endif
