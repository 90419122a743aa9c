/* SPDX-License-Identifier: MIT */
/*
 * The hash-table scenarios of `scalekit bench` (hash-lookup, hash-resize,
 * hash-update in hash.c; hash-update-resize, hash-grow in hash_latency.c)
 * and their table adapters, one per table: peer_scalekit_rhash.c
 * (sk_rhash) and peer_urcu_lfht.c (liburcu's cds_lfht).
 *
 * Both tables hold the same objects: one 64-byte, cache-line-aligned
 * object per key, with the key, an sk_rhash_node and a cds_lfht_node in
 * the same line, so both tables touch the same memory per object.  Keys
 * are 8 bytes, key i is (i + 1) * 0x9e3779b97f4a7c15 (distinct, not
 * small integers), and both tables hash them with the same function:
 * sk_rhash_hash() with seed 0, which sk_rhash calls itself and which
 * cds_lfht users compute and pass in; here an inline copy, checked against
 * sk_rhash_hash() at setup, so that the peer pays no call for it either.
 */
#ifndef SK_BENCH_HASH_H
#define SK_BENCH_HASH_H

#include <stdint.h>

#include "bench.h"
#include "scalekit/rhash.h"

/* ---- objects and keys ------------------------------------------------- */

struct hobj {
	uint64_t key;
	struct sk_rhash_node sk; /* sk_rhash's link */
	/* cds_lfht's link (struct cds_lfht_node, peer_urcu_lfht.c). */
	unsigned long lf[2] __attribute__((aligned(16)));
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct hobj) == 64, "one cache line per object");

static inline uint64_t sk_bench_hash_key(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ULL;
}

/* A 64-bit finalizer (two multiplies): the lookup threads' seeds. */
static inline uint64_t sk_bench_hash_seed_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * sk_rhash_hash()'s mixing step (src/internal/rhash.h, sk__rhash_mix64()):
 * the 128-bit product of x ^ K1 and x ^ K2, halves folded by xor.
 */
static inline uint64_t sk_bench_hash_mix(uint64_t x)
{
	uint64_t a = x ^ 0x9fb21c651e98df25ULL, b = x ^ 0xc2b2ae3d27d4eb4fULL;
#ifdef __SIZEOF_INT128__
	unsigned __int128 m = (unsigned __int128)a * b;

	return (uint64_t)m ^ (uint64_t)(m >> 64);
#else
	uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;

	return ((mid << 32) | (uint32_t)p00) ^
	       (p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32));
#endif
}

/* sk_rhash_hash(&key, 8, 0), inline (checked in sk_bench_hash_build()). */
static inline unsigned long sk_bench_hash_of(uint64_t key)
{
	return (unsigned long)sk_bench_hash_mix((8 * 0x9e3779b97f4a7c15ULL) ^
						key);
}

/* xorshift64*: the index of the next key to look up. */
static inline uint64_t sk_bench_hash_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (x * 0x2545f4914f6cdd1dULL) >> 16;
}

/* ---- the tables --------------------------------------------------------- */

/*
 * A table adapter.  build/destroy run on the main thread between runs;
 * the others on a thread between thread_init and thread_exit.  insert and
 * remove are one update each (outside a read section for sk_rhash, inside
 * one for cds_lfht, as each API asks); synchronize waits for a grace
 * period of the table's RCU; resize is one explicit resize (NULL: none);
 * barrier waits for the table's background resizing (NULL: none).
 */
struct sk_bench_hash_ops {
	const char *name;
	const struct sk_bench_rcu_ops *lookups; /* hash-lookup's adapter */
	int (*build)(unsigned long buckets); /* automatic resizing on */
	void (*destroy)(void);
	void (*thread_init)(void);
	void (*thread_exit)(void);
	void (*insert)(struct hobj *o);
	void (*remove)(struct hobj *o);
	void (*lookup)(uint64_t key);
	void (*synchronize)(void);
	void (*resize)(unsigned long nbuckets);
	void (*barrier)(void);
};

extern const struct sk_bench_hash_ops sk_bench_hash_rhash;
extern const struct sk_bench_hash_ops sk_bench_hash_lfht; /* name NULL: n/a */
/* Times nothing: the clock-and-scheduler baseline of the latency runs. */
extern const struct sk_bench_hash_ops sk_bench_hash_empty;

/* The adapter of impl (row->impl[i]), or NULL. */
const struct sk_bench_hash_ops *
sk_bench_hash_ops_of(const struct sk_bench_rcu_ops *impl);

/*
 * The key set every adapter works on.  Written by the main thread between
 * runs (thread creation orders it before the adapters' loops), read-only
 * during a run except for the tables themselves, which the adapters keep.
 */
struct sk_bench_hash_set {
	long nkeys; /* a power of two */
	struct hobj *objs;
	struct sk_rhash *sk;   /* peer_scalekit_rhash.c */
	struct cds_lfht *lf;   /* peer_urcu_lfht.c */
};
extern struct sk_bench_hash_set sk_bench_hash_w;

/* Lookup threads take seeds 1, 2, ... in each run: every run, same keys. */
extern __thread uint64_t sk_bench_hash_rng;
void sk_bench_hash_seed_thread(void);
void sk_bench_hash_seed_reset(void);

/*
 * SK_BENCH_HASH_LOOKUPS(n, key, lookup) - the read_section of a table
 * adapter: n lookups of keys of sk_bench_hash_w drawn from the thread's
 * sk_bench_hash_rng; lookup is a statement (one read section) that looks
 * up the uint64_t key and uses what it finds.  Inline, as the adapters'
 * loops must cost the same but for the table.
 */
#define SK_BENCH_HASH_LOOKUPS(n, key, lookup)                            \
	do {                                                             \
		uint64_t sk_mask_ = (uint64_t)sk_bench_hash_w.nkeys - 1; \
		uint64_t sk_s_ = sk_bench_hash_rng;                      \
		long sk_i_;                                              \
		for (sk_i_ = 0; sk_i_ < (n); sk_i_++) {                  \
			uint64_t key = sk_bench_hash_key(                \
				sk_bench_hash_rand(&sk_s_) & sk_mask_);  \
			lookup;                                          \
		}                                                        \
		sk_bench_hash_rng = sk_s_;                               \
	} while (0)

__attribute__((noreturn)) void sk_bench_hash_die(const char *what);

/*
 * nkeys objects (keys 0..nkeys-1), and the table of only (NULL: of every
 * table built in) with buckets buckets; insert: every object inserted.
 * Returns 0 or -1 after a message.
 */
int sk_bench_hash_build(long nkeys, unsigned long buckets, int insert,
			const struct sk_bench_hash_ops *only);
void sk_bench_hash_free(void);

/* Median of n values (sorts them); NAN when n is 0. */
double sk_bench_hash_median(double *v, int n);

#endif /* SK_BENCH_HASH_H */
