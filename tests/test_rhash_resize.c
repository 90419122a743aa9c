/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_resize.c - resizes of the hash table (scalekit/rhash.h)
 * against updaters and readers, deterministic (white box).
 *
 * What is proven, one function each:
 *   - updaters that dereference the bucket array outside a read section
 *     (sk_rhash_insert/remove via lock_bucket(), sk_rhash_buckets()) must
 *     not read an array a concurrent resize has freed: a thread is paused
 *     (SIGSEGV on a PROT_NONE page) right after loading ht->tbl while
 *     another resizes; a control shows that a lookup inside a read section
 *     holds the resize back as it must;
 *   - updates inside a read section during a resize work; a grow left
 *     to an explicit resize happens.
 */
#define _GNU_SOURCE
#include "scalekit/rhash.h"

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

#include "../src/internal/rhash.h" /* white box: resizing, resizes */
#include "sk_test.h"
#include "sk_test_rhash.h"
#include "sk_test_san.h"
#include "sk_test_util.h"

SK_TEST_ASAN_OPTIONS("allow_user_segv_handler=1")

/* ---- use of a freed bucket array by updaters (deterministic) ----------- */

/*
 * Every allocation of the table is a private mapping; a freed one is made
 * PROT_NONE (never unmapped during the test).  The bucket array of the
 * current table is made PROT_NONE too while "armed": the first thread to
 * touch it (the victim) stops in the SIGSEGV handler, right after loading
 * ht->tbl, until the test lets it go.  A fault on a freed mapping is a use
 * after free: counted, then the mapping is made readable again so that
 * the victim runs on (reading the old contents, as it would with glibc).
 * The handler and the handshake are in tests/support/sk_test_maps.c.
 */
#include "sk_test_maps.h"

enum { V_INSERT, V_REMOVE, V_BUCKETS, V_LOOKUP_IN_SECTION };

struct victim {
	struct sk_rhash *ht;
	int what;
	struct obj *o;
	unsigned long result;
};

static void *victim_thread(void *arg)
{
	struct victim *v = (struct victim *)arg;

	switch (v->what) {
	case V_INSERT:
		v->result = (unsigned long)sk_rhash_insert(v->ht, &v->o->node);
		break;
	case V_REMOVE:
		v->result = (unsigned long)sk_rhash_remove(v->ht, &v->o->node);
		break;
	case V_BUCKETS:
		v->result = sk_rhash_buckets(v->ht);
		break;
	case V_LOOKUP_IN_SECTION:
		sk_rcu_read_lock();
		v->result = sk_rhash_lookup(v->ht, &v->o->key) == v->o;
		sk_rcu_read_unlock();
		break;
	}
	__atomic_store_n(&map_victim_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *resize_thread(void *arg)
{
	struct sk_rhash *ht = (struct sk_rhash *)arg;

	if (sk_rhash_resize(ht, 2)) /* from 1 bucket */
		abort();
	return NULL;
}

/*
 * The victim stops at its first touch of the bucket array, right after
 * loading ht->tbl.  Outside a read section nothing holds a grace period
 * back, so a resize runs to completion meanwhile and frees the array; the
 * victim then goes on and touches it: a use after free.  Inside a read
 * section (a lookup, or a fixed updater) the resize must wait: the array
 * must still be there after a while, and the victim is released first.
 * A victim that never touches the array passes too.  Returns the touches
 * of freed mappings.
 */
/* The victim's operation itself completed correctly. */
static void victim_result_check(const struct victim *v, int held_back,
				struct obj *o)
{
	if (v->what == V_INSERT || v->what == V_REMOVE)
		SK_CHECK_EQ(v->result, 0);
	if (v->what == V_BUCKETS)
		SK_CHECK(v->result == 1 || v->result == 2);
	if (v->what == V_LOOKUP_IN_SECTION) {
		SK_CHECK_EQ(v->result, 1);
		SK_CHECK(held_back);
	}
	sk_rcu_read_lock();
	if (v->what == V_INSERT)
		SK_CHECK(sk_rhash_lookup(v->ht, &o[0].key) == &o[0]);
	if (v->what == V_REMOVE)
		SK_CHECK(sk_rhash_lookup(v->ht, &o[5].key) == NULL);
	sk_rcu_read_unlock();
}

static int run_victim(int what, const char *name)
{
	struct sk_rhash_params p = obj_params(1);
	struct sigaction old;
	struct obj *o = objs_new(8, 1);
	struct victim v;
	struct sk_rhash *ht;
	pthread_t tv, tr;
	int i, t0, stopped, in_section = 0;

	if (sk_test_qemu_i386_tls_bug(name)) {
		free(o);
		return 0;
	}
	nmaps = 0;
	map_pause_reset();
	p.alloc = map_alloc;
	p.free = map_free;
	map_segv_install(&old);

	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (i = 1; i < 8; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	t0 = map_of(ht->tbl);
	SK_CHECK(t0 >= 0);
	v.ht = ht;
	v.what = what;
	v.o = what == V_INSERT ? &o[0] : &o[5];
	v.result = 0;
	map_arm(t0);
	pthread_create(&tv, NULL, victim_thread, &v);
	/* The victim holds a pointer to the array (or has finished). */
	stopped = map_wait_victim(t0);
	if (stopped)
		in_section = __atomic_load_n(&map_paused_in_section,
					     __ATOMIC_RELAXED);
	pthread_create(&tr, NULL, resize_thread, ht);
	map_race_victim(tv, tr, t0, stopped && in_section, NULL);
	sigaction(SIGSEGV, &old, NULL);
	map_victim_report(name, stopped, in_section);
	SK_CHECK_EQ(map_unexpected_faults, 0);
	victim_result_check(&v, stopped && in_section, o);
	sk_rhash_destroy(ht, NULL, NULL);
	map_unmap_all();
	free(o);
	return map_uaf_faults;
}

/*
 * Updates inside a read section while a resize runs: the resize holds no
 * lock while it waits for the grace periods that our section holds back,
 * so the updates go through (the old library returned -EDEADLK here, and
 * a library whose resize held the bucket locks across a grace period
 * would hang: the test's alarm reports it).  A resize waits for two: one
 * after it publishes the future array, before it migrates (RH-G2), one
 * before the old array's free (RH-G1).  Our first section is open when
 * the resize starts: it holds the resize in RH-G2 (deterministic), and
 * we update there.  Our second section opens once the migration runs; we
 * update once the table is switched, which then waits for us in RH-G1
 * (unless it was quicker than our section's start: then we update after
 * the resize, which proves less but is still right).
 */
struct rs_resizer {
	struct sk_rhash *ht;
	unsigned long to; /* buckets */
	int rc;
	pthread_t t;
};

static void *rs_resize_thread(void *arg)
{
	struct rs_resizer *r = (struct rs_resizer *)arg;

	r->rc = sk_rhash_resize(r->ht, r->to);
	return NULL;
}

/*
 * Wait (bounded by the test's alarm) until the resizer has published its
 * future array (resizing 1) or got further (its migration runs: 2; the
 * table switched: resizes).  Relaxed: progress flags only.
 */
static void wait_resize_reached(struct sk_rhash *ht, int resizing)
{
	while (__atomic_load_n(&ht->resizing, __ATOMIC_RELAXED) < resizing &&
	       !__atomic_load_n(&ht->resizes, __ATOMIC_RELAXED))
		sched_yield();
}

/* Wait until the resizer has switched the table (then waits for us). */
static void wait_resize_switched(struct sk_rhash *ht)
{
	while (!__atomic_load_n(&ht->resizes, __ATOMIC_RELAXED))
		sched_yield();
}

/* Open our read section, then start a thread resizing ht to `to` buckets. */
static void rs_start_in_section(struct rs_resizer *r, struct sk_rhash *ht,
				unsigned long to)
{
	r->ht = ht;
	r->to = to;
	r->rc = -1;
	sk_rcu_read_lock();
	pthread_create(&r->t, NULL, rs_resize_thread, r);
}

/* Close our read section and wait for the resizer: it succeeded. */
static void rs_finish(struct rs_resizer *r)
{
	sk_rcu_read_unlock();
	pthread_join(r->t, NULL);
	SK_CHECK_EQ(r->rc, 0);
}

static void update_in_read_section_during_resize_works(void)
{
	struct sk_rhash_params p = obj_params(4);
	struct sk_rhash *ht;
	struct obj *o = objs_new(20002, 1), dup;
	struct rs_resizer r;
	int i;

	alarm(120); /* a hang is the bug this guards against */
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (i = 0; i < 20000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	rs_start_in_section(&r, ht, 4096);
	/* Published, and held in RH-G2 by our section. */
	wait_resize_reached(ht, 1);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[20000].node), 0);
	/* Its key is present (dup: another node with it); the node
	 * itself is in the table (tests/test_rhash_misuse.c). */
	dup = o[20000];
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &dup.node), -EEXIST);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[20000].node), -EBUSY);
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[0].node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[20000].key) == &o[20000]);
	SK_CHECK(sk_rhash_lookup(ht, &o[0].key) == NULL);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 4);
	sk_rcu_read_unlock();
	wait_resize_reached(ht, 2);
	sk_rcu_read_lock();
	/* The resize then waits for our section in RH-G1, holding no lock. */
	wait_resize_switched(ht);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[20001].node), 0);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[0].node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[20001].key) == &o[20001]);
	rs_finish(&r);
	alarm(0);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 4096);
	check_all(ht, o, 20002, "after updates inside a section mid-resize");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/*
 * Updates that cross the load factor while an explicit resize runs leave
 * the check to that resize (no background work is queued meanwhile); the
 * resize must queue it when it ends.  The resizer is held in its first
 * grace period (RH-G2) by our read section while 4000 inserts cross the
 * limit; after it ends, the background grow must bring the table to the
 * load factor.  A resize that forgot the check leaves 128 buckets.
 */
static void grow_left_to_an_explicit_resize_happens(void)
{
	struct sk_rhash_params p = obj_params(64);
	struct sk_rhash *ht;
	struct obj *o = objs_new(4000, 1);
	struct rs_resizer r;
	int i;

	alarm(120); /* a hang is a bug too */
	p.automatic_resize = 1;
	p.min_buckets = 64;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	rs_start_in_section(&r, ht, 128);
	wait_resize_reached(ht, 1); /* now waiting for our section */
	for (i = 0; i < 4000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	/* Nothing else ran: not even the migration. */
	SK_CHECK_EQ(sk_rhash_buckets(ht), 64);
	SK_CHECK_EQ(__atomic_load_n(&ht->resizing, __ATOMIC_RELAXED), 1);
	rs_finish(&r);
	sk_rhash_barrier(ht);
	alarm(0);
	fprintf(stderr, "  4000 objects: %lu buckets after the resize\n",
		sk_rhash_buckets(ht));
	SK_CHECK_GT(sk_rhash_buckets(ht), 2048);
	check_all(ht, o, 4000, "after the grow left to a resize");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

/* Control: a lookup inside a read section holds the free back. */
static void lookup_in_read_section_holds_back_the_free(void)
{
	SK_CHECK_EQ(run_victim(V_LOOKUP_IN_SECTION, "lookup in a read section"),
		    0);
}

/*
 * lock_bucket() loads ht->tbl and reads t->mask with no read section and
 * no lock held: a resize may free t in between (sk_rhash_insert/remove
 * are documented as callable from any thread, outside read sections).
 */
static void insert_never_reads_a_freed_bucket_array(void)
{
	SK_CHECK_EQ(run_victim(V_INSERT, "sk_rhash_insert"), 0);
}

static void remove_never_reads_a_freed_bucket_array(void)
{
	SK_CHECK_EQ(run_victim(V_REMOVE, "sk_rhash_remove"), 0);
}

/* sk_rhash_buckets() is documented "Context: any". */
static void buckets_never_reads_a_freed_bucket_array(void)
{
	SK_CHECK_EQ(run_victim(V_BUCKETS, "sk_rhash_buckets"), 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(update_in_read_section_during_resize_works);
	SK_RUN(grow_left_to_an_explicit_resize_happens);
	SK_RUN(lookup_in_read_section_holds_back_the_free);
	SK_RUN(insert_never_reads_a_freed_bucket_array);
	SK_RUN(remove_never_reads_a_freed_bucket_array);
	SK_RUN(buckets_never_reads_a_freed_bucket_array);
	return sk_test_report();
}
