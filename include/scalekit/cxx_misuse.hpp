// SPDX-License-Identifier: MIT
//
// scalekit/cxx_misuse.hpp - how the C++ layer reports misuse that it
// cannot return to its caller: a second retire(), a destructor whose C
// cleanup refuses, an iterator used outside a read section.
//
// The C library's misuse checks print one line naming the call and the
// thread, then abort (misuse that would deadlock or corrupt memory is
// not returned as an error).  A destructor cannot
// return an error and must not throw, so the C++ wrappers report the same
// way.  Internal to the C++ headers (namespace sk::detail): not an API.
#ifndef SCALEKIT_CXX_MISUSE_HPP
#define SCALEKIT_CXX_MISUSE_HPP

#if __cplusplus < 201703L
#error "scalekit/cxx_misuse.hpp needs C++17 or later"
#endif

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace sk {
namespace detail {

// misuse(fmt, ...) - print "scalekit: thread <tid>: <message>" on stderr
// as one line, then abort(): the C library's misuse format, for every
// check of the C++ headers (a second retire(), a destructor whose C
// cleanup refuses, an iterator outside a read section).
// Context: any thread; never returns.
[[noreturn]] __attribute__((cold, noinline, format(printf, 1, 2))) inline void
misuse(const char *fmt, ...) noexcept
{
	char msg[512];
	std::va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "scalekit: thread %ld: %s\n",
		     static_cast<long>(::syscall(SYS_gettid)), msg);
	std::fflush(stderr);
	std::abort();
}

// destroy_refused() - misuse(): "<what>(<obj>): <call> returned <rc>
// (<strerror>): <why>".  Called by destructors whose C cleanup refused
// (the object is still in use).
[[noreturn]] inline void destroy_refused(const char *what, const void *obj,
					 const char *call, int rc,
					 const char *why) noexcept
{
	misuse("%s(%p): %s returned %d (%s): %s", what, obj, call, rc,
	       std::strerror(rc < 0 ? -rc : rc), why);
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
