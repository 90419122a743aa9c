/* SPDX-License-Identifier: MIT */
/*
 * Scenario "list": full traversals of a 1,000-entry linked list, each one
 * inside one read-side critical section, by 1..N reader threads at once:
 *  - scalekit: sk_rcu_read_lock(), sk_list_for_each_entry_rcu(),
 *    sk_rcu_read_unlock();
 *  - pthread-rwlock: pthread_rwlock_rdlock(), the same walk with plain
 *    loads (sk_list_for_each_entry), pthread_rwlock_unlock().
 * Figure: traversals per second summed over the threads (higher is
 * better).  No writer runs: the figure is the readers' own cost and how it
 * scales; a writer would only widen the gap (it blocks rwlock readers).
 *
 * Each implementation walks its own copy of the list, allocated in the
 * same order, so both see the same memory layout.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/list.h"
#include "scalekit/rcu.h"

#define LIST_LEN 1000

struct list_item {
	long key;
	struct sk_list_head link;
};

enum list_impl { LIST_RCU, LIST_RWLOCK, LIST_NIMPL };

static const char *const impls[] = { "scalekit", "pthread-rwlock", NULL };

static struct sk_list_head lists[LIST_NIMPL];
static struct list_item *items[LIST_NIMPL];
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

struct list_thread {
	pthread_t tid;
	enum list_impl impl;
	int cpu;
	volatile int *go, *stop;
	uint64_t walks, ns;
	long sum;
};

static long walk_rcu(void)
{
	struct list_item *it;
	long sum = 0;

	sk_rcu_read_lock();
	sk_list_for_each_entry_rcu(it, &lists[LIST_RCU], link)
		sum += it->key;
	sk_rcu_read_unlock();
	return sum;
}

static long walk_rwlock(void)
{
	struct list_item *it;
	long sum = 0;

	pthread_rwlock_rdlock(&rwlock);
	sk_list_for_each_entry(it, &lists[LIST_RWLOCK], link)
		sum += it->key;
	pthread_rwlock_unlock(&rwlock);
	return sum;
}

static void *list_reader(void *arg)
{
	struct list_thread *t = arg;
	long (*walk)(void) = t->impl == LIST_RCU ? walk_rcu : walk_rwlock;
	uint64_t t0, n = 0;
	long sum = 0;

	if (t->impl == LIST_RCU)
		sk_rcu_register_thread();
	/* Acquire pairs with the release of go by the main thread. */
	while (!__atomic_load_n(t->go, __ATOMIC_ACQUIRE))
		;
	t0 = sk_bench_now_ns();
	/* Relaxed: stop only ends the loop; join orders the results. */
	while (!__atomic_load_n(t->stop, __ATOMIC_RELAXED)) {
		int i;

		for (i = 0; i < 16; i++)
			sum += walk();
		n += 16;
	}
	t->ns = sk_bench_now_ns() - t0;
	t->walks = n;
	t->sum = sum;
	if (t->impl == LIST_RCU)
		sk_rcu_unregister_thread();
	return NULL;
}

/*
 * Run nthreads readers of impl for run_ns; traversals per second in
 * total, or -errno.
 */
static double run_readers(enum list_impl impl, int nthreads, uint64_t run_ns,
			  int *err)
{
	struct list_thread t[64];
	volatile int go = 0, stop = 0;
	double rate = 0;
	long expect = (long)LIST_LEN * (LIST_LEN - 1) / 2;
	int i, created = 0;

	*err = 0;
	for (i = 0; i < nthreads && i < 64; i++) {
		pthread_attr_t attr;

		memset(&t[i], 0, sizeof(t[i]));
		t[i].impl = impl;
		t[i].go = &go;
		t[i].stop = &stop;
		pthread_attr_init(&attr);
		sk_bench_attr_pin(&attr, i);
		*err = pthread_create(&t[i].tid, &attr, list_reader, &t[i]);
		pthread_attr_destroy(&attr);
		if (*err) {
			fprintf(stderr, "bench: list: pthread_create: %s\n",
				strerror(*err));
			break;
		}
		created++;
	}
	/* Release: the lists are built before the readers start. */
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	if (!*err)
		sk_bench_sleep_ns(run_ns);
	/* Relaxed: pairs with nothing, pthread_join() orders the results. */
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < created; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].walks && t[i].sum != expect * (long)t[i].walks) {
			fprintf(stderr, "bench: list: %s reader %d summed %ld, "
					"expected %ld\n",
				impls[impl], i, t[i].sum,
				expect * (long)t[i].walks);
			*err = -EIO;
		}
		if (t[i].ns)
			rate += (double)t[i].walks * 1e9 / (double)t[i].ns;
	}
	return *err ? 0 : rate;
}

static int build_lists(void)
{
	int k, i;

	for (k = 0; k < LIST_NIMPL; k++) {
		sk_list_init(&lists[k]);
		items[k] = calloc(LIST_LEN, sizeof(*items[k]));
		if (!items[k]) {
			fprintf(stderr, "bench: list: out of memory\n");
			return -1;
		}
		for (i = 0; i < LIST_LEN; i++) {
			items[k][i].key = i;
			/* Published before any reader starts (go). */
			sk_list_add_tail_rcu(&items[k][i].link, &lists[k]);
		}
	}
	return 0;
}

static void free_lists(void)
{
	int k;

	for (k = 0; k < LIST_NIMPL; k++) {
		free(items[k]);
		items[k] = NULL;
	}
}

int sk_bench_list_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res)
{
	static const char *const title =
		"list: full traversals of a 1,000-entry list per second, "
		"summed over N reader threads, no writer (higher is better)";
	int counts[16], nc, c, rep, k, err = 0;
	struct sk_bench_row *rows[16];

	nc = sk_bench_thread_counts(cfg->max_threads, 0, counts, 16);
	if (nc > 16)
		nc = 16;
	if (build_lists() != 0) {
		free_lists();
		return -1;
	}
	for (c = 0; c < nc; c++)
		rows[c] = sk_bench_row_add(res, "list", "traverse 1000", "Mtrav/s",
					   title, counts[c], 1, impls, cfg->reps);
	sk_bench_progress("list: %d thread counts x %d reps x 2 "
			  "implementations, %.0f ms each",
			  nc, cfg->reps, cfg->run_ns / 1e6);
	for (c = 0; c < nc && !err; c++) {
		/* Warm-up, untimed. */
		for (k = 0; k < LIST_NIMPL && !err; k++)
			run_readers(k, counts[c], cfg->warmup_ns, &err);
		for (rep = 0; rep < cfg->reps && !err; rep++) {
			for (k = 0; k < LIST_NIMPL && !err; k++) {
				double r = run_readers(k, counts[c],
						       cfg->run_ns, &err);

				rows[c]->rep[k][rep] = r / 1e6;
			}
		}
	}
	free_lists();
	if (err)
		return -1;
	for (c = 0; c < nc; c++) {
		char what[96], id[48];

		snprintf(what, sizeof(what),
			 "list, %d thread%s: traversals/s scalekit / "
			 "pthread-rwlock",
			 counts[c], counts[c] == 1 ? "" : "s");
		snprintf(id, sizeof(id), "list-%d", counts[c]);
		/* Informational floor: RCU readers are never slower. */
		sk_bench_ratio_target(res, rows[c], "scalekit",
				      "pthread-rwlock", 1.0, 0, what, id);
	}
	return 0;
}
