/* SPDX-License-Identifier: MIT */
/*
 * Table adapter of scalekit's resizable hash table (sk_rhash) for the
 * hash-* scenarios (bench/hash.h): lookups (sk_rhash_lookup_u64(), the
 * inline lookup of 8-byte keys passed by value) through the harness's reader
 * threads (read_section(n) is n lookups, one read section each), and the
 * updates, resizes and lookups of the update and latency scenarios.
 * sk_rhash updates run outside read sections, as its API allows.
 */
#define _GNU_SOURCE
#include "hash.h"

#include <stddef.h>

#include "scalekit/rcu.h"

static void lookup_missed(void)
{
	sk_bench_hash_die("a lookup did not find a key that is in the table");
}

static void rh_register(void)
{
	if (sk_rcu_register_thread())
		sk_bench_hash_die("sk_rcu_register_thread failed");
}

static void rh_lookup_thread_init(void)
{
	rh_register();
	sk_bench_hash_seed_thread();
}

static void rh_unregister(void)
{
	sk_rcu_unregister_thread();
}

static inline void rh_lookup_one(struct sk_rhash *ht, uint64_t key)
{
	struct hobj *o;

	sk_rcu_read_lock();
	o = sk_rhash_lookup_u64(ht, key); /* the API for 8-byte keys */
	if (SK_UNLIKELY(!o))
		lookup_missed();
	SK_BENCH_USE(o->key);
	sk_rcu_read_unlock();
}

static void rh_lookups(long n)
{
	struct sk_rhash *ht = sk_bench_hash_w.sk;

	SK_BENCH_HASH_LOOKUPS(n, key, rh_lookup_one(ht, key));
}

/* Registered lookup threads: what both ops share. */
#define RH_LOOKUP_READERS                                                   \
	.thread_init = rh_lookup_thread_init, .thread_exit = rh_unregister, \
	.read_section = rh_lookups

const struct sk_bench_rcu_ops sk_bench_rhash_ops = {
	.name = "rhash",
	.desc = "scalekit sk_rhash: sk_rcu_read_lock + sk_rhash_lookup_u64 "
		"(hash-* scenarios)",
	RH_LOOKUP_READERS,
};

/* The same lookups; hash-resize runs a resizer beside them. */
const struct sk_bench_rcu_ops sk_bench_rhash_resizing_ops = {
	.name = "rhash-resizing",
	.desc = "rhash lookups while another thread resizes the table "
		"(hash-resize)",
	RH_LOOKUP_READERS,
};

/* The same lookups; hash-resize resizes a second table beside them. */
const struct sk_bench_rcu_ops sk_bench_rhash_beside_ops = {
	.name = "rhash-beside",
	.desc = "rhash lookups while another thread resizes a second table "
		"(hash-resize)",
	RH_LOOKUP_READERS,
};

/*
 * The same lookups; hash-resize runs a thread beside them that only waits
 * for grace periods, as many per second as the resizer's resizes wait for.
 */
const struct sk_bench_rcu_ops sk_bench_rhash_gp_ops = {
	.name = "rhash-gp",
	.desc = "rhash lookups while another thread waits for grace periods "
		"at the resizer's rate (hash-resize)",
	RH_LOOKUP_READERS,
};

static int rh_build(unsigned long buckets)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

	p.head_offset = offsetof(struct hobj, sk);
	p.key_offset = offsetof(struct hobj, key);
	p.key_len = sizeof(uint64_t);
	p.initial_buckets = buckets;
	if (buckets < p.min_buckets)
		p.min_buckets = buckets;
	sk_bench_hash_w.sk = sk_rhash_create(&p);
	return sk_bench_hash_w.sk ? 0 : -1;
}

static void rh_destroy(void)
{
	if (sk_bench_hash_w.sk)
		sk_rhash_destroy(sk_bench_hash_w.sk, NULL, NULL);
	sk_bench_hash_w.sk = NULL;
}

static void rh_insert(struct hobj *o)
{
	if (SK_UNLIKELY(sk_rhash_insert(sk_bench_hash_w.sk, &o->sk)))
		sk_bench_hash_die("sk_rhash_insert failed");
}

static void rh_remove(struct hobj *o)
{
	if (SK_UNLIKELY(sk_rhash_remove(sk_bench_hash_w.sk, &o->sk)))
		sk_bench_hash_die("sk_rhash_remove failed");
}

static void rh_lookup(uint64_t key)
{
	sk_rcu_read_lock();
	(void)sk_rhash_lookup(sk_bench_hash_w.sk, &key);
	sk_rcu_read_unlock();
}

static void rh_resize(unsigned long nbuckets)
{
	if (sk_rhash_resize(sk_bench_hash_w.sk, nbuckets))
		sk_bench_hash_die("sk_rhash_resize failed");
}

static void rh_barrier(void)
{
	sk_rhash_barrier(sk_bench_hash_w.sk);
}

const struct sk_bench_hash_ops sk_bench_hash_rhash = {
	.name = "rhash",
	.lookups = &sk_bench_rhash_ops,
	.build = rh_build,
	.destroy = rh_destroy,
	.thread_init = rh_register,
	.thread_exit = rh_unregister,
	.insert = rh_insert,
	.remove = rh_remove,
	.lookup = rh_lookup,
	.synchronize = sk_synchronize_rcu,
	.resize = rh_resize,
	.barrier = rh_barrier,
};
