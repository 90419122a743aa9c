/* SPDX-License-Identifier: MIT */
/*
 * Relativistic resizable hash table (Triplett, McKenney, Walpole, USENIX
 * ATC 2011): creation, lookups and iteration, the module's lowest layer.
 * Resizing and sk_rhash_destroy() (which waits for the background work)
 * are in src/rhash_resize.c, updates in src/rhash_update.c, the shared
 * declarations in src/internal/rhash.h.
 *
 * Chains are NULL-terminated singly linked lists of struct sk_rhash_node;
 * each node caches its full hash, so a lookup can walk a chain that holds
 * nodes of other buckets (as chains do during a resize) and skip them.
 *
 * Rules (Triplett; see include/scalekit/list.h for the tags):
 *  [pub]  reader reads pointer then object, writer writes object then
 *         pointer: publication ordering (release) suffices;
 *  [gp]   reader reads in the order the writer writes: a grace period
 *         must separate the two writes;
 *  [one]  a single write, both states valid for readers;
 *  [priv] memory no reader can reach.
 *
 * Resizing (any power-of-two ratio, grow or shrink, one algorithm): a
 * resize allocates the future array f (all heads NULL) and publishes it in
 * the current array t (t->future = f) [pub].  From then on updates go to
 * f, and lookups that miss in t go on to f (RH-L1).  A grace period
 * (RH-G2) ends the inserts that loaded t before f was there.  Then the
 * old buckets are migrated one at a time, each under its own bucket
 * lock, in steps: a
 * step walks the old chain once and moves up to RHASH_RING tail runs, then
 * drops the lock (so no lock is held for more than one walk of one chain,
 * however long the chain).  A tail run of nodes that all belong to the
 * same bucket d of f is moved at once, in three writes (RH-M1 to RH-M3).
 * Every node is in exactly one chain at every moment (as updaters see it
 * under the bucket lock), so an update finds its node in t or f.  The
 * old chain is cut behind each run but its head (RH-M3), so a migrated
 * old bucket's head is never written: it goes on pointing at the first
 * node of the bucket's last run, now in f, and a lookup of a moved key
 * mostly finds it through the old head, lines the resizer did not write
 * (Triplett's shared chains).  Updaters tell a migrated old bucket by its
 * bit in t->migrated.  Such a head points at a node of its own old
 * bucket or is NULL: a remove of that node moves it on to the next node
 * of the bucket, so the remove of any node it points at moves it.  When
 * every bucket is migrated, ht->tbl = f is published [pub]; a grace
 * period later no reader uses t, which is freed [gp] (t->future stays f
 * for the readers that still walk t until then).  No lock is held
 * across that grace period.
 *
 * Inserts (sk_rhash_insert()) take no lock: inside a read section they
 * push the node onto its bucket's head in the newest array (t, or f
 * during a resize) with a compare-and-swap (RH-I1).  An insert that read
 * t before f was published may still push onto t's head until RH-G2 ends:
 * the migrator, which starts after it, then moves that node too.  So
 * every writer of a head that inserts push onto uses a CAS (the
 * migrator's RH-M2, and unlinks at a head: relink()), and a node's next
 * changes only under its bucket lock.
 *
 * The other updaters (insert_unique, remove, replace) and the migrator
 * hold the lock of their bucket: one bit per bucket of the LOCK ARRAY,
 * the smaller of t and f (t without a resize), RH-B1.  Bit h & l->mask
 * guards the chains of hash h in t and in f: an old bucket and the new
 * buckets its nodes go to share it.  A migrator preempted while it holds
 * a bit stalls only the updates of that one bucket.
 *
 * Two publications change the lock array: f of a shrink (f is smaller),
 * and ht->tbl = f at the end of a grow (t was smaller).  Neither takes a
 * lock (RH-D1): the resize sets to->prev_lock = from, publishes, and
 * drains the old array's bits (waits until it has seen each one clear);
 * updaters that find prev_lock set take the old bit first, then the new
 * one, so they exclude the updaters still working under the old mapping;
 * then prev_lock is cleared.  An updater re-reads the arrays after it
 * took its bit and retries when the lock array changed meanwhile
 * (lock_bucket()).  So holding the bit pins the lock array, and ht->tbl
 * and t->future as far as the chains of h go.  Without a bit an updater
 * reads the arrays only inside a read section (lock_bucket()), because a
 * resize frees a replaced array one grace period after it unpublished
 * it, and a grace period waits only for read sections.
 *
 * No bucket lock is ever held while waiting for anything but other bucket
 * locks, so an updater inside a read section may block on one: updates
 * work inside read sections, also during a resize.
 *
 * Automatic resizing runs in the background: the update whose flushed
 * count crosses a load-factor limit queues ht->work with sk_call_rcu()
 * and returns.  The callback (on the library's callback worker) takes
 * resize_lock, publishes f, migrates for about RHASH_WORK_NS, re-queues
 * itself until every bucket is migrated, publishes f as ht->tbl, frees t
 * through sk_call_rcu() and releases resize_lock.
 *
 * The pairing labels RH-* of the module: their legend is in
 * src/internal/rhash.h, the table in docs/data-structures.md.
 */
#define _GNU_SOURCE
#include "internal/rhash.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/util.h"
#include "scalekit/list.h" /* SK__LIST_PUBLISH */

unsigned long sk_rhash_hash(const void *key, size_t len, unsigned long seed)
{
	return sk__rhash_hash_bytes(key, len, seed);
}

/* ---- lifecycle ---------------------------------------------------------- */

/*
 * The array that the inline walks of tables of other kinds than
 * RHASH_MODE_U64 start in (their lookup_tbl): one empty chain, no future
 * array, so they miss at once and ask the library.  Never written.
 */
static struct sk_rhash_node *no_inline_head;
struct sk_rhash_table sk__rhash_no_inline_array = {
	.mask = 0,
	.heads = &no_inline_head,
	.size = 1,
};

struct sk_rhash_table *sk__rhash_table_alloc(struct sk_rhash *ht,
					     unsigned long size)
{
	struct sk_rhash_table *t;
	unsigned long words = sk__rhash_lock_words(size);
	size_t bytes;

	/* The heads, the lock bits (RH-B1), the migrated bits: all zeroed. */
	if (size > (SIZE_MAX - sizeof(*t)) / (sizeof(t->buckets[0]) + 1))
		return NULL;
	bytes = sizeof(*t) + size * sizeof(t->buckets[0]) +
		2 * words * sizeof(unsigned long);
	t = ht->p.alloc(bytes);
	if (!t)
		return NULL;
	memset(t, 0, bytes);
	t->size = size;
	t->mask = size - 1;
	t->heads = t->buckets;
	t->locks = (unsigned long *)&t->buckets[size];
	t->migrated = t->locks + words;
	t->ht = ht;
	return t;
}

/* What the 8-byte-key lookup reads of the table: its first cache line. */
_Static_assert(offsetof(struct sk_rhash, head_offset) + sizeof(long) <=
		       SK_CACHELINE,
	       "the lookup's fields of struct sk_rhash on one cache line");

/* Validate *params into *p and fill in the defaults.  0 or -EINVAL. */
static int params_check(const struct sk_rhash_params *params,
			struct sk_rhash_params *p)
{
	if (!params)
		return -EINVAL;
	*p = *params;
	if (!sk__rhash_is_pow2(p->initial_buckets))
		return -EINVAL;
	if (!p->key_len && (!p->hashfn || !p->cmpfn))
		return -EINVAL;
	if (!p->min_buckets)
		p->min_buckets = 1;
	if (!p->max_buckets)
		p->max_buckets = 1UL << 30;
	if (!sk__rhash_is_pow2(p->min_buckets) || !sk__rhash_is_pow2(p->max_buckets) ||
	    p->min_buckets > p->max_buckets)
		return -EINVAL;
	if (!p->hashfn)
		p->hashfn = sk_rhash_hash;
	if (!p->alloc)
		p->alloc = malloc;
	if (!p->free)
		p->free = free;
	if (!p->grow_above_pct)
		p->grow_above_pct = 75; /* SK_RHASH_PARAMS_DEFAULT's */
	return 0;
}

/*
 * The table and its stripes in one allocation of p->alloc, cache-line
 * aligned (p->alloc promises only malloc's alignment).
 */
static struct sk_rhash *table_struct_alloc(const struct sk_rhash_params *p)
{
	size_t bytes = sizeof(struct sk_rhash) +
		       RHASH_MAX_STRIPES * sizeof(struct sk_rhash_stripe);
	void *mem = p->alloc(bytes + SK_CACHELINE);
	struct sk_rhash *ht;

	if (!mem)
		return NULL;
	ht = (struct sk_rhash *)(((uintptr_t)mem + SK_CACHELINE - 1) &
				 ~(uintptr_t)(SK_CACHELINE - 1));
	memset(ht, 0, bytes);
	ht->mem = mem;
	ht->p = *p;
	ht->nstripes = RHASH_MAX_STRIPES;
	ht->stripes = (struct sk_rhash_stripe *)(ht + 1);
	return ht;
}

struct sk_rhash *sk_rhash_create(const struct sk_rhash_params *params)
{
	struct sk_rhash_params p;
	struct sk_rhash *ht;
	int err = params_check(params, &p);

	if (err) {
		errno = -err;
		return NULL;
	}
	ht = table_struct_alloc(&p);
	if (!ht) {
		errno = ENOMEM;
		return NULL;
	}
	if (p.key_len == 8 && p.hashfn == sk_rhash_hash && !p.cmpfn)
		ht->mode = RHASH_MODE_U64;
	sk__rhash_seed_k(p.seed, ht->seed_k);
	ht->key_from_node = (long)p.key_offset - (long)p.head_offset;
	ht->head_offset = (long)p.head_offset;
	ht->tbl = sk__rhash_table_alloc(ht, p.initial_buckets);
	if (!ht->tbl) {
		p.free(ht->mem);
		errno = ENOMEM;
		return NULL;
	}
	/* Before the table is returned: no reader yet. */
	ht->lookup_tbl = ht->mode == RHASH_MODE_U64 ? ht->tbl
						    : &sk__rhash_no_inline_array;
	return ht;
}

/* ---- lookups ---------------------------------------------------------------- */

/*
 * No prefetch of f's bucket before the walk of t's chain: during a
 * migration that line is one the resizer is about to write (RH-M2), and
 * a copy fetched early is invalidated by that write, so the lookups that
 * do need it took a second coherence miss (docs/data-structures.md,
 * "What a lookup pays during a resize").
 */

/* Any key: hashfn, cmpfn or key_len as given.  Out of line: see below. */
static __attribute__((noinline)) void *lookup_generic(struct sk_rhash *ht,
						      const void *key)
{
	unsigned long h = sk__rhash_hash_key(ht, key);
	struct sk_rhash_table *t = sk_rcu_dereference(ht->tbl);
	struct sk_rhash_node *n;

	do {
		for (n = sk_rcu_dereference(t->buckets[h & t->mask]);
		     sk__rhash_is_node(n); n = sk_rcu_dereference(n->next)) {
			if (n->hash == h &&
			    sk__rhash_key_matches(ht, key, sk__rhash_obj(ht, n)))
				return sk__rhash_obj(ht, n);
		}
		/* RH-L1: as in sk_rhash_lookup(). */
		sk_smp_rmb();
		t = sk_rcu_dereference(t->future);
	} while (SK_UNLIKELY(t != NULL));
	return NULL;
}

/*
 * The fast path of 8-byte keys with the default hash: the header's walk
 * (sk_rhash__walk_u64(), which programs run inline: ABI version 1,
 * below), the hash inlined, keys compared as words, no indirect call and,
 * with the generic path out of line, no registers to save.
 */
static inline void *lookup(struct sk_rhash *ht, const void *key)
{
	if (SK_UNLIKELY(ht->mode != RHASH_MODE_U64))
		return lookup_generic(ht, key);
	return sk_rhash__walk_u64((const struct sk_rhash__head *)ht,
				  sk__rhash_load_u64(key));
}

/* The exported functions (the header's macros call the inline ones). */
void *(sk_rhash_lookup)(struct sk_rhash *ht, const void *key)
{
	return lookup(ht, key);
}

void *sk_rhash__lookup_slow(struct sk_rhash *ht, const void *key)
{
	return lookup(ht, key);
}

void *sk_rhash__lookup_u64_slow(struct sk_rhash *ht, uint64_t key)
{
	if (ht->p.key_len != sizeof(key)) {
		errno = EINVAL;
		return NULL;
	}
	return lookup(ht, &key);
}

void *(sk_rhash_lookup_u64)(struct sk_rhash *ht, uint64_t key)
{
	return sk_rhash__lookup_u64_slow(ht, key);
}

/*
 * Version 1 of the inline lookups' ABI (include/scalekit/rhash.h): the
 * layouts of struct sk_rhash__head and sk_rhash__array, RHASH_MODE_U64,
 * the empty array of other kinds (sk__rhash_no_inline_array) and the hash of
 * sk_rhash__walk_u64() (sk__rhash_hash_u64()).  Change any of them and
 * this symbol's name.
 */
const int sk_rhash__abi = 1;

void sk_rhash_iter_start(struct sk_rhash *ht, struct sk_rhash_iter *it)
{
	it->ht = ht;
	it->t = sk_rcu_dereference(ht->tbl);
	it->bucket = 0;
	it->n = NULL;
}

void *sk_rhash_iter_next(struct sk_rhash_iter *it)
{
	struct sk_rhash_table *t = it->t;

	for (;;) {
		if (it->n) {
			it->n = sk_rcu_dereference(it->n->next);
		} else if (it->bucket < t->size) {
			it->n = sk_rcu_dereference(t->buckets[it->bucket++]);
			if (!sk__rhash_is_node(it->n))
				it->n = NULL; /* empty */
		} else {
			/* RH-L1: as in sk_rhash_lookup(): runs moved away
			 * from buckets already walked are in the future array. */
			sk_smp_rmb();
			t = sk_rcu_dereference(t->future);
			if (!t)
				return NULL;
			it->t = t;
			it->bucket = 0;
			continue;
		}
		/*
		 * During a resize a chain holds nodes of other buckets;
		 * return only the nodes of this bucket, so that a walk of an
		 * unchanged table returns each object once.
		 */
		if (it->n && (it->n->hash & t->mask) == it->bucket - 1)
			return sk__rhash_obj(it->ht, it->n);
	}
}

unsigned long sk_rhash_count(struct sk_rhash *ht)
{
	long sum = sk_atomic_load_relaxed(&ht->count);
	unsigned long i;

	for (i = 0; i < ht->nstripes; i++)
		sum += sk_atomic_load_relaxed(&ht->stripes[i].delta);
	/* Unsynchronized sums may dip below zero while updates run. */
	return sum > 0 ? (unsigned long)sum : 0;
}

unsigned long sk_rhash_buckets(struct sk_rhash *ht)
{
	unsigned long size;

	/* A resize may free the array once no read section holds it. */
	sk_rcu_read_lock();
	size = sk_rcu_dereference(ht->tbl)->size;
	sk_rcu_read_unlock();
	return size;
}

