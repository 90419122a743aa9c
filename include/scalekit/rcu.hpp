// SPDX-License-Identifier: MIT
//
// scalekit/rcu.hpp - the C++ layer of scalekit's RCU (scalekit/rcu.h):
// the C++26 interface of P2545 ("Read-Copy Update (RCU)", [saferecl.rcu])
// in namespace sk, and RAII types for the rest of the C API.
//
// Header-only, C++17 and later; nothing here is compiled into
// libscalekit.so, which never needs the C++ runtime.  Read-side functions
// are noexcept and never throw; the functions that may throw say so.
//
// ---- P2545 in namespace sk -------------------------------------------------
// A program written against std::rcu_obj_base, std::rcu_domain,
// std::rcu_default_domain(), std::rcu_synchronize(), std::rcu_barrier()
// and std::rcu_retire() compiles against this header with std:: replaced
// by sk:: (for the RCU names only).  Where scalekit differs from P2545:
//
//  1. One domain.  rcu_default_domain() is the only rcu_domain (users
//     cannot create one, as in P2545); the dom arguments are accepted and
//     ignored.  The domain is scalekit's global RCU domain: its regions of
//     RCU protection are sk_rcu_read_lock() sections, and rcu_synchronize()
//     also waits for online QSBR threads (rcu_qsbr_online, below).
//  2. Nesting is limited to 16383 levels; deeper nesting, an unbalanced
//     unlock(), rcu_synchronize() inside a region (P2545: it would wait
//     for itself) and rcu_barrier() inside a region or inside a scheduled
//     evaluation print one "scalekit: thread N: ..." line and abort.
//  3. Where evaluations run.  P2545 lets unlock(), retire() and
//     rcu_retire() invoke scheduled evaluations; scalekit never does: they
//     run after a grace period on a callback worker thread, as sk_call_rcu()
//     callbacks: by default scalekit's one worker, one at a time, in the
//     order each thread scheduled them; with per-CPU workers
//     (sk_rcu_cb_workers_create()) on the worker of the CPU that scheduled
//     them, so evaluations that different CPUs scheduled may run
//     concurrently.  rcu_barrier() runs them itself only when no worker
//     thread can be started.  A deleter therefore runs on another thread
//     than the one that retired the object, must not block for long, and
//     must not call rcu_synchronize() or rcu_barrier(); it may retire more
//     objects.  A deleter that exits via an exception calls
//     std::terminate() (P2545: undefined behavior).
//  4. retire() called again on an object whose deleter has not started
//     (P2545: a precondition) prints one line and aborts, in every build.
//  5. The deleter of rcu_obj_base<T, D>: P2545 keeps an exposition-only
//     member `D deleter` that retire() move-assigns.  scalekit has no such
//     member: retire() move-constructs d into raw storage inside the
//     object, and the callback moves it out to a local D, destroys the
//     stored one and calls the local on the object (so a deleter that
//     destroys the object is not destroyed under its own feet).  D need
//     only be move-constructible; default-constructible only where the
//     default argument D() is used.  A D that is empty and
//     default-constructible (std::default_delete<T>, a captureless lambda
//     in C++20) is not stored at all: the callback calls D{}(p), which an
//     empty class cannot tell apart from the d given (it has no state);
//     the d given is destroyed when retire() returns.
//  6. rcu_retire(p, d) allocates one node with operator new (std::bad_alloc
//     propagates; nothing is scheduled then), except when D is empty and
//     default-constructible and the caller is outside any region of RCU
//     protection (sk_rcu_read_lock_held() is 0): then it calls
//     sk_defer_rcu(), whose node comes from a slab of 63 that the thread
//     owns (one allocation per 63 calls), and the callback calls D{}(p).
//     On that path, when memory runs out, rcu_retire() waits for a grace
//     period and calls D{}(p) itself before returning, instead of throwing
//     std::bad_alloc (sk_defer_rcu()'s rule); called from a deleter, that
//     wait happens on the callback worker, which sk_call_rcu() callbacks
//     must otherwise not do (it delays the other callbacks by a grace
//     period; only when memory has run out).
//  7. rcu_obj_base<T, D> is trivially copyable for every D (P2545: when D
//     is): copies copy the bytes of the embedded head and of D's storage.
//     A copy of a retired object is not retired (the C library's queued
//     mark includes the head's address).
//
// Cost, against the C API (the inline functions compile to the C ones):
//   rcu_domain::lock()/unlock(), rcu_read_guard: sk_rcu_read_lock()/
//     sk_rcu_read_unlock(), nothing more;
//   rcu_obj_base::retire(): sk_call_rcu() on a head inside the object (no
//     allocation, no initialisation of the head), plus one move
//     construction of a stored D;
//   rcu_retire(): see 6; call_rcu(): one allocation per call, like 6's
//     allocating path.
#ifndef SCALEKIT_RCU_HPP
#define SCALEKIT_RCU_HPP

#if __cplusplus < 201703L
#error "scalekit/rcu.hpp needs C++17 or later"
#endif

#include <cerrno>
#include <memory>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

#include "scalekit/cxx_misuse.hpp"
#include "scalekit/rcu.h"

namespace sk {

class rcu_domain;
rcu_domain &rcu_default_domain() noexcept;

namespace detail {

// misuse() of scalekit/cxx_misuse.hpp with the object and the C error.
[[noreturn]] inline void rcu_die(const char *what, const void *obj,
				 int err) noexcept
{
	misuse("%s (object %p, error %d)", what, obj, err);
}

// Report a failed C call of a constructor (not a read path): rc is 0 or
// -errno; std::bad_alloc for ENOMEM (docs/cpp.md), else std::system_error
// with the C errno.
inline void rcu_throw_if(int rc, const char *call)
{
	if (rc == -ENOMEM)
		throw std::bad_alloc();
	if (rc != 0)
		throw std::system_error(-rc, std::generic_category(), call);
}

// The head of every callback this header queues.  Standard-layout with
// the head as its first member, so a struct sk_rcu_head * that the
// callback receives and a pointer to this struct are
// pointer-interconvertible (reinterpret_cast is exact, no offsetof); the
// callback then casts down (static_cast) to the class that derives from
// it.  No default member initialiser: sk_call_rcu() needs no
// initialisation (a head that was never queued, whatever its bytes, does
// not read as queued: the C library's mark includes the head's address),
// so rcu_obj_base::retire() on a new'd object is the C loop's malloc() +
// sk_call_rcu() and no more stores (the "c++" bench's retire row).
struct rcu_head_node {
	struct sk_rcu_head sk_head_;
};

inline rcu_head_node *rcu_node_of(struct sk_rcu_head *h) noexcept
{
	return reinterpret_cast<rcu_head_node *>(h);
}

// A deleter that need not be stored: the callback calls D{} instead.
template <class D>
inline constexpr bool rcu_stateless_v =
	std::is_empty_v<D> && std::is_default_constructible_v<D>;

// A queued call of a nullary callable F, in a node that operator new
// allocated; the callback runs it, then deletes the node.
template <class F>
struct rcu_call_node : rcu_head_node {
	F fn;

	// The base value-initialised (a zeroed head): the allocation below
	// costs far more than the stores, and sk_call_rcu() can then never
	// answer -EBUSY, which rcu_call_alloc() does not check.
	template <class G>
	explicit rcu_call_node(G &&g) : rcu_head_node(), fn(std::forward<G>(g))
	{
	}

	static void run(struct sk_rcu_head *h) noexcept
	{
		auto *n = static_cast<rcu_call_node *>(rcu_node_of(h));

		n->fn();
		delete n;
	}
};

// Queue f() after a grace period, in an allocated node.  Throws what
// operator new or F's construction throws; nothing is queued then.
template <class F>
void rcu_call_alloc(F &&f)
{
	using node = rcu_call_node<std::decay_t<F>>;
	auto *n = new node(std::forward<F>(f));

	// A new head is never queued already: sk_call_rcu() returns 0.
	(void)sk_call_rcu(&n->sk_head_, &node::run);
}

// sk_defer_rcu()'s callback for rcu_retire() with a stateless D.
template <class T, class D>
void rcu_defer_run(void *p) noexcept
{
	D d{};

	d(static_cast<T *>(p));
}

// What rcu_obj_base embeds: the head, and raw bytes for a stored D (none
// for a stateless D: the base is then exactly one struct sk_rcu_head).
template <class D, bool Stored = !rcu_stateless_v<D>>
struct rcu_obj_storage : rcu_head_node {
	alignas(D) unsigned char sk_deleter_[sizeof(D)];
};

template <class D>
struct rcu_obj_storage<D, false> : rcu_head_node {
};

} // namespace detail

// ---- rcu_domain -------------------------------------------------------------

/*
 * sk::rcu_domain - scalekit's RCU domain (P2545's std::rcu_domain); the
 * only object of this type is rcu_default_domain().  Meets Cpp17Lockable:
 * std::scoped_lock, std::unique_lock and std::lock_guard work on it, and
 * each lock()..unlock() pair is a region of RCU protection (a read-side
 * critical section).  Regions nest.
 */
class rcu_domain {
public:
	rcu_domain(const rcu_domain &) = delete;
	rcu_domain &operator=(const rcu_domain &) = delete;

	/*
	 * lock() - open a region of RCU protection: sk_rcu_read_lock().
	 * Context: any thread; registers the thread on first use.  Nestable
	 * up to 16383 levels (deeper: message and abort).  Wait-free, never
	 * blocks.  The region must not block for long: it delays every
	 * grace period.
	 * Ordering: loads inside the region are ordered after its start as
	 * seen by rcu_synchronize() (sk_rcu_read_lock()'s light fence).
	 * Reclamation: objects reached inside the region stay valid until
	 * the matching unlock().
	 */
	void lock() noexcept
	{
		sk_rcu_read_lock();
	}

	/*
	 * try_lock() - lock(); returns true (P2545: equivalent to lock()).
	 * Context, ordering: as lock().
	 */
	bool try_lock() noexcept
	{
		sk_rcu_read_lock();
		return true;
	}

	/*
	 * unlock() - close the most recently opened region of RCU
	 * protection: sk_rcu_read_unlock().
	 * Context: the thread that opened it.  Wait-free, never blocks; never
	 * runs scheduled evaluations.  An unbalanced call prints a message
	 * and aborts.
	 * Ordering: loads inside the region are ordered before its end as
	 * seen by rcu_synchronize() (sk_rcu_read_unlock()'s light fence).
	 * Reclamation: objects reached inside the region may be reclaimed
	 * once this returns and a grace period ends.
	 */
	void unlock() noexcept
	{
		sk_rcu_read_unlock();
	}

private:
	// User-provided (not = default): a defaulted one would leave the
	// class an aggregate in C++17, and `sk::rcu_domain d{};` would
	// compile (tests/cpp/compile_fail/rcu_domain_brace_init.cpp).
	constexpr rcu_domain() noexcept {}

	static rcu_domain instance_;
	friend rcu_domain &rcu_default_domain() noexcept;
};

// Constant-initialised (constexpr constructor, empty class): no guard, no
// constructor at start-up, one object per program (an inline variable).
inline rcu_domain rcu_domain::instance_;

/*
 * rcu_default_domain() - the domain (P2545: a static-duration object, the
 * same every call).
 * Context: any thread.  Never blocks.  Ordering: none.
 */
inline rcu_domain &rcu_default_domain() noexcept
{
	return rcu_domain::instance_;
}

/*
 * rcu_synchronize() - wait for a grace period: sk_synchronize_rcu().
 * Every region of RCU protection (and every online QSBR reader's section)
 * that began before the call has ended when it returns.
 * Context: any thread outside a region of RCU protection (inside one it
 * would wait for itself: message and abort); an online QSBR thread goes
 * offline for the wait.  Blocks.  Does not wait for scheduled
 * evaluations (that is rcu_barrier()).
 * Ordering: full barrier on entry and exit; the unlock that closes each
 * such region happens before the return.
 * Reclamation: objects unlinked before the call may be reclaimed after it.
 */
inline void rcu_synchronize(rcu_domain & = rcu_default_domain()) noexcept
{
	sk_synchronize_rcu();
}

/*
 * rcu_barrier() - wait until every evaluation scheduled before the call
 * (retire(), rcu_retire(), call_rcu(), and the C API's sk_call_rcu() and
 * sk_defer_rcu(), by any thread) has run: sk_rcu_barrier().
 * Context: any thread outside a region of RCU protection and outside a
 * scheduled evaluation (either would deadlock: message and abort).
 * Blocks.  Does not imply rcu_synchronize() for later retires.
 * Ordering: the evaluations' accesses happen before the return.
 */
inline void rcu_barrier(rcu_domain & = rcu_default_domain()) noexcept
{
	sk_rcu_barrier();
}

// ---- rcu_obj_base -------------------------------------------------------------

/*
 * sk::rcu_obj_base<T, D> - base class of an object of type T that RCU
 * reclaims (P2545's std::rcu_obj_base): struct T : sk::rcu_obj_base<T> {}.
 * T must derive from it publicly, non-virtually and once (P2545's
 * rcu-protectable).  It embeds a struct sk_rcu_head (24 bytes where
 * pointers have 8) and, unless D is empty and default-constructible, raw
 * storage for one D; nothing else.  Its constructor stores nothing (the
 * head needs no initialisation, as for sk_call_rcu()), so `new T` costs
 * what malloc() + the C struct's initialisation cost.  Copies and moves
 * copy those bytes (always trivially copyable): a copy of a retired
 * object is not retired.
 */
template <class T, class D = std::default_delete<T>>
class rcu_obj_base : private detail::rcu_obj_storage<D> {
	using storage = detail::rcu_obj_storage<D>;
	static constexpr bool stored = !detail::rcu_stateless_v<D>;

public:
	/*
	 * retire() - schedule d(p) after a grace period, p being the T that
	 * this is a base of: sk_call_rcu() on the embedded head.  No
	 * allocation.  d is move-constructed into the object (a stateless D
	 * is not stored: D{} is called instead; see the header comment, 5).
	 * d(p) runs on scalekit's callback worker thread, after every region
	 * of RCU protection that began before the call has ended;
	 * rcu_barrier() waits for it.
	 * Context: any thread, also inside a region of RCU protection and
	 * inside a scheduled evaluation.  Wait-free: sk_call_rcu() (which may
	 * yield the CPU when a thread has very many pending).  Calling it
	 * again before d(p) started prints one line and aborts.
	 * Ordering: the caller's accesses before the call happen before d(p)
	 * runs (sk_call_rcu()'s queue push).
	 * Reclamation: d(p) may free the object; the caller must not touch it
	 * after the call except inside a region that began before the call.
	 */
	void retire(D d = D(), rcu_domain & = rcu_default_domain()) noexcept
	{
		static_assert(std::is_base_of_v<rcu_obj_base, T>,
			      "T must derive from sk::rcu_obj_base<T, D>");
		static_assert(std::is_invocable_v<D &, T *>,
			      "D must be callable with a T *");
		static_assert(!stored || std::is_move_constructible_v<D>,
			      "D must be move-constructible");
		// A second retire overwrites the first one's stored deleter
		// before sk_call_rcu() refuses it (-EBUSY); the process then
		// aborts, so nothing runs the overwritten one.
		if constexpr (stored)
			::new (static_cast<void *>(this->sk_deleter_))
				D(std::move(d));
		int rc = sk_call_rcu(&this->sk_head_, &rcu_obj_base::run);

		if (SK_UNLIKELY(rc != 0))
			detail::rcu_die(rc == -EBUSY ?
					"sk::rcu_obj_base::retire() called "
					"again before the object's deleter ran" :
					"sk::rcu_obj_base::retire(): "
					"sk_call_rcu() refused the object",
					this, rc);
	}

protected:
	rcu_obj_base() = default;
	rcu_obj_base(const rcu_obj_base &) = default;
	rcu_obj_base(rcu_obj_base &&) = default;
	rcu_obj_base &operator=(const rcu_obj_base &) = default;
	rcu_obj_base &operator=(rcu_obj_base &&) = default;
	~rcu_obj_base() = default;

private:
	// The callback: head -> rcu_head_node (pointer-interconvertible) ->
	// storage -> rcu_obj_base -> T (static_cast down the hierarchy the
	// object really has).
	static void run(struct sk_rcu_head *h) noexcept
	{
		auto *self = static_cast<rcu_obj_base *>(
			static_cast<storage *>(detail::rcu_node_of(h)));
		T *obj = static_cast<T *>(self);

		if constexpr (stored) {
			D *sd = std::launder(
				reinterpret_cast<D *>(self->sk_deleter_));
			D d(std::move(*sd));

			sd->~D();
			d(obj);
		} else {
			D d{};

			d(obj);
		}
	}
};

/*
 * rcu_retire() - schedule d(p) after a grace period, for an object without
 * an rcu_obj_base (P2545's std::rcu_retire()).  d(p) runs on scalekit's
 * callback worker thread, after every region of RCU protection that began
 * before the call has ended; rcu_barrier() waits for it.
 * Cost: with a stateless D (empty, default-constructible: e.g.
 * std::default_delete<T>) outside a region of RCU protection,
 * sk_defer_rcu(fn, p): no allocation but one slab of 63 nodes per 63
 * calls; otherwise one operator new per call (node: head, p and d; freed
 * after d(p) ran) and sk_call_rcu().  See the header comment, 6.
 * Context: any thread, also inside a region of RCU protection and inside a
 * scheduled evaluation.  Does not block, except on the stateless path when
 * memory runs out (it then waits for a grace period and calls D{}(p)).
 * Ordering: the caller's accesses before the call happen before d(p) runs.
 * Throws: std::bad_alloc, or what D's move constructor throws; nothing is
 * scheduled then (d(p) does not run).
 */
template <class T, class D = std::default_delete<T>>
void rcu_retire(T *p, D d = D(), rcu_domain & = rcu_default_domain())
{
	static_assert(std::is_move_constructible_v<D>,
		      "D must be move-constructible");
	static_assert(std::is_invocable_v<D &, T *>,
		      "D must be callable with a T *");
	if constexpr (detail::rcu_stateless_v<D>) {
		if (!sk_rcu_read_lock_held()) {
			// fn is set: sk_defer_rcu() returns 0.
			(void)sk_defer_rcu(
				&detail::rcu_defer_run<T, D>,
				const_cast<void *>(
					static_cast<const volatile void *>(p)));
			return;
		}
	}
	detail::rcu_call_alloc([p, d1 = std::move(d)]() mutable { d1(p); });
}

// ---- call_rcu -------------------------------------------------------------------

/*
 * call_rcu() - call f(obj) after a grace period, any callable f (a lambda
 * with captures, a move-only functor): sk_call_rcu() on a head in a node
 * that holds obj and f, allocated with operator new and freed after f ran.
 * No offsetof in user code.  For no allocation, derive T from
 * rcu_obj_base<T, F> and call obj->retire(f): F need not delete anything.
 * Context: any thread, also inside a read-side critical section and inside
 * a callback.  Never blocks (sk_call_rcu() may yield, see there).
 * f runs on scalekit's callback worker thread, under the rules of
 * sk_call_rcu() callbacks; sk::rcu_barrier() waits for it.
 * Ordering: the caller's accesses before the call happen before f runs;
 * f runs after every read-side critical section that began before the
 * call has ended.
 * Throws: std::bad_alloc, or what F's construction throws; nothing is
 * queued then.
 */
template <class T, class F>
void call_rcu(T *obj, F &&f)
{
	static_assert(std::is_invocable_v<std::decay_t<F> &, T *>,
		      "f must be callable with a T *");
	detail::rcu_call_alloc(
		[obj, g = std::forward<F>(f)]() mutable { g(obj); });
}

// ---- RAII scopes ------------------------------------------------------------------

/*
 * sk::rcu_read_guard - a read-side critical section for the guard's scope:
 * sk_rcu_read_lock() in the constructor, sk_rcu_read_unlock() in the
 * destructor; the same code as the C pair.  Not copyable, not movable: the
 * section belongs to the thread that opened it.  Nestable.
 * Context, ordering, reclamation: as rcu_domain::lock() and unlock().
 */
class rcu_read_guard {
public:
	[[nodiscard]] rcu_read_guard() noexcept
	{
		sk_rcu_read_lock();
	}

	~rcu_read_guard()
	{
		sk_rcu_read_unlock();
	}

	rcu_read_guard(const rcu_read_guard &) = delete;
	rcu_read_guard &operator=(const rcu_read_guard &) = delete;
};

/*
 * sk::rcu_thread_registration - the calling thread is in the RCU registry
 * for the scope: sk_rcu_register_thread() in the constructor,
 * sk_rcu_unregister_thread() in the destructor unless the thread was
 * registered already (e.g. by an earlier sk_rcu_read_lock(), or an outer
 * scope), which it reads from the thread's reader word (rcu.h ABI: 0 means
 * not registered).  Optional: sk_rcu_read_lock() registers on first use.
 * Not copyable, not movable (it belongs to its thread).
 * Context: a thread outside any read-side critical section; may block
 * briefly on the registry lock.  The destructor inside an
 * sk_rcu_read_lock() section prints a message and aborts, as
 * sk_rcu_unregister_thread() does; an online QSBR thread is put offline
 * first.
 * Ordering: full barrier in both (mutex).
 * Throws: std::bad_alloc when no registry slot could be allocated.
 */
class rcu_thread_registration {
public:
	rcu_thread_registration()
		: had_(sk_atomic_load_relaxed(&sk_rcu__ctr) != 0)
	{
		detail::rcu_throw_if(sk_rcu_register_thread(),
				     "sk_rcu_register_thread()");
	}

	~rcu_thread_registration()
	{
		if (!had_)
			(void)sk_rcu_unregister_thread();
	}

	rcu_thread_registration(const rcu_thread_registration &) = delete;
	rcu_thread_registration &
	operator=(const rcu_thread_registration &) = delete;

private:
	bool had_; // registered before the constructor: leave it so
};

/*
 * sk::rcu_qsbr_online - the calling thread is an online QSBR reader for
 * the scope: sk_rcu_thread_online() in the constructor,
 * sk_rcu_thread_offline() in the destructor unless the thread was online
 * already (an outer scope).  While online, the thread is inside a read
 * section until it calls sk_rcu_quiescent_state() (which it must do from
 * time to time) or goes offline (rcu_qsbr_offline around blocking calls).
 * Not copyable, not movable.
 * Context: a thread outside any sk_rcu_read_lock() section (else message
 * and abort); registers the thread if needed (may block briefly on the
 * registry lock).  The destructor inside an sk_rcu_read_lock() section
 * prints a message and aborts.
 * Ordering: full fences (as sk_rcu_thread_online()/_offline()).
 * Throws: std::bad_alloc when the thread could not be registered (no
 * memory for its registry slot).
 */
class rcu_qsbr_online {
public:
	rcu_qsbr_online() : nested_(sk_rcu_read_lock_held() != 0)
	{
		// Held and not aborted below: already an online QSBR
		// reader (sk_rcu_thread_online() aborts inside a section).
		detail::rcu_throw_if(sk_rcu_thread_online(),
				     "sk_rcu_thread_online()");
	}

	~rcu_qsbr_online()
	{
		if (!nested_)
			sk_rcu_thread_offline();
	}

	rcu_qsbr_online(const rcu_qsbr_online &) = delete;
	rcu_qsbr_online &operator=(const rcu_qsbr_online &) = delete;

private:
	bool nested_; // online before the constructor: stay online
};

/*
 * sk::rcu_qsbr_offline - an online QSBR thread is offline for the scope
 * (e.g. around a blocking call): sk_rcu_thread_offline() in the
 * constructor, sk_rcu_thread_online() in the destructor.  Grace periods do
 * not wait for the thread meanwhile; it may still use rcu_read_guard.
 * Not copyable, not movable.
 * Context: an online QSBR thread outside any sk_rcu_read_lock() section
 * (else message and abort).  Never blocks.  If going online again fails
 * (it cannot: the thread stayed registered), the destructor prints a
 * message and aborts.
 * Ordering: full fences (as sk_rcu_thread_offline()/_online()).
 * Reclamation: references obtained before the scope may be reclaimed
 * during it.
 */
class rcu_qsbr_offline {
public:
	rcu_qsbr_offline() noexcept
	{
		sk_rcu_thread_offline();
	}

	~rcu_qsbr_offline()
	{
		int rc = sk_rcu_thread_online();

		if (SK_UNLIKELY(rc != 0))
			detail::rcu_die("sk::rcu_qsbr_offline: "
					"sk_rcu_thread_online() failed",
					this, rc);
	}

	rcu_qsbr_offline(const rcu_qsbr_offline &) = delete;
	rcu_qsbr_offline &operator=(const rcu_qsbr_offline &) = delete;
};

// ---- rcu_ptr ------------------------------------------------------------------------

/*
 * sk::rcu_ptr<T> - an RCU-protected pointer: readers load it inside a
 * read-side critical section, updaters publish new objects in it.  It does
 * not own the object (reclaim with retire(), rcu_retire(), call_rcu() or
 * rcu_synchronize()).  Not copyable (copy the pointer: p.load()).
 * Every access is atomic (the C macros' __atomic builtins), so readers and
 * updaters never race in the C++ memory model.
 */
template <class T>
class rcu_ptr {
public:
	constexpr rcu_ptr() noexcept = default;

	/* The initial value (not yet visible to other threads). */
	constexpr explicit rcu_ptr(T *p) noexcept : p_(p)
	{
	}

	rcu_ptr(const rcu_ptr &) = delete;
	rcu_ptr &operator=(const rcu_ptr &) = delete;

	/*
	 * load() - the pointer, for use inside a read-side critical section:
	 * sk_rcu_dereference().
	 * Context: any thread, inside a read section (or an updater).  Never
	 * blocks.
	 * Ordering: loads through the returned pointer see the object as it
	 * was initialised before store()/exchange()/compare_exchange()
	 * published it (consume, which compilers treat as acquire; pairs
	 * with their release).
	 */
	T *load() const noexcept
	{
		return sk_rcu_dereference(p_);
	}

	/*
	 * store() - publish p: sk_rcu_assign_pointer().
	 * Context: updaters, serialised among themselves (a lock).  Never
	 * blocks.
	 * Ordering: release: the initialisation of *p is ordered before the
	 * store (pairs with load()).
	 */
	void store(T *p) noexcept
	{
		sk_rcu_assign_pointer(p_, p);
	}

	/*
	 * exchange() - publish p and return the pointer it replaces, in one
	 * atomic step: sk_rcu_xchg_pointer().  Updaters that swap this way
	 * need no lock: each gets a different old object to reclaim.
	 * Context: any thread.  Never blocks.
	 * Ordering: full barrier before and after (the initialisation of *p
	 * before the store, pairs with load(); the exchange before the
	 * caller's later accesses, e.g. its retire of the old object).
	 * Returns: the old pointer.
	 */
	T *exchange(T *p) noexcept
	{
		return sk_rcu_xchg_pointer(&p_, p);
	}

	/*
	 * compare_exchange() - publish desired if the pointer still equals
	 * expected: sk_rcu_cmpxchg_pointer().
	 * Context: any thread.  Never blocks (one compare-and-swap).
	 * Ordering: full barrier before and after, whether or not it
	 * exchanged (on success the initialisation of *desired is ordered
	 * before the store; pairs with load()).
	 * Returns: true when it exchanged; false with expected set to the
	 * current pointer otherwise.
	 */
	bool compare_exchange(T *&expected, T *desired) noexcept
	{
		T *old = sk_rcu_cmpxchg_pointer(&p_, expected, desired);

		if (old == expected)
			return true;
		expected = old;
		return false;
	}

	/*
	 * load_protected() - the pointer, for an updater that holds the lock
	 * serialising this pointer's updaters (no read section needed).
	 * Relaxed is enough: the only stores are other updaters', and the
	 * lock orders each of them, with the initialisation of what it
	 * published, before this load (the lock's release/acquire); an atomic
	 * load and not a plain one only because readers load concurrently
	 * with __atomic builtins too (uniform atomic access, no race).
	 * Context: an updater holding the update-side lock.  Never blocks.
	 * Ordering: none (relaxed).
	 */
	T *load_protected() const noexcept
	{
		return __atomic_load_n(&p_, __ATOMIC_RELAXED);
	}

private:
	T *p_ = nullptr; // accessed only through __atomic builtins once shared
};

} // namespace sk

#endif // SCALEKIT_RCU_HPP
