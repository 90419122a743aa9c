/* SPDX-License-Identifier: MIT */
/*
 * Relativistic resizable hash table (Triplett, McKenney, Walpole, USENIX
 * ATC 2011).
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
 * f, and lookups that miss in t go on to f (L1 below).  Then the old
 * buckets are migrated one at a time, each under its own stripe lock, in
 * steps: a step walks the old chain once and moves up to RHASH_RING tail
 * runs, then drops the lock (so no lock is held for more than one walk of
 * one chain, however long the chain).  A tail run of nodes that all belong
 * to the same bucket d of f is moved at once, in three writes:
 *   M1 [one] last->next = f->buckets[d]: last ended the old chain; a reader
 *            standing in the run now walks on into f's chain d (whose nodes
 *            it skips by hash) instead of stopping;
 *   M2 [pub] f->buckets[d] = first: the run is now also f's chain d;
 *   M3 [one] the old link to first = NULL: the old chain ends before the
 *            run.  A lookup reads the old chain, then t->future and f's
 *            heads; the writer writes f's head (M2) before the old link
 *            (M3): opposite order, so the release of M3 and the lookup's
 *            read barrier L1 suffice, and no grace period is needed.
 * Every node is in exactly one chain at every moment (as updaters see it
 * under the stripe lock), so an update finds its node in t or f.  When t
 * is empty, ht->tbl = f is published [pub]; a grace period later no reader
 * uses t, which is freed [gp] (t->future stays f for the readers that
 * still walk t until then).  No lock is held across that grace period.
 *
 * Updaters hold the stripe lock of their bucket.  While a resize runs,
 * stripe s guards the buckets of t and of f whose hashes h have
 * (h & smask) & (nstripes - 1) == s, where smask is the smaller array's
 * mask: an old bucket and the new buckets its nodes go to share a
 * stripe.  The two changes of that mapping (publishing f, publishing
 * ht->tbl = f) are made while holding every stripe lock, briefly and
 * without waiting for anything but those locks; so holding any stripe lock
 * pins ht->tbl, t->future and both arrays.  Without a stripe lock an
 * updater reads the array only inside a read section (lock_bucket()),
 * because a resize frees a replaced array one grace period after it
 * unpublished it, and a grace period waits only for read sections.
 *
 * No stripe lock is ever held while waiting for a grace period, so an
 * updater inside a read section may block on a stripe lock: updates work
 * inside read sections, also during a resize.
 *
 * Automatic resizing runs in the background: the update whose flushed
 * count crosses a load-factor limit queues ht->work with sk_call_rcu()
 * and returns.  The callback (on the library's callback worker) takes
 * resize_lock, publishes f, migrates for about RHASH_WORK_NS, re-queues
 * itself until every bucket is migrated, publishes f as ht->tbl, frees t
 * through sk_call_rcu() and releases resize_lock.
 *
 * ThreadSanitizer's deadlock detector handles at most 64 mutexes held by
 * one thread, and lock_all() holds them all: TSan builds use 32 stripes.
 */
#define _GNU_SOURCE
#include "scalekit/rhash.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/list.h" /* checker hooks, SK__PUBLISH */
#include "internal/util.h"

#ifdef SK_TSAN
#define RHASH_MAX_STRIPES 32UL /* lock_all() under TSan's 64-lock limit */
#else
#define RHASH_MAX_STRIPES 256UL
#endif

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
#define RHASH_MODE_U64	   1 /* 8-byte keys, sk_rhash_hash(), no cmpfn */

/* Migration time per background callback (then it re-queues itself). */
#define RHASH_WORK_NS 500000u
/* Old buckets migrated between two looks at the clock. */
#define RHASH_WORK_BATCH 256UL

#ifdef SK_RCU_CHECKER
/* Test knob (scalekit/rhash.h): only in the checker build. */
int sk_rhash__test_broken;
#define RHASH_BROKEN(k) (sk_rhash__test_broken == (k))
/*
 * Checker builds only (tests/checker.cmake; the test declares it): called
 * by a resize between two migration steps of one old bucket (the bucket
 * partly moved, no stripe lock held, resize_lock held), so that a test can
 * update the table there.
 */
extern void (*sk_rhash__test_step_hook)(struct sk_rhash *ht);
void (*sk_rhash__test_step_hook)(struct sk_rhash *ht);
#else
#define RHASH_BROKEN(k) 0
#endif

struct sk_rhash_table {
	unsigned long size;		 /* buckets, a power of two */
	unsigned long mask;		 /* size - 1 */
	struct sk_rhash_table *future;	 /* RCU: array a resize fills, or NULL */
	struct sk_rhash *ht;		 /* owner (deferred free) */
	struct sk_rcu_head rcu;		 /* deferred free after a resize */
	struct sk_rhash_node *buckets[]; /* chain heads (RCU) */
};

/* One cache line per stripe: updaters of different stripes share nothing. */
struct sk_rhash_stripe {
	pthread_mutex_t lock; /* guards the stripe's buckets and delta */
	long delta; /* count changes not yet added to ht->count (guarded by lock;
		       read without it by sk_rhash_count()) */
} __attribute__((aligned(SK_CACHELINE)));

/* ---- hashing ---------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* sk_rhash_hash(), inlined where len is a constant. */
static inline unsigned long hash_bytes(const void *key, size_t len,
				       unsigned long seed)
{
	const unsigned char *p = key;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL), w;

	while (len >= 8) {
		memcpy(&w, p, 8);
		h = mix64(h ^ w) + 0x9e3779b97f4a7c15ULL;
		p += 8;
		len -= 8;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = mix64(h ^ w);
	}
	return (unsigned long)mix64(h);
}

/* sk_rhash_hash() of an 8-byte key already loaded (lookup fast path). */
static inline unsigned long hash_u64(uint64_t w, unsigned long seed)
{
	return hash_bytes(&w, sizeof(w), seed);
}

unsigned long sk_rhash_hash(const void *key, size_t len, unsigned long seed)
{
	return hash_bytes(key, len, seed);
}

static inline void *obj_of(struct sk_rhash *ht, struct sk_rhash_node *n)
{
	return (char *)n - ht->p.head_offset;
}

static inline const void *key_of(struct sk_rhash *ht, const void *obj)
{
	return (const char *)obj + ht->p.key_offset;
}

static inline uint64_t load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline unsigned long hash_key(struct sk_rhash *ht, const void *key)
{
	if (SK_LIKELY(ht->mode == RHASH_MODE_U64))
		return hash_u64(load_u64(key), ht->p.seed);
	return ht->p.hashfn(key, ht->p.key_len, ht->p.seed);
}

static inline int key_matches(struct sk_rhash *ht, const void *key,
			      const void *obj)
{
	const void *k = key_of(ht, obj);

	if (ht->p.cmpfn)
		return ht->p.cmpfn(key, obj) == 0;
	switch (ht->p.key_len) {
	case 4:
		return *(const uint32_t *)key == *(const uint32_t *)k;
	case 8:
		return *(const uint64_t *)key == *(const uint64_t *)k;
	default:
		return memcmp(key, k, ht->p.key_len) == 0;
	}
}

/* ---- tables ----------------------------------------------------------------- */

static struct sk_rhash_table *table_alloc(struct sk_rhash *ht,
					  unsigned long size)
{
	struct sk_rhash_table *t;
	size_t bytes = sizeof(*t) + size * sizeof(t->buckets[0]);

	t = ht->p.alloc(bytes);
	if (!t)
		return NULL;
	memset(t, 0, bytes);
	t->size = size;
	t->mask = size - 1;
	t->ht = ht;
	return t;
}

static int is_pow2(unsigned long x)
{
	return x && !(x & (x - 1));
}

int sk_rhash_init(struct sk_rhash *ht, const struct sk_rhash_params *params)
{
	struct sk_rhash_params p;
	unsigned long i;

	if (!ht || !params)
		return -EINVAL;
	p = *params;
	if (!is_pow2(p.initial_buckets))
		return -EINVAL;
	if (!p.key_len && (!p.hashfn || !p.cmpfn))
		return -EINVAL;
	if (!p.min_buckets)
		p.min_buckets = 1;
	if (!p.max_buckets)
		p.max_buckets = 1UL << 30;
	if (!is_pow2(p.min_buckets) || !is_pow2(p.max_buckets) ||
	    p.min_buckets > p.max_buckets)
		return -EINVAL;
	if (!p.hashfn)
		p.hashfn = sk_rhash_hash;
	if (!p.alloc)
		p.alloc = malloc;
	if (!p.free)
		p.free = free;
	if (!p.grow_above_pct)
		p.grow_above_pct = 100;
	memset(ht, 0, sizeof(*ht));
	ht->p = p;
	if (p.key_len == 8 && p.hashfn == sk_rhash_hash && !p.cmpfn)
		ht->mode = RHASH_MODE_U64;
	ht->nstripes = RHASH_MAX_STRIPES;
	ht->stripes = p.alloc(ht->nstripes * sizeof(*ht->stripes));
	if (!ht->stripes)
		return -ENOMEM;
	ht->tbl = table_alloc(ht, p.initial_buckets);
	if (!ht->tbl) {
		p.free(ht->stripes);
		return -ENOMEM;
	}
	for (i = 0; i < ht->nstripes; i++) {
		pthread_mutex_init(&ht->stripes[i].lock, NULL);
		ht->stripes[i].delta = 0;
	}
	pthread_mutex_init(&ht->resize_lock, NULL);
	return 0;
}

static void free_chains(struct sk_rhash *ht, struct sk_rhash_table *t,
			void (*free_obj)(void *obj, void *arg), void *arg)
{
	unsigned long i;

	for (i = 0; free_obj && i < t->size; i++) {
		struct sk_rhash_node *n = t->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			free_obj(obj_of(ht, n), arg);
		}
	}
}

void sk_rhash_destroy(struct sk_rhash *ht,
		      void (*free_obj)(void *obj, void *arg), void *arg)
{
	unsigned long i;

	if (!ht || !ht->tbl)
		return;
	sk_rhash_barrier(ht);
	free_chains(ht, ht->tbl, free_obj, arg);
	for (i = 0; i < ht->nstripes; i++)
		pthread_mutex_destroy(&ht->stripes[i].lock);
	pthread_mutex_destroy(&ht->resize_lock);
	ht->p.free(ht->tbl);
	ht->p.free(ht->stripes);
	ht->tbl = NULL;
	ht->stripes = NULL;
}

/* ---- lookups ---------------------------------------------------------------- */

/*
 * While a resize runs, a lookup that misses in t's chain goes on to f's
 * bucket: start loading that bucket's head now, so that its cache miss
 * overlaps the walk of t's chain (the resizer has just written both
 * arrays).  Only a hint: the load that counts is made after L1.
 * t->future shares t's first cache line with t->mask.
 */
static inline void prefetch_future(struct sk_rhash_table *t, unsigned long h)
{
	/* Dependency: f's mask as published with f (pairs with its [pub]). */
	struct sk_rhash_table *f = sk_rcu_dereference(t->future);

	if (SK_UNLIKELY(f != NULL))
		__builtin_prefetch(&f->buckets[h & f->mask]);
}

/* Any key: hashfn, cmpfn or key_len as given.  Out of line: see below. */
static __attribute__((noinline)) void *lookup_generic(struct sk_rhash *ht,
						      const void *key)
{
	unsigned long h = hash_key(ht, key);
	struct sk_rhash_table *t = sk_rcu_dereference(ht->tbl);
	struct sk_rhash_node *n;

	prefetch_future(t, h);
	do {
		for (n = sk_rcu_dereference(t->buckets[h & t->mask]); n;
		     n = sk_rcu_dereference(n->next)) {
			if (n->hash == h &&
			    key_matches(ht, key, obj_of(ht, n)))
				return obj_of(ht, n);
		}
		/* L1: as in sk_rhash_lookup(). */
		sk_smp_rmb();
		t = sk_rcu_dereference(t->future);
	} while (SK_UNLIKELY(t != NULL));
	return NULL;
}

/*
 * The fast path of 8-byte keys with the default hash: the hash inlined,
 * keys compared as words, no indirect call and, with the generic path out
 * of line, no registers to save.
 */
void *sk_rhash_lookup(struct sk_rhash *ht, const void *key)
{
	struct sk_rhash_table *t;
	struct sk_rhash_node *n;
	size_t ho, ko;
	unsigned long h;
	uint64_t k;

	if (SK_UNLIKELY(ht->mode != RHASH_MODE_U64))
		return lookup_generic(ht, key);
	k = load_u64(key);
	ho = ht->p.head_offset;
	ko = ht->p.key_offset;
	h = hash_u64(k, ht->p.seed);
	t = sk_rcu_dereference(ht->tbl);
	prefetch_future(t, h);
	do {
		for (n = sk_rcu_dereference(t->buckets[h & t->mask]); n;
		     n = sk_rcu_dereference(n->next)) {
			const char *obj = (const char *)n - ho;

			if (n->hash == h && load_u64(obj + ko) == k)
				return (void *)obj;
		}
		/*
		 * L1: the chain's loads (one may have read the NULL that M3
		 * wrote) before the load of t->future and f's heads; pairs
		 * with the release of M3 in move_run().  A resize moves a
		 * run into f (M2) before it cuts it off the old chain (M3).
		 * A compiler barrier on x86.
		 */
		sk_smp_rmb();
		t = sk_rcu_dereference(t->future);
	} while (SK_UNLIKELY(t != NULL));
	return NULL;
}

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
		} else {
			/* L1: as in sk_rhash_lookup(): runs moved away from
			 * buckets already walked are in the future array. */
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
			return obj_of(it->ht, it->n);
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

/* ---- updates ---------------------------------------------------------------- */

/*
 * The stripe of hash h while t is current and f (or NULL) its future: the
 * smaller array's bucket of h, modulo the stripe count.
 */
static inline struct sk_rhash_stripe *
stripe_of(struct sk_rhash *ht, struct sk_rhash_table *t,
	  struct sk_rhash_table *f, unsigned long h)
{
	unsigned long mask = f && f->mask < t->mask ? f->mask : t->mask;

	return &ht->stripes[(h & mask) & (ht->nstripes - 1)];
}

/*
 * Enter a read section and lock the stripe of hash h; *tp receives the
 * current array and *fp its future (or NULL).  Both stay allocated until
 * unlock_bucket(): the read section holds back the grace period before a
 * replaced array's free.  Both stay current while the stripe is held: a
 * resize publishes a future array or switches ht->tbl without the
 * stripe's lock only where the stripe mapping stays the same, and then it
 * still takes each stripe to migrate its buckets (see resize_begin()).
 * May block on the stripe lock, never for a grace period: also callable
 * inside a read section.  Returns 0; -ENOMEM when the thread could not be
 * registered for its read sections (nothing locked then).
 */
static int lock_bucket(struct sk_rhash *ht, unsigned long h,
		       struct sk_rhash_table **tp, struct sk_rhash_table **fp,
		       struct sk_rhash_stripe **sp)
{
	struct sk_rhash_table *t, *f;
	struct sk_rhash_stripe *s;

	/*
	 * Register here rather than in sk_rcu_read_lock(), which aborts when
	 * it runs out of memory: an update returns the error instead.
	 */
	if (SK_UNLIKELY(!sk_atomic_load_relaxed(&sk_rcu__ctr)) &&
	    sk_rcu_register_thread())
		return -ENOMEM;
	sk_rcu_read_lock();
	for (;;) {
		t = sk_rcu_dereference(ht->tbl);
		s = stripe_of(ht, t, sk_rcu_dereference(t->future), h);
		/*
		 * No holder of a stripe lock waits for a grace period, so
		 * blocking here inside the read section is fine.
		 */
		pthread_mutex_lock(&s->lock);
		/*
		 * Re-read under the lock: a resize that changed the stripe
		 * mapping did so holding every stripe (the mutex orders its
		 * writes before these loads), and one that published f or
		 * switched ht->tbl without them left the mapping as it was.
		 * Compare stripes, not array pointers (ABA of a reused
		 * address is harmless then).
		 */
		t = sk_rcu_dereference(ht->tbl);
		f = sk_rcu_dereference(t->future);
		if (stripe_of(ht, t, f, h) == s) {
			*tp = t;
			*fp = f;
			*sp = s;
			return 0;
		}
		pthread_mutex_unlock(&s->lock);
	}
}

/* Unlock what lock_bucket() locked and leave its read section. */
static void unlock_bucket(struct sk_rhash_stripe *s)
{
	pthread_mutex_unlock(&s->lock);
	sk_rcu_read_unlock();
}

static void maybe_resize(struct sk_rhash *ht, unsigned long size, long count,
			 int grow);

/*
 * Count an update of stripe s (locked) of a table of size buckets.  Returns
 * nonzero when a batch was flushed: *count then holds ht->count after the
 * flush.
 */
static inline int count_update(struct sk_rhash *ht, struct sk_rhash_stripe *s,
			       unsigned long size, long d, long *count)
{
	unsigned long batch = (size >> RHASH_BATCH_SHIFT) / ht->nstripes;
	long v = s->delta + d;

	if ((unsigned long)(v < 0 ? -v : v) < (batch ? batch : 1)) {
		sk_atomic_store_relaxed(&s->delta, v);
		return 0;
	}
	/*
	 * Relaxed: the count is a statistic; the background resize reads
	 * it again when it decides.
	 */
	*count = sk_atomic_fetch_add_relaxed(&ht->count, v) + v;
	sk_atomic_store_relaxed(&s->delta, 0L);
	return 1;
}

/* The first node of t's chain of h whose key is key, or NULL.  Locked. */
static struct sk_rhash_node *find_key(struct sk_rhash *ht,
				      struct sk_rhash_table *t,
				      unsigned long h, const void *key)
{
	struct sk_rhash_node *n;

	for (n = t->buckets[h & t->mask]; n; n = n->next)
		if (n->hash == h && key_matches(ht, key, obj_of(ht, n)))
			return n;
	return NULL;
}

static int insert(struct sk_rhash *ht, struct sk_rhash_node *node, int unique)
{
	struct sk_rhash_table *t, *f, *dst;
	struct sk_rhash_node **head;
	struct sk_rhash_stripe *s;
	const void *obj, *key;
	unsigned long h, size;
	long count = 0;
	int check, err;

	if (!ht || !node)
		return -EINVAL;
	obj = obj_of(ht, node);
	key = key_of(ht, obj);
	h = hash_key(ht, key);
	err = lock_bucket(ht, h, &t, &f, &s);
	if (err)
		return err;
	if (unique &&
	    (find_key(ht, t, h, key) || (f && find_key(ht, f, h, key)))) {
		unlock_bucket(s);
		return -EEXIST;
	}
	/* During a resize new nodes go to the future array. */
	dst = f ? f : t;
#ifdef SK_RCU_CHECKER
	if (sk_rhash__test_broken == SK_RHASH__BROKEN_INSERT_OLD)
		dst = t; /* broken twin: the old array keeps the node */
#endif
	head = &dst->buckets[h & dst->mask];
	/* dst may be freed after unlock_bucket(): keep its size. */
	size = dst->size;
	/* [priv] node is not reachable yet. */
	node->hash = h;
	node->next = *head;
	/* [pub] node's fields and object, then the pointer to node. */
	SK__PUBLISH(*head, node);
	check = count_update(ht, s, size, 1, &count);
	unlock_bucket(s);
	if (check)
		maybe_resize(ht, size, count, 1);
	return 0;
}

int sk_rhash_insert(struct sk_rhash *ht, struct sk_rhash_node *node)
{
	return insert(ht, node, 0);
}

int sk_rhash_insert_unique(struct sk_rhash *ht, struct sk_rhash_node *node)
{
	return insert(ht, node, 1);
}

/* The link that points at node in its chain of t, or NULL.  Locked. */
static struct sk_rhash_node **find_link(struct sk_rhash_table *t,
					struct sk_rhash_node *node)
{
	struct sk_rhash_node **pp = &t->buckets[node->hash & t->mask];

	for (; *pp; pp = &(*pp)->next)
		if (*pp == node)
			return pp;
	return NULL;
}

/* The link to node in t or in f (NULL: no future), or NULL.  Locked. */
static struct sk_rhash_node **find_link2(struct sk_rhash_table *t,
					 struct sk_rhash_table *f,
					 struct sk_rhash_node *node)
{
	struct sk_rhash_node **pp = find_link(t, node);

	return pp || !f ? pp : find_link(f, node);
}

int sk_rhash_remove(struct sk_rhash *ht, struct sk_rhash_node *node)
{
	struct sk_rhash_table *t, *f;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **pp;
	unsigned long size;
	long count = 0;
	int check, err;

	if (!ht || !node)
		return -EINVAL;
	err = lock_bucket(ht, node->hash, &t, &f, &s);
	if (err)
		return err;
	pp = find_link2(t, f, node);
	if (!pp) {
		unlock_bucket(s);
		return -ENOENT;
	}
	size = f ? f->size : t->size;
	/* [one] readers either still see node or skip it; node->next stays. */
	SK__PUBLISH(*pp, node->next);
	check = count_update(ht, s, size, -1, &count);
	unlock_bucket(s);
	if (check)
		maybe_resize(ht, size, count, 0);
	return 0;
}

int sk_rhash_replace(struct sk_rhash *ht, struct sk_rhash_node *old_node,
		     struct sk_rhash_node *new_node)
{
	struct sk_rhash_table *t, *f;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **pp;
	unsigned long h;
	int err;

	if (!ht || !old_node || !new_node)
		return -EINVAL;
	h = hash_key(ht, key_of(ht, obj_of(ht, new_node)));
	if (h != old_node->hash ||
	    !key_matches(ht, key_of(ht, obj_of(ht, new_node)),
			 obj_of(ht, old_node)))
		return -EINVAL;
	err = lock_bucket(ht, h, &t, &f, &s);
	if (err)
		return err;
	pp = find_link2(t, f, old_node);
	if (!pp) {
		unlock_bucket(s);
		return -ENOENT;
	}
	/* [priv] new_node is not reachable yet. */
	new_node->hash = h;
	new_node->next = old_node->next;
	/* [pub] new object, then the pointer to it; readers see old or new. */
	SK__PUBLISH(*pp, new_node);
	unlock_bucket(s);
	return 0;
}

/* ---- resizing --------------------------------------------------------------- */

static void lock_all(struct sk_rhash *ht)
{
	unsigned long i;

	for (i = 0; i < ht->nstripes; i++)
		pthread_mutex_lock(&ht->stripes[i].lock);
}

static void unlock_all(struct sk_rhash *ht)
{
	unsigned long i;

	for (i = ht->nstripes; i-- > 0;)
		pthread_mutex_unlock(&ht->stripes[i].lock);
}

/* The stripe mask of arrays t and f (NULL: none): see stripe_of(). */
static unsigned long stripe_mask(struct sk_rhash *ht, struct sk_rhash_table *t,
				 struct sk_rhash_table *f)
{
	return (f && f->mask < t->mask ? f->mask : t->mask) &
	       (ht->nstripes - 1);
}

/*
 * Publish *pp = v (the future array, or the table) where that changes the
 * stripe mapping from mask `from` to mask `to`: while holding every stripe
 * lock when it does, so that an updater that holds a stripe sees the
 * mapping it locked by; without them when it does not (tables of
 * nstripes buckets and more), so that no updater waits for all stripes.
 * Brief either way: no grace period inside.
 */
static void publish_table(struct sk_rhash *ht, struct sk_rhash_table **pp,
			  struct sk_rhash_table *v, unsigned long from,
			  unsigned long to)
{
	if (from != to)
		lock_all(ht);
	/* [pub] the array's heads, then the pointer to the array. */
	SK__PUBLISH(*pp, v);
	if (from != to)
		unlock_all(ht);
}

/*
 * Start a resize to nbuckets: publish the empty future array.  resize_lock
 * held, no resize running.  Returns 0 or -ENOMEM (nothing changed).
 */
static int resize_begin(struct sk_rhash *ht, unsigned long nbuckets)
{
	struct sk_rhash_table *t = ht->tbl, *f = table_alloc(ht, nbuckets);

	if (!f)
		return -ENOMEM;
	publish_table(ht, &t->future, f, stripe_mask(ht, t, NULL),
		      stripe_mask(ht, t, f));
	sk_atomic_store_relaxed(&ht->resizing, 1); /* stat for tests, tools */
	return 0;
}

/*
 * Move the nodes *link .. last (the end of an old chain, all of bucket d
 * of f) to the head of f's chain d.  Their stripe is locked.
 */
static void move_run(struct sk_rhash_table *f, struct sk_rhash_node **link,
		     struct sk_rhash_node *last, unsigned long d)
{
	struct sk_rhash_node *first = *link;

	if (RHASH_BROKEN(SK_RHASH__BROKEN_CUT_FIRST)) {
		/* Broken twin: cut the run off before f has it. */
		SK__PUBLISH(*link, NULL);
		SK__PUBLISH(last->next, f->buckets[d]);
		SK__PUBLISH(f->buckets[d], first);
		return;
	}
	/*
	 * M1 [one]: readers in the run walk on into f's chain d.  Skipped
	 * when last->next already is f's head (NULL, as f's chain d is still
	 * empty in most moves of a grow): the state does not change, and
	 * readers keep the node's cache line.
	 */
	if (last->next != f->buckets[d])
		SK__PUBLISH(last->next, f->buckets[d]);
	/* M2 [pub]: the run's nodes, then f's head. */
	SK__PUBLISH(f->buckets[d], first);
	/*
	 * M3 [one]: the old chain ends before the run.  Release: M2 (and
	 * the publication of f) before M3; pairs with L1 in the lookups.
	 */
	SK__PUBLISH(*link, NULL);
}

/*
 * Links remembered per walk of an old chain: one walk moves up to this
 * many runs from the chain's tail.  The checker build remembers 2, so
 * that its small chains are migrated in several steps.
 */
#ifdef SK_RCU_CHECKER
#define RHASH_RING 2
#else
#define RHASH_RING 256
#endif

/*
 * One step of the migration of old bucket i of t to f, under the bucket's
 * stripe lock: walk the chain once, remembering its last RHASH_RING links,
 * and move up to RHASH_RING tail runs.  Returns nonzero when nodes are left
 * (the caller drops the lock and steps again: the lock is held for one walk
 * of the chain at a time, however long the chain is).  The old chain only
 * shrinks while f is published (inserts go to f).
 */
static int migrate_step(struct sk_rhash_table *t, struct sk_rhash_table *f,
			unsigned long i)
{
	struct sk_rhash_node **ring[RHASH_RING], **pp;
	unsigned long n = 0, k, j, d;

	for (pp = &t->buckets[i]; *pp; pp = &(*pp)->next)
		ring[n++ % RHASH_RING] = pp;
	/* ring[(k - 1) % R] is the link to the chain's last node. */
	for (k = n; k > 0 && n - k < RHASH_RING;) {
		struct sk_rhash_node *last = *ring[(k - 1) % RHASH_RING];

		d = last->hash & f->mask;
		for (j = k - 1; j > 0 && n - j < RHASH_RING &&
		     ((*ring[(j - 1) % RHASH_RING])->hash & f->mask) == d;)
			j--;
		move_run(f, ring[j % RHASH_RING], last, d);
		k = j;
	}
	return k > 0;
}

/*
 * Migrate old buckets [from, to) of the running resize, one step of one
 * bucket per hold of its stripe lock.  No lock held.
 */
static void migrate_range(struct sk_rhash *ht, unsigned long from,
			  unsigned long to)
{
	/* Only resizes change tbl and future; resize_lock is held. */
	struct sk_rhash_table *t = ht->tbl, *f = t->future;
	unsigned long i, mask = stripe_mask(ht, t, f);
	int more;

	for (i = from; i < to; i++) {
		struct sk_rhash_stripe *s = &ht->stripes[i & mask];

		for (;;) {
			pthread_mutex_lock(&s->lock);
			more = migrate_step(t, f, i);
			pthread_mutex_unlock(&s->lock);
			if (!more)
				break;
#ifdef SK_RCU_CHECKER
			/* Old bucket i partly moved, no stripe lock held. */
			if (sk_rhash__test_step_hook)
				sk_rhash__test_step_hook(ht);
#endif
		}
	}
}

/*
 * End a resize whose old array is empty: publish the future array as the
 * table.  Returns the old array, to be freed after a grace period.
 */
static struct sk_rhash_table *resize_finish(struct sk_rhash *ht)
{
	struct sk_rhash_table *t = ht->tbl, *f = t->future;

	/*
	 * t->future stays: readers still in t walk on into f until the
	 * grace period before t's free.
	 */
	publish_table(ht, &ht->tbl, f, stripe_mask(ht, t, f),
		      stripe_mask(ht, f, NULL));
	sk_atomic_store_relaxed(&ht->resizing, 0);
	/* Relaxed: a statistic (tests poll it without resize_lock). */
	sk_atomic_store_relaxed(&ht->resizes, ht->resizes + 1);
	return t;
}

/* A grace period inside a resize (checked under SK_RCU_CHECKER). */
static void resize_gp(void)
{
	if (RHASH_BROKEN(SK_RHASH__BROKEN_NO_GP))
		return; /* broken twin: free the old array at once */
	sk_synchronize_rcu();
	SK__RCU_CHECK(SK_RCU_CHECK_GP);
}

/* Resize to nbuckets in the caller's thread.  resize_lock held. */
static int resize_locked(struct sk_rhash *ht, unsigned long nbuckets)
{
	struct sk_rhash_table *old;
	int err;

	if (ht->tbl->size == nbuckets)
		return 0;
	err = resize_begin(ht, nbuckets);
	if (err)
		return err;
	migrate_range(ht, 0, ht->tbl->size);
	old = resize_finish(ht);
	/* [gp] readers of the old array finish before it is freed. */
	resize_gp();
	ht->p.free(old);
	return 0;
}

int sk_rhash_resize(struct sk_rhash *ht, unsigned long nbuckets)
{
	int err;

	if (!ht || !is_pow2(nbuckets))
		return -EINVAL;
	if (sk_rcu_read_ongoing())
		sk__die("sk_rhash_resize() called inside an RCU read-side "
			"critical section: it waits for grace periods");
	pthread_mutex_lock(&ht->resize_lock);
	err = resize_locked(ht, nbuckets);
	pthread_mutex_unlock(&ht->resize_lock);
	return err;
}

/* ---- background resizing ---------------------------------------------------- */

/* count > size * pct / 100, without overflow. */
static int above(long count, unsigned long size, unsigned int pct)
{
	return count > 0 &&
	       (unsigned long)count > size / 100 * pct + size % 100 * pct / 100;
}

/* The size the load factor asks for, from size (a power of two). */
static unsigned long wanted_size(struct sk_rhash *ht, unsigned long size,
				 long count)
{
	const struct sk_rhash_params *p = &ht->p;

	while (size < p->max_buckets && above(count, size, p->grow_above_pct))
		size *= 2;
	while (size > p->min_buckets && p->shrink_below_pct &&
	       !above(count + 1, size, p->shrink_below_pct))
		size /= 2;
	return size;
}

static void background_resize(struct sk_rcu_head *head);

/* The background work is done: let updates queue it again. */
static void work_done(struct sk_rhash *ht)
{
	/* Release: the work's writes before a new queueing (cmpxchg). */
	sk_atomic_store_release(&ht->work_queued, 0);
	/* Release: pairs with the acquire in sk_rhash_destroy(). */
	__atomic_fetch_sub(&ht->pending, 1, __ATOMIC_RELEASE);
}

static void free_table_cb(struct sk_rcu_head *head)
{
	struct sk_rhash_table *t =
		(struct sk_rhash_table *)((char *)head -
					  offsetof(struct sk_rhash_table, rcu));
	struct sk_rhash *ht = t->ht;

	ht->p.free(t);
	/* Release: the free before sk_rhash_destroy() returns. */
	__atomic_fetch_sub(&ht->pending, 1, __ATOMIC_RELEASE);
}

/*
 * Start the background resize if the load factor still asks for one.
 * Returns nonzero when a resize now runs (resize_lock stays held).
 */
static int background_start(struct sk_rhash *ht)
{
	unsigned long want;

	/* An explicit resize runs: it decides; updates queue us again. */
	if (pthread_mutex_trylock(&ht->resize_lock) != 0)
		return 0;
	want = wanted_size(ht, ht->tbl->size, (long)sk_rhash_count(ht));
	if (want != ht->tbl->size && resize_begin(ht, want) == 0) {
		ht->work_next = 0;
		ht->work_active = 1;
		return 1;
	}
	/* -ENOMEM: retried after a later flush. */
	pthread_mutex_unlock(&ht->resize_lock);
	return 0;
}

/*
 * The callback of ht->work, on the callback worker: migrate for about
 * RHASH_WORK_NS, then re-queue, or finish.  Never waits for a grace
 * period; blocks only on stripe locks (held briefly by updaters).  Holds
 * resize_lock from the start to the end of a resize, across callbacks.
 */
static void background_resize(struct sk_rcu_head *head)
{
	struct sk_rhash *ht = (struct sk_rhash *)((char *)head -
						  offsetof(struct sk_rhash, work));
	uint64_t end = sk__now_ns() + RHASH_WORK_NS;
	unsigned long size, next;
	struct sk_rhash_table *old;

	if (!ht->work_active && !background_start(ht)) {
		work_done(ht);
		return;
	}
	size = ht->tbl->size;
	do {
		next = ht->work_next + RHASH_WORK_BATCH;
		next = next < size ? next : size;
		migrate_range(ht, ht->work_next, next);
		ht->work_next = next;
	} while (next < size && sk__now_ns() < end);
	if (next < size) {
		(void)sk_call_rcu(&ht->work, background_resize);
		return;
	}
	old = resize_finish(ht);
	ht->work_active = 0;
	size = ht->tbl->size;
	pthread_mutex_unlock(&ht->resize_lock);
	/* Relaxed: sk_call_rcu() orders it before the callback (C1). */
	__atomic_fetch_add(&ht->pending, 1, __ATOMIC_RELAXED);
	/* [gp] readers of the old array finish before the callback frees it. */
	(void)sk_call_rcu(&old->rcu, free_table_cb);
	/*
	 * Updates went on during the resize (their checks found the work
	 * queued): if the load factor now asks for another size, go on.
	 */
	if (wanted_size(ht, size, (long)sk_rhash_count(ht)) != size)
		(void)sk_call_rcu(&ht->work, background_resize);
	else
		work_done(ht);
}

void sk_rhash_barrier(struct sk_rhash *ht)
{
	/*
	 * The background work re-queues itself until done and queues the
	 * free of each array it replaced: wait until none is left.
	 * Acquire: pairs with the releases in work_done() and
	 * free_table_cb(); their writes happen before the return.
	 */
	while (sk_atomic_load_acquire(&ht->pending))
		sk_rcu_barrier();
}

/*
 * Automatic resizing, after an update that flushed its stripe's batch
 * (count_update()): size is the bucket count the update counted against,
 * count the flushed total.  Called with no lock held, maybe inside a read
 * section.  Queues the background resize; never waits.
 */
static void maybe_resize(struct sk_rhash *ht, unsigned long size, long count,
			 int grow_check)
{
	int idle = 0;

	if (!ht->p.automatic_resize)
		return;
	if (grow_check ? size >= ht->p.max_buckets ||
				 !above(count, size, ht->p.grow_above_pct)
		       : size <= ht->p.min_buckets || !ht->p.shrink_below_pct ||
				 above(count + 1, size, ht->p.shrink_below_pct))
		return;
	/*
	 * One queued work per table: it rechecks the load factor.  The
	 * cmpxchg (full barrier) pairs with the release in work_done(): the
	 * previous work's writes happen before this queueing.
	 */
	if (sk_atomic_load_relaxed(&ht->work_queued) ||
	    !sk_atomic_cmpxchg(&ht->work_queued, &idle, 1))
		return;
	/* Relaxed: sk_call_rcu() orders it before the callback (C1). */
	__atomic_fetch_add(&ht->pending, 1, __ATOMIC_RELAXED);
	(void)sk_call_rcu(&ht->work, background_resize);
}
