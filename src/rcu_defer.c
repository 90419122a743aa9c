/* SPDX-License-Identifier: MIT */
/*
 * RCU: deferred calls, sk_defer_rcu().  A user of the callbacks
 * (rcu_cb.c), listed above them in src/layers.txt: each deferred call
 * is one RCU callback whose struct sk_rcu_head lives in a slab of nodes
 * that the calling thread owns, so the object to free needs no head of
 * its own.
 *
 * A slab counts its references: one per node handed out whose callback
 * has not run yet, plus one while a thread owns it (takes nodes from it).
 * The owner hands it back when it is full, when the thread exits (the
 * key's destructor) and, in a fork child, for every thread that the child
 * does not have.  Whoever drops the last reference frees it: the callback
 * worker after the last node ran, or the owner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include "internal/rcu.h"
#include "internal/rcu_cb.h"
#include "internal/testing.h"
#include "internal/util.h"

#define DEFER_NODES 63 /* nodes per slab: about 2 KiB where pointers are 8 bytes */

struct defer_slab;

struct defer_node {
	struct sk_rcu_head head;
	void (*fn)(void *);
	void *p;
	struct defer_slab *slab;
};

struct defer_slab {
	unsigned long refs;	/* atomic: see the file comment */
	unsigned used;		/* nodes handed out (owner only) */
	struct sk__link link;	/* in owned, while a thread owns the slab */
	struct defer_node node[DEFER_NODES];
};

/* The calling thread's slab; also the key's value (for the destructor). */
static __thread struct defer_slab *defer_cur
	__attribute__((tls_model("initial-exec")));
static pthread_key_t defer_key;
static pthread_once_t defer_once = PTHREAD_ONCE_INIT;
static int defer_key_err;

/* Slabs that a thread owns (for the fork child), under owned_lock. */
static pthread_mutex_t owned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sk__link owned = { &owned, &owned };

#ifdef SK_TESTING
static int fail_allocs; /* internal/testing.h */

void sk__rcu_defer_test_fail_allocs(int n)
{
	sk_atomic_store_relaxed(&fail_allocs, n);
}
#endif

static void slab_put(struct defer_slab *s, unsigned long n)
{
	/*
	 * Acq_rel: each put releases what its dropper did to the slab (a
	 * node's run, the owner's writes); the last one acquires them all
	 * before the free.
	 */
	if (__atomic_sub_fetch(&s->refs, n, __ATOMIC_ACQ_REL) == 0)
		free(s);
}

/* The owner lets go of s: the nodes it did not hand out, and its own. */
static void slab_release(struct defer_slab *s)
{
	pthread_mutex_lock(&owned_lock);
	sk__link_del(&s->link);
	pthread_mutex_unlock(&owned_lock);
	slab_put(s, DEFER_NODES - s->used + 1);
}

static void key_destroy(void *arg)
{
	defer_cur = NULL;
	slab_release(arg);
}

static void key_create(void)
{
	defer_key_err = pthread_key_create(&defer_key, key_destroy);
}

/* A new slab for the calling thread, or NULL when out of memory. */
static struct defer_slab *slab_new(void)
{
	struct defer_slab *s = NULL;

	pthread_once(&defer_once, key_create);
#ifdef SK_TESTING
	if (sk_atomic_load_relaxed(&fail_allocs) > 0) {
		__atomic_sub_fetch(&fail_allocs, 1, __ATOMIC_RELAXED);
		return NULL;
	}
#endif
	if (defer_key_err == 0)
		s = malloc(sizeof(*s));
	if (!s)
		return NULL;
	s->refs = DEFER_NODES + 1;
	s->used = 0;
	if (pthread_setspecific(defer_key, s) != 0) {
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&owned_lock);
	sk__link_add_tail(&s->link, &owned);
	pthread_mutex_unlock(&owned_lock);
	if (defer_cur)
		slab_release(defer_cur);
	defer_cur = s;
	return s;
}

static void defer_run(struct sk_rcu_head *head)
{
	struct defer_node *n = (struct defer_node *)head;
	struct defer_slab *s = n->slab;

	n->fn(n->p);
	slab_put(s, 1);
}

int sk_defer_rcu(void (*fn)(void *), void *p)
{
	unsigned long depth =
		sk_atomic_load_relaxed(&sk_rcu__ctr) & SK__RCU_NEST_MASK;
	struct defer_slab *s = defer_cur;
	struct defer_node *n;

	if (!fn)
		return -EINVAL;
	if (depth != 0 && depth != SK__RCU_QSBR_NEST)
		sk__die("sk_defer_rcu() inside an RCU read-side critical "
			"section (nesting depth %lu): it may wait for a grace "
			"period", depth);
	if (!s || s->used == DEFER_NODES)
		s = slab_new();
	if (!s) {
		/* Out of memory: wait here, as liburcu's defer_rcu() does. */
		sk_synchronize_rcu();
		fn(p);
		return 0;
	}
	n = &s->node[s->used++];
	n->fn = fn;
	n->p = p;
	n->slab = s;
	/*
	 * A node is handed out once and its slab outlives its callback:
	 * sk_call_rcu() cannot find it queued (no -EBUSY), and fn is set.
	 * Its CB-C1 push orders the stores above before the worker reads
	 * them.
	 */
	return sk_call_rcu(&n->head, defer_run);
}

/*
 * fork(): the child has only the thread that forked.  The slabs that the
 * other threads owned lose their owner: drop its reference, so that each
 * is freed once the callbacks of its nodes (which the child runs too) are
 * done.  owned_lock is taken across fork() so that the list is whole.
 * rcu_cb.c's fork handlers call these (sk__rcu_cb_register_upper()),
 * after they took the callback workers' run_locks: a callback may call
 * sk_defer_rcu(), which takes owned_lock while its batch holds its
 * worker's run_lock (a prepare handler of our own, run before rcu_cb.c's,
 * held owned_lock while it waited for that batch: a deadlock).
 */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&owned_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&owned_lock);
}

static void atfork_child(void)
{
	struct sk__link *l, *next;

	for (l = owned.next; l != &owned; l = next) {
		struct defer_slab *s = SK__CONTAINER_OF(l,
				struct defer_slab, link);

		next = l->next;
		if (s == defer_cur)
			continue;
		sk__link_del(l);
		slab_put(s, DEFER_NODES - s->used + 1);
	}
	pthread_mutex_init(&owned_lock, NULL);
}

static const struct sk__rcu_part defer_part = {
	.fork_prepare = atfork_prepare,
	.fork_parent = atfork_parent,
	.fork_child = atfork_child,
};

__attribute__((constructor)) static void defer_init(void)
{
	sk__rcu_cb_register_upper(SK__RCU_CB_UPPER_DEFER, &defer_part);
}
