/* SPDX-License-Identifier: MIT */
/*
 * The resizable hash table's updates: insert (lock-free: a CAS onto the
 * bucket head), insert_unique, remove, replace (under the bucket lock of
 * the key's bucket).  The algorithm is in src/rhash.c, the legend of the
 * RH-* labels in src/internal/rhash.h.
 */
#define _GNU_SOURCE
#include "internal/rhash.h"

#include <errno.h>

#include "internal/cbq.h" /* SK__CB_VALGRIND, sk__cb_on_valgrind */
#include "internal/util.h"
#include "scalekit/list.h" /* SK__LIST_PUBLISH */

#ifdef SK_TESTING
/* Test knobs and hook (internal/testing.h): the testing build only. */
int sk__rhash_test_broken;
int sk__rhash_test_stale_insert;
void (*sk__rhash_test_locked_hook)(unsigned long hash);
#define RHASH_STALE_INSERT() \
	__atomic_exchange_n(&sk__rhash_test_stale_insert, 0, __ATOMIC_RELAXED)

#define RHASH_LOCKED_HOOK(h)                                  \
	do {                                                  \
		if (sk__rhash_test_locked_hook)               \
			sk__rhash_test_locked_hook(h);        \
	} while (0)
#else
#define RHASH_STALE_INSERT() 0
#define RHASH_LOCKED_HOOK(h) ((void)0)
#endif

/*
 * Enter a read section.  Registers the thread here rather than in
 * sk_rcu_read_lock(), which aborts when it runs out of memory: an update
 * returns the error instead.  Returns 0, or -ENOMEM (no section entered).
 */
static int enter_section(void)
{
	if (SK_UNLIKELY(!sk_atomic_load_relaxed(&sk_rcu__ctr)) &&
	    sk_rcu_register_thread())
		return -ENOMEM;
	sk_rcu_read_lock();
	return 0;
}

/*
 * What lock_bucket() took: the lock array and, while a resize changes it,
 * the previous lock array (RH-D1), both at the bucket of hash h.
 */
struct bucket_lock {
	struct sk_rhash_table *l, *prev;
	unsigned long h;
};

/*
 * Enter a read section and lock the bucket of hash h (RH-B1); *tp
 * receives the current array and *fp its future (or NULL).  Both stay
 * allocated until unlock_bucket(): the read section holds back the grace
 * period before a replaced array's free.  While the bit is held, no
 * other updater and no migrator changes the chains of h in *tp and *fp,
 * and *tp's future may appear (a grow begins: it takes the bits to
 * migrate) but the lock array stays: a resize that changes it waits for
 * the bits of the old one (RH-D1).  May block on the bit, never for a
 * grace period: also callable inside a read section.  Returns 0; -ENOMEM
 * when the thread could not be registered for its read sections (nothing
 * locked then).
 */
static int lock_bucket(struct sk_rhash *ht, unsigned long h,
		       struct sk_rhash_table **tp, struct sk_rhash_table **fp,
		       struct bucket_lock *bl)
{
	struct sk_rhash_table *t, *f, *l;

	if (enter_section())
		return -ENOMEM;
	bl->h = h;
	for (;;) {
		t = sk_rcu_dereference(ht->tbl);
		l = sk__rhash_lock_array(t, sk_rcu_dereference(t->future));
		/*
		 * RH-D1 acquire: set before the publication that made l the
		 * lock array, which the loads above saw.  While it is set,
		 * updaters of the previous mapping may still hold their bit
		 * of it: take that bit first (the order every updater uses).
		 */
		bl->prev = sk_atomic_load_acquire(&l->prev_lock);
		if (bl->prev)
			sk__rhash_bit_lock(bl->prev, h);
		/* No holder of a bit waits for a grace period. */
		sk__rhash_bit_lock(l, h);
		/*
		 * RH-D1: re-read the arrays after the seq_cst fetch_or; pairs
		 * with the resize's publication, full fence, then look at the
		 * bits (drain()): either this sees the new mapping, or the
		 * resize sees the bit and waits for its release.  Compare lock
		 * arrays, not their contents: no array is freed (or its
		 * address reused) while this read section runs.
		 */
		t = __atomic_load_n(&ht->tbl, __ATOMIC_SEQ_CST);
		f = __atomic_load_n(&t->future, __ATOMIC_SEQ_CST);
		if (sk__rhash_lock_array(t, f) == l) {
			bl->l = l;
			*tp = t;
			*fp = f;
			RHASH_LOCKED_HOOK(h);
			return 0;
		}
		sk__rhash_bit_unlock(l, h);
		if (bl->prev)
			sk__rhash_bit_unlock(bl->prev, h);
	}
}

/* Unlock what lock_bucket() locked and leave its read section. */
static void unlock_bucket(struct bucket_lock *bl)
{
	sk__rhash_bit_unlock(bl->l, bl->h);
	if (bl->prev)
		sk__rhash_bit_unlock(bl->prev, bl->h);
	sk_rcu_read_unlock();
}

/* The stripe that counts the updates of hash h. */
static inline struct sk_rhash_stripe *stripe_of(struct sk_rhash *ht,
						unsigned long h)
{
	return &ht->stripes[h & (ht->nstripes - 1)];
}

/*
 * Count an update on stripe s (the stripe of its hash) of a table of size
 * buckets.  Returns nonzero when a
 * batch was flushed: *count then holds ht->count after the flush.  Relaxed
 * atomics: the count is a statistic; the background resize reads it again
 * when it decides.
 */
static inline int count_update(struct sk_rhash *ht, struct sk_rhash_stripe *s,
			       unsigned long size, long d, long *count)
{
	unsigned long batch = (size >> RHASH_BATCH_SHIFT) / ht->nstripes;
	long v = sk_atomic_fetch_add_relaxed(&s->delta, d) + d;

	if ((unsigned long)(v < 0 ? -v : v) < (batch ? batch : 1))
		return 0;
	v = __atomic_exchange_n(&s->delta, 0L, __ATOMIC_RELAXED);
	*count = sk_atomic_fetch_add_relaxed(&ht->count, v) + v;
	return 1;
}

/* The first node of t's chain of h whose key is key, or NULL.  Locked. */
static struct sk_rhash_node *find_key(struct sk_rhash *ht,
				      struct sk_rhash_table *t,
				      unsigned long h, const void *key)
{
	struct sk_rhash_node *n;

	/* Dependency loads: lock-free inserts push onto the head (RH-I1). */
	for (n = sk_rcu_dereference(t->buckets[h & t->mask]);
	     sk__rhash_is_node(n); n = sk_rcu_dereference(n->next))
		if (n->hash == h && sk__rhash_key_matches(ht, key, sk__rhash_obj(ht, n)))
			return n;
	return NULL;
}

/*
 * Nonzero when node is linked in a chain of t or of an array that follows
 * it (t->future, ...): node is in the table whose array t is.  It can only
 * be in the chain of bucket h & mask of each array (h: the hash node
 * caches, which is its key's).  Walks as a lookup does, comparing nodes
 * instead of keys, inside a read section (the arrays stay allocated) or
 * under the bucket lock of h.  Exact, also while a resize moves node: a
 * lookup finds every object present for the whole lookup (RH-M1 to RH-M3,
 * RH-L1), and the caller does not remove node meanwhile (that would be a
 * race of the program's own).
 */
static int node_linked(struct sk_rhash_table *t,
		       const struct sk_rhash_node *node, unsigned long h)
{
	struct sk_rhash_node *n;

	do {
		/* Dependency loads, as lookups (RH-P1, RH-I1). */
		for (n = sk_rcu_dereference(t->buckets[h & t->mask]);
		     sk__rhash_is_node(n); n = sk_rcu_dereference(n->next))
			if (n == node)
				return 1;
		/* RH-L1: as in sk_rhash_lookup(); pairs with RH-M3. */
		sk_smp_rmb();
		t = sk_rcu_dereference(t->future);
	} while (t);
	return 0;
}

/*
 * The check against inserting a node that is in the table already (every
 * build): nonzero when node, about to be linked with hash h (its key's),
 * is in a chain of t or of its future arrays.  A node in the table caches
 * h; a node that is not (never inserted: memory not initialised; removed;
 * a copy of a node) holds anything there.  So the fast path is one load
 * and one compare, and the chain is walked only when the cached hash
 * equals h: the misuse, a node removed and inserted again with the same
 * key, a copy of a node in the table, or memory recycled from such a node.
 * A node in another table (or in this one under another key, its key
 * changed) is not found: the caller must not insert it (docs).  Plain
 * load: the only stores to node->hash are an insert's and a replace's,
 * made while node is private to their thread.  Inside a read section or
 * under the bucket lock of h (node_linked()).
 */
static inline int in_table(struct sk_rhash_table *t,
			   struct sk_rhash_node *node, unsigned long h)
{
#ifdef SK__CB_VALGRIND
	/*
	 * node->hash is read before anything initialised it (nodes need no
	 * initialisation): under valgrind mark it defined, as
	 * sk__cb_state_defined() does for a callback head.
	 */
	if (SK_UNLIKELY(sk__cb_on_valgrind))
		(void)VALGRIND_MAKE_MEM_DEFINED(&node->hash,
						sizeof(node->hash));
#endif
	if (SK_LIKELY(node->hash != h))
		return 0;
	return node_linked(t, node, h);
}

/*
 * Push node (hash and object set, not reachable yet) onto its bucket's
 * head in the newest array reachable from t, without a lock: during a
 * resize that is the future array.  Inside a read section (the arrays stay
 * allocated).  Never waits; retries only when the head changed under it.
 * stale (the testing build): ignore t->future, as an insert that loaded t
 * before the resize published it.  Returns the array that took the node.
 */
static struct sk_rhash_table *push(struct sk_rhash_table *t,
				   struct sk_rhash_node *node, int stale)
{
	struct sk_rhash_node **head, *cur;
	struct sk_rhash_table *f;

	/* Dependency: f's mask and heads as published (RH-P1). */
	while (!stale && (f = sk_rcu_dereference(t->future)) != NULL)
		t = f;
	head = &t->buckets[node->hash & t->mask];
	/*
	 * RH-I1 acquire: the chain node->next will point at.  t is the
	 * newest array this read section saw; if a resize published a future
	 * since, its migration waits for this section to end (RH-G2), so t's
	 * bucket is not migrated yet and the migrator will move the node.
	 */
	cur = __atomic_load_n(head, __ATOMIC_ACQUIRE);
	do {
		/* [priv] node is not reachable yet. */
		node->next = cur;
		/* RH-I1 [pub]: node's fields and object, then the pointer
		 * (release CAS; acquire when it fails). */
	} while (!sk__rhash_cas(head, &cur, node));
	return t;
}

/*
 * insert_unique(): under the bucket lock, which orders it against other
 * unique inserts of the same key (a plain insert of the key takes no lock).
 */
static int insert_unique(struct sk_rhash *ht, struct sk_rhash_node *node,
			 const void *key, unsigned long h)
{
	struct sk_rhash_table *t, *f, *dst;
	struct bucket_lock bl;
	unsigned long size;
	long count = 0;
	int check, err;

	err = lock_bucket(ht, h, &t, &f, &bl);
	if (err)
		return err;
	if (SK_UNLIKELY(in_table(t, node, h))) {
		unlock_bucket(&bl);
		return -EBUSY;
	}
	if ((!f || !sk__rhash_migrated(t, h & t->mask)) &&
	    find_key(ht, t, h, key)) {
		unlock_bucket(&bl);
		return -EEXIST;
	}
	if (f && find_key(ht, f, h, key)) {
		unlock_bucket(&bl);
		return -EEXIST;
	}
	node->hash = h;
	dst = push(t, node, 0);
	/* dst may be freed after unlock_bucket(): keep its size. */
	size = dst->size;
	check = count_update(ht, stripe_of(ht, h), size, 1, &count);
	unlock_bucket(&bl);
	if (check)
		sk__rhash_maybe_resize(ht, size, count, 1);
	return 0;
}

static int insert(struct sk_rhash *ht, struct sk_rhash_node *node, int unique)
{
	struct sk_rhash_table *t, *dst;
	const void *obj, *key;
	unsigned long h, size;
	long count = 0;
	int check;

	if (!ht || !node)
		return -EINVAL;
	obj = sk__rhash_obj(ht, node);
	key = sk__rhash_key(ht, obj);
	h = sk__rhash_hash_key(ht, key);
	if (unique)
		return insert_unique(ht, node, key, h);
	/* Lock-free: the read section keeps the arrays push() reads. */
	if (enter_section())
		return -ENOMEM;
	t = sk_rcu_dereference(ht->tbl);
	if (SK_UNLIKELY(in_table(t, node, h))) {
		sk_rcu_read_unlock();
		return -EBUSY;
	}
	/* [priv] node is not reachable yet. */
	node->hash = h;
	dst = push(t, node, RHASH_STALE_INSERT());
	/* dst may be freed after the section: keep its size. */
	size = dst->size;
	check = count_update(ht, stripe_of(ht, h), size, 1, &count);
	sk_rcu_read_unlock();
	if (check)
		sk__rhash_maybe_resize(ht, size, count, 1);
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
	struct sk_rhash_node **pp = &t->buckets[node->hash & t->mask], *n;

	/* Dependency loads: lock-free inserts push onto the head (RH-I1). */
	for (; sk__rhash_is_node(n = sk_rcu_dereference(*pp)); pp = &n->next)
		if (n == node)
			return pp;
	return NULL;
}

/*
 * The link to node in t or in f (NULL: no future), or NULL; *in receives
 * the array whose chain holds it.  Locked.  A migrated old bucket's head
 * is stale (RH-M3: it points into f's chain), so its chain is not
 * searched: node is in f.
 */
static struct sk_rhash_node **find_link2(struct sk_rhash_table *t,
					 struct sk_rhash_table *f,
					 struct sk_rhash_node *node,
					 struct sk_rhash_table **in)
{
	struct sk_rhash_node **pp = NULL;

	*in = t;
	if (!f || !sk__rhash_migrated(t, node->hash & t->mask))
		pp = find_link(t, node);
	if (pp || !f)
		return pp;
	*in = f;
	return find_link(f, node);
}

/*
 * node, found in f (in == f), is being unlinked or replaced by v: when
 * the head of its migrated old bucket i in t still points at it (RH-M3),
 * move that head on, so that no reader reaches node through t after the
 * grace period before its free.  Locked; no insert pushes onto a migrated
 * old head (RH-G2), so a store.
 *
 * The head of a migrated old bucket i points at a node of old bucket i
 * (hash & t->mask == i: the first node of the run moved last) or is
 * NULL, and this keeps it so.  Then only a remove or replace of the node
 * it points at can free that node, and that update looks at head i.  So
 * the head moves on to the first node of bucket i from v on, not to v
 * itself: a shrink's chain of f holds the nodes of several old buckets,
 * and a head left on a node of old bucket i' would not be moved when
 * that node goes (its remove looks only at head i'): a reader would read
 * it through head i after its free.  (A grow's chain d of f holds only
 * nodes of old bucket d & t->mask: there v is taken.)  Skipping the
 * nodes of other old buckets loses no lookup: one of a key of bucket i
 * that misses through the head goes on to f (RH-L1), which holds every
 * node of the bucket.  The nodes' next links walked here change only
 * under the bit we hold (old bucket i and f's bucket share it, RH-B1).
 * [one] when the head moves on to a node already in the chain (or to
 * NULL), [pub] (release) for a replacement.
 */
static void unlink_stale_head(struct sk_rhash_table *t,
			      struct sk_rhash_table *in,
			      struct sk_rhash_node *node,
			      struct sk_rhash_node *v)
{
	unsigned long i = node->hash & t->mask;
	struct sk_rhash_node **head = &t->buckets[i];

	if (in == t || sk_atomic_load_relaxed(head) != node ||
	    RHASH_BROKEN(SK__RHASH_BROKEN_STALE_HEAD))
		return;
	/* Dependency loads, as find_link(); stable under the lock. */
	while (sk__rhash_is_node(v) && (v->hash & t->mask) != i &&
	       !RHASH_BROKEN(SK__RHASH_BROKEN_STALE_HEAD_OTHER))
		v = sk_rcu_dereference(v->next);
	SK__LIST_PUBLISH(*head, v);
}

/*
 * Set the link pp to node (found by find_link() in t) to v [one] or [pub]
 * (v initialized before).  Locked.  Other links of a chain change only
 * under its bucket lock, but a lock-free insert may push onto a bucket
 * head: there a CAS, and if it fails node is now further down the chain,
 * behind the pushed nodes, where the link to it is stable.
 */
static void relink(struct sk_rhash_table *t, struct sk_rhash_node **pp,
		   struct sk_rhash_node *node, struct sk_rhash_node *v)
{
	struct sk_rhash_node *cur = node;

	/* RH-P1 (release CAS), as SK__LIST_PUBLISH below. */
	if (pp == &t->buckets[node->hash & t->mask]) {
		if (sk__rhash_cas(pp, &cur, v))
			return;
		pp = find_link(t, node);
	}
	SK__LIST_PUBLISH(*pp, v);
}

int sk_rhash_remove(struct sk_rhash *ht, struct sk_rhash_node *node)
{
	struct sk_rhash_table *t, *f, *in;
	struct sk_rhash_node **pp;
	struct bucket_lock bl;
	unsigned long size;
	long count = 0;
	int check, err;

	if (!ht || !node)
		return -EINVAL;
	err = lock_bucket(ht, node->hash, &t, &f, &bl);
	if (err)
		return err;
	pp = find_link2(t, f, node, &in);
	if (!pp) {
		unlock_bucket(&bl);
		return -ENOENT;
	}
	size = f ? f->size : t->size;
	/* [one] readers either still see node or skip it; node->next stays. */
	relink(in, pp, node, node->next);
	unlink_stale_head(t, in, node, node->next);
	check = count_update(ht, stripe_of(ht, node->hash), size, -1, &count);
	unlock_bucket(&bl);
	if (check)
		sk__rhash_maybe_resize(ht, size, count, 0);
	return 0;
}

int sk_rhash_replace(struct sk_rhash *ht, struct sk_rhash_node *old_node,
		     struct sk_rhash_node *new_node)
{
	struct sk_rhash_table *t, *f, *in;
	struct sk_rhash_node **pp;
	struct bucket_lock bl;
	unsigned long h;
	int err;

	if (!ht || !old_node || !new_node)
		return -EINVAL;
	h = sk__rhash_hash_key(ht, sk__rhash_key(ht, sk__rhash_obj(ht, new_node)));
	if (!sk__rhash_key_matches(ht, sk__rhash_key(ht, sk__rhash_obj(ht, new_node)),
				   sk__rhash_obj(ht, old_node)))
		return -EINVAL;
	/*
	 * Equal keys, so a node in the table caches h (in_table()): one
	 * that does not is not in the table (never inserted, its hash
	 * whatever the memory held).  Plain load, as in_table()'s.
	 */
	if (old_node->hash != h)
		return -ENOENT;
	err = lock_bucket(ht, h, &t, &f, &bl);
	if (err)
		return err;
	pp = find_link2(t, f, old_node, &in);
	if (!pp) {
		unlock_bucket(&bl);
		return -ENOENT;
	}
	if (SK_UNLIKELY(in_table(t, new_node, h))) {
		unlock_bucket(&bl);
		return -EBUSY;
	}
	/* [priv] new_node is not reachable yet. */
	new_node->hash = h;
	new_node->next = old_node->next;
	/* RH-P1 [pub]: the new object, then the pointer to it; readers
	 * see the old or the new one. */
	relink(in, pp, old_node, new_node);
	unlink_stale_head(t, in, old_node, new_node);
	unlock_bucket(&bl);
	return 0;
}
