/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the resizable hash table, shared by
 * src/rhash.c (lifecycle, lookups, iteration), src/rhash_update.c
 * (insert, remove, replace) and src/rhash_resize.c (resizing, migration,
 * background work).  The algorithm and the Triplett rules are in
 * src/rhash.c.
 *
 * Barrier pairs, the legend of the RH-* labels (one legend for
 * src/rhash*.c):
 *  RH-P1  publication (release) of a node, of t->future = f or of
 *         ht->tbl = f; pairs with the readers' dependency loads
 *         (sk_rcu_dereference()) and, for the arrays, with RH-D1.
 *  RH-B1  a bucket's lock bit: the seq_cst fetch_or that takes it is an
 *         acquire of the previous holder's chain writes (its fetch_and
 *         release).
 *  RH-D1  a change of the lock array: the resize's store of
 *         to->prev_lock, its publication, a full fence, then its loads of
 *         the old bits (drain()), then the release store of prev_lock =
 *         NULL; against the updater's acquire load of prev_lock, its
 *         seq_cst fetch_or of the bit, then its seq_cst re-read of
 *         ht->tbl and t->future: either the updater sees the new mapping
 *         (and retries), or the resize sees its bit and waits for it.
 *  RH-I1  an insert's release CAS of the bucket head (node's fields,
 *         then the pointer: [pub], pairs with the readers' dependency
 *         loads); its acquire load of the head (or failed CAS) follows
 *         the chain it will link to.  Inserts push onto the newest
 *         array only: RH-G2 ends those that loaded t before t->future.
 *  RH-M1  [one] last->next = f's head d: a reader standing in a moved run
 *         walks on into f's chain d (whose nodes it skips by hash).
 *         Made again if RH-M2's CAS fails (the newer head's chain holds
 *         the older one: both values are valid).
 *  RH-M2  [pub] CAS of f's head d to first: the run is now also f's
 *         chain d.  A CAS: lock-free inserts push onto that head.
 *  RH-M3  [one] the old link to first = NULL, a release: RH-M2 (and the
 *         publication of f) before it; pairs with RH-L1.  A lookup reads
 *         the old chain, then t->future and f's heads; the writer writes
 *         f's head before the old link: opposite order, no grace period.
 *         Never at an old bucket's head: the run at the head is moved by
 *         RH-M1 and RH-M2 alone, and the old head goes on pointing at
 *         its first node, now in f (Triplett: a chain shared by an old
 *         and a new bucket; lookups reach the moved keys through lines
 *         the resizer does not write).  The bucket's bit in t->migrated
 *         (set under its lock, RH-B1) tells updaters the old head is
 *         stale: they look in f only, and a remove or replace of the node
 *         the stale head points at moves that head on too, to the next
 *         node of the same old bucket (or NULL): a stale head of old
 *         bucket i never points at another old bucket's node, whose
 *         remove would not move it (unlink_stale_head()).
 *  RH-L1  the lookup's read barrier between a chain's loads and the load
 *         of t->future and f's heads; pairs with RH-M3.  The insert's
 *         check for a node already in the table walks the same way and
 *         places it too (node_linked() in src/rhash_update.c).
 *  RH-G1  the grace period between unpublishing an array (ht->tbl = f)
 *         and freeing it [gp] (synchronous, or sk_call_rcu()).
 *  RH-G2  the grace period between publishing t->future and the first
 *         migration step [gp] (synchronous, or the sk_call_rcu() that
 *         re-queues the background work): an insert loads t and then
 *         t->future inside one read section, and pushes onto t only if
 *         it saw none; after RH-G2 every such insert has ended, so no
 *         node is ever pushed onto a migrated old bucket (whose head
 *         still points into f, RH-M3).
 *  RH-R1  resize_lock (a futex word no thread owns): the seq_cst RMW
 *         that takes it is an acquire of the previous holder's resize,
 *         the exchange that frees it a release.
 *  RH-W1  release of work_queued = 0 / the queueing cmpxchg: the previous
 *         background work's writes before the next queueing.
 *  RH-W2  releases of ht->pending (work done, array freed); pair with the
 *         acquire in sk_rhash_barrier().
 *  RH-W3  an update's store of ht->recheck before its load of
 *         ht->explicit_resizes, and sk_rhash_resize()'s decrement of
 *         explicit_resizes before its exchange of recheck (seq_cst
 *         both): one of the two sees the other, so a load-factor check
 *         left to a running explicit resize is never lost.
 * Litmus tests (litmus/, see docs/litmus.md): RH-P1, RH-I1, RH-M2 -
 * rcu-mp-publish.litmus; RH-M3/RH-L1 - MP+wmb+rmb.litmus (the release
 * stands for the write barrier); RH-B1, RH-R1, RH-W1, RH-W2 -
 * MP+rel+acq.litmus; RH-D1, RH-W3 - SB+mbs.litmus; RH-G1, RH-G2 -
 * rcu-deferred-free.litmus.
 */
#ifndef SCALEKIT_INTERNAL_RHASH_H
#define SCALEKIT_INTERNAL_RHASH_H

/* Before scalekit/list.h: its trace points (the testing build). */
#include "testing.h"

#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <string.h>

#include "scalekit/list.h" /* checker hooks, SK__LIST_PUBLISH */
#include "scalekit/rhash.h"

#define RHASH_MAX_STRIPES 256UL /* count stripes (no locks) */

/*
 * Counting.  A stripe keeps the count changes of its updates in delta and
 * adds them to ht->count once they reach a batch of
 * size >> RHASH_BATCH_SHIFT / nstripes (at least 1), then checks the load
 * factor.  The unflushed deltas of all stripes stay below 1/16 of the
 * bucket count: automatic resizes come at most that late, and the common
 * case costs an add and a compare on the stripe's own cache line.
 */
#define RHASH_BATCH_SHIFT 4

/* Lookup fast paths (ht->mode). */
#define RHASH_MODE_GENERIC 0 /* hashfn / cmpfn / key_len as given */
#define RHASH_MODE_U64	   SK_RHASH__MODE_U64 /* 8-byte keys, sk_rhash_hash(),
						 no cmpfn: the inline path */

#ifdef SK_TESTING
/* A broken twin (SK__RHASH_BROKEN_*, internal/testing.h) is on. */
#define RHASH_BROKEN(k) (sk__rhash_test_broken == (k))
#else
#define RHASH_BROKEN(k) 0
#endif

struct sk_rhash_table {
	/* First: struct sk_rhash__array, the inline lookup's (ABI). */
	unsigned long mask;		 /* size - 1 */
	struct sk_rhash_table *future;	 /* RCU: array a resize fills, or NULL */
	struct sk_rhash_node **heads;	 /* &buckets[0], for the inline lookup */
	unsigned long size;		 /* buckets, a power of two */
	unsigned long *locks;		 /* one lock bit per bucket (RH-B1) */
	unsigned long *migrated;	 /* one bit per bucket: migrated into
					    future (set and read under the
					    bucket's lock, RH-B1; after locks) */
	struct sk_rhash_table *prev_lock; /* RH-D1: while it takes over as the
					     lock array, the previous one */
	struct sk_rhash *ht;		 /* owner (deferred free) */
	struct sk_rcu_head rcu;		 /* deferred free after a resize */
	struct sk_rhash_node *buckets[]; /* chain heads (RCU); then locks,
					    then migrated */
};

/* One cache line per stripe: counts of different stripes share nothing. */
struct sk_rhash_stripe {
	long delta; /* count changes not yet added to ht->count (atomic:
		       every update counts on the stripe of its hash) */
} __attribute__((aligned(SK_CACHELINE)));

/*
 * A table, allocated cache-line aligned by sk_rhash_create() together with
 * its stripes.  Fields written by different threads live on different
 * cache lines: lookups read only the first group.
 */
struct sk_rhash {
	/*
	 * Read-mostly.  Guarded by: set by create; tbl changes only in
	 * resizes.  The 8-byte-key lookup reads lookup_tbl, mode, seed_k,
	 * key_from_node and head_offset: the first cache line; the generic
	 * lookup also p's hashfn, cmpfn and seed, on the next (read-only)
	 * line.
	 */
	/* First: struct sk_rhash__head, the inline lookups' (ABI). */
	/* RCU: tbl where mode is RHASH_MODE_U64 (published after it), else
	   sk__rhash_no_inline_array (an empty array: inline walks miss). */
	struct sk_rhash_table *lookup_tbl;
	unsigned int mode;		 /* lookup fast path chosen by create */
	/* RHASH_MODE_U64: sk__rhash_seed_k() of p.seed, the words
	   sk_rhash_hash() xors into an 8-byte key before it multiplies;
	   p.key_offset - p.head_offset (key from node); p.head_offset. */
	uint64_t seed_k[2];
	long key_from_node;
	long head_offset;
	struct sk_rhash_table *tbl;	 /* RCU-protected bucket array */
	struct sk_rhash_params p;	 /* parameters as validated */
	struct sk_rhash_stripe *stripes; /* per-hash-group counts */
	unsigned long nstripes;		 /* power of two */
	void *mem;			 /* the allocation holding ht */
	/* Written by updaters, one atomic add per batch of a stripe. */
	long count __attribute__((aligned(SK_CACHELINE))); /* flushed part */
	/* Guarded by resize_lock (resizing: also read without it). */
	int resize_lock __attribute__((aligned(SK_CACHELINE))); /* futex:
		one resize at a time; 0 free, 1 held, 2 held and waited for.
		No thread owns it: the background work takes it in one
		callback and releases it in a later one (src/rhash_resize.c) */
	unsigned long resizes;	/* completed resizes (stat) */
	int resizing;		/* stat: 1 a future array is published,
				   2 its migration runs (after RH-G2) */
	/* Background resizing (src/rhash_resize.c). */
	struct sk_rcu_head work; /* queued by an update, re-queues itself */
	unsigned long work_next; /* next old bucket to migrate */
	int work_active;	 /* the work holds resize_lock (a resize runs;
				    relaxed atomic: tests read it) */
	int work_queued;	 /* work queued or running (atomic) */
	long pending;		 /* work + deferred array frees (atomic) */
	int explicit_resizes;	 /* sk_rhash_resize() calls running (atomic) */
	int recheck;		 /* an update left the check to them (atomic) */
};

/* The lookup_tbl of tables of other kinds than RHASH_MODE_U64 (rhash.c). */
extern struct sk_rhash_table sk__rhash_no_inline_array;

/*
 * The inline lookup's view (include/scalekit/rhash.h, ABI version 1):
 * each field it reads at the same offset and of the same size here.
 */
#define RHASH_ABI_SAME(in, pub, f)                                        \
	_Static_assert(offsetof(struct in, f) == offsetof(struct pub, f) && \
			       sizeof(((struct in *)0)->f) ==                 \
				       sizeof(((struct pub *)0)->f),          \
		       "struct " #in "." #f " as in struct " #pub)
RHASH_ABI_SAME(sk_rhash_table, sk_rhash__array, mask);
RHASH_ABI_SAME(sk_rhash_table, sk_rhash__array, future);
RHASH_ABI_SAME(sk_rhash_table, sk_rhash__array, heads);
RHASH_ABI_SAME(sk_rhash, sk_rhash__head, lookup_tbl);
RHASH_ABI_SAME(sk_rhash, sk_rhash__head, mode);
RHASH_ABI_SAME(sk_rhash, sk_rhash__head, seed_k);
RHASH_ABI_SAME(sk_rhash, sk_rhash__head, key_from_node);
RHASH_ABI_SAME(sk_rhash, sk_rhash__head, head_offset);

/* ---- hashing and keys (inline: the lookup and update fast paths) -------- */

/* The two words sk__rhash_mix64() xors into x before it multiplies. */
#define SK__RHASH_K1 0x9fb21c651e98df25ULL
#define SK__RHASH_K2 0xc2b2ae3d27d4eb4fULL

/* The hash's multiply (public: the inline lookup computes it too). */
#define sk__rhash_mul_fold_narrow sk_rhash__mul_fold_narrow
#define sk__rhash_mul_fold	  sk_rhash__mul_fold

/*
 * The mixing step of sk_rhash_hash(): the full 128-bit product of
 * x ^ SK__RHASH_K1 and x ^ SK__RHASH_K2, its two halves folded by xor.
 * The high half depends on every bit of x, so the low bits (the bucket
 * index) do too, and the product of two words that both depend on x
 * spreads structured keys
 * (multiples of 2^20, addresses) where a product with a constant leaves
 * a lattice (tests/test_rhash_hash.c).  Chosen over a two-multiply
 * finalizer for the lookup's sake: 6 instructions on x86-64 instead of
 * 14, and a shorter wait before the bucket's address is known
 * (docs/data-structures.md, "The hash").  Not a bijection: equal hashes
 * of different keys cost a key compare.
 */
static inline uint64_t sk__rhash_mix64(uint64_t x)
{
	return sk__rhash_mul_fold(x ^ SK__RHASH_K1, x ^ SK__RHASH_K2);
}

/* sk_rhash_hash(), inlined where len is a constant. */
static inline unsigned long sk__rhash_hash_bytes(const void *key, size_t len,
						 unsigned long seed)
{
	const unsigned char *p = key;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL), w;

	/*
	 * One word (the lookup fast path): one round of the finalizer mixes
	 * every bit of it into every bit of the hash; a second round, as the
	 * loop below would make, only doubles the lookup's longest chain of
	 * dependent instructions.
	 */
	if (len == 8) {
		memcpy(&w, p, 8);
		return (unsigned long)sk__rhash_mix64(h ^ w);
	}
	while (len >= 8) {
		memcpy(&w, p, 8);
		h = sk__rhash_mix64(h ^ w) + 0x9e3779b97f4a7c15ULL;
		p += 8;
		len -= 8;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = sk__rhash_mix64(h ^ w);
	}
	return (unsigned long)sk__rhash_mix64(h);
}

static inline uint64_t sk__rhash_load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The words sk_rhash_hash() xors into an 8-byte key before it multiplies:
 * its state after the length (seed ^ 8 * golden), xored with SK__RHASH_K1
 * and SK__RHASH_K2.
 */
static inline void sk__rhash_seed_k(unsigned long seed, uint64_t k[2])
{
	uint64_t h = seed ^ (8 * 0x9e3779b97f4a7c15ULL);

	k[0] = h ^ SK__RHASH_K1;
	k[1] = h ^ SK__RHASH_K2;
}

/*
 * sk_rhash_hash() of an 8-byte key already loaded (lookup fast path),
 * from k = sk__rhash_seed_k(seed): sk__rhash_hash_bytes()'s len == 8
 * case with the seed's and the mix's xors folded into two words.
 */
static inline unsigned long sk__rhash_hash_u64(uint64_t w, const uint64_t k[2])
{
	return (unsigned long)sk__rhash_mul_fold(w ^ k[0], w ^ k[1]);
}

static inline void *sk__rhash_obj(struct sk_rhash *ht, struct sk_rhash_node *n)
{
	/* ht->head_offset (every kind of table): the lookups' first line,
	 * not p's. */
	return (char *)n - ht->head_offset;
}

static inline const void *sk__rhash_key(struct sk_rhash *ht, const void *obj)
{
	return (const char *)obj + ht->p.key_offset;
}

static inline unsigned long sk__rhash_hash_key(struct sk_rhash *ht,
					       const void *key)
{
	if (SK_LIKELY(ht->mode == RHASH_MODE_U64))
		return sk__rhash_hash_u64(sk__rhash_load_u64(key), ht->seed_k);
	return ht->p.hashfn(key, ht->p.key_len, ht->p.seed);
}

static inline int sk__rhash_key_matches(struct sk_rhash *ht, const void *key,
					const void *obj)
{
	const void *k = sk__rhash_key(ht, obj);

	if (ht->p.cmpfn)
		return ht->p.cmpfn(key, obj) == 0;
	/*
	 * Keys need no alignment (any key_offset, any searched key's
	 * address): load them with memcpy(), which compiles to one load
	 * each, never through a cast uint32_t / uint64_t pointer (misaligned:
	 * undefined, SIGBUS on strict-alignment CPUs; also an aliasing
	 * violation for keys declared as bytes).
	 */
	switch (ht->p.key_len) {
	case 4: {
		uint32_t a, b;

		memcpy(&a, key, sizeof(a));
		memcpy(&b, k, sizeof(b));
		return a == b;
	}
	case 8:
		return sk__rhash_load_u64(key) == sk__rhash_load_u64(k);
	default:
		return memcmp(key, k, ht->p.key_len) == 0;
	}
}

/* n is a node, not the end of a chain. */
static inline int sk__rhash_is_node(const struct sk_rhash_node *n)
{
	return n != NULL;
}

/*
 * Compare-and-swap the chain link *pp from old to v (RH-I1, RH-M2, and
 * unlinks at a bucket head, which lock-free inserts may change under a
 * bucket lock).  Release on success: v's fields (and the object) before
 * the pointer, as SK__LIST_PUBLISH; acquire on failure, so the caller can
 * follow the value it sees (*old receives it).  Nonzero on success, which
 * the testing build examines like a publication.
 */
static inline int sk__rhash_cas(struct sk_rhash_node **pp,
				struct sk_rhash_node **old,
				struct sk_rhash_node *v)
{
	if (!__atomic_compare_exchange_n(pp, old, v, 0, __ATOMIC_RELEASE,
					 __ATOMIC_ACQUIRE))
		return 0;
	SK__LIST_TRACE(PUBLISH);
	return 1;
}

static inline int sk__rhash_is_pow2(unsigned long x)
{
	return x && !(x & (x - 1));
}

/* ---- bucket locks ------------------------------------------------------ */

/*
 * RH-B1.  Each array carries one lock bit per bucket (t->locks).  The
 * lock of hash h is bit h & l->mask of the LOCK ARRAY l: the smaller of
 * the current array t and its future f (t when there is none).  While a
 * resize runs, an old bucket and the new buckets its nodes go to are
 * guarded by one bit.  Updaters (other than plain inserts) and the
 * migrator hold the bit of their bucket; a migrator preempted while it
 * holds one stalls only the updates of that bucket.
 */
static inline struct sk_rhash_table *sk__rhash_lock_array(struct sk_rhash_table *t,
							  struct sk_rhash_table *f)
{
	return f && f->mask < t->mask ? f : t;
}

#define RHASH_LONG_BITS (sizeof(unsigned long) * CHAR_BIT)
#define RHASH_SPIN 1024 /* sk_cpu_relax()es before a waiter sleeps */

/* Words of lock bits of an array of size buckets. */
static inline unsigned long sk__rhash_lock_words(unsigned long size)
{
	return (size + RHASH_LONG_BITS - 1) / RHASH_LONG_BITS;
}

#define RHASH_NAP_NS 20000L /* a waiter's sleep after the spin */

/*
 * One step of waiting for a bit that another thread holds (i: steps so
 * far): spin first, then sleep briefly (the holder may be preempted).  A
 * sleep rather than sched_yield(): the waiter leaves its CPU to the holder
 * in either case, but a yield that switches counts as an involuntary
 * context switch (getrusage()), which the bench's "ran through" rows take
 * for preemption and leave out, while a sleep counts as voluntary: the
 * wait is charged to the table.
 */
static inline void sk__rhash_bit_wait(unsigned int i)
{
	struct timespec ts = { 0, RHASH_NAP_NS };

	if (i < RHASH_SPIN)
		sk_cpu_relax();
	else
		nanosleep(&ts, NULL);
}

/* The word of l's lock bit of hash h; *m receives the bit. */
static inline unsigned long *sk__rhash_bit_word(struct sk_rhash_table *l,
						unsigned long h,
						unsigned long *m)
{
	unsigned long b = h & l->mask;

	*m = 1UL << (b % RHASH_LONG_BITS);
	return &l->locks[b / RHASH_LONG_BITS];
}

/*
 * Lock the bit of hash h in lock array l.  Holds are short (one update,
 * one migration step) and never wait for anything but other bits.
 * Ordering: the fetch_or is seq_cst, an acquire of what the previous
 * holder wrote (pairs with the release in sk__rhash_bit_unlock()) and the
 * first half of RH-D1 (lock_bucket()'s re-read of the arrays comes after
 * it).
 */
static inline void sk__rhash_bit_lock(struct sk_rhash_table *l, unsigned long h)
{
	unsigned long m, *w = sk__rhash_bit_word(l, h, &m);
	unsigned int i;

	while (__atomic_fetch_or(w, m, __ATOMIC_SEQ_CST) & m)
		for (i = 0; __atomic_load_n(w, __ATOMIC_RELAXED) & m; i++)
			sk__rhash_bit_wait(i);
}

/* Release: the holder's chain writes before the next holder's acquire. */
static inline void sk__rhash_bit_unlock(struct sk_rhash_table *l,
					unsigned long h)
{
	unsigned long m, *w = sk__rhash_bit_word(l, h, &m);

	__atomic_fetch_and(w, ~m, __ATOMIC_RELEASE);
}

/*
 * Old bucket i of t (an array with a future) is migrated: its head, if
 * not NULL, is stale (it points at a node now in the future array, RH-M3).
 * Set by the migrator and read by updaters, both holding the bucket's
 * lock bit: RH-B1 orders them, the atomics are relaxed (other buckets'
 * bits share the word).
 */
static inline int sk__rhash_migrated(const struct sk_rhash_table *t,
				     unsigned long i)
{
	return (sk_atomic_load_relaxed(&t->migrated[i / RHASH_LONG_BITS]) >>
		(i % RHASH_LONG_BITS)) & 1;
}

static inline void sk__rhash_set_migrated(struct sk_rhash_table *t,
					  unsigned long i)
{
	__atomic_fetch_or(&t->migrated[i / RHASH_LONG_BITS],
			  1UL << (i % RHASH_LONG_BITS), __ATOMIC_RELAXED);
}

/* ---- shared functions ------------------------------------------------- */

/* A zeroed bucket array of size buckets (p.alloc), or NULL. */
struct sk_rhash_table *sk__rhash_table_alloc(struct sk_rhash *ht,
					     unsigned long size);

/*
 * Automatic resizing, after an update that flushed its stripe's batch
 * (src/rhash_update.c): size is the bucket count the update counted
 * against, count the flushed total, grow nonzero after an insert.  Called
 * with no lock held, maybe inside a read section.  Queues the background
 * resize; never waits.
 */
void sk__rhash_maybe_resize(struct sk_rhash *ht, unsigned long size,
			    long count, int grow);

#endif /* SCALEKIT_INTERNAL_RHASH_H */
