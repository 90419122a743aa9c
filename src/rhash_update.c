/* SPDX-License-Identifier: MIT */
/*
 * The resizable hash table's updates: insert, remove, replace, under the
 * stripe lock of the key's bucket.  The algorithm and the legend of the
 * RH-xx labels are in src/rhash.c.
 */
#define _GNU_SOURCE
#include "internal/rhash.h"

#include <errno.h>

#include "internal/util.h"
#include "scalekit/list.h" /* checker hooks, SK_LIST__PUBLISH */

#ifdef SK_RCU_CHECKER
/* Test knob (scalekit/rhash.h): only in the checker build. */
int sk_rhash__test_broken;
#endif

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
		s = sk__rhash_stripe_of(ht, t, sk_rcu_dereference(t->future), h);
		/*
		 * No holder of a stripe lock waits for a grace period, so
		 * blocking here inside the read section is fine.
		 */
		sk__rhash_stripe_lock(s);
		/*
		 * RH-U1: re-read under the lock: a resize that changed the stripe
		 * mapping did so holding every stripe (the mutex orders its
		 * writes before these loads), and one that published f or
		 * switched ht->tbl without them left the mapping as it was.
		 * Compare stripes, not array pointers (ABA of a reused
		 * address is harmless then).
		 */
		t = sk_rcu_dereference(ht->tbl);
		f = sk_rcu_dereference(t->future);
		if (sk__rhash_stripe_of(ht, t, f, h) == s) {
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
		if (n->hash == h && sk__rhash_key_matches(ht, key, sk__rhash_obj(ht, n)))
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
	obj = sk__rhash_obj(ht, node);
	key = sk__rhash_key(ht, obj);
	h = sk__rhash_hash_key(ht, key);
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
	/* RH-P1 [pub]: node's fields and object, then the pointer. */
	SK_LIST__PUBLISH(*head, node);
	check = count_update(ht, s, size, 1, &count);
	unlock_bucket(s);
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
	SK_LIST__PUBLISH(*pp, node->next);
	check = count_update(ht, s, size, -1, &count);
	unlock_bucket(s);
	if (check)
		sk__rhash_maybe_resize(ht, size, count, 0);
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
	h = sk__rhash_hash_key(ht, sk__rhash_key(ht, sk__rhash_obj(ht, new_node)));
	if (h != old_node->hash ||
	    !sk__rhash_key_matches(ht, sk__rhash_key(ht, sk__rhash_obj(ht, new_node)),
			 sk__rhash_obj(ht, old_node)))
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
	/* RH-P1 [pub]: the new object, then the pointer to it; readers
	 * see the old or the new one. */
	SK_LIST__PUBLISH(*pp, new_node);
	unlock_bucket(s);
	return 0;
}
