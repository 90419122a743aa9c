// SPDX-License-Identifier: MIT
//
// test_cpp_rcu.cpp - the API of scalekit/rcu.hpp, one behaviour per test:
// the domain as a Lockable, nesting, guards, rcu_ptr's operations and
// return values, call_rcu with capturing and move-only callables, retire()
// with stateless and stateful deleters and on an object built over
// other bytes (its head not initialised), rcu_retire() on both of its paths,
// rcu_barrier() waiting for them, the registration and QSBR scopes, and a
// second retire() dying with its message (a forked child).
//
// The death test runs first: the fork()ed child starts the callback
// worker, which ThreadSanitizer refuses in the child of a process that
// has threads already (no other test has started one yet then).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

#include "scalekit/rcu.hpp"
#include "sk_test.hpp"

namespace {

std::atomic<int> deleted{0}; // ~obj and ~plain runs

struct obj : sk::rcu_obj_base<obj> {
	int value = 7;

	~obj()
	{
		deleted.fetch_add(1, std::memory_order_relaxed);
	}
};

// A stateful deleter: its state (where to count, what to expect) must
// arrive in the callback.
struct tally_deleter {
	std::atomic<int> *count = nullptr;
	int expect = 0;

	template <class T>
	void operator()(T *p) const
	{
		if (count && p->value == expect)
			count->fetch_add(1, std::memory_order_relaxed);
		delete p;
	}
};

struct tallied : sk::rcu_obj_base<tallied, tally_deleter> {
	int value = 0;
};

// Compile-time facts: the stateless base adds only the head, and the
// bases are trivially copyable (P2545: when D is).
static_assert(sizeof(sk::rcu_obj_base<obj>) == sizeof(struct sk_rcu_head));
static_assert(std::is_trivially_copyable_v<sk::rcu_obj_base<obj>>);
static_assert(!std::is_default_constructible_v<sk::rcu_domain>);
static_assert(!std::is_copy_constructible_v<sk::rcu_domain>);
static_assert(!std::is_copy_constructible_v<sk::rcu_read_guard>);
static_assert(!std::is_move_constructible_v<sk::rcu_read_guard>);
static_assert(!std::is_copy_constructible_v<sk::rcu_ptr<int>>);
static_assert(noexcept(sk::rcu_default_domain().lock()));
static_assert(noexcept(sk::rcu_default_domain().unlock()));
static_assert(noexcept(std::declval<sk::rcu_ptr<int> &>().load()));

void retire_twice_child()
{
	auto *o = new obj;
	sk::rcu_read_guard g; // the first callback cannot start meanwhile

	o->retire();
	o->retire();
}

void retire_twice_dies_with_message()
{
	sk_test_expect_abort(retire_twice_child, 120,
			     "retire() called again before the object's "
			     "deleter ran",
			     "scalekit: thread ");
}

void domain_is_lockable()
{
	sk::rcu_domain &d = sk::rcu_default_domain();

	SK_CHECK(&d == &sk::rcu_default_domain());
	SK_CHECK(!sk_rcu_read_lock_held());
	{
		std::scoped_lock lk(d);
		SK_CHECK(sk_rcu_read_lock_held());
	}
	SK_CHECK(!sk_rcu_read_lock_held());
	{
		std::unique_lock<sk::rcu_domain> lk(d);
		SK_CHECK(lk.owns_lock());
		SK_CHECK(sk_rcu_read_lock_held());
		lk.unlock();
		SK_CHECK(!sk_rcu_read_lock_held());
		lk.lock();
		SK_CHECK(sk_rcu_read_lock_held());
	}
	SK_CHECK(!sk_rcu_read_lock_held());
	{
		std::unique_lock<sk::rcu_domain> lk(d, std::try_to_lock);
		SK_CHECK(lk.owns_lock());
		SK_CHECK(sk_rcu_read_lock_held());
	}
	SK_CHECK(d.try_lock());
	SK_CHECK(sk_rcu_read_lock_held());
	d.unlock();
	{
		std::lock_guard<sk::rcu_domain> lk(d);
		SK_CHECK(sk_rcu_read_lock_held());
	}
	SK_CHECK(!sk_rcu_read_lock_held());
}

void regions_nest()
{
	sk::rcu_domain &d = sk::rcu_default_domain();

	d.lock();
	d.lock();
	{
		std::scoped_lock lk(d);
		SK_CHECK(sk_rcu_read_lock_held());
	}
	d.unlock();
	SK_CHECK(sk_rcu_read_lock_held());
	d.unlock();
	SK_CHECK(!sk_rcu_read_lock_held());
	sk::rcu_synchronize(); // outside every region: returns
}

void guard_inside_guard()
{
	{
		sk::rcu_read_guard outer;
		{
			sk::rcu_read_guard inner;
			SK_CHECK(sk_rcu_read_lock_held());
		}
		SK_CHECK(sk_rcu_read_lock_held());
	}
	SK_CHECK(!sk_rcu_read_lock_held());
	sk::rcu_synchronize(sk::rcu_default_domain());
}

void rcu_ptr_operations()
{
	int a = 1, b = 2, c = 3;
	sk::rcu_ptr<int> p;

	SK_CHECK(p.load() == nullptr);
	p.store(&a);
	{
		sk::rcu_read_guard g;
		SK_CHECK(p.load() == &a);
		SK_CHECK_EQ(*p.load(), 1);
	}
	SK_CHECK(p.load_protected() == &a);
	SK_CHECK(p.exchange(&b) == &a);
	SK_CHECK(p.load() == &b);

	int *expected = &a; // stale: fails and reports the current one
	SK_CHECK(!p.compare_exchange(expected, &c));
	SK_CHECK(expected == &b);
	SK_CHECK(p.load() == &b);
	SK_CHECK(p.compare_exchange(expected, &c)); // now current: succeeds
	SK_CHECK(expected == &b);
	SK_CHECK(p.load() == &c);

	sk::rcu_ptr<int> q(&a);
	SK_CHECK(q.load() == &a);
}

void call_rcu_runs_capturing_lambda()
{
	auto *o = new obj;
	std::atomic<int> ran{0};
	int seen = 0;
	obj *seen_obj = nullptr;
	int captured = 42;

	deleted.store(0);
	{
		sk::rcu_read_guard g; // allowed inside a read section
		sk::call_rcu(o, [&, captured](obj *x) {
			seen = captured + x->value;
			seen_obj = x;
			delete x;
			ran.fetch_add(1, std::memory_order_relaxed);
		});
		// The grace period cannot end while this section runs.
		SK_CHECK_EQ(ran.load(), 0);
	}
	sk::rcu_barrier();
	SK_CHECK_EQ(ran.load(), 1);
	SK_CHECK_EQ(seen, 49);
	SK_CHECK(seen_obj == o);
	SK_CHECK_EQ(deleted.load(), 1);
}

// A move-only callable (not copyable: owns a unique_ptr).
struct move_only_call {
	std::unique_ptr<int> owned;
	std::atomic<int> *out;

	void operator()(int *p)
	{
		out->store(*owned + *p);
	}
};
static_assert(!std::is_copy_constructible_v<move_only_call>);

void call_rcu_takes_move_only_callable()
{
	static int x = 5;
	std::atomic<int> out{0};

	sk::call_rcu(&x, move_only_call{std::make_unique<int>(10), &out});
	auto up = std::make_unique<int>(100);
	sk::call_rcu(&x, [u = std::move(up), &out](int *p) {
		out.fetch_add(*u + *p);
	});
	sk::rcu_barrier();
	SK_CHECK_EQ(out.load(), 120); // 15, then 15 + 105
}

// After rcu_barrier(), every scheduled deleter has run: n objects gone.
void barrier_then_expect_deleted(int n)
{
	sk::rcu_barrier();
	SK_CHECK_EQ(deleted.load(), n);
}

void retire_with_stateless_deleter()
{
	deleted.store(0);
	auto *o = new obj;
	{
		sk::rcu_read_guard g;
		o->retire();
		SK_CHECK_EQ(deleted.load(), 0);
	}
	barrier_then_expect_deleted(1);
}

void retire_with_stateful_deleter()
{
	std::atomic<int> count{0};
	auto *t = new tallied;

	t->value = 77;
	{
		sk::rcu_read_guard g;
		t->retire(tally_deleter{&count, 77}, sk::rcu_default_domain());
		SK_CHECK_EQ(count.load(), 0);
	}
	sk::rcu_barrier();
	SK_CHECK_EQ(count.load(), 1); // the state arrived with the object

	auto *u = new tallied; // the default argument: D() counts nothing
	u->retire();
	sk::rcu_barrier();
	SK_CHECK_EQ(count.load(), 1);
}

// An object built in memory that held other bytes: retire() must not
// need an initialised head (rcu_obj_base's constructor stores nothing,
// docs/cpp.md, "What it costs"); the deleter destroys it and frees the
// memory, and counts.
struct destroy_free {
	std::atomic<int> *count = nullptr;

	template <class T>
	void operator()(T *p) const
	{
		p->~T();
		std::free(static_cast<void *>(p));
		count->fetch_add(1, std::memory_order_relaxed);
	}
};

struct in_place : sk::rcu_obj_base<in_place, destroy_free> {
	int value = 0;
};

void retire_needs_no_initialised_head()
{
	std::atomic<int> count{0};
	int i;

	for (i = 0; i < 64; i++) {
		void *mem = std::malloc(sizeof(in_place));

		SK_CHECK(mem != nullptr);
		// Bytes a head never holds: neither zero nor a queued mark.
		std::memset(mem, 0xa5 + i, sizeof(in_place));
		auto *o = new (mem) in_place;

		o->retire(destroy_free{&count});
	}
	sk::rcu_barrier();
	SK_CHECK_EQ(count.load(), 64);
}

struct plain {
	int value = 0;

	~plain()
	{
		deleted.fetch_add(1, std::memory_order_relaxed);
	}
};

// The first object's grace period may end while the section below runs
// (it began before the section), so the check inside the section counts
// only deletions after the first one has been waited for.
void rcu_retire_default_delete()
{
	deleted.store(0);
	sk::rcu_retire(new plain); // outside a section: sk_defer_rcu()
	barrier_then_expect_deleted(1);
	{
		sk::rcu_read_guard g;
		sk::rcu_retire(new plain); // inside: an allocated node
		SK_CHECK_EQ(deleted.load(), 1);
	}
	barrier_then_expect_deleted(2);
}

void rcu_retire_custom_deleter()
{
	std::atomic<int> count{0};
	auto *p = new plain;
	auto *q = new plain;

	p->value = 3;
	q->value = 4;
	deleted.store(0);
	sk::rcu_retire(p, tally_deleter{&count, 3});
	{
		sk::rcu_read_guard g;
		sk::rcu_retire(q, tally_deleter{&count, 4},
			       sk::rcu_default_domain());
	}
	sk::rcu_barrier();
	SK_CHECK_EQ(count.load(), 2);
	SK_CHECK_EQ(deleted.load(), 2);
}

void rcu_barrier_waits_for_many()
{
	constexpr int n = 1000;

	deleted.store(0);
	for (int i = 0; i < n; i++) {
		switch (i % 3) {
		case 0:
			(new obj)->retire();
			break;
		case 1:
			sk::rcu_retire(new plain);
			break;
		default:
			sk::call_rcu(new plain, [](plain *p) { delete p; });
		}
	}
	barrier_then_expect_deleted(n);
}

// In a thread of its own, so that the registry state starts empty.
template <class F>
void in_new_thread(F f)
{
	std::thread t(f);
	t.join();
}

bool registered()
{
	return __atomic_load_n(&sk_rcu__ctr, __ATOMIC_RELAXED) != 0;
}

void registration_scope()
{
	in_new_thread([] {
		SK_CHECK(!registered());
		{
			sk::rcu_thread_registration r;
			SK_CHECK(registered());
			{
				sk::rcu_thread_registration inner;
				SK_CHECK(registered());
			}
			SK_CHECK(registered()); // the outer scope still owns it
		}
		SK_CHECK(!registered());
		// Not registered: the C call says so.
		SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);

		sk::rcu_read_guard g; // registers on first use
		SK_CHECK(registered());
	});
	in_new_thread([] {
		{
			sk::rcu_read_guard g; // registered before the scope
		}
		{
			sk::rcu_thread_registration r;
		}
		SK_CHECK(registered()); // left as it was
		SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	});
}

void qsbr_scopes()
{
	in_new_thread([] {
		SK_CHECK(!sk_rcu_read_lock_held());
		{
			sk::rcu_qsbr_online on;
			SK_CHECK(sk_rcu_read_lock_held());
			{
				sk::rcu_qsbr_online again; // nested: no-op
				SK_CHECK(sk_rcu_read_lock_held());
			}
			SK_CHECK(sk_rcu_read_lock_held());
			sk_rcu_quiescent_state();
			{
				sk::rcu_qsbr_offline off;
				SK_CHECK(!sk_rcu_read_lock_held());
				// Offline: a grace period does not wait here.
				sk::rcu_synchronize();
				{
					sk::rcu_read_guard g;
					SK_CHECK(sk_rcu_read_lock_held());
				}
				SK_CHECK(!sk_rcu_read_lock_held());
			}
			SK_CHECK(sk_rcu_read_lock_held());
			// Online: rcu_synchronize() goes offline for the wait.
			sk::rcu_synchronize();
			SK_CHECK(sk_rcu_read_lock_held());
		}
		SK_CHECK(!sk_rcu_read_lock_held());
	});
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(retire_twice_dies_with_message); // first: see the top
	SK_RUN(domain_is_lockable);
	SK_RUN(regions_nest);
	SK_RUN(guard_inside_guard);
	SK_RUN(rcu_ptr_operations);
	SK_RUN(call_rcu_runs_capturing_lambda);
	SK_RUN(call_rcu_takes_move_only_callable);
	SK_RUN(retire_with_stateless_deleter);
	SK_RUN(retire_with_stateful_deleter);
	SK_RUN(retire_needs_no_initialised_head);
	SK_RUN(rcu_retire_default_delete);
	SK_RUN(rcu_retire_custom_deleter);
	SK_RUN(rcu_barrier_waits_for_many);
	SK_RUN(registration_scope);
	SK_RUN(qsbr_scopes);
	return sk_test_report();
}
