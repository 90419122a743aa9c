// SPDX-License-Identifier: MIT
//
// What the C++ stress tests of the RCU structures share: objects whose
// fields are poisoned when they are freed, a retirer that frees unlinked
// objects after a grace period (sk_synchronize_rcu() or sk_call_rcu(), at
// random) or, in the broken twin, poisons them at once, and the
// command-line switch --broken that selects the twin.
//
// The broken twin never frees an object a reader may still hold: it
// poisons at once and frees two grace periods later (a quarantine), so
// that readers see the poison and ASan stays quiet.
#ifndef SK_TEST_RETIRE_HPP
#define SK_TEST_RETIRE_HPP

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "scalekit/intrusive.hpp"
#include "sk_test.hpp"

// The value of a freed object's poison field.
constexpr unsigned long sk_test_poison =
	static_cast<unsigned long>(0x6b6b6b6b6b6b6b6bULL);

// Base of the objects the stress tests put in their structures.
struct sk_test_retiree {
	// 0 while live; sk_test_poison once freed.  Relaxed atomics: a
	// reader that reads it concurrently with a (broken) poisoning is the
	// bug being caught, not a data race of the test.
	std::atomic<unsigned long> poison{ 0 };
	sk_rcu_head rcu{};			  // for sk_call_rcu()
	sk_test_retiree *qnext = nullptr; // quarantine link (broken twin)

	bool freed() const noexcept
	{
		return poison.load(std::memory_order_relaxed) == sk_test_poison;
	}
	void poison_now() noexcept
	{
		poison.store(sk_test_poison, std::memory_order_relaxed);
	}
};

// The program's stress (set by sk_test_stress_main()): one run, correct or
// broken, with a seed; returns how often readers saw a freed object.
inline unsigned long (*sk_test_stress_run)(bool broken, std::uint64_t seed);

// What a stress run checks last: readers never saw a freed object (said
// in the words the broken twin's CTest looks for).
inline void sk_test_check_no_freed_seen(unsigned long seen)
{
	if (seen)
		fprintf(stderr, "  readers saw a freed object %lu times\n",
			seen);
	SK_CHECK_EQ(seen, 0);
}

inline void stress_readers_updaters(void)
{
	sk_test_stress_run(false, sk_t_seed);
}

// The broken twin: rounds until the readers catch it (then the checks of
// the run have failed), at most 20.
inline void stress_broken_twin(void)
{
	for (std::uint64_t round = 0; round < 20; round++)
		if (sk_test_stress_run(true, sk_t_seed + 100 + round))
			break;
}

//
// The start of main(): --broken (the broken twin; removed before the rest
// of the command line goes to sk_test_args()), the seed, and in broken
// mode the twin.  Returns true when it ran the twin: main() then returns
// sk_test_report().
//
inline bool sk_test_stress_main(int &argc, char **argv,
				unsigned long (*run)(bool, std::uint64_t))
{
	bool broken = argc > 1 && std::strcmp(argv[1], "--broken") == 0;

	if (broken) {
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	sk_test_stress_run = run;
	sk_test_args(argc, argv);
	sk_test_seed_init();
	if (broken)
		SK_RUN(stress_broken_twin);
	return broken;
}

//
// A retirer of one updater thread.  retire(o) after o is unlinked:
// correct mode frees o after a grace period, poisoning it first (half
// through sk_call_rcu(), half in batches after sk_synchronize_rcu());
// broken mode poisons o at once.  T derives from sk_test_retiree.
//
template <class T>
class sk_test_retirer {
public:
	sk_test_retirer(bool broken, std::uint64_t seed) noexcept
		: broken_(broken), rng_(seed | 1)
	{
	}
	sk_test_retirer(const sk_test_retirer &) = delete;
	sk_test_retirer &operator=(const sk_test_retirer &) = delete;

	// Free what is left, after a grace period.
	~sk_test_retirer()
	{
		sk_synchronize_rcu();
		free_all(batch_);
		free_chain(quarantine_);
		free_chain(quarantine_old_);
	}

	void retire(T *o)
	{
		if (broken_) {
			retire_broken(o);
		} else if (sk_test_rand(&rng_) & 1) {
			if (sk_call_rcu(&o->rcu, &free_cb) != 0)
				std::abort();
		} else {
			batch_.push_back(o);
			if (batch_.size() == 8) {
				sk_synchronize_rcu();
				free_all(batch_);
			}
		}
	}

private:
	static void poison_free(T *o)
	{
		o->poison_now();
		delete o;
	}
	static void free_cb(sk_rcu_head *h)
	{
		poison_free(static_cast<T *>(
			sk::detail::owner_of(h, &sk_test_retiree::rcu)));
	}
	static void free_all(std::vector<T *> &v)
	{
		for (T *o : v)
			poison_free(o);
		v.clear();
	}
	static void free_chain(sk_test_retiree *q)
	{
		while (q) {
			sk_test_retiree *next = q->qnext;

			delete static_cast<T *>(q);
			q = next;
		}
	}
	// Poison now; free two rounds of 64 later, after a grace period.
	void retire_broken(T *o)
	{
		o->poison_now();
		o->qnext = quarantine_;
		quarantine_ = o;
		if (++nbroken_ % 64 == 0) {
			sk_synchronize_rcu();
			free_chain(quarantine_old_);
			quarantine_old_ = quarantine_;
			quarantine_ = nullptr;
		}
	}

	bool broken_;
	std::uint64_t rng_;
	std::vector<T *> batch_;			 // waiting for a grace period
	sk_test_retiree *quarantine_ = nullptr;	 // broken: poisoned lately
	sk_test_retiree *quarantine_old_ = nullptr; // broken: a round earlier
	unsigned long nbroken_ = 0;
};

#endif
