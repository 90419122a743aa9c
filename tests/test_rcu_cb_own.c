/* SPDX-License-Identifier: MIT */
/*
 * The program's own callback workers (sk_rcu_cb_worker_create(),
 * sk_call_rcu_on(), sk_rcu_cb_worker_destroy()): callbacks run on the
 * worker's thread, pinned where asked, in order, after their grace
 * period; producers retiring objects under busy readers (and the broken
 * twin, a worker that skips the grace period, which must be caught); a
 * destroy with callbacks pending; errors; a failed thread start; fork().
 * Links the testing build (broken mode, failing thread starts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "internal/testing.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

#define MAGIC 0x0c0ffeeUL
#define RETIRED 0xdeadUL

struct probe {
	struct sk_rcu_head head;
	pthread_t ran_on;
	int cpu;
	unsigned long seq; /* order it ran in */
	int ran;
};

static unsigned long run_seq; /* atomic */

static void probe_cb(struct sk_rcu_head *h)
{
	struct probe *p = (struct probe *)h;

	p->ran_on = pthread_self();
	p->cpu = sched_getcpu();
	p->seq = __atomic_fetch_add(&run_seq, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&p->ran, 1, __ATOMIC_RELEASE);
}

static int probe_ran(struct probe *p)
{
	return __atomic_load_n(&p->ran, __ATOMIC_ACQUIRE);
}

/* ---- where and when callbacks run ---------------------------------------- */

static void callback_runs_on_the_worker_after_the_reader(void)
{
	struct sk_rcu_cb_worker *w = sk_rcu_cb_worker_create(0, -1);
	struct sk_test_holder h;
	struct probe p = { 0 };
	pthread_t t;

	SK_CHECK(w != NULL);
	if (!w)
		return;
	SK_CHECK_EQ(sk_rcu_cb_worker_pthread(w, &t), 0);
	sk_test_holder_start(&h, 0, NULL, NULL);
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, probe_cb), 0);
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, probe_cb), -EBUSY);
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(probe_ran(&p), 0);
	sk_test_holder_release(&h);
	sk_rcu_barrier();
	SK_CHECK_EQ(probe_ran(&p), 1);
	SK_CHECK(pthread_equal(p.ran_on, t));
	SK_CHECK(!pthread_equal(p.ran_on, pthread_self()));
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
}

static void pinned_worker_runs_on_its_cpu(void)
{
	cpu_set_t set;
	struct sk_rcu_cb_worker *w;
	struct probe p = { 0 };
	int cpu;

	SK_CHECK_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (cpu = CPU_SETSIZE - 1; cpu > 0 && !CPU_ISSET(cpu, &set); cpu--)
		;
	w = sk_rcu_cb_worker_create(0, cpu);
	SK_CHECK(w != NULL);
	if (!w)
		return;
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, probe_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(p.cpu, cpu);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
}

static void callbacks_of_one_thread_run_in_order(void)
{
	enum { N = 3000 };
	struct sk_rcu_cb_worker *w = sk_rcu_cb_worker_create(0, -1);
	struct probe *p = calloc(N, sizeof(*p));
	int i, ordered = 1;

	SK_CHECK(w != NULL && p != NULL);
	if (!w || !p)
		return;
	for (i = 0; i < N; i++) {
		SK_CHECK_EQ(sk_call_rcu_on(w, &p[i].head, probe_cb), 0);
		if (i % 500 == 0)
			sk_synchronize_rcu(); /* several batches */
	}
	sk_rcu_barrier();
	for (i = 1; i < N; i++)
		ordered &= p[i].seq > p[i - 1].seq && probe_ran(&p[i]);
	SK_CHECK(ordered);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
	free(p);
}

/* ---- producers retiring objects under busy readers ----------------------- */

struct retiree {
	struct sk_rcu_head head;
	struct sk_test_robj *obj;
};

static void retire_cb(struct sk_rcu_head *h)
{
	struct retiree *r = (struct retiree *)h;

	__atomic_store_n(&r->obj->val, RETIRED, __ATOMIC_RELAXED);
	free(r);
}

struct producer {
	struct sk_test_busy *b;
	struct sk_rcu_cb_worker *w;
	pthread_mutex_t *lock; /* serializes the updaters' swaps */
	unsigned long swaps;
	struct sk_test_robj *mine;
};

static void *producer_main(void *arg)
{
	struct producer *pr = arg;
	unsigned long i;

	for (i = 0; i < pr->swaps; i++) {
		struct sk_test_robj *n = sk_test_robj_new(MAGIC), *old;
		struct retiree *r = malloc(sizeof(*r));

		if (!r)
			abort();
		n->next = pr->mine;
		pr->mine = n;
		pthread_mutex_lock(pr->lock);
		old = pr->b->ptr;
		sk_rcu_assign_pointer(pr->b->ptr, n);
		pthread_mutex_unlock(pr->lock);
		r->obj = old;
		SK_CHECK_EQ(sk_call_rcu_on(pr->w, &r->head, retire_cb), 0);
		if (__atomic_load_n(&pr->b->bad, __ATOMIC_RELAXED))
			break; /* the broken twin was caught */
	}
	return NULL;
}

/* Two readers, two producers on two own workers; returns bad sections. */
static unsigned long retire_on_own_workers(unsigned long swaps)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sk_test_busy b = { .magic = MAGIC };
	struct sk_rcu_cb_worker *w[2];
	struct producer pr[2];
	pthread_t r[2], t[2];
	struct sk_test_robj *first = sk_test_robj_new(MAGIC), *o;
	int i;

	b.ptr = first;
	for (i = 0; i < 2; i++) {
		w[i] = sk_rcu_cb_worker_create(0, -1);
		if (!w[i])
			abort();
		sk_test_thread_start(&r[i], sk_test_busy_reader, &b);
	}
	for (i = 0; i < 2; i++) {
		pr[i] = (struct producer){ &b, w[i], &lock, swaps, NULL };
		sk_test_thread_start(&t[i], producer_main, &pr[i]);
	}
	for (i = 0; i < 2; i++)
		sk_test_thread_join(t[i]);
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		sk_test_thread_join(r[i]);
	sk_rcu_barrier();
	for (i = 0; i < 2; i++) {
		SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w[i]), 0);
		while ((o = pr[i].mine) != NULL) {
			pr[i].mine = o->next;
			free(o);
		}
	}
	free(first);
	fprintf(stderr, "    %lu read sections in 1024s, %lu saw a retired "
		"object\n", b.reads, b.bad);
	return b.bad;
}

static void own_workers_wait_for_readers(void)
{
	SK_CHECK_EQ(retire_on_own_workers(100000 / sk_test_slow()), 0);
}

/* The broken twin: own workers that skip the grace period. */
static void worker_without_grace_period_is_caught(void)
{
	sk__rcu_cb_set_busted(SK__CB_BUSTED_NO_GP);
	SK_CHECK_GT(retire_on_own_workers(2000000), 0);
	sk__rcu_cb_set_busted(0);
}

/* ---- destroy, errors, failures, fork ------------------------------------- */

static void *release_later(void *arg)
{
	sk_test_sleep_ms(50);
	sk_test_holder_release(arg);
	return NULL;
}

static void destroy_hands_pending_callbacks_over(void)
{
	enum { N = 100 };
	struct sk_rcu_cb_worker *w = sk_rcu_cb_worker_create(0, -1);
	struct sk_test_holder h;
	static struct probe p[N];
	pthread_t t;
	int i, ran = 0;

	SK_CHECK(w != NULL);
	if (!w)
		return;
	sk_test_holder_start(&h, 0, NULL, NULL);
	for (i = 0; i < N; i++)
		SK_CHECK_EQ(sk_call_rcu_on(w, &p[i].head, probe_cb), 0);
	sk_test_thread_start(&t, release_later, &h);
	/* Waits for the batch the worker may hold, then leaves the rest. */
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
	sk_test_thread_join(t);
	sk_rcu_barrier();
	for (i = 0; i < N; i++)
		ran += probe_ran(&p[i]);
	SK_CHECK_EQ(ran, N);
}

static struct sk_rcu_cb_worker *cb_self; /* for destroy_in_callback() */

static void destroy_in_callback(struct sk_rcu_head *h)
{
	struct probe *p = (struct probe *)h;

	p->seq = (unsigned long)sk_rcu_cb_worker_destroy(cb_self);
	__atomic_store_n(&p->ran, 1, __ATOMIC_RELEASE);
}

static void bad_arguments_are_refused(void)
{
	struct sk_rcu_cb_worker *w;
	struct probe p = { 0 };
	pthread_t t;

	errno = 0;
	SK_CHECK(sk_rcu_cb_worker_create(1, -1) == NULL && errno == EINVAL);
	errno = 0;
	SK_CHECK(sk_rcu_cb_worker_create(0, -2) == NULL && errno == EINVAL);
	errno = 0;
	SK_CHECK(sk_rcu_cb_worker_create(0, CPU_SETSIZE + 1) == NULL &&
		 errno == EINVAL);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(NULL), -EINVAL);
	SK_CHECK_EQ(sk_call_rcu_on(NULL, &p.head, probe_cb), -EINVAL);
	SK_CHECK_EQ(sk_rcu_cb_worker_pthread(NULL, &t), -EINVAL);
	w = sk_rcu_cb_worker_create(0, -1);
	SK_CHECK(w != NULL);
	if (!w)
		return;
	SK_CHECK_EQ(sk_call_rcu_on(w, NULL, probe_cb), -EINVAL);
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, NULL), -EINVAL);
	/* From a callback: it could be waiting for itself. */
	cb_self = w;
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, destroy_in_callback), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ((long)p.seq, -EDEADLK);
	/*
	 * Inside a read section: w's batch waits for a grace period that
	 * waits for us (queued first, so that w is likely in it: the call
	 * hung then).
	 */
	p.seq = 0;
	SK_CHECK_EQ(sk_call_rcu_on(w, &p.head, probe_cb), 0);
	sk_rcu_read_lock();
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), -EDEADLK);
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
}

static void failed_thread_start_reports_eagain(void)
{
	struct probe p = { 0 };

	/* The default worker runs already (earlier tests): one start fails. */
	sk__worker_test_fail_starts(1, EAGAIN);
	errno = 0;
	SK_CHECK(sk_rcu_cb_worker_create(0, -1) == NULL && errno == EAGAIN);
	sk__worker_test_fail_starts(0, 0);
	SK_CHECK_EQ(sk_call_rcu(&p.head, probe_cb), 0); /* nothing broken */
	sk_rcu_barrier();
	SK_CHECK_EQ(probe_ran(&p), 1);
}

/*
 * fork() with an own worker that has callbacks pending: in the child the
 * worker has no thread; its queue is the default worker's there, so the
 * callbacks (those from before the fork, and new ones) run, and the
 * destroy frees it.
 */
static struct sk_rcu_cb_worker *fork_w;
static struct probe fork_warm, fork_before, fork_after;

static void child_with_own_worker(void)
{
	pthread_t t;

	SK_CHECK_EQ(sk_rcu_cb_worker_pthread(fork_w, &t), -ESRCH);
	SK_CHECK_EQ(sk_call_rcu_on(fork_w, &fork_after.head, probe_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(probe_ran(&fork_before), 1);
	SK_CHECK_EQ(probe_ran(&fork_after), 1);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(fork_w), 0);
	sk_rcu_barrier(); /* the default worker frees the queue */
	if (sk_t_failed_checks)
		_exit(3);
}

static void own_worker_survives_fork(void)
{
	struct sk_test_holder h;
	struct sk_test_child c;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "    (qemu-user: a fork child cannot start "
			"threads here; not run)\n");
		return;
	}
	fork_w = sk_rcu_cb_worker_create(0, -1);
	SK_CHECK(fork_w != NULL);
	if (!fork_w)
		return;
	/*
	 * Let the new worker finish its start-up before the fork: under
	 * ASan (gcc 12) a thread still starting can hold the sanitizer
	 * allocator's lock, which ASan does not take across fork().
	 */
	SK_CHECK_EQ(sk_call_rcu_on(fork_w, &fork_warm.head, probe_cb), 0);
	sk_rcu_barrier();
	sk_test_holder_start(&h, 0, NULL, NULL); /* keeps it pending */
	SK_CHECK_EQ(sk_call_rcu_on(fork_w, &fork_before.head, probe_cb), 0);
	sk_test_fork_child(child_with_own_worker, 30, 0, &c);
	SK_CHECK_EXIT_0(c.status);
	sk_test_holder_release(&h);
	sk_rcu_barrier();
	SK_CHECK_EQ(probe_ran(&fork_before), 1);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(fork_w), 0);
}

/*
 * fork() while a callback of the default worker creates an own worker
 * (allowed: "Context: any thread, also a callback").  The callback's
 * batch holds the default worker's run_lock, which the fork's prepare
 * handlers wait for; they must not hold the lock the create takes
 * meanwhile.  Before the fix the own workers' prepare handler held
 * own.lock while rcu_cb.c's waited for that run_lock: fork() and the
 * callback waited for each other forever.
 */
static int cif_started; /* atomic: the callback runs */
static struct sk_rcu_cb_worker *cif_w; /* atomic: what it created */

static void create_in_callback(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_store_n(&cif_started, 1, __ATOMIC_RELEASE);
	/* Long enough for the fork's prepare handlers to start. */
	sk_test_sleep_ms(200);
	__atomic_store_n(&cif_w, sk_rcu_cb_worker_create(0, -1),
			 __ATOMIC_RELEASE);
}

static void child_exits(void)
{
}

/* The callback on the default worker (w NULL) or on own worker w. */
static void fork_during_create_in_callback_of(struct sk_rcu_cb_worker *w)
{
	struct sk_test_child c;
	struct probe p = { 0 };

	__atomic_store_n(&cif_started, 0, __ATOMIC_RELAXED);
	cif_w = NULL;
	SK_CHECK_EQ(w ? sk_call_rcu_on(w, &p.head, create_in_callback)
		      : sk_call_rcu(&p.head, create_in_callback), 0);
	while (!__atomic_load_n(&cif_started, __ATOMIC_ACQUIRE))
		sk_test_sleep_ms(1);
	sk_test_fork_child(child_exits, 30, 1, &c); /* hung here */
	SK_CHECK_EXIT_0(c.status);
	sk_rcu_barrier();
	SK_CHECK(__atomic_load_n(&cif_w, __ATOMIC_ACQUIRE) != NULL);
	if (cif_w)
		SK_CHECK_EQ(sk_rcu_cb_worker_destroy(cif_w), 0);
}

static void fork_while_a_callback_creates_a_worker(void)
{
	struct sk_rcu_cb_worker *w;

	if (!SK_TEST_CHILD_THREADS) {
		fprintf(stderr, "    (qemu-user: a fork child cannot start "
			"threads here; not run)\n");
		return;
	}
	/* One own worker: its fork handlers take part. */
	w = sk_rcu_cb_worker_create(0, -1);
	SK_CHECK(w != NULL);
	if (!w)
		return;
	sk_test_deadline("fork() while a callback creates a worker", 60);
	fork_during_create_in_callback_of(NULL);
	fork_during_create_in_callback_of(w);
	alarm(0);
	SK_CHECK_EQ(sk_rcu_cb_worker_destroy(w), 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(callback_runs_on_the_worker_after_the_reader);
	SK_RUN(pinned_worker_runs_on_its_cpu);
	SK_RUN(callbacks_of_one_thread_run_in_order);
	SK_RUN(own_workers_wait_for_readers);
	SK_RUN(worker_without_grace_period_is_caught);
	SK_RUN(destroy_hands_pending_callbacks_over);
	SK_RUN(bad_arguments_are_refused);
	SK_RUN(failed_thread_start_reports_eagain);
	/* fork: by name only, a CTest of its own (labelled noqemu). */
	if (argc > 1)
		SK_RUN(own_worker_survives_fork);
	if (argc > 1)
		SK_RUN(fork_while_a_callback_creates_a_worker);
	sk_rcu_barrier();
	return sk_test_report();
}
