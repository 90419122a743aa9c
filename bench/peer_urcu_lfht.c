/* SPDX-License-Identifier: MIT */
/*
 * Table adapter of liburcu's lock-free hash table (cds_lfht) for the
 * hash-* scenarios (bench/hash.h).  cds_lfht runs with the urcu-memb
 * flavor, CDS_LFHT_AUTO_RESIZE and CDS_LFHT_ACCOUNTING (counted grow and
 * shrink, as sk_rhash's automatic resizing), its flat mmap bucket layout
 * (max_nr_buckets <= 2^32), and starts at the size sk_rhash starts with.
 * Its updates run inside a read section each, as its API asks.  The
 * urcu-memb flavor header maps unprefixed names; this file uses no other
 * names that could clash.
 *
 * Not under ThreadSanitizer: liburcu-cds is not instrumented, so TSan
 * reports its internal hand-offs (resize worker, destroy) as races.
 */
#define _GNU_SOURCE
#include "hash.h"

#if defined(SK_HAVE_LIBURCU_CDS) && defined(SK_HAVE_LIBURCU_MEMB) && \
	!defined(SK__TSAN)
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

/* cds_lfht's bucket array limit: <= 2^32 selects its flat mmap layout. */
#define LFHT_MAX_BUCKETS (1UL << 24)

_Static_assert(sizeof(struct cds_lfht_node) <= sizeof(((struct hobj *)0)->lf),
	       "struct hobj holds a cds_lfht_node");

static struct cds_lfht_node *lf_node(struct hobj *o)
{
	return (struct cds_lfht_node *)(void *)o->lf;
}

static struct hobj *lf_obj(struct cds_lfht_node *n)
{
	return (struct hobj *)((char *)n - offsetof(struct hobj, lf));
}

static int lf_match(struct cds_lfht_node *node, const void *key)
{
	return lf_obj(node)->key == *(const uint64_t *)key;
}

static void lf_lookup_missed(void)
{
	sk_bench_hash_die("a lookup did not find a key that is in the table");
}

static void lf_register(void)
{
	urcu_memb_register_thread();
}

static void lf_lookup_thread_init(void)
{
	urcu_memb_register_thread();
	sk_bench_hash_seed_thread();
}

static void lf_unregister(void)
{
	urcu_memb_unregister_thread();
}

static inline void lf_lookup_one(struct cds_lfht *ht, uint64_t key)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	urcu_memb_read_lock();
	cds_lfht_lookup(ht, sk_bench_hash_of(key), lf_match, &key, &it);
	node = cds_lfht_iter_get_node(&it);
	if (SK_UNLIKELY(!node))
		lf_lookup_missed();
	SK_BENCH_USE(lf_obj(node)->key);
	urcu_memb_read_unlock();
}

static void lf_lookups(long n)
{
	struct cds_lfht *ht = sk_bench_hash_w.lf;

	SK_BENCH_HASH_LOOKUPS(n, key, lf_lookup_one(ht, key));
}

/* Registered lookup threads: what both ops share. */
#define LF_LOOKUP_READERS                                                  \
	.thread_init = lf_lookup_thread_init, .thread_exit = lf_unregister, \
	.read_section = lf_lookups

const struct sk_bench_rcu_ops sk_bench_urcu_lfht_ops = {
	.name = "urcu-lfht",
	.desc = "liburcu cds_lfht (urcu-memb flavor, auto-resize): "
		"read_lock + cds_lfht_lookup (hash-* scenarios)",
	LF_LOOKUP_READERS,
};

/* The same lookups; hash-resize runs a resizer of the table beside them. */
const struct sk_bench_rcu_ops sk_bench_urcu_lfht_resizing_ops = {
	.name = "urcu-lfht-resizing",
	.desc = "urcu-lfht lookups while another thread resizes the table "
		"with cds_lfht_resize() (hash-resize)",
	LF_LOOKUP_READERS,
};

static int lf_build(unsigned long buckets)
{
	sk_bench_hash_w.lf = cds_lfht_new_flavor(
		buckets, 1, LFHT_MAX_BUCKETS,
		CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
		&urcu_memb_flavor, NULL);
	return sk_bench_hash_w.lf ? 0 : -1;
}

/* cds_lfht_destroy() wants an empty table. */
static void lf_destroy(void)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	if (!sk_bench_hash_w.lf)
		return;
	urcu_memb_register_thread();
	urcu_memb_read_lock();
	cds_lfht_for_each(sk_bench_hash_w.lf, &it, n)
		cds_lfht_del(sk_bench_hash_w.lf, n);
	urcu_memb_read_unlock();
	urcu_memb_synchronize_rcu();
	if (cds_lfht_destroy(sk_bench_hash_w.lf, NULL))
		sk_bench_hash_die("cds_lfht_destroy failed");
	urcu_memb_unregister_thread();
	sk_bench_hash_w.lf = NULL;
}

static void lf_insert(struct hobj *o)
{
	cds_lfht_node_init(lf_node(o));
	urcu_memb_read_lock();
	cds_lfht_add(sk_bench_hash_w.lf, sk_bench_hash_of(o->key), lf_node(o));
	urcu_memb_read_unlock();
}

static void lf_remove(struct hobj *o)
{
	int err;

	urcu_memb_read_lock();
	err = cds_lfht_del(sk_bench_hash_w.lf, lf_node(o));
	urcu_memb_read_unlock();
	if (SK_UNLIKELY(err))
		sk_bench_hash_die("cds_lfht_del failed");
}

static void lf_lookup(uint64_t key)
{
	struct cds_lfht_iter it;

	urcu_memb_read_lock();
	cds_lfht_lookup(sk_bench_hash_w.lf, sk_bench_hash_of(key), lf_match,
			&key, &it);
	urcu_memb_read_unlock();
}

static void lf_resize(unsigned long nbuckets)
{
	cds_lfht_resize(sk_bench_hash_w.lf, nbuckets);
}

const struct sk_bench_hash_ops sk_bench_hash_lfht = {
	.name = "urcu-lfht",
	.lookups = &sk_bench_urcu_lfht_ops,
	.build = lf_build,
	.destroy = lf_destroy,
	.thread_init = lf_register,
	.thread_exit = lf_unregister,
	.insert = lf_insert,
	.remove = lf_remove,
	.lookup = lf_lookup,
	.synchronize = urcu_memb_synchronize_rcu,
	.resize = lf_resize,
};
#else
#ifdef SK__TSAN
#define SK_BENCH_LFHT_UNAVAILABLE \
	"not built under ThreadSanitizer (liburcu-cds is not instrumented)"
#else
#define SK_BENCH_LFHT_UNAVAILABLE \
	"liburcu-cds or liburcu-memb was not found by pkg-config at build time"
#endif

const struct sk_bench_rcu_ops sk_bench_urcu_lfht_ops = {
	.name = "urcu-lfht",
	.desc = "liburcu cds_lfht (hash-* scenarios)",
	.unavailable = SK_BENCH_LFHT_UNAVAILABLE,
};

const struct sk_bench_rcu_ops sk_bench_urcu_lfht_resizing_ops = {
	.name = "urcu-lfht-resizing",
	.desc = "urcu-lfht lookups while another thread resizes the table "
		"(hash-resize)",
	.unavailable = SK_BENCH_LFHT_UNAVAILABLE,
};

const struct sk_bench_hash_ops sk_bench_hash_lfht = {
	.lookups = &sk_bench_urcu_lfht_ops,
};
#endif
