/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_async.c - the hash table's background resizing across the
 * asynchronous steps it depends on: fork(), and callbacks that run on
 * different worker threads.
 *
 * What is proven:
 *   - fork while the background grow is queued (its callback taken by
 *     the worker for a grace period that a reader holds up): in the child
 *     the grow runs, sk_rhash_barrier() and sk_rhash_destroy() return,
 *     every object is found and an explicit resize works;
 *   - fork in the middle of a background resize (the work holds
 *     resize_lock between two of its callbacks, the future array half
 *     filled): the same in the child, which finishes the resize;
 *   - in the parent, after both forks, the same;
 *   - fork in the middle of a background resize, and the child's first
 *     call is an explicit sk_rhash_resize(): the resize_lock it waits for
 *     is held by the inherited work, whose callback only runs once
 *     something starts the child's callback worker; the resize must run
 *     that work itself rather than sleep forever (and the parent goes on
 *     inserting, resizing and destroying its own copy);
 *   - background resizes whose callbacks run on per-CPU workers that the
 *     scheduler moves (SK_RCU_CB_WORKERS_UNPINNED): resize_lock, taken by
 *     one callback and released by a later one, possibly on another
 *     thread, ends free; a pthread mutex there was undefined behaviour,
 *     which the TSan build reported.
 * A child that hangs is killed by alarm() (HANG_S): a hang guard, not a
 * time bound.  Under TSan the children do not run (a child of a
 * multithreaded fork cannot start threads there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/rhash.h"
#include "sk_test.h"
#include "sk_test_util.h"
#include "../src/internal/rhash.h" /* white box: work_active, resize_lock */

/* Seconds after which a child that a working library ends is a hang. */
#define HANG_S 60

struct kobj {
	struct sk_rhash_node node;
	uint64_t key;
};

static struct kobj *objs;
static unsigned nobjs;
static struct sk_rhash *table;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

/*
 * 4096 buckets to start with: a grow migrates them in batches of 256
 * (RHASH_WORK_BATCH), a callback (slice) per batch once it took 0.5 ms,
 * so the grow of the tests below is 16 slices.
 */
#define START_BUCKETS 4096UL

static struct sk_rhash *table_new(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	struct sk_rhash *ht;

	p.initial_buckets = p.min_buckets = START_BUCKETS;
	p.head_offset = offsetof(struct kobj, node);
	p.key_offset = offsetof(struct kobj, key);
	p.key_len = sizeof(uint64_t);
	ht = sk_rhash_create(&p);
	SK_CHECK(ht != NULL);
	return ht;
}

static void insert_all(struct sk_rhash *ht)
{
	unsigned i;

	for (i = 0; i < nobjs; i++) {
		objs[i].key = i;
		SK_CHECK_EQ(sk_rhash_insert(ht, &objs[i].node), 0);
	}
}

/* Every object is found in ht (one failed check for the first that is not). */
static void check_all_found(struct sk_rhash *ht)
{
	unsigned i;

	sk_rcu_read_lock();
	for (i = 0; i < nobjs; i++) {
		uint64_t k = i;

		if (sk_rhash_lookup(ht, &k) != &objs[i]) {
			SK_CHECK(sk_rhash_lookup(ht, &k) == &objs[i]);
			break;
		}
	}
	sk_rcu_read_unlock();
}

/*
 * After sk_rhash_barrier(): the grows are done, every object is found,
 * resize_lock is free, an explicit resize runs, and destroy returns.
 */
static void check_settled_and_destroy(struct sk_rhash *ht)
{
	sk_rhash_barrier(ht);
	SK_CHECK_EQ(LOAD(ht->resize_lock), 0);
	SK_CHECK_EQ(LOAD(ht->work_active), 0);
	SK_CHECK_LE(nobjs, sk_rhash_buckets(ht));
	check_all_found(ht);
	SK_CHECK_EQ(sk_rhash_resize(ht, 1UL << 10), 0);
	SK_CHECK_EQ(sk_rhash_buckets(ht), 1UL << 10);
	sk_rhash_destroy(ht, NULL, NULL);
}

/*
 * The child: the forking thread was inside a read section (it held the
 * grace period the work waits for); it leaves it, then everything
 * inherited must complete.
 */
static void child_after_fork(void)
{
	sk_rcu_read_unlock();
	check_settled_and_destroy(table);
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

/* Fork; the child runs child_after_fork() (under alarm), must exit 0. */
static void fork_and_check(const char *what)
{
	static struct sk_test_child c;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "  %s: child skipped under TSan\n", what);
		return;
	}
	fprintf(stderr, "  %s\n", what);
	sk_test_fork_child(child_after_fork, HANG_S, 0, &c);
	SK_CHECK_EQ(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1, 0);
}

static void fork_while_background_resize_is_queued_or_running(void)
{
	int attempt, caught = 0;

	nobjs = 300000 / sk_test_slow();
	objs = calloc(nobjs, sizeof(*objs));
	SK_CHECK(objs != NULL);
	sk_rcu_register_thread();
	for (attempt = 0; attempt < 5 && !caught; attempt++) {
		table = table_new();
		/*
		 * Our section holds up every grace period: the grow that the
		 * inserts queue waits for one, taken by the worker or still
		 * queued.
		 */
		sk_rcu_read_lock();
		insert_all(table);
		SK_CHECK_EQ(sk_rhash_buckets(table), START_BUCKETS);
		SK_CHECK_EQ(LOAD(table->work_active), 0);
		fork_and_check("fork while the grow is queued");
		sk_rcu_read_unlock();

		/*
		 * The grow starts (resize_lock taken, future array published)
		 * and migrates in slices of about 0.5 ms, each a callback
		 * queued by the previous one after a grace period: a read
		 * section entered now holds it between two slices.
		 */
		while (!LOAD(table->work_active) &&
		       sk_rhash_buckets(table) == START_BUCKETS)
			sk_cpu_relax();
		sk_rcu_read_lock();
		/*
		 * The running slice ends and re-queues the work, which then
		 * waits for our section: the state stays as it is now.
		 */
		sk_test_sleep_ms(20);
		caught = LOAD(table->work_active) && LOAD(table->resize_lock);
		if (caught)
			fork_and_check("fork between two slices of a resize");
		else
			fprintf(stderr, "  the resize ended before the read "
					"section: again\n");
		sk_rcu_read_unlock();
		check_settled_and_destroy(table);
	}
	SK_CHECK(caught);
	free(objs);
	sk_rcu_unregister_thread();
}

/*
 * The child of a fork between two slices of a background resize: before
 * anything else (no update, no barrier: nothing that would start the
 * child's callback worker), an explicit resize.  It waits for the
 * inherited background resize, which must therefore get to run.
 */
static void child_resizes_first(void)
{
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rhash_resize(table, 1UL << 10), 0);
	SK_CHECK_EQ(sk_rhash_buckets(table), 1UL << 10);
	check_all_found(table);
	sk_rhash_destroy(table, NULL, NULL);
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void explicit_resize_in_child_of_fork_mid_background_resize(void)
{
	static struct sk_test_child c;
	int attempt, caught = 0;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "  child skipped under TSan\n");
		return;
	}
	nobjs = 300000 / sk_test_slow();
	objs = calloc(nobjs, sizeof(*objs));
	SK_CHECK(objs != NULL);
	sk_rcu_register_thread();
	for (attempt = 0; attempt < 5 && !caught; attempt++) {
		table = table_new();
		insert_all(table);
		/* As in the test above: hold the work between two slices. */
		while (!LOAD(table->work_active) &&
		       sk_rhash_buckets(table) == START_BUCKETS)
			sk_cpu_relax();
		sk_rcu_read_lock();
		sk_test_sleep_ms(20);
		caught = LOAD(table->work_active) && LOAD(table->resize_lock);
		if (caught) {
			/* 20 s: the child's work is a few slices. */
			sk_test_fork_child(child_resizes_first, 20, 0, &c);
			SK_CHECK_EQ(WIFEXITED(c.status) ? WEXITSTATUS(c.status)
							: -1,
				    0);
		} else {
			fprintf(stderr, "  the resize ended before the read "
					"section: again\n");
		}
		sk_rcu_read_unlock();
		/*
		 * The parent's copy: an explicit resize (to a size the load
		 * factor keeps), then the rest.
		 */
		SK_CHECK_EQ(sk_rhash_resize(table, 1UL << 19), 0);
		check_settled_and_destroy(table);
	}
	SK_CHECK(caught);
	free(objs);
	sk_rcu_unregister_thread();
}

static void resize_lock_is_free_after_resizes_on_moving_workers(void)
{
	int round, rounds = 10 / (int)sk_test_slow() + 1;

	nobjs = 50000;
	objs = calloc(nobjs, sizeof(*objs));
	SK_CHECK(objs != NULL);
	SK_CHECK_EQ(sk_rcu_cb_workers_create(SK_RCU_CB_WORKERS_UNPINNED), 0);
	for (round = 0; round < rounds; round++) {
		table = table_new();
		insert_all(table);
		check_settled_and_destroy(table);
	}
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), 0);
	free(objs);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(fork_while_background_resize_is_queued_or_running);
	SK_RUN(explicit_resize_in_child_of_fork_mid_background_resize);
	SK_RUN(resize_lock_is_free_after_resizes_on_moving_workers);
	return sk_test_report();
}
