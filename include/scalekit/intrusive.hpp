// SPDX-License-Identifier: MIT
//
// scalekit/intrusive.hpp - what the C++ wrappers of the intrusive
// structures (scalekit/list.hpp, scalekit/rhash.hpp) share: the offset of
// a member named by a pointer to member (so that user code writes
// &T::link, never offsetof), the object that holds a link, and the
// SK_DEBUG check that a reader is inside an RCU read-side critical section.
//
// Header-only, C++17 and later, nothing here throws.  Included by list.hpp
// and rhash.hpp; user code need not include it.
#ifndef SCALEKIT_INTRUSIVE_HPP
#define SCALEKIT_INTRUSIVE_HPP

#if __cplusplus < 201703L
#error "scalekit/intrusive.hpp needs C++17 or later"
#endif

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

#include "scalekit/rcu.h"

#if defined(SK_DEBUG) && SK_DEBUG >= 1
#include "scalekit/cxx_misuse.hpp"
#endif

namespace sk {
namespace detail {

//
// member_offset(&T::m) - the offset of member m in T, in bytes: what
// offsetof(T, m) gives, from a pointer to member.
// Context: any; never blocks.  T is a complete type that a union may hold
// (not abstract); the member must not live in a virtual base.
// Cost: compilers fold it to a constant at -O1 and above.
//
template <class T, class M>
inline std::size_t member_offset(M T::*member) noexcept
{
	// Storage shaped like a T in which no T is constructed: only the
	// address of the member is computed; nothing is read or written.
	union probe {
		probe() noexcept {}
		~probe() {}
		unsigned char bytes[sizeof(T)];
		T obj;
	} p;

	return reinterpret_cast<std::uintptr_t>(&(p.obj.*member)) -
	       reinterpret_cast<std::uintptr_t>(p.bytes);
}

//
// owner_of(link, &T::m) - the T whose member m is *link (the C headers'
// sk_container_of()).  Context: any; never blocks.
//
template <class T, class M>
inline T *owner_of(M *link, M T::*member) noexcept
{
	return reinterpret_cast<T *>(reinterpret_cast<unsigned char *>(link) -
				     member_offset(member));
}

//
// iterator_base<D, V, P> - what the wrappers' forward iterators D (over
// objects of type V, const or not) share: the member types, operator->,
// postfix ++, and the position (a P: the node or object the iterator
// stands on), which the comparisons compare.  D defines operator* and
// prefix ++, which moves the position.
//
template <class D, class V, class P>
class iterator_base {
public:
	using iterator_category = std::forward_iterator_tag;
	using value_type = std::remove_const_t<V>;
	using difference_type = std::ptrdiff_t;
	using pointer = V *;
	using reference = V &;

	pointer operator->() const noexcept
	{
		return &*static_cast<const D &>(*this);
	}
	D operator++(int) noexcept
	{
		D old = static_cast<D &>(*this);

		++static_cast<D &>(*this);
		return old;
	}
	friend bool operator==(const D &a, const D &b) noexcept
	{
		return a.pos_ == b.pos_;
	}
	friend bool operator!=(const D &a, const D &b) noexcept
	{
		return a.pos_ != b.pos_;
	}

protected:
	iterator_base() noexcept = default;
	explicit iterator_base(P pos) noexcept : pos_(pos)
	{
	}

	P pos_ = nullptr; // where the iterator stands
};

#if defined(SK_DEBUG) && SK_DEBUG >= 1
//
// reader_misuse(call) - print one line naming call and the thread, in the
// C library's misuse format, then abort().
//
[[noreturn]] inline void reader_misuse(const char *call) noexcept
{
	misuse("%s outside an RCU read-side critical section (the objects "
	       "it reaches may be freed at any time)",
	       call);
}
#endif

//
// check_reader(call) - with SK_DEBUG >= 1, abort with a message naming
// call unless the calling thread is inside an RCU read-side critical
// section (sk_rcu_read_lock_held(): also an online QSBR thread).  Compiles
// to nothing with SK_DEBUG 0.  Context: any; never blocks.
// Compile every translation unit that uses one instantiation with the same
// SK_DEBUG (as for the C headers' inline functions).
//
inline void check_reader(const char *call) noexcept
{
#if defined(SK_DEBUG) && SK_DEBUG >= 1
	if (!sk_rcu_read_lock_held())
		reader_misuse(call);
#else
	(void)call;
#endif
}

} // namespace detail
} // namespace sk

#endif // SCALEKIT_INTRUSIVE_HPP
