/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_checker_migration.c - the relativistic hash table under the
 * Triplett checker (tests/rcu_checker.h), updates during a migration.
 * Linked with scalekit_testing, the library built with SK_TESTING=1
 * (tests/testing.cmake); the reader model and the table's set-up are
 * tests/rhash_checker.c (test_rhash_checker.c describes the model).
 *
 * What is proven:
 *   - the same updates made in the middle of a migration: the checker
 *     build of the table moves two runs per step and calls a test hook
 *     between two steps of an old bucket (partly moved, no lock held);
 *     at every such point of grows 1 -> 2, 1 -> 8, 2 -> 8 and 4 -> 16,
 *     an insert into every old bucket, and a remove and a replace of
 *     every key (also of the node a migrated old bucket's stale head
 *     points at): every state is checked, the table is right afterwards;
 *     the broken twin that migrates without the grace period after the
 *     future array's publication (RH-G2) MUST be caught whenever an
 *     insert that read the table before the resize pushes onto a
 *     migrated bucket (the key is lost with the old array), and the twin
 *     that leaves a stale old head on a removed or replaced node MUST be
 *     caught whenever a stale head pointed at it (a reader reaches the
 *     freed node);
 *   - two updates between two old buckets of shrinks 2 -> 1, 4 -> 1 and
 *     8 -> 2 (a shrink's chain of the future array holds the nodes of
 *     several old buckets, and every migrated old head points into it):
 *     at every such point, a remove of one key, then a remove or a
 *     replace of another, for every ordered pair: every state is
 *     checked, no migrated old head is left on another old bucket's
 *     node, the table is right afterwards; the broken twin that moves
 *     a stale head on to the removed node's successor of another old
 *     bucket MUST be caught whenever the second update is of that
 *     successor (the head stays on it, and a reader reaches it after
 *     its free);
 *   - the automatic resize check (maybe_resize(), after an update) must not
 *     read a bucket array that a concurrent resize has freed: the updater
 *     is stopped right after loading ht->tbl there (the checker hook arms
 *     a PROT_NONE trap on the array from inside its insert) while another
 *     resize completes.
 *   - a resize reports its grace periods (two: after the future array's
 *     publication, before the first migration step, and before the old
 *     array's free; no lock held across them); a change of the lock
 *     array waits for old bit holders (RH-D1), and the twin that does not
 *     drain is caught.
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
#include "sk_test_san.h"
#include "sk_test_util.h"

/* The maybe_resize() test catches SIGSEGV. */
SK_TEST_ASAN_OPTIONS("allow_user_segv_handler=1")

/* ---- updates in the middle of a migration ----------------------------- */

/*
 * The update made at one step point of a resize: between two migration
 * steps of an old bucket (the testing build moves two runs per step), with
 * the bucket partly moved.
 */
static struct {
	int at;		   /* step point to update at */
	int seen;	   /* step points passed */
	int op, id;	   /* the update; insert: id n, key in old bucket b */
	unsigned long b;   /* insert: the old bucket its key hashes to */
	struct cobj *victim;
	uint64_t *present;
	int into_migrated; /* the insert's bucket was already migrated */
	int stale_head;	   /* remove, replace: a migrated old head pointed
			      at the victim */
} mid;

/*
 * The lowest old bucket not yet migrated completely (the one partly
 * moved): the buckets before it have their bit in t->migrated.
 */
static unsigned long partly_moved_bucket(void)
{
	struct chk_tbl *t = cur_tbl();
	unsigned long i = 0;

	while (i < t->size && sk__rhash_migrated(t, i))
		i++;
	return i;
}

/* The victim is the node its migrated old bucket's head points at. */
static int victim_at_stale_head(void)
{
	struct chk_tbl *t = cur_tbl();
	unsigned long i = mid.victim->node.hash & t->mask;

	return sk__rhash_migrated(t, i) && t->buckets[i] == &mid.victim->node;
}

/* Insert the new key id mid.id; stale: as if it read the table early. */
static void mid_insert(int stale)
{
	struct cobj *o = obj_new(mid.id);

	sk__rhash_test_stale_insert = stale;
	SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
	sk_chk_bit_set(mid.present, mid.id);
}

static void race_update(int where, unsigned long hash)
{
	struct chk_tbl *t = cur_tbl();

	if (mid.op != U_RACE_M2 || where != 0 || mid.seen++ != mid.at)
		return;
	/* Identity hash: a key of the run's new bucket. */
	keyval[mid.id] = (1UL << 20) + (hash & t->future->mask);
	mid_insert(0);
}

static void mid_update(struct sk_rhash *h)
{
	struct cobj *o;

	(void)h;
	if (mid.op >= U_RACE_M2 || mid.seen++ != mid.at)
		return;
	switch (mid.op) {
	case U_STALE:
	case U_INSERT:
		mid.into_migrated = mid.b < partly_moved_bucket();
		mid_insert(mid.op == U_STALE);
		break;
	case U_REMOVE:
		mid.stale_head = victim_at_stale_head();
		SK_CHECK_EQ(sk_rhash_remove(ht, &mid.victim->node), 0);
		gp_then_free_later();
		obj_free(mid.victim);
		mid.present[mid.id / 64] &= ~(1ull << (mid.id % 64));
		break;
	case U_REPLACE:
		mid.stale_head = victim_at_stale_head();
		o = obj_new(mid.id);
		SK_CHECK_EQ(sk_rhash_replace(ht, &mid.victim->node, &o->node),
			    0);
		gp_then_free_later();
		obj_free(mid.victim);
		break;
	}
}

/* Present keys that a lookup misses after the operation. */
static int lost_keys(const uint64_t *present)
{
	int id, lost = 0;

	sk_rcu_read_lock();
	for (id = 0; id < MAX_IDS; id++)
		if (sk_chk_bit(present, id) &&
		    !sk_rhash_lookup(ht, &keyval[id]))
			lost++;
	sk_rcu_read_unlock();
	return lost;
}

/*
 * Grow from -> to with n alternating keys; at step point `at`, op on key
 * id (insert: a new id n whose key lands in old bucket b).  Returns the
 * step points passed; *caught gets the checker's violations plus the
 * present keys lost.
 */
static int mid_case(unsigned long from, unsigned long to, int n, int at,
		    int op, int id, unsigned long b, unsigned long *caught)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, stable[SK_CHK_WORDS], rng = 1;
	int order[MAX_IDS], i, expect_ok = !sk__rhash_test_broken;
	char label[160];
	unsigned long v;

	make_keys(KS_ALTERNATE, n, &rng, order);
	keyval[n] = b + (1UL << 20); /* identity hash: old bucket b */
	table_init(from, 1);
	fill(n, order, present);
	memset(&mid, 0, sizeof(mid));
	mid.at = at;
	mid.op = op;
	mid.id = op == U_REMOVE || op == U_REPLACE ? id : n;
	mid.b = b;
	mid.present = present;
	for (i = 0; (op == U_REMOVE || op == U_REPLACE) && i < nobjs; i++)
		if (objs[i].id == id)
			mid.victim = &objs[i];
	memcpy(stable, present, sizeof(stable));
	if (op == U_REMOVE || op == U_REPLACE)
		stable[id / 64] &= ~(1ull << (id % 64));
	snprintf(label, sizeof(label),
		 "grow %lu -> %lu, %d keys, %s of key id %d at step point %d%s",
		 from, to, n, u_names[op], mid.id, at,
		 expect_ok ? "" : " (BROKEN twin)");
	add_readers(n + 1, stable);
	sk__rhash_test_step_hook = mid_update;
	sk__rhash_test_race_hook = race_update;
	sk_chk_begin(&chk, label);
	SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
	v = sk_chk_end(&chk);
	sk__rhash_test_step_hook = NULL;
	sk__rhash_test_race_hook = NULL;
	if (v && expect_ok)
		SK_T_FAIL("%s: %lu violation(s): %s", label, v, chk.first);
	if (expect_ok && mid.seen > at)
		check_table(present, label);
	*caught = v + (unsigned long)lost_keys(present);
	table_destroy();
	return mid.seen;
}

/*
 * Every update at every step point of one grow; returns the cases run.
 * (A stale insert cannot happen there: the grace period RH-G2 ended it
 * before the first step.)  *at_stale counts the removes and replaces of
 * a node that a migrated old head pointed at.
 */
static int mid_grow(unsigned long from, unsigned long to, int n,
		    int *at_stale)
{
	unsigned long caught;
	int at, points, id, cases = 0, op;
	unsigned long b;

	points = mid_case(from, to, n, -1, U_INSERT, 0, 0, &caught);
	for (at = 0; at < points; at++) {
		for (b = 0; b < from; b++, cases++)
			mid_case(from, to, n, at, U_INSERT, 0, b, &caught);
		for (id = 0; id < n; id++)
			for (op = U_REMOVE; op <= U_REPLACE; op++, cases++) {
				mid_case(from, to, n, at, op, id, 0, &caught);
				*at_stale += mid.stale_head;
			}
	}
	return cases;
}

static const struct {
	unsigned long from, to;
} mid_grows[] = { { 1, 2 }, { 1, 8 }, { 2, 8 }, { 4, 16 } };
#define NMID (int)(sizeof(mid_grows) / sizeof(mid_grows[0]))

/*
 * Inserts, removes (freed after a grace period) and replaces made while a
 * grow is stopped between two migration steps of an old bucket: the
 * checker sees every state, and the table is right afterwards.  (A shrink
 * moves each old chain in one run, in one step: no partial state.)
 */
static void updates_in_the_middle_of_a_migration(void)
{
	int g, cases = 0, at_stale = 0;

	/*
	 * 17 keys (several step points per bucket) on one grow: the cost.
	 * Under sanitizers 9 there: the fewest that leave a step point
	 * after a migrated bucket (a stale old head).
	 */
	for (g = 0; g < NMID; g++)
		cases += mid_grow(mid_grows[g].from, mid_grows[g].to,
				  g != 2 ? 5 : sk_test_slow() == 1 ? 17 : 9,
				  &at_stale);
	fprintf(stderr, "  %d updates at step points checked, %d of them of "
			"a node a stale old head points at\n",
		cases, at_stale);
	SK_CHECK_GT(cases, 0);
	SK_CHECK_GT(at_stale, 0);
}

/*
 * The cases of one step point for a broken twin: the stale inserts into
 * every old bucket (U_STALE), or a remove and a replace of every key.
 * *want counts those that must be caught (into a migrated bucket; of a
 * node a stale old head points at), *got those of them caught.
 */
static void twin_step_point(unsigned long from, unsigned long to, int at,
			    int stale, int keys, int *want, int *got)
{
	unsigned long caught, i, n = stale ? from : (unsigned long)keys;
	int op, must;

	for (i = 0; i < n; i++)
		for (op = U_REMOVE; op <= U_REPLACE; op++) {
			mid_case(from, to, keys, at, stale ? U_STALE : op,
				 stale ? 0 : (int)i, stale ? i : 0, &caught);
			must = stale ? mid.into_migrated : mid.stale_head;
			*want += must;
			*got += must && caught;
			if (stale)
				break;
		}
}

/*
 * Every step point of every grow for a broken twin, with keys keys: *got
 * of *want.
 */
static void twin_cases(int twin, int stale, int keys, int *want, int *got)
{
	unsigned long caught;
	int g, at, points;

	*want = *got = 0;
	sk__rhash_test_broken = twin;
	for (g = 0; g < NMID; g++) {
		unsigned long from = mid_grows[g].from, to = mid_grows[g].to;

		points = mid_case(from, to, keys, -1, U_INSERT, 0, 0, &caught);
		for (at = 0; at < points; at++)
			twin_step_point(from, to, at, stale, keys, want, got);
	}
	sk__rhash_test_broken = 0;
}

/*
 * Broken twin: the migration starts without the grace period RH-G2, so
 * an insert that read the table before the resize began may still push
 * (a stale insert).  Into a migrated bucket it pushes its node onto the
 * old array (in front of the stale head), where it is lost when the
 * resize drops that array: it MUST be caught in every such case.
 */
static void migration_without_gp_after_publication_is_caught(void)
{
	int want, got;

	twin_cases(SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE, 1, 17, &want, &got);
	fprintf(stderr, "  twin %d caught in %d of %d stale inserts into a "
			"migrated bucket\n",
		SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE, got, want);
	SK_CHECK_GT(want, 0);
	SK_CHECK_EQ(got, want);
}

/*
 * Broken twin: a remove or replace leaves the head of the node's migrated
 * old bucket pointing at it.  The node is freed after the updater's grace
 * period, and a reader that starts later (the resize still runs) reads
 * that head: it MUST be caught whenever a stale head pointed at the
 * victim.
 */
static void stale_head_left_on_removed_node_is_caught(void)
{
	int want, got;

	/* A remove and a replace of every key: 9 keys under sanitizers. */
	twin_cases(SK__RHASH_BROKEN_STALE_HEAD, 0,
		   sk_test_slow() == 1 ? 17 : 9, &want, &got);
	fprintf(stderr, "  twin %d caught in %d of %d removes and replaces "
			"of a node a stale old head points at\n",
		SK__RHASH_BROKEN_STALE_HEAD, got, want);
	SK_CHECK_GT(want, 0);
	SK_CHECK_EQ(got, want);
}

/*
 * Every race point (a CAS of RH-M2) of the grows, with a lock-free insert
 * there.  Returns the cases run; *caught counts the cases caught.
 */
static int race_grows(int op, int *caught)
{
	unsigned long c;
	int g, at, points, cases = 0;

	*caught = 0;
	for (g = 0; g < NMID; g++) {
		unsigned long from = mid_grows[g].from, to = mid_grows[g].to;

		points = mid_case(from, to, 9, -1, op, 0, 0, &c);
		for (at = 0; at < points; at++, cases++) {
			mid_case(from, to, 9, at, op, 0, 0, &c);
			*caught += c != 0;
		}
	}
	return cases;
}

/*
 * Lock-free inserts that race the migrator's compare-and-swap of a new
 * array's head (RH-M2): the migrator retries RH-M1 and RH-M2; the checker
 * sees every state and no key is lost.  (The migrator writes no old head:
 * RH-M3.)
 */
static void inserts_racing_the_migrators_head_cas(void)
{
	int m2, c2;

	/* An insert that took the bucket lock would deadlock here. */
	sk_test_deadline("a lock-free insert made while the migrator holds "
			 "its bucket lock", 300);
	m2 = race_grows(U_RACE_M2, &c2);
	alarm(0);
	fprintf(stderr, "  %d inserts racing RH-M2 checked\n", m2);
	SK_CHECK_GT(m2, 0);
	SK_CHECK_EQ(c2, 0);
}

/* Broken twin: plain stores to the heads lose every racing insert. */
static void head_stores_without_cas_are_caught(void)
{
	int m2, c2;

	sk__rhash_test_broken = SK__RHASH_BROKEN_HEAD_STORE;
	m2 = race_grows(U_RACE_M2, &c2);
	sk__rhash_test_broken = 0;
	fprintf(stderr, "  twin %d caught in %d of %d inserts racing RH-M2\n",
		SK__RHASH_BROKEN_HEAD_STORE, c2, m2);
	SK_CHECK_GT(m2, 0);
	SK_CHECK_EQ(c2, m2);
}

static unsigned long gps_at_first_step = ~0UL;

static void note_first_step(struct sk_rhash *h)
{
	(void)h;
	if (gps_at_first_step == ~0UL)
		gps_at_first_step = chk.st.gp_events;
}

/*
 * The checker itself must see the grace periods rhash waits for: RH-G2
 * before the first migration step (the step hook), RH-G1 after it.
 */
static void resize_reports_its_grace_periods(void)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, rng = 1;
	int order[MAX_IDS];
	unsigned long gps;

	make_keys(KS_ALTERNATE, 8, &rng, order);
	table_init(1, 1);
	fill(8, order, present);
	add_readers(8, present);
	gps = chk.st.gp_events;
	gps_at_first_step = ~0UL;
	sk__rhash_test_step_hook = note_first_step;
	sk_chk_begin(&chk, "grow 1 -> 2, 8 keys");
	SK_CHECK_EQ(sk_rhash_resize(ht, 2), 0);
	SK_CHECK_EQ(sk_chk_end(&chk), 0);
	sk__rhash_test_step_hook = NULL;
	/* RH-G2 before the first step, RH-G1 before the old array's free;
	 * no lock is held across them. */
	SK_CHECK_EQ(gps_at_first_step - gps, 1);
	SK_CHECK_EQ(chk.st.gp_events - gps, 2);
	check_table(present, "grow 1 -> 2");
	table_destroy();
}

/* ---- updates between two old buckets of a shrink ---------------------- */

/*
 * A shrink's chain of f holds the nodes of several old buckets, and the
 * head of each migrated old bucket points into it (RH-M3).  At the point
 * after old bucket `at` is migrated (the migrated hook), key id x is
 * removed, then key id y removed or replaced, each freed after a grace
 * period.
 */
static struct {
	unsigned long at;
	int x, y, op;
	int foreign;   /* before y's update a migrated old head of another
			  old bucket pointed at y */
	int heads_bad; /* after an update: migrated old heads on a node of
			  another old bucket (or a freed one) */
} sh;

/* The live object of key id id. */
static struct cobj *live_obj(int id)
{
	int i;

	for (i = nobjs - 1; i >= 0; i--)
		if (objs[i].id == id && !objs[i].freed)
			return &objs[i];
	return NULL;
}

/*
 * Migrated old heads that point at a node of another old bucket (a freed
 * node's hash is poisoned: it counts too); *on_n: one points at n.
 */
static int foreign_heads(const struct sk_rhash_node *n, int *on_n)
{
	struct chk_tbl *t = cur_tbl();
	unsigned long i;
	int bad = 0;

	for (i = 0; i < t->size; i++) {
		struct sk_rhash_node *h = t->buckets[i];

		if (sk__rhash_migrated(t, i) && h && (h->hash & t->mask) != i) {
			bad++;
			*on_n |= h == n;
		}
	}
	return bad;
}

static void sh_update(struct sk_rhash *h, unsigned long i)
{
	struct cobj *x = live_obj(sh.x), *y = live_obj(sh.y);
	int on_y = 0;

	(void)h;
	if (i != sh.at)
		return;
	SK_CHECK_EQ(sk_rhash_remove(ht, &x->node), 0);
	gp_then_free_later();
	obj_free(x);
	sh.heads_bad += foreign_heads(&y->node, &on_y);
	sh.foreign = on_y;
	if (sh.op == U_REMOVE)
		SK_CHECK_EQ(sk_rhash_remove(ht, &y->node), 0);
	else
		SK_CHECK_EQ(sk_rhash_replace(ht, &y->node,
					     &obj_new(sh.y)->node),
			    0);
	gp_then_free_later();
	obj_free(y);
	sh.heads_bad += foreign_heads(NULL, &on_y);
}

/*
 * Shrink from -> to with n alternating keys (key i in old bucket
 * i % from); after old bucket at: remove x, then op on y.  Returns the
 * checker's violations.
 */
static unsigned long shrink_case(unsigned long from, unsigned long to, int n,
				 unsigned long at, int x, int y, int op)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, stable[SK_CHK_WORDS], rng = 1;
	int order[MAX_IDS], expect_ok = !sk__rhash_test_broken;
	char label[160];
	unsigned long v;

	make_keys(KS_ALTERNATE, n, &rng, order);
	table_init(from, 1);
	fill(n, order, present);
	present[x / 64] &= ~(1ull << (x % 64));
	if (op == U_REMOVE)
		present[y / 64] &= ~(1ull << (y % 64));
	memcpy(stable, present, sizeof(stable));
	stable[y / 64] &= ~(1ull << (y % 64));
	memset(&sh, 0, sizeof(sh));
	sh.at = at;
	sh.x = x;
	sh.y = y;
	sh.op = op;
	snprintf(label, sizeof(label),
		 "shrink %lu -> %lu, %d keys, after old bucket %lu: remove of "
		 "key id %d, %s of key id %d%s",
		 from, to, n, at, x, u_names[op], y,
		 expect_ok ? "" : " (BROKEN twin)");
	add_readers(n, stable);
	sk__rhash_test_migrated_hook = sh_update;
	sk_chk_begin(&chk, label);
	SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
	v = sk_chk_end(&chk);
	sk__rhash_test_migrated_hook = NULL;
	if (expect_ok) {
		if (v || sh.heads_bad)
			SK_T_FAIL("%s: %lu violation(s) (%s), %d old heads on "
				  "another old bucket's node",
				  label, v, v ? chk.first : "-", sh.heads_bad);
		check_table(present, label);
	}
	table_destroy();
	return v;
}

static const struct {
	unsigned long from, to;
	int keys;
} shrinks[] = { { 2, 1, 2 }, { 4, 1, 4 }, { 4, 1, 8 }, { 8, 2, 8 } };
#define NSHRINKS (int)(sizeof(shrinks) / sizeof(shrinks[0]))

/*
 * Every pair of updates after old bucket at of shrink s: the cases run;
 * *want counts those where a migrated old head of another old bucket
 * pointed at y, *got those of them caught.
 */
static int shrink_point(int s, unsigned long at, int *want, int *got)
{
	int x, y, op, cases = 0, n = shrinks[s].keys;
	unsigned long v;

	for (x = 0; x < n; x++)
		for (y = 0; y < n; y++)
			for (op = U_REMOVE; x != y && op <= U_REPLACE;
			     op++, cases++) {
				v = shrink_case(shrinks[s].from, shrinks[s].to,
						n, at, x, y, op);
				*want += sh.foreign;
				*got += sh.foreign && v;
			}
	return cases;
}

/* Every point of every shrink: the cases run; *want, *got as above. */
static int shrink_cases(int *want, int *got)
{
	int s, cases = 0;
	unsigned long at;

	*want = *got = 0;
	for (s = 0; s < NSHRINKS; s++)
		for (at = 0; at < shrinks[s].from; at++)
			cases += shrink_point(s, at, want, got);
	return cases;
}

/*
 * Removes and replaces between two old buckets of a shrink: a remove of
 * the node a migrated old head points at moves the head on to the next
 * node of its own old bucket (or NULL), never onto another old bucket's
 * node, which that node's own remove would leave the head on.
 */
static void updates_between_the_buckets_of_a_shrink(void)
{
	int want, got, cases = shrink_cases(&want, &got);

	fprintf(stderr,
		"  %d pairs of updates between old buckets of "
		"shrinks checked\n",
		cases);
	SK_CHECK_GT(cases, 0);
	SK_CHECK_EQ(want, 0);
}

/*
 * Broken twin: the remove moves the stale old head on to the node's
 * successor, also when that is a node of another old bucket.  When that
 * node is removed or replaced in turn, the head stays on it, and a
 * reader that starts after its free (the resize still runs) reads it
 * through the old array: it MUST be caught whenever an old head of
 * another bucket pointed at the node.
 */
static void stale_head_moved_onto_another_bucket_is_caught(void)
{
	int want, got;

	sk__rhash_test_broken = SK__RHASH_BROKEN_STALE_HEAD_OTHER;
	shrink_cases(&want, &got);
	sk__rhash_test_broken = 0;
	fprintf(stderr,
		"  twin %d caught in %d of %d updates of a node an "
		"old head of another bucket points at\n",
		SK__RHASH_BROKEN_STALE_HEAD_OTHER, got, want);
	SK_CHECK_GT(want, 0);
	SK_CHECK_EQ(got, want);
}

/* ---- RH-D1: a change of the lock array waits for old bit holders ------ */

enum { HOLD_IDLE, HOLD_ARMED, HOLD_HELD, HOLD_RELEASED };
static int hold_state;
static __thread int i_am_holder;

/* Library hook (bit held, mapping checked): the holder stops here. */
static void hold_hook(unsigned long hash)
{
	(void)hash;
	if (!i_am_holder || LOAD(hold_state) != HOLD_ARMED)
		return;
	STORE(hold_state, HOLD_HELD);
	while (LOAD(hold_state) != HOLD_RELEASED)
		sched_yield();
}

struct d1_thread {
	pthread_t tid;
	struct cobj *o; /* remove it; NULL: resize to 16 buckets */
	int holder, rc, done;
};

static void *d1_main(void *arg)
{
	struct d1_thread *d = arg;

	i_am_holder = d->holder;
	d->rc = d->o ? sk_rhash_remove(ht, &d->o->node) : sk_rhash_resize(ht, 16);
	STORE(d->done, 1);
	return NULL;
}

/*
 * Updater S removes X (hash 5) and stops holding the bit of bucket 5 of
 * the 64-bucket table.  R shrinks the table to 16 buckets: its future
 * array becomes the lock array, so R must wait for S (drain) before it
 * migrates; N removes Y (hash 69: old bucket 5 too) under the new mapping
 * and must wait for S as well (prev_lock).  Returns nonzero when either
 * went on while S held its bit.
 */
static int lock_array_change(int twin)
{
	struct d1_thread s = { .holder = 1 }, r = { 0 }, n = { 0 };
	uint64_t present[SK_CHK_WORDS] = { 0 };
	int i, early = 0;

	sk__rhash_test_broken = twin;
	table_init(64, 1);
	for (i = 0; i < 80; i++) {
		keyval[i] = (uint64_t)i;
		SK_CHECK_EQ(sk_rhash_insert(ht, &obj_new(i)->node), 0);
		sk_chk_bit_set(present, i);
	}
	s.o = &objs[5];
	n.o = &objs[69];
	STORE(hold_state, HOLD_ARMED);
	sk__rhash_test_locked_hook = hold_hook;
	sk_test_thread_start(&s.tid, d1_main, &s);
	while (LOAD(hold_state) != HOLD_HELD)
		sched_yield();
	sk_test_thread_start(&r.tid, d1_main, &r);
	sk_test_sleep_ms(20);
	sk_test_thread_start(&n.tid, d1_main, &n);
	/*
	 * 70 ms for the correct table (nothing may move: a longer wait could
	 * only catch more); the twin gets up to 10 s (slow emulators).
	 */
	for (i = 0; i < (twin ? 2000 : 14); i++) {
		sk_test_sleep_ms(5);
		/* A migration that went on published the 16-bucket table. */
		early = LOAD(n.done) || LOAD(r.done) ||
			sk_rcu_dereference(ht->tbl)->size != 64;
		if (early)
			break;
	}
	fprintf(stderr, "  %s: while S held its bit: N %s, R %s\n",
		twin ? "twin" : "correct", LOAD(n.done) ? "done" : "waiting",
		sk_rcu_dereference(ht->tbl)->size != 64 ? "migrated"
							: "waiting");
	STORE(hold_state, HOLD_RELEASED);
	sk_test_thread_join(s.tid);
	sk_test_thread_join(r.tid);
	sk_test_thread_join(n.tid);
	sk__rhash_test_locked_hook = NULL;
	sk__rhash_test_broken = 0;
	if (!twin) {
		SK_CHECK_EQ(s.rc, 0);
		SK_CHECK_EQ(n.rc, 0);
		SK_CHECK_EQ(r.rc, 0);
		present[0] &= ~(1ULL << 5);
		present[1] &= ~(1ULL << (69 - 64));
		check_table(present, "lock array change");
	}
	sk_rhash_destroy(ht, NULL, NULL);
	q_release_all();
	return early;
}

static void lock_array_change_waits_for_old_bit_holders(void)
{
	sk_test_deadline("a lock-array change waiting for a held bit", 60);
	SK_CHECK_EQ(lock_array_change(0), 0);
	/* The twin that does not drain is caught. */
	SK_CHECK_EQ(lock_array_change(SK__RHASH_BROKEN_NO_DRAIN), 1);
	alarm(0);
}

/*
 * Table memory in private mappings; freed ones become PROT_NONE.  While
 * "armed", the current array is PROT_NONE too and the first thread to touch
 * it stops in the SIGSEGV handler until released.  A touch of a freed
 * mapping is a use after free: counted, then the mapping is made readable
 * again so that the thread goes on with the old contents (the handler:
 * map_segv_install(), tests/support/sk_test_maps.c).
 */
#include "sk_test_maps.h"

static int t0_map;
static __thread int i_am_victim;
static int arm_in_hook;

/* Checker hook: the victim's insert has published its node. */
static void arm_hook(int ev)
{
	if (ev != SK__RCU_CHECK_PUBLISH || !i_am_victim ||
	    !__atomic_load_n(&arm_in_hook, __ATOMIC_RELAXED))
		return;
	arm_in_hook = 0;
	map_arm(t0_map);
}

static struct cobj victim_obj;

static void *victim_insert(void *arg)
{
	(void)arg;
	i_am_victim = 1;
	if (sk_rhash_insert(ht, &victim_obj.node))
		abort();
	__atomic_store_n(&map_victim_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The insert that makes a grow due runs maybe_resize(), which once loaded
 * ht->tbl and read ->size outside any read section (it now only queues
 * the background grow and touches no array).  The victim stops at a touch;
 * outside a read section a resize then completes and frees the array, and
 * the victim reads it.  Inside a read section (a fixed library) the victim
 * is released first; one that never touches the array passes too.
 */
static void *resize_to_4(void *arg)
{
	(void)arg;
	if (sk_rhash_resize(ht, 4))
		abort();
	return NULL;
}

static void table_barrier(void)
{
	sk_rhash_barrier(ht);
}

/*
 * A table of one bucket on mapped arrays (map_alloc), automatic: 31
 * objects fit in the one bucket, so the 32nd insert is the first to make a
 * grow due, however often the library looks at the load factor.
 */
static void one_bucket_table_create(void)
{
	struct sk_rhash_params p = obj_table_params(1);

	p.automatic_resize = 1;
	p.grow_above_pct = 3100;
	p.alloc = map_alloc;
	p.free = map_free;
	table_create(&p, 0);
}

static void maybe_resize_never_reads_a_freed_bucket_array(void)
{
	struct sigaction old;
	pthread_t tv, tr;
	int i, stopped, in_section;

	if (sk_test_qemu_i386_tls_bug("maybe_resize"))
		return;
	map_segv_install(&old);
	one_bucket_table_create();
	for (i = 0; i < 31; i++) {
		struct cobj *o;

		keyval[i] = (uint64_t)i;
		o = obj_new(i);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
	}
	SK_CHECK_EQ(sk_rhash_buckets(ht), 1);
	t0_map = map_of(ht->tbl);
	SK_CHECK(t0_map >= 0);
	memset(&victim_obj, 0, sizeof(victim_obj));
	victim_obj.key = 1000;
	arm_in_hook = 1;
	sk__rcu_checker_hook = arm_hook;
	/*
	 * Our read section holds back the background grow that the victim
	 * queues (a callback, after a grace period) until the array is
	 * disarmed: the callback worker blocks signals, and its touch of
	 * the armed array would kill the process.
	 */
	sk_rcu_read_lock();
	pthread_create(&tv, NULL, victim_insert, NULL);
	/* The victim is in maybe_resize(), holding a pointer to the array. */
	stopped = map_wait_victim(t0_map);
	sk_rcu_read_unlock();
	in_section = stopped &&
		     __atomic_load_n(&map_paused_in_section, __ATOMIC_RELAXED);
	pthread_create(&tr, NULL, resize_to_4, NULL);
	/* A background grow that ran first frees t0 by callback. */
	map_race_victim(tv, tr, t0_map, in_section, table_barrier);
	sk__rcu_checker_hook = NULL;
	sigaction(SIGSEGV, &old, NULL);
	map_victim_report("maybe_resize", stopped, in_section);
	SK_CHECK_EQ(map_uaf_faults, 0);
	SK_CHECK_EQ(sk_rhash_count(ht), 32);
	sk_rhash_destroy(ht, NULL, NULL);
	map_unmap_all();
}

static void correct_table(void)
{
	SK_RUN(resize_reports_its_grace_periods);
	SK_RUN(updates_in_the_middle_of_a_migration);
	SK_RUN(updates_between_the_buckets_of_a_shrink);
}

static void broken_twins(void)
{
	SK_RUN(migration_without_gp_after_publication_is_caught);
	SK_RUN(stale_head_left_on_removed_node_is_caught);
	SK_RUN(stale_head_moved_onto_another_bucket_is_caught);
	SK_RUN(inserts_racing_the_migrators_head_cas);
	SK_RUN(head_stores_without_cas_are_caught);
}

/* Not through the checker's readers. */
static void array_lifetime(void)
{
	SK_RUN(maybe_resize_never_reads_a_freed_bucket_array);
	SK_RUN(lock_array_change_waits_for_old_bit_holders);
}

int main(int argc, char **argv)
{
	return rhash_checker_main(argc, argv, correct_table, broken_twins,
				  array_lifetime);
}
