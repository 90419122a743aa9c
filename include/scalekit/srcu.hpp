// SPDX-License-Identifier: MIT
//
// scalekit/srcu.hpp - sleepable RCU for C++: a domain that owns a struct
// sk_srcu, and a movable read guard that carries the section's index.
//
//	sk::srcu_domain dom;			// sk_srcu_init()
//	{
//		sk::srcu_read_guard g(dom);	// sk_srcu_read_lock()
//		Node *n = sk::srcu_dereference(head, dom);
//		... may sleep, take locks, do I/O ...
//	}					// sk_srcu_read_unlock()
//	old = exchange the pointer ...;
//	dom.call(old, [](Node *p) { delete p; });  // after a grace period
//
// Header-only, C++17 and later, over the C API of scalekit/srcu.h (read
// its comments: every guarantee below is the C function's, restated).
// Nothing here throws on a read path: the guard, srcu_dereference() and
// the waits are noexcept.  Only the domain's constructor (sk_srcu_init()
// failed) and call() (memory for the callback) throw.
//
// Misuse that the C library catches (a wait inside a section of the same
// domain, an unbalanced unlock, use of a closed domain) prints a message
// and aborts, as in C.  A domain that cannot be destroyed when its
// destructor runs is reported the same way (see ~srcu_domain()).
#ifndef SCALEKIT_SRCU_HPP
#define SCALEKIT_SRCU_HPP

#if __cplusplus < 201703L
#error "scalekit/srcu.hpp needs C++17 or later"
#endif

#include <cerrno>
#include <functional>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

#include "scalekit/cxx_misuse.hpp"
#include "scalekit/srcu.h"

namespace sk {

namespace detail {

// An SRCU callback with its own storage: the C head is the base, so the
// C callback gets the node back by a static_cast (no offsetof in user
// code, and no standard-layout requirement on the callable).
template <class T, class Fn>
struct srcu_call_node : sk_rcu_head {
	T *obj;
	Fn fn;

	template <class F>
	srcu_call_node(T *o, F &&f)
		: sk_rcu_head(), obj(o), fn(std::forward<F>(f))
	{
	}

	// The C callback: runs fn(obj) on the SRCU worker, then frees the
	// node.  noexcept: an exception cannot cross the C worker's frames,
	// so one thrown by fn calls std::terminate().
	static void run(sk_rcu_head *h) noexcept
	{
		auto *n = static_cast<srcu_call_node *>(h);

		std::invoke(n->fn, n->obj);
		delete n;
	}
};

} // namespace detail

// sk::srcu_domain - an SRCU domain: owns a struct sk_srcu, initialized by
// the constructor (sk_srcu_init()) and released by the destructor or
// close() (sk_srcu_destroy()).  Sections of one domain delay only that
// domain's grace periods.  Neither copyable nor movable: readers and the
// library's worker hold the domain's address.  Aligned to SK_CACHELINE
// (64) like struct sk_srcu; new (C++17 aligned new), std::make_unique and
// automatic or static storage all respect that.
class srcu_domain {
public:
	// srcu_domain() - initialize the domain (sk_srcu_init()).
	// Context: any thread.  Never blocks.
	// Throws: std::bad_alloc when sk_srcu_init() finds no memory (its
	// only failure here: d_ is aligned).
	srcu_domain()
	{
		int rc = sk_srcu_init(&d_);

		if (rc == -ENOMEM)
			throw std::bad_alloc();
		if (rc != 0)
			throw std::system_error(-rc, std::generic_category(),
						"sk_srcu_init");
		open_ = true;
	}

	// ~srcu_domain() - release the domain, unless close() already did.
	// Calls sk_srcu_destroy(); if it refuses (-EBUSY) while the calling
	// thread is outside every section of the domain, the destructor
	// finishes the domain's work first and tries again: it runs the
	// callbacks still queued (sk_srcu_barrier()), then waits for a
	// grace period (sk_synchronize_srcu(): the readers still inside
	// leave, and a polled grace period completes).  So it may block.
	// A refusal after that, or any refusal while the calling thread has
	// a section of the domain open (sk_srcu_read_lock_held(): a
	// srcu_read_guard that outlives its domain, also one it moved to
	// another thread that has not ended it), prints
	//	scalekit: thread T: sk::srcu_domain::~srcu_domain(ADDR):
	//	sk_srcu_destroy() returned -16 (...): ...
	// on stderr and aborts: the domain is still in use, and freeing it
	// would leave readers or callbacks with a dangling domain.
	// Context: any thread outside the domain's sections and outside
	// SRCU callbacks when callbacks may be pending (sk_srcu_barrier()'s
	// context; its misuse check aborts otherwise).  Call close() to get
	// the refusal as a return value instead.
	~srcu_domain()
	{
		int rc;

		if (!open_)
			return;
		rc = sk_srcu_destroy(&d_);
		if (rc == -EBUSY && !sk_srcu_read_lock_held(&d_)) {
			sk_srcu_barrier(&d_);
			sk_synchronize_srcu(&d_);
			rc = sk_srcu_destroy(&d_);
		}
		detail::check_destroy(
			rc, "sk::srcu_domain::~srcu_domain", this,
			"sk_srcu_destroy()",
			"the domain is in use (a reader inside a section of it, "
			"e.g. a srcu_read_guard that outlives it)");
	}

	srcu_domain(const srcu_domain &) = delete;
	srcu_domain &operator=(const srcu_domain &) = delete;

	// close() - release the domain now (sk_srcu_destroy()) and return
	// its answer, for callers that handle a refusal themselves.
	// Context: any thread outside the domain's sections, also an SRCU
	// callback.  May block briefly.
	// Returns: 0 (released: the destructor then does nothing, and a
	// second close() returns 0 again); -EBUSY (nothing printed; the
	// domain stays open and usable) when a reader is inside a section
	// of it, callbacks are pending (barrier() first) or a polled grace
	// period is pending.  After 0, any use other than close() and
	// poll() is misuse that the C library reports and aborts on.
	int close() noexcept
	{
		int rc;

		if (!open_)
			return 0;
		rc = sk_srcu_destroy(&d_);
		if (rc == 0)
			open_ = false;
		return rc;
	}

	// native() - the struct sk_srcu, for the C API (sk_srcu_*()).
	// Context: any thread.  The pointer is valid for the object's life.
	struct sk_srcu *native() noexcept { return &d_; }
	const struct sk_srcu *native() const noexcept { return &d_; }

	// synchronize() - sk_synchronize_srcu(): wait until every section of
	// this domain that began before the call has ended.
	// Context: any thread outside a section of this domain (inside one
	// it would deadlock: message and abort); sections of other domains
	// are fine.  Blocks (spins briefly, then sleeps in naps of 20 us to
	// 1 ms; readers wake no one).  Concurrent callers share grace periods.
	// Ordering: full barrier on entry and exit.
	// Reclamation: objects unlinked before the call may be freed after it.
	void synchronize() noexcept { sk_synchronize_srcu(&d_); }

	// synchronize_expedited() - sk_synchronize_srcu_expedited(): as
	// synchronize(), polling and yielding instead of sleeping (lower
	// latency, more CPU).
	void synchronize_expedited() noexcept
	{
		sk_synchronize_srcu_expedited(&d_);
	}

	// barrier() - sk_srcu_barrier(): wait until every callback queued
	// on this domain (call()) before the call has run.  Returns at once
	// when none is pending.
	// Context: outside sections of this domain and outside SRCU
	// callbacks (either would deadlock: message and abort).  Blocks.
	// Ordering: the callbacks' accesses happen before the return.
	void barrier() noexcept { sk_srcu_barrier(&d_); }

	// get_state() - sk_get_state_synchronize_srcu(): a cookie for a
	// grace period that starts after the call; poll() says when it has
	// completed.  Does not start the grace period.
	// Context: any thread, also inside a section.  Never blocks.
	unsigned long get_state() noexcept
	{
		return sk_get_state_synchronize_srcu(&d_);
	}

	// start_poll() - sk_start_poll_synchronize_srcu(): as get_state(),
	// and makes sure that grace period starts (the SRCU worker drives
	// it).  While it is pending, close() refuses (-EBUSY).
	// Context: any thread, also inside a section.  Never blocks.
	unsigned long start_poll() noexcept
	{
		return sk_start_poll_synchronize_srcu(&d_);
	}

	// poll() - sk_poll_state_synchronize_srcu(): true once the grace
	// period of cookie has completed (then a full barrier, so objects
	// unlinked before get_state()/start_poll() may be freed), else
	// false.  SK_RCU_COOKIE_COMPLETED always reads as completed; so does
	// any cookie after close() released the domain.
	// Context: any thread, also inside a section.  Never blocks.
	bool poll(unsigned long cookie) noexcept
	{
		return sk_poll_state_synchronize_srcu(&d_, cookie) != 0;
	}

	// call() - run f(obj) after a grace period of this domain, on the
	// SRCU worker thread (sk_call_srcu()): after every section of this
	// domain that began before the call has ended.  Callbacks of one
	// domain run in the order queued.  f is any callable that
	// std::invoke(f, obj) accepts (a lambda, a function, a member
	// function pointer); it is decay-copied (or moved) into the node.
	// f must not throw (std::terminate() if it does), must not block for
	// long, and must not call barrier() or synchronize() of any domain.
	// Cost: one operator new and delete of a node (a struct sk_rcu_head,
	// obj and f) on top of sk_call_srcu(); embed a struct sk_rcu_head and
	// call sk_call_srcu() on native() to avoid the allocation.
	// Context: any thread, also inside a section and inside a callback.
	// Wait-free enqueue after the allocation (see sk_call_srcu() for the
	// yield of a producer far ahead of the worker).
	// Ordering: the caller's accesses before the call happen before f
	// runs.  Reclamation: f may free obj.
	// Throws: std::bad_alloc (nothing queued); std::system_error if
	// sk_call_srcu() refused the new node (it cannot: the head is new).
	template <class T, class F>
	void call(T *obj, F &&f)
	{
		using node = detail::srcu_call_node<T, std::decay_t<F>>;
		static_assert(std::is_invocable_v<std::decay_t<F> &, T *>,
			      "sk::srcu_domain::call(obj, f): f(obj) must be "
			      "callable");
		auto *n = new node(obj, std::forward<F>(f));
		int rc = sk_call_srcu(&d_, n, &node::run);

		if (rc != 0) {
			delete n;
			throw std::system_error(-rc, std::generic_category(),
						"sk_call_srcu");
		}
	}

private:
	struct sk_srcu d_; // the C domain (64-byte aligned)
	bool open_ = false; // sk_srcu_init() succeeded, not yet destroyed
};

// sk::srcu_read_guard - one read-side critical section of a domain:
// sk_srcu_read_lock() in the constructor, sk_srcu_read_unlock() with the
// index it returned in unlock() or the destructor.  Movable, not
// copyable: the section may be handed to another thread (a std::thread
// argument, a queue) and ended there, as the C API allows; the guard
// that was moved from ends nothing.  Guards nest, of one domain or of
// several.  A section may sleep, take locks or do I/O.
class srcu_read_guard {
public:
	// srcu_read_guard(d) - enter a section of d (sk_srcu_read_lock()).
	// Context: any thread, no registration; nestable.  Wait-free; the
	// first section of a thread in a domain allocates its counters,
	// and never fails (threads beyond the limit or out of memory share
	// atomic counters), so this is noexcept.
	// Ordering: the section's accesses are ordered after the lock as
	// seen by the grace period (SRCU-B, paired with SRCU-D).
	// Reclamation: objects reached in the section stay valid until the
	// section ends (unlock() or the destructor of the guard holding it).
	explicit srcu_read_guard(srcu_domain &d) noexcept
		: d_(&d), idx_(sk_srcu_read_lock(d.native()))
	{
	}

	// Take over o's section; o then holds none (index() == -1).
	srcu_read_guard(srcu_read_guard &&o) noexcept
		: d_(std::exchange(o.d_, nullptr)), idx_(std::exchange(o.idx_, -1))
	{
	}

	// End this guard's section (if it holds one), then take over o's.
	srcu_read_guard &operator=(srcu_read_guard &&o) noexcept
	{
		if (this != &o) {
			unlock();
			d_ = std::exchange(o.d_, nullptr);
			idx_ = std::exchange(o.idx_, -1);
		}
		return *this;
	}

	srcu_read_guard(const srcu_read_guard &) = delete;
	srcu_read_guard &operator=(const srcu_read_guard &) = delete;

	// ~srcu_read_guard() - unlock() if the guard still holds a section.
	~srcu_read_guard() { unlock(); }

	// unlock() - end the section now (sk_srcu_read_unlock() with the
	// guard's index), on whatever thread holds the guard.  Idempotent:
	// a guard that holds no section (unlocked, or moved from) does
	// nothing.
	// Context: any thread (also another than the one that entered).
	// Wait-free; never blocks or enters the kernel.
	// Ordering: the section's accesses are ordered before the unlock as
	// seen by the grace period (release SRCU-C, paired with SRCU-D).
	// Reclamation: objects reached in the section may be freed once this
	// returns and a grace period of the domain ends.
	void unlock() noexcept
	{
		if (d_) {
			sk_srcu_read_unlock(d_->native(), idx_);
			d_ = nullptr;
			idx_ = -1;
		}
	}

	// index() - the index sk_srcu_read_lock() returned (>= 0) while the
	// guard holds a section, -1 when it holds none.
	int index() const noexcept { return idx_; }

	// owns_lock() - true while the guard holds a section.
	bool owns_lock() const noexcept { return d_ != nullptr; }

	// domain() - the domain of the held section, nullptr when none.
	srcu_domain *domain() const noexcept { return d_; }

private:
	srcu_domain *d_; // the section's domain; nullptr: holds none
	int idx_;	 // sk_srcu_read_lock()'s index; -1: holds none
};

// srcu_dereference(p, d) - load the SRCU-protected pointer p inside a
// section of d (sk_srcu_dereference(): a consume load; d is not used).
// Context: a section of d (a srcu_read_guard of d); never blocks.
// Ordering: as sk_rcu_dereference(): accesses through the result are
// ordered after the publisher's release (sk_rcu_assign_pointer()).
template <class T>
T *srcu_dereference(T *const &p, srcu_domain &d) noexcept
{
	return sk_srcu_dereference(p, d);
}

} // namespace sk

#endif // SCALEKIT_SRCU_HPP
