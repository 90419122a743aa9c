/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_checker.c - the relativistic hash table under the Triplett
 * checker (tests/rcu_checker.h).  Linked with scalekit_testing, the library
 * built with SK_TESTING=1 (tests/testing.cmake), so every publication and
 * grace period inside src/rhash*.c calls the checker.
 *
 * The reader model is sk_rhash_lookup() and sk_rhash_iter_next() step by
 * step: a lookup loads ht->tbl, then the bucket head, then next pointers,
 * and at the chain's end the array's future pointer, going on in the
 * future array's bucket; an iteration walks bucket after bucket of the
 * array it started with, returns the nodes whose hash belongs to the
 * bucket, and then goes on in the future array.  Readers that started in
 * an old array keep their positions there until the grace period that
 * precedes its free; the test's allocator quarantines every freed block,
 * so a reader loading from a freed array or reaching a freed object is
 * reported.
 *
 * What is proven:
 *   - every grow and shrink between 1..64 buckets (all power-of-two pairs,
 *     one explicit sk_rhash_resize() each, automatic resizing off), for
 *     key sets of 0..100 keys: identity hashes inserted so that every
 *     chain alternates buckets on every node at every level, identity
 *     hashes in random order, and random keys with the default hash under
 *     several seeds: every lookup of every key succeeds and every
 *     iteration returns every key, in every intermediate state of the
 *     migration (each run moved by M1, M2, M3) and for every reader paused
 *     across writes not separated by a grace period; nothing reaches freed
 *     memory; afterwards the chains are clean, the table holds every key
 *     once, and no block leaks;
 *   - inserts, removes (freed after a grace period) and replaces at every
 *     position of every bucket of 1-, 2- and 8-bucket tables;
 *   - two broken twins MUST be caught in every resize with a key
 *     (sk__rhash_test_broken): freeing the old array without the grace
 *     period (a paused reader loads from the freed array), and cutting a
 *     run off its old chain before the future array links it (a lookup
 *     misses a key present throughout);
 * The updates in the middle of a migration, the lock array and the
 * automatic resize check are in test_rhash_checker_migration.c; the model
 * both use is in tests/rhash_checker.c.
 */
#define _GNU_SOURCE
#include "rhash_checker.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk_test_util.h"

/* ---- resizes ------------------------------------------------------------- */

static const int key_counts[] = { 0, 1, 2, 3, 5, 8, 17, 33, 100 };
#define NCOUNTS (int)(sizeof(key_counts) / sizeof(key_counts[0]))

/* One checked resize from -> to; returns the violations. */
static unsigned long resize_case(unsigned long from, unsigned long to,
				 int kind, int n, uint64_t seed, int expect_ok)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, rng = seed;
	int order[MAX_IDS];
	char label[160];
	unsigned long v;

	make_keys(kind, n, &rng, order);
	table_init(from, kind != KS_RANDOM);
	fill(n, order, present);
	snprintf(label, sizeof(label),
		 "resize %lu -> %lu, %d %s keys (seed %llu)%s", from, to, n,
		 ks_names[kind], (unsigned long long)seed,
		 sk__rhash_test_broken == SK__RHASH_BROKEN_NO_GP
			 ? " WITHOUT the grace period before the free"
		 : sk__rhash_test_broken ? " CUTTING runs before linking them"
					 : "");
	add_readers(n, present);
	sk_chk_begin(&chk, label);
	SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
	v = sk_chk_end(&chk);
	if (v && expect_ok)
		SK_T_FAIL("%s: %lu violation(s): %s", label, v, chk.first);
	SK_CHECK_EQ(sk_rhash_buckets(ht), to);
	if (expect_ok)
		check_table(present, label);
	/* Stripes and the current array are all that stays allocated. */
	SK_CHECK_EQ(live_blocks(), 2);
	table_destroy();
	return v;
}

static int nseeds(void)
{
	return sk_test_slow() > 1 ? 1 : 3;
}

/*
 * Under sanitizers (sk_test_slow() > 1) the single-threaded checker is the
 * cost: one seed, no shuffled identity sets, and the sets of 33 and 100
 * keys only on the pairs that span 1..64 buckets.  Under TSan, which sees
 * nothing in the checker's own thread (it only watches the library's
 * grace periods and callback worker, which every case runs alike), the
 * sets of up to 5 keys, and those of 8 and 17 on the spanning pairs: the
 * full sweep took 20 to 23 s of the TSan job.
 */
static int case_wanted(unsigned long from, unsigned long to, int kind, int n)
{
	int extreme = (from == 1 || to == 1) && (from == 64 || to == 64);

	if (sk_test_slow() == 1)
		return 1;
	if (kind == KS_IDENTITY_SHUFFLED)
		return 0;
#if defined(__SANITIZE_THREAD__)
	return n <= 5 || (extreme && n <= 17);
#else
	return n <= 17 || extreme;
#endif
}

/* All seeds of one (from, to, kind, count) case. */
static int resize_cases(unsigned long from, unsigned long to, int kind, int n)
{
	int s, seeds = kind == KS_ALTERNATE ? 1 : nseeds();

	if (!case_wanted(from, to, kind, n))
		return 0;
	for (s = 0; s < seeds; s++)
		resize_case(from, to, kind, n,
			    sk_t_seed + (uint64_t)s * 7919 + 1, 1);
	return seeds;
}

static void every_grow_and_shrink_between_1_and_64_buckets(void)
{
	unsigned long from, to;
	int c, kind, cases = 0;

	for (from = 1; from <= 64; from *= 2)
		for (to = 1; to <= 64; to *= 2)
			for (c = 0; from != to && c < NCOUNTS; c++)
				for (kind = 0; kind < KS_KINDS; kind++)
					cases += resize_cases(from, to, kind,
							      key_counts[c]);
	fprintf(stderr, "  %d resizes checked\n", cases);
}

/*
 * Both broken twins MUST be caught in every resize that has a key: without
 * the grace period, a reader paused in the old array loads from it after
 * its free; with a run cut off its old chain before the future array has
 * it, a lookup of one of its keys misses.
 */
static void broken_twin_caught(int twin)
{
	static const int counts[] = { 1, 3, 8, 17 };
	unsigned long from, to;
	int c, kind, runs = 0, missed = 0;

	sk__rhash_test_broken = twin;
	chk.print_limit = chk.printed + 1; /* show which reader, which state */
	chk.stop_on_violation = 1;	   /* the first one is enough */
	for (from = 1; from <= 64; from *= 2)
		for (to = 1; to <= 64; to *= 2)
			for (c = 0; from != to && c < 4; c++)
				for (kind = 0; kind < KS_KINDS; kind += 2) {
					if (!resize_case(from, to, kind,
							 counts[c],
							 sk_t_seed + 17, 0)) {
						missed++;
						fprintf(stderr,
							"  NOT caught: %lu -> "
							"%lu, %d keys\n",
							from, to, counts[c]);
					}
					runs++;
				}
	sk__rhash_test_broken = 0;
	chk.print_limit = chk.printed + 20;
	chk.stop_on_violation = 0;
	fprintf(stderr, "  twin %d caught in %d of %d resizes\n", twin,
		runs - missed, runs);
	SK_CHECK_GT(runs, 0);
	SK_CHECK_EQ(missed, 0);
}

static void resize_without_grace_period_is_caught(void)
{
	broken_twin_caught(SK__RHASH_BROKEN_NO_GP);
}

static void resize_cutting_before_linking_is_caught(void)
{
	broken_twin_caught(SK__RHASH_BROKEN_CUT_FIRST);
}

/* ---- updates --------------------------------------------------------------- */


/*
 * In a table of `buckets` buckets holding the alternating set of n keys,
 * one update of key id `id` (insert: a new id, n, whose key is chosen to
 * land in bucket id % buckets).
 */
static void update_case(unsigned long buckets, int n, int op, int id)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, stable[SK_CHK_WORDS], rng = 1;
	int order[MAX_IDS], i;
	struct cobj *victim = NULL, *o;
	char label[128];

	make_keys(KS_ALTERNATE, n, &rng, order);
	table_init(buckets, 1);
	fill(n, order, present);
	if (op != U_INSERT)
		for (i = 0; i < nobjs; i++)
			if (objs[i].id == id)
				victim = &objs[i];
	memcpy(stable, present, sizeof(stable));
	if (op == U_REMOVE)
		stable[id / 64] &= ~(1ull << (id % 64));
	if (op == U_INSERT) {
		/* Lands in bucket id % buckets, after the others' keys. */
		keyval[n] = (uint64_t)(id % (int)buckets) + 1024 * buckets;
	}
	snprintf(label, sizeof(label), "%s of key id %d in %lu buckets, %d keys",
		 u_names[op], op == U_INSERT ? n : id, buckets, n);
	add_readers(n + 1, stable);
	sk_chk_begin(&chk, label);
	switch (op) {
	case U_INSERT:
		o = obj_new(n);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
		sk_chk_bit_set(present, n);
		break;
	case U_REMOVE:
		SK_CHECK_EQ(sk_rhash_remove(ht, &victim->node), 0);
		gp_then_free_later();
		obj_free(victim);
		present[id / 64] &= ~(1ull << (id % 64));
		break;
	case U_REPLACE:
		o = obj_new(id);
		SK_CHECK_EQ(sk_rhash_replace(ht, &victim->node, &o->node), 0);
		gp_then_free_later();
		obj_free(victim);
		break;
	}
	if (sk_chk_end(&chk))
		SK_T_FAIL("%s: %lu violation(s): %s", label, chk.op_violations,
			  chk.first);
	check_table(present, label);
	table_destroy();
}

static void insert_remove_replace_at_every_position(void)
{
	static const unsigned long sizes[] = { 1, 2, 8 };
	static const int counts[] = { 0, 1, 3, 8, 17 };
	int s, c, id, cases = 0;

	for (s = 0; s < 3; s++)
		for (c = 0; c < 5; c++) {
			int n = counts[c];

			for (id = 0; id < (n > (int)sizes[s] ? n : (int)sizes[s]);
			     id++, cases++)
				update_case(sizes[s], n, U_INSERT, id);
			for (id = 0; id < n; id++, cases += 2) {
				update_case(sizes[s], n, U_REMOVE, id);
				update_case(sizes[s], n, U_REPLACE, id);
			}
		}
	fprintf(stderr, "  %d updates checked\n", cases);
}

static void correct_table(void)
{
	SK_RUN(every_grow_and_shrink_between_1_and_64_buckets);
	SK_RUN(insert_remove_replace_at_every_position);
}

static void broken_twins(void)
{
	SK_RUN(resize_without_grace_period_is_caught);
	SK_RUN(resize_cutting_before_linking_is_caught);
}

int main(int argc, char **argv)
{
	return rhash_checker_main(argc, argv, correct_table, broken_twins,
				  NULL);
}
