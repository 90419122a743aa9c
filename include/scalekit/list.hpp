// SPDX-License-Identifier: MIT
//
// scalekit/list.hpp - sk::rcu_list, the C++ face of scalekit/list.h: an
// intrusive doubly linked list that RCU readers walk with iterators (and
// range-for) while one updater at a time changes it.
//
//	struct route {
//		int dst;
//		sk_list_head link;
//	};
//	sk::rcu_list<route, &route::link> routes;
//
//	// Updater (holds the updaters' lock of the program's choice):
//	routes.push_back(*r);
//	routes.erase(*old);   // then retire old: sk_call_rcu(), ...
//
//	// Reader:
//	sk_rcu_read_lock();
//	for (const route &r : routes)
//		use(r.dst);
//	sk_rcu_read_unlock();
//
// The list is intrusive, as the C one: T embeds a struct sk_list_head and
// the list never allocates, copies or frees a T.  An erased (or replaced)
// element may be freed only after a grace period, and doing so is the
// caller's job: sk_synchronize_rcu() then delete, sk_call_rcu() with a
// callback that frees it, or the rcu_obj_base / rcu_retire of the C++ RCU
// header.  The list's destructor unlinks nothing and frees nothing.
//
// Readers: begin()/end() iterators are valid only inside an RCU read-side
// critical section (sk_rcu_read_lock()/sk_rcu_read_unlock(), a read guard,
// or an online QSBR thread), and only inside the section that created
// them: once it ends, the element an iterator stands on may be freed.
// With SK_DEBUG >= 1 (the project's compile definition), begin(),
// operator*, operator-> and operator++ check it (sk_rcu_read_lock_held())
// and print a message and abort outside a section.  SRCU readers walk the
// list with the C macros (the check knows RCU sections only).
//
// Header-only, C++17 and later; nothing here throws, allocates or blocks.
#ifndef SCALEKIT_LIST_HPP
#define SCALEKIT_LIST_HPP

#if __cplusplus < 201703L
#error "scalekit/list.hpp needs C++17 or later"
#endif

#include <cstddef>
#include <iterator>
#include <type_traits>

#include "scalekit/intrusive.hpp"
#include "scalekit/list.h"

namespace sk {

//
// sk::rcu_list<T, &T::link> - an RCU list of T linked through the member
// link (a struct sk_list_head).  Not copyable or movable: readers and
// elements point at the list's head.
// Context of every updater member (push_front, push_back, insert_before,
// insert_after, erase, replace, locked): the caller holds the updaters'
// lock (one updater at a time; readers may run).  None blocks.
//
template <class T, sk_list_head T::*Link>
class rcu_list {
	template <bool Const>
	class basic_iterator;

public:
	// Readers' iterators (forward): valid inside one read section.
	using iterator = basic_iterator<false>;
	using const_iterator = basic_iterator<true>;
	class locked_iterator;
	class locked_range;

	// An empty list (sk_list_init()).  No reader may see it yet.
	rcu_list() noexcept
	{
		sk_list_init(&head_);
	}
	rcu_list(const rcu_list &) = delete;
	rcu_list &operator=(const rcu_list &) = delete;
	// Unlinks and frees nothing: empty the list first if readers or
	// elements outlive it.
	~rcu_list() = default;

	//
	// push_front(obj) - insert obj first (sk_list_add_rcu()).
	// push_back(obj) - insert obj last (sk_list_add_tail_rcu()).
	// Context: updater (holds the updaters' lock); readers may run.
	// obj must be on no list.
	// Ordering: obj's initialization happens before readers can reach
	// obj (release store of the pointer to it).
	//
	void push_front(T &obj) noexcept
	{
		sk_list_add_rcu(link(obj), &head_);
	}
	void push_back(T &obj) noexcept
	{
		sk_list_add_tail_rcu(link(obj), &head_);
	}

	//
	// insert_after(pos, obj) - insert obj right after pos
	// (sk_list_add_rcu(obj, pos)).  insert_before(pos, obj) - right before
	// pos (sk_list_add_tail_rcu(obj, pos)).  pos is on this list.
	// Context and Ordering: as push_front().
	//
	void insert_after(T &pos, T &obj) noexcept
	{
		sk_list_add_rcu(link(obj), link(pos));
	}
	void insert_before(T &pos, T &obj) noexcept
	{
		sk_list_add_tail_rcu(link(obj), link(pos));
	}

	//
	// erase(obj) - unlink obj, which is on this list (sk_list_del_rcu());
	// readers standing on obj go on to the rest of the list.
	// Context: updater.  Ordering: a single store that readers see or
	// not; both states are valid lists.
	// Reclamation: free obj only after a grace period (the caller's:
	// sk_synchronize_rcu(), sk_call_rcu(), rcu_retire()).
	//
	void erase(T &obj) noexcept
	{
		sk_list_del_rcu(link(obj));
	}

	//
	// replace(old_obj, obj) - put obj in old_obj's place
	// (sk_list_replace_rcu()): readers see one or the other, never
	// neither.  Context: updater.  Ordering: as push_front() for obj.
	// Reclamation: free old_obj only after a grace period (the caller's).
	//
	void replace(T &old_obj, T &obj) noexcept
	{
		sk_list_replace_rcu(link(old_obj), link(obj));
	}

	//
	// empty() - true when the list has no element (sk_list_empty()).
	// Context: any thread; a reader's answer may be stale at once.
	// Ordering: none (one relaxed load).
	//
	bool empty() const noexcept
	{
		return sk_list_empty(&head_) != 0;
	}

	//
	// begin(), end() - the readers' walk (sk_list_for_each_entry_rcu()).
	// Context: inside an RCU read-side critical section, for the whole
	// walk (checked with SK_DEBUG >= 1: message and abort).  Never blocks.
	// Every element on the list for the whole walk is visited exactly
	// once, in list order; elements added or erased meanwhile may or may
	// not be.
	// Ordering: each element is seen as initialized before its
	// publication (consume loads of the next pointers, paired with the
	// updaters' release stores).
	// Reclamation: elements reached stay valid until the section ends.
	//
	iterator begin() noexcept
	{
		detail::check_reader("sk::rcu_list::begin()");
		return iterator(sk_rcu_dereference(head_.next));
	}
	iterator end() noexcept
	{
		return iterator(&head_);
	}
	const_iterator begin() const noexcept
	{
		return const_cast<rcu_list *>(this)->begin();
	}
	const_iterator end() const noexcept
	{
		return const_cast<rcu_list *>(this)->end();
	}
	const_iterator cbegin() const noexcept
	{
		return begin();
	}
	const_iterator cend() const noexcept
	{
		return end();
	}

	//
	// locked() - the updater's walk, for range-for
	// (sk_list_for_each_entry_safe()): plain loads, no read section
	// needed, no SK_DEBUG check.  The loop body may erase (and retire)
	// the element it stands on: the iterator has read its successor
	// already.  It must not erase another element.
	// Context: updater (holds the updaters' lock).  Never blocks.
	//
	locked_range locked() noexcept
	{
		return locked_range(&head_);
	}

	// native_handle() - the C list head, for the C macros (e.g. SRCU
	// readers).  Context: any.
	sk_list_head *native_handle() noexcept
	{
		return &head_;
	}

private:
	static sk_list_head *link(T &obj) noexcept
	{
		return &(obj.*Link);
	}
	static T *owner(sk_list_head *n) noexcept
	{
		return detail::owner_of(n, Link);
	}

	sk_list_head head_; // the C list head; readers and elements point here
};

//
// The readers' iterator: stands on a list node (the head means end()).
// Context: every operation inside the RCU read-side critical section that
// created it (operator*, operator-> and operator++ check it with
// SK_DEBUG >= 1).  Never blocks.
//
template <class T, sk_list_head T::*Link>
template <bool Const>
class rcu_list<T, Link>::basic_iterator
	: public detail::iterator_base<basic_iterator<Const>,
				       std::conditional_t<Const, const T, T>,
				       sk_list_head *> {
public:
	basic_iterator() noexcept = default;
	// iterator -> const_iterator.
	operator basic_iterator<true>() const noexcept
	{
		return basic_iterator<true>(this->pos_);
	}

	std::conditional_t<Const, const T, T> &operator*() const noexcept
	{
		detail::check_reader("sk::rcu_list iterator operator*");
		return *owner(this->pos_);
	}
	// Ordering: consume load of the next pointer (pairs with the
	// updater's release store that published the next element).
	basic_iterator &operator++() noexcept
	{
		detail::check_reader("sk::rcu_list iterator operator++");
		this->pos_ = sk_rcu_dereference(this->pos_->next);
		return *this;
	}
	using basic_iterator::iterator_base::operator++;

private:
	friend class rcu_list;

	// Stands on node (the list's head: end()).
	explicit basic_iterator(sk_list_head *node) noexcept
		: basic_iterator::iterator_base(node)
	{
	}
};

//
// The updater's iterator (locked()): reads the successor when it moves
// onto a node, so the loop body may erase the node it stands on.
//
template <class T, sk_list_head T::*Link>
class rcu_list<T, Link>::locked_iterator
	: public detail::iterator_base<locked_iterator, T, sk_list_head *> {
public:
	T &operator*() const noexcept
	{
		return *owner(this->pos_);
	}
	locked_iterator &operator++() noexcept
	{
		this->pos_ = next_;
		next_ = next_->next;
		return *this;
	}
	using locked_iterator::iterator_base::operator++;

private:
	friend class rcu_list;

	// Stands on node (the list's head: end()).
	explicit locked_iterator(sk_list_head *node) noexcept
		: locked_iterator::iterator_base(node), next_(node->next)
	{
	}

	sk_list_head *next_; // the successor, read on arrival
};

// The range locked() returns: begin() and end() for range-for.
template <class T, sk_list_head T::*Link>
class rcu_list<T, Link>::locked_range {
public:
	locked_iterator begin() const noexcept
	{
		return locked_iterator(head_->next);
	}
	locked_iterator end() const noexcept
	{
		return locked_iterator(head_);
	}

private:
	friend class rcu_list;

	explicit locked_range(sk_list_head *head) noexcept : head_(head)
	{
	}

	sk_list_head *head_; // the list's head
};

} // namespace sk

#endif // SCALEKIT_LIST_HPP
