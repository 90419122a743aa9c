/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_misuse.c - inserting a node that is already in the table
 * (scalekit/rhash.h) is refused with -EBUSY, in every build, and leaves
 * the table intact; the legitimate cases next to that misuse still work.
 *
 * What is proven, one function each:
 *   - a lookup of an absent key in the bucket of a node inserted twice
 *     ends (in a forked child with a hang guard: a library without the
 *     check makes the node point to itself, and the lookup loops);
 *   - sk_rhash_insert() of a node at the head of its chain, or further
 *     down it, returns -EBUSY and changes nothing (count, iteration,
 *     lookups, node->next); sk_rhash_insert_unique() of a node in the table
 *     returns -EBUSY too (not -EEXIST); sk_rhash_replace() with a new node
 *     that is in the table (also the old node itself) returns -EBUSY;
 *     none of these prints anything;
 *   - a node removed and inserted again (after a grace period, into the
 *     same table or another one), a node of a destroyed table inserted
 *     into a new one, and a copy of a node in the table (its cached hash
 *     equals the key's) all insert with 0;
 *   - while resizes run in another thread, every second insert of a node
 *     in the table is refused, and removing and inserting again works.
 * Every check of the table's shape is bounded (an iteration stops at the
 * first object returned twice, or one past the count expected; lookups
 * run only after it), so that a chain that loops fails the test instead
 * of hanging it.
 */
#define _GNU_SOURCE
#include "scalekit/rhash.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk_test_rhash.h"
#include "sk_test_san.h"
#include "sk_test_util.h"

/* die_after_fork=0: the first test forks (before any thread starts). */
SK_TEST_TSAN_OPTIONS("die_after_fork=0")

/* A child still running after this many seconds is a hang (SIGALRM). */
#define CHILD_HANG_GUARD_S 20

/*
 * Objects (struct obj, tests/sk_test_rhash.h) come from objs_new(n, 0):
 * from malloc() and not cleared, since insert needs no initialised node.
 */

/* Insert o[0..n): each insert succeeds. */
static void insert_all(struct sk_rhash *ht, struct obj *o, int n)
{
	int i, bad = 0;

	for (i = 0; i < n; i++)
		bad += sk_rhash_insert(ht, &o[i].node) != 0;
	SK_CHECK_EQ(bad, 0);
}

/*
 * Nonzero when an iteration of ht returns exactly the n objects o[0..n),
 * each once, and lookups find each of them and no absent key.  Bounded:
 * the iteration stops at the first object returned twice, so a chain
 * that loops fails here instead of hanging; the lookups run only after
 * the iteration found the chains sound.
 */
static int table_holds(struct sk_rhash *ht, struct obj *o, int n,
		       const char *what)
{
	unsigned char *seen = (unsigned char *)calloc((size_t)n + 1, 1);
	struct sk_rhash_iter it;
	uint64_t absent = 0xabad1deaULL;
	int i, got = 0, bad = 0;
	struct obj *x;

	if (!seen)
		exit(2);
	sk_rcu_read_lock();
	sk_rhash_iter_start(ht, &it);
	while ((x = (struct obj *)sk_rhash_iter_next(&it)) != NULL) {
		long idx = x - o;

		if (idx < 0 || idx >= n || seen[idx]++) {
			bad = 1;
			break;
		}
		got++;
	}
	for (i = 0; !bad && i < n; i++)
		if (sk_rhash_lookup(ht, &o[i].key) != &o[i])
			bad = 1;
	if (!bad && sk_rhash_lookup(ht, &absent) != NULL)
		bad = 1;
	sk_rcu_read_unlock();
	free(seen);
	if (bad || got != n) {
		SK_T_FAIL("%s: the table is corrupt (iteration returned %d "
			  "of %d objects%s)",
			  what, got, n, bad ? ", one twice or a stranger" : "");
		return 0;
	}
	SK_CHECK_EQ(sk_rhash_count(ht), n);
	return 1;
}

/*
 * Objects an iteration of ht returns, counting each return: stops after
 * limit + 1, so that a chain that loops ends the count.
 */
static int iter_count(struct sk_rhash *ht, int limit)
{
	struct sk_rhash_iter it;
	int got = 0;

	sk_rcu_read_lock();
	sk_rhash_iter_start(ht, &it);
	while (got <= limit && sk_rhash_iter_next(&it) != NULL)
		got++;
	sk_rcu_read_unlock();
	return got;
}

/* ---- the misuse -------------------------------------------------------- */

/*
 * The child of lookup_after_double_insert_ends(): insert one object twice
 * into a one-bucket table, then look up an absent key, which walks that
 * bucket's whole chain.  Exits 0 when the second insert was refused and
 * the lookup ended, 1 otherwise.
 */
static void double_insert_then_lookup_absent(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(1, 0);
	uint64_t absent = 0xabad1deaULL;
	int rc1, rc2;
	void *found;

	rc1 = sk_rhash_insert(ht, &o[0].node);
	rc2 = sk_rhash_insert(ht, &o[0].node);
	fprintf(stderr, "inserts returned %d, %d; looking up an absent key\n",
		rc1, rc2);
	sk_rcu_read_lock();
	found = sk_rhash_lookup(ht, &absent);
	sk_rcu_read_unlock();
	fprintf(stderr, "the lookup ended\n");
	exit(rc1 == 0 && rc2 == -EBUSY && !found ? 0 : 1);
}

/* Forks: runs before any test starts a thread. */
static void lookup_after_double_insert_ends(void)
{
	struct sk_test_child c;

	sk_test_fork_child(double_insert_then_lookup_absent, CHILD_HANG_GUARD_S,
			   0, &c);
	if (WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGALRM)
		SK_T_FAIL("the lookup of an absent key did not end within "
			  "%d s (the chain loops)",
			  CHILD_HANG_GUARD_S);
	else
		SK_CHECK_EXIT_0(c.status);
}

static void insert_twice_at_the_head_is_refused(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(1, 0);
	struct sk_test_capture cap;
	char err[256];

	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	sk_test_capture_begin(&cap);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), -EBUSY);
	sk_test_capture_end(&cap, err, sizeof(err));
	SK_CHECK_EQ(err[0], 0); /* a returned error prints nothing */
	SK_CHECK(o[0].node.next != &o[0].node);
	table_holds(ht, o, 1, "after a second insert of the head");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void insert_twice_inside_the_chain_is_refused(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(3, 0);
	int i, n;

	/* One chain, newest first: o[2], o[1], o[0]. */
	insert_all(ht, o, 3);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), -EBUSY); /* the tail */
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[1].node), -EBUSY); /* the middle */
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[2].node), -EBUSY); /* the head */
	table_holds(ht, o, 3, "after second inserts along the chain");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
	/* The same with many buckets and many objects. */
	ht = table_new(16);
	o = objs_new(200, 0);
	insert_all(ht, o, 200);
	for (i = 0, n = 0; i < 200; i++)
		n += sk_rhash_insert(ht, &o[i].node) == -EBUSY;
	SK_CHECK_EQ(n, 200); /* second inserts refused */
	table_holds(ht, o, 200, "after second inserts of 200 objects");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void insert_unique_twice_is_refused(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(2, 0);

	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[0].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[1].node), 0);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[0].node), -EBUSY);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[1].node), -EBUSY);
	table_holds(ht, o, 2, "after second unique inserts");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void replace_with_a_node_in_the_table_is_refused(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(3, 0);
	int n;

	o[1].key = o[0].key; /* a duplicate: replace wants equal keys */
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[1].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[2].node), 0);
	/* o[1] is in the table: it cannot take o[0]'s place. */
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[0].node, &o[1].node), -EBUSY);
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[1].node, &o[0].node), -EBUSY);
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[2].node, &o[2].node), -EBUSY);
	/* Duplicate keys: count the objects rather than look them up. */
	SK_CHECK_EQ(sk_rhash_count(ht), 3);
	n = iter_count(ht, 3);
	SK_CHECK_EQ(n, 3);
	if (n != 3)
		return; /* the chain may loop: leak rather than walk it */
	sk_rcu_read_lock();
	SK_CHECK(sk_rhash_lookup(ht, &o[2].key) == &o[2]);
	sk_rcu_read_unlock();
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/* ---- what must keep working -------------------------------------------- */

static void insert_again_after_remove_works(void)
{
	struct sk_rhash *ht = table_new(1), *ht2 = table_new(4);
	struct obj *o = objs_new(2, 0);

	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[1].node), 0);
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[0].node), 0);
	sk_synchronize_rcu(); /* no reader stands on o[0] any more */
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	table_holds(ht, o, 2, "after remove and insert again");
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[0].node), 0);
	sk_synchronize_rcu();
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[0].node), 0);
	table_holds(ht, o, 2, "after remove and insert_unique again");
	/* Into another table, after its removal from the first. */
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[1].node), 0);
	sk_synchronize_rcu();
	SK_CHECK_EQ(sk_rhash_insert(ht2, &o[1].node), 0);
	table_holds(ht, o, 1, "the first table");
	SK_CHECK(sk_rhash_lookup(ht2, &o[1].key) == &o[1]);
	/* A node replaced is out of the table: it may go back in. */
	SK_CHECK_EQ(sk_rhash_remove(ht2, &o[1].node), 0);
	o[1].key = o[0].key;
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[0].node, &o[1].node), 0);
	sk_synchronize_rcu();
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[1].node, &o[0].node), 0);
	table_holds(ht, o, 1, "after replacing back and forth");
	sk_rhash_destroy(ht, NULL, NULL);
	sk_rhash_destroy(ht2, NULL, NULL);
	free(o);
}

static void insert_after_destroy_into_a_new_table_works(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(3, 0);

	insert_all(ht, o, 3);
	sk_rhash_destroy(ht, NULL, NULL);
	ht = table_new(1);
	insert_all(ht, o, 3);
	table_holds(ht, o, 3, "a destroyed table's objects in a new one");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/*
 * A copy of an object in the table carries the same cached hash (and a
 * next that points into the chain), as memory recycled from a removed
 * object with the same key would: it is not in the table, so it inserts.
 */
static void copy_of_a_node_in_the_table_inserts(void)
{
	struct sk_rhash *ht = table_new(1);
	struct obj *o = objs_new(3, 0);

	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[1].node), 0);
	o[2] = o[0];
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[2].node), 0);
	SK_CHECK_EQ(sk_rhash_count(ht), 3);
	SK_CHECK_EQ(iter_count(ht, 3), 3);
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[0].node), 0);
	SK_CHECK_EQ(iter_count(ht, 3), 2);
	sk_rcu_read_lock();
	SK_CHECK(sk_rhash_lookup(ht, &o[0].key) == &o[2]);
	SK_CHECK(sk_rhash_lookup(ht, &o[1].key) == &o[1]);
	sk_rcu_read_unlock();
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/* ---- while resizes run -------------------------------------------------- */

struct resizer {
	struct sk_rhash *ht;
	int stop;	       /* atomic: set by the main thread */
	unsigned long resizes; /* atomic: written by the resizer only */
};

/* Grow and shrink the table until told to stop. */
static void *resizer_thread(void *arg)
{
	struct resizer *r = (struct resizer *)arg;
	unsigned long size = 1024;

	while (!LOAD(r->stop)) {
		if (sk_rhash_resize(r->ht, size) != 0)
			SK_T_FAIL("%s", "sk_rhash_resize() failed");
		size = size == 1024 ? 2 : size * 8;
		STORE(r->resizes, r->resizes + 1); /* read by the test */
	}
	return NULL;
}

static void double_insert_refused_while_resizes_run(void)
{
	enum { N = 2000 };
	int rounds = 40000 / (int)sk_test_slow(), i, bad = 0;
	unsigned long min_resizes = 100 / sk_test_slow();
	uint64_t seed = sk_t_seed | 1;
	struct sk_rhash *ht = table_new(2);
	struct obj *o = objs_new(N, 0);
	struct resizer r = { .ht = ht };
	pthread_t t;

	insert_all(ht, o, N);
	sk_test_thread_start(&t, resizer_thread, &r);
	/* At least rounds rounds, across at least min_resizes resizes. */
	for (i = 0; (i < rounds || LOAD(r.resizes) < min_resizes) && !bad;
	     i++) {
		struct obj *x = &o[sk_test_rand(&seed) % N];
		int rc, want;

		switch (i % 4) {
		case 0:
		case 1:
			rc = sk_rhash_insert(ht, &x->node);
			want = -EBUSY;
			break;
		case 2:
			rc = sk_rhash_insert_unique(ht, &x->node);
			want = -EBUSY;
			break;
		default:
			/* Out and in again (no reader here to wait for). */
			rc = sk_rhash_remove(ht, &x->node);
			if (rc == 0)
				rc = sk_rhash_insert(ht, &x->node);
			want = 0;
			break;
		}
		if (rc != want) {
			SK_T_FAIL("round %d (kind %d), object %ld: returned "
				  "%d, not %d",
				  i, i % 4, (long)(x - o), rc, want);
			bad = 1;
		}
	}
	STORE(r.stop, 1);
	sk_test_thread_join(t);
	fprintf(stderr, "  %d rounds, %lu resizes meanwhile\n", i, r.resizes);
	if (!table_holds(ht, o, N, "after the rounds"))
		return; /* corrupt: leak rather than walk it */
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(lookup_after_double_insert_ends); /* forks: before threads */
	/* A chain that loops hangs a resize: this reports it (armed after
	 * the fork: the child has an alarm of its own). */
	sk_test_deadline("test_rhash_misuse", 120);
	SK_RUN(insert_twice_at_the_head_is_refused);
	SK_RUN(insert_twice_inside_the_chain_is_refused);
	SK_RUN(insert_unique_twice_is_refused);
	SK_RUN(replace_with_a_node_in_the_table_is_refused);
	SK_RUN(insert_again_after_remove_works);
	SK_RUN(insert_after_destroy_into_a_new_table_works);
	SK_RUN(copy_of_a_node_in_the_table_inserts);
	SK_RUN(double_insert_refused_while_resizes_run);
	return sk_test_report();
}
