// SPDX-License-Identifier: MIT
// Broken on purpose (headers_hpp_busted, tests/headers.cmake): a stand-in
// .hpp that compiles as C++17 and C++20 but has no
// `#if __cplusplus < 201703L` / `#error` guard, so C++14 accepts it.
#ifndef SK_BUSTED_NO_CXX17_ERROR_HPP
#define SK_BUSTED_NO_CXX17_ERROR_HPP

namespace sk_busted {
inline int answer() noexcept { return 42; }
}

#endif
