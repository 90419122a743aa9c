/* SPDX-License-Identifier: MIT */
/*
 * test_kernel_names.c - code written only with the kernel's spellings of
 * scalekit/kernel.h compiles and works: barriers, READ_ONCE/WRITE_ONCE,
 * acquire/release, RCU readers, pointers, grace periods, callbacks,
 * kfree_rcu, SRCU (DEFINE_SRCU, DEFINE_STATIC_SRCU, init/cleanup, read
 * lock, synchronize, call_srcu, srcu_barrier), list_*_rcu and hlist_*_rcu
 * with their iterators (also with the kernel's extra lockdep argument),
 * container_of.  A reader thread walks the list while the main thread
 * updates it.
 *
 * Also: scalekit/scalekit.h alone defines none of these unprefixed names
 * (checked with #ifdef before kernel.h is included; reported at run time).
 *
 * Built with -DSK_KERNEL_IDIOMS (a compile-only CTest, tests/testing.cmake)
 * the file also uses kernel idioms that pass the grace-period functions
 * by name, as in list_splice_init_rcu(list, head, synchronize_rcu).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "sk_test.h"

/* ---- scalekit.h must not define the kernel's names ---------------------- */
#include <scalekit/scalekit.h>

static const char *const leaked_names[] = {
#ifdef rcu_read_lock
	"rcu_read_lock",
#endif
#ifdef rcu_read_unlock
	"rcu_read_unlock",
#endif
#ifdef rcu_dereference
	"rcu_dereference",
#endif
#ifdef synchronize_rcu
	"synchronize_rcu",
#endif
#ifdef READ_ONCE
	"READ_ONCE",
#endif
#ifdef WRITE_ONCE
	"WRITE_ONCE",
#endif
#ifdef smp_mb
	"smp_mb",
#endif
#ifdef container_of
	"container_of",
#endif
#ifdef likely
	"likely",
#endif
#ifdef list_head
	"list_head",
#endif
#ifdef LIST_HEAD
	"LIST_HEAD",
#endif
#ifdef list_add_rcu
	"list_add_rcu",
#endif
#ifdef hlist_head
	"hlist_head",
#endif
#ifdef DEFINE_SRCU
	"DEFINE_SRCU",
#endif
#ifdef kfree_rcu
	"kfree_rcu",
#endif
	NULL
};

/* ---- from here on: kernel spellings only -------------------------------- */
#include <scalekit/kernel.h>

struct item {
	int id;
	int words; /* id * 100 once published */
	struct list_head node;
	struct hlist_node hnode;
	struct rcu_head rcu;
};

static LIST_HEAD(items);
static struct hlist_head hitems = HLIST_HEAD_INIT;
DEFINE_SRCU(test_srcu);
DEFINE_STATIC_SRCU(test_static_srcu);
static struct item *current_item; /* RCU-protected */
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;
static int callbacks_run, stop, reader_bad, reader_walks;

static void no_leaked_names(void)
{
	int i;

	for (i = 0; leaked_names[i]; i++)
		SK_T_FAIL("scalekit/scalekit.h defines %s", leaked_names[i]);
}

static struct item *item_new(int id)
{
	struct item *it = malloc(sizeof(*it));

	if (!it)
		abort();
	it->id = id;
	it->words = id * 100;
	INIT_HLIST_NODE(&it->hnode);
	return it;
}

static void free_item_cb(struct rcu_head *head)
{
	struct item *it = container_of(head, struct item, rcu);

	WRITE_ONCE(callbacks_run, READ_ONCE(callbacks_run) + 1);
	free(it);
}

static void barriers_and_once(void)
{
	int x = 0, flag = 0, y;

	WRITE_ONCE(x, 42);
	smp_wmb();
	smp_store_release(&flag, 1);
	if (likely(smp_load_acquire(&flag))) {
		smp_rmb();
		y = READ_ONCE(x);
		SK_CHECK_EQ(y, 42);
	}
	smp_mb();
	barrier();
	if (unlikely(x != 42))
		SK_CHECK(0);
}

static void *reader(void *arg)
{
	struct item *it;

	(void)arg;
	while (!READ_ONCE(stop)) {
		rcu_read_lock();
		list_for_each_entry_rcu(it, &items, node) {
			if (READ_ONCE(it->words) != it->id * 100)
				__atomic_fetch_add(&reader_bad, 1, __ATOMIC_RELAXED);
		}
		/* The kernel's optional lockdep condition is accepted. */
		list_for_each_entry_rcu(it, &items, node, rcu_read_lock_held()) {
			if (it->words != it->id * 100)
				__atomic_fetch_add(&reader_bad, 1, __ATOMIC_RELAXED);
		}
		rcu_read_unlock();
		__atomic_fetch_add(&reader_walks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void sync_for_splice(void)
{
	synchronize_rcu();
}

/* A published pointer, replaced after a grace period. */
static void published_pointer(void)
{
	struct item *a, *b, *old;

	a = item_new(1);
	rcu_assign_pointer(current_item, a);
	rcu_read_lock();
	SK_CHECK(rcu_read_lock_held());
	SK_CHECK(rcu_dereference(current_item) == a);
	rcu_read_unlock();
	b = item_new(2);
	old = rcu_dereference_protected(current_item, 1);
	rcu_assign_pointer(current_item, b);
	synchronize_rcu();
	free(old);
	RCU_INIT_POINTER(current_item, NULL);
	SK_CHECK(rcu_access_pointer(current_item) == NULL);
	free(b);
}

/* 2000 adds and deletes of items while the reader walks; then a
 * replacement and a splice. */
static void update_items(void)
{
	struct item *a, *old, *it;
	struct list_head other;
	int i;

	for (i = 0; i < 2000; i++) {
		pthread_mutex_lock(&update_lock);
		if (i % 3 == 2 && !list_empty(&items)) {
			it = list_first_or_null_rcu(&items, struct item, node);
			list_del_rcu(&it->node);
			pthread_mutex_unlock(&update_lock);
			if (i % 2)
				call_rcu(&it->rcu, free_item_cb);
			else
				kfree_rcu(it, rcu);
			continue;
		}
		it = item_new(i);
		if (i % 2)
			list_add_rcu(&it->node, &items);
		else
			list_add_tail_rcu(&it->node, &items);
		pthread_mutex_unlock(&update_lock);
	}
	/* Replace the first entry. */
	pthread_mutex_lock(&update_lock);
	old = list_first_or_null_rcu(&items, struct item, node);
	a = item_new(old->id);
	list_replace_rcu(&old->node, &a->node);
	pthread_mutex_unlock(&update_lock);
	synchronize_rcu();
	free(old);
	/* Splice another list in. */
	INIT_LIST_HEAD(&other);
	for (i = 0; i < 10; i++)
		list_add_tail_rcu(&item_new(5000 + i)->node, &other);
	pthread_mutex_lock(&update_lock);
	list_splice_init_rcu(&other, &items, sync_for_splice);
	pthread_mutex_unlock(&update_lock);
	SK_CHECK(list_empty(&other));
}

static void rcu_pointer_and_lists(void)
{
	struct item *it, *tmp;
	pthread_t tid;
	int i, n;

	published_pointer();
	/* A list updated while a reader walks it. */
	pthread_create(&tid, NULL, reader, NULL);
	while (!__atomic_load_n(&reader_walks, __ATOMIC_RELAXED))
		sched_yield(); /* the reader is running */
	update_items();
	WRITE_ONCE(stop, 1);
	pthread_join(tid, NULL);
	SK_CHECK_EQ(__atomic_load_n(&reader_bad, __ATOMIC_RELAXED), 0);
	SK_CHECK_GT(__atomic_load_n(&reader_walks, __ATOMIC_RELAXED), 0);
	rcu_barrier();
	SK_CHECK_GT(READ_ONCE(callbacks_run), 0);

	/* first/next_or_null and the updater-side iterators agree. */
	rcu_read_lock();
	n = 0;
	for (it = list_first_or_null_rcu(&items, struct item, node); it;
	     it = list_next_or_null_rcu(&items, &it->node, struct item, node))
		n++;
	rcu_read_unlock();
	i = 0;
	list_for_each_entry(it, &items, node)
		i++;
	SK_CHECK_EQ(i, n);
	SK_CHECK(list_entry(items.next, struct item, node) ==
		 list_first_or_null_rcu(&items, struct item, node));
	list_for_each_entry_safe(it, tmp, &items, node) {
		list_del_rcu(&it->node);
		kfree_rcu(it, rcu);
	}
	SK_CHECK(list_empty(&items));
	rcu_barrier();
}

static void hlists(void)
{
	struct item *it[4], *pos, *r;
	struct hlist_head h;
	int i, n = 0;

	INIT_HLIST_HEAD(&h);
	SK_CHECK(hlist_empty(&h));
	SK_CHECK(hlist_empty(&hitems));
	for (i = 0; i < 4; i++) {
		it[i] = item_new(i);
		SK_CHECK(hlist_unhashed(&it[i]->hnode));
	}
	hlist_add_head_rcu(&it[0]->hnode, &h);
	hlist_add_before_rcu(&it[1]->hnode, &it[0]->hnode);
	hlist_add_behind_rcu(&it[2]->hnode, &it[0]->hnode);
	hlist_add_head_rcu(&it[3]->hnode, &h); /* 3 1 0 2 */
	rcu_read_lock();
	hlist_for_each_entry_rcu(pos, &h, hnode) {
		static const int want[] = { 3, 1, 0, 2 };

		SK_CHECK_EQ(pos->id, want[n]);
		n++;
	}
	n = 0;
	hlist_for_each_entry_rcu(pos, &h, hnode, rcu_read_lock_held())
		n++;
	rcu_read_unlock();
	SK_CHECK_EQ(n, 4);
	r = item_new(0);
	hlist_replace_rcu(&it[0]->hnode, &r->hnode);
	hlist_del_rcu(&it[3]->hnode);
	SK_CHECK(hlist_unhashed(&it[3]->hnode));
	SK_CHECK(hlist_entry(h.first, struct item, hnode) == it[1]);
	synchronize_rcu();
	free(it[0]);
	free(it[3]);
	hlist_del_rcu(&it[1]->hnode);
	hlist_del_rcu(&r->hnode);
	hlist_del_rcu(&it[2]->hnode);
	SK_CHECK(hlist_empty(&h));
	synchronize_rcu();
	free(it[1]);
	free(it[2]);
	free(r);
}

static void srcu(void)
{
	struct srcu_struct dyn;
	struct item *a = item_new(7), *b = item_new(8), *p;
	int idx, idx2, before;

	rcu_assign_pointer(current_item, a);
	idx = srcu_read_lock(&test_srcu);
	SK_CHECK(srcu_read_lock_held(&test_srcu));
	p = srcu_dereference(current_item, &test_srcu);
	SK_CHECK(p == a);
	srcu_read_unlock(&test_srcu, idx);
	rcu_assign_pointer(current_item, b);
	synchronize_srcu(&test_srcu);
	before = READ_ONCE(callbacks_run);
	call_srcu(&test_srcu, &a->rcu, free_item_cb);
	srcu_barrier(&test_srcu);
	SK_CHECK_EQ(READ_ONCE(callbacks_run), before + 1);

	idx = srcu_read_lock(&test_static_srcu);
	srcu_read_unlock(&test_static_srcu, idx);
	synchronize_srcu(&test_static_srcu);

	SK_CHECK_EQ(init_srcu_struct(&dyn), 0);
	idx2 = srcu_read_lock(&dyn);
	srcu_read_unlock(&dyn, idx2);
	synchronize_srcu(&dyn);
	RCU_INIT_POINTER(current_item, NULL);
	call_srcu(&dyn, &b->rcu, free_item_cb);
	srcu_barrier(&dyn);
	SK_CHECK_EQ(READ_ONCE(callbacks_run), before + 2);
	SK_CHECK_EQ(cleanup_srcu_struct(&dyn), 0);
}

#ifdef SK_KERNEL_IDIOMS
/*
 * Kernel idioms that pass the functions by name (compile-only).  In the
 * kernel, synchronize_rcu is a function; here it must at least be usable
 * where the kernel's code uses it.
 */
void sk_kernel_idioms(struct list_head *list, struct list_head *head);
void sk_kernel_idioms(struct list_head *list, struct list_head *head)
{
	void (*fn)(void);

	list_splice_init_rcu(list, head, synchronize_rcu);
	fn = synchronize_rcu;
	fn = synchronize_rcu_expedited;
	fn = rcu_barrier;
	(void)fn;
}
#endif

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(no_leaked_names);
	SK_RUN(barriers_and_once);
	SK_RUN(rcu_pointer_and_lists);
	SK_RUN(hlists);
	SK_RUN(srcu);
	return sk_test_report();
}
