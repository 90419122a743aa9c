// SPDX-License-Identifier: MIT
//
// test_cpp_locks_sim.cpp - the elided locks of scalekit/locks.hpp on the
// simulated elision backend (linked to scalekit_elide_sim, tests/cpp.cmake;
// docs/elision.md "The simulated backend"), where sections really run as
// (simulated) transactions: the lock_guard stress of cpp_lock_stress.hpp
// under 30% random aborts must end exact with sections both committed
// and fallen back, nested std::lock_guards must make one transaction,
// and std::scoped_lock of two must abort it (its std::lock() calls
// try_lock() inside the section), as locks.hpp documents.
#include <mutex>

#include "cpp_lock_stress.hpp"
#include "scalekit/locks.hpp"
#include "sk_test.hpp"

// The simulator's hooks (sk__elide_sim_random(): abort permille of the
// transactions at random); the variant puts src/ on the include path.
extern "C" {
#include "internal/testing.h"
}

namespace {

sk_elide_stats stats_of_run(void (*run)(sk_elide_stats *))
{
	sk_elide_stats st = SK_ELIDE_STATS_INITIALIZER, out;

	run(&st);
	sk_elide_stats_read(&st, &out);
	return out;
}

template <class L>
void guarded_run(sk_elide_stats *st)
{
	L l;

	l.attach_stats(st);
	stress::lock_guard_run("lock_guard on the simulated backend", l);
}

// The adaptive policy's skips kept as short as the knobs allow (one
// acquisition after each abort): under qemu-user, where the threads'
// sections overlap far more, the default doubling skips once left a run
// with no transaction at all.  The test is about the wrappers, not the
// policy.
template <class L>
void stress_elides_and_falls_back()
{
	sk_elide_tuning saved, t;

	sk_elide_get_tuning(&saved);
	t = saved;
	t.skip_initial = 1;
	t.skip_max = 1;
	SK_CHECK_EQ(sk_elide_set_tuning(&t), 0);
	sk__elide_sim_random(300, sk_t_seed);
	sk_elide_stats st = stats_of_run(guarded_run<L>);
	sk__elide_sim_random(0, sk_t_seed);
	SK_CHECK_EQ(sk_elide_set_tuning(&saved), 0);
	SK_CHECK_GT(st.commits, 0);
	SK_CHECK_GT(st.fallbacks + st.skips, 0);
}

void backend_is_simulated()
{
	SK_CHECK_NE(sk_elide_backend(), SK_ELIDE_BACKEND_FALLBACK);
}

void elided_mutex_stress() { stress_elides_and_falls_back<sk::elided_mutex>(); }
void elided_spinlock_stress()
{
	stress_elides_and_falls_back<sk::elided_spinlock>();
}
void elided_rwlock_stress() { stress_elides_and_falls_back<sk::elided_rwlock>(); }

void nested_lock_guards_are_one_transaction()
{
	sk_elide_stats st = SK_ELIDE_STATS_INITIALIZER, out;
	sk::elided_mutex a(&st);
	sk::elided_spinlock b(&st);
	{
		std::lock_guard<sk::elided_mutex> ga(a);
		std::lock_guard<sk::elided_spinlock> gb(b);
		SK_CHECK(sk_elide_in_transaction());
	}
	SK_CHECK(!sk_elide_in_transaction());
	sk_elide_stats_read(&st, &out);
	SK_CHECK_EQ(out.commits, 1);
}

void scoped_lock_of_two_aborts_the_section()
{
	sk_elide_stats st = SK_ELIDE_STATS_INITIALIZER, out;
	sk::elided_mutex a(&st);
	sk::elided_rwlock b(&st);
	{
		std::scoped_lock g(a, b); // std::lock(): try_lock inside
	}
	SK_CHECK(!sk_elide_in_transaction());
	sk_elide_stats_read(&st, &out);
	SK_CHECK_GT(out.aborts[SK_ELIDE_ABORT_EXPLICIT], 0);
	SK_CHECK(a.try_lock()); // both released
	a.unlock();
	SK_CHECK(b.try_lock());
	b.unlock();
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(backend_is_simulated);
	SK_RUN(elided_mutex_stress);
	SK_RUN(elided_spinlock_stress);
	SK_RUN(elided_rwlock_stress);
	SK_RUN(nested_lock_guards_are_one_transaction);
	SK_RUN(scoped_lock_of_two_aborts_the_section);
	return sk_test_report();
}
