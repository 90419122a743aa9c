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
 * buckets b with (b & (nstripes - 1)) == s of the current table.
 */
#define _GNU_SOURCE
#include "scalekit/rhash.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/list.h" /* checker hooks, SK__PUBLISH */
#include "internal/util.h"

#define RHASH_MAX_STRIPES 256UL

/* A stripe looks at the load factor once per this many of its updates. */
#define RHASH_CHECK_EVERY 32u

int sk_rhash__test_skip_unzip_gp;

struct sk_rhash_table {
	unsigned long size;		     /* buckets, a power of two */
	unsigned long mask;		     /* size - 1 */
	struct sk_rhash_node *buckets[]; /* chain heads (RCU) */
};

struct sk_rhash_stripe {
	pthread_mutex_t lock;
	unsigned long count; /* objects in this stripe's buckets */
	unsigned int ops;    /* updates since the last load-factor check */
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

unsigned long sk_rhash_hash(const void *key, size_t len, unsigned long seed)
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

static inline void *obj_of(struct sk_rhash *ht, struct sk_rhash_node *n)
{
	return (char *)n - ht->p.head_offset;
}

static inline const void *key_of(struct sk_rhash *ht, const void *obj)
{
	return (const char *)obj + ht->p.key_offset;
}

static inline unsigned long hash_key(struct sk_rhash *ht, const void *key)
{
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
		ht->stripes[i].count = 0;
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

void *sk_rhash_lookup(struct sk_rhash *ht, const void *key)
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
	unsigned long i, sum = 0;

	for (i = 0; i < ht->nstripes; i++)
		sum += sk_atomic_load_relaxed(&ht->stripes[i].count);
	return sum;
}

unsigned long sk_rhash_buckets(struct sk_rhash *ht)
{
	return sk_rcu_dereference(ht->tbl)->size;
}

/* ---- updates ---------------------------------------------------------------- */

/*
 * Lock the stripe of hash h in the current table and return the table.
 * A resize holds every stripe lock, so the table cannot change while we
 * hold one; recheck after locking.
 */
static struct sk_rhash_table *lock_bucket(struct sk_rhash *ht, unsigned long h,
					  struct sk_rhash_stripe **sp)
{
	for (;;) {
		struct sk_rhash_table *t = sk_atomic_load_acquire(&ht->tbl);
		struct sk_rhash_stripe *s =
			&ht->stripes[(h & t->mask) & (ht->nstripes - 1)];

		pthread_mutex_lock(&s->lock);
		if (sk_atomic_load_relaxed(&ht->tbl) == t) {
			*sp = s;
			return t;
		}
		pthread_mutex_unlock(&s->lock);
	}
}

static void maybe_resize(struct sk_rhash *ht, int grow);

/* Count an update of stripe s (locked); nonzero when the load is due a check. */
static inline int count_update(struct sk_rhash_stripe *s, long delta)
{
	sk_atomic_store_relaxed(&s->count, s->count + (unsigned long)delta);
	return ++s->ops % RHASH_CHECK_EVERY == 0;
}

static int insert(struct sk_rhash *ht, struct sk_rhash_node *node, int unique)
{
	const void *obj, *key;
	struct sk_rhash_table *t;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **head, *n;
	unsigned long h;
	int check;

	if (!ht || !node)
		return -EINVAL;
	obj = obj_of(ht, node);
	key = key_of(ht, obj);
	h = hash_key(ht, key);
	t = lock_bucket(ht, h, &s);
	head = &t->buckets[h & t->mask];
	if (unique) {
		for (n = *head; n; n = n->next) {
			if (n->hash == h && key_matches(ht, key, obj_of(ht, n))) {
				pthread_mutex_unlock(&s->lock);
				return -EEXIST;
			}
		}
	}
	/* [priv] node is not reachable yet. */
	node->hash = h;
	node->next = *head;
	/* [pub] node's fields and object, then the pointer to node. */
	SK__PUBLISH(*head, node);
	check = count_update(s, 1);
	pthread_mutex_unlock(&s->lock);
	if (check)
		maybe_resize(ht, 1);
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
	int check;

	if (!ht || !node)
		return -EINVAL;
	t = lock_bucket(ht, node->hash, &s);
	pp = find_link(t, node);
	if (!pp) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	/* [one] readers either still see node or skip it; node->next stays. */
	SK__PUBLISH(*pp, node->next);
	check = count_update(s, -1);
	pthread_mutex_unlock(&s->lock);
	if (check)
		maybe_resize(ht, 0);
	return 0;
}

int sk_rhash_replace(struct sk_rhash *ht, struct sk_rhash_node *old_node,
		     struct sk_rhash_node *new_node)
{
	struct sk_rhash_table *t;
	struct sk_rhash_stripe *s;
	struct sk_rhash_node **pp;
	unsigned long h;

	if (!ht || !old_node || !new_node)
		return -EINVAL;
	h = hash_key(ht, key_of(ht, obj_of(ht, new_node)));
	if (h != old_node->hash ||
	    !key_matches(ht, key_of(ht, obj_of(ht, new_node)),
			 obj_of(ht, old_node)))
		return -EINVAL;
	t = lock_bucket(ht, h, &s);
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

static int resize_locked(struct sk_rhash *ht, unsigned long nbuckets)
{
	int err = 0;

	lock_all(ht);
	while (!err && ht->tbl->size > nbuckets)
		err = shrink(ht);
	while (!err && ht->tbl->size < nbuckets)
		err = grow(ht);
	unlock_all(ht);
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
 * Automatic resizing.  A stripe checks the load factor once every
 * RHASH_CHECK_EVERY of its updates (count_update()) and then sums all
 * stripes, so the common case costs an increment and a compare.
 */
static void maybe_resize(struct sk_rhash *ht, int grow_check)
{
	unsigned long size, limit, count, want = 0;
	unsigned int pct;

	if (!ht->p.automatic_resize || sk_rcu_read_ongoing())
		return;
	size = sk_atomic_load_acquire(&ht->tbl)->size;
	pct = grow_check ? ht->p.grow_above_pct : ht->p.shrink_below_pct;
	if (grow_check ? size >= ht->p.max_buckets
		       : size <= ht->p.min_buckets || !pct)
		return;
	limit = size / 100 * pct + size % 100 * pct / 100;
	count = sk_rhash_count(ht);
	if (grow_check && count > limit)
		want = size * 2;
	else if (!grow_check && count < limit)
		want = size / 2;
	if (!want || pthread_mutex_trylock(&ht->resize_lock) != 0)
		return;
	/* Recheck under the resize lock: another resize may have run. */
	if (ht->tbl->size == size)
		(void)resize_locked(ht, want); /* -ENOMEM: retried later */
	pthread_mutex_unlock(&ht->resize_lock);
}
