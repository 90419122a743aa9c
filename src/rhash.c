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
 * Shrink (n -> n/2): new bucket j starts at old chain j (or j + n/2 when
 * that is empty) [priv]; the tail of old chain j is linked to old chain
 * j + n/2 [one] (readers of the old table now also walk nodes of the other
 * bucket, which they skip by hash); the new table is published [pub]; a
 * grace period later no reader uses the old array and it is freed [gp].
 *
 * Grow (n -> 2n): new bucket j points at the first node of old chain
 * j mod n that belongs to j [priv]; the new table is published [pub]; a
 * grace period later no reader uses the old array [gp].  Then the chains
 * are "unzipped": each old chain interleaves runs of nodes of its two new
 * buckets; one pass changes, in every chain, the next pointer of the last
 * node of one run to skip the following run of the other bucket.  A reader
 * of the other bucket may be standing in the run being bypassed and would
 * lose the rest of its bucket at the next change of this chain, which
 * follows the reader's order: [gp] between passes.
 *
 * Updaters hold the stripe lock of their bucket; a resize holds every
 * stripe lock, so no update interleaves with it.  Stripe s guards the
 * buckets b with (b & (nstripes - 1)) == s of the current table.  Holding
 * any stripe lock therefore pins ht->tbl and its array: a resize replaces
 * and frees arrays only while it holds all of them.  Without a stripe lock
 * an updater reads the array only inside a read section (lock_bucket()),
 * because a resize frees a replaced array one grace period after it
 * unpublished it, and a grace period waits only for read sections.
 *
 * A resize waits for grace periods while it holds the stripe locks, so an
 * updater inside a read section must never block on a stripe lock that a
 * resize holds or is taking (the resize would wait for the updater's
 * section, the updater for the resize): such an updater only try-locks,
 * and returns -EDEADLK when a resize runs (ht->resizing).
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

int sk_rhash__test_skip_unzip_gp;

struct sk_rhash_table {
	unsigned long size;		     /* buckets, a power of two */
	unsigned long mask;		     /* size - 1 */
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

void sk_rhash_destroy(struct sk_rhash *ht,
		      void (*free_obj)(void *obj, void *arg), void *arg)
{
	struct sk_rhash_table *t;
	unsigned long i;

	if (!ht || !ht->tbl)
		return;
	t = ht->tbl;
	for (i = 0; free_obj && i < t->size; i++) {
		struct sk_rhash_node *n = t->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			free_obj(obj_of(ht, n), arg);
		}
	}
	for (i = 0; i < ht->nstripes; i++)
		pthread_mutex_destroy(&ht->stripes[i].lock);
	pthread_mutex_destroy(&ht->resize_lock);
	ht->p.free(t);
	ht->p.free(ht->stripes);
	ht->tbl = NULL;
	ht->stripes = NULL;
}

/* ---- lookups ---------------------------------------------------------------- */

/* Any key: hashfn, cmpfn or key_len as given.  Out of line: see below. */
static __attribute__((noinline)) void *lookup_generic(struct sk_rhash *ht,
						      const void *key)
{
	unsigned long h = hash_key(ht, key);
	struct sk_rhash_table *t = sk_rcu_dereference(ht->tbl);
	struct sk_rhash_node *n;

	for (n = sk_rcu_dereference(t->buckets[h & t->mask]); n;
	     n = sk_rcu_dereference(n->next)) {
		if (n->hash == h && key_matches(ht, key, obj_of(ht, n)))
			return obj_of(ht, n);
	}
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
	for (n = sk_rcu_dereference(t->buckets[h & t->mask]); n;
	     n = sk_rcu_dereference(n->next)) {
		const char *obj = (const char *)n - ho;

		if (n->hash == h && load_u64(obj + ko) == k)
			return (void *)obj;
	}
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
		if (it->n)
			it->n = sk_rcu_dereference(it->n->next);
		else if (it->bucket < t->size)
			it->n = sk_rcu_dereference(t->buckets[it->bucket++]);
		else
			return NULL;
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

static inline struct sk_rhash_stripe *stripe_of(struct sk_rhash *ht,
						unsigned long mask,
						unsigned long h)
{
	return &ht->stripes[(h & mask) & (ht->nstripes - 1)];
}

/*
 * Lock the stripe of hash h in the current table; *tp receives the table,
 * which stays current (and allocated) until the stripe is unlocked.
 * Returns 0; -EDEADLK when the caller is inside a read section and a
 * resize runs; -ENOMEM when the thread could not be registered for its
 * read sections (nothing locked then).
 */
static int lock_bucket(struct sk_rhash *ht, unsigned long h,
		       struct sk_rhash_table **tp, struct sk_rhash_stripe **sp)
{
	int in_section = sk_rcu_read_ongoing();
	struct sk_rhash_table *t;
	struct sk_rhash_stripe *s;

	/*
	 * Register here rather than in sk_rcu_read_lock(), which aborts when
	 * it runs out of memory: an update returns the error instead.
	 */
	if (SK_UNLIKELY(!sk_atomic_load_relaxed(&sk_rcu__ctr)) &&
	    sk_rcu_register_thread())
		return -ENOMEM;
	for (;;) {
		/*
		 * The array may be freed by a resize as soon as no read
		 * section holds it: read its mask inside one.  The stripes
		 * are never freed, so s stays usable after the section.
		 */
		sk_rcu_read_lock();
		t = sk_rcu_dereference(ht->tbl);
		s = stripe_of(ht, t->mask, h);
		sk_rcu_read_unlock();
		if (!in_section) {
			/*
			 * Outside any read section: blocking on a resize is
			 * fine, the resize's grace periods do not wait for us.
			 */
			pthread_mutex_lock(&s->lock);
		} else {
			/*
			 * The resize would wait for our section and we for
			 * its stripe locks: while one runs, give up, also
			 * when it has not taken our stripe yet (so that the
			 * answer does not depend on how far it got).
			 * Relaxed: a flag seen late only means one more try,
			 * or a stripe taken before the resize takes it,
			 * which it then waits for (no cycle).
			 */
			for (;;) {
				if (sk_atomic_load_relaxed(&ht->resizing))
					return -EDEADLK;
				if (pthread_mutex_trylock(&s->lock) == 0)
					break;
				sched_yield();
			}
		}
		/*
		 * With a stripe held no resize runs: ht->tbl and its array
		 * stay.  Compare stripes, not table pointers: a new array
		 * may have the freed one's address (ABA).
		 */
		t = sk_atomic_load_relaxed(&ht->tbl);
		if (stripe_of(ht, t->mask, h) == s) {
			*tp = t;
			*sp = s;
			return 0;
		}
		pthread_mutex_unlock(&s->lock);
	}
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
	 * Relaxed: the count is a statistic; the resize decision is
	 * rechecked under resize_lock.
	 */
	*count = sk_atomic_fetch_add_relaxed(&ht->count, v) + v;
	sk_atomic_store_relaxed(&s->delta, 0L);
	return 1;
}

static int insert(struct sk_rhash *ht, struct sk_rhash_node *node, int unique)
{
	const void *obj, *key;
	struct sk_rhash_table *t;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **head, *n;
	unsigned long h, size;
	long count = 0;
	int check, err;

	if (!ht || !node)
		return -EINVAL;
	obj = obj_of(ht, node);
	key = key_of(ht, obj);
	h = hash_key(ht, key);
	err = lock_bucket(ht, h, &t, &s);
	if (err)
		return err;
	head = &t->buckets[h & t->mask];
	if (unique) {
		for (n = *head; n; n = n->next) {
			if (n->hash == h && key_matches(ht, key, obj_of(ht, n))) {
				pthread_mutex_unlock(&s->lock);
				return -EEXIST;
			}
		}
	}
	size = t->size;
	/* [priv] node is not reachable yet. */
	node->hash = h;
	node->next = *head;
	/* [pub] node's fields and object, then the pointer to node. */
	SK__PUBLISH(*head, node);
	check = count_update(ht, s, size, 1, &count);
	pthread_mutex_unlock(&s->lock);
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

/* The link that points at node in its chain, or NULL.  Stripe locked. */
static struct sk_rhash_node **find_link(struct sk_rhash_table *t,
					struct sk_rhash_node *node)
{
	struct sk_rhash_node **pp = &t->buckets[node->hash & t->mask];

	for (; *pp; pp = &(*pp)->next)
		if (*pp == node)
			return pp;
	return NULL;
}

int sk_rhash_remove(struct sk_rhash *ht, struct sk_rhash_node *node)
{
	struct sk_rhash_table *t;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **pp;
	unsigned long size;
	long count = 0;
	int check, err;

	if (!ht || !node)
		return -EINVAL;
	err = lock_bucket(ht, node->hash, &t, &s);
	if (err)
		return err;
	pp = find_link(t, node);
	if (!pp) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	size = t->size;
	/* [one] readers either still see node or skip it; node->next stays. */
	SK__PUBLISH(*pp, node->next);
	check = count_update(ht, s, size, -1, &count);
	pthread_mutex_unlock(&s->lock);
	if (check)
		maybe_resize(ht, size, count, 0);
	return 0;
}

int sk_rhash_replace(struct sk_rhash *ht, struct sk_rhash_node *old_node,
		     struct sk_rhash_node *new_node)
{
	struct sk_rhash_table *t;
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
	err = lock_bucket(ht, h, &t, &s);
	if (err)
		return err;
	pp = find_link(t, old_node);
	if (!pp) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	/* [priv] new_node is not reachable yet. */
	new_node->hash = h;
	new_node->next = old_node->next;
	/* [pub] new object, then the pointer to it; readers see old or new. */
	SK__PUBLISH(*pp, new_node);
	pthread_mutex_unlock(&s->lock);
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

/* A grace period inside a resize (checked under SK_RCU_CHECKER). */
static void resize_gp(void)
{
	sk_synchronize_rcu();
	SK__RCU_CHECK(SK_RCU_CHECK_GP);
}

/* Halve the table.  All stripes locked.  Returns 0 or -ENOMEM. */
static int shrink(struct sk_rhash *ht)
{
	struct sk_rhash_table *old = ht->tbl, *t;
	unsigned long j, half = old->size / 2;

	t = table_alloc(ht, half);
	if (!t)
		return -ENOMEM;
	for (j = 0; j < half; j++) {
		struct sk_rhash_node *a = old->buckets[j];
		struct sk_rhash_node *b = old->buckets[j + half];

		/* [priv] the new array is not published yet. */
		t->buckets[j] = a ? a : b;
		if (a && b) {
			while (a->next)
				a = a->next;
			/*
			 * [one] old-table readers of bucket j now also walk
			 * bucket j + half's chain (skipped by hash).
			 */
			SK__PUBLISH(a->next, b);
		}
	}
	/* [pub] the new array's heads, then the pointer to the array. */
	SK__PUBLISH(ht->tbl, t);
	/* [gp] readers of the old array finish before it is freed. */
	resize_gp();
	ht->p.free(old);
	return 0;
}

/*
 * One unzip pass over every chain of the grown table t (size 2n): in each
 * old chain (cursor[i], starting at new bucket i's or i + n's first node),
 * make the last node of the current run skip the following run of the
 * other bucket.  Returns the number of chains still interleaved.
 */
static unsigned long unzip_pass(struct sk_rhash_table *t,
				struct sk_rhash_node **cursor, unsigned long n)
{
	unsigned long i, left = 0;

	for (i = 0; i < n; i++) {
		struct sk_rhash_node *p = cursor[i], *e, *q;
		unsigned long dest;

		if (!p)
			continue;
		dest = p->hash & t->mask;
		/* e: last node of the run of dest that starts at p. */
		for (e = p; e->next && (e->next->hash & t->mask) == dest;)
			e = e->next;
		if (!e->next) {
			cursor[i] = NULL; /* the rest of the chain is one run */
			continue;
		}
		/* q: next node of dest after the other bucket's run. */
		for (q = e->next; q && (q->hash & t->mask) != dest;)
			q = q->next;
		/* The other bucket's run continues from e's old successor. */
		cursor[i] = e->next;
		/*
		 * [gp] readers of the other bucket standing in e->next's run
		 * must be gone before that run's end is changed: the caller
		 * waits a grace period between passes.
		 */
		SK__PUBLISH(e->next, q);
		left++;
	}
	return left;
}

/* Double the table.  All stripes locked.  Returns 0 or -ENOMEM. */
static int grow(struct sk_rhash *ht)
{
	struct sk_rhash_table *old = ht->tbl, *t;
	struct sk_rhash_node **cursor, *nd;
	unsigned long i, n = old->size;

	t = table_alloc(ht, 2 * n);
	if (!t)
		return -ENOMEM;
	cursor = ht->p.alloc(n * sizeof(*cursor));
	if (!cursor) {
		ht->p.free(t);
		return -ENOMEM;
	}
	for (i = 0; i < 2 * n; i++) {
		/* [priv] first node of old chain i mod n that belongs to i. */
		for (nd = old->buckets[i & (n - 1)];
		     nd && (nd->hash & t->mask) != i;)
			nd = nd->next;
		t->buckets[i] = nd;
	}
	for (i = 0; i < n; i++)
		cursor[i] = old->buckets[i];
	/* [pub] the new heads, then the pointer to the array. */
	SK__PUBLISH(ht->tbl, t);
	/* [gp] no reader uses the old array (whose chains we now change). */
	resize_gp();
	ht->p.free(old);
	while (unzip_pass(t, cursor, n)) {
		/* [gp] between passes (see unzip_pass). */
		if (!sk_rhash__test_skip_unzip_gp)
			resize_gp();
	}
	ht->p.free(cursor);
	return 0;
}

/* Resize to nbuckets.  resize_lock held.  Returns 0 or -ENOMEM. */
static int resize_locked(struct sk_rhash *ht, unsigned long nbuckets)
{
	int err = 0;

	/*
	 * Before the first stripe lock: updaters inside read sections must
	 * not wait for the stripes from now on (see lock_bucket()).
	 * Relaxed: they re-read it while they retry.
	 */
	sk_atomic_store_relaxed(&ht->resizing, 1);
	lock_all(ht);
	while (!err && ht->tbl->size > nbuckets)
		err = shrink(ht);
	while (!err && ht->tbl->size < nbuckets)
		err = grow(ht);
	unlock_all(ht);
	sk_atomic_store_relaxed(&ht->resizing, 0);
	if (!err)
		ht->resizes++;
	return err;
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

/*
 * Automatic resizing, after an update that flushed its stripe's batch
 * (count_update()): size is the bucket count the update saw under its
 * stripe lock, count the flushed total.  Called with no lock held.
 */
static void maybe_resize(struct sk_rhash *ht, unsigned long size, long count,
			 int grow_check)
{
	unsigned long limit, want = 0;
	unsigned int pct;

	if (!ht->p.automatic_resize || sk_rcu_read_ongoing())
		return;
	pct = grow_check ? ht->p.grow_above_pct : ht->p.shrink_below_pct;
	if (grow_check ? size >= ht->p.max_buckets
		       : size <= ht->p.min_buckets || !pct)
		return;
	limit = size / 100 * pct + size % 100 * pct / 100;
	if (grow_check && count > 0 && (unsigned long)count > limit)
		want = size * 2;
	else if (!grow_check && (count < 0 || (unsigned long)count < limit))
		want = size / 2;
	/*
	 * Skip the resize lock when a resize already changed the size
	 * (sk_rhash_buckets() reads the array inside a read section).
	 */
	if (!want || sk_rhash_buckets(ht) != size ||
	    pthread_mutex_trylock(&ht->resize_lock) != 0)
		return;
	/*
	 * Recheck under the resize lock: another resize may have run.  Only
	 * resizes change ht->tbl and they hold resize_lock: tbl is stable.
	 */
	if (ht->tbl->size == size)
		(void)resize_locked(ht, want); /* -ENOMEM: retried later */
	pthread_mutex_unlock(&ht->resize_lock);
}
