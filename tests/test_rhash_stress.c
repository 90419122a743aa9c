/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_stress.c - the hash table (scalekit/rhash.h) under concurrent
 * stress.
 *
 * What is proven, one function each:
 *   - concurrent stress (tools/rhash_stress.c, the harness `scalekit
 *     torture rhash` shares): lookups and iterations under
 *     sk_rcu_read_lock during continuous inserts, removes, replaces and
 *     resizes never miss an untouched key, never see a freed object,
 *     always terminate, and the table equals the model at the end; with
 *     automatic resizing too; the broken twin that frees without a grace
 *     period MUST be caught.
 */
#include "scalekit/rhash.h"

#include <stdint.h>
#include <string.h>

#include "rhash_stress.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* ---- concurrent stress ----------------------------------------------- */

static struct sk_rhs_config stress_cfg(const char *name)
{
	struct sk_rhs_config c;
	unsigned int slow = sk_test_slow();

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.readers = 2;
	c.updaters = 2;
	c.keys_per_updater = 256;
	c.updates = 300000 / slow;
	c.resizers = 1;
	c.max_log2 = 8;
	c.iterate_every = 16;
	c.lookups_per_section = 8;
	c.spin = 64;
	c.seed = sk_t_seed;
	return c;
}

/*
 * Run c: no failure, the table ends equal to the updaters' models, and
 * the run checked keys; returns its result for the case's own checks.
 */
static struct sk_rhs_result stress_run_clean(const struct sk_rhs_config *c)
{
	struct sk_rhs_result r;

	SK_CHECK_EQ(sk_rhs_run(c, &r), 0);
	sk_rhs_print(c, &r);
	SK_CHECK_EQ(sk_rhs_failures(&r), 0);
	SK_CHECK_EQ(r.final_mismatch, 0);
	SK_CHECK_GT(r.checked_keys, 0);
	return r;
}

static void stress_lookups_iterations_updates_resizes(void)
{
	struct sk_rhs_config c = stress_cfg("stress");
	struct sk_rhs_result r = stress_run_clean(&c);

	SK_CHECK_GT(r.iterations, 0);
	SK_CHECK_GT(r.resizes, 0);
	SK_CHECK_EQ(r.resize_errors, 0);
}

/* No resizer thread: only the table's own resizes, on its load factor. */
static void stress_with_automatic_resize(void)
{
	struct sk_rhs_config c = stress_cfg("stress, automatic resize");

	c.automatic_resize = 1;
	c.resizers = 0;
	c.keys_per_updater = 1024;
	c.max_log2 = 10;
	SK_CHECK_GT(stress_run_clean(&c).max_buckets_seen, 1);
}

/*
 * Every update inside a read section, against continuous resizes and
 * automatic ones: none fails, none hangs (the table's resizes never hold
 * a bucket lock across a grace period).
 */
static void stress_updates_inside_read_sections(void)
{
	struct sk_rhs_config c = stress_cfg("stress, updates in sections");
	struct sk_rhs_result r;

	c.updates_in_section = 1;
	c.automatic_resize = 1;
	c.updates /= 2;
	r = stress_run_clean(&c);
	SK_CHECK_GT(r.resizes, 0);
	SK_CHECK_EQ(r.resize_errors, 0);
}

/*
 * Lock-free inserts (sk_rhash_insert() only) against continuous resizes of
 * tiny tables (1 to 8 buckets): long chains, so inserts keep pushing onto
 * the heads the migrator compare-and-swaps (RH-M2, RH-M3), on old buckets
 * it has just marked moved, and across the lock-array changes (RH-D1).
 * No key is lost or found twice, no freed object is seen.
 */
static void stress_lock_free_inserts_race_the_migration(void)
{
	struct sk_rhs_config c = stress_cfg("stress, lock-free inserts, tiny "
					     "tables");

	c.plain_inserts = 1;
	c.updaters = 3;
	c.readers = 1;
	c.keys_per_updater = 64;
	c.max_log2 = 3;
	c.updates /= 2;
	stress_run_clean(&c);
}

/* Freeing without a grace period MUST be caught (quarantine + poison). */
static void stress_broken_twin_is_caught(void)
{
	struct sk_rhs_config c = stress_cfg("stress, BROKEN: free without a "
					     "grace period");
	struct sk_rhs_result r;
	int round;

	/* Frees at once (quarantined, poisoned); readers linger to see it. */
	c.broken = c.stop_on_failure = 1;
	c.updates = 200000;
	c.spin = 2000;
	for (round = 0; round < 20; round++) {
		c.seed = sk_t_seed + (uint64_t)round;
		SK_CHECK_EQ(sk_rhs_run(&c, &r), 0);
		if (r.poisoned)
			break;
	}
	sk_rhs_print(&c, &r);
	SK_CHECK_GT(r.poisoned, 0);
	SK_CHECK_EQ(r.final_mismatch, 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(stress_lookups_iterations_updates_resizes);
	SK_RUN(stress_with_automatic_resize);
	SK_RUN(stress_updates_inside_read_sections);
	SK_RUN(stress_lock_free_inserts_race_the_migration);
	SK_RUN(stress_broken_twin_is_caught);
	return sk_test_report();
}
