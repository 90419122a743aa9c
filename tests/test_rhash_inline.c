/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_inline.c - the inline sk_rhash_lookup() of scalekit/rhash.h.
 *
 * What is proven, one function each:
 *   - the inline lookup, the exported function, its slow path and a
 *     caller built with SK_RHASH_NO_INLINE (tests/rhash_no_inline.c),
 *     and the same four of sk_rhash_lookup_u64(), return the same object
 *     for every present key and NULL for absent ones, on every kind of
 *     table (8-byte keys with the default hash: the inline path; another
 *     hash, 4-byte keys, a cmpfn: the library); the u64 ones return NULL
 *     with EINVAL on a table of 4-byte keys;
 *   - both inline lookups find every present key while another thread
 *     resizes the table without a pause (its walk of the future array);
 *     its broken twin, the same walk without the future array, misses
 *     keys there, so the stress sees what it checks;
 *   - a walk that begins right after a resize made the new array the
 *     table's misses a key removed then (deterministic: a checker hook
 *     removes and looks up at that point); broken twin
 *     SK__RHASH_BROKEN_LATE_LOOKUP_TBL, which moves the walks' start
 *     after the table's array, finds it through a stale old head.
 * The load-time guard of the inline path's ABI (sk_rhash__abi_v1) is
 * tested by tests/rhash_abi.cmake.
 */
#define _GNU_SOURCE
#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rhash.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/internal/rhash.h" /* white box: tbl, lookup_tbl */
#include "rhash_no_inline.h"
#include "sk_test.h"
#include "sk_test_rhash.h"
#include "sk_test_util.h"

#if !defined(sk_rhash_lookup) || !defined(sk_rhash_lookup_u64)
#error "scalekit/rhash.h should make the lookups inline by default"
#endif

typedef void *(*lookup_fn)(struct sk_rhash *ht, const void *key);

/* The inline lookup, expanded here. */
static void *lookup_inline(struct sk_rhash *ht, const void *key)
{
	return sk_rhash_lookup(ht, key);
}

/* The exported function (the name in parentheses is not the macro). */
static void *lookup_exported(struct sk_rhash *ht, const void *key)
{
	return (sk_rhash_lookup)(ht, key);
}

/* sk_rhash_lookup_u64(), inline, of an 8-byte key. */
static void *lookup_u64_inline(struct sk_rhash *ht, const void *key)
{
	return sk_rhash_lookup_u64(ht, sk_rhash__load_u64(key));
}

/*
 * Broken twin of the inline walk: the same fields and hash, but it stops
 * at the end of the current array's chain and never looks in the array a
 * resize fills (t->future), where the resize moves runs before it cuts
 * them off the old chains.
 */
static void *lookup_without_future(struct sk_rhash *ht, const void *key)
{
	const struct sk_rhash__head *hd = (const struct sk_rhash__head *)ht;
	struct sk_rhash__array *t = sk_rcu_dereference(hd->lookup_tbl);
	uint64_t k = sk_rhash__load_u64(key);
	unsigned long h = (unsigned long)sk_rhash__mul_fold(k ^ hd->seed_k[0],
							    k ^ hd->seed_k[1]);
	struct sk_rhash_node *n;

	for (n = sk_rcu_dereference(t->heads[h & t->mask]); n;
	     n = sk_rcu_dereference(n->next))
		if (n->hash == h &&
		    sk_rhash__load_u64((const char *)n + hd->key_from_node) == k)
			return (char *)n - hd->head_offset;
	return NULL;
}

/* ---- every kind of table: the four ways agree ----------------------------- */

struct obj4 {
	uint32_t pad;
	uint32_t key;
	struct sk_rhash_node node;
};

static unsigned long other_hash(const void *key, size_t len, unsigned long seed)
{
	return sk_rhash_hash(key, len, seed ^ 0x5bd1e995UL) * 31UL;
}

static int cmp_obj(const void *key, const void *obj)
{
	return memcmp(key, &((const struct obj *)obj)->key, 8);
}

/*
 * Look key (of key_len bytes) up every way inside one read section;
 * every one must return want.  The 8-byte lookups by value on a table of
 * other keys must return NULL with errno EINVAL.
 */
static void check_key(struct sk_rhash *ht, const void *key, size_t key_len,
		      void *want, const char *table)
{
	static const char *const way[] = {
		"inline",	"exported",	      "slow path",
		"no-inline TU", "u64 inline",	      "u64 exported",
		"u64 slow path", "u64 no-inline TU",
	};
	void *got[8];
	int err[8] = {0};
	uint64_t k = 0;
	int i, n = 4;

	sk_rcu_read_lock();
	got[0] = lookup_inline(ht, key);
	got[1] = lookup_exported(ht, key);
	got[2] = sk_rhash__lookup_slow(ht, key);
	got[3] = sk_test_rhash_lookup_no_inline(ht, key);
	memcpy(&k, key, key_len < 8 ? key_len : 8);
	for (i = 4; i < 8; i++) {
		errno = 0;
		got[i] = i == 4	  ? sk_rhash_lookup_u64(ht, k)
			 : i == 5 ? (sk_rhash_lookup_u64)(ht, k)
			 : i == 6 ? sk_rhash__lookup_u64_slow(ht, k)
				  : sk_test_rhash_lookup_u64_no_inline(ht, k);
		err[i] = errno;
	}
	sk_rcu_read_unlock();
	if (key_len == 8)
		n = 8;
	for (i = 0; i < 8; i++) {
		void *w = i < n ? want : NULL;

		if (got[i] != w || (i >= n && err[i] != EINVAL)) {
			SK_T_FAIL("%s: %s returned %p (errno %d), want %p",
				  table, way[i], got[i], err[i], w);
			return;
		}
	}
}

/* A table of 8-byte keys of struct obj, built with p: all four agree. */
static void check_obj_table(struct sk_rhash_params p, const char *table)
{
	enum { N = 3000 };
	struct obj *o = objs_new(N, 1);
	struct sk_rhash *ht = sk_rhash_create(&p);
	uint64_t absent;
	int i;

	SK_CHECK(ht != NULL);
	if (!ht) {
		free(o);
		return;
	}
	for (i = 0; i < N; i++) {
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
		if (i == N / 2) /* some chains split by a grow */
			SK_CHECK_EQ(sk_rhash_resize(ht, 4096), 0);
	}
	for (i = 0; i < N; i++)
		check_key(ht, &o[i].key, 8, &o[i], table);
	for (i = 0; i < N; i++) {
		absent = o[i].key + 1; /* keys are i * 7919 + 1 */
		check_key(ht, &absent, 8, NULL, table);
	}
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void inline_and_exported_agree_on_every_kind_of_table(void)
{
	enum { N = 2000 };
	struct sk_rhash_params p = obj_params(64);
	struct obj4 *o4;
	struct sk_rhash *ht;
	uint32_t absent;
	int i;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	check_obj_table(p, "8-byte keys, default hash (inline path)");
	p.seed = 12345;
	check_obj_table(p, "8-byte keys, default hash, a seed (inline path)");
	p = obj_params(64);
	p.hashfn = other_hash;
	check_obj_table(p, "8-byte keys, another hash");
	p = obj_params(64);
	p.cmpfn = cmp_obj;
	check_obj_table(p, "8-byte keys, a cmpfn");

	p = sk_test_rhash_params(offsetof(struct obj4, node),
				 offsetof(struct obj4, key), 64);
	p.key_len = 4;
	ht = sk_rhash_create(&p);
	o4 = calloc(N, sizeof(*o4));
	SK_CHECK(ht != NULL && o4 != NULL);
	if (ht && o4) {
		for (i = 0; i < N; i++) {
			o4[i].key = (uint32_t)i * 7919u + 1u;
			SK_CHECK_EQ(sk_rhash_insert(ht, &o4[i].node), 0);
		}
		for (i = 0; i < N; i++) {
			check_key(ht, &o4[i].key, 4, &o4[i], "4-byte keys");
			absent = o4[i].key + 1;
			check_key(ht, &absent, 4, NULL, "4-byte keys");
		}
	}
	if (ht)
		sk_rhash_destroy(ht, NULL, NULL);
	free(o4);
	sk_rcu_unregister_thread();
}

/* ---- lookups during continuous resizes --------------------------------------- */

struct stress {
	struct sk_rhash *ht;
	struct obj *o;
	int n;
	lookup_fn lookup;
	int stop;	  /* atomic: set by the main thread */
	long lookups;	  /* the reader's, read after the join */
	long misses;	  /* present keys not found (the reader's) */
	long resizes;	  /* the resizer's completed resizes */
	int resize_error; /* a resize failed (the resizer's) */
};

static void *stress_reader(void *arg)
{
	struct stress *st = arg;
	uint64_t seed = sk_t_seed ^ 0x243f6a8885a308d3ull;

	if (sk_rcu_register_thread())
		return (void *)1;
	while (!LOAD(st->stop)) {
		int i = (int)(sk_test_rand(&seed) % (uint64_t)st->n);
		void *got;

		sk_rcu_read_lock();
		got = st->lookup(st->ht, &st->o[i].key);
		sk_rcu_read_unlock();
		st->lookups++;
		if (got != &st->o[i]) /* the main thread polls it */
			__atomic_fetch_add(&st->misses, 1, __ATOMIC_RELAXED);
	}
	sk_rcu_unregister_thread();
	return NULL;
}

static void *stress_resizer(void *arg)
{
	struct stress *st = arg;
	unsigned long sizes[] = {16, 4096, 64, 1024, 8, 8192};
	unsigned i = 0;

	while (!LOAD(st->stop)) {
		if (sk_rhash_resize(st->ht, sizes[i++ % 6])) {
			st->resize_error = 1;
			break;
		}
		__atomic_fetch_add(&st->resizes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Run a reader with lookup against a resizer, once the resizer has
 * completed min_resizes: until min_ms, or (stop_on_miss) until the first
 * miss; at max_ms in any case.
 */
static void run_stress(struct stress *st, lookup_fn lookup, int min_ms,
		       int max_ms, long min_resizes, int stop_on_miss)
{
	pthread_t r, z;
	int ms = 0;
	int i;

	memset(st, 0, sizeof(*st));
	st->n = 4096;
	st->o = objs_new(st->n, 1);
	st->ht = table_new(256);
	st->lookup = lookup;
	for (i = 0; i < st->n; i++)
		SK_CHECK_EQ(sk_rhash_insert(st->ht, &st->o[i].node), 0);
	sk_test_thread_start(&r, stress_reader, st);
	sk_test_thread_start(&z, stress_resizer, st);
	for (;;) {
		long done = __atomic_load_n(&st->resizes, __ATOMIC_RELAXED);

		sk_test_sleep_ms(10);
		ms += 10;
		if (ms >= max_ms)
			break;
		if (done < min_resizes)
			continue;
		if (stop_on_miss ? __atomic_load_n(&st->misses,
						   __ATOMIC_RELAXED) > 0
				 : ms >= min_ms)
			break;
	}
	STORE(st->stop, 1);
	SK_CHECK(sk_test_thread_join(r) == NULL);
	sk_test_thread_join(z);
	fprintf(stderr, "    %ld lookups, %ld misses, %ld resizes in %d ms\n",
		st->lookups, st->misses, st->resizes, ms);
	SK_CHECK_EQ(st->resize_error, 0);
	SK_CHECK_GT(st->lookups, 0);
	sk_rhash_destroy(st->ht, NULL, NULL);
	free(st->o);
}

static void inline_lookups_find_every_key_during_resizes(void)
{
	struct stress st;

	run_stress(&st, lookup_inline, 1000, 60000, 50, 0);
	SK_CHECK_EQ(st.misses, 0);
	SK_CHECK(st.resizes >= 50);
	run_stress(&st, lookup_u64_inline, 1000, 60000, 50, 0);
	SK_CHECK_EQ(st.misses, 0);
	SK_CHECK(st.resizes >= 50);
}

static void twin_without_the_future_array_misses_keys(void)
{
	struct stress st;

	run_stress(&st, lookup_without_future, 1000, 60000, 50, 1);
	SK_CHECK_GT(st.misses, 0);
}

/* ---- a walk that begins as a resize ends ------------------------------------- */

static struct {
	struct sk_rhash *ht;
	struct sk_rhash_table *old; /* the array before the resize */
	int fired;		    /* 1: the hook ran its check */
	int removed;		    /* sk_rhash_remove()'s result */
	void *found[2];		    /* the two inline lookups' results */
} late;

/*
 * At the first publication after which the table's array is no longer
 * the old one (the end of the resize, before the old array's drain and
 * free): remove the object that a head of the old array points at (a
 * stale head after the migration), then look its key up both inline ways.
 */
static void late_hook(int event)
{
	struct sk_rhash_node *n = NULL;
	struct obj *o;
	unsigned long i;

	/*
	 * The hook runs in the resizing thread, inside sk_rhash_resize():
	 * tbl and the old heads are this thread's own stores, so these
	 * loads pair with nothing; atomic because readers' code paths treat
	 * the fields as RCU pointers.
	 */
	if (event != SK__RCU_CHECK_PUBLISH || late.fired ||
	    __atomic_load_n(&late.ht->tbl, __ATOMIC_ACQUIRE) == late.old)
		return;
	late.fired = 1;
	for (i = 0; i < late.old->size && !n; i++)
		n = __atomic_load_n(&late.old->buckets[i], __ATOMIC_ACQUIRE);
	if (!n)
		return;
	o = OF(n, struct obj, node);
	late.removed = sk_rhash_remove(late.ht, n) == 0;
	sk_rcu_read_lock();
	late.found[0] = sk_rhash_lookup_u64(late.ht, o->key);
	late.found[1] = sk_rhash_lookup(late.ht, &o->key);
	sk_rcu_read_unlock();
}

/* Grow a table of n objects from 64 buckets with the hook set. */
static void resize_with_late_hook(int broken)
{
	enum { N = 200 };
	struct obj *o = objs_new(N, 1);
	int i;

	memset(&late, 0, sizeof(late));
	late.ht = table_new(64);
	for (i = 0; i < N; i++)
		SK_CHECK_EQ(sk_rhash_insert(late.ht, &o[i].node), 0);
	late.old = late.ht->tbl;
	sk__rhash_test_broken = broken;
	sk__rcu_checker_hook = late_hook;
	SK_CHECK_EQ(sk_rhash_resize(late.ht, 256), 0);
	sk__rcu_checker_hook = NULL;
	sk__rhash_test_broken = 0;
	SK_CHECK_EQ(late.fired, 1);
	SK_CHECK_EQ(late.removed, 1);
	sk_rhash_destroy(late.ht, NULL, NULL);
	free(o);
}

static void walks_begun_as_a_resize_ends_miss_removed_keys(void)
{
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	resize_with_late_hook(0);
	SK_CHECK(late.found[0] == NULL);
	SK_CHECK(late.found[1] == NULL);
	sk_rcu_unregister_thread();
}

static void twin_late_lookup_tbl_finds_a_removed_key(void)
{
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	resize_with_late_hook(SK__RHASH_BROKEN_LATE_LOOKUP_TBL);
	SK_CHECK(late.found[0] != NULL);
	SK_CHECK(late.found[1] != NULL);
	sk_rcu_unregister_thread();
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(inline_and_exported_agree_on_every_kind_of_table);
	SK_RUN(inline_lookups_find_every_key_during_resizes);
	SK_RUN(twin_without_the_future_array_misses_keys);
	SK_RUN(walks_begun_as_a_resize_ends_miss_removed_keys);
	SK_RUN(twin_late_lookup_tbl_finds_a_removed_key);
	return sk_test_report();
}
