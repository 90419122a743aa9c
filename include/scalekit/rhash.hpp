// SPDX-License-Identifier: MIT
//
// scalekit/rhash.hpp - sk::rhash, the C++ face of scalekit/rhash.h: the
// resizable RCU hash table, typed.
//
//	struct session {
//		std::uint64_t id;    // the key
//		std::string user;
//		sk_rhash_node node;  // the table's link
//	};
//	sk::rhash<session, &session::node, &session::id> sessions;
//
//	int err = sessions.insert(*s);    // any thread, no lock; 0 or -errno
//	sk_rcu_read_lock();
//	if (session *f = sessions.find(42))
//		use(f->user);             // valid until the section ends
//	sk_rcu_read_unlock();
//	if (sessions.erase(*s) == 0)
//		...                       // retire s: sk_call_rcu(), ...
//
// Why "rhash" and not "rhash_map": the table is intrusive, as the C one.
// T embeds a struct sk_rhash_node and its key (a member named by a pointer
// to member, so no offsetof in user code); the table never allocates,
// copies or frees a T, and find() returns the T* itself.  It is a set of
// objects keyed by one of their members, not a map of values.
//
// Keys (sk::rhash_key_traits<K>, which a program may specialize):
//  - scalar keys without padding or several representations (integers,
//    enums, pointers; a pointer, also a const char *, is compared as an
//    address): the C table's fixed-size keys (key_len =
//    sizeof(K), the C hash sk_rhash_hash(), bytes compared).  find() is
//    exactly the C call; for 8-byte keys sk_rhash_lookup_u64(), the C
//    header's inline fast path, with no call at all.
//  - std::basic_string and std::basic_string_view keys: the C table's
//    variable keys, with a hashfn that hashes the characters with
//    sk_rhash_hash() (seeded by params.seed; a direct call) and a cmpfn
//    that compares lengths, then characters.  Per lookup: one indirect call
//    of the hashfn and one of the cmpfn per node whose full hash matches,
//    as in a C table with variable keys; no allocation.  The lookup key
//    has the member's type: a std::string table is searched with a
//    std::string (the C library hands the same pointer to the hashfn for
//    stored and searched keys); a std::string_view member (viewing
//    characters the object owns) allows allocation-free lookups by view.
//  - any other K: std::hash<K> (its result mixed with the seed by
//    sk_rhash_hash()) and operator==, as variable keys (same cost as
//    strings).  A hash or == that throws terminates the program: they run
//    inside noexcept C callbacks.
//
// Reclamation: an erased or replaced object may be freed only after a
// grace period (sk_synchronize_rcu(), sk_call_rcu(), rcu_retire()), by
// the caller; the table's destructor frees no object.
//
// Readers: find() results and begin()/end() iterators are valid only
// inside the RCU read-side critical section that produced them.  With
// SK_DEBUG >= 1, find(), begin(), operator*, operator-> and operator++
// check it (sk_rcu_read_lock_held()) and print a message and abort
// outside a section.
//
// Header-only, C++17 and later.  Only the constructor throws.
#ifndef SCALEKIT_RHASH_HPP
#define SCALEKIT_RHASH_HPP

#if __cplusplus < 201703L
#error "scalekit/rhash.hpp needs C++17 or later"
#endif

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "scalekit/intrusive.hpp"
#include "scalekit/rhash.h"

namespace sk {

//
// sk::rhash_default_params() - SK_RHASH_PARAMS_DEFAULT, which is C's
// designated initializer (C++17 has none).  Context: any.
//
inline sk_rhash_params rhash_default_params() noexcept
{
	sk_rhash_params p{};

	p.initial_buckets = 64;
	p.min_buckets = 64;
	p.max_buckets = 1UL << 30;
	p.grow_above_pct = 75;
	p.shrink_below_pct = 25;
	p.automatic_resize = 1;
	return p;
}

//
// sk::rhash_key_traits<K> - how sk::rhash hashes and compares keys of type
// K.  Either fixed_len != 0 (the C table's fixed-size keys: that many
// bytes, hashed by sk_rhash_hash() and compared bytewise; only for types
// whose equal values have equal bytes), or fixed_len == 0 and
//	static unsigned long hash(const K &k, unsigned long seed) noexcept;
//	static bool equal(const K &a, const K &b) noexcept;
// This primary template: std::hash<K> and operator==.
//
template <class K, class Enable = void>
struct rhash_key_traits {
	static constexpr std::size_t fixed_len = 0;

	static unsigned long hash(const K &k, unsigned long seed) noexcept
	{
		// std::hash of an integer may be the integer itself: mix.
		std::size_t h = std::hash<K>{}(k);

		return sk_rhash_hash(&h, sizeof(h), seed);
	}
	static bool equal(const K &a, const K &b) noexcept
	{
		return a == b;
	}
};

// Integers, enums, pointers: bytes.
template <class K>
struct rhash_key_traits<
	K, std::enable_if_t<std::is_scalar_v<K> &&
			    std::has_unique_object_representations_v<K>>> {
	static constexpr std::size_t fixed_len = sizeof(K);
};

namespace detail {
// Strings and views: the characters, hashed by the C hash.
template <class S>
struct rhash_string_traits {
	static constexpr std::size_t fixed_len = 0;

	static unsigned long hash(const S &k, unsigned long seed) noexcept
	{
		return sk_rhash_hash(k.data(),
				     k.size() * sizeof(typename S::value_type),
				     seed);
	}
	static bool equal(const S &a, const S &b) noexcept
	{
		return a == b;
	}
};
} // namespace detail

template <class C, class Tr, class A>
struct rhash_key_traits<std::basic_string<C, Tr, A>>
	: detail::rhash_string_traits<std::basic_string<C, Tr, A>> {};

template <class C, class Tr>
struct rhash_key_traits<std::basic_string_view<C, Tr>>
	: detail::rhash_string_traits<std::basic_string_view<C, Tr>> {};

namespace detail {
template <class M>
struct member_pointer;
template <class T, class K>
struct member_pointer<K T::*> {
	using owner = T;
	using type = K;
};

// The C table's hashfn and cmpfn for variable keys: key points at a key
// (the searched key, or the key member of an object the table hashes),
// obj at a T.  Called by the C library: they never throw.
template <class T, auto Key, class Traits>
struct rhash_callbacks {
	using key_type = typename member_pointer<decltype(Key)>::type;

	static unsigned long hash(const void *key, std::size_t,
				  unsigned long seed) noexcept
	{
		return Traits::hash(*static_cast<const key_type *>(key), seed);
	}
	static int compare(const void *key, const void *obj) noexcept
	{
		const T *o = static_cast<const T *>(obj);

		return Traits::equal(*static_cast<const key_type *>(key),
				     o->*Key) ? 0 : 1;
	}
};
} // namespace detail

//
// sk::rhash<T, &T::node, &T::key, Traits> - a table of T linked through
// node (a struct sk_rhash_node) and keyed by key.  Owns one struct
// sk_rhash.  Not copyable or movable: readers hold pointers to it.
//
template <class T, sk_rhash_node T::*Node, auto Key,
	  class Traits = rhash_key_traits<
		  typename detail::member_pointer<decltype(Key)>::type>>
class rhash {
	template <bool Const>
	class basic_iterator;

public:
	using key_type = typename detail::member_pointer<decltype(Key)>::type;
	using iterator = basic_iterator<false>;
	using const_iterator = basic_iterator<true>;

	static_assert(std::is_same_v<
			      typename detail::member_pointer<decltype(Key)>::owner,
			      T>,
		      "Key must be a pointer to a member of T");

	//
	// rhash(params) - create the table (sk_rhash_create()).  params
	// tunes it (seed, bucket counts, load factors, automatic resizing,
	// alloc/free); its head_offset, key_offset, key_len, hashfn and cmpfn
	// are replaced by the ones T, Node, Key and Traits define.
	// Context: any thread; may allocate; never blocks otherwise.
	// Throws: std::bad_alloc (ENOMEM), std::system_error with the errno
	// (EINVAL: bucket counts not powers of two, min > max).
	//
	explicit rhash(const sk_rhash_params &params = rhash_default_params())
	{
		sk_rhash_params p = params;

		p.head_offset = detail::member_offset(Node);
		p.key_offset = detail::member_offset(Key);
		if constexpr (Traits::fixed_len != 0) {
			p.key_len = Traits::fixed_len;
			p.hashfn = nullptr;
			p.cmpfn = nullptr;
		} else {
			p.key_len = 0;
			p.hashfn = &detail::rhash_callbacks<T, Key, Traits>::hash;
			p.cmpfn = &detail::rhash_callbacks<T, Key, Traits>::compare;
		}
		ht_ = sk_rhash_create(&p);
		if (!ht_) {
			int err = errno;

			if (err == ENOMEM)
				throw std::bad_alloc();
			throw std::system_error(err, std::generic_category(),
						"sk_rhash_create");
		}
	}
	rhash(const rhash &) = delete;
	rhash &operator=(const rhash &) = delete;

	//
	// ~rhash() - free the table (sk_rhash_destroy(ht, NULL, NULL)); the
	// objects still in it are left alone (the caller's), and must stay
	// valid until it returns: a background resize it waits for may still
	// walk them (declare such objects before the table, so that they
	// are destroyed after it).
	// Context: no reader or updater may use the table any more (wait for
	// a grace period after the last lookup).  Waits for the table's
	// background resizing when some is queued: then outside any read
	// section and outside RCU callbacks.
	//
	~rhash()
	{
		sk_rhash_destroy(ht_, nullptr, nullptr);
	}

	//
	// find(key) - the object whose key equals key, or nullptr
	// (sk_rhash_lookup(); sk_rhash_lookup_u64() for 8-byte keys).
	// Context: inside an RCU read section (the object stays valid until
	// it ends; checked with SK_DEBUG >= 1).  Wait-free; no stores to
	// shared memory; never blocks or retries, also during a resize.
	// Ordering: the object is seen as initialized before its insertion
	// (publication pairs with the insert's release).
	//
	T *find(const key_type &key) const noexcept
	{
		detail::check_reader("sk::rhash::find()");
		if constexpr (Traits::fixed_len == sizeof(std::uint64_t) &&
			      sizeof(key_type) == sizeof(std::uint64_t)) {
			// 8-byte keys by value (sk_rhash_lookup_u64()).
			std::uint64_t v;

			std::memcpy(&v, &key, sizeof(v));
			return static_cast<T *>(sk_rhash_lookup_u64(ht_, v));
		} else {
			return static_cast<T *>(sk_rhash_lookup(ht_, &key));
		}
	}

	//
	// insert(obj) - add obj (sk_rhash_insert(); duplicate keys allowed).
	// insert_unique(obj) - add obj unless an object with its key is in
	// the table (sk_rhash_insert_unique()).
	// Context: any thread, inside or outside a read section, also while a
	// resize runs.  insert() takes no lock (a compare-and-swap on the
	// bucket's head) and never waits for another thread;
	// insert_unique() takes the bucket's lock (held for short stretches,
	// never across a grace period).  Either may queue a background resize.
	// Ordering: obj's initialization happens before lookups find it.
	// Returns: 0; -EBUSY (obj is in this table already); -EEXIST
	// (insert_unique, key present); -ENOMEM (the thread's first update
	// could not register it with RCU).
	//
	[[nodiscard]] int insert(T &obj) noexcept
	{
		return sk_rhash_insert(ht_, &(obj.*Node));
	}
	[[nodiscard]] int insert_unique(T &obj) noexcept
	{
		return sk_rhash_insert_unique(ht_, &(obj.*Node));
	}

	//
	// erase(obj) - unlink obj (sk_rhash_remove()); readers on it go on.
	// Context: as insert_unique().
	// Reclamation: free obj only after a grace period (the caller's).
	// Returns: 0; -ENOENT (not in the table); -ENOMEM (as insert()).
	//
	[[nodiscard]] int erase(T &obj) noexcept
	{
		return sk_rhash_remove(ht_, &(obj.*Node));
	}

	//
	// replace(old_obj, obj) - put obj in old_obj's place; their keys are
	// equal (sk_rhash_replace()).  Lookups see one or the other, never
	// neither.  Context: as insert_unique().
	// Reclamation: free old_obj only after a grace period (the caller's).
	// Returns: 0; -EINVAL (keys differ); -ENOENT (old_obj not in the
	// table); -EBUSY (obj in this table already); -ENOMEM (as insert()).
	//
	[[nodiscard]] int replace(T &old_obj, T &obj) noexcept
	{
		return sk_rhash_replace(ht_, &(old_obj.*Node), &(obj.*Node));
	}

	//
	// size() - number of objects (sk_rhash_count()): approximate while
	// updates run, exact when none runs.  bucket_count() - current
	// number of buckets (sk_rhash_buckets()).
	// Context: any thread, inside or outside a read section.  Never
	// blocks.
	//
	std::size_t size() const noexcept
	{
		return sk_rhash_count(ht_);
	}
	std::size_t bucket_count() const noexcept
	{
		return sk_rhash_buckets(ht_);
	}

	//
	// resize(nbuckets) - resize to nbuckets, a power of two, in the
	// caller's thread (sk_rhash_resize()).
	// Context: outside any read section (it waits for grace periods).
	// Blocks; never blocks lookups.
	// Returns: 0; -EINVAL (not a power of two, or 0); -ENOMEM (the table
	// is left as it was).
	//
	[[nodiscard]] int resize(unsigned long nbuckets) noexcept
	{
		return sk_rhash_resize(ht_, nbuckets);
	}

	//
	// barrier() - wait until the background resizing queued so far is
	// done (sk_rhash_barrier()).
	// Context: outside any read section and outside RCU callbacks.
	// Blocks.  Ordering: the background work's writes happen before the
	// return.
	//
	void barrier() noexcept
	{
		sk_rhash_barrier(ht_);
	}

	//
	// begin(), end() - every object (sk_rhash_iter_start() and
	// sk_rhash_iter_next()).
	// Context: inside ONE RCU read section for the whole walk (checked
	// with SK_DEBUG >= 1).  Never blocks.  Every object present for the
	// whole walk is visited at least once; objects inserted or erased
	// meanwhile may or may not be; an object may be visited twice when a
	// resize runs during the walk.  Order: unspecified.
	//
	iterator begin() noexcept
	{
		return iterator(ht_);
	}
	iterator end() noexcept
	{
		return iterator();
	}
	const_iterator begin() const noexcept
	{
		return const_iterator(ht_);
	}
	const_iterator end() const noexcept
	{
		return const_iterator();
	}

	// native_handle() - the C table, for C code.  Context: any.
	sk_rhash *native_handle() const noexcept
	{
		return ht_;
	}

private:
	sk_rhash *ht_; // the C table (owned)
};

//
// The readers' iterator: a C iterator (struct sk_rhash_iter) and the object
// it returned last (nullptr: end()).
// Context: every operation inside the RCU read section that created it
// (operator*, operator-> and operator++ check it with SK_DEBUG >= 1).
// Never blocks.  A forward iterator by its interface; while updates run,
// two walks may differ.
//
template <class T, sk_rhash_node T::*Node, auto Key, class Traits>
template <bool Const>
class rhash<T, Node, Key, Traits>::basic_iterator
	: public detail::iterator_base<basic_iterator<Const>,
				       std::conditional_t<Const, const T, T>,
				       T *> {
public:
	basic_iterator() noexcept = default;

	std::conditional_t<Const, const T, T> &operator*() const noexcept
	{
		detail::check_reader("sk::rhash iterator operator*");
		return *this->pos_;
	}
	basic_iterator &operator++() noexcept
	{
		detail::check_reader("sk::rhash iterator operator++");
		this->pos_ = static_cast<T *>(sk_rhash_iter_next(&it_));
		return *this;
	}
	using basic_iterator::iterator_base::operator++;

private:
	friend class rhash;

	// Stands on the first object of ht (nullptr, end(), when empty).
	explicit basic_iterator(sk_rhash *ht) noexcept
	{
		detail::check_reader("sk::rhash::begin()");
		sk_rhash_iter_start(ht, &it_);
		this->pos_ = static_cast<T *>(sk_rhash_iter_next(&it_));
	}

	sk_rhash_iter it_{}; // the C walk; pos_: the object it returned last
};

} // namespace sk

#endif // SCALEKIT_RHASH_HPP
