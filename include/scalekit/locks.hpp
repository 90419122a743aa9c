// SPDX-License-Identifier: MIT
//
// scalekit/locks.hpp - scalekit's locks as the C++ standard's lock
// concepts, so that std::lock_guard, std::unique_lock, std::scoped_lock
// and (for the reader-writer locks) std::shared_lock work on them:
//
//	type                 concept           C API (header)
//	sk::elided_mutex     Lockable          sk_elided_mutex_*    (elide.h)
//	sk::elided_spinlock  Lockable          sk_elided_spinlock_* (elide.h)
//	sk::elided_rwlock    SharedLockable    sk_elided_rwlock_*   (elide.h)
//	sk::rwlock_rb        SharedLockable    sk_rwlock_rb_*       (rwlock_rb.h)
//	sk::seqlock          BasicLockable     sk_seqlock_*         (seqlock.h)
//	                     (writers; the C API has no writer trylock)
//
//	sk::elided_mutex m;
//	{ std::lock_guard<sk::elided_mutex> g(m); ... }
//	sk::rwlock_rb rw;
//	{ std::shared_lock<sk::rwlock_rb> r(rw); ... read ... }
//	sk::seqlock sl;
//	auto snap = sk::seqlock_read(sl, [&] { return read_fields(); });
//
// Header-only, C++17 and later.  Every guarantee below is the C
// function's (read its comment in the C header), restated.  Lock,
// trylock and unlock functions are noexcept: the C functions cannot fail
// (misuse, such as unlocking a lock that is not held, prints a message
// and aborts, as in C).  Each type is constructed unlocked with the C
// initializer (constexpr, like std::mutex, so a lock at namespace scope
// is constant-initialized) and is neither copyable nor movable (the C
// lock may not move while in use).  Its destructor calls the C destroy
// function; a refusal (-EBUSY: the lock is still held) prints
//	scalekit: thread T: sk::TYPE::~TYPE(ADDR): sk_..._destroy()
//	returned -16 (...): the lock is held
// and aborts, as the C misuse checks do (destroying a held std::mutex
// is undefined behaviour; here it is reported).  Not recursive: a thread
// must not take a lock it holds (shared holds: see each type).
//
// Elision.  A section of an elided lock may run as a hardware
// transaction (Intel TSX RTM, when the CPU has working RTM and the
// policy allows: sk_elide_set_policy(), SCALEKIT_ELIDE=auto|on|off; the
// policy and the adaptive knobs, sk_elide_set_tuning(), are process-wide
// and set through the C API; per lock there are only the statistics,
// attached by a constructor argument or attach_stats()).  It
// is then correct all the same, but anything that a transaction cannot
// do aborts it, and the section runs again under the real lock: system
// calls and I/O (std::cout, std::printf, file streams), page faults,
// std::thread creation, operator new when it reaches mmap(), and
// usually a throw (the unwinder allocates; the section then runs again
// under the real lock and throws there).  A transaction's own effects are
// rolled back, so nothing runs twice visibly; only the time is lost, and
// a lock that keeps aborting stops trying for a while.  try_lock() and
// try_lock_shared() inside an elided section always abort it (the
// answer would be false), so std::lock() and std::scoped_lock of two or
// more locks, which call try_lock() after the first lock, run their
// sections under the real locks; nested std::lock_guards taken in a fixed
// order keep the section elided.  See docs/elision.md ("When elision
// helps, and when it hurts", "Nesting").  On a CPU without RTM (or with
// the policy off) the elided locks are plain locks.
#ifndef SCALEKIT_LOCKS_HPP
#define SCALEKIT_LOCKS_HPP

#if __cplusplus < 201703L
#error "scalekit/locks.hpp needs C++17 or later"
#endif

#include <type_traits>
#include <utility>

#include "scalekit/cxx_misuse.hpp"
#include "scalekit/elide.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"

namespace sk {

// Non-copyable, non-movable: the C objects keep their address.
#define SK__CXX_PINNED(T)                 \
	T(const T &) = delete;            \
	T &operator=(const T &) = delete; \
	T(T &&) = delete;                 \
	T &operator=(T &&) = delete

// sk::elided_mutex - sk_elided_mutex: a futex mutex whose sections are
// elided where the CPU has working RTM; contended waiters sleep, and a
// waiter that keeps losing gets the lock next (ticket order).  Lockable.
class elided_mutex {
public:
	// elided_mutex() - unlocked, no statistics attached (the C
	// SK_ELIDED_MUTEX_INITIALIZER, the same as sk_elided_mutex_init()).
	constexpr elided_mutex() noexcept : m_ SK_ELIDED_MUTEX_INITIALIZER {}

	// elided_mutex(stats) - unlocked, counting its elision events in
	// *stats (sk_elided_mutex_attach_stats()); *stats must outlive the
	// lock's use of it.
	explicit elided_mutex(sk_elide_stats *stats) noexcept : elided_mutex()
	{
		attach_stats(stats);
	}

	// ~elided_mutex() - sk_elided_mutex_destroy(); held: message, abort.
	~elided_mutex()
	{
		detail::check_destroy(sk_elided_mutex_destroy(&m_),
				      "sk::elided_mutex::~elided_mutex", this,
				      "sk_elided_mutex_destroy()",
				      "the lock is held");
	}

	SK__CXX_PINNED(elided_mutex);

	// lock() - sk_elided_mutex_lock(): acquire (elided or real).
	// Context: any thread that does not hold it; may block (futex)
	// while it is held for real.
	// Ordering: acquire; the section is ordered after the previous
	// holder's unlock() (release), whether either was elided or not.
	void lock() noexcept { sk_elided_mutex_lock(&m_); }

	// try_lock() - sk_elided_mutex_trylock(): acquire if that needs no
	// waiting.  Never blocks.  Inside an elided section it aborts the
	// transaction (the section then runs under the real lock).
	// Ordering: acquire when it succeeds.
	// Returns: true when the lock is now held (for real).
	bool try_lock() noexcept { return sk_elided_mutex_trylock(&m_) == 0; }

	// unlock() - sk_elided_mutex_unlock(): release.  Context: the thread
	// that locked it; never blocks (may wake a waiter).  When elided,
	// commits the transaction if this was the thread's last elided lock.
	// Ordering: release; pairs with the acquire of the next lock().
	void unlock() noexcept { sk_elided_mutex_unlock(&m_); }

	// attach_stats() - sk_elided_mutex_attach_stats(): count elision
	// events in *s (nullptr: stop).  Acquisitions that start after the
	// call use it.
	void attach_stats(sk_elide_stats *s) noexcept
	{
		sk_elided_mutex_attach_stats(&m_, s);
	}

	// native() - the C lock, for the C API.
	sk_elided_mutex *native() noexcept { return &m_; }

private:
	sk_elided_mutex m_;
};

// sk::elided_spinlock - sk_elided_spinlock: a ticket spinlock whose
// sections are elided where the CPU has working RTM; real waiters spin
// (never sleep) and get the lock in arrival order.  Lockable.
class elided_spinlock {
public:
	// elided_spinlock() - unlocked, no statistics attached
	// (SK_ELIDED_SPINLOCK_INITIALIZER, as sk_elided_spinlock_init()).
	constexpr elided_spinlock() noexcept
		: l_ SK_ELIDED_SPINLOCK_INITIALIZER
	{
	}

	// elided_spinlock(stats) - unlocked, counting into *stats
	// (sk_elided_spinlock_attach_stats()).
	explicit elided_spinlock(sk_elide_stats *stats) noexcept
		: elided_spinlock()
	{
		attach_stats(stats);
	}

	// ~elided_spinlock() - sk_elided_spinlock_destroy(); held: message,
	// abort.
	~elided_spinlock()
	{
		detail::check_destroy(sk_elided_spinlock_destroy(&l_),
				      "sk::elided_spinlock::~elided_spinlock",
				      this, "sk_elided_spinlock_destroy()",
				      "the lock is held");
	}

	SK__CXX_PINNED(elided_spinlock);

	// lock() - sk_elided_spinlock_lock(): acquire (elided or real).
	// Context: any thread that does not hold it; spins (never sleeps)
	// while it is held for real: keep sections short.
	// Ordering: acquire; pairs with the release in unlock().
	void lock() noexcept { sk_elided_spinlock_lock(&l_); }

	// try_lock() - sk_elided_spinlock_trylock(): as
	// elided_mutex::try_lock().
	bool try_lock() noexcept
	{
		return sk_elided_spinlock_trylock(&l_) == 0;
	}

	// unlock() - sk_elided_spinlock_unlock(): as elided_mutex::unlock().
	void unlock() noexcept { sk_elided_spinlock_unlock(&l_); }

	// attach_stats() - sk_elided_spinlock_attach_stats().
	void attach_stats(sk_elide_stats *s) noexcept
	{
		sk_elided_spinlock_attach_stats(&l_, s);
	}

	// native() - the C lock, for the C API.
	sk_elided_spinlock *native() noexcept { return &l_; }

private:
	sk_elided_spinlock l_;
};

// sk::elided_rwlock - sk_elided_rwlock: a reader-writer lock whose
// readers and writers both elide; writers do not starve behind readers,
// and readers that find a writer wait behind at most the writers queued
// before them.  SharedLockable: lock()/try_lock()/unlock() are the
// writer side (sk_elided_rwlock_write_*), lock_shared()/
// try_lock_shared()/unlock_shared() the reader side
// (sk_elided_rwlock_read_*).
class elided_rwlock {
public:
	// elided_rwlock() - unlocked, no statistics attached
	// (SK_ELIDED_RWLOCK_INITIALIZER, as sk_elided_rwlock_init()).
	constexpr elided_rwlock() noexcept : rw_ SK_ELIDED_RWLOCK_INITIALIZER
	{
	}

	// elided_rwlock(stats) - unlocked, counting into *stats
	// (sk_elided_rwlock_attach_stats()).
	explicit elided_rwlock(sk_elide_stats *stats) noexcept
		: elided_rwlock()
	{
		attach_stats(stats);
	}

	// ~elided_rwlock() - sk_elided_rwlock_destroy(); held (read or
	// write): message, abort.
	~elided_rwlock()
	{
		detail::check_destroy(sk_elided_rwlock_destroy(&rw_),
				      "sk::elided_rwlock::~elided_rwlock", this,
				      "sk_elided_rwlock_destroy()",
				      "the lock is held");
	}

	SK__CXX_PINNED(elided_rwlock);

	// lock() - sk_elided_rwlock_write_lock(): acquire exclusive.
	// Context: any thread that does not hold it; may block (futex).
	// Ordering: acquire; pairs with the releases of unlock_shared() and
	// unlock().
	void lock() noexcept { sk_elided_rwlock_write_lock(&rw_); }

	// try_lock() - sk_elided_rwlock_write_trylock(): never blocks;
	// aborts an elided section.  Returns: true when held exclusive.
	bool try_lock() noexcept
	{
		return sk_elided_rwlock_write_trylock(&rw_) == 0;
	}

	// unlock() - sk_elided_rwlock_write_unlock(): release an exclusive
	// hold.  Context: the thread that holds it.  Commits an elided
	// section if this was the thread's last elided lock.
	// Ordering: release; pairs with the acquires of lock_shared() and
	// lock().
	void unlock() noexcept { sk_elided_rwlock_write_unlock(&rw_); }

	// lock_shared() - sk_elided_rwlock_read_lock(): acquire shared.
	// Context: any thread; may block (futex) while a writer holds or
	// waits.  A thread may hold it shared twice only when no writer can
	// be waiting (as with any writer-fair rwlock).
	// Ordering: acquire; pairs with the release in unlock().
	void lock_shared() noexcept { sk_elided_rwlock_read_lock(&rw_); }

	// try_lock_shared() - sk_elided_rwlock_read_trylock(): never
	// blocks; aborts an elided section.  Returns: true when held shared.
	bool try_lock_shared() noexcept
	{
		return sk_elided_rwlock_read_trylock(&rw_) == 0;
	}

	// unlock_shared() - sk_elided_rwlock_read_unlock(): release a
	// shared hold.  Context: the thread that holds it.  Commits an
	// elided section if this was the thread's last elided lock.
	// Ordering: release; pairs with the acquire in lock().
	void unlock_shared() noexcept { sk_elided_rwlock_read_unlock(&rw_); }

	// attach_stats() - sk_elided_rwlock_attach_stats().
	void attach_stats(sk_elide_stats *s) noexcept
	{
		sk_elided_rwlock_attach_stats(&rw_, s);
	}

	// native() - the C lock, for the C API.
	sk_elided_rwlock *native() noexcept { return &rw_; }

private:
	sk_elided_rwlock rw_;
};

// sk::rwlock_rb - sk_rwlock_rb: a read-biased reader-writer lock (BRAVO):
// while biased, a reader writes only its own thread's memory, so readers
// scale; a writer that finds the bias on revokes it (membarrier(2) and a
// scan of the readers' table).  Writer-preferring.  No elision.
// SharedLockable: lock()/try_lock()/unlock() are the writer side
// (sk_rwlock_rb_write_*), lock_shared()/try_lock_shared()/
// unlock_shared() the reader side (sk_rwlock_rb_read_*).
class rwlock_rb {
public:
	// rwlock_rb() - unlocked and biased (SK_RWLOCK_RB_INITIALIZER, as
	// sk_rwlock_rb_init()).
	constexpr rwlock_rb() noexcept : l_ SK_RWLOCK_RB_INITIALIZER {}

	// ~rwlock_rb() - sk_rwlock_rb_destroy(); held by a reader or a
	// writer: message, abort.
	~rwlock_rb()
	{
		detail::check_destroy(sk_rwlock_rb_destroy(&l_),
				      "sk::rwlock_rb::~rwlock_rb", this,
				      "sk_rwlock_rb_destroy()",
				      "the lock is held");
	}

	SK__CXX_PINNED(rwlock_rb);

	// lock() - sk_rwlock_rb_write_lock(): acquire for writing.
	// Context: any thread that does not hold it; may block (futex), and
	// waits (spinning, then yielding) for readers announced in the
	// table.
	// Ordering: acquire; the section is ordered after every earlier
	// reader's and writer's section.
	void lock() noexcept { sk_rwlock_rb_write_lock(&l_); }

	// try_lock() - sk_rwlock_rb_write_trylock(): acquire for writing if
	// no other thread holds it; never waits for another thread.
	// Ordering: acquire when it succeeds.  Returns: true when held.
	bool try_lock() noexcept { return sk_rwlock_rb_write_trylock(&l_) == 0; }

	// unlock() - sk_rwlock_rb_write_unlock(): release a write hold.
	// Context: the thread that holds it; never blocks (wakes waiters).
	// Ordering: release.
	void unlock() noexcept { sk_rwlock_rb_write_unlock(&l_); }

	// lock_shared() - sk_rwlock_rb_read_lock(): acquire for reading.
	// Context: any thread that does not hold it (not recursive, also for
	// readers: a writer waiting between two shared holds of one thread
	// deadlocks them); may block (futex) while a writer holds or waits.
	// Ordering: acquire; the section is ordered after the previous
	// writer's unlock().
	void lock_shared() noexcept { sk_rwlock_rb_read_lock(&l_); }

	// try_lock_shared() - sk_rwlock_rb_read_trylock(): never blocks.
	// Ordering: acquire when it succeeds.
	// Returns: true when held for reading; false when a writer holds or
	// waits.
	bool try_lock_shared() noexcept
	{
		return sk_rwlock_rb_read_trylock(&l_) == 0;
	}

	// unlock_shared() - sk_rwlock_rb_read_unlock(): release a read hold.
	// Context: the thread that took it; never blocks (wakes a writer).
	// Ordering: release; the section is ordered before the next writer's.
	void unlock_shared() noexcept { sk_rwlock_rb_read_unlock(&l_); }

	// is_biased() - sk_rwlock_rb_is_biased(): true while readers
	// announce in the table (for tests and statistics; may be stale).
	bool is_biased() const noexcept { return sk_rwlock_rb_is_biased(&l_); }

	// native() - the C lock, for the C API.
	sk_rwlock_rb *native() noexcept { return &l_; }

private:
	sk_rwlock_rb l_;
};

// sk::seqlock - sk_seqlock: writers take a futex lock and make the
// sequence count odd while they write; readers never write shared memory
// and retry when a writer overlapped them (seqlock_read() below).
// BasicLockable on the writer side (lock()/unlock(): the C API has no
// writer trylock), so std::lock_guard, std::unique_lock (without
// try_to_lock or try_lock()) and std::scoped_lock of this one lock work;
// std::lock() and std::scoped_lock of several locks need try_lock() and
// do not compile with it.  No elision.
//
// The data a seqlock protects are read while writers write them: read
// and write them with atomic accesses (SK_READ_ONCE()/SK_WRITE_ONCE(),
// std::atomic with memory_order_relaxed, or C++20 std::atomic_ref), and
// do not follow pointers or divide by values read before the snapshot is
// known to be consistent.
class seqlock {
public:
	// seqlock() - count 0, writer lock free (SK_SEQLOCK_INITIALIZER, as
	// sk_seqlock_init()).
	constexpr seqlock() noexcept : sl_ SK_SEQLOCK_INITIALIZER {}

	// ~seqlock() - sk_seqlock_destroy(); a writer holds it: message,
	// abort.
	~seqlock()
	{
		detail::check_destroy(sk_seqlock_destroy(&sl_),
				      "sk::seqlock::~seqlock", this,
				      "sk_seqlock_destroy()", "the lock is held");
	}

	SK__CXX_PINNED(seqlock);

	// lock() - sk_seqlock_write_lock(): acquire the writer lock and open
	// a write section (the count becomes odd: readers wait and retry).
	// Context: any thread that does not hold it; may block (futex)
	// while another writer holds it.
	// Ordering: acquire (against the previous writer), then the count
	// store before the data stores that follow (SEQ-W0 + SEQ-W1).
	void lock() noexcept { sk_seqlock_write_lock(&sl_); }

	// unlock() - sk_seqlock_write_unlock(): close the write section
	// (the count becomes even) and release the writer lock.
	// Context: the thread that holds it; never blocks (may wake a
	// writer).  Releasing an unheld seqlock is reported, then aborts.
	// Ordering: the data stores before it are ordered before the count
	// store (SEQ-W2 + SEQ-W3); release (against the next writer).
	void unlock() noexcept { sk_seqlock_write_unlock(&sl_); }

	// read_begin() - sk_seqlock_read_begin(): start a read attempt;
	// returns the count to pass to read_retry().
	// Context: any thread except the one holding the writer lock (it
	// would wait forever); never blocks, but waits (spinning, then
	// yielding) while a writer is inside its section.
	// Ordering: the loads after it are ordered after the count load
	// (SEQ-R0 + SEQ-R1).
	unsigned read_begin() const noexcept
	{
		return sk_seqlock_read_begin(&sl_);
	}

	// read_retry() - sk_seqlock_read_retry(): true when a writer
	// overlapped the reads since read_begin() returned start (read
	// again), false when they saw one consistent snapshot.
	// Context: any thread; never blocks.
	// Ordering: the data loads before it are ordered before the count
	// load (SEQ-R3 + SEQ-R4).
	bool read_retry(unsigned start) const noexcept
	{
		return sk_seqlock_read_retry(&sl_, start) != 0;
	}

	// native() - the C lock, for the C API.
	sk_seqlock *native() noexcept { return &sl_; }

private:
	sk_seqlock sl_;
};

#undef SK__CXX_PINNED

// seqlock_read(s, f) - run f() between s.read_begin() and
// s.read_retry() until one run saw a consistent snapshot, and return
// that run's result (f's last result).  f must return its snapshot by
// value (a copy of the fields it read; a reference would escape the
// check, so reference results do not compile) or return nothing.
// f may run several times, and every run but the last may see torn data:
// it must not follow pointers, divide, index or otherwise trust values it
// read; it should read the data with atomic accesses (see sk::seqlock)
// and have no other side effects.
// Context: any thread except the one holding s's writer lock; never
// blocks, but waits while a writer is inside its section, and retries
// for as long as writers keep overlapping it (writers may starve it).
// Ordering: read_begin()'s and read_retry()'s: the loads f made in the
// returned run are ordered between two equal even count loads, so they
// saw no write section.
// Throws: whatever f throws (noexcept when f() and the result's move
// are); nothing of its own.
template <class F>
auto seqlock_read(const seqlock &s, F &&f) noexcept(
	noexcept(f()) && (std::is_void_v<decltype(f())> ||
			  std::is_nothrow_move_constructible_v<decltype(f())>))
	-> decltype(f())
{
	using result = decltype(f());
	static_assert(!std::is_reference_v<result>,
		      "sk::seqlock_read(s, f): f must return a snapshot by "
		      "value, not a reference into the shared data");
	for (;;) {
		unsigned start = s.read_begin();

		if constexpr (std::is_void_v<result>) {
			f();
			if (!s.read_retry(start))
				return;
		} else {
			result r = f();

			if (!s.read_retry(start))
				return r;
		}
	}
}

} // namespace sk

#endif // SCALEKIT_LOCKS_HPP
