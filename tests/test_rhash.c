/* SPDX-License-Identifier: MIT */
/*
 * test_rhash.c - the resizable RCU hash table (scalekit/rhash.h).
 *
 * What is proven, one function each:
 *   - sk_rhash_create() rejects bad parameters with errno EINVAL and
 *     allocates nothing then (zero or non-power-of-two buckets, variable
 *     keys without hashfn or cmpfn, min > max, NULL params);
 *   - lookup, insert (duplicates allowed), insert_unique (-EEXIST), remove
 *     (-ENOENT), replace (-EINVAL for a different key, -ENOENT, also for an
 *     old node never inserted), count,
 *     buckets, the iterator (each object once) and destroy with a free
 *     callback, for 4-, 8-, 16- and 3-byte keys and for variable-length
 *     string keys (hashfn + cmpfn), and for 4- and 8-byte keys at odd
 *     addresses (compared without misaligned loads);
 *   - allocation failure (params.alloc failing the Nth allocation) during
 *     init, grow and shrink returns -ENOMEM, leaks nothing and leaves a
 *     valid table holding every object (lookups, iteration, count), at a
 *     size the resize reached; an automatic grow that fails does not fail
 *     the insert;
 *   - automatic resizing grows on load factor, shrinks when emptied, and
 *     stays within min_buckets..max_buckets;
 *   - sk_rhash_resize() inside a read section dies with a message.
 * The resizes against updaters are in test_rhash_resize.c, the concurrent
 * stress in test_rhash_stress.c.
 */
#define _GNU_SOURCE
#include "scalekit/rhash.h"

#include <errno.h>
#include <signal.h>
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

/* die_after_fork=0: the death test forks. */
SK_TEST_TSAN_OPTIONS("die_after_fork=0")

/* ---- counting allocator with failure injection ------------------------- */

static long alloc_calls, alloc_live, fail_at; /* fail_at: Nth call fails */
static int fail_all;				 /* every call fails */

static void *fail_alloc(size_t size)
{
	void *p;

	if (++alloc_calls == fail_at || fail_all)
		return NULL;
	p = malloc(size);
	if (p)
		alloc_live++;
	return p;
}

static void fail_free(void *p)
{
	if (p)
		alloc_live--;
	free(p);
}

static void alloc_reset(long fail)
{
	alloc_calls = 0;
	alloc_live = 0;
	fail_at = fail;
}

/* ---- parameters ------------------------------------------------------- */

static unsigned long str_hash(const void *key, size_t len, unsigned long seed)
{
	(void)len;
	return sk_rhash_hash(key, strlen((const char *)key), seed);
}

static int str_cmp(const void *key, const void *obj);

/* sk_rhash_create()'s error as -errno (0: created, and destroyed again). */
static int create_err(const struct sk_rhash_params *p)
{
	struct sk_rhash *ht;

	errno = 0;
	ht = sk_rhash_create(p);
	if (ht) {
		sk_rhash_destroy(ht, NULL, NULL);
		return 0;
	}
	return -errno;
}

static void init_rejects_bad_params(void)
{
	struct sk_rhash *ht;
	struct sk_rhash_params p;

	alloc_reset(0);
	p = obj_params(8);
	p.alloc = fail_alloc;
	p.free = fail_free;
	SK_CHECK_EQ(create_err(NULL), -EINVAL);
	p.initial_buckets = 0;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.initial_buckets = 3;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.initial_buckets = 96;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p = obj_params(8);
	p.alloc = fail_alloc;
	p.free = fail_free;
	p.key_len = 0; /* variable keys need both functions */
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.hashfn = str_hash;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.hashfn = NULL;
	p.cmpfn = str_cmp;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p = obj_params(8);
	p.alloc = fail_alloc;
	p.free = fail_free;
	p.min_buckets = 128;
	p.max_buckets = 64;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.min_buckets = 3;
	p.max_buckets = 64;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	p.min_buckets = 1;
	p.max_buckets = 100;
	SK_CHECK_EQ(create_err(&p), -EINVAL);
	SK_CHECK_EQ(alloc_calls, 0);
	/* Accepted: zero min/max take the defaults. */
	p.min_buckets = 0;
	p.max_buckets = 0;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 8);
	SK_CHECK_EQ(sk_rhash_count(ht), 0);
	sk_rhash_destroy(ht, NULL, NULL);
	SK_CHECK_EQ(alloc_live, 0);
	SK_CHECK_EQ(sk_rhash_resize(NULL, 8), -EINVAL);
}

/* ---- basic operations ------------------------------------------------- */

static int free_cb_calls;
static void *free_cb_arg;

static void free_cb(void *obj, void *arg)
{
	((struct obj *)obj)->freed_by_cb++;
	free_cb_calls++;
	free_cb_arg = arg;
}

static void insert_lookup_remove_replace(void)
{
	struct sk_rhash_params p = obj_params(4);
	struct sk_rhash *ht;
	struct obj *o = objs_new(200, 1), dup, repl, other;
	uint64_t absent = 42;
	int i, marker;

	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	SK_CHECK(sk_rhash_lookup(ht, &absent) == NULL);
	for (i = 0; i < 200; i++)
		SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[i].node), 0);
	check_all(ht, o, 200, "after 200 inserts");
	SK_CHECK_EQ(sk_rhash_buckets(ht), 4);

	/* insert_unique refuses a present key; insert accepts duplicates. */
	memset(&dup, 0, sizeof(dup));
	dup.key = o[17].key;
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &dup.node), -EEXIST);
	SK_CHECK_EQ(sk_rhash_count(ht), 200);
	SK_CHECK_EQ(sk_rhash_insert(ht, &dup.node), 0);
	SK_CHECK_EQ(sk_rhash_count(ht), 201);
	SK_CHECK_EQ(sk_rhash_remove(ht, &dup.node), 0);
	SK_CHECK_EQ(sk_rhash_remove(ht, &dup.node), -ENOENT);
	SK_CHECK_EQ(sk_rhash_count(ht), 200);
	SK_CHECK(sk_rhash_lookup(ht, &o[17].key) == &o[17]);

	/* remove */
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[5].node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[5].key) == NULL);
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[5].node), -ENOENT);
	SK_CHECK_EQ(sk_rhash_count(ht), 199);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[5].node), 0);

	/* replace: same key only, old must be present */
	memset(&repl, 0, sizeof(repl));
	repl.key = o[9].key;
	memset(&other, 0, sizeof(other));
	other.key = 999999;
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[9].node, &other.node), -EINVAL);
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[9].node, &repl.node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[9].key) == &repl);
	SK_CHECK_EQ(sk_rhash_count(ht), 200);
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[9].node, &repl.node), -ENOENT);
	SK_CHECK_EQ(sk_rhash_replace(ht, &repl.node, &o[9].node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[9].key) == &o[9]);

	/* NULL arguments */
	SK_CHECK_EQ(sk_rhash_insert(ht, NULL), -EINVAL);
	SK_CHECK_EQ(sk_rhash_insert(NULL, &dup.node), -EINVAL);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, NULL), -EINVAL);
	SK_CHECK_EQ(sk_rhash_remove(ht, NULL), -EINVAL);
	SK_CHECK_EQ(sk_rhash_replace(ht, NULL, &dup.node), -EINVAL);
	SK_CHECK_EQ(sk_rhash_replace(ht, &dup.node, NULL), -EINVAL);
	SK_CHECK_EQ(sk_rhash_resize(ht, 0), -EINVAL);
	SK_CHECK_EQ(sk_rhash_resize(ht, 48), -EINVAL);

	/* resize keeps everything, both ways */
	SK_CHECK_EQ(sk_rhash_resize(ht, 256), 0);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 256);
	check_all(ht, o, 200, "after grow to 256");
	SK_CHECK_EQ(sk_rhash_resize(ht, 1), 0);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 1);
	check_all(ht, o, 200, "after shrink to 1");
	SK_CHECK_EQ(sk_rhash_resize(ht, 1), 0);

	/* destroy calls the callback once per object, with arg */
	free_cb_calls = 0;
	sk_rhash_destroy(ht, free_cb, &marker);
	SK_CHECK_EQ(free_cb_calls, 200);
	SK_CHECK(free_cb_arg == &marker);
	for (i = 0; i < 200; i++)
		SK_CHECK_EQ(o[i].freed_by_cb, 1);
	sk_rhash_destroy(NULL, free_cb, &marker); /* nothing */
	free(o);
}

/*
 * replace() of an old node that is not in the table, with new_node's key
 * equal to old's: -ENOENT (old not present), as for an old node removed
 * before, also when old was never inserted (its cached hash is whatever
 * the memory held) -- not -EINVAL, which says the keys differ.
 */
static void replace_of_never_inserted_old_is_enoent(void)
{
	struct sk_rhash_params p = obj_params(8);
	struct sk_rhash *ht;
	struct obj *o = objs_new(16, 1), old, repl;
	int fill;

	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (fill = 0; fill < 16; fill++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[fill].node), 0);
	for (fill = 0; fill < 2; fill++) {
		memset(&old, fill ? 0xa5 : 0, sizeof(old));
		old.key = o[3].key; /* o[3] has that key, in the table */
		memset(&repl, 0, sizeof(repl));
		repl.key = o[3].key;
		SK_CHECK_EQ(sk_rhash_replace(ht, &old.node, &repl.node), -ENOENT);
		SK_CHECK_EQ(sk_rhash_remove(ht, &old.node), -ENOENT);
	}
	SK_CHECK(sk_rhash_lookup(ht, &o[3].key) == &o[3]);
	check_all(ht, o, 16, "after the refused replaces");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void empty_table_iteration_and_destroy(void)
{
	struct sk_rhash_params p = obj_params(16);
	struct sk_rhash *ht;
	struct sk_rhash_iter it;

	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	sk_rcu_read_lock();
	sk_rhash_iter_start(ht, &it);
	SK_CHECK(sk_rhash_iter_next(&it) == NULL);
	SK_CHECK(sk_rhash_iter_next(&it) == NULL);
	sk_rcu_read_unlock();
	free_cb_calls = 0;
	sk_rhash_destroy(ht, free_cb, NULL);
	SK_CHECK_EQ(free_cb_calls, 0);
}

/* Fixed key sizes other than 8: the 4-byte, memcmp and odd-size paths. */
struct kobj {
	struct sk_rhash_node node;
	unsigned char key[16];
};

static void fixed_key_sizes(void)
{
	static const size_t lens[] = { 4, 16, 3, 1 };
	struct kobj o[64];
	int li, i;

	for (li = 0; li < 4; li++) {
		struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
		struct sk_rhash *ht;
		size_t len = lens[li];
		int n = 64;

		p.head_offset = offsetof(struct kobj, node);
		p.key_offset = offsetof(struct kobj, key);
		p.key_len = len;
		p.initial_buckets = 2;
		p.automatic_resize = 0;
		SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
		memset(o, 0, sizeof(o));
		for (i = 0; i < n; i++) {
			/* Keys differ in the last byte of the key only. */
			memset(o[i].key, 0x11, sizeof(o[i].key));
			o[i].key[len - 1] = (unsigned char)i;
			SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[i].node), 0);
		}
		SK_CHECK_EQ(sk_rhash_resize(ht, 32), 0);
		sk_rcu_read_lock();
		for (i = 0; i < n; i++) {
			unsigned char k[16];

			memset(k, 0x11, sizeof(k));
			k[len - 1] = (unsigned char)i;
			/* bytes past key_len do not matter */
			k[15] = len < 16 ? 0x77 : k[15];
			SK_CHECK(sk_rhash_lookup(ht, k) == &o[i]);
			k[len - 1] = (unsigned char)(i + 100);
			SK_CHECK(sk_rhash_lookup(ht, k) == NULL);
		}
		sk_rcu_read_unlock();
		SK_CHECK_EQ(sk_rhash_count(ht), n);
		sk_rhash_destroy(ht, NULL, NULL);
	}
}

/*
 * Keys at odd addresses: nothing asks a key to be aligned (key_offset is
 * any offset, and the key a lookup gets may sit anywhere), so the compares
 * of 4- and 8-byte keys must not load them as uint32_t / uint64_t through
 * a cast pointer (misaligned: undefined, caught by -fsanitize=alignment,
 * SIGBUS on strict-alignment CPUs).  Both kinds of 8-byte table: the
 * inline one (its insert_unique() and replace() compare keys too) and one
 * with its own hash (every compare in the library).
 */
struct uobj {
	struct sk_rhash_node node;
	unsigned char pad;
	unsigned char key[8]; /* at an odd offset */
};

static unsigned long own_hash(const void *key, size_t len, unsigned long seed)
{
	return sk_rhash_hash(key, len, seed ^ 1);
}

static void unaligned_keys(void)
{
	static const size_t lens[] = { 4, 8, 8 };
	struct uobj o[32], repl;
	unsigned char buf[16];
	int li, i;

	for (li = 0; li < 3; li++) {
		struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
		struct sk_rhash *ht;
		size_t len = lens[li];

		p.head_offset = offsetof(struct uobj, node);
		p.key_offset = offsetof(struct uobj, key);
		p.key_len = len;
		p.hashfn = li == 2 ? own_hash : NULL;
		p.initial_buckets = 2;
		p.automatic_resize = 0;
		SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
		memset(o, 0, sizeof(o));
		for (i = 0; i < 32; i++) {
			memset(o[i].key, 0x22, sizeof(o[i].key));
			o[i].key[0] = (unsigned char)i;
			SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[i].node), 0);
		}
		SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[7].node), -EBUSY);
		memset(&repl, 0, sizeof(repl));
		memcpy(repl.key, o[7].key, sizeof(repl.key));
		SK_CHECK_EQ(sk_rhash_insert_unique(ht, &repl.node), -EEXIST);
		SK_CHECK_EQ(sk_rhash_replace(ht, &o[7].node, &repl.node), 0);
		sk_rcu_read_lock();
		for (i = 0; i < 32; i++) {
			/* The searched key at an odd address too. */
			memcpy(buf + 1, o[i].key, sizeof(o[i].key));
			SK_CHECK(sk_rhash_lookup(ht, buf + 1) ==
				 (i == 7 ? &repl : &o[i]));
			buf[1] = (unsigned char)(i + 100);
			SK_CHECK(sk_rhash_lookup(ht, buf + 1) == NULL);
		}
		sk_rcu_read_unlock();
		SK_CHECK_EQ(sk_rhash_remove(ht, &repl.node), 0);
		SK_CHECK_EQ(sk_rhash_count(ht), 31);
		sk_rhash_destroy(ht, NULL, NULL);
	}
}

/* Variable-length keys: a string inside the object, hashfn + cmpfn. */
struct sobj {
	struct sk_rhash_node node;
	char name[24];
};

static int str_cmp(const void *key, const void *obj)
{
	return strcmp((const char *)key, ((const struct sobj *)obj)->name);
}

static void variable_length_string_keys(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	struct sk_rhash *ht;
	struct sobj o[100], dup;
	char buf[24];
	int i;

	p.head_offset = offsetof(struct sobj, node);
	p.key_offset = offsetof(struct sobj, name);
	p.key_len = 0;
	p.hashfn = str_hash;
	p.cmpfn = str_cmp;
	p.initial_buckets = 4;
	p.automatic_resize = 0;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (i = 0; i < 100; i++) {
		/* prefixes of each other on purpose: "k", "kk", ... */
		memset(&o[i], 0, sizeof(o[i]));
		snprintf(o[i].name, sizeof(o[i].name), "%.*s%d",
			 i % 10 + 1, "kkkkkkkkkk", i);
		SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[i].node), 0);
	}
	memset(&dup, 0, sizeof(dup));
	strcpy(dup.name, o[33].name);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &dup.node), -EEXIST);
	SK_CHECK_EQ(sk_rhash_resize(ht, 64), 0);
	sk_rcu_read_lock();
	for (i = 0; i < 100; i++) {
		strcpy(buf, o[i].name); /* another pointer, same string */
		SK_CHECK(sk_rhash_lookup(ht, buf) == &o[i]);
	}
	SK_CHECK(sk_rhash_lookup(ht, "kkkkkkkkkkk") == NULL);
	SK_CHECK(sk_rhash_lookup(ht, "") == NULL);
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rhash_replace(ht, &o[33].node, &dup.node), 0);
	SK_CHECK(sk_rhash_lookup(ht, o[33].name) == &dup);
	SK_CHECK_EQ(sk_rhash_remove(ht, &dup.node), 0);
	SK_CHECK(sk_rhash_lookup(ht, o[33].name) == NULL);
	SK_CHECK_EQ(sk_rhash_count(ht), 99);
	sk_rhash_destroy(ht, NULL, NULL);
}

/* ---- allocation failure ------------------------------------------------ */

static void init_allocation_failure(void)
{
	struct sk_rhash_params p = obj_params(8);
	struct sk_rhash *ht;
	long n;

	p.alloc = fail_alloc;
	p.free = fail_free;
	for (n = 1; n <= 2; n++) {
		alloc_reset(n);
		SK_CHECK_EQ(create_err(&p), -ENOMEM);
		SK_CHECK_EQ(alloc_live, 0);
	}
	alloc_reset(0);
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	SK_CHECK_EQ(alloc_calls, 2);
	sk_rhash_destroy(ht, NULL, NULL);
	SK_CHECK_EQ(alloc_live, 0);
}

static int is_pow2(unsigned long x)
{
	return x && !(x & (x - 1));
}

/*
 * Resize from -> to with the Nth allocation failing, for every N until
 * one succeeds: -ENOMEM, a valid complete table at a size on the way,
 * nothing leaked; then the same resize succeeds.
 */
static void resize_with_failure(unsigned long from, unsigned long to)
{
	struct sk_rhash_params p = obj_params(from);
	struct obj *o = objs_new(100, 1);
	struct sk_rhash *ht;
	long n, failures = 0;
	int i, err;
	char what[96];

	p.alloc = fail_alloc;
	p.free = fail_free;
	for (n = 1;; n++) {
		unsigned long b;

		alloc_reset(0);
		SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
		for (i = 0; i < 100; i++)
			SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
		alloc_reset(n);
		alloc_live = 2; /* the table (with its count stripes) + array */
		err = sk_rhash_resize(ht, to);
		b = sk_rhash_buckets(ht);
		snprintf(what, sizeof(what), "resize %lu -> %lu, allocation %ld fails",
			 from, to, n);
		if (err == 0) {
			SK_CHECK_EQ(b, to);
			check_all(ht, o, 100, what);
			SK_CHECK_EQ(alloc_live, 2);
			sk_rhash_destroy(ht, NULL, NULL);
			break;
		}
		failures++;
		SK_CHECK_EQ(err, -ENOMEM);
		SK_CHECK(is_pow2(b));
		SK_CHECK(from < to ? b >= from && b < to : b <= from && b > to);
		check_all(ht, o, 100, what);
		SK_CHECK_EQ(alloc_live, 2); /* nothing leaked */
		/* The table still works: the same resize now succeeds. */
		fail_at = 0;
		SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
		SK_CHECK_EQ(sk_rhash_buckets(ht), to);
		check_all(ht, o, 100, what);
		SK_CHECK_EQ(sk_rhash_remove(ht, &o[3].node), 0);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[3].node), 0);
		sk_rhash_destroy(ht, NULL, NULL);
		SK_CHECK_EQ(alloc_live, 0);
		if (n > 64)
			break;
	}
	fprintf(stderr, "  resize %lu -> %lu: %ld allocation failures injected\n",
		from, to, failures);
	SK_CHECK_GT(failures, 0);
	free(o);
}

static void grow_and_shrink_allocation_failure(void)
{
	resize_with_failure(4, 64);  /* 4 grow steps: array + cursor each */
	resize_with_failure(64, 2);  /* 5 shrink steps: array each */
	resize_with_failure(1, 2);
}

static void automatic_grow_allocation_failure_keeps_insert(void)
{
	struct sk_rhash_params p = obj_params(1);
	struct obj *o = objs_new(300, 1);
	struct sk_rhash *ht;
	int i;

	p.alloc = fail_alloc;
	p.free = fail_free;
	p.automatic_resize = 1;
	p.max_buckets = 1024;
	alloc_reset(0);
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	fail_all = 1; /* every automatic grow fails */
	for (i = 0; i < 300; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	sk_rhash_barrier(ht); /* the background grow has run and failed */
	SK_CHECK_GT(alloc_calls, 0); /* grows were attempted */
	SK_CHECK_EQ(sk_rhash_buckets(ht), 1);
	check_all(ht, o, 300, "inserts while every grow fails");
	fail_all = 0;
	/* Later updates retry the grow. */
	for (i = 0; i < 64; i++) {
		SK_CHECK_EQ(sk_rhash_remove(ht, &o[i].node), 0);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	}
	sk_rhash_barrier(ht);
	SK_CHECK_GT(sk_rhash_buckets(ht), 1);
	check_all(ht, o, 300, "after the retried grow");
	sk_rhash_destroy(ht, NULL, NULL);
	SK_CHECK_EQ(alloc_live, 0);
	free(o);
}

/* ---- automatic resizing ------------------------------------------------ */

static void automatic_resize_follows_load_factor(void)
{
	struct sk_rhash_params p = obj_params(1);
	struct obj *o = objs_new(4000, 1);
	struct sk_rhash *ht;
	unsigned long peak;
	int i;

	p.automatic_resize = 1;
	p.min_buckets = 2;
	p.max_buckets = 1024;
	p.initial_buckets = 2;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (i = 0; i < 4000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	sk_rhash_barrier(ht); /* resizes run in the background */
	peak = sk_rhash_buckets(ht);
	fprintf(stderr, "  4000 objects: %lu buckets\n", peak);
	SK_CHECK(is_pow2(peak));
	SK_CHECK_GT(peak, 64);	 /* grew on load factor */
	SK_CHECK_LE(peak, 1024); /* within max_buckets */
	check_all(ht, o, 4000, "after automatic grow");
	for (i = 0; i < 3996; i++)
		SK_CHECK_EQ(sk_rhash_remove(ht, &o[i].node), 0);
	sk_rhash_barrier(ht);
	fprintf(stderr, "  4 objects left: %lu buckets\n",
		sk_rhash_buckets(ht));
	SK_CHECK(sk_rhash_buckets(ht) < peak); /* shrank when emptied */
	SK_CHECK(sk_rhash_buckets(ht) >= 2);	/* within min_buckets */
	check_all(ht, o + 3996, 4, "after automatic shrink");
	sk_rhash_destroy(ht, NULL, NULL);

	/*
	 * max_buckets caps the growth; inserts inside a read section queue
	 * the grow too (it runs once the section ends).
	 */
	p.max_buckets = 8;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	sk_rcu_read_lock();
	for (i = 0; i < 1000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	sk_rcu_read_unlock();
	sk_rhash_barrier(ht);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 8);
	for (i = 1000; i < 4000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	sk_rhash_barrier(ht);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 8);
	check_all(ht, o, 4000, "capped at max_buckets");
	sk_rhash_destroy(ht, NULL, NULL);
	free(o);
}

static void resize_inside_read_section_dies(void)
{
	int pipefd[2], status;
	char buf[512] = "";
	pid_t pid;
	ssize_t n;

	SK_CHECK_EQ(pipe(pipefd), 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct sk_rhash_params p = obj_params(4);
		struct sk_rhash *ht;

		dup2(pipefd[1], 2);
		if (!(ht = sk_rhash_create(&p)))
			_exit(3);
		sk_rcu_read_lock();
		sk_rhash_resize(ht, 8);
		_exit(0);
	}
	close(pipefd[1]);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	if (n > 0)
		buf[n] = '\0';
	close(pipefd[0]);
	SK_CHECK_EQ(waitpid(pid, &status, 0), pid);
	SK_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	SK_CHECK_STR_CONTAINS(buf, "sk_rhash_resize() called inside an RCU "
				   "read-side critical section");
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(resize_inside_read_section_dies); /* forks: before threads */
	SK_RUN(init_rejects_bad_params);
	SK_RUN(insert_lookup_remove_replace);
	SK_RUN(replace_of_never_inserted_old_is_enoent);
	SK_RUN(empty_table_iteration_and_destroy);
	SK_RUN(fixed_key_sizes);
	SK_RUN(unaligned_keys);
	SK_RUN(variable_length_string_keys);
	SK_RUN(init_allocation_failure);
	SK_RUN(grow_and_shrink_allocation_failure);
	SK_RUN(automatic_grow_allocation_failure_keeps_insert);
	SK_RUN(automatic_resize_follows_load_factor);
	return sk_test_report();
}
