/* SPDX-License-Identifier: MIT */
/*
 * test_list.c - scalekit/list.h: RCU lists and hlists.
 *
 * What is proven, one function each:
 *   - every list function and iterator macro does what its comment says:
 *     SK_LIST_HEAD / sk_list_init / sk_list_empty, add / add_tail at the
 *     head, the tail and in the middle (next and prev links consistent),
 *     del (next kept for readers standing on the entry, prev poisoned),
 *     replace (old's prev poisoned, old's next kept), splice_init_rcu (sync
 *     called once, not at all for an empty source; the source left empty),
 *     sk_list_for_each_entry_rcu, sk_list_first_or_null_rcu,
 *     sk_list_next_or_null_rcu (the readers' macros also on a const
 *     head), sk_list_for_each_entry(_safe),
 *     sk_list_entry / sk_container_of;
 *   - the same for hlists: init, node_init, unhashed (fresh, added,
 *     deleted), empty, add_head / add_before / add_behind (also at the
 *     tail), del (pprev poisoned, next kept), replace, first/next_rcu and
 *     sk_hlist_for_each_entry_rcu;
 *   - a concurrent stress: readers walk a sorted list under
 *     sk_rcu_read_lock (with the iterator macro, or first/next_or_null),
 *     checking strict order, that no entry they reach is poisoned, that
 *     payloads are intact, that walks end, and that every key the writers
 *     did not touch during the walk is seen; two writers (one lock) add,
 *     delete and replace, and free after sk_synchronize_rcu(), with
 *     SK_FREE_RCU() or with sk_call_rcu(); an hlist variant too;
 *   - the broken twin (freed at once: poisoned and quarantined, so that
 *     ASan stays quiet) MUST be caught by the same readers.
 */
#include "scalekit/list.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test.h"

struct item {
	int key;
	unsigned long payload; /* key * 1000003 + gen, set before publication */
	unsigned long gen;
	unsigned long poison; /* 0 live; POISON once freed (atomic) */
	struct sk_list_head node;
	struct sk_hlist_node hnode;
	struct sk_rcu_head rcu;
	struct item *qnext; /* quarantine (broken twin) */
};

#define POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL)

static void item_init(struct item *it, int key)
{
	memset(it, 0, sizeof(*it));
	it->key = key;
	it->payload = (unsigned long)key * 1000003UL;
}

/* Keys of list h in order; checks next/prev consistency. */
static int keys_of(struct sk_list_head *h, int *out, int max)
{
	struct item *it;
	struct sk_list_head *prev = h;
	int n = 0;

	sk_list_for_each_entry(it, h, node) {
		SK_CHECK(it->node.prev == prev);
		prev = &it->node;
		if (n < max)
			out[n] = it->key;
		n++;
	}
	SK_CHECK(h->prev == prev);
	return n;
}

static void expect_keys(struct sk_list_head *h, const int *want, int n)
{
	int got[32];

	sk_test_check_ints(got, keys_of(h, got, 32), want, n);
}

/* ---- list unit tests ---------------------------------------------------- */

static SK_LIST_HEAD(static_head);

static void list_init_and_empty(void)
{
	struct sk_list_head h;
	struct item a;

	SK_CHECK(sk_list_empty(&static_head));
	SK_CHECK(static_head.next == &static_head);
	SK_CHECK(static_head.prev == &static_head);
	sk_list_init(&h);
	SK_CHECK(sk_list_empty(&h));
	item_init(&a, 1);
	sk_list_add_rcu(&a.node, &h);
	SK_CHECK(!sk_list_empty(&h));
	sk_list_del_rcu(&a.node);
	SK_CHECK(sk_list_empty(&h));
	SK_CHECK(sk_list_entry(&a.node, struct item, node) == &a);
	SK_CHECK(sk_container_of(&a.hnode, struct item, hnode) == &a);
}

static void list_add_and_add_tail(void)
{
	struct sk_list_head h;
	struct item it[5];
	int w1[] = { 1, 0 }, w2[] = { 1, 0, 2 }, w3[] = { 1, 3, 0, 2 },
	    w4[] = { 1, 3, 0, 4, 2 };
	int i;

	sk_list_init(&h);
	for (i = 0; i < 5; i++)
		item_init(&it[i], i);
	sk_list_add_rcu(&it[0].node, &h);	   /* at the head */
	sk_list_add_rcu(&it[1].node, &h);	   /* before 0 */
	expect_keys(&h, w1, 2);
	sk_list_add_tail_rcu(&it[2].node, &h);	   /* at the tail */
	expect_keys(&h, w2, 3);
	sk_list_add_rcu(&it[3].node, &it[1].node); /* after 1 */
	expect_keys(&h, w3, 4);
	sk_list_add_tail_rcu(&it[4].node, &it[2].node); /* before 2 */
	expect_keys(&h, w4, 5);
}

static void list_del_poisons_prev_keeps_next(void)
{
	struct sk_list_head h;
	struct item it[4];
	int w1[] = { 0, 2, 3 }, w2[] = { 2, 3 }, w3[] = { 2 };
	int i;

	sk_list_init(&h);
	for (i = 0; i < 4; i++) {
		item_init(&it[i], i);
		sk_list_add_tail_rcu(&it[i].node, &h);
	}
	sk_list_del_rcu(&it[1].node); /* middle */
	expect_keys(&h, w1, 3);
	SK_CHECK(it[1].node.prev == SK_LIST_POISON_PREV);
	SK_CHECK(it[1].node.next == &it[2].node); /* a reader on it goes on */
	sk_list_del_rcu(&it[0].node); /* first */
	expect_keys(&h, w2, 2);
	SK_CHECK(it[0].node.prev == SK_LIST_POISON_PREV);
	sk_list_del_rcu(&it[3].node); /* last */
	expect_keys(&h, w3, 1);
	SK_CHECK(it[3].node.next == &h);
	SK_CHECK(it[3].node.prev == SK_LIST_POISON_PREV);
	sk_list_del_rcu(&it[2].node); /* only */
	SK_CHECK(sk_list_empty(&h));
	SK_CHECK(h.prev == &h);
}

static void list_replace(void)
{
	struct sk_list_head h;
	struct item it[3], n0, n1, n2;
	int w[] = { 10, 11, 12 };
	int i;

	sk_list_init(&h);
	for (i = 0; i < 3; i++) {
		item_init(&it[i], i);
		sk_list_add_tail_rcu(&it[i].node, &h);
	}
	item_init(&n0, 10);
	item_init(&n1, 11);
	item_init(&n2, 12);
	sk_list_replace_rcu(&it[1].node, &n1.node);
	sk_list_replace_rcu(&it[0].node, &n0.node);
	sk_list_replace_rcu(&it[2].node, &n2.node);
	expect_keys(&h, w, 3);
	for (i = 0; i < 3; i++)
		SK_CHECK(it[i].node.prev == SK_LIST_POISON_PREV);
	SK_CHECK(it[1].node.next == &n2.node || it[1].node.next == &it[2].node);
	SK_CHECK(it[2].node.next == &h);
}

static int sync_calls;

static void counting_sync(void)
{
	sync_calls++;
	sk_synchronize_rcu();
}

static void list_splice_init_rcu_cases(void)
{
	struct sk_list_head h, src;
	struct item a[3], b[3];
	int w1[] = { 0, 1, 2 }, w2[] = { 0, 10, 11, 12, 1, 2 },
	    w3[] = { 0, 10, 11, 12, 1, 2, 20 };
	int i;

	sk_list_init(&h);
	sk_list_init(&src);
	for (i = 0; i < 3; i++) {
		item_init(&a[i], i);
		sk_list_add_tail_rcu(&a[i].node, &h);
		item_init(&b[i], 10 + i);
		sk_list_add_tail_rcu(&b[i].node, &src);
	}
	/* Empty source: nothing moves, no grace period. */
	{
		struct sk_list_head empty;

		sk_list_init(&empty);
		sync_calls = 0;
		sk_list_splice_init_rcu(&empty, &h, counting_sync);
		SK_CHECK_EQ(sync_calls, 0);
		expect_keys(&h, w1, 3);
	}
	/* Into the middle (after a[0]). */
	sync_calls = 0;
	sk_list_splice_init_rcu(&src, &a[0].node, counting_sync);
	SK_CHECK_EQ(sync_calls, 1);
	expect_keys(&h, w2, 6);
	SK_CHECK(sk_list_empty(&src));
	SK_CHECK(src.prev == &src);
	/* At the tail: the last entry is head->prev. */
	{
		struct item c;

		item_init(&c, 20);
		sk_list_add_rcu(&c.node, &src);
		sk_list_splice_init_rcu(&src, h.prev, counting_sync);
		SK_CHECK_EQ(sync_calls, 2);
		expect_keys(&h, w3, 7);
		SK_CHECK(sk_list_empty(&src));
		sk_list_del_rcu(&c.node);
	}
}

/*
 * A reader that is handed the list read-only: every reader macro takes a
 * const head (sk_list_empty() does, and sk_list_for_each_entry_rcu()
 * always did).  Sums the keys three ways; compiled with -Werror, a macro
 * that drops the const fails the build.
 */
static int const_reader_sum(const struct sk_list_head *h)
{
	const struct item *pos;
	int a = 0, b = 0, c = 0;

	sk_list_for_each_entry_rcu(pos, h, node)
		a += pos->key;
	for (pos = sk_list_first_or_null_rcu(h, struct item, node); pos;
	     pos = sk_list_next_or_null_rcu(h, &pos->node, struct item, node))
		b += pos->key;
	if (!sk_list_empty(h))
		c = a;
	SK_CHECK_EQ(a, b);
	SK_CHECK_EQ(a, c);
	return a;
}

static void list_iterators(void)
{
	struct sk_list_head h;
	struct item it[5], *pos, *n;
	int i, k;

	sk_list_init(&h);
	sk_rcu_read_lock();
	SK_CHECK(sk_list_first_or_null_rcu(&h, struct item, node) == NULL);
	k = 0;
	sk_list_for_each_entry_rcu(pos, &h, node)
		k++;
	SK_CHECK_EQ(k, 0);
	sk_rcu_read_unlock();
	for (i = 0; i < 5; i++) {
		item_init(&it[i], i);
		sk_list_add_tail_rcu(&it[i].node, &h);
	}
	sk_rcu_read_lock();
	k = 0;
	sk_list_for_each_entry_rcu(pos, &h, node)
		SK_CHECK_EQ(pos->key, k++);
	SK_CHECK_EQ(k, 5);
	pos = sk_list_first_or_null_rcu(&h, struct item, node);
	SK_CHECK(pos == &it[0]);
	for (k = 1; k < 5; k++) {
		pos = sk_list_next_or_null_rcu(&h, &pos->node, struct item, node);
		SK_CHECK(pos == &it[k]);
	}
	SK_CHECK(sk_list_next_or_null_rcu(&h, &pos->node, struct item, node) ==
		 NULL);
	SK_CHECK_EQ(const_reader_sum(&h), 0 + 1 + 2 + 3 + 4);
	sk_rcu_read_unlock();
	k = 0;
	sk_list_for_each_entry(pos, &h, node)
		SK_CHECK_EQ(pos->key, k++);
	SK_CHECK_EQ(k, 5);
	/* _safe: delete every other entry while iterating. */
	k = 0;
	sk_list_for_each_entry_safe(pos, n, &h, node) {
		if (pos->key % 2 == 0)
			sk_list_del_rcu(&pos->node);
		k++;
	}
	SK_CHECK_EQ(k, 5);
	{
		int w[] = { 1, 3 };

		expect_keys(&h, w, 2);
	}
}

/* ---- hlist unit tests ---------------------------------------------------- */

static int hkeys(struct sk_hlist_head *h, int *out, int max)
{
	struct sk_hlist_node *n, **pp = &h->first;
	int k = 0;

	for (n = h->first; n; n = n->next) {
		SK_CHECK(n->pprev == pp);
		pp = &n->next;
		if (k < max)
			out[k] = sk_hlist_entry(n, struct item, hnode)->key;
		k++;
	}
	return k;
}

static void expect_hkeys(struct sk_hlist_head *h, const int *want, int n)
{
	int got[32];

	sk_test_check_ints(got, hkeys(h, got, 32), want, n);
}

static void hlist_basics(void)
{
	struct sk_hlist_head h = SK_HLIST_HEAD_INIT, h2;
	struct item it[6], r;
	struct item *pos;
	int w1[] = { 1, 0 }, w2[] = { 1, 2, 0 }, w3[] = { 3, 1, 2, 0 },
	    w4[] = { 3, 1, 2, 0, 4 }, w5[] = { 3, 2, 0, 4 }, w6[] = { 3, 2, 9, 4 };
	int i, k;

	SK_CHECK(sk_hlist_empty(&h));
	sk_hlist_init_head(&h2);
	SK_CHECK(sk_hlist_empty(&h2));
	for (i = 0; i < 6; i++) {
		item_init(&it[i], i);
		sk_hlist_node_init(&it[i].hnode);
		SK_CHECK(sk_hlist_unhashed(&it[i].hnode));
	}
	sk_hlist_add_head_rcu(&it[0].hnode, &h);
	SK_CHECK(!sk_hlist_empty(&h));
	SK_CHECK(!sk_hlist_unhashed(&it[0].hnode));
	sk_hlist_add_head_rcu(&it[1].hnode, &h);
	expect_hkeys(&h, w1, 2);
	sk_hlist_add_before_rcu(&it[2].hnode, &it[0].hnode);
	expect_hkeys(&h, w2, 3);
	sk_hlist_add_before_rcu(&it[3].hnode, &it[1].hnode); /* before first */
	expect_hkeys(&h, w3, 4);
	sk_hlist_add_behind_rcu(&it[4].hnode, &it[0].hnode); /* at the tail */
	expect_hkeys(&h, w4, 5);
	SK_CHECK(it[4].hnode.next == NULL);
	sk_hlist_add_behind_rcu(&it[5].hnode, &it[3].hnode); /* middle */
	sk_hlist_del_rcu(&it[5].hnode);
	SK_CHECK(sk_hlist_unhashed(&it[5].hnode));
	SK_CHECK(it[5].hnode.pprev == (struct sk_hlist_node **)SK_HLIST_POISON_PPREV);
	SK_CHECK(it[5].hnode.next == &it[1].hnode); /* kept for readers */
	expect_hkeys(&h, w4, 5);
	sk_hlist_del_rcu(&it[1].hnode);
	expect_hkeys(&h, w5, 4);
	item_init(&r, 9);
	sk_hlist_replace_rcu(&it[0].hnode, &r.hnode);
	SK_CHECK(sk_hlist_unhashed(&it[0].hnode));
	SK_CHECK(it[0].hnode.next == &it[4].hnode);
	expect_hkeys(&h, w6, 4);

	sk_rcu_read_lock();
	SK_CHECK(sk_hlist_first_rcu(&h) == &it[3].hnode);
	SK_CHECK(sk_hlist_next_rcu(&it[3].hnode) == &it[2].hnode);
	SK_CHECK(sk_hlist_next_rcu(&it[4].hnode) == NULL);
	k = 0;
	sk_hlist_for_each_entry_rcu(pos, &h, hnode)
		SK_CHECK_EQ(pos->key, w6[k++]);
	SK_CHECK_EQ(k, 4);
	k = 0;
	sk_hlist_for_each_entry_rcu(pos, &h2, hnode)
		k++;
	SK_CHECK_EQ(k, 0);
	sk_rcu_read_unlock();
	/* Delete down to empty: first, then the last. */
	sk_hlist_del_rcu(&it[3].hnode);
	sk_hlist_del_rcu(&it[4].hnode);
	sk_hlist_del_rcu(&r.hnode);
	sk_hlist_del_rcu(&it[2].hnode);
	SK_CHECK(sk_hlist_empty(&h));
}

/* ---- concurrent stress ------------------------------------------------- */

#define NKEYS 128

struct stress {
	struct sk_list_head list;	/* sorted by key */
	struct sk_hlist_head hlist;	/* unsorted (hlist mode) */
	pthread_mutex_t lock;		/* the updaters' lock */
	struct item *live[NKEYS];	/* guarded by lock */
	unsigned long seq[NKEYS];	/* odd while a writer changes key */
	int present[NKEYS];		/* valid while seq even */
	int stop;
	int broken;			/* free without a grace period */
	int hlist_mode;
	unsigned long updates;		/* per writer */
	uint64_t seed;
	/* results (atomic adds) */
	unsigned long walks, poisoned, corrupt, unordered, missing, ghosts,
		runaway, entries_seen;
};

static void poison_free_cb(struct sk_rcu_head *h)
{
	struct item *it = sk_container_of(h, struct item, rcu);

	__atomic_store_n(&it->poison, POISON, __ATOMIC_RELAXED);
	free(it);
}

/* One walk inside a read section: returns the failures it found. */
static void reader_walk(struct stress *s, uint64_t *rng, unsigned long *s1,
			int *p, unsigned char *seen)
{
	unsigned long n = 0, k, fails = 0;
	int last = -1, mode = (int)(sk_test_rand(rng) % 2);
	struct item *it;

	memset(seen, 0, NKEYS);
	sk_rcu_read_lock();
	for (k = 0; k < NKEYS; k++) {
		s1[k] = __atomic_load_n(&s->seq[k], __ATOMIC_ACQUIRE);
		p[k] = __atomic_load_n(&s->present[k], __ATOMIC_RELAXED);
	}
#define VISIT(it)                                                         \
	do {                                                              \
		if (__atomic_load_n(&(it)->poison, __ATOMIC_RELAXED)) {   \
			__atomic_fetch_add(&s->poisoned, 1, __ATOMIC_RELAXED); \
			fails++;                                          \
		}                                                         \
		if ((it)->key < 0 || (it)->key >= NKEYS ||                \
		    (it)->payload != (unsigned long)(it)->key * 1000003UL) { \
			__atomic_fetch_add(&s->corrupt, 1, __ATOMIC_RELAXED); \
			fails++;                                          \
			goto out;                                         \
		}                                                         \
		if (!s->hlist_mode && (it)->key <= last) {                \
			__atomic_fetch_add(&s->unordered, 1, __ATOMIC_RELAXED); \
			fails++;                                          \
		}                                                         \
		last = (it)->key;                                         \
		seen[(it)->key]++;                                        \
		if (++n > 2 * NKEYS) {                                    \
			__atomic_fetch_add(&s->runaway, 1, __ATOMIC_RELAXED); \
			fails++;                                          \
			goto out;                                         \
		}                                                         \
		/* Linger now and then: a too-early free shows up here. */ \
		if ((n & 15) == 1) {                                      \
			int spin_;                                        \
			for (spin_ = 0; spin_ < 200; spin_++)             \
				sk_cpu_relax();                           \
			if (__atomic_load_n(&(it)->poison, __ATOMIC_RELAXED)) { \
				__atomic_fetch_add(&s->poisoned, 1,       \
						   __ATOMIC_RELAXED);     \
				fails++;                                  \
			}                                                 \
		}                                                         \
	} while (0)
	if (s->hlist_mode) {
		sk_hlist_for_each_entry_rcu(it, &s->hlist, hnode)
			VISIT(it);
	} else if (mode == 0) {
		sk_list_for_each_entry_rcu(it, &s->list, node)
			VISIT(it);
	} else {
		for (it = sk_list_first_or_null_rcu(&s->list, struct item, node);
		     it; it = sk_list_next_or_null_rcu(&s->list, &it->node,
						       struct item, node))
			VISIT(it);
	}
#undef VISIT
	/* The walk's loads before the second read of the counts. */
	sk_smp_rmb();
	for (k = 0; k < NKEYS; k++) {
		unsigned long s2 = __atomic_load_n(&s->seq[k], __ATOMIC_RELAXED);

		if (s1[k] != s2 || (s1[k] & 1))
			continue;
		if (p[k] && seen[k] != 1) {
			__atomic_fetch_add(&s->missing, 1, __ATOMIC_RELAXED);
			fails++;
		} else if (!p[k] && seen[k]) {
			__atomic_fetch_add(&s->ghosts, 1, __ATOMIC_RELAXED);
			fails++;
		}
	}
out:
	sk_rcu_read_unlock();
	__atomic_fetch_add(&s->walks, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->entries_seen, n, __ATOMIC_RELAXED);
	if (fails && s->broken)
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
}

static struct stress *the_stress;

static void *reader_thread(void *arg)
{
	struct stress *s = the_stress;
	uint64_t rng = s->seed + (uint64_t)(uintptr_t)arg * 7919;
	unsigned long s1[NKEYS];
	int p[NKEYS];
	unsigned char seen[NKEYS];

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
		reader_walk(s, &rng, s1, p, seen);
	return NULL;
}

static void seq_begin(struct stress *s, int k)
{
	__atomic_store_n(&s->seq[k], s->seq[k] + 1, __ATOMIC_RELAXED);
}

static void seq_end(struct stress *s, int k, int present)
{
	__atomic_store_n(&s->present[k], present, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq[k], s->seq[k] + 1, __ATOMIC_RELEASE);
}

/* A new live item for key k, of generation gen. */
static struct item *item_new(int k, unsigned long gen)
{
	struct item *n = (struct item *)malloc(sizeof(*n));

	if (!n)
		abort();
	item_init(n, k);
	n->gen = gen;
	return n;
}

/* Insert n at its sorted position (list) or at the head (hlist). */
static void item_link(struct stress *s, struct item *n)
{
	struct sk_list_head *at = &s->list;
	struct item *pos;

	if (s->hlist_mode) {
		sk_hlist_add_head_rcu(&n->hnode, &s->hlist);
		return;
	}
	/* Sorted position: before the first larger. */
	sk_list_for_each_entry(pos, &s->list, node)
		if (pos->key > n->key) {
			at = &pos->node;
			break;
		}
	sk_list_add_tail_rcu(&n->node, at);
}

/*
 * One update of key k under the writers' lock: insert when absent, else
 * replace (op 0) or delete.  Returns the item it unlinked, or NULL.
 */
static struct item *writer_update(struct stress *s, int k, int op)
{
	struct item *old;

	pthread_mutex_lock(&s->lock);
	old = s->live[k];
	seq_begin(s, k);
	if (!old) {
		s->live[k] = item_new(k, 0);
		item_link(s, s->live[k]);
	} else if (op == 0) {
		s->live[k] = item_new(k, old->gen + 1);
		if (s->hlist_mode)
			sk_hlist_replace_rcu(&old->hnode, &s->live[k]->hnode);
		else
			sk_list_replace_rcu(&old->node, &s->live[k]->node);
	} else {
		if (s->hlist_mode)
			sk_hlist_del_rcu(&old->hnode);
		else
			sk_list_del_rcu(&old->node);
		s->live[k] = NULL;
	}
	seq_end(s, k, s->live[k] != NULL);
	if (s->live[k] == old)
		old = NULL; /* not unlinked */
	pthread_mutex_unlock(&s->lock);
	return old;
}

/* Free a chain of items linked by qnext. */
static void free_chain(struct item *x)
{
	while (x) {
		struct item *next = x->qnext;

		free(x);
		x = next;
	}
}

/* What a writer has unlinked and not yet freed. */
struct writer_bin {
	struct item *batch[8];
	int nbatch;
	struct item *quarantine, *q_old; /* broken mode */
};

/*
 * Broken mode: poison at once, free two rounds of 64 later, so readers
 * that still hold an item read poison (the test must see it).
 */
static void dispose_broken(struct writer_bin *w, struct item *old,
			   unsigned long i)
{
	__atomic_store_n(&old->poison, POISON, __ATOMIC_RELAXED);
	old->qnext = w->quarantine;
	w->quarantine = old;
	if (i % 64 == 63) {
		sk_synchronize_rcu();
		free_chain(w->q_old);
		w->q_old = w->quarantine;
		w->quarantine = NULL;
	}
}

/* Dispose of old after a grace period, one of three ways at random. */
static void dispose(struct writer_bin *w, struct item *old, int how)
{
	if (how == 0) {
		w->batch[w->nbatch++] = old;
		if (w->nbatch == 8) {
			/* Poison after the grace period, then free. */
			sk_synchronize_rcu();
			while (w->nbatch) {
				struct item *x = w->batch[--w->nbatch];

				__atomic_store_n(&x->poison, POISON,
						 __ATOMIC_RELAXED);
				free(x);
			}
		}
	} else if (how == 1) {
		if (SK_FREE_RCU(old, rcu))
			abort();
	} else {
		if (sk_call_rcu(&old->rcu, poison_free_cb))
			abort();
	}
}

static void *writer_thread(void *arg)
{
	struct stress *s = the_stress;
	uint64_t rng = s->seed * 31 + (uint64_t)(uintptr_t)arg;
	struct writer_bin w = { .nbatch = 0 };
	unsigned long i;

	for (i = 0; i < s->updates && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED);
	     i++) {
		int k = (int)(sk_test_rand(&rng) % NKEYS);
		int op = (int)(sk_test_rand(&rng) % 3);
		struct item *old = writer_update(s, k, op);

		if (!old)
			continue;
		if (s->broken)
			dispose_broken(&w, old, i);
		else
			dispose(&w, old, (int)(sk_test_rand(&rng) % 3));
	}
	sk_synchronize_rcu();
	while (w.nbatch)
		free(w.batch[--w.nbatch]);
	free_chain(w.q_old);
	free_chain(w.quarantine);
	return NULL;
}

static void run_stress(struct stress *s, int readers, int writers)
{
	pthread_t tr[4], tw[2];
	int i, k, left = 0;

	sk_list_init(&s->list);
	sk_hlist_init_head(&s->hlist);
	pthread_mutex_init(&s->lock, NULL);
	the_stress = s;
	for (i = 0; i < writers; i++)
		pthread_create(&tw[i], NULL, writer_thread, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < readers; i++)
		pthread_create(&tr[i], NULL, reader_thread, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < writers; i++)
		pthread_join(tw[i], NULL);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < readers; i++)
		pthread_join(tr[i], NULL);
	sk_rcu_barrier();
	fprintf(stderr,
		"  %s%s: %lu walks (%lu entries); failures: %lu poisoned, %lu "
		"corrupt, %lu out of order, %lu missing, %lu ghosts, %lu runaway\n",
		s->hlist_mode ? "hlist" : "list", s->broken ? " BROKEN" : "",
		s->walks, s->entries_seen, s->poisoned, s->corrupt,
		s->unordered, s->missing, s->ghosts, s->runaway);
	/* The final contents equal the model. */
	if (!s->hlist_mode) {
		struct item *it, *n;
		int last = -1;

		sk_list_for_each_entry_safe(it, n, &s->list, node) {
			SK_CHECK(it->key > last);
			SK_CHECK(s->live[it->key] == it);
			last = it->key;
			left++;
			sk_list_del_rcu(&it->node);
			free(it);
		}
	} else {
		struct sk_hlist_node *p = s->hlist.first, *nx;

		for (; p; p = nx) {
			struct item *it = sk_hlist_entry(p, struct item, hnode);

			nx = p->next;
			SK_CHECK(s->live[it->key] == it);
			left++;
			free(it);
		}
	}
	for (k = 0; k < NKEYS; k++)
		left -= s->live[k] != NULL;
	SK_CHECK_EQ(left, 0);
	pthread_mutex_destroy(&s->lock);
}

static void stress_list(void)
{
	struct stress *s = (struct stress *)calloc(1, sizeof(*s));

	/* 400,000 updates per writer (about 3 s here); torture_list
	 * (tests/torture.cmake) runs the same kind of stress by time. */
	s->updates = 400000 / sk_test_slow();
	s->seed = sk_t_seed;
	run_stress(s, 2, 2);
	SK_CHECK_EQ(s->poisoned + s->corrupt + s->unordered + s->missing +
			    s->ghosts + s->runaway,
		    0);
	SK_CHECK_GT(s->walks, 0);
	free(s);
}

static void stress_hlist(void)
{
	struct stress *s = (struct stress *)calloc(1, sizeof(*s));

	s->updates = 250000 / sk_test_slow();
	s->seed = sk_t_seed + 1;
	s->hlist_mode = 1;
	run_stress(s, 2, 2);
	SK_CHECK_EQ(s->poisoned + s->corrupt + s->missing + s->ghosts +
			    s->runaway,
		    0);
	free(s);
}

/* Freeing without a grace period MUST be caught (poisoned entries seen). */
static void stress_list_broken_twin_is_caught(void)
{
	struct stress *s = NULL;
	int round;

	for (round = 0; round < 20; round++) {
		free(s);
		s = (struct stress *)calloc(1, sizeof(*s));
		s->updates = 1000000;
		s->seed = sk_t_seed + 100 + (uint64_t)round;
		s->broken = 1;
		run_stress(s, 2, 1);
		if (s->poisoned)
			break;
	}
	SK_CHECK_GT(s->poisoned, 0);
	free(s);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(list_init_and_empty);
	SK_RUN(list_add_and_add_tail);
	SK_RUN(list_del_poisons_prev_keeps_next);
	SK_RUN(list_replace);
	SK_RUN(list_splice_init_rcu_cases);
	SK_RUN(list_iterators);
	SK_RUN(hlist_basics);
	SK_RUN(stress_list);
	SK_RUN(stress_hlist);
	SK_RUN(stress_list_broken_twin_is_caught);
	return sk_test_report();
}
