/* SPDX-License-Identifier: MIT */
/*
 * The resizable hash table's resizes: publishing the future array,
 * migrating the old buckets into it in bounded steps, switching the
 * table, the background work that does all that for automatic
 * resizing, and sk_rhash_destroy(), which waits for it.  The algorithm is in src/rhash.c, the legend of the RH-*
 * labels in src/internal/rhash.h.
 */
#define _GNU_SOURCE
#include "internal/rhash.h"

#include <errno.h>
#include <stddef.h>

#include "internal/rcu_cb.h" /* sk__rcu_cb_start_worker() */
#include "internal/util.h"
#include "scalekit/list.h" /* checker hooks, SK__LIST_PUBLISH */

/* Migration time per background callback (then it re-queues itself). */
#define RHASH_WORK_NS 500000u
/* Old buckets migrated between two looks at the clock. */
#define RHASH_WORK_BATCH 256UL

#ifdef SK_TESTING
/* Test hooks (internal/testing.h): the testing build only. */
void (*sk__rhash_test_step_hook)(struct sk_rhash *ht);
void (*sk__rhash_test_race_hook)(int where, unsigned long hash);
void (*sk__rhash_test_migrated_hook)(struct sk_rhash *ht, unsigned long i);
#define RHASH_RACE(where, h)                                     \
	do {                                                     \
		if (sk__rhash_test_race_hook)                    \
			sk__rhash_test_race_hook((where), (h));  \
	} while (0)
#else
#define RHASH_RACE(where, h) ((void)0)
#endif


/*
 * RH-D1: wait until every lock bit of array l has been seen clear at
 * least once.  Called after a publication that made another array the
 * lock array and a full fence: an updater that takes a bit of l after
 * that look re-reads the arrays, sees the new mapping and lets go; one
 * that took it before holds it until its update is done.  Waits for
 * updates only (a bit holder waits for nothing), takes no lock.
 */
static void drain(struct sk_rhash_table *l)
{
	unsigned long i, n = sk__rhash_lock_words(l->size), pending;
	unsigned int spins;

	for (i = 0; i < n; i++) {
		pending = ~0UL;
		/* Acquire: the holder's chain writes (its unlock's release). */
		for (spins = 0;
		     (pending &= __atomic_load_n(&l->locks[i], __ATOMIC_ACQUIRE));
		     spins++)
			sk__rhash_bit_wait(spins);
	}
}

/*
 * Publish *pp = v (the future array, or the table), which changes the
 * lock array from `from` to `to` (or not: from == to).  RH-D1: while the
 * lock array changes, `to` names `from` in to->prev_lock, so that updaters
 * of the new mapping also take the bit of the old one; the old bits are
 * drained; then prev_lock is cleared.  No updater ever waits for all
 * buckets, and the resize waits only for updates in progress.
 */
static void publish_table(struct sk_rhash_table **pp, struct sk_rhash_table *v,
			  struct sk_rhash_table *from, struct sk_rhash_table *to)
{
	if (from != to)
		/* Ordered before the publication by its release. */
		sk_atomic_store_relaxed(&to->prev_lock, from);
	/* RH-P1 [pub]: the array's heads (and prev_lock), then the pointer. */
	SK__LIST_PUBLISH(*pp, v);
	if (from == to)
		return;
	/*
	 * RH-D1: full fence, the publication before the loads of the old
	 * bits; pairs with lock_bucket()'s seq_cst fetch_or, then re-read.
	 */
	sk_smp_mb();
	if (!RHASH_BROKEN(SK__RHASH_BROKEN_NO_DRAIN))
		drain(from);
	/*
	 * Release: the drained updates happened before; an updater that
	 * reads NULL (acquire) takes only the new bit.
	 */
	sk_atomic_store_release(&to->prev_lock, NULL);
}

/*
 * Start a resize to nbuckets: publish the empty future array.  resize_lock
 * held, no resize running.  The migration may start only after a grace
 * period (RH-G2).  Returns 0 or -ENOMEM (nothing changed).
 */
static int resize_begin(struct sk_rhash *ht, unsigned long nbuckets)
{
	struct sk_rhash_table *t = ht->tbl, *f = sk__rhash_table_alloc(ht, nbuckets);

	if (!f)
		return -ENOMEM;
	publish_table(&t->future, f, t, sk__rhash_lock_array(t, f));
	sk_atomic_store_relaxed(&ht->resizing, 1); /* stat for tests, tools */
	return 0;
}

/*
 * RH-M1 and RH-M2: link the run first .. last (the end of an old chain)
 * in front of f's chain d.  Lock-free inserts push onto that head
 * meanwhile: RH-M2 is a CAS, and when it fails RH-M1 is made again
 * against the new head.  Both values of last->next are valid: the newer
 * head's chain holds the older one.
 */
static void link_run(struct sk_rhash_table *f, struct sk_rhash_node *first,
		     struct sk_rhash_node *last, unsigned long d)
{
	/* Acquire: last->next republishes the nodes of f's chain. */
	struct sk_rhash_node *cur = __atomic_load_n(&f->buckets[d],
						    __ATOMIC_ACQUIRE);

	do {
		/*
		 * RH-M1 [one]: readers in the run walk on into f's chain d.
		 * Skipped when last->next already is f's head (NULL, as f's
		 * chain d is still empty in most moves of a grow): the state
		 * does not change, and readers keep the node's cache line.
		 */
		if (last->next != cur)
			SK__LIST_PUBLISH(last->next, cur);
		RHASH_RACE(0, first->hash);
		if (RHASH_BROKEN(SK__RHASH_BROKEN_HEAD_STORE)) {
			/* Broken twin: a store loses racing inserts. */
			SK__LIST_PUBLISH(f->buckets[d], first);
			return;
		}
		/* RH-M2 [pub]: the run's nodes, then f's head (release CAS). */
	} while (!sk__rhash_cas(&f->buckets[d], &cur, first));
}

/*
 * Move the nodes first .. last (the end of an old chain, all of bucket d
 * of f; *link pointed at first when the chain was walked) to the head of
 * f's chain d.  Their bucket is locked.  at_head: link is the old
 * bucket's head, which is left as it is (RH-M3): it goes on pointing at
 * first, now the head of f's chain d, until t is freed.
 */
static void move_run(struct sk_rhash_table *f, struct sk_rhash_node **link,
		     struct sk_rhash_node *first, struct sk_rhash_node *last,
		     unsigned long d, int at_head)
{
	if (RHASH_BROKEN(SK__RHASH_BROKEN_CUT_FIRST)) {
		/* Broken twin: cut the run off before f has it. */
		SK__LIST_PUBLISH(*link, NULL);
		SK__LIST_PUBLISH(last->next, f->buckets[d]);
		SK__LIST_PUBLISH(f->buckets[d], first);
		return;
	}
	link_run(f, first, last, d);
	/*
	 * RH-M3 [one]: the old chain ends before the run.  Release: RH-M2
	 * (and the publication of f) before RH-M3; pairs with RH-L1.  A
	 * node's next changes only under the lock.  Not at the head: a
	 * reader that reads the old head reaches the run there, in f's
	 * chain d, and walks on into f's older nodes of d (skipping them by
	 * hash); no insert pushes onto the old head any more (RH-G2).
	 */
	if (!at_head)
		SK__LIST_PUBLISH(*link, NULL);
}

/*
 * Links remembered per walk of an old chain: one walk moves up to this
 * many runs from the chain's tail.  The testing build remembers 2, so
 * that its small chains are migrated in several steps.
 */
#ifdef SK_TESTING
#define RHASH_RING 2
#else
#define RHASH_RING 256
#endif

/*
 * One step of the migration of old bucket i of t to f, under the bucket's
 * lock: walk the chain once, remembering its last RHASH_RING links (and
 * the nodes they held), and move up to RHASH_RING tail runs.  When the
 * run at the head has moved (or the chain was empty) the bucket is
 * migrated: its bit in t->migrated is set, its head is left as it is.
 * Returns nonzero when nodes are left (the caller drops the lock and steps
 * again: the lock is held for one walk of the chain at a time, however
 * long the chain is).  The old chain only shrinks after RH-G2 (inserts go
 * to f).
 */
static int migrate_step(struct sk_rhash_table *t, struct sk_rhash_table *f,
			unsigned long i)
{
	struct sk_rhash_node **ring[RHASH_RING], *node[RHASH_RING], **pp, *x;
	unsigned long n = 0, k, j, d;

	/* Dependency loads: inserts pushed onto the head before RH-G2. */
	for (pp = &t->buckets[i]; sk__rhash_is_node(x = sk_rcu_dereference(*pp));
	     pp = &x->next, n++) {
		ring[n % RHASH_RING] = pp;
		node[n % RHASH_RING] = x;
	}
	/* node[(k - 1) % R] is the chain's last node. */
	for (k = n; k > 0 && n - k < RHASH_RING;) {
		struct sk_rhash_node *last = node[(k - 1) % RHASH_RING];

		d = last->hash & f->mask;
		for (j = k - 1; j > 0 && n - j < RHASH_RING &&
		     (node[(j - 1) % RHASH_RING]->hash & f->mask) == d;)
			j--;
		move_run(f, ring[j % RHASH_RING], node[j % RHASH_RING], last,
			 d, j == 0);
		k = j;
	}
	if (k > 0)
		return 1;
	/*
	 * RH-B1: updaters read the bit under the same lock (its release
	 * below orders this store before their acquire of the bit).
	 */
	sk__rhash_set_migrated(t, i);
	return 0;
}

/*
 * Bring the lines the migration of old buckets ahead of i will touch
 * into the cache before their bucket locks are taken, so that each lock
 * is held for cache-hot work only: a migrator preempted while it holds a
 * bucket's bit stalls that bucket's updaters, and shorter holds make that
 * rarer.  Hints only: the bucket heads are read without the lock
 * (relaxed; the array stays allocated while resize_lock is held) and
 * their nodes are prefetched, never dereferenced.
 */
static inline void migrate_prefetch(struct sk_rhash_table *t, unsigned long i,
				    unsigned long to)
{
	if (i + 16 < to)
		__builtin_prefetch(&t->buckets[i + 16]);
	if (i + 4 < to)
		__builtin_prefetch(sk_atomic_load_relaxed(&t->buckets[i + 4]));
}

/*
 * Migrate old buckets [from, to) of the running resize, one step of one
 * bucket per hold of its bucket lock.  No lock held.
 */
static void migrate_range(struct sk_rhash *ht, unsigned long from,
			  unsigned long to)
{
	/* Only resizes change tbl and future; resize_lock is held. */
	struct sk_rhash_table *t = ht->tbl, *f = t->future;
	/* RH-B1: old bucket i and its new buckets share a bit of l. */
	struct sk_rhash_table *l = sk__rhash_lock_array(t, f);
	unsigned long i;
	int more;

	for (i = from; i < to; i++) {
		migrate_prefetch(t, i, to);
		for (;;) {
			sk__rhash_bit_lock(l, i);
			more = migrate_step(t, f, i);
			sk__rhash_bit_unlock(l, i);
			if (!more)
				break;
#ifdef SK_TESTING
			/* Old bucket i partly moved, no bucket lock held. */
			if (sk__rhash_test_step_hook)
				sk__rhash_test_step_hook(ht);
#endif
		}
#ifdef SK_TESTING
		/* Old bucket i migrated, no bucket lock held. */
		if (sk__rhash_test_migrated_hook)
			sk__rhash_test_migrated_hook(ht, i);
#endif
	}
}

/*
 * End a resize whose old array is empty: publish the future array as the
 * table.  Returns the old array, to be freed after a grace period.
 */
static struct sk_rhash_table *resize_finish(struct sk_rhash *ht)
{
	struct sk_rhash_table *t = ht->tbl, *f = t->future;
	int late;

	/*
	 * t->future stays: readers still in t walk on into f until the
	 * grace period before t's free.
	 */
	/*
	 * The inline walks' start, before tbl (RH-P1 again: release, the
	 * array's heads before the pointer; pairs with their
	 * sk_rcu_dereference()).  f holds every node now, so a walk may
	 * start there at once.  Not after tbl: once tbl is f, updaters no
	 * longer move t's stale heads on (unlink_stale_head()), and a walk
	 * that began in t after a remove could reach the removed node
	 * through such a head, and read it after its free.  A walk that
	 * began in t before this store began before any such remove; t is
	 * freed only after a grace period that starts after both stores.
	 */
	late = RHASH_BROKEN(SK__RHASH_BROKEN_LATE_LOOKUP_TBL);
	if (ht->mode == RHASH_MODE_U64 && !late)
		sk_rcu_assign_pointer(ht->lookup_tbl, f);
	publish_table(&ht->tbl, f, sk__rhash_lock_array(t, f), f);
	if (ht->mode == RHASH_MODE_U64 && late) /* broken twin: too late */
		sk_rcu_assign_pointer(ht->lookup_tbl, f);
	sk_atomic_store_relaxed(&ht->resizing, 0);
	/* Relaxed: a statistic (tests poll it without resize_lock). */
	sk_atomic_store_relaxed(&ht->resizes, ht->resizes + 1);
	return t;
}

/* A grace period inside a resize (traced in the testing build). */
static void resize_gp(int broken)
{
	(void)broken; /* only the testing build has broken twins */
	if (RHASH_BROKEN(broken))
		return; /* a broken twin leaves it out */
	sk_synchronize_rcu();
	SK__LIST_TRACE(GP);
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
	/*
	 * RH-G2 [gp]: inserts that loaded t without its future end before
	 * the first migration step (broken twin: they may push onto a
	 * migrated old bucket, and their node is lost with t).
	 */
	resize_gp(SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE);
	sk_atomic_store_relaxed(&ht->resizing, 2); /* stat for tests */
	migrate_range(ht, 0, ht->tbl->size);
	old = resize_finish(ht);
	/* RH-G1 [gp]: readers of the old array finish before its free. */
	resize_gp(SK__RHASH_BROKEN_NO_GP);
	ht->p.free(old);
	return 0;
}

/*
 * ht->resize_lock, a lock that no thread owns (a pthread mutex must be
 * unlocked by the thread that locked it): a background resize takes it
 * in one callback and releases it in another, which per-CPU callback
 * workers may run on another thread, and which a fork child's worker
 * runs when the fork came between the two.
 */
static int resize_trylock(struct sk_rhash *ht)
{
	int free_ = 0;

	/* RH-R1: acquire (seq_cst); pairs with resize_unlock()'s release. */
	return sk_atomic_cmpxchg_seq_cst(&ht->resize_lock, &free_, 1);
}

/*
 * Take resize_lock for an explicit resize (outside any read section).
 * When the background work holds it between two of its callbacks, those
 * callbacks run only on a callback worker, and there may be none: in a
 * fork child (the work came from the parent, and the child's worker
 * starts only with its next sk_call_rcu() or barrier) or where its start
 * failed.  Sleeping on the lock would then wait forever: run the queued
 * callbacks instead (sk_rcu_barrier() starts the worker, or does its work
 * here), once per slice of the work, until the lock is free.
 */
static void resize_lock(struct sk_rhash *ht)
{
	if (resize_trylock(ht))
		return;
	/* RH-R1: as above; 2 tells the holder that someone sleeps. */
	while (sk_atomic_xchg_seq_cst(&ht->resize_lock, 2) != 0) {
		/*
		 * Relaxed: a hint of who holds the lock, orders nothing.
		 * A stale 1 costs a barrier; a stale 0 a sleep that the
		 * running work's resize_unlock() ends (a fork child has the
		 * values of the parent's last callback: the fork waited for
		 * the callback worker's run_lock).  Not from a callback: a
		 * barrier there would wait for itself.
		 */
		if (sk_atomic_load_relaxed(&ht->work_active) &&
		    !sk__rcu_cb_in_worker)
			sk_rcu_barrier();
		else
			sk__futex_wait(&ht->resize_lock, 2);
	}
}

static void resize_unlock(struct sk_rhash *ht)
{
	/* RH-R1: release (seq_cst): the resize before the next holder's. */
	if (sk_atomic_xchg_seq_cst(&ht->resize_lock, 0) == 2)
		sk__futex_wake(&ht->resize_lock, 1);
}

static void background_resize(struct sk_rcu_head *head);
static void work_done(struct sk_rhash *ht);

/*
 * Queue ht->work (again).  sk_call_rcu() queues it even when its worker
 * cannot start (a later call or sk_rcu_barrier() runs it), and the head
 * is not queued (work_queued guards it): no error is expected.  Should
 * one come, the work is given up as done, so that a later update queues
 * it again and no sk_rhash_barrier() waits for it forever.
 */
static void requeue(struct sk_rhash *ht)
{
	if (sk_call_rcu(&ht->work, background_resize) != 0)
		work_done(ht);
}

/* Queue the background work unless it is queued.  Never waits. */
static void queue_work(struct sk_rhash *ht)
{
	int idle = 0;

	/*
	 * One queued work per table: it rechecks the load factor.  RH-W1:
	 * the cmpxchg (full barrier) pairs with the release in work_done():
	 * the previous work's writes happen before this queueing.
	 */
	if (sk_atomic_load_relaxed(&ht->work_queued) ||
	    !sk_atomic_cmpxchg_seq_cst(&ht->work_queued, &idle, 1))
		return;
	/* Relaxed: sk_call_rcu() orders it before the callback (CB-C1). */
	__atomic_fetch_add(&ht->pending, 1, __ATOMIC_RELAXED);
	requeue(ht);
}

int sk_rhash_resize(struct sk_rhash *ht, unsigned long nbuckets)
{
	int err;

	if (!ht || !sk__rhash_is_pow2(nbuckets))
		return -EINVAL;
	if (sk_rcu_read_lock_held())
		sk__die("sk_rhash_resize() called inside an RCU read-side "
			"critical section: it waits for grace periods");
	/* RH-W3: before the lock; pairs with the load in maybe_resize(). */
	sk_atomic_fetch_add_seq_cst(&ht->explicit_resizes, 1);
	resize_lock(ht);
	err = resize_locked(ht, nbuckets);
	resize_unlock(ht);
	sk_atomic_fetch_add_seq_cst(&ht->explicit_resizes, -1);
	/*
	 * RH-W3: an update that crossed a load-factor limit while we
	 * resized left the check to us (the seq_cst decrement above before
	 * this exchange; pairs with the store and load in maybe_resize():
	 * either it saw no explicit resize and queued the work, or we see
	 * its request here).
	 */
	if (sk_atomic_xchg_seq_cst(&ht->recheck, 0))
		queue_work(ht);
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

/* The background work is done: let updates queue it again. */
static void work_done(struct sk_rhash *ht)
{
	/* RH-W1: the work's writes before a new queueing (cmpxchg). */
	sk_atomic_store_release(&ht->work_queued, 0);
	/* RH-W2: pairs with the acquire in sk_rhash_barrier(). */
	__atomic_fetch_sub(&ht->pending, 1, __ATOMIC_RELEASE);
}

static void free_table_cb(struct sk_rcu_head *head)
{
	struct sk_rhash_table *t =
		(struct sk_rhash_table *)((char *)head -
					  offsetof(struct sk_rhash_table, rcu));
	struct sk_rhash *ht = t->ht;

	ht->p.free(t);
	/* RH-W2: the free before sk_rhash_barrier() returns. */
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
	if (!resize_trylock(ht))
		return 0;
	want = wanted_size(ht, ht->tbl->size, (long)sk_rhash_count(ht));
	if (want != ht->tbl->size && resize_begin(ht, want) == 0) {
		ht->work_next = 0;
		/* Relaxed: the work's own; tests read it without a lock. */
		sk_atomic_store_relaxed(&ht->work_active, 1);
		return 1;
	}
	/* -ENOMEM: retried after a later flush. */
	resize_unlock(ht);
	return 0;
}

/*
 * The callback of ht->work, on the callback worker: migrate for about
 * RHASH_WORK_NS, then re-queue, or finish.  Never waits for a grace
 * period; blocks only on bucket locks (held briefly by updaters).  Holds
 * resize_lock from the start to the end of a resize, across callbacks.
 */
static void background_resize(struct sk_rcu_head *head)
{
	struct sk_rhash *ht = (struct sk_rhash *)((char *)head -
						  offsetof(struct sk_rhash, work));
	uint64_t end = sk__now_ns() + RHASH_WORK_NS;
	unsigned long size, next;
	struct sk_rhash_table *old;

	if (!ht->work_active) {
		if (!background_start(ht)) {
			work_done(ht);
			return;
		}
		/*
		 * RH-G2 [gp]: migrate in the next callback, which runs after a
		 * grace period that began after the publication of f (broken
		 * twin: at once).
		 */
		if (!RHASH_BROKEN(SK__RHASH_BROKEN_NO_GP_BEFORE_MIGRATE)) {
			requeue(ht);
			return;
		}
	}
	size = ht->tbl->size;
	sk_atomic_store_relaxed(&ht->resizing, 2); /* stat for tests */
	do {
		next = ht->work_next + RHASH_WORK_BATCH;
		next = next < size ? next : size;
		migrate_range(ht, ht->work_next, next);
		ht->work_next = next;
	} while (next < size && sk__now_ns() < end);
	if (next < size) {
		requeue(ht);
		return;
	}
	old = resize_finish(ht);
	sk_atomic_store_relaxed(&ht->work_active, 0);
	size = ht->tbl->size;
	resize_unlock(ht);
	/* Relaxed: sk_call_rcu() orders it before the callback (CB-C1). */
	__atomic_fetch_add(&ht->pending, 1, __ATOMIC_RELAXED);
	/*
	 * RH-G1 [gp]: readers of the old array finish before the
	 * callback frees it.  Cannot fail: the head is not queued (the
	 * array was just unpublished) and sk_call_rcu() queues even when
	 * its worker cannot start.
	 */
	(void)sk_call_rcu(&old->rcu, free_table_cb);
	/*
	 * Updates went on during the resize (their checks found the work
	 * queued): if the load factor now asks for another size, go on.
	 */
	if (wanted_size(ht, size, (long)sk_rhash_count(ht)) != size)
		requeue(ht);
	else
		work_done(ht);
}

void sk_rhash_barrier(struct sk_rhash *ht)
{
	/*
	 * The background work re-queues itself until done and queues the
	 * free of each array it replaced: wait until none is left.
	 * RH-W2 acquire: pairs with the releases in work_done() and
	 * free_table_cb(); their writes happen before the return.
	 */
	while (sk_atomic_load_acquire(&ht->pending))
		sk_rcu_barrier();
}

/*
 * Destroy is here, above sk_rhash_barrier(), not with create in rhash.c:
 * rhash.c is the module's lowest layer and calls no other file of it
 * (src/layers.txt).
 */
static void free_chains(struct sk_rhash *ht, struct sk_rhash_table *t,
			void (*free_obj)(void *obj, void *arg), void *arg)
{
	unsigned long i;

	for (i = 0; free_obj && i < t->size; i++) {
		struct sk_rhash_node *n = t->buckets[i], *next;

		for (; sk__rhash_is_node(n); n = next) {
			next = n->next;
			free_obj(sk__rhash_obj(ht, n), arg);
		}
	}
}

void sk_rhash_destroy(struct sk_rhash *ht,
		      void (*free_obj)(void *obj, void *arg), void *arg)
{
	if (!ht)
		return;
	sk_rhash_barrier(ht);
	free_chains(ht, ht->tbl, free_obj, arg);
	ht->p.free(ht->tbl);
	ht->p.free(ht->mem);
}

/* See src/internal/rhash.h. */
void sk__rhash_maybe_resize(struct sk_rhash *ht, unsigned long size,
			    long count, int grow_check)
{
	if (!ht->p.automatic_resize)
		return;
	if (grow_check ? size >= ht->p.max_buckets ||
				 !above(count, size, ht->p.grow_above_pct)
		       : size <= ht->p.min_buckets || !ht->p.shrink_below_pct ||
				 above(count + 1, size, ht->p.shrink_below_pct))
		return;
	if (sk_atomic_load_relaxed(&ht->work_queued)) {
		/*
		 * Queued, and its worker may not run: a fork child inherited
		 * the work, or the worker's start failed.  Start it (a load
		 * when it runs; at most one attempt per millisecond).
		 */
		sk__rcu_cb_start_worker();
		return;
	}
	/*
	 * While explicit resizes run, the work would find resize_lock taken
	 * and end, to be queued again by the next flush: thousands of
	 * wake-ups of the callback worker per second, which then competes
	 * with the resizer and the updaters for the CPUs.  Leave the check
	 * to the explicit resize instead.  RH-W3: the store before the
	 * load (seq_cst both); pairs with sk_rhash_resize()'s decrement and
	 * exchange.
	 */
	(void)sk_atomic_xchg_seq_cst(&ht->recheck, 1);
	if (__atomic_load_n(&ht->explicit_resizes, __ATOMIC_SEQ_CST))
		return;
	sk_atomic_store_relaxed(&ht->recheck, 0);
	queue_work(ht);
}
