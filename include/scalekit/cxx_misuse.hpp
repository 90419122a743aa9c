// SPDX-License-Identifier: MIT
//
// scalekit/cxx_misuse.hpp - how the C++ layer reports misuse that it
// cannot return to its caller: a destructor whose C cleanup refuses.
//
// The C library's misuse checks print one line naming the call and the
// thread, then abort (misuse that would deadlock or corrupt memory is
// not returned as an error).  A destructor cannot
// return an error and must not throw, so the C++ wrappers report the same
// way.  Internal to the C++ headers (namespace sk::detail): not an API.
#ifndef SCALEKIT_CXX_MISUSE_HPP
#define SCALEKIT_CXX_MISUSE_HPP

#if __cplusplus < 201703L
#error "scalekit's C++ headers need C++17 or later"
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace sk {
namespace detail {

// destroy_refused() - print "scalekit: thread T: <what>(<obj>): <call>
// returned <rc> (<strerror>): <why>" on stderr in one write, then abort().
// Context: any thread; never returns.  Called by destructors whose C
// cleanup refused (the object is still in use).
[[noreturn]] inline void destroy_refused(const char *what, const void *obj,
					 const char *call, int rc,
					 const char *why) noexcept
{
	std::fprintf(stderr, "scalekit: thread %ld: %s(%p): %s returned %d (%s): %s\n",
		     static_cast<long>(::syscall(SYS_gettid)), what, obj, call,
		     rc, std::strerror(rc < 0 ? -rc : rc), why);
	std::fflush(stderr);
	std::abort();
}

// check_destroy() - destroy_refused() unless rc (a C cleanup's answer) is
// 0: what a destructor calls with its cleanup's return value.
inline void check_destroy(int rc, const char *what, const void *obj,
			  const char *call, const char *why) noexcept
{
	if (rc != 0)
		destroy_refused(what, obj, call, rc, why);
}

} // namespace detail
} // namespace sk

#endif // SCALEKIT_CXX_MISUSE_HPP
