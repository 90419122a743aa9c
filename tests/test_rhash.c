/* SPDX-License-Identifier: MIT */
/*
 * test_rhash.c - the resizable RCU hash table (scalekit/rhash.h).
 *
 * What is proven, one function each:
 *   - sk_rhash_create() rejects bad parameters with errno EINVAL and
 *     allocates nothing then (zero or non-power-of-two buckets, variable
 *     keys without hashfn or cmpfn, min > max, NULL params);
 *   - lookup, insert (duplicates allowed), insert_unique (-EEXIST), remove
 *     (-ENOENT), replace (-EINVAL for a different key, -ENOENT), count,
 *     buckets, the iterator (each object once) and destroy with a free
 *     callback, for 4-, 8-, 16- and 3-byte keys and for variable-length
 *     string keys (hashfn + cmpfn);
 *   - allocation failure (params.alloc failing the Nth allocation) during
 *     init, grow and shrink returns -ENOMEM, leaks nothing and leaves a
 *     valid table holding every object (lookups, iteration, count), at a
 *     size the resize reached; an automatic grow that fails does not fail
 *     the insert;
 *   - automatic resizing grows on load factor, shrinks when emptied, and
 *     stays within min_buckets..max_buckets;
 *   - sk_rhash_resize() inside a read section dies with a message;
 *   - updaters that dereference the bucket array outside a read section
 *     (sk_rhash_insert/remove via lock_bucket(), sk_rhash_buckets()) must
 *     not read an array a concurrent resize has freed: a thread is paused
 *     (SIGSEGV on a PROT_NONE page) right after loading ht->tbl while
 *     another resizes; a control shows that a lookup inside a read section
 *     holds the resize back as it must;
 *   - concurrent stress (tests/rhash_stress.h): lookups and iterations
 *     under sk_rcu_read_lock during continuous inserts, removes, replaces
 *     and resizes never miss an untouched key, never see a freed object,
 *     always terminate, and the table equals the model at the end; with
 *     automatic resizing too; the broken twin that frees without a grace
 *     period MUST be caught.
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
#include <sys/wait.h>
#include <unistd.h>

#include "../src/internal/rhash.h" /* white box: resizing, resizes */
#include "rhash_stress.h"
#include "sk_test.h"
#include "sk_test_util.h"

#ifdef __SANITIZE_THREAD__
/* die_after_fork=0: the death test forks. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif
#ifdef __SANITIZE_ADDRESS__
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1";
}
#endif

/* Mirror of the private struct sk_rhash_table (src/rhash.c). */
struct tbl_mirror {
	unsigned long size;
	unsigned long mask;
	void *buckets[];
};

/* ---- objects ----------------------------------------------------------- */

struct obj {
	uint64_t pad;
	struct sk_rhash_node node;
	uint64_t key;
	int freed_by_cb;
};

static struct sk_rhash_params obj_params(unsigned long buckets)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

	p.head_offset = offsetof(struct obj, node);
	p.key_offset = offsetof(struct obj, key);
	p.key_len = sizeof(uint64_t);
	p.initial_buckets = buckets;
	p.min_buckets = 1;
	p.automatic_resize = 0;
	return p;
}

static struct obj *objs_new(int n)
{
	struct obj *o = (struct obj *)calloc((size_t)n, sizeof(*o));
	int i;

	if (!o)
		abort();
	for (i = 0; i < n; i++)
		o[i].key = (uint64_t)i * 7919 + 1;
	return o;
}

/* Every object of o[0..n) findable, iteration returns each once, count n. */
static void check_all(struct sk_rhash *ht, struct obj *o, int n,
		      const char *what)
{
	struct sk_rhash_iter it;
	struct obj *x;
	int i, bad = 0, got = 0;
	unsigned char *seen = (unsigned char *)calloc((size_t)n + 1, 1);

	if (!seen)
		abort();
	sk_rcu_read_lock();
	for (i = 0; i < n; i++)
		if (sk_rhash_lookup(ht, &o[i].key) != &o[i])
			bad++;
	sk_rhash_iter_start(ht, &it);
	while ((x = (struct obj *)sk_rhash_iter_next(&it)) != NULL) {
		long idx = x - o;

		if (idx < 0 || idx >= n || seen[idx]++ || ++got > n) {
			bad++;
			break;
		}
	}
	sk_rcu_read_unlock();
	if (bad || got != n)
		SK_T_FAIL("%s: %d objects not found or returned wrongly, "
			  "iteration returned %d of %d",
			  what, bad, got, n);
	SK_CHECK_EQ(sk_rhash_count(ht), n);
	free(seen);
}

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
	struct obj *o = objs_new(200), dup, repl, other;
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
	struct obj *o = objs_new(100);
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
	struct obj *o = objs_new(300);
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
	struct obj *o = objs_new(4000);
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
	struct obj *o = objs_new(8);
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
 * lock while it waits for the grace period that our section holds back,
 * so the updates go through (the old library returned -EDEADLK here, and
 * a library whose resize held the bucket locks across that grace period
 * would hang: the test's alarm reports it).  Deterministic: the resize is
 * started while our section is open, so it cannot finish before we try;
 * we update once it has published the future array and once it has
 * switched the table (resizes counted), both before its free.
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
 * future array (resizing) or switched the table (resizes): it cannot get
 * further while our section is open.  Relaxed: progress flags only.
 */
static void wait_resize_started(struct sk_rhash *ht)
{
	while (!__atomic_load_n(&ht->resizing, __ATOMIC_RELAXED) &&
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
	struct obj *o = objs_new(20002), dup;
	struct rs_resizer r;
	int i;

	alarm(120); /* a hang is the bug this guards against */
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	for (i = 0; i < 20000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	rs_start_in_section(&r, ht, 4096);
	wait_resize_started(ht);
	SK_CHECK_EQ(sk_rhash_insert(ht, &o[20000].node), 0);
	/* Its key is present (dup: another node with it); the node
	 * itself is in the table (tests/test_rhash_misuse.c). */
	dup = o[20000];
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &dup.node), -EEXIST);
	SK_CHECK_EQ(sk_rhash_insert_unique(ht, &o[20000].node), -EBUSY);
	SK_CHECK_EQ(sk_rhash_remove(ht, &o[0].node), 0);
	SK_CHECK(sk_rhash_lookup(ht, &o[20000].key) == &o[20000]);
	SK_CHECK(sk_rhash_lookup(ht, &o[0].key) == NULL);
	/* The resize now waits for our section, holding no lock. */
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
 * resize must queue it when it ends.  The resizer is held in its grace
 * period by our read section while 4000 inserts cross the limit; after it
 * ends, the background grow must bring the table to the load factor.  A
 * resize that forgot the check leaves 128 buckets.
 */
static void grow_left_to_an_explicit_resize_happens(void)
{
	struct sk_rhash_params p = obj_params(64);
	struct sk_rhash *ht;
	struct obj *o = objs_new(4000);
	struct rs_resizer r;
	int i;

	alarm(120); /* a hang is a bug too */
	p.automatic_resize = 1;
	p.min_buckets = 64;
	SK_CHECK((ht = sk_rhash_create(&p)) != NULL);
	rs_start_in_section(&r, ht, 128);
	wait_resize_switched(ht); /* now waiting for our section */
	for (i = 0; i < 4000; i++)
		SK_CHECK_EQ(sk_rhash_insert(ht, &o[i].node), 0);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 128); /* nothing else ran */
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

/* Run c: no failure, and the table ends equal to the updaters' models. */
static void stress_run_clean(const struct sk_rhs_config *c,
			     struct sk_rhs_result *r)
{
	SK_CHECK_EQ(sk_rhs_run(c, r), 0);
	sk_rhs_print(c, r);
	SK_CHECK_EQ(sk_rhs_failures(r), 0);
	SK_CHECK_EQ(r->final_mismatch, 0);
}

static void stress_lookups_iterations_updates_resizes(void)
{
	struct sk_rhs_config c = stress_cfg("stress");
	struct sk_rhs_result r;

	stress_run_clean(&c, &r);
	SK_CHECK_GT(r.checked_keys, 0);
	SK_CHECK_GT(r.iterations, 0);
	SK_CHECK_GT(r.resizes, 0);
	SK_CHECK_EQ(r.resize_errors, 0);
}

static void stress_with_automatic_resize(void)
{
	struct sk_rhs_config c = stress_cfg("stress, automatic resize");
	struct sk_rhs_result r;

	c.automatic_resize = 1;
	c.resizers = 0;
	c.keys_per_updater = 1024;
	c.max_log2 = 10;
	stress_run_clean(&c, &r);
	SK_CHECK_GT(r.max_buckets_seen, 1);
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
	stress_run_clean(&c, &r);
	SK_CHECK_GT(r.resizes, 0);
	SK_CHECK_EQ(r.resize_errors, 0);
}

/*
 * Lock-free inserts (sk_rhash_insert() only) against continuous resizes of
 * tiny tables (1 to 8 buckets): long chains, so inserts keep pushing onto
 * the heads the migrator compare-and-swaps (RH-M2, RH-M3), on old buckets
 * it has just marked moved, and across the lock-array changes (RH-D1).  No key is lost or found twice, no freed object is seen.
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
	stress_run_clean(&c, &(struct sk_rhs_result){ 0 });
}

/* Freeing without a grace period MUST be caught (quarantine + poison). */
static void stress_broken_twin_is_caught(void)
{
	struct sk_rhs_config c = stress_cfg("stress, BROKEN: free without a "
					     "grace period");
	struct sk_rhs_result r;
	int round;

	c.broken = 1;
	c.stop_on_failure = 1;
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
	SK_RUN(resize_inside_read_section_dies); /* forks: before threads */
	SK_RUN(init_rejects_bad_params);
	SK_RUN(insert_lookup_remove_replace);
	SK_RUN(empty_table_iteration_and_destroy);
	SK_RUN(fixed_key_sizes);
	SK_RUN(variable_length_string_keys);
	SK_RUN(init_allocation_failure);
	SK_RUN(grow_and_shrink_allocation_failure);
	SK_RUN(automatic_grow_allocation_failure_keeps_insert);
	SK_RUN(automatic_resize_follows_load_factor);
	SK_RUN(update_in_read_section_during_resize_works);
	SK_RUN(grow_left_to_an_explicit_resize_happens);
	SK_RUN(lookup_in_read_section_holds_back_the_free);
	SK_RUN(insert_never_reads_a_freed_bucket_array);
	SK_RUN(remove_never_reads_a_freed_bucket_array);
	SK_RUN(buckets_never_reads_a_freed_bucket_array);
	SK_RUN(stress_lookups_iterations_updates_resizes);
	SK_RUN(stress_with_automatic_resize);
	SK_RUN(stress_updates_inside_read_sections);
	SK_RUN(stress_lock_free_inserts_race_the_migration);
	SK_RUN(stress_broken_twin_is_caught);
	return sk_test_report();
}
