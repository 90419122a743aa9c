/* SPDX-License-Identifier: MIT */
/*
 * Pointer exchange (sk_rcu_xchg_pointer(), sk_rcu_cmpxchg_pointer()) and
 * deferred calls (sk_defer_rcu()): lock-free updaters that swap the one
 * RCU-protected pointer that busy readers follow, retiring the old object
 * through sk_defer_rcu(); their broken twin retires at once and must be
 * caught.  Then sk_defer_rcu()'s contract: it waits for a reader, its
 * errors, its death inside a read section, its fallback when memory runs
 * out, thread exit and fork().  Links the testing build (allocation
 * failures of sk_defer_rcu()).
 */
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "internal/testing.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

#define MAGIC 0x5ca1ab1eUL
#define RETIRED 0xdeadUL

static unsigned long ran;  /* deferred calls that ran (atomic) */

static void count_run(void *p)
{
	(void)p;
	__atomic_fetch_add(&ran, 1, __ATOMIC_RELAXED);
}

static void retire(void *p)
{
	struct sk_test_robj *o = p;

	__atomic_store_n(&o->val, RETIRED, __ATOMIC_RELAXED);
}

/* ---- single thread: what the exchanges return ---------------------------- */

static void exchanges_return_the_old_pointer(void)
{
	int a = 1, b = 2, c = 3;
	int *p = &a, *old;

	old = sk_rcu_xchg_pointer(&p, &b);
	SK_CHECK(old == &a && p == &b);
	old = sk_rcu_cmpxchg_pointer(&p, &a, &c); /* p is &b: no exchange */
	SK_CHECK(old == &b && p == &b);
	old = sk_rcu_cmpxchg_pointer(&p, &b, &c);
	SK_CHECK(old == &b && p == &c);
}

/* ---- lock-free updaters against busy readers ----------------------------- */

struct updater {
	struct sk_test_busy *b;
	int use_cmpxchg, broken;
	unsigned long swaps;
	struct sk_test_robj *mine; /* every object it published (graveyard) */
};

static struct sk_test_robj *swap_in(struct updater *u,
				    struct sk_test_robj *n)
{
	struct sk_test_robj *old, *seen;

	if (!u->use_cmpxchg)
		return sk_rcu_xchg_pointer(&u->b->ptr, n);
	old = __atomic_load_n(&u->b->ptr, __ATOMIC_RELAXED);
	while ((seen = sk_rcu_cmpxchg_pointer(&u->b->ptr, old, n)) != old)
		old = seen;
	return old;
}

static void *updater_main(void *arg)
{
	struct updater *u = arg;
	unsigned long i;

	for (i = 0; i < u->swaps; i++) {
		struct sk_test_robj *n = sk_test_robj_new(MAGIC), *old;

		n->next = u->mine;
		u->mine = n;
		old = swap_in(u, n);
		if (u->broken) {
			retire(old); /* broken twin: no grace period */
			if (__atomic_load_n(&u->b->bad, __ATOMIC_RELAXED))
				break;
		} else {
			SK_CHECK_EQ(sk_defer_rcu(retire, old), 0);
		}
	}
	return NULL;
}

/*
 * Two readers, two updaters (one by exchange, one by compare-and-swap);
 * returns how many read sections saw a retired object.
 */
static unsigned long swap_under_readers(int broken, unsigned long swaps)
{
	struct sk_test_busy b = { .magic = MAGIC };
	struct updater u[2];
	pthread_t r[2], w[2];
	struct sk_test_robj *first = sk_test_robj_new(MAGIC), *o;
	int i;

	b.ptr = first;
	for (i = 0; i < 2; i++)
		sk_test_thread_start(&r[i], sk_test_busy_reader, &b);
	for (i = 0; i < 2; i++) {
		u[i] = (struct updater){ &b, i, broken, swaps, NULL };
		sk_test_thread_start(&w[i], updater_main, &u[i]);
	}
	for (i = 0; i < 2; i++)
		sk_test_thread_join(w[i]);
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		sk_test_thread_join(r[i]);
	sk_rcu_barrier(); /* every retire ran: now free them all */
	free(first);
	for (i = 0; i < 2; i++)
		while ((o = u[i].mine) != NULL) {
			u[i].mine = o->next;
			free(o);
		}
	fprintf(stderr, "    %s: %lu read sections in 1024s, %lu saw a "
		"retired object\n", broken ? "broken" : "deferred", b.reads,
		b.bad);
	return b.bad;
}

static void exchanging_updaters_defer_the_retire(void)
{
	SK_CHECK_EQ(swap_under_readers(0, 200000 / sk_test_slow()), 0);
}

/* The broken twin: retiring at once must be seen by a reader. */
static void retire_without_grace_period_is_caught(void)
{
	SK_CHECK_GT(swap_under_readers(1, 2000000), 0);
}

/* ---- sk_defer_rcu()'s contract ------------------------------------------- */

static void deferred_call_waits_for_a_reader(void)
{
	struct sk_test_holder h;
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);

	sk_test_holder_start(&h, 0, NULL, NULL);
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before);
	sk_test_holder_release(&h);
	sk_rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before + 1);
}

static void many_deferred_calls_all_run(void)
{
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);
	unsigned long i, n = 10000; /* 159 slabs of 63 */

	for (i = 0; i < n; i++)
		SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before + n);
}

static void null_function_is_refused(void)
{
	SK_CHECK_EQ(sk_defer_rcu(NULL, NULL), -EINVAL);
}

static void qsbr_thread_online_may_defer(void)
{
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);

	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	sk_rcu_thread_offline();
	sk_rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before + 1);
}

static void defer_in_section(void)
{
	sk_rcu_read_lock();
	sk_defer_rcu(count_run, NULL);
	sk_rcu_read_unlock();
}

static void deferring_inside_a_read_section_dies(void)
{
	sk_test_expect_abort(defer_in_section, 10, "sk_defer_rcu() inside",
			     "read-side critical section");
}

/* Out of memory: the caller waits for the grace period and calls fn. */
struct oom_call {
	int returned;
};

static void *defer_without_memory(void *arg)
{
	struct oom_call *c = arg;

	sk__rcu_defer_test_fail_allocs(1);
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	__atomic_store_n(&c->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void without_memory_the_caller_waits_and_calls(void)
{
	struct sk_test_holder h;
	struct oom_call c = { 0 };
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);
	pthread_t t;

	sk_test_holder_start(&h, 0, NULL, NULL);
	/* A new thread owns no slab: its first call allocates one. */
	sk_test_thread_start(&t, defer_without_memory, &c);
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(__atomic_load_n(&c.returned, __ATOMIC_ACQUIRE), 0);
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before);
	sk_test_holder_release(&h);
	sk_test_thread_join(t);
	/* It ran fn itself, before returning: no barrier needed. */
	SK_CHECK_EQ(__atomic_load_n(&c.returned, __ATOMIC_ACQUIRE), 1);
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED), before + 1);
}

/* Threads that exit with a slab partly used: their calls still run. */
static void *defer_some_and_exit(void *arg)
{
	unsigned long i;

	for (i = 0; i < (unsigned long)(uintptr_t)arg; i++)
		SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	return NULL;
}

static void calls_of_exited_threads_run(void)
{
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		sk_test_thread_start(&t[i], defer_some_and_exit,
				     (void *)(uintptr_t)(10 + 40 * i));
	for (i = 0; i < 4; i++)
		sk_test_thread_join(t[i]);
	sk_rcu_barrier();
	SK_CHECK_EQ(__atomic_load_n(&ran, __ATOMIC_RELAXED),
		    before + 10 + 50 + 90 + 130);
}

/*
 * fork() while another thread owns a slab: the child runs the calls
 * queued before the fork (as the parent does), and its barrier returns;
 * the child's exit(0) runs the leak checker of the ASan build, which
 * finds the other thread's slab freed.
 */
static int fork_ready[2], fork_done[2]; /* thread -> main, main -> thread */

static void *defer_and_hold_slab(void *arg)
{
	char c;

	(void)arg;
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	if (write(fork_ready[1], "x", 1) != 1)
		abort();
	if (read(fork_done[0], &c, 1) != 1) /* until the parent forked */
		abort();
	return NULL;
}

static void child_after_fork(void)
{
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);

	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	sk_rcu_barrier();
	if (__atomic_load_n(&ran, __ATOMIC_RELAXED) < before + 1 ||
	    sk_t_failed_checks)
		_exit(3);
}

static void deferred_calls_survive_fork(void)
{
	struct sk_test_child c;
	pthread_t t;
	char x;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "    (qemu-user: a fork child cannot start "
			"threads here; not run)\n");
		return;
	}
	/*
	 * Start the callback worker and let it settle before the fork: a
	 * worker still in its start-up under ASan (gcc 12) can hold the
	 * sanitizer allocator's lock, which ASan does not take across
	 * fork(), and the child then hangs in its first malloc.
	 */
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
	sk_rcu_barrier();
	sk_test_pipe(fork_ready);
	sk_test_pipe(fork_done);
	sk_test_thread_start(&t, defer_and_hold_slab, NULL);
	if (read(fork_ready[0], &x, 1) != 1)
		abort();
	sk_test_fork_child(child_after_fork, 30, 0, &c);
	SK_CHECK_EXIT_0(c.status);
	if (write(fork_done[1], "x", 1) != 1)
		abort();
	sk_test_thread_join(t);
	close(fork_ready[0]);
	close(fork_ready[1]);
	close(fork_done[0]);
	close(fork_done[1]);
	sk_rcu_barrier();
}

/*
 * fork() while a callback defers a call (sk_defer_rcu() from a callback,
 * outside any read section: allowed), its first on the worker's thread,
 * which allocates a slab under the slab list's lock.  The fork's prepare
 * handlers wait for the callback's batch (the worker's run_lock); they
 * must not hold that lock meanwhile.
 */
static int dic_started; /* atomic */

static void defer_in_callback(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_store_n(&dic_started, 1, __ATOMIC_RELEASE);
	sk_test_sleep_ms(200); /* the fork's prepare handlers start */
	SK_CHECK_EQ(sk_defer_rcu(count_run, NULL), 0);
}

static void child_exits(void)
{
}

static void fork_while_a_callback_defers(void)
{
	static struct sk_rcu_head h;
	struct sk_test_child c;
	unsigned long before = __atomic_load_n(&ran, __ATOMIC_RELAXED);

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "    (qemu-user: a fork child cannot start "
			"threads here; not run)\n");
		return;
	}
	sk_test_deadline("fork() while a callback defers a call", 60);
	SK_CHECK_EQ(sk_call_rcu(&h, defer_in_callback), 0);
	while (!__atomic_load_n(&dic_started, __ATOMIC_ACQUIRE))
		sk_test_sleep_ms(1);
	sk_test_fork_child(child_exits, 30, 1, &c); /* hung here */
	SK_CHECK_EXIT_0(c.status);
	sk_rcu_barrier();
	sk_rcu_barrier(); /* the deferred call queued by the callback */
	alarm(0);
	SK_CHECK_LE(before + 1, __atomic_load_n(&ran, __ATOMIC_RELAXED));
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(exchanges_return_the_old_pointer);
	SK_RUN(exchanging_updaters_defer_the_retire);
	SK_RUN(retire_without_grace_period_is_caught);
	SK_RUN(deferred_call_waits_for_a_reader);
	SK_RUN(many_deferred_calls_all_run);
	SK_RUN(null_function_is_refused);
	SK_RUN(qsbr_thread_online_may_defer);
	SK_RUN(deferring_inside_a_read_section_dies);
	SK_RUN(without_memory_the_caller_waits_and_calls);
	SK_RUN(calls_of_exited_threads_run);
	/* fork: by name only, a CTest of its own (labelled noqemu). */
	if (argc > 1)
		SK_RUN(deferred_calls_survive_fork);
	if (argc > 1)
		SK_RUN(fork_while_a_callback_defers);
	return sk_test_report();
}
