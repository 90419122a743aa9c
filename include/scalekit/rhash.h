/* SPDX-License-Identifier: MIT */
/*
 * scalekit/rhash.h - a resizable hash table for RCU readers.
 *
 * Intrusive: embed a struct sk_rhash_node in your object.  Lookups run
 * inside sk_rcu_read_lock()/unlock(), are wait-free and store nothing to
 * shared memory; they never block or retry, also while the table resizes.
 * Inserts are lock-free (a compare-and-swap onto the bucket's head); the
 * other updates take per-bucket locks, so updates of different buckets
 * run in parallel.  A resize publishes a future bucket array and migrates the
 * old buckets into it one at a time, each under its own lock, while
 * updates go on (new objects go to the future array; lookups that miss in
 * the old array look in the future one); it holds no lock while it waits
 * for its two grace periods.  Automatic resizing runs in the background,
 * on the library's callback worker.  Updates may be made inside read
 * sections, also while a resize runs.
 *
 * Reclamation: a removed object may be freed only after a grace period
 * (sk_synchronize_rcu(), sk_call_rcu(), SK_FREE_RCU()).
 * See docs/data-structures.md.
 */
#ifndef SCALEKIT_RHASH_H
#define SCALEKIT_RHASH_H

#include <stddef.h>
#include <stdint.h>

#include "scalekit/rcu.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Link of an object in the table.  Private fields (the inline
 * sk_rhash_lookup() reads them: ABI); they need no initialisation before
 * the first insert.
 */
struct sk_rhash_node {
	struct sk_rhash_node *next; /* private, ABI: chain link (RCU) */
	unsigned long hash;	    /* private, ABI: full hash of the key
				       (also the insert's check for a node
				       in the table already) */
};

/*
 * Parameters.  Start from SK_RHASH_PARAMS_DEFAULT and set at least
 * head_offset and key_offset, and key_len or hashfn + cmpfn.
 */
struct sk_rhash_params {
	size_t head_offset; /* offset of struct sk_rhash_node in the object */
	size_t key_offset;  /* offset of the key in the object */
	size_t key_len;	    /* fixed key size in bytes; 0: variable keys */
	/* Hash of a key (key_len is params.key_len); NULL: sk_rhash_hash(). */
	unsigned long (*hashfn)(const void *key, size_t key_len,
				unsigned long seed);
	/* 0 when obj's key equals key; NULL: memcmp of key_len bytes. */
	int (*cmpfn)(const void *key, const void *obj);
	unsigned long seed;	    /* hash seed */
	unsigned long initial_buckets; /* power of two, >= 1 (not checked
					  against min and max) */
	unsigned long min_buckets;     /* automatic shrink stops here
					  (0: 1) */
	unsigned long max_buckets;     /* automatic grow stops here
					  (0: 1UL << 30) */
	/* grow when count > buckets * pct/100 (0: the default, 75: a table
	   runs at 0.375 to 0.75 keys per bucket; see docs/data-structures.md) */
	unsigned int grow_above_pct;
	unsigned int shrink_below_pct; /* shrink when count < buckets * pct/100
					  (0: never) */
	int automatic_resize;	       /* nonzero: resize on load factor */
	void *(*alloc)(size_t size);   /* NULL: malloc (tests inject failures) */
	void (*free)(void *p);	       /* NULL: free */
};

#define SK_RHASH_PARAMS_DEFAULT                                            \
	{                                                                  \
		.initial_buckets = 64, .min_buckets = 64,                  \
		.max_buckets = 1UL << 30, .grow_above_pct = 75,            \
		.shrink_below_pct = 25, .automatic_resize = 1,             \
	}

struct sk_rhash_table;

/* A table (sk_rhash_create()).  Opaque: all its fields are private. */
struct sk_rhash;

/*
 * sk_rhash_hash() - the default hash (64-bit mixing of key_len bytes).
 * Context: any.  Pure function.
 */
SK_API unsigned long sk_rhash_hash(const void *key, size_t key_len,
				   unsigned long seed);

/*
 * sk_rhash_create() - allocate an empty table (through params->alloc).
 * Context: any thread; may allocate; never blocks otherwise.
 * Returns: the table; NULL with errno EINVAL for a NULL params,
 * initial_buckets not a power of two (or 0), min or max not a power of
 * two (0 takes the default: 1 and 1UL << 30), min > max, a variable-key
 * table (key_len 0) without hashfn or cmpfn; NULL with errno ENOMEM (also
 * for an initial_buckets too large to allocate).
 */
SK_API struct sk_rhash *sk_rhash_create(const struct sk_rhash_params *params);

/*
 * sk_rhash_destroy() - free the table and its memory; if free_obj is not
 * NULL it is called on every object still in the table.  NULL: nothing.
 * Context: no reader or updater may use the table any more (wait for a
 * grace period after the last lookup).  Waits for the table's background
 * resizing (sk_rhash_barrier()) when some is queued: then outside any
 * read section and outside RCU callbacks.
 */
SK_API void sk_rhash_destroy(struct sk_rhash *ht,
			     void (*free_obj)(void *obj, void *arg),
			     void *arg);

/*
 * sk_rhash_lookup() - the object whose key equals key, or NULL.
 * Context: inside an RCU read section (the object stays valid until it
 * ends).  Wait-free; no stores to shared memory; never blocks or retries,
 * also during a resize.
 * Ordering: the object is seen as initialized before its insertion
 * (publication pairs with the insert's release).
 *
 * Inline for tables of 8-byte keys with the default hash and no cmpfn
 * (the hash, the chain walk and the key compares in the caller); other
 * tables call the library.  The library also exports sk_rhash_lookup()
 * as a function (for other languages, and for programs built before it
 * was inline); define SK_RHASH_NO_INLINE before including this header to
 * call it and freeze nothing of the table's layout into the program.
 */
SK_API void *sk_rhash_lookup(struct sk_rhash *ht, const void *key);

/*
 * sk_rhash_lookup_u64() - sk_rhash_lookup() of the 8-byte key whose value
 * is key (tables created with key_len 8), or NULL; NULL with errno EINVAL
 * on a table of another key_len.
 * Context, ordering: as sk_rhash_lookup().
 *
 * The key passed by value: a key computed in a register stays there
 * (sk_rhash_lookup() takes its address, which keeps it in memory across
 * sk_rcu_read_lock()'s compiler barrier).  Inline as sk_rhash_lookup(),
 * and a table of the inline kind costs no test of the table's kind
 * before a hit: tables of other kinds make the inline walk end at once
 * in a miss, which then asks the library.  Exported as a function too;
 * SK_RHASH_NO_INLINE applies.
 */
SK_API void *sk_rhash_lookup_u64(struct sk_rhash *ht, uint64_t key);

/*
 * ABI of the inline lookups (not for direct use).  A table (struct
 * sk_rhash) begins with struct sk_rhash__head, its bucket arrays with
 * struct sk_rhash__array; the library asserts both layouts at build
 * time (src/internal/rhash.h).  The layouts, the mode value, the empty
 * array of tables of other kinds and the hash of 8-byte keys are version
 * 1 of this ABI: a program built with the inline lookups refers to the
 * symbol sk_rhash__abi_v1 (below), so that it fails to load, with an
 * undefined symbol, against a library that has changed any of them
 * (docs/data-structures.md, "Inline lookups").
 */
struct sk_rhash__array {
	unsigned long mask;		/* ABI: buckets - 1 */
	struct sk_rhash__array *future; /* ABI, RCU: the array a resize
					   fills, or NULL */
	struct sk_rhash_node **heads;	/* ABI: chain heads (RCU), mask + 1 */
};

struct sk_rhash__head {
	/*
	 * ABI, RCU: the array the inline walk starts in: the table's
	 * current array where mode is SK_RHASH__MODE_U64, else an empty
	 * array (no chains, no future), where every walk misses at once.
	 */
	struct sk_rhash__array *lookup_tbl;
	unsigned int mode;	     /* ABI: SK_RHASH__MODE_U64: inline path */
	uint64_t seed_k[2];	     /* ABI: seed words of the 8-byte hash */
	long key_from_node;	     /* ABI: key_offset - head_offset */
	long head_offset;	     /* ABI: params.head_offset */
};

#define SK_RHASH__MODE_U64 1

/* Slow paths of the inline lookups: every table (not for direct use). */
SK_API SK__NOTHROW void *sk_rhash__lookup_slow(struct sk_rhash *ht,
					       const void *key);
SK_API SK__NOTHROW void *sk_rhash__lookup_u64_slow(struct sk_rhash *ht,
						   uint64_t key);

/* The 128-bit product a * b from 32-bit products, halves folded by xor. */
static inline uint64_t sk_rhash__mul_fold_narrow(uint64_t a, uint64_t b)
{
	uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
	uint64_t lo = (mid << 32) | (uint32_t)p00;
	uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);

	return lo ^ hi;
}

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 sk_rhash__u128;
#endif

/* The 128-bit product a * b, its halves folded by xor (ABI: the hash). */
static inline uint64_t sk_rhash__mul_fold(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
	sk_rhash__u128 m = (sk_rhash__u128)a * b;

	return (uint64_t)m ^ (uint64_t)(m >> 64);
#else
	return sk_rhash__mul_fold_narrow(a, b);
#endif
}

#ifndef SK_RHASH_NO_INLINE
SK_API extern const int sk_rhash__abi __asm__("sk_rhash__abi_v1");
/*
 * A load-time reference to the ABI's version (a data relocation: resolved
 * when the program loads, where function calls may bind lazily).
 */
static const int *const sk_rhash__abi_ref __attribute__((used)) =
	&sk_rhash__abi;

static inline uint64_t sk_rhash__load_u64(const void *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The walk for the 8-byte key k (mode SK_RHASH__MODE_U64): the library's
 * lookup and the inline ones share it.  It reads the fields marked ABI
 * above: the table's first line, the array's first line, the bucket's
 * line and the chain's nodes.
 */
static inline void *sk_rhash__walk_u64(const struct sk_rhash__head *hd,
				       uint64_t k)
{
	struct sk_rhash__array *t;
	struct sk_rhash_node *n;
	/* The key's offset from the node: one address add per compare. */
	long kn = hd->key_from_node;
	unsigned long h = (unsigned long)sk_rhash__mul_fold(k ^ hd->seed_k[0],
							    k ^ hd->seed_k[1]);

	t = sk_rcu_dereference(hd->lookup_tbl);
	do {
		for (n = sk_rcu_dereference(t->heads[h & t->mask]); n;
		     n = sk_rcu_dereference(n->next)) {
			if (n->hash == h &&
			    sk_rhash__load_u64((const char *)n + kn) == k)
				return (char *)n - hd->head_offset;
		}
		/*
		 * RH-L1: the chain's loads (one may have read the NULL that
		 * RH-M3 wrote) before the load of t->future and its heads;
		 * pairs with the release of RH-M3 in the resize
		 * (src/rhash_resize.c), which moves a run into the future
		 * array (RH-M2) before it cuts it off the old chain.  A
		 * compiler barrier on x86.
		 */
		sk_smp_rmb();
		t = sk_rcu_dereference(t->future);
	} while (SK_UNLIKELY(t != NULL));
	return NULL;
}

/*
 * The inline sk_rhash_lookup(): the kind first (the key may be shorter
 * than 8 bytes), then the walk in the caller.
 */
static inline void *sk_rhash__lookup_inline(struct sk_rhash *ht,
					    const void *key)
{
	const struct sk_rhash__head *hd = (const struct sk_rhash__head *)ht;
	const void *k8 = key;

	if (SK_UNLIKELY(hd->mode != SK_RHASH__MODE_U64))
		return sk_rhash__lookup_slow(ht, key);
	/*
	 * The table's kind says the key has 8 bytes; hide the key's object
	 * from the compiler, whose bounds warnings would otherwise flag
	 * this load for shorter keys (the branch above never takes it then).
	 */
	__asm__("" : "+r"(k8));
	return sk_rhash__walk_u64(hd, sk_rhash__load_u64(k8));
}

/*
 * The inline sk_rhash_lookup_u64(): the walk first; the kind only after
 * a miss (a table of another kind walks an empty array).
 */
static inline void *sk_rhash__lookup_u64_inline(struct sk_rhash *ht,
						uint64_t key)
{
	const struct sk_rhash__head *hd = (const struct sk_rhash__head *)ht;
	void *o = sk_rhash__walk_u64(hd, key);

	if (SK_LIKELY(o != NULL) || SK_LIKELY(hd->mode == SK_RHASH__MODE_U64))
		return o;
	return sk_rhash__lookup_u64_slow(ht, key);
}

#define sk_rhash_lookup(ht, key) sk_rhash__lookup_inline((ht), (key))
#define sk_rhash_lookup_u64(ht, key) \
	sk_rhash__lookup_u64_inline((ht), (key))
#endif /* SK_RHASH_NO_INLINE */

/*
 * sk_rhash_insert() - add the object of node (duplicates allowed).
 * sk_rhash_insert_unique() - add it unless an object with the same key is
 * present.
 * Context: any thread (registered with RCU on its first update, as by
 * sk_rcu_read_lock()), inside or outside a read section, also while a
 * resize runs.  sk_rhash_insert() takes no lock: it pushes the node onto
 * its bucket's head with a compare-and-swap (retried only when another
 * update changed that head meanwhile), so it never waits for another
 * thread.  sk_rhash_insert_unique() takes the bucket's lock (a bit; a
 * waiter spins, then sleeps briefly), which is held only for short
 * stretches (by updates of that bucket and by a resize migrating it),
 * never across a grace period.
 * When automatic resizing is on and the update's count crosses a load
 * factor limit, it queues a background resize (sk_call_rcu()) and returns
 * at once: the table may run above its load factor until that resize is
 * done.
 * Ordering: the object's initialization happens before lookups find it.
 * Returns: 0; -EINVAL (NULL); -EBUSY (node is in this table already:
 * nothing is changed, nothing is printed); -EEXIST (unique, key present:
 * not added); -ENOMEM (the thread's first update could not register it
 * with RCU).  -EBUSY is checked in every build, before -EEXIST: a node
 * in the table caches its key's hash, so the check is one load and one
 * compare, and only a node whose cached hash equals its key's (in the
 * table; removed and inserted again with the same key; a copy of a node
 * in the table; memory recycled from one) has that key's chain walked for
 * it.  node needs no initialisation before its first insert.  A removed
 * node may be inserted again, into this table or another, after a grace
 * period (no reader walks on from it any more).  Not detected: a node
 * that is in another table, or in this one after the program changed
 * its key; two inserts of one node in different threads that the
 * program does not order (a data race) may both pass the check.  Either
 * corrupts a table.
 * A background grow that fails for lack of memory leaves the table as it
 * was and is queued again by a later update; the insert itself succeeds.
 */
SK_API int sk_rhash_insert(struct sk_rhash *ht, struct sk_rhash_node *node);
SK_API int sk_rhash_insert_unique(struct sk_rhash *ht,
				  struct sk_rhash_node *node);

/*
 * sk_rhash_remove() - unlink the object of node.  Readers on it may go on.
 * Context: as sk_rhash_insert(); takes the bucket's lock, as
 * sk_rhash_insert_unique().  Reclamation: free the object only after
 * a grace period.
 * Returns: 0; -EINVAL (NULL); -ENOENT (not in the table); -ENOMEM (as
 * insert).
 */
SK_API int sk_rhash_remove(struct sk_rhash *ht, struct sk_rhash_node *node);

/*
 * sk_rhash_replace() - put new_node's object in old_node's place; both
 * must have equal keys.  Lookups see the old or the new object, never
 * neither.  Context: as sk_rhash_insert(); takes the bucket's lock, as
 * sk_rhash_insert_unique().  Reclamation: free the old object after a
 * grace period.
 * Returns: 0; -EINVAL (NULL or keys differ); -ENOENT (old not present);
 * -EBUSY (new_node is in this table already, also new_node == old_node:
 * nothing is changed; checked as sk_rhash_insert() checks node);
 * -ENOMEM (as insert).
 */
SK_API int sk_rhash_replace(struct sk_rhash *ht, struct sk_rhash_node *old_node,
			    struct sk_rhash_node *new_node);

/*
 * sk_rhash_resize() - resize to nbuckets (a power of two) in one pass, in
 * the caller's thread: publish the future array, wait for a grace period
 * (read sections that began before, and the inserts in them, end),
 * migrate every bucket, publish it as the table, wait for a grace period,
 * free the old array.  Waits for a background resize that runs.
 * Context: outside any read section (waits for grace periods; inside one
 * it prints a message and aborts).  Never blocks lookups; an update waits
 * at most for the migration step of its own bucket.  Twice per resize it
 * waits for the updates that hold a bucket lock at that moment.
 * Returns: 0; -EINVAL (not a power of two, or 0); -ENOMEM (the table is
 * left as it was).
 */
SK_API int sk_rhash_resize(struct sk_rhash *ht, unsigned long nbuckets);

/*
 * sk_rhash_barrier() - wait until the background resizing queued by
 * updates so far is done, including the frees of the bucket arrays it
 * replaced (a resize that finds the load factor moved on meanwhile goes
 * on, and is waited for too).
 * Context: outside any read section and outside RCU callbacks (it calls
 * sk_rcu_barrier()); blocks.
 * Ordering: the background work's writes happen before the return.
 */
SK_API void sk_rhash_barrier(struct sk_rhash *ht);

/*
 * sk_rhash_count() - number of objects; approximate while updates run
 * (batched per-hash-group counters summed without locks), exact when none
 * runs.
 * sk_rhash_buckets() - current number of buckets.
 * Context: any thread, inside or outside a read section.  Never blocks.
 */
SK_API unsigned long sk_rhash_count(struct sk_rhash *ht);
SK_API unsigned long sk_rhash_buckets(struct sk_rhash *ht);

/*
 * Iteration, inside ONE read section for the whole walk:
 *	struct sk_rhash_iter it;
 *	sk_rcu_read_lock();
 *	sk_rhash_iter_start(ht, &it);
 *	while ((obj = sk_rhash_iter_next(&it)) != NULL) ...
 *	sk_rcu_read_unlock();
 * Every object present for the whole walk is returned at least once.
 * Objects inserted or removed during the walk may or may not be returned;
 * an object may be returned twice when a resize runs during the walk (once
 * from the old array, once from the future array it moved to).
 */
struct sk_rhash_iter {
	struct sk_rhash *ht;
	struct sk_rhash_table *t;
	unsigned long bucket;
	struct sk_rhash_node *n;
};

SK_API void sk_rhash_iter_start(struct sk_rhash *ht, struct sk_rhash_iter *it);
SK_API void *sk_rhash_iter_next(struct sk_rhash_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_RHASH_H */
